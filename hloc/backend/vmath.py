"""Branch-free f32 exp for xla-cpu numerics, written so LLVM's loop vectoriser keeps it in
vector registers (no calls, no branches, no integer conversions it cannot widen).

exp(x) = 2^n * exp(r) with n = round(x / ln 2) and r = x - n*ln2 (ln 2 in two parts, the
first exact for every n in range), |r| <= ln2/2; exp(r) by a degree-6 polynomial fitted for
relative error (2e-9 before rounding). Over every f32 input in [-104, 89] (2.24e9 of them,
against exp in f64): 99.36 % correctly rounded, max 1.059 ulp (139 inputs above 1 ulp, all
with |r| near ln2/2, where r's own rounding adds up to ~0.2 ulp; x = 5.201181411743164 is
the worst). A 16-entry table method (2^(j/16) by vpermps, degree-3 polynomial) reaches 0.57
ulp with 2 fewer multiply-adds but was slower here: on Zen 4 the permutes take the
vector-pipe slots the multiply-adds free (softmax 64x8192 7 % slower). n comes from adding
1.5*2^23 (round to nearest), so its integer is the low bits of that float. XLA:CPU also
replaces exp by its own vectorisable polynomial (budget 6 ulp,
xla/codegen/intrinsic/accuracy).

The scaling by 2^n: with AVX-512 vscalefps (correct overflow to inf and gradual
underflow): on vectors of whole zmm registers (explicit vector code, hloc.backend.row_vector)
the x86 intrinsic on the float n (`_scalef`), elsewhere `llvm.ldexp` of the integer n,
which code generation makes vcvtdq2ps + vscalefps (the loop vectoriser widens ldexp, not
an x86 intrinsic); the same bits. Without AVX-512 ldexp would be a libm call per element,
so 2^n is built in the exponent bits in two halves (2^(n>>1) * 2^(n - (n>>1)), both
normal for n in [-150, 128]), from z's bits. Inputs are clamped to [-104, 89] first (exp
is 0 below, inf above; NaN passes the clamps and stays NaN).
"""
from __future__ import annotations

from llvmlite import ir

from .row_vector import const, join, split, suffix
from .types import F32, I16, I32

SCALEF = True       # off: AVX-512 vectors scaled by llvm.ldexp of the integer n (A/B)
HALVES_FROM_Z = True    # off: without AVX-512, 2^(n>>1), 2^(n-(n>>1)) from the integer n (A/B)
_SCALEF_LANES = 16  # llvm.x86.avx512.mask.scalef.ps.512: one zmm register

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
    """The target has AVX-512: the scaling by 2^n is vscalefps (the intrinsic on the float
    n, or llvm.ldexp of the integer n: vcvtdq2ps + vscalefps), not the two halves."""
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
    vscalef = has_vscalef(kb.mcx)
    if vscalef and _scalef_pieces(t):
        return _scalef(kb, p, n)
    zb = b.bitcast(z, it)
    if vscalef:
        ni = b.sub(zb, ic(_SHIFT_BITS))                 # n as an integer
        isfx = f"v{t.count}i32" if isinstance(t, ir.VectorType) else "i32"
        return b.call(kb.mcx.intrinsic(f"llvm.ldexp.{sfx}.{isfx}", t, [t, it]), [p, ni])
    if HALVES_FROM_Z:
        # 2^h and 2^(n-h), h = n>>1, from z's bits: only the low 9 bits of an exponent
        # survive `<< 23`, and those of n, h, n-h are those of zb, zb>>1, zb - (zb>>1)
        # (_SHIFT_BITS and its half end in 9 zero bits): one integer op fewer than from n
        hb = b.ashr(zb, ic(1))
        scale = lambda e: b.bitcast(b.add(b.shl(e, ic(23)), ic(127 << 23)), t)  # noqa: E731
        return b.fmul(b.fmul(p, scale(hb)), scale(b.sub(zb, hb)))
    ni = b.sub(zb, ic(_SHIFT_BITS))
    half = b.ashr(ni, ic(1))
    bias = lambda e: b.bitcast(b.shl(b.add(e, ic(127)), ic(23)), t)  # noqa: E731
    return b.fmul(b.fmul(p, bias(half)), bias(b.sub(ni, half)))


def _scalef_pieces(t) -> bool:
    """`t` is a vector that splits into whole zmm registers (a power of two of them, for
    row_vector.join)."""
    k = t.count // _SCALEF_LANES if isinstance(t, ir.VectorType) else 0
    return SCALEF and k > 0 and t.count % _SCALEF_LANES == 0 and k & (k - 1) == 0


def _scalef(kb, p, n):
    """p * 2^n by vscalefps on the float n, 16 lanes at a time: the bits of llvm.ldexp(p,
    ni) with ni the integer of n, which code generation makes vcvtdq2ps + vscalefps
    (vscalefps(a, b) = a * 2^floor(b), rounded as MXCSR says (argument 4: the current
    direction), flushed under FTZ; here b is n exactly: z = x*log2e + 1.5*2^23 lies in
    [2^23, 2^24) for clamped x, where a float's ulp is 1, so n = z - 1.5*2^23 is exact
    (Sterbenz) and an integer, the integer ni is, and never subnormal. A NaN x makes both
    p and n quiet NaNs with x's payload (every op before propagates its one NaN operand),
    and vscalefps returns src1's, as it does with an integer b: the same bits). This saves
    ldexp's vpaddd and vcvtdq2ps per 16 lanes."""
    b = kb.b
    vt = ir.VectorType(F32, _SCALEF_LANES)
    fn = kb.mcx.intrinsic("llvm.x86.avx512.mask.scalef.ps.512", vt, [vt, vt, vt, I16, I32])
    keep, mask, rounding = const(vt, 0.0), ir.Constant(I16, -1), ir.Constant(I32, 4)
    return join(b, [b.call(fn, [pp, nn, keep, mask, rounding])
                    for pp, nn in zip(split(b, p, _SCALEF_LANES), split(b, n, _SCALEF_LANES))])
