"""Numeric edge cases every executor is tested against (the interpreter in
tests/test_numeric_edge_cases.py; a compiled back end imports EDGE_CASES too).

Each case: (opcode, operand element type, result element type, operands, expected, why).
Operands and expected values are element lists; NaN is float("nan"). The expected values
are XLA:CPU's, computed with jax 0.10.2 / jaxlib 0.10.2 (lax.div, lax.rem, the shifts,
lax.max/min, lax.convert_element_type on CPU), not derived from hloc.
"""
from __future__ import annotations

NAN = float("nan")
INF = float("inf")
I32_MIN, I32_MAX = -2**31, 2**31 - 1

EDGE_CASES = [
    # integer division: x/0 is -1 (all bits set), x%0 is x, INT_MIN/-1 wraps
    ("divide", "s32", "s32", ([7, -7, I32_MIN], [0, 0, -1]), [-1, -1, I32_MIN],
     "x/0 = -1; INT_MIN/-1 = INT_MIN"),
    ("remainder", "s32", "s32", ([7, -7, I32_MIN], [0, 0, -1]), [7, -7, 0],
     "x%0 = x; INT_MIN%-1 = 0"),
    ("divide", "u32", "u32", ([7], [0]), [2**32 - 1], "unsigned x/0 = all ones"),
    ("remainder", "u32", "u32", ([7], [0]), [7], "unsigned x%0 = x"),
    # shifts by the bit width or more
    ("shift-left", "s32", "s32", ([1, 1, -1], [31, 32, 40]), [I32_MIN, 0, 0],
     "shift-left >= bits is 0"),
    ("shift-right-logical", "s32", "s32", ([-8, -8], [31, 32]), [1, 0],
     "logical shift >= bits is 0"),
    ("shift-right-arithmetic", "s32", "s32", ([-8, 8, -8], [32, 32, 100]), [-1, 0, -1],
     "arithmetic shift >= bits fills with the sign"),
    # NaN in maximum / minimum propagates from either side
    ("maximum", "f32", "f32", ([NAN, 1.0], [1.0, NAN]), [NAN, NAN], "max propagates NaN"),
    ("minimum", "f32", "f32", ([NAN, 1.0], [1.0, NAN]), [NAN, NAN], "min propagates NaN"),
    # rounding to narrow floats: nearest, ties to even, overflow
    ("convert", "f32", "bf16", ([1 + 2**-8, 1 + 3 * 2**-8, 3.4e38],), [1.0, 1.015625, INF],
     "f32->bf16 ties to even; overflow to inf"),
    ("convert", "f32", "f16", ([65519.0, 65520.0, 2.0**-25, 1.5 * 2.0**-25],),
     [65504.0, INF, 0.0, 2.0**-24], "f32->f16 rounding at the top and in subnormals"),
    ("convert", "f32", "f8e4m3fn", ([448.0, 464.0, 1000.0, 0.0019],),
     [448.0, 448.0, NAN, 0.001953125], "f8e4m3fn has no inf: overflow is NaN"),
    ("convert", "f32", "f8e5m2", ([57344.0, 61440.0, 1e6],), [57344.0, INF, INF],
     "f8e5m2 ties to even into inf"),
    # float -> int saturates, NaN -> 0, truncation toward zero
    ("convert", "f32", "s32", ([3e9, -3e9, NAN, 2.7, -2.7],), [I32_MAX, I32_MIN, 0, 2, -2],
     "f32->s32 saturates; NaN is 0"),
    ("convert", "f32", "u8", ([-1.0, 300.0, NAN, 255.9],), [0, 255, 0, 255],
     "f32->u8 saturates; NaN is 0"),
]
