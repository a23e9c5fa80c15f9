"""Binary, comparison and ternary elementwise kernels: `binary(op, dt, a, b)` with
XLA's integer divide/remainder/power/shift rules, llvm.maximum/minimum for floats, pred
arithmetic, complex multiply/divide/power (LLVM's fma contraction, `fma`), `compare` with
total order, `select`, `clamp`.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import DType
from .kernel_types import (_ARCTAN2, _COS, _EXP, _I64, _LOG, _NO_SIGN_BIT, _POWER, _SIN, _U64,
                           Unsupported, bit_mask, compose, int_range, narrow, raw_bits,
                           require_kind, widen, wrap)


# ---------------------------------------------------------------------------
# Binary kernels

def _int_div(dt, a, b):
    zero = b == 0
    if dt.kind == "uint":
        q = a // np.where(zero, _U64(1), b)
        return np.where(zero, _U64(bit_mask(64)), q)
    lo = int_range(dt)[0]
    ovf = (a == lo) & (b == -1)
    safe = np.where(zero | ovf, _I64(1), b)
    q = (a - np.fmod(a, safe)) // safe                 # truncates toward zero
    return np.where(zero, _I64(-1), np.where(ovf, _I64(lo), q))


def _int_rem(dt, a, b):
    zero = b == 0
    if dt.kind == "uint":
        return np.where(zero, a, a % np.where(zero, _U64(1), b))
    lo = int_range(dt)[0]
    ovf = (a == lo) & (b == -1)
    r = np.fmod(a, np.where(zero | ovf, _I64(1), b))   # sign follows the dividend
    return np.where(zero, a, np.where(ovf, _I64(0), r))


def _int_pow(dt, a, b):
    # ElementalIrEmitter::EmitIntegerPow as XLA:CPU runs it: squaring over the low 6 bits
    # of the exponent only (enough for any exponent that does not overflow); a negative
    # exponent gives 1 for base 1, +-1 for base -1, else 0. "Negative" is a signed test
    # on the (at least 8-bit) container, so unsigned exponents with the top bit set count.
    acc = np.ones(np.broadcast(a, b).shape, _U64)
    base = np.broadcast_to(a, acc.shape).astype(_U64)
    e = np.broadcast_to(b, acc.shape).astype(_U64)
    for _ in range(6):
        acc = np.where((e & _U64(1)) != 0, acc * base, acc)
        base = base * base
        e = e >> _U64(1)
    if dt.kind == "int":
        neg, minus_one = b < 0, a == -1
    elif dt.bits >= 8:
        neg, minus_one = b >= (1 << (dt.bits - 1)), a == bit_mask(dt.bits)
    else:
        return acc
    odd = (b.astype(_U64) & _U64(1)) != 0
    special = np.where(a == 1, _U64(1), np.where(minus_one & odd, _U64(bit_mask(64)),
                                                 np.where(minus_one, _U64(1), _U64(0))))
    return np.where(neg, special, acc)


def _mulhi(dt, a, b):
    bits = dt.bits
    if bits <= 32:
        return (a * b) >> (_I64(bits) if dt.kind == "int" else _U64(bits))
    ua, ub = a.astype(_U64), b.astype(_U64)
    m32, s32 = _U64(0xFFFFFFFF), _U64(32)
    al, ah, bl, bh = ua & m32, ua >> s32, ub & m32, ub >> s32
    hl = ah * bl
    cross = ((al * bl) >> s32) + (hl & m32) + al * bh
    hi = ah * bh + (hl >> s32) + (cross >> s32)
    if dt.kind == "int":
        hi = hi - np.where(a < 0, ub, _U64(0)) - np.where(b < 0, ua, _U64(0))
    return hi


def _shift(kind):
    def kernel(dt, a, b):
        require_kind(dt, "int", "uint")
        bits = dt.bits
        amt = raw_bits(b, dt)
        ok = amt < _U64(bits)
        s = np.where(ok, amt, _U64(0))
        if kind == "shl":
            y = np.where(ok, raw_bits(a, dt) << s, _U64(0))
        elif kind == "srl":
            y = np.where(ok, raw_bits(a, dt) >> s, _U64(0))
        else:   # arithmetic: the bits read as signed, whatever dt's signedness
            sa = _as_signed(raw_bits(a, dt), bits)
            y = np.where(ok, sa >> s.astype(_I64), np.where(sa < 0, _I64(-1), _I64(0)))
        return wrap(y, dt)
    return kernel


def fmax(a, b):
    """llvm.maximum: NaN if either is NaN, +0 > -0."""
    r = np.where(np.isnan(a) | np.isnan(b), a + b, np.maximum(a, b))
    both0 = (a == 0) & (b == 0)
    return np.where(both0, np.where(np.signbit(a), b, a), r)


def fmin(a, b):
    """llvm.minimum: NaN if either is NaN, -0 < +0."""
    r = np.where(np.isnan(a) | np.isnan(b), a + b, np.minimum(a, b))
    both0 = (a == 0) & (b == 0)
    return np.where(both0, np.where(np.signbit(a), a, b), r)


# ---------------------------------------------------------------------------
# Fused multiply-add (XLA:CPU lets LLVM contract a*b + c into one rounding)

def _round_to_odd_sum(x, y):
    """x + y in float64 rounded to odd (an inexact sum gets an odd last bit), so that a
    later rounding to a narrower format is the correctly rounded exact sum."""
    s = x + y
    bp = s - x
    err = (x - (s - bp)) + (y - bp)
    fix = (err != 0) & np.isfinite(s) & ((s.view(_I64) & 1) == 0)
    if not fix.any():
        return s
    away = (err > 0) == (s > 0)
    bits = np.where(fix, s.view(_I64) + np.where(away, _I64(1), _I64(-1)), s.view(_I64))
    return bits.view(np.float64)


def _two_prod(a, b):
    """Dekker's exact product: a*b == p + e (barring overflow/underflow)."""
    p = a * b
    split = np.float64(134217729.0)              # 2**27 + 1 (Veltkamp)
    ca, cb = split * a, split * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def fma(a, b, c) -> np.ndarray:
    """a*b + c with a single rounding, for float32 or float64 arrays (NumPy has no fma).
    f32: the f64 product is exact and the f64 sum is rounded to odd before the final
    rounding. f64: Boldo and Melquiond's emulation (exact product, TwoSum, a sum rounded
    to odd, one rounding); where an intermediate is not finite it is a*b + c."""
    a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
    if a.dtype == np.float32:
        p = a.astype(np.float64) * b.astype(np.float64)
        return _round_to_odd_sum(p, c.astype(np.float64)).astype(np.float32)
    a, b, c = (v.astype(np.float64) for v in (a, b, c))
    uh, ul = _two_prod(a, b)
    th = c + uh
    bp = th - c
    tl = (c - (th - bp)) + (uh - bp)
    r = th + _round_to_odd_sum(tl, ul)
    plain = a * b + c
    ok = np.isfinite(r) & np.isfinite(ul) & np.isfinite(tl) & (np.abs(a * b) < 1e300)
    return np.where(ok, r, plain)


