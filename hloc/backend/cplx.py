"""Complex rows of the elementwise table: multiply (fma-contracted as XLA:CPU), divide
(Smith's algorithm with XLA's inf/0 cases, EmitComplexDivide) and abs (max * sqrt(1 +
(min/max)^2), EmitComplexAbs) — the interpreter's hloc.interp.numerics formulas operation
for operation — and the transcendentals in UNARY (exp, log, sqrt, rsqrt, sin, cos, tan,
tanh, sinh, cosh, logistic, sign, and the inverse functions asin, acos, atan, asinh,
acosh, atanh on NumPy's branch cuts) by textbook formulas in f64, matching the
interpreter's NumPy values within ErrorSpec. expm1, log1p, atan2 and power are the
interpreter's formulas (EmitComplexUnaryOp's expm1/log1p, HloEvaluator's atan2,
complex_power).
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


# ---------------------------------------------------------------------------
# Transcendentals (NumPy's principal branches, as the interpreter; computed in f64)

def _wide(kb, x):
    b = kb.b
    if x.re.type == F32:
        return Cplx(b.fpext(x.re, ir.DoubleType()), b.fpext(x.im, ir.DoubleType())), True
    return x, False


def _narrow(kb, z, was32):
    if not was32:
        return z
    b = kb.b
    return Cplx(b.fptrunc(z.re, F32), b.fptrunc(z.im, F32))


def _m(kb, name, *xs):
    f64 = ir.DoubleType()
    return kb.b.call(kb.mcx.libm(name, f64, [f64] * len(xs)), list(xs))


def _wrap(fn):
    def emit(kb, dt, x):
        z, was32 = _wide(kb, x)
        return _narrow(kb, fn(kb, z), was32)
    return emit


def _exp(kb, z):
    b = kb.b
    e = _m(kb, "exp", z.re)
    return Cplx(b.fmul(e, _m(kb, "cos", z.im)), b.fmul(e, _m(kb, "sin", z.im)))


def _log(kb, z):
    return Cplx(_m(kb, "log", _m(kb, "hypot", z.re, z.im)), _m(kb, "atan2", z.im, z.re))


def _sqrt(kb, z):
    b = kb.b
    a, y = z.re, z.im
    c = lambda v: ir.Constant(a.type, v)   # noqa: E731
    t = b.call(_fn(kb, "sqrt", a), [b.fmul(b.fadd(_m(kb, "hypot", a, y), _abs(kb, a)), c(0.5))])
    pos = b.fcmp_ordered(">=", a, c(0.0))
    q = b.fdiv(_abs(kb, y), b.fmul(t, c(2.0)))
    re = b.select(pos, t, q)
    im = b.select(pos, b.fdiv(y, b.fmul(t, c(2.0))), _copysign(kb, t, y))
    zero = b.fcmp_ordered("==", t, c(0.0))
    return Cplx(b.select(zero, c(0.0), re), b.select(zero, y, im))


def _product_form(re_fns, im_fns, negate_im=False):
    """z = a + bi -> f(a) g(b) + (+-) h(a) k(b) i: sin, cos, sinh and cosh of a + bi."""
    def emit(kb, z):
        b = kb.b
        im = b.fmul(_m(kb, im_fns[0], z.re), _m(kb, im_fns[1], z.im))
        return Cplx(b.fmul(_m(kb, re_fns[0], z.re), _m(kb, re_fns[1], z.im)),
                    b.fneg(im) if negate_im else im)
    return emit


_sin = _product_form(("sin", "cosh"), ("cos", "sinh"))
_cos = _product_form(("cos", "cosh"), ("sin", "sinh"), negate_im=True)
_sinh = _product_form(("sinh", "cos"), ("cosh", "sin"))
_cosh = _product_form(("cosh", "cos"), ("sinh", "sin"))


def _tanh(kb, z):
    """tanh(a+bi) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); +-1 once cosh overflows."""
    b = kb.b
    two = ir.Constant(z.re.type, 2.0)
    a2, b2 = b.fmul(z.re, two), b.fmul(z.im, two)
    d = b.fadd(_m(kb, "cosh", a2), _m(kb, "cos", b2))
    re, im = b.fdiv(_m(kb, "sinh", a2), d), b.fdiv(_m(kb, "sin", b2), d)
    big = b.fcmp_ordered(">", _abs(kb, z.re), ir.Constant(z.re.type, 20.0))
    return Cplx(b.select(big, _copysign(kb, ir.Constant(z.re.type, 1.0), z.re), re),
                b.select(big, b.fmul(ir.Constant(z.re.type, 0.0), z.im), im))


def _one_over(kb, z):
    one = ir.Constant(z.re.type, 1.0)
    return divide(kb, None, Cplx(one, ir.Constant(z.re.type, 0.0)), z)


def _logistic(kb, z):
    e = _exp(kb, Cplx(kb.b.fneg(z.re), kb.b.fneg(z.im)))
    return _one_over(kb, Cplx(kb.b.fadd(e.re, ir.Constant(z.re.type, 1.0)), e.im))


def _sign(kb, z):
    b = kb.b
    r = absolute(kb, None, z)
    zero = b.fcmp_ordered("==", r, ir.Constant(r.type, 0.0))
    safe = b.select(zero, ir.Constant(r.type, 1.0), r)
    c0 = ir.Constant(r.type, 0.0)
    return Cplx(b.select(zero, c0, b.fdiv(z.re, safe)), b.select(zero, c0, b.fdiv(z.im, safe)))


def _add(kb, x, y):
    return Cplx(kb.b.fadd(x.re, y.re), kb.b.fadd(x.im, y.im))


def _sub(kb, x, y):
    return Cplx(kb.b.fsub(x.re, y.re), kb.b.fsub(x.im, y.im))


def _mul(kb, x, y):
    b = kb.b
    return Cplx(b.fsub(b.fmul(x.re, y.re), b.fmul(x.im, y.im)),
                b.fadd(b.fmul(x.re, y.im), b.fmul(x.im, y.re)))


def _real(kb, v, like):
    return Cplx(ir.Constant(like.re.type, v), ir.Constant(like.re.type, 0.0))


def _times_i(kb, z):                       # i z
    return Cplx(kb.b.fneg(z.im), z.re)


def _times_minus_i(kb, z):                 # -i z
    return Cplx(z.im, kb.b.fneg(z.re))


def _first_quadrant(kb, fn, z, odd_re=True):
    """fn on (|a|, |b|), then the signs put back as C99's casinh/catanh/cacosh have them
    (conj(f(z)) = f(conj(z)), and for odd f, f(-z) = -f(z)): signed zeros on the
    branch cuts choose the side, as NumPy's functions do."""
    b = kb.b
    r = fn(kb, Cplx(_abs(kb, z.re) if odd_re else z.re, _abs(kb, z.im)))
    return Cplx(_copysign(kb, r.re, z.re) if odd_re else r.re, _copysign(kb, r.im, z.im))


