"""Target machines for library output, the parts' objects and the symbol check.

The parts compile as the JIT's do (hloc.backend.compile_threads.compile_all with each
part's settings), with this target's machines; every name the library defines but its two
entry points becomes `PREFIX.name`, hidden, in every part, so parts meet and libraries
never clash.

The host target uses the JIT's CPU name and features unless told otherwise (so the
library runs the same vector code as `hloc run --backend cpu`); another triple needs
LLVM's target registered (llvmlite ships x86, aarch64, arm, riscv, ppc, s390x, wasm ...)
and defaults to its generic CPU. Code is position independent with the default code
model, as a shared library needs.
"""
from __future__ import annotations

import llvmlite.binding as llvm

from ..backend import compile_threads, jit, runtime
from ..backend.context import Options
from ..diagnostics import InputError, UnsupportedError

_all_registered = False


class Target:
    def __init__(self, triple: str | None = None, cpu: str | None = None,
                 features: str | None = None):
        target, host_cpu, host_feats, host_triple = jit.host()
        if triple is None or triple == host_triple:
            self.triple = host_triple
            self.target = target
            if cpu is None:
                cpu, features = host_cpu, host_feats if features is None else features
        else:
            global _all_registered
            if not _all_registered:
                llvm.initialize_all_targets()
                llvm.initialize_all_asmprinters()
                _all_registered = True
            try:
                self.target = llvm.Target.from_triple(triple)
            except RuntimeError as e:
                raise InputError(f"target {triple!r}: {str(e).strip()}") from None
            self.triple = triple
            cpu = cpu or "generic"
        self.cpu, self.features = cpu, features or ""
        self.arch = self.triple.split("-")[0]

    def machine(self, opt: int = 3):
        try:
            return self.target.create_target_machine(cpu=self.cpu, features=self.features, opt=opt,
                                                     reloc="pic", codemodel="default", jit=False)
        except RuntimeError as e:
            raise InputError(f"target {self.triple} cpu {self.cpu!r}: {str(e).strip()}") from None

    @property
    def data_layout(self) -> str:
        return str(self.machine().target_data)

    def objects(self, texts, settings, options: Options, prefix: str, defined=(),
                threads: int = 1) -> list[bytes]:
        """The object of each part, compiled as the JIT compiles its parts
        (compile_threads.compile_all: each part's settings, hloc.backend.jit.Lowered.settings'
        form, the parts on `threads` threads) with this target's machines."""
        slp, brief, levels, codegen = zip(*settings)
        return compile_threads.compile_all(list(texts), self.machine, options.opt_level, threads,
                                           None, slp, brief, levels, codegen,
                                           _renamer(prefix, defined))

    def linked_object(self, texts, settings, options: Options, prefix: str, defined=()) -> bytes:
        """One object of every part (an object file holds one module): each part parsed and
        optimised with its settings, the optimised modules linked into one, code-generated
        once, at the highest of the parts' code-generation levels, under
        compile_threads.BRIEF_OPTIONS only where every part compiles under them."""
        rename = _renamer(prefix, defined)
        mods = [compile_threads.optimised_module(text, self.machine(cg), level, slp, brief, rename)
                for text, (slp, brief, level, cg) in zip(texts, settings)]
        for mod in mods[1:]:
            mods[0].link_in(mod)
        with compile_threads.OPTIONS_LOCK.compiling(all(s[1] for s in settings)):
            return self.machine(max(s[3] for s in settings)).emit_object(mods[0])


def _renamer(prefix: str, defined):
    """Names `defined` in a part (definitions and the other parts' declarations) become
    `prefix.name`, hidden where not internal: two libraries never clash, and the parts
    still meet (exports keep their names). External linkage is kept, so LLVM optimises
    them as in the JIT's module, where they are external too."""
    defined = frozenset(defined)
    local = (llvm.Linkage.internal, llvm.Linkage.private)

    def rename(mod) -> None:
        for v in [*mod.functions, *mod.global_variables]:
            if v.name in defined:
                if v.linkage not in local:
                    v.visibility = "hidden"
                v.name = f"{prefix}.{v.name}"
    return rename


# What a self-contained library may leave to libc, libm and libpthread (and the TLS helper):
# named here, not derived from the JIT's runtime table, which also lists BLAS/LAPACK.
_LIBM = ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh",
         "cbrt", "erf", "erfc", "acos", "acosh", "asin", "asinh", "atan", "atanh", "sinh", "cosh",
         "pow", "atan2", "fmod", "hypot", "fma", "sqrt", "floor", "ceil", "trunc", "round",
         "rint", "nearbyint", "fabs", "copysign", "fmin", "fmax", "lgamma", "tgamma", "ldexp",
         "remainder", "roundeven", "lround", "llround", "lrint", "llrint", "scalbn", "nextafter",
         "sincos", "exp10")
# The C compiler's runtime (libgcc / compiler-rt), which every `cc` link brings: what LLVM
# calls for half/bfloat conversions, complex division and 128-bit integers on CPUs without
# the instructions.
_CRT = ("__extendhfsf2", "__truncsfhf2", "__truncdfhf2", "__extendhfdf2", "__truncsfbf2",
        "__truncdfbf2", "__extendbfsf2", "__powisf2", "__powidf2", "__mulsc3", "__muldc3",
        "__divsc3", "__divdc3", "__divti3", "__udivti3", "__modti3", "__umodti3",
        "__fixsfti", "__fixdfti", "__fixunssfti", "__fixunsdfti", "__floattisf", "__floattidf",
        "__floatuntisf", "__floatuntidf", "__multi3", "__muloti4")
SYSTEM = frozenset({*_LIBM, *(f + "f" for f in _LIBM), *_CRT, "memcpy", "memset", "memmove",
                    "malloc", "free", "pthread_create", "pthread_join", "syscall", "getpid",
                    "sched_yield", "__tls_get_addr"})


def undefined_symbols(objs: list[bytes]) -> list[str]:
    """What the objects of one library reference and none of them defines."""
    defined = {s for o in objs for s in runtime.defined_symbols(o)}
    return sorted({s for o in objs for s in runtime.undefined_symbols(o)} - defined)


def check_symbols(objs: list[bytes], extra: frozenset = frozenset(), linked: str = "") -> list[str]:
    """The undefined symbols of the objects (of one library) that none of them defines;
    refuse any outside libc/libm/libpthread and `extra` (what a library given with
    --blas/--lapack provides)."""
    try:
        undefined = undefined_symbols(objs)
    except ValueError:
        raise UnsupportedError("unsupported: the undefined-symbol check reads ELF64 little-endian "
                               "objects only; this target's object is not one") from None
    bad = sorted(s for s in undefined if s not in SYSTEM and s not in extra)
    if bad:
        raise UnsupportedError(
            f"unsupported: the compiled module calls {', '.join(bad)}, which is not in libc, "
            f"libm, libpthread or the C compiler's runtime{linked}; pass the library that "
            "exports them (--lapack PATH for LAPACK routines, --blas PATH for BLAS)")
    return undefined