def complex_multiply(x, y):
    """XLA:CPU's complex multiply: complex.mul lowered to (ac - bd) + (bc + ad)i with each
    subtraction/addition contracted into an fma by LLVM: re = fma(a, c, -(b*d)),
    im = fma(b, c, a*d) (bit-exact with XLA:CPU on the StableHLO cumprod tests)."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    re = fma(a, c, -(b * d))
    im = fma(b, c, a * d)
    return compose(re, im, np.result_type(x, y))


def complex_divide(x, y):
    """ElementalIrEmitter::EmitComplexDivide: Smith's algorithm plus its inf/0 cases."""
    ar, ai, br, bi = x.real, x.imag, y.real, y.imag
    t = ar.dtype.type
    zero, one, inf = t(0), t(1), t(np.inf)
    rr = br / bi
    rd = bi + rr * br
    ir = bi / br
    idn = br + ir * bi
    br_abs, bi_abs, ar_abs, ai_abs = np.abs(br), np.abs(bi), np.abs(ar), np.abs(ai)
    lt = br_abs < bi_abs
    cr = np.where(lt, (rr * ar + ai) / rd, (ir * ai + ar) / idn)
    ci = np.where(lt, (rr * ai - ar) / rd, (ai - ir * ar) / idn)
    # Case 1: zero denominator, numerator not NaN.
    zden = (br_abs == 0) & (bi_abs == 0) & (~np.isnan(ar) | ~np.isnan(ai))
    s = np.copysign(inf, br)
    z_r, z_i = s * ar, s * ai
    # Case 2: infinite numerator, finite denominator.
    ar_inf, ai_inf = ar_abs == inf, ai_abs == inf
    inf_num = (ar_inf | ai_inf) & (br_abs != inf) & (bi_abs != inf) & ~np.isnan(br) & ~np.isnan(bi)
    ars = np.copysign(np.where(ar_inf, one, zero), ar)
    ais = np.copysign(np.where(ai_inf, one, zero), ai)
    n_r, n_i = inf * (ars * br + ais * bi), inf * (ais * br - ars * bi)
    # Case 3: finite numerator, infinite denominator.
    br_inf, bi_inf = br_abs == inf, bi_abs == inf
    inf_den = (br_inf | bi_inf) & (ar_abs != inf) & (ai_abs != inf) & ~np.isnan(ar) & ~np.isnan(ai)
    brs = np.copysign(np.where(br_inf, one, zero), br)
    bis = np.copysign(np.where(bi_inf, one, zero), bi)
    d_r, d_i = zero * (ar * brs + ai * bis), zero * (ai * brs - ar * bis)
    nan = np.isnan(cr) & np.isnan(ci)
    rr_ = np.where(nan & zden, z_r, np.where(nan & ~zden & inf_num, n_r,
                   np.where(nan & ~zden & ~inf_num & inf_den, d_r, cr)))
    ri_ = np.where(nan & zden, z_i, np.where(nan & ~zden & inf_num, n_i,
                   np.where(nan & ~zden & ~inf_num & inf_den, d_i, ci)))
    return compose(rr_, ri_, x.dtype)