def _asinh(kb, z):
    """log(w + sqrt(w^2 + 1)) on the first quadrant (no cancellation there)."""
    def q1(kb, w):
        return _log(kb, _add(kb, w, _sqrt(kb, _add(kb, _mul(kb, w, w), _real(kb, 1.0, w)))))
    return _first_quadrant(kb, q1, z)


def _rotated(fn):
    """z -> -i fn(i z): asin from asinh, atan from atanh (and tan from tanh)."""
    return lambda kb, z: _times_minus_i(kb, fn(kb, _times_i(kb, z)))


_asin = _rotated(_asinh)


def _acos(kb, z):                          # pi/2 - asin(z)
    a = _asin(kb, z)
    return Cplx(kb.b.fsub(ir.Constant(z.re.type, 1.5707963267948966), a.re), kb.b.fneg(a.im))


def _acosh(kb, z):                         # log(z + sqrt(z + 1) sqrt(z - 1)), im >= 0
    def upper(kb, w):
        one = _real(kb, 1.0, w)
        return _log(kb, _add(kb, w, _mul(kb, _sqrt(kb, _add(kb, w, one)), _sqrt(kb, _sub(kb, w, one)))))
    return _first_quadrant(kb, upper, z, odd_re=False)


def _atanh(kb, z):                         # (log(1 + z) - log(1 - z)) / 2
    def q1(kb, w):
        one, half = _real(kb, 1.0, w), ir.Constant(w.re.type, 0.5)
        d = _sub(kb, _log(kb, _add(kb, one, w)), _log(kb, _sub(kb, one, w)))
        return Cplx(kb.b.fmul(d.re, half), kb.b.fmul(d.im, half))
    return _first_quadrant(kb, q1, z)


