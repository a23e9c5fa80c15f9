"""Ahead-of-time compilation: an HLO module as a C library (tfcompile without Bazel).

`compile_library(module, "libm.so", header="m.h", name="m")` writes an object file,
static archive or shared library holding the JIT's code for `module` (hloc.aot.lower)
and a header describing its C ABI (hloc.aot.header). Shared with the JIT: the emitters
(hloc.backend.computation.Functions), the units (hloc.backend.jit.collect_units), the part
plan and each part's settings (hloc.backend.jit.part_plan: SLP, level, code-generation
level, brief LLVM options) and the parts' compile (compile_threads.compile_all, on every
core). What differs: the entry computation stays external and is no unit (the glue calls
it, one part of its own: entry points and the thread runtime, where the JIT has
hloc_entry), the target's machines (PIC; the host's CPU unless told) and every name but
the exports renamed `PREFIX.name`; a .so or .a holds one object per part, while a .o
links the parts' optimised modules into one and code-generates it once, at the highest of
the parts' code-generation levels (hloc.aot.target.linked_object). Layout:
  abi.py     argument / result leaves: names, types, dims, layout, bytes
  lower.py   the LLVM modules: JIT functions; checked C entry points + the thread runtime
  target.py  target machines (host or cross), the parts' objects, the undefined-symbol check
  link.py    .o / .a written here, .so linked by the system C compiler
  header.py  the C header and the optional C++ wrapper class
Large dots use the emitted GEMM (hloc.backend.gemm) unless a BLAS is given to link.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from ..backend.context import Options
from ..diagnostics import InputError

__all__ = ["compile_library", "Library"]

_SCIPY_GEMM = {"scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", "scipy_cblas_cgemm64_",
               "scipy_cblas_zgemm64_"}
_CBLAS = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"}


@dataclass
class Library:
    path: str
    header: str | None
    prefix: str
    triple: str
    cpu: str
    scratch_bytes: int
    args: list = field(default_factory=list)
    results: list = field(default_factory=list)
    undefined: list = field(default_factory=list)
    # per part compiled (the code's as the JIT's, then the glue): (SLP on, brief LLVM
    # options, level, code-generation level), hloc.backend.jit.Lowered.settings' form
    parts: list = field(default_factory=list)
    units: int = 0          # the first parts: units' own (hloc.backend.partition.unit_part)


def _prefix(name: str | None, path: str) -> str:
    if name is None:
        base = os.path.basename(path).split(".")[0]
        name = base[3:] if base.startswith("lib") and len(base) > 3 else base
    name = re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not name or name[0].isdigit():
        name = "m_" + name
    return name


def compile_library(module, path: str, *, header: str | None = None, name: str | None = None,
                    triple: str | None = None, cpu: str | None = None, features: str | None = None,
                    threads: int = 1, numerics: str = "xla-cpu", opt_level: int = 3,
                    blas: str | None = None, lapack: str | None = None,
                    cpp_class: str | None = None, cc: str | None = None,
                    source: str = "", cache_dir=None) -> Library:
    """Write `path` (.o, .a or .so) and, when asked, the C header. `module` is compiled as
    it is (run the HLO pipeline first if wanted). `blas`: a library to call for large dots
    instead of the emitted GEMM: a standard cblas (`cblas_?gemm`, `int` sizes), or one
    exporting NumPy's OpenBLAS symbols (`scipy_cblas_?gemm64_`, e.g. NumPy's own
    libscipy_openblas64_), which gives the JIT's bits for large dots too;
    `lapack`: a library providing what LAPACK custom calls need. `cache_dir`: the object
    cache (hloc.backend.cache), keyed also by the target, CPU and features."""
    from ..backend import gemm  # noqa: F401
    from .header import header_text
    from .link import link_shared, write_archive
    from .lower import lower_library
    from .target import Target, check_symbols, undefined_symbols

    kind = os.path.splitext(path)[1]
    if kind not in (".o", ".a", ".so"):
        raise InputError(f"output {path!r}: the name must end in .o, .a or .so")
    if not 1 <= int(threads) <= 64:
        raise InputError(f"--threads {threads}: must be 1..64")
    if cpp_class is not None and not re.fullmatch(r"[A-Za-z_]\w*(::[A-Za-z_]\w*)*", cpp_class):
        raise InputError(f"--cpp-class {cpp_class!r}: expected NS::Name (C++ identifiers)")
    for out in (path, header):
        _check_writable(out)
    prefix = _prefix(name, path)
    target = Target(triple, cpu, features)
    if kind == ".so" and target.triple != Target().triple:
        cc = cc or _cross_cc(target.triple)
    interface = _blas_interface(blas, target) if blas else "emitted"
    options = Options(numerics, opt_level, gemm=interface)
    low = lower_library(module, options, prefix, target.triple, target.data_layout, threads,
                        target.features)
    texts, settings, units = _parts(low, options)
    objs = _objects(texts, settings, options, target, cache_dir, low, kind == ".o")
    extra = {"blas": frozenset(_SCIPY_GEMM), "cblas": frozenset(_CBLAS)}.get(interface, frozenset())
    libs = [os.path.abspath(p) for p in (blas, lapack) if p]
    if lapack:
        extra = extra | frozenset(undefined_symbols(objs))
    undefined = check_symbols(objs, extra)
    try:
        if kind == ".o":
            with open(path, "wb") as f:
                f.write(objs[0])
        elif kind == ".a":
            write_archive(path, objs, prefix)
        else:
            link_shared(path, objs, libs, cc=cc, soname=os.path.basename(path))
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror or e}") from None
    if header:
        note = ""
        if libs:
            note = "also " + ", ".join(libs)
        try:
            with open(header, "w") as f:
                f.write(header_text(low, module.name, source or "MODULE", target, cpp_class,
                                    note))
        except OSError as e:
            raise InputError(f"{header}: cannot write: {e.strerror or e}") from None
    return Library(path, header, prefix, target.triple, target.cpu, low.scratch, low.args,
                   low.results, undefined, settings, units)


def _check_writable(path: str | None) -> None:
    """Before compiling: an output whose directory does not exist cannot be written (the
    linker would only say `ld returned 1 exit status`, after the whole compile)."""
    if path is None:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"{path}: cannot write: no directory {parent}")


def _parts(low, options):
    """The library's parts, their settings and how many of them are units': the code's
    as the JIT plans them (hloc.backend.jit.part_plan with the units lower_library made,
    the entry computation kept external for the glue), then the glue, mostly the thread
    runtime, as the JIT compiles that (no passes, code generation at
    hloc.backend.threadpool_jit.LEVEL; its checks and calls gain nothing from more), in
    the same options phase as the code's last part (no phase of its own)."""
    from ..backend import jit, threadpool_jit
    sp, settings = jit.part_plan(low.fns, options, roots=(low.entry.name,), units=low.units,
                                 printed=low.printed)
    low.ir_text = sp.text + "\n" + low.glue
    settings = jit.resolved(settings, options)
    glue = (False, settings[-1][1], 0, threadpool_jit.LEVEL)
    return sp.parts + [low.glue], settings + [glue], sp.units