def complex_abs(x):
    """|a+bi| as XLA:CPU computes it (EmitComplexAbs, MLIR's complex.abs lowering):
    max * sqrt(1 + (min/max)^2) with NaN-propagating max/min and the square contracted
    into an fma; where that is NaN ((0, 0), (inf, inf), NaN parts) the result is min."""
    ar, ai = np.abs(x.real), np.abs(x.imag)
    hi, lo = fmax(ar, ai), fmin(ar, ai)
    ratio = lo / hi
    r = hi * np.sqrt(fma(ratio, ratio, hi.dtype.type(1)))
    return np.where(np.isnan(r), lo, r)


def complex_power(x, y):
    """XLA:CPU's complex power (EmitComplexPower; MLIR's complex.pow lowering):
    (a+bi)^(c+di) = |z|^c * e^(-d*arg) * cis(c*arg + d*ln|z|) with |z| = complex_abs,
    arg = atan2(b, a) and the sum in the angle contracted into an fma; then, in order of
    precedence, inf^(c<0) = 0 and inf^(c>0) = inf for real c, 1^y = 1, x^0 = 1, and
    0^(c>=0) = (c == 0) for real c."""
    a, b, c, d = x.real, x.imag, y.real, y.imag
    t = a.dtype.type
    zero, one = t(0), t(1)
    r = complex_abs(x)
    arg = _ARCTAN2(b, a)
    coeff = _POWER(r, c) * _EXP(-d * arg)
    q = fma(c, arg, d * _LOG(r))
    re, im = coeff * _COS(q), coeff * _SIN(q)
    real_exp = d == 0
    zero_base = (r == 0) & real_exp & (zero <= c)
    re = np.where(zero_base, np.where(c == 0, one, zero), re)
    im = np.where(zero_base, zero, im)
    unit = ((c == 0) & real_exp) | ((a == 1) & (b == 0))
    re, im = np.where(unit, one, re), np.where(unit, zero, im)
    inf_base = (a == np.inf) & (b == 0) & real_exp
    re = np.where(inf_base & (c > 0), t(np.inf), np.where(inf_base & (c < 0), zero, re))
    im = np.where(inf_base & (c != 0), zero, im)
    return compose(re, im, x.dtype)


