"""The runtime table: the only native symbols compiled code may call.

A fixed allowlist (libm functions, memcpy/memset, the thread runtime's entry
`hloc_rt_parallel`, clock_gettime for profiled code, malloc/free, the gemm and some LAPACK
routines of NumPy's bundled OpenBLAS), resolved once with ctypes —
the C library, and `numpy.libs/libscipy_openblas64_*.so` found from NumPy's install
directory — and registered with LLVM before any code is loaded. The library handles
are kept (`handles()`) by every loaded module, so no code outlives what it calls. Every object file is
checked before it is loaded: each undefined symbol it references must be on the
allowlist (MCJIT would otherwise segfault at call time on an unresolved one). The thread
runtime (hloc.backend.threadpool), compiled by hloc itself, is the only code that may
also call the C library's thread and futex functions (RUNTIME_LIBC); its entries are
registered here once it is loaded. Nothing from a dump is ever looked up as a symbol:
names come only from this table.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import struct
import threading

import llvmlite.binding as llvm

from ..diagnostics import UnsupportedError

_LIBM_1 = ("exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "cbrt", "erf",
           "acos", "acosh", "asin", "asinh", "atan", "atanh", "sinh", "cosh")
_LIBM_2 = ("pow", "atan2", "fmod", "hypot", "fma")
ALLOWED = frozenset({*_LIBM_1, *_LIBM_2, *(f + "f" for f in (*_LIBM_1, *_LIBM_2)),
                     "memcpy", "memset", "memmove", "malloc", "free", "clock_gettime"})
BLAS = frozenset({"scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_",
                  "scipy_cblas_cgemm64_", "scipy_cblas_zgemm64_"})
# Entries of the device runtime (hloc.backend.device_runtime: collectives between device
# threads), resolved from its own callbacks, never from a library.
DEVICE = frozenset({"hloc_collective"})
# The LAPACK routines of jaxlib's custom-calls (hloc.backend.lapack), per precision.
LAPACK = frozenset(f"scipy_{p}{r}_64_" for p in "sdcz" for r in
                   ("geqrf", "un" + "gqr" if p in "cz" else "orgqr", "heevd" if p in "cz" else "syevd",
                    "gesdd", "gesvd", "geev"))
# The thread runtime's entries (hloc.backend.threadpool), registered by threadpool.install.
THREAD_RUNTIME = frozenset({"hloc_rt_parallel", "hloc_rt_stop"})
ALLOWED = ALLOWED | BLAS | LAPACK | DEVICE | THREAD_RUNTIME
# What only the thread runtime's own object may call.
RUNTIME_LIBC = frozenset({"pthread_create", "pthread_join", "syscall", "getpid", "sched_yield"})

_resolved: dict[str, int] | None = None
_resolving = threading.RLock()      # the thread runtime registers from a thread of its own


def require(name: str) -> None:
    if name not in ALLOWED:
        raise AssertionError(f"runtime symbol {name} is not on the allowlist")


# glibc's sonames, tried first: ctypes.util.find_library runs `ldconfig -p` in a
# subprocess per name, ~10 ms of every process's first compile (each `hloc run`).
_SONAMES = {"m": "libm.so.6", "c": "libc.so.6"}


def _libraries():
    libs = []
    for lib in ("m", "c"):
        for path in (_SONAMES[lib], None):
            try:
                libs.append(ctypes.CDLL(path or ctypes.util.find_library(lib)))
                break
            except OSError:
                continue
    libs.append(ctypes.CDLL(None))
    blas = openblas()
    if blas is not None:
        libs.append(blas)
    return libs


def openblas_path():
    """NumPy's bundled OpenBLAS (ILP64, `scipy_` prefix), or None if this build has none."""
    import glob
    import os

    import numpy
    root = os.path.dirname(os.path.dirname(os.path.abspath(numpy.__file__)))
    found = sorted(glob.glob(os.path.join(root, "numpy.libs", "libscipy_openblas64_*.so")))
    return found[0] if found else None


def openblas():
    path = openblas_path()
    if path is None:
        return None
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