def _objects(texts, settings, options, target, cache_dir, low, linked: bool) -> list[bytes]:
    """The parts' objects (hloc.aot.target), or with `linked` the one object of them all,
    from the object cache when there."""
    import llvmlite
    import llvmlite.binding as llvm

    from .. import __version__
    from ..backend import settings as backend_settings
    from ..backend.cache import ObjectCache, cache_key, pack, unpack
    from ..backend.jit import compile_threads_default, sources_digest
    cache = ObjectCache(cache_dir)
    # the back end's settings as they are now, the code's and the glue's thread runtime's
    # (hloc.backend.settings: process-wide LLVM options and levels the texts do not show),
    # as the JIT's keys hold them (jit.module_key, threadpool_jit)
    key = cache_key("aot", low.prefix, *texts, repr(settings), str(linked), options.key(),
                    target.triple, target.cpu, target.features, __version__, sources_digest(),
                    llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)),
                    backend_settings.text(), backend_settings.text(backend_settings.RUNTIME))
    got = unpack(cache.get(key) or b"")
    if got is not None and isinstance(got[0].get("objects"), list):
        sizes, blob = got[0]["objects"], got[1]
        if sum(sizes) == len(blob):
            starts = [sum(sizes[:k]) for k in range(len(sizes))]
            return [blob[a:a + n] for a, n in zip(starts, sizes)]
    if linked:
        objs = [target.linked_object(texts, settings, options, low.prefix, low.defined)]
    else:
        objs = target.objects(texts, settings, options, low.prefix, low.defined,
                              compile_threads_default())
    cache.put(key, pack({"objects": [len(o) for o in objs]}, b"".join(objs)))
    return objs


def _blas_interface(path: str, target) -> str:
    """"blas" (NumPy's ILP64 scipy_ symbols, what the JIT calls) or "cblas" (standard LP64),
    from what the library exports; a library for another target is taken as standard."""
    from .target import Target
    if target.triple != Target().triple:
        return "cblas"
    import ctypes
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as e:
        raise InputError(f"--blas {path}: cannot be loaded ({e})") from None
    if hasattr(lib, "scipy_cblas_sgemm64_"):
        return "blas"
    if hasattr(lib, "cblas_sgemm"):
        return "cblas"
    raise InputError(f"--blas {path}: exports neither cblas_sgemm nor scipy_cblas_sgemm64_")


def _cross_cc(triple: str) -> str:
    arch = triple.split("-")[0]
    return f"{arch}-linux-gnu-gcc"