def _complex_atan2(y, x):
    # HloEvaluator: atan2(y, x) = -i * log((x + i*y) / sqrt(x*x + y*y))
    i = x.dtype.type(1j)
    return (-i) * np.log((x + i * y) / np.sqrt(x * x + y * y))


def _complex_select_ordered(predicate):
    """XLA:CPU's complex maximum (predicate >=) / minimum (<=): mhlo's cmpComplex,
    `(re_l == re_r && im_l P im_r) || re_l P re_r` with ordered float compares, then
    select(cond, lhs, rhs). Since P includes equality, tied real parts keep lhs
    (so max(0+1.5i, -0+2.5i) is 0+1.5i, not StableHLO's lexicographic -0+2.5i), and a
    NaN real part on either side selects rhs."""
    def kernel(x, y):
        xr, yr = x.real, y.real
        cond = ((xr == yr) & predicate(x.imag, y.imag)) | predicate(xr, yr)
        return np.where(cond, x, y)
    return kernel


_INT_BINARY = {
    "add": lambda dt, a, b: a + b,
    "subtract": lambda dt, a, b: a - b,
    "multiply": lambda dt, a, b: a * b,
    "divide": _int_div,
    "remainder": _int_rem,
    "power": _int_pow,
    "maximum": lambda dt, a, b: np.maximum(a, b),
    "minimum": lambda dt, a, b: np.minimum(a, b),
    "and": lambda dt, a, b: a & b,
    "or": lambda dt, a, b: a | b,
    "xor": lambda dt, a, b: a ^ b,
    "mulhi": _mulhi,
}
_PRED_BINARY = {   # pred arithmetic as `int8(x) OP int8(y) != 0` (EmitPredBinaryOp)
    "add": np.logical_or, "maximum": np.logical_or, "or": np.logical_or,
    "multiply": np.logical_and, "minimum": np.logical_and, "and": np.logical_and,
    "xor": np.logical_xor,
    "power": lambda a, b: a | ~b,                       # HloEvaluator: lhs || !rhs
}
_FLOAT_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "remainder": np.fmod, "power": _POWER, "maximum": fmax, "minimum": fmin,
    "atan2": _ARCTAN2,
}
_COMPLEX_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": complex_multiply,
    "divide": complex_divide, "power": complex_power, "atan2": _complex_atan2,
    "maximum": _complex_select_ordered(np.greater_equal),
    "minimum": _complex_select_ordered(np.less_equal),
}


def binary(op: str, dt: DType, a, b) -> np.ndarray:
    """`op` on two operands of element type dt; the result has element type dt."""
    if op in ("shift-left", "shift-right-logical", "shift-right-arithmetic"):
        return _SHIFTS[op](dt, a, b)
    if dt.kind in ("int", "uint") and op in _INT_BINARY:
        return wrap(_INT_BINARY[op](dt, widen(a, dt), widen(b, dt)), dt)
    if dt.kind == "pred" and op in _PRED_BINARY:
        return np.asarray(_PRED_BINARY[op](np.asarray(a), np.asarray(b)))
    if dt.kind == "float" and op in _FLOAT_BINARY:
        return narrow(_FLOAT_BINARY[op](widen(a, dt), widen(b, dt)), dt)
    if dt.kind == "complex" and op in _COMPLEX_BINARY:
        return np.asarray(_COMPLEX_BINARY[op](np.asarray(a), np.asarray(b))).astype(dt.np)
    raise Unsupported(f"element type {dt.name}")


