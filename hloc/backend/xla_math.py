"""XLA:CPU's own approximations of transcendental functions, for `xla-cpu` numerics.

XLA:CPU does not call libm for these: it emits its own branch-free code, which LLVM
inlines and vectorises. hloc emits the same operations in the same order with the same
constants, so in `xla-cpu` numerics the values are XLA's bit for bit (checked against
values XLA computed: testdata/numerics, tools/gen_transcendental_values.py); `ieee`
numerics keep glibc's functions (hloc.backend.elementwise), the interpreter's bits.

tanh (xla/codegen/intrinsic/tanh.cc, Eigen's rational interpolants): an odd numerator
over an even denominator in x^2, each by Horner with `contract` (FMA on FMA hosts);
x clamped with XLA's fast min/max (a select on an unordered compare: NaN passes
through). f32: |x| < 0.0004 gives x; the clamp is +-7.99881172 (XLA's FMA clamp, where
the approximation is exactly 1). f64: the clamp is +-17.714196154005176 (XLA passes
with_fma=false for f64, though LLVM still contracts). Both: |x| >= 20 gives
copysign(1, x).
"""
from __future__ import annotations

from llvmlite import ir

from .types import F32

CONTRACT = ("contract",)

# (numerator coefficients of x * P(x^2), highest first; denominator Q(x^2); clamp)
TANH_F32 = ((-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
             4.89352455891786e-03),
            (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
             4.89352518554385e-03), 7.99881172180175781)
TANH_F64 = ((2.6158007860482230e-23, 7.6534862268749319e-19, 3.1309488231386680e-15,
             4.2303918148209176e-12, 2.4618379131293676e-09, 6.8644367682497074e-07,
             9.3839087674268880e-05, 5.9809711724441161e-03, 1.5184719640284322e-01, 1.0),
            (6.463747022670968018e-21, 5.782506856739003571e-17, 1.293019623712687916e-13,
             1.123643448069621992e-10, 4.492975677839633985e-08, 8.785185266237658698e-06,
             8.295161192716231542e-04, 3.437448108450402717e-02, 4.851805297361760360e-01, 1.0),
            17.714196154005176)


def _intrinsic(kb, name, x, n=1):
    t = x.type
    return kb.mcx.intrinsic(f"llvm.{name}.{'f32' if t == F32 else 'f64'}", t, [t] * n)


def tanh(kb, x):
    """XLA:CPU's tanh of an f32 or f64 value."""
    b = kb.b
    num_c, den_c, clamp = TANH_F32 if x.type == F32 else TANH_F64
    c = lambda v: ir.Constant(x.type, v)     # noqa: E731
    xc = b.select(b.fcmp_unordered(">=", x, c(-clamp)), x, c(-clamp))
    xc = b.select(b.fcmp_unordered("<=", xc, c(clamp)), xc, c(clamp))
    x2 = b.fmul(xc, xc, flags=CONTRACT)

    def horner(coeffs):
        p = c(coeffs[0])
        for k in coeffs[1:]:
            p = b.fadd(b.fmul(x2, p, flags=CONTRACT), c(k), flags=CONTRACT)
        return p
    y = b.fdiv(b.fmul(xc, horner(num_c), flags=CONTRACT), horner(den_c), flags=CONTRACT)
    absx = b.call(_intrinsic(kb, "fabs", x), [x])
    if x.type == F32:
        y = b.select(b.fcmp_ordered("<", absx, c(0.0004)), x, y)
    one = b.call(_intrinsic(kb, "copysign", x, 2), [c(1.0), x])
    return b.select(b.fcmp_ordered(">=", absx, c(20.0)), one, y)