_atan = _rotated(_atanh)


def _expm1(kb, z):
    """(e^a cos b - 1) + e^a sin b i; a real argument (b == 0) gives expm1(a) + b i."""
    b = kb.b
    ea = _m(kb, "exp", z.re)
    real0 = b.fcmp_ordered("==", z.im, ir.Constant(z.im.type, 0.0))
    re = b.fsub(b.fmul(ea, _m(kb, "cos", z.im)), ir.Constant(z.re.type, 1.0))
    return Cplx(b.select(real0, _m(kb, "expm1", z.re), re),
                b.select(real0, z.im, b.fmul(ea, _m(kb, "sin", z.im))))


def log1p(kb, dt, z):
    """0.5 log1p(a^2 + 2a + b^2) + atan2(b, a + 1) i, the sum in the element precision
    (as the interpreter); log|z + 1| where the sum overflows. libm calls in f64."""
    b = kb.b
    a, y = z.re, z.im
    k = lambda v: ir.Constant(a.type, v)   # noqa: E731
    s = b.fadd(b.fadd(b.fmul(a, a), b.fmul(k(2.0), a)), b.fmul(y, y))
    finite = lambda v: b.fcmp_ordered("<", _abs(kb, v), k(float("inf")))   # noqa: E731
    over = b.and_(b.fcmp_ordered("==", _abs(kb, s), k(float("inf"))), b.and_(finite(a), finite(y)))
    a1 = b.fadd(a, k(1.0))
    wide = (lambda v: b.fpext(v, ir.DoubleType())) if a.type == F32 else (lambda v: v)   # noqa: E731
    back = (lambda v: b.fptrunc(v, F32)) if a.type == F32 else (lambda v: v)   # noqa: E731
    big = back(_m(kb, "log", _m(kb, "hypot", wide(a1), wide(y))))
    re = b.select(over, big, b.fmul(k(0.5), back(_m(kb, "log1p", wide(s)))))
    return Cplx(re, back(_m(kb, "atan2", wide(y), wide(a1))))


def _np_divide(kb, x, y):
    """NumPy's complex division loop (Smith's method; 0 divisor: x.re/|0|, x.im/|0|)."""
    b = kb.b
    one, zero = ir.Constant(x.re.type, 1.0), ir.Constant(x.re.type, 0.0)
    yr_abs, yi_abs = _abs(kb, y.re), _abs(kb, y.im)
    ge = b.fcmp_ordered(">=", yr_abs, yi_abs)
    both0 = b.and_(b.fcmp_ordered("==", yr_abs, zero), b.fcmp_ordered("==", yi_abs, zero))
    rat = b.fdiv(y.im, y.re)
    scl = b.fdiv(one, b.fadd(y.re, b.fmul(y.im, rat)))
    r1 = Cplx(b.fmul(b.fadd(x.re, b.fmul(x.im, rat)), scl), b.fmul(b.fsub(x.im, b.fmul(x.re, rat)), scl))
    rat2 = b.fdiv(y.re, y.im)
    scl2 = b.fdiv(one, b.fadd(y.im, b.fmul(y.re, rat2)))
    r2 = Cplx(b.fmul(b.fadd(b.fmul(x.re, rat2), x.im), scl2),
              b.fmul(b.fsub(b.fmul(x.im, rat2), x.re), scl2))
    r0 = Cplx(b.fdiv(x.re, yr_abs), b.fdiv(x.im, yr_abs))
    pick = lambda f: b.select(ge, b.select(both0, f(r0), f(r1)), f(r2))   # noqa: E731
    return Cplx(pick(lambda c: c.re), pick(lambda c: c.im))