_SHIFTS = {"shift-left": _shift("shl"), "shift-right-logical": _shift("srl"),
           "shift-right-arithmetic": _shift("sra")}


def complex_from_parts(dt: DType, re, im) -> np.ndarray:
    """`complex(re, im)`: dt is the result's complex type."""
    return compose(re, im, dt.np)


# ---------------------------------------------------------------------------
# Compare

_DEFAULT_COMPARISON = {"float": "FLOAT", "int": "SIGNED", "uint": "UNSIGNED",
                       "pred": "UNSIGNED", "complex": "FLOAT"}
_CMP = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
        "GT": np.greater, "GE": np.greater_equal}


def default_comparison_type(dt: DType) -> str:
    return _DEFAULT_COMPARISON[dt.kind]


def total_order_key(x, dt: DType) -> np.ndarray:
    """Signed key ordering -NaN < -inf < ... < -0 < +0 < ... < inf < NaN
    (ComparisonExpander: negative bit patterns get their magnitude bits flipped)."""
    r = raw_bits(x, dt)
    if dt.name in _NO_SIGN_BIT:
        return r.astype(_I64)
    mag = (r & _U64(bit_mask(dt.bits - 1))).astype(_I64)
    return np.where((r >> _U64(dt.bits - 1)) != 0, -1 - mag, mag)


def compare(dt: DType, a, b, direction: str, ctype: str | None = None) -> np.ndarray:
    ctype = ctype or default_comparison_type(dt)
    fn = _CMP[direction]
    if dt.kind == "complex":
        if direction == "EQ":
            return (a.real == b.real) & (a.imag == b.imag)
        if direction == "NE":
            return (a.real != b.real) | (a.imag != b.imag)
        raise Unsupported(f"comparison {direction} of {dt.name}")
    if dt.kind == "float":
        if ctype == "TOTALORDER":
            return fn(total_order_key(a, dt), total_order_key(b, dt))
        if ctype != "FLOAT":
            raise Unsupported(f"comparison type {ctype} for {dt.name}")
        return fn(widen(a, dt), widen(b, dt))       # ordered; NE is unordered
    if ctype not in ("SIGNED", "UNSIGNED"):
        ctype = default_comparison_type(dt)
    if ctype == "SIGNED" and dt.kind != "pred":
        return fn(_as_signed(raw_bits(a, dt), dt.bits), _as_signed(raw_bits(b, dt), dt.bits))
    return fn(raw_bits(a, dt), raw_bits(b, dt))


def _as_signed(u, bits: int) -> np.ndarray:
    return wrap(u, DType(f"s{bits}", np.dtype(np.int64), bits, "int"))


# ---------------------------------------------------------------------------
# Ternary

def select(pred, on_true, on_false):
    return np.where(pred, on_true, on_false)


def clamp(dt: DType, lo, x, hi) -> np.ndarray:
    """min(hi, max(lo, x)) with the op's own max/min (NaN-propagating for floats)."""
    if dt.kind == "float":
        lo, x, hi = widen(lo, dt), widen(x, dt), widen(hi, dt)
        return narrow(fmin(hi, fmax(lo, x)), dt)
    if dt.kind in ("int", "uint"):
        return wrap(np.minimum(widen(hi, dt), np.maximum(widen(lo, dt), widen(x, dt))), dt)
    if dt.kind == "pred":
        return np.asarray(hi) & (np.asarray(lo) | np.asarray(x))
    raise Unsupported(f"element type {dt.name}")
