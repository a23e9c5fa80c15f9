"""The platform libm's scalar float64 functions applied over NumPy arrays.

NumPy picks a SIMD implementation of exp, log, cbrt, pow, atan2, asin ... by CPU (its
AVX-512 loops differ from the scalar ones in the last bit; `cbrt(-27)` is -3 with AVX-512
and -3.0000000000000004 without), so results computed with NumPy's ufuncs depend on the
machine. XLA's HloEvaluator calls the scalar libm routine (std::exp ...). These kernels do
too, on every machine: a small loop per function, JIT-compiled once through llvmlite
without any IR optimisation (so nothing is vectorised or rewritten), calls the libm
symbol for each element. The names are fixed here; nothing from an input is looked up.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import threading

import numpy as np

UNARY = ("exp", "expm1", "log", "log1p", "cbrt", "sin", "cos", "tan", "tanh", "sinh", "cosh",
         "asin", "acos", "atan", "asinh", "acosh", "atanh")
BINARY = ("pow", "atan2")

_LOCK = threading.Lock()
_KERNELS: dict[str, object] = {}
_ENGINE = []                     # keeps the JIT (and so the code) alive


def _ir() -> str:
    lines = []
    for name, arity in [(n, 1) for n in UNARY] + [(n, 2) for n in BINARY]:
        params = ", ".join(["double"] * arity)
        lines.append(f"declare double @{name}({params})")
        ins = ", ".join(f"ptr %in{j}" for j in range(arity))
        loads = "\n".join(f"  %p{j} = getelementptr double, ptr %in{j}, i64 %i\n"
                          f"  %x{j} = load double, ptr %p{j}" for j in range(arity))
        args = ", ".join(f"double %x{j}" for j in range(arity))
        lines.append(f"""define void @hloc_map_{name}({ins}, ptr %out, i64 %n) {{
entry:
  %go = icmp sgt i64 %n, 0
  br i1 %go, label %loop, label %done
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
{loads}
  %y = call double @{name}({args})
  %q = getelementptr double, ptr %out, i64 %i
  store double %y, ptr %q
  %next = add i64 %i, 1
  %end = icmp eq i64 %next, %n
  br i1 %end, label %done, label %loop
done:
  ret void
}}""")
    return "\n".join(lines)


def _build() -> None:
    import llvmlite.binding as llvm
    path = ctypes.util.find_library("m")
    lib = ctypes.CDLL(path) if path else ctypes.CDLL(None)
    for name in UNARY + BINARY:
        llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(opt=0, jit=True)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_ir()), tm)
    engine.finalize_object()
    ptr = ctypes.c_void_p
    for name in UNARY:
        _KERNELS[name] = ctypes.CFUNCTYPE(None, ptr, ptr, ctypes.c_int64)(
            engine.get_function_address(f"hloc_map_{name}"))
    for name in BINARY:
        _KERNELS[name] = ctypes.CFUNCTYPE(None, ptr, ptr, ptr, ctypes.c_int64)(
            engine.get_function_address(f"hloc_map_{name}"))
    _ENGINE.append(engine)


def _kernel(name: str):
    if not _KERNELS:
        with _LOCK:
            if not _KERNELS:
                _build()
    return _KERNELS[name]


def apply(name: str, *args) -> np.ndarray:
    """libm's `name` elementwise over float64 arrays (broadcast); a float64 array."""
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))
    shape = arrays[0].shape
    ins = [np.ascontiguousarray(a) for a in arrays]
    out = np.empty(shape, dtype=np.float64)
    if out.size:
        _kernel(name)(*(a.ctypes.data for a in ins), out.ctypes.data, out.size)
    return out


def function(name: str):
    """A float64 array function calling libm's `name` (a name of UNARY or BINARY)."""
    if name not in UNARY + BINARY:
        raise KeyError(name)

    def fn(*args):
        return apply(name, *args)
    fn.__name__ = name
    return fn
