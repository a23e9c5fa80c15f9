"""Target machines for library output, object emission and the symbol check.

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

    def emit_object(self, ir_text: str, options: Options, prefix: str, exports=()) -> bytes:
        """Optimise as the JIT does and emit. Functions other than `exports` keep external
        linkage (so LLVM optimises them exactly as in the JIT's module, where they are
        external too) but become hidden and `prefix.`-named: two libraries never clash."""
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        for f in mod.functions:
            if not f.is_declaration and f.name not in exports and f.linkage == llvm.Linkage.external:
                f.visibility = "hidden"
                f.name = f"{prefix}.{f.name}"
        tm = self.machine(options.opt_level)
        with compile_threads.OPTIONS_LOCK:  # hloc's default LLVM options, as in the JIT
            if options.opt_level > 0:       # the JIT's pipeline (hloc.backend.jit.optimize)
                pb = compile_threads.pass_builder(tm, options.opt_level)
                pb.getModulePassManager().run(mod, pb)
            return tm.emit_object(mod)


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


def check_symbols(obj: bytes, extra: frozenset = frozenset(), linked: str = "") -> list[str]:
    """The object's undefined symbols; refuse any outside libc/libm/libpthread and `extra`
    (what a library given with --blas/--lapack provides)."""
    try:
        undefined = runtime.undefined_symbols(obj)
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
