"""Unary elementwise kernels (`UNARY`: opcode semantic key -> kernel(dt, x)): f32
transcendentals through f64 libm with one rounding, XLA's expm1/logistic/erf, complex
variants, integer bit counts, sign, not, real/imag.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import DType
from .binary_kernels import _two_prod, complex_abs
from .kernel_types import (_ARCCOS, _ARCCOSH, _ARCSIN, _ARCSINH, _ARCTAN, _ARCTAN2, _ARCTANH,
                           _COS, _COSH, _ERF, _EXP, _I64, _LIBM_CBRT, _LOG, _LOG1P, _SIN, _SINH,
                           _TAN, _TANH, _U64, compose, contiguous, narrow, raw_bits,
                           require_kind, widen, wrap)


# ---------------------------------------------------------------------------
# Unary kernels

def _float_fn(fn, complex_fn=None, allow_complex=True):
    """A kernel applying `fn` in the compute type of a float (or complex) type."""
    def kernel(dt, x):
        if dt.kind == "complex" and allow_complex:
            return narrow((complex_fn or fn)(x), dt)
        require_kind(dt, "float")
        return narrow(fn(widen(x, dt)), dt)
    return kernel




def _round_afz(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)




def _cbrt(x):
    """libm's cbrt, made exact where the cube root is representable: glibc returns
    cbrt(-27) = -3.0000000000000004. An exact root has at most 18 significant bits (its
    cube fits in 53), so y rounded to 18 bits is the only candidate; it replaces y where
    its cube is exactly x (Dekker products with no error)."""
    y = _LIBM_CBRT(x)
    if x.dtype != np.float64:
        return y          # computed in float64 and rounded once: exact cubes come out exact
    with np.errstate(all="ignore"):
        m, e = np.frexp(y)
        c = np.ldexp(np.rint(m * 2.0 ** 18), e - 18)
        maybe = np.flatnonzero((c * c * c == x) & (c != y) & (np.abs(x) < 1e300)
                               & (np.abs(x) > 1e-290))
        if maybe.size == 0:
            return y
        cm, xm = c.reshape(-1)[maybe], x.reshape(-1)[maybe]
        sq, e1 = _two_prod(cm, cm)
        cube, e2 = _two_prod(sq, cm)
        exact = (e1 == 0) & (e2 == 0) & (cube == xm)
    out = y.copy()
    out.reshape(-1)[maybe[exact]] = cm[exact]
    return out


def xla_expm1(x):
    """ElementalIrEmitter::EmitExpm1: exp(x) - 1 where |x| > 0.5, else
    tanh(x/2) * (exp(x) + 1); x itself where x/2 underflows to 0."""
    t = x.dtype.type
    half = x * t(0.5)
    small = _TANH(half) * (_EXP(x) + t(1))
    y = np.where(np.abs(x) > t(0.5), _EXP(x) - t(1), small)
    return np.where(half == 0, x, y)


def _logistic(x):
    one = x.dtype.type(1)
    return one / (one + _EXP(-x))


def _erf(x):
    return np.asarray(_ERF(x.astype(np.float64)), dtype=np.float64).astype(x.dtype)


def _complex_expm1(z):
    # e^(a+bi)-1 = (e^a*cos(b)-1) + e^a*sin(b)i (EmitComplexUnaryOp kExpm1); a real
    # argument (b == 0) keeps a zero imaginary part, as XLA:CPU does.
    a, b = z.real, z.imag
    ea = _EXP(a)
    real0 = b == 0
    return compose(np.where(real0, xla_expm1(a), ea * _COS(b) - 1),
                   np.where(real0, b, ea * _SIN(b)), z.dtype)


def _complex_log1p(z):
    # log1p(a+bi) = .5*log1p(a*a + 2*a + b*b) + i*atan2(b, a+1)   (kLog1p); where the
    # sum of squares overflows, log|z+1| directly.
    a, b = z.real, z.imag
    s = a * a + 2 * a + b * b
    real = np.where(np.isinf(s) & np.isfinite(a) & np.isfinite(b),
                    _LOG(np.hypot(a + 1, b)), 0.5 * _LOG1P(s))
    return compose(real, _ARCTAN2(b, a + 1), z.dtype)




def _rsqrt(x):
    return x.dtype.type(1) / np.sqrt(x)


def neg_kernel(dt, x):
    if dt.kind in ("int", "uint"):
        return wrap(-widen(x, dt).astype(_U64), dt)
    if dt.kind == "complex":
        return -x
    require_kind(dt, "float")
    return narrow(-widen(x, dt), dt)


def abs_kernel(dt, x):
    if dt.kind == "uint":
        return x.copy()
    if dt.kind == "int":
        return wrap(np.abs(widen(x, dt)), dt)        # abs(INT_MIN) == INT_MIN
    if dt.kind == "complex":
        return complex_abs(x)                         # XLA:CPU's max*sqrt(1+(min/max)^2)
    require_kind(dt, "float")
    return narrow(np.abs(widen(x, dt)), dt)


def sign_kernel(dt, x):
    if dt.kind in ("int", "uint"):
        w = widen(x, dt)
        return wrap((w > 0).astype(_I64) - (w < 0).astype(_I64), dt)
    if dt.kind == "complex":
        r = np.abs(x)
        zero = r == 0
        safe = np.where(zero, 1, r)
        return np.where(zero, 0, compose(x.real / safe, x.imag / safe, x.dtype)).astype(x.dtype)
    require_kind(dt, "float")
    w = widen(x, dt)
    return narrow(np.where(np.isnan(w), w, np.copysign((w != 0).astype(w.dtype), w)), dt)


def not_kernel(dt, x):
    if dt.kind == "pred":
        return ~np.asarray(x)
    require_kind(dt, "int", "uint")
    return wrap(~widen(x, dt), dt)


def clz_kernel(dt, x):
    require_kind(dt, "int", "uint")
    return wrap(_U64(dt.bits) - bit_length(raw_bits(x, dt)), dt)


def popcnt_kernel(dt, x):
    require_kind(dt, "int", "uint")
    r = raw_bits(x, dt)
    if dt.name == "s4":
        # XLA:CPU and HloEvaluator count s4 in its 8-bit container, sign bits included.
        r = raw_bits(widen(x, dt), DType("s8", np.dtype(np.int64), 8, "int"))
    return wrap(np.bitwise_count(r).astype(_U64), dt)


def bit_length(u) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0)."""
    u = np.asarray(u).astype(_U64)
    n = np.zeros(u.shape, _U64)
    for s in (32, 16, 8, 4, 2, 1):
        big = u >= _U64(1 << s)
        n = np.where(big, n + _U64(s), n)
        u = np.where(big, u >> _U64(s), u)
    return n + (u > 0).astype(_U64)


