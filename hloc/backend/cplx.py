"""Complex arithmetic rows of the elementwise table that need more than one line:
multiply (fma-contracted as XLA:CPU), divide (Smith's algorithm with XLA's inf/0 cases,
EmitComplexDivide) and abs (max * sqrt(1 + (min/max)^2), EmitComplexAbs) — the
interpreter's hloc.interp.numerics formulas, operation for operation.
"""
from __future__ import annotations

from llvmlite import ir

from .types import F32, Cplx


def _fn(kb, name, x, n=1):
    t = x.type
    suffix = "f32" if t == F32 else "f64"
    return kb.mcx.intrinsic(f"llvm.{name}.{suffix}", t, [t] * n)


def fma(kb, a, b, c):
    return kb.b.call(_fn(kb, "fma", a, 3), [a, b, c])


def _abs(kb, x):
    return kb.b.call(_fn(kb, "fabs", x), [x])


def _copysign(kb, mag, sign):
    return kb.b.call(_fn(kb, "copysign", mag, 2), [mag, sign])


def _isnan(kb, x):
    return kb.b.fcmp_unordered("uno", x, x)


def multiply(kb, dt, x, y):
    b = kb.b
    re = fma(kb, x.re, y.re, b.fneg(b.fmul(x.im, y.im)))
    im = fma(kb, x.im, y.re, b.fmul(x.re, y.im))
    return Cplx(re, im)


def divide(kb, dt, x, y):
    b = kb.b
    ar, ai, br, bi = x.re, x.im, y.re, y.im
    c = lambda v: ir.Constant(ar.type, v)   # noqa: E731
    zero, one, inf = c(0.0), c(1.0), c(float("inf"))
    rr = b.fdiv(br, bi)
    rd = b.fadd(bi, b.fmul(rr, br))
    ir_ = b.fdiv(bi, br)
    idn = b.fadd(br, b.fmul(ir_, bi))
    br_abs, bi_abs, ar_abs, ai_abs = (_abs(kb, v) for v in (br, bi, ar, ai))
    lt = b.fcmp_ordered("<", br_abs, bi_abs)
    cr = b.select(lt, b.fdiv(b.fadd(b.fmul(rr, ar), ai), rd), b.fdiv(b.fadd(b.fmul(ir_, ai), ar), idn))
    ci = b.select(lt, b.fdiv(b.fsub(b.fmul(rr, ai), ar), rd), b.fdiv(b.fsub(ai, b.fmul(ir_, ar)), idn))
    not_nan = lambda v: b.not_(_isnan(kb, v))   # noqa: E731
    eq = lambda u, v: b.fcmp_ordered("==", u, v)   # noqa: E731
    ne = lambda u, v: b.fcmp_unordered("!=", u, v)   # noqa: E731
    zden = b.and_(b.and_(eq(br_abs, zero), eq(bi_abs, zero)), b.or_(not_nan(ar), not_nan(ai)))
    s = _copysign(kb, inf, br)
    z_r, z_i = b.fmul(s, ar), b.fmul(s, ai)
    ar_inf, ai_inf = eq(ar_abs, inf), eq(ai_abs, inf)
    inf_num = b.and_(b.and_(b.or_(ar_inf, ai_inf), b.and_(ne(br_abs, inf), ne(bi_abs, inf))),
                     b.and_(not_nan(br), not_nan(bi)))
    ars = _copysign(kb, b.select(ar_inf, one, zero), ar)
    ais = _copysign(kb, b.select(ai_inf, one, zero), ai)
    n_r = b.fmul(inf, b.fadd(b.fmul(ars, br), b.fmul(ais, bi)))
    n_i = b.fmul(inf, b.fsub(b.fmul(ais, br), b.fmul(ars, bi)))
    br_inf, bi_inf = eq(br_abs, inf), eq(bi_abs, inf)
    inf_den = b.and_(b.and_(b.or_(br_inf, bi_inf), b.and_(ne(ar_abs, inf), ne(ai_abs, inf))),
                     b.and_(not_nan(ar), not_nan(ai)))
    brs = _copysign(kb, b.select(br_inf, one, zero), br)
    bis = _copysign(kb, b.select(bi_inf, one, zero), bi)
    d_r = b.fmul(zero, b.fadd(b.fmul(ar, brs), b.fmul(ai, bis)))
    d_i = b.fmul(zero, b.fsub(b.fmul(ai, brs), b.fmul(ar, bis)))
    nan = b.and_(_isnan(kb, cr), _isnan(kb, ci))
    c3 = b.and_(nan, inf_den)
    c2 = b.and_(nan, inf_num)
    c1 = b.and_(nan, zden)
    re = b.select(c1, z_r, b.select(c2, n_r, b.select(c3, d_r, cr)))
    im = b.select(c1, z_i, b.select(c2, n_i, b.select(c3, d_i, ci)))
    return Cplx(re, im)


def absolute(kb, dt, x):
    from .elementwise import fmax
    b = kb.b
    ar, ai = _abs(kb, x.re), _abs(kb, x.im)
    hi, lo = fmax(kb, ar, ai, True), fmax(kb, ar, ai, False)
    ratio = b.fdiv(lo, hi)
    r = b.fmul(hi, b.call(_fn(kb, "sqrt", ratio), [fma(kb, ratio, ratio, ir.Constant(ratio.type, 1.0))]))
    return b.select(_isnan(kb, r), lo, r)