_handles: list = []


def handles() -> list:
    """The loaded libraries the resolved addresses point into (keep them alive)."""
    resolve_all()
    return list(_handles)


def resolve_all() -> dict[str, int]:
    """Address of every allowlisted symbol, registered with LLVM (once per process)."""
    if _resolved is None:
        with _resolving:
            return _resolve()
    return _resolved


def _resolve() -> dict[str, int]:
    global _resolved
    if _resolved is None:
        from .device_runtime import native_entries
        table = dict(native_entries())
        for name, addr in table.items():
            llvm.add_symbol(name, addr)
        libs = _libraries()
        _handles.extend(libs)
        for name in sorted((ALLOWED - DEVICE - THREAD_RUNTIME) | RUNTIME_LIBC):
            for lib in libs:
                try:
                    addr = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                except AttributeError:
                    continue
                if addr:
                    table[name] = addr
                    llvm.add_symbol(name, addr)
                    break
        _resolved = table
    return _resolved


def register(name: str, addr: int) -> None:
    """Add an entry of hloc's own thread runtime (THREAD_RUNTIME) to the table."""
    if name not in THREAD_RUNTIME:
        raise AssertionError(f"{name} is not an entry of the thread runtime")
    with _resolving:            # not while another thread builds the table
        _resolve()[name] = addr
        llvm.add_symbol(name, addr)


def check_runtime_object(obj: bytes) -> None:
    """Refuse a thread-runtime object that calls anything outside RUNTIME_LIBC."""
    table = resolve_all()
    bad = sorted(s for s in undefined_symbols(obj) if s not in RUNTIME_LIBC or s not in table)
    if bad:
        raise UnsupportedError("unsupported: the thread runtime needs native symbols outside "
                               f"its table: {', '.join(bad)}")


def undefined_symbols(obj: bytes) -> list[str]:
    """Undefined global symbols of an ELF64 little-endian relocatable object."""
    return _symbols(obj, defined=False)


def defined_symbols(obj: bytes) -> list[str]:
    """Global symbols an ELF64 little-endian relocatable object defines."""
    return _symbols(obj, defined=True)


def _symbols(obj: bytes, defined: bool) -> list[str]:
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for sh in sections:
        if sh[1] != 2:          # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        s_off = strtab[4]
        for k in range(sh[5] // 24):
            name_off, info, _other, shndx, _val, _size = struct.unpack_from("<IBBHQQ", obj, sh[4] + k * 24)
            if (shndx != 0) == defined and name_off and (info >> 4) in (1, 2):   # UND?, GLOBAL/WEAK
                end = obj.index(b"\0", s_off + name_off)
                out.append(obj[s_off + name_off:end].decode())
    return out


def check_object(obj: bytes) -> None:
    """Refuse an object that references a symbol outside the resolved allowlist."""
    check_objects([obj])


def check_objects(objs: list[bytes]) -> set[str]:
    """Refuse objects (the parts of one module, loaded together) that reference a symbol
    neither one of them defines nor the resolved allowlist holds; the table's symbols
    they call. The thread runtime's entries pass before it is loaded
    (hloc.backend.jit.load loads it first)."""
    table = {s for s in resolve_all() if s not in RUNTIME_LIBC} | THREAD_RUNTIME
    defined = {s for o in objs for s in defined_symbols(o)} if len(objs) > 1 else set()
    wanted = {s for o in objs for s in undefined_symbols(o)} - defined
    bad = sorted(wanted - table)
    if any(s in BLAS or s in LAPACK for s in bad):
        raise UnsupportedError("unsupported: this module's large dots or LAPACK custom-calls call "
                               f"{', '.join(sorted(s for s in bad if s in BLAS or s in LAPACK))}, "
                               "which this NumPy build does not export (it ships no "
                               "numpy.libs/libscipy_openblas64_*.so with them); "
                               "use --backend interpreter")
    if bad:
        raise UnsupportedError("unsupported: compiled code needs native symbols outside the "
                               f"runtime table: {', '.join(sorted(bad))}")
    return wanted
