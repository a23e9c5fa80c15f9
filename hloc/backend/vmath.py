"""Branch-free f32 exp for xla-cpu numerics, written so LLVM's loop vectoriser keeps it in
vector registers (no calls, no branches, no integer conversions it cannot widen).

exp(x) = 2^n * exp(r) with n = round(x / ln 2) and r = x - n*ln2 (ln 2 in two parts, the
first exact for every n in range), |r| <= ln2/2; exp(r) by a degree-6 polynomial fitted for
relative error (2e-9 before rounding; measured max error 0.86 ulp against exp in f64 over
the whole input range). n comes from adding 1.5*2^23 (round to nearest), so its integer
is the low bits of that float. XLA:CPU also replaces exp by its own vectorisable
polynomial (budget 6 ulp, xla/codegen/intrinsic/accuracy).

The scaling by 2^n: with AVX-512 `llvm.ldexp` (one vscalefps, correct overflow to inf and
gradual underflow); elsewhere ldexp would be a libm call per element, so 2^n is built in
the exponent bits in two halves (2^(n>>1) * 2^(n - (n>>1)), both normal for n in
[-150, 128]). Inputs are clamped to [-104, 89] first (exp is 0 below, inf above; NaN
passes the clamps and stays NaN).
"""
from __future__ import annotations

from llvmlite import ir

from .row_vector import const, suffix
from .types import I32

# exp(r) ~ sum c_k r^k on |r| <= ln2/2 (weighted least squares iterated to minimax
# relative error, c0 = c1 = 1 exactly so exp(0) == 1)
_POLY = (1.0, 1.0, float.fromhex("0x1.fffffcp-2"), float.fromhex("0x1.55541ap-3"),
         float.fromhex("0x1.555822p-5"), float.fromhex("0x1.126782p-7"),
         float.fromhex("0x1.6ae73p-10"))
_LOG2E = 1.4426950408889634
_LN2_HI = 0.693145751953125          # 16 significant bits: n * _LN2_HI is exact
_LN2_LO = 1.428606765330187e-06
_SHIFT = 12582912.0                  # 1.5 * 2^23: x + _SHIFT rounds x to an integer
_SHIFT_BITS = 0x4B400000
_LO, _HI = -104.0, 89.0


def has_vscalef(mcx) -> bool:
    """The target has AVX-512 (llvm.ldexp is then one instruction per vector)."""
    feats = getattr(mcx, "features", None) or ""
    return mcx.module.triple.startswith("x86_64") and "+avx512f" in feats.split(",")


def exp_f32(kb, x, upper: bool = True):
    """exp(x) of an f32 or of a vector of them (the same operations, lane by lane);
    `upper` false: x is known to be <= _HI or a NaN (hloc.backend.bounds), the clamp from
    above is left out (it could not change x)."""
    b = kb.b
    t = x.type                          # f32, or <W x f32> (hloc.backend.row_vector)
    it = ir.VectorType(I32, t.count) if isinstance(t, ir.VectorType) else I32
    sfx = suffix(t)
    c = lambda v: const(t, v)           # noqa: E731  (a splat where t is a vector)
    ic = lambda v: const(it, v)         # noqa: E731
    fmuladd = kb.mcx.intrinsic(f"llvm.fmuladd.{sfx}", t, [t, t, t])
    fma = lambda a, m, s: b.call(fmuladd, [a, m, s])    # noqa: E731
    x = b.select(b.fcmp_ordered("<", x, c(_LO)), c(_LO), x)
    if upper:
        x = b.select(b.fcmp_ordered(">", x, c(_HI)), c(_HI), x)
    z = fma(x, c(_LOG2E), c(_SHIFT))
    n = b.fsub(z, c(_SHIFT))
    r = fma(n, c(-_LN2_HI), x)
    r = fma(n, c(-_LN2_LO), r)
    p = c(_POLY[-1])
    for k in reversed(_POLY[:-1]):
        p = fma(p, r, c(k))
    ni = b.sub(b.bitcast(z, it), ic(_SHIFT_BITS))   # n as an integer
    if has_vscalef(kb.mcx):
        isfx = f"v{t.count}i32" if isinstance(t, ir.VectorType) else "i32"
        return b.call(kb.mcx.intrinsic(f"llvm.ldexp.{sfx}.{isfx}", t, [t, it]), [p, ni])
    half = b.ashr(ni, ic(1))
    bias = lambda e: b.bitcast(b.shl(b.add(e, ic(127)), ic(23)), t)  # noqa: E731
    return b.fmul(b.fmul(p, bias(half)), bias(b.sub(ni, half)))