def atan2(kb, dt, y, x):
    """HloEvaluator's complex atan2, -i log((x + i y) / sqrt(x x + y y)), with NumPy's
    complex operations as the interpreter evaluates it (i y a full product, so signed
    zeros come out the same), in f64."""
    (y, was32), (x, _) = _wide(kb, y), _wide(kb, x)
    i = _real(kb, 0.0, y)
    i = Cplx(i.re, ir.Constant(y.re.type, 1.0))
    q = _np_divide(kb, _add(kb, x, _mul(kb, i, y)),
                   _sqrt(kb, _add(kb, _mul(kb, x, x), _mul(kb, y, y))))
    return _narrow(kb, _mul(kb, Cplx(ir.Constant(y.re.type, 0.0), ir.Constant(y.re.type, -1.0)),
                            _log(kb, q)), was32)


_tan = _rotated(_tanh)                     # tan(z) = -i tanh(i z)

UNARY = {
    "asin": _wrap(_asin), "acos": _wrap(_acos), "atan": _wrap(_atan),
    "asinh": _wrap(_asinh), "acosh": _wrap(_acosh), "atanh": _wrap(_atanh),
    "exponential-minus-one": _wrap(_expm1), "log-plus-one": log1p,
    "exponential": _wrap(_exp), "log": _wrap(_log), "sqrt": _wrap(_sqrt),
    "rsqrt": _wrap(lambda kb, z: _one_over(kb, _sqrt(kb, z))),
    "sine": _wrap(_sin), "cosine": _wrap(_cos), "tan": _wrap(_tan), "tanh": _wrap(_tanh),
    "sinh": _wrap(_sinh), "cosh": _wrap(_cosh), "logistic": _wrap(_logistic),
    "sign": _wrap(_sign),
}


def power(kb, dt, x, y):
    """XLA:CPU's complex power (the interpreter's complex_power), in f64."""
    b = kb.b
    (x, was32), (y, _) = _wide(kb, x), _wide(kb, y)
    a, bb, c, d = x.re, x.im, y.re, y.im
    k = lambda v: ir.Constant(a.type, v)   # noqa: E731
    eq = lambda u, v: b.fcmp_ordered("==", u, v)   # noqa: E731
    r = absolute(kb, None, x)
    arg = _m(kb, "atan2", bb, a)
    coeff = b.fmul(_m(kb, "pow", r, c), _m(kb, "exp", b.fmul(b.fneg(d), arg)))
    q = fma(kb, c, arg, b.fmul(d, _m(kb, "log", r)))
    re, im = b.fmul(coeff, _m(kb, "cos", q)), b.fmul(coeff, _m(kb, "sin", q))
    real_exp = eq(d, k(0.0))
    zero_base = b.and_(b.and_(eq(r, k(0.0)), real_exp), b.fcmp_ordered("<=", k(0.0), c))
    re = b.select(zero_base, b.select(eq(c, k(0.0)), k(1.0), k(0.0)), re)
    im = b.select(zero_base, k(0.0), im)
    unit = b.or_(b.and_(eq(c, k(0.0)), real_exp), b.and_(eq(a, k(1.0)), eq(bb, k(0.0))))
    re, im = b.select(unit, k(1.0), re), b.select(unit, k(0.0), im)
    inf_base = b.and_(b.and_(eq(a, k(float("inf"))), eq(bb, k(0.0))), real_exp)
    re = b.select(b.and_(inf_base, b.fcmp_ordered(">", c, k(0.0))), k(float("inf")),
                  b.select(b.and_(inf_base, b.fcmp_ordered("<", c, k(0.0))), k(0.0), re))
    im = b.select(b.and_(inf_base, b.fcmp_unordered("!=", c, k(0.0))), k(0.0), im)
    return _narrow(kb, Cplx(re, im), was32)