def is_finite_kernel(dt, x):
    require_kind(dt, "float")
    return np.isfinite(widen(x, dt))


def real_kernel(dt, x):
    if dt.kind == "complex":
        return contiguous(x.real)
    require_kind(dt, "float")
    return x.copy()


def imag_kernel(dt, x):
    if dt.kind == "complex":
        return contiguous(x.imag)
    require_kind(dt, "float")
    return np.zeros_like(x)


def copy_kernel(dt, x):
    return np.array(x, copy=True)


UNARY = {
    "abs": abs_kernel,
    "negate": neg_kernel,
    "sign": sign_kernel,
    "not": not_kernel,
    "count-leading-zeros": clz_kernel,
    "popcnt": popcnt_kernel,
    "is-finite": is_finite_kernel,
    "real": real_kernel,
    "imag": imag_kernel,
    "copy": copy_kernel,
    "ceil": _float_fn(np.ceil, allow_complex=False),
    "floor": _float_fn(np.floor, allow_complex=False),
    "round-nearest-afz": _float_fn(_round_afz, allow_complex=False),
    "round-nearest-even": _float_fn(np.rint, allow_complex=False),
    "exponential": _float_fn(_EXP),
    "exponential-minus-one": _float_fn(xla_expm1, _complex_expm1),
    "log": _float_fn(_LOG),
    "log-plus-one": _float_fn(_LOG1P, _complex_log1p),
    "logistic": _float_fn(_logistic),
    "sqrt": _float_fn(np.sqrt),
    "rsqrt": _float_fn(_rsqrt),
    "cbrt": _float_fn(_cbrt, allow_complex=False),
    "sine": _float_fn(_SIN),
    "cosine": _float_fn(_COS),
    "tan": _float_fn(_TAN),
    "tanh": _float_fn(_TANH),
    "erf": _float_fn(_erf, allow_complex=False),
    "acos": _float_fn(_ARCCOS),
    "acosh": _float_fn(_ARCCOSH),
    "asin": _float_fn(_ARCSIN),
    "asinh": _float_fn(_ARCSINH),
    "atan": _float_fn(_ARCTAN),
    "atanh": _float_fn(_ARCTANH),
    "sinh": _float_fn(_SINH),
    "cosh": _float_fn(_COSH),
}
