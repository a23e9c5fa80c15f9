"""Pure NumPy kernels with HLO's elementwise arithmetic (XLA:CPU / HloEvaluator rules).

Every kernel takes the operand element type(s) (hloc DType) and storage arrays and
returns a storage array of the result element type; nothing here knows instructions.
Integers are computed in int64/uint64 and wrapped to their bit width (sub-byte and
s1/u1 included); f16/bf16/f8/f4 are computed in f32 and rounded back after each op;
f32/f64/c64/c128 in their own type. f32 transcendentals (exp, log, sin, pow, atan2 ...)
are computed in f64 and rounded once, as the correctly rounded libm functions XLA:CPU and
HloEvaluator call (NumPy's own f32 loops are a few ULP off). Where HLO differs from NumPy
the rules follow xla/service/elemental_ir_emitter.cc (integer divide/remainder, shifts,
llvm.maximum, expm1, complex abs/divide/power, pred arithmetic),
xla/hlo/evaluator/hlo_evaluator_typed_visitor.h (integer power, sign, logistic) and,
where XLA:CPU's MLIR emitters decide, mhlo's map_mhlo_to_scalar_op.h (complex
maximum/minimum, which the evaluator rejects) and LLVM's fma contraction of complex
multiply (see `fma`). An element type an op does not take raises `Unsupported`.
Callers run kernels under `np.errstate(all="ignore")`. Conversions live in conversions.py.

This module is the kernels' one namespace (`from . import numerics as N`); they live in
kernel_types.py (type plumbing), unary_kernels.py and binary_kernels.py.
"""
from __future__ import annotations

from .kernel_types import (bit_mask, compose, contiguous, from_bits, int_range,
                           is_narrow_float, libm, narrow, raw_bits, require_kind,
                           Unsupported, widen, wrap)  # noqa: F401
from .unary_kernels import (abs_kernel, bit_length, clz_kernel, copy_kernel, imag_kernel,
                            is_finite_kernel, neg_kernel, not_kernel, popcnt_kernel,
                            real_kernel, sign_kernel, UNARY, xla_expm1)  # noqa: F401
from .binary_kernels import (binary, clamp, compare, complex_abs, complex_divide,
                             complex_from_parts, complex_multiply, complex_power,
                             default_comparison_type, fma, fmax, fmin, select,
                             total_order_key)  # noqa: F401
