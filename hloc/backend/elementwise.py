"""Element generators of HLO's elementwise opcodes: one table row per opcode.

`UNARY[op](kb, dt, x)` and `BINARY[op](kb, dt, a, b)` compute on compute values of element
type dt (hloc.backend.types); `@emits_semantic` attaches one generator per elementwise
semantic key (OpDef.semantic, shared with the interpreter), which reads the operands at
the same index and looks the key up. The semantics are the interpreter's
(hloc.interp.numerics): integer divide/remainder by 0 and INT_MIN/-1 as XLA defines them,
shifts by >= the bit width, NaN-propagating maximum/minimum, f16/bf16 rounded after every
op, f32 transcendentals computed in f64 and rounded once (glibc, as the interpreter) —
so there is no undefined behaviour in the emitted code whatever the data.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from . import cplx, xla_math
from .registry import emits, emits_semantic, vectorises_semantic
from .row_vector import suffix
from .types import F32, F64, I1, Cplx, compute_type, const, round_narrow

_CMP_INT = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}
_CMP_FLOAT = {"EQ": "oeq", "NE": "une", "LT": "olt", "LE": "ole", "GT": "ogt", "GE": "oge"}


class NotForType(Exception):
    pass


def _c(v, like):
    return ir.Constant(like.type, v)


def _int_min(dt):
    return -(1 << (dt.bits - 1)) & ((1 << dt.bits) - 1)


# ---------------------------------------------------------------------------
# Integers

def _idiv(kb, dt, a, b):
    bb = kb.b
    zero = bb.icmp_unsigned("==", b, _c(0, b))
    if dt.kind == "uint":
        safe = bb.select(zero, _c(1, b), b)
        return bb.select(zero, _c(-1, a), bb.udiv(a, safe))
    ovf = bb.and_(bb.icmp_unsigned("==", a, _c(_int_min(dt), a)), bb.icmp_signed("==", b, _c(-1, b)))
    safe = bb.select(bb.or_(zero, ovf), _c(1, b), b)
    q = bb.sdiv(a, safe)
    return bb.select(zero, _c(-1, a), bb.select(ovf, _c(_int_min(dt), a), q))


def _irem(kb, dt, a, b):
    bb = kb.b
    zero = bb.icmp_unsigned("==", b, _c(0, b))
    if dt.kind == "uint":
        safe = bb.select(zero, _c(1, b), b)
        return bb.select(zero, a, bb.urem(a, safe))
    ovf = bb.and_(bb.icmp_unsigned("==", a, _c(_int_min(dt), a)), bb.icmp_signed("==", b, _c(-1, b)))
    safe = bb.select(bb.or_(zero, ovf), _c(1, b), b)
    r = bb.srem(a, safe)
    return bb.select(zero, a, bb.select(ovf, _c(0, a), r))


def _ipow(kb, dt, a, b):
    bb = kb.b
    acc, base, e = _c(1, a), a, b
    for _ in range(6):
        odd = bb.icmp_unsigned("!=", bb.and_(e, _c(1, e)), _c(0, e))
        acc = bb.select(odd, bb.mul(acc, base), acc)
        base = bb.mul(base, base)
        e = bb.lshr(e, _c(1, e)) if dt.bits > 1 else _c(0, e)
    if dt.kind == "int":
        neg, minus_one = bb.icmp_signed("<", b, _c(0, b)), bb.icmp_signed("==", a, _c(-1, a))
    elif dt.bits >= 8:
        neg = bb.icmp_unsigned(">=", b, _c(1 << (dt.bits - 1), b))
        minus_one = bb.icmp_unsigned("==", a, _c(-1, a))
    else:
        return acc
    odd = bb.trunc(b, I1)
    special = bb.select(bb.icmp_unsigned("==", a, _c(1, a)), _c(1, a),
                        bb.select(bb.and_(minus_one, odd), _c(-1, a),
                                  bb.select(minus_one, _c(1, a), _c(0, a))))
    return bb.select(neg, special, acc)


def _mulhi(kb, dt, a, b):
    bb = kb.b
    wide = ir.IntType(dt.bits * 2)
    ext = bb.sext if dt.kind == "int" else bb.zext
    p = bb.mul(ext(a, wide), ext(b, wide))
    return bb.trunc(bb.lshr(p, ir.Constant(wide, dt.bits)), a.type)


def _shift(kind):
    def emit(kb, dt, a, b):
        bb = kb.b
        ok = bb.icmp_unsigned("<", b, _c(dt.bits, b))
        s = bb.select(ok, b, _c(0, b))
        if kind == "shl":
            return bb.select(ok, bb.shl(a, s), _c(0, a))
        if kind == "lshr":
            return bb.select(ok, bb.lshr(a, s), _c(0, a))
        fill = bb.ashr(a, _c(dt.bits - 1, a))
        return bb.select(ok, bb.ashr(a, s), fill)
    return emit


def _imax(signed, greater):
    def emit(kb, dt, a, b):
        bb = kb.b
        cmp = bb.icmp_signed if signed(dt) else bb.icmp_unsigned
        return bb.select(cmp(">" if greater else "<", a, b), a, b)
    return emit


_is_signed = lambda dt: dt.kind == "int"   # noqa: E731
_INT_BINARY = {
    "add": lambda kb, dt, a, b: kb.b.add(a, b),
    "subtract": lambda kb, dt, a, b: kb.b.sub(a, b),
    "multiply": lambda kb, dt, a, b: kb.b.mul(a, b),
    "divide": _idiv, "remainder": _irem, "power": _ipow, "mulhi": _mulhi,
    "maximum": _imax(_is_signed, True), "minimum": _imax(_is_signed, False),
    "and": lambda kb, dt, a, b: kb.b.and_(a, b),
    "or": lambda kb, dt, a, b: kb.b.or_(a, b),
    "xor": lambda kb, dt, a, b: kb.b.xor(a, b),
    "shift-left": _shift("shl"), "shift-right-logical": _shift("lshr"),
    "shift-right-arithmetic": _shift("ashr"),
}
_PRED_BINARY = {
    "add": "or_", "maximum": "or_", "or": "or_", "multiply": "and_", "minimum": "and_",
    "and": "and_", "xor": "xor",
}


def _iabs(kb, dt, x):
    if dt.kind == "uint":
        return x
    bb = kb.b
    return bb.select(bb.icmp_signed("<", x, _c(0, x)), bb.neg(x), x)


def _isign(kb, dt, x):
    bb = kb.b
    if dt.kind == "uint":
        return bb.zext(bb.icmp_unsigned("!=", x, _c(0, x)), x.type)
    pos = bb.zext(bb.icmp_signed(">", x, _c(0, x)), x.type)
    neg = bb.zext(bb.icmp_signed("<", x, _c(0, x)), x.type)
    return bb.sub(pos, neg)


def _ipopcnt(kb, dt, x):
    bb = kb.b
    if dt.name == "s4":
        w = bb.sext(x, ir.IntType(8))
        f = kb.mcx.intrinsic("llvm.ctpop.i8", w.type, [w.type])
        return bb.trunc(bb.call(f, [w]), x.type)
    f = kb.mcx.intrinsic(f"llvm.ctpop.i{dt.bits}", x.type, [x.type])
    return bb.call(f, [x])


def _iclz(kb, dt, x):
    f = kb.mcx.intrinsic(f"llvm.ctlz.i{dt.bits}", x.type, [x.type, I1])
    return kb.b.call(f, [x, ir.Constant(I1, 0)])


_INT_UNARY = {
    "negate": lambda kb, dt, x: kb.b.neg(x),
    "not": lambda kb, dt, x: kb.b.not_(x),
    "abs": _iabs, "sign": _isign, "popcnt": _ipopcnt, "count-leading-zeros": _iclz,
}


# ---------------------------------------------------------------------------
# Floats

def fmax(kb, a, b, greater=True):
    """llvm.maximum / llvm.minimum: NaN if either is NaN, +0 > -0 (HLO's semantics); LLVM
    lowers them inline and vectorises them as reductions."""
    t = a.type
    name = f"llvm.{'maximum' if greater else 'minimum'}.{suffix(t)}"
    return kb.b.call(kb.mcx.intrinsic(name, t, [t, t]), [a, b], fastmath=kb.flags)


def _fbin(name):
    def emit(kb, dt, a, b):
        return getattr(kb.b, name)(a, b, flags=kb.flags)
    return emit


def _libm_f(name):
    """fn(x) via the f64 libm function, rounded once (the interpreter's rule)."""
    def emit(kb, dt, *xs):
        bb = kb.b
        if kb.options.xla:     # DAZ also for libm's integer-based subnormal handling
            xs = [daz(kb, x) for x in xs]
        wide = [bb.fpext(x, F64) if x.type == F32 else x for x in xs]
        f = kb.mcx.libm(name, F64, [F64] * len(xs))
        y = bb.call(f, wide)
        return bb.fptrunc(y, F32) if xs[0].type == F32 else y
    return emit


def daz(kb, x):
    """x, or a zero of its sign when x is subnormal (what DAZ makes of an input)."""
    bb = kb.b
    tiny = 1.1754943508222875e-38 if x.type == F32 else 2.2250738585072014e-308
    absx = _intr("fabs")(kb, None, x)
    sub = bb.and_(bb.fcmp_ordered("<", absx, _c(tiny, x)), bb.fcmp_ordered("!=", x, _c(0.0, x)))
    return bb.select(sub, bb.fmul(x, _c(0.0, x)), x)


def _intr(name, n=1):
    def emit(kb, dt, *xs):
        t = xs[0].type
        f = kb.mcx.intrinsic(f"llvm.{name}.{suffix(t)}", t, [t] * n)
        return kb.b.call(f, list(xs))
    return emit


_libm_exp = _libm_f("exp")
_libm_tanh = _libm_f("tanh")

def _tanh(kb, dt, x):
    """tanh: glibc's (f64, rounded once) in ieee numerics; in xla-cpu numerics XLA:CPU's
    branch-free rational approximation (hloc.backend.xla_math), which LLVM vectorises."""
    if not kb.options.xla or x.type not in (F32, F64):
        return _libm_tanh(kb, dt, x)
    return xla_math.tanh(kb, x)


def _exp(kb, dt, x):
    """exp: glibc's (rounded once) in ieee numerics; in xla-cpu numerics for f32 a
    branch-free polynomial that LLVM vectorises (hloc.backend.vmath; XLA:CPU also uses
    its own vectorisable approximation)."""
    if not kb.options.xla or getattr(x.type, "element", x.type) != F32:
        return _libm_exp(kb, dt, x)
    from .vmath import exp_f32
    return exp_f32(kb, x)


def _expm1(kb, dt, x):
    bb = kb.b
    half = bb.fmul(x, _c(0.5, x))
    e = _exp(kb, dt, x)
    small = bb.fmul(_libm_tanh(kb, dt, half), bb.fadd(e, _c(1.0, x)))
    big = bb.fsub(e, _c(1.0, x))
    absx = _intr("fabs")(kb, dt, x)
    y = bb.select(bb.fcmp_ordered(">", absx, _c(0.5, x)), big, small)
    return bb.select(bb.fcmp_ordered("==", half, _c(0.0, x)), x, y)


def _fsign(kb, dt, x):
    bb = kb.b
    one = _c(1.0, x)
    r = bb.select(bb.fcmp_ordered(">", x, _c(0.0, x)), one, x)
    return bb.select(bb.fcmp_ordered("<", x, _c(0.0, x)), _c(-1.0, x), r)


def _logistic(kb, dt, x):
    bb = kb.b
    return bb.fdiv(_c(1.0, x), bb.fadd(_c(1.0, x), _exp(kb, dt, bb.fneg(x))))


def _rsqrt(kb, dt, x):
    return kb.b.fdiv(_c(1.0, x), _intr("sqrt")(kb, dt, x))


def _is_finite(kb, dt, x):
    absx = _intr("fabs")(kb, dt, x)
    return kb.b.fcmp_ordered("<", absx, _c(float("inf"), x))


def _fround_afz(kb, dt, x):
    return _intr("round")(kb, dt, x)


_FLOAT_UNARY = {
    "negate": lambda kb, dt, x: kb.b.fneg(x),
    "abs": _intr("fabs"), "sign": _fsign, "sqrt": _intr("sqrt"), "rsqrt": _rsqrt,
    "ceil": _intr("ceil"), "floor": _intr("floor"), "round-nearest-even": _intr("roundeven"),
    "round-nearest-afz": _fround_afz, "is-finite": _is_finite,
    "exponential": _exp, "exponential-minus-one": _expm1, "log": _libm_f("log"),
    "log-plus-one": _libm_f("log1p"), "logistic": _logistic, "cbrt": _libm_f("cbrt"),
    "sine": _libm_f("sin"), "cosine": _libm_f("cos"), "tan": _libm_f("tan"), "tanh": _tanh,
    "erf": _libm_f("erf"), "acos": _libm_f("acos"), "acosh": _libm_f("acosh"),
    "asin": _libm_f("asin"), "asinh": _libm_f("asinh"), "atan": _libm_f("atan"),
    "atanh": _libm_f("atanh"), "sinh": _libm_f("sinh"), "cosh": _libm_f("cosh"),
    "real": lambda kb, dt, x: x, "imag": lambda kb, dt, x: _c(0.0, x),
}
_FLOAT_BINARY = {
    "add": _fbin("fadd"), "subtract": _fbin("fsub"), "multiply": _fbin("fmul"),
    "divide": _fbin("fdiv"), "remainder": _libm_f("fmod"), "power": _libm_f("pow"),
    "atan2": _libm_f("atan2"),
    "maximum": lambda kb, dt, a, b: fmax(kb, a, b, True),
    "minimum": lambda kb, dt, a, b: fmax(kb, a, b, False),
}
_NO_ROUND = frozenset({"is-finite"})


# ---------------------------------------------------------------------------
# Complex

_COMPLEX_BINARY = {
    "add": lambda kb, dt, x, y: Cplx(kb.b.fadd(x.re, y.re, flags=kb.flags),
                                     kb.b.fadd(x.im, y.im, flags=kb.flags)),
    "subtract": lambda kb, dt, x, y: Cplx(kb.b.fsub(x.re, y.re, flags=kb.flags),
                                          kb.b.fsub(x.im, y.im, flags=kb.flags)),
}
_COMPLEX_BINARY["multiply"] = cplx.multiply
_COMPLEX_BINARY["divide"] = cplx.divide
_COMPLEX_BINARY["power"] = cplx.power
_COMPLEX_BINARY["atan2"] = cplx.atan2
_COMPLEX_UNARY = {
    **cplx.UNARY,
    "abs": cplx.absolute,
    "negate": lambda kb, dt, x: Cplx(kb.b.fneg(x.re), kb.b.fneg(x.im)),
    "real": lambda kb, dt, x: x.re, "imag": lambda kb, dt, x: x.im,
}


def unary(kb, inst, dt, x):
    op = inst.opdef.semantic or inst.opcode       # the row's semantic key
    if dt.kind in ("int", "uint"):
        table = _INT_UNARY
    elif dt.kind == "pred":
        table = {"not": lambda kb, dt, x: kb.b.not_(x), "abs": lambda kb, dt, x: x}
    elif dt.kind == "complex":
        table = _COMPLEX_UNARY
    else:
        table = _FLOAT_UNARY
    fn = table.get(op)
    if fn is None:
        raise unsupported(inst, f"{inst.opcode} on {dt.name} in the compiled back end")
    y = fn(kb, dt, x)
    if dt.kind == "float" and op not in _NO_ROUND:
        y = round_narrow(kb.b, dt, y)
    return y


def binary(kb, inst, dt, a, b):
    op = inst.opdef.semantic or inst.opcode       # the row's semantic key
    if dt.kind in ("int", "uint"):
        fn = _INT_BINARY.get(op)
    elif dt.kind == "pred":
        name = _PRED_BINARY.get(op)
        fn = (lambda kb, dt, a, b: getattr(kb.b, name)(a, b)) if name else None
    elif dt.kind == "complex":
        fn = _COMPLEX_BINARY.get(op)
    else:
        fn = _FLOAT_BINARY.get(op)
    if fn is None:
        raise unsupported(inst, f"{inst.opcode} on {dt.name} in the compiled back end")
    y = fn(kb, dt, a, b)
    return round_narrow(kb.b, dt, y) if dt.kind == "float" else y


UNARY_KEYS = ("abs", "negate", "sign", "not", "count-leading-zeros", "popcnt", "is-finite",
                 "real", "imag", "ceil", "floor", "round-nearest-afz", "round-nearest-even",
                 "exponential-minus-one", "log", "log-plus-one", "logistic",
                 "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan", "tanh", "erf", "acos",
                 "acosh", "asin", "asinh", "atan", "atanh", "sinh", "cosh")
BINARY_KEYS = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum",
                  "minimum", "atan2", "and", "or", "xor", "shift-left",
                  "shift-right-arithmetic", "shift-right-logical", "mulhi")


# Float rows (f32/f64 throughout; exp: f32, vmath's) whose generators are the same on
# <W x T> values (hloc.backend.row_vector; divide's row divide too, row_divide).
vectorises_semantic(lambda i: i.shape.dtype.name in ("f32", "f64") and all(
    o.shape.dtype is i.shape.dtype for o in i.operands), "add", "subtract", "multiply", "divide",
    "maximum", "minimum", "negate", "abs", "sqrt", "rsqrt", "floor", "ceil", "round-nearest-even")
vectorises_semantic(lambda i: i.shape.dtype.name == "f32" == i.operands[0].shape.dtype.name, "exponential")


@emits_semantic(*UNARY_KEYS)
def _emit_unary(kb, inst, ops, index):
    return unary(kb, inst, inst.operands[0].shape.dtype, ops[0](index))


@emits_semantic("exponential")
def _emit_exp(kb, inst, ops, index):
    """exp as unary's, in xla-cpu numerics without the clamp from above where the operand
    is known to be <= 0 (kb.bounds, hloc.backend.bounds: softmax's x - max(x))."""
    x = ops[0](index)
    dt = inst.operands[0].shape.dtype
    if kb.options.xla and dt.name == "f32" and getattr(x.type, "element", x.type) == F32 \
            and kb.bounds is not None and kb.bounds.at_most_zero(inst.operands[0]):
        from .vmath import exp_f32
        return exp_f32(kb, x, upper=False)
    return unary(kb, inst, dt, x)


@emits_semantic(*BINARY_KEYS)
def _emit_binary(kb, inst, ops, index):
    dt = inst.shape.dtype
    a, b = ops[0](index), ops[1](index)
    for i, v in enumerate((a, b)):
        src = inst.operands[i].shape.dtype
        if src is not dt:
            from .conversions import convert_value
            v = convert_value(kb, inst, v, src, dt)
            a, b = (v, b) if i == 0 else (a, v)
    rd = kb.row_divide          # hloc.backend.row_divide: a divisor fixed along the row
    if rd is not None and inst.opcode == "divide" and rd.applies(inst, index):
        return rd.divide(kb, inst, a, b)
    return binary(kb, inst, dt, a, b)


# ---------------------------------------------------------------------------
# compare, select, clamp

def total_order_key(kb, dt, x):
    from .types import to_storage
    bb = kb.b
    ity = ir.IntType(dt.bits)
    bits = to_storage(bb, dt, x)
    bits = bb.bitcast(bits, ity)
    mag = bb.and_(bits, ir.Constant(ity, (1 << (dt.bits - 1)) - 1))
    neg = bb.icmp_signed("<", bits, ir.Constant(ity, 0))
    return bb.select(neg, bb.sub(ir.Constant(ity, -1), mag), mag)


def compare_values(kb, inst, dt, a, b, direction, ctype):
    bb = kb.b
    if dt.kind == "complex":
        if direction not in ("EQ", "NE"):
            raise unsupported(inst, f"comparison {direction} of {dt.name}")
        if direction == "EQ":
            return bb.and_(bb.fcmp_ordered("==", a.re, b.re), bb.fcmp_ordered("==", a.im, b.im))
        return bb.or_(bb.fcmp_unordered("!=", a.re, b.re), bb.fcmp_unordered("!=", a.im, b.im))
    if dt.kind == "float":
        if ctype == "TOTALORDER":
            ka, kb_ = total_order_key(kb, dt, a), total_order_key(kb, dt, b)
            return bb.icmp_signed(_CMP_INT[direction], ka, kb_)
        return bb.fcmp_unordered("!=", a, b) if direction == "NE" else \
            bb.fcmp_ordered(_CMP_INT[direction], a, b)
    signed = (ctype == "SIGNED" or (ctype not in ("SIGNED", "UNSIGNED") and dt.kind == "int")) \
        and dt.kind != "pred"
    cmp = bb.icmp_signed if signed else bb.icmp_unsigned
    return cmp(_CMP_INT[direction], a, b)


@emits("compare")
def _emit_compare(kb, inst, ops, index):
    dt = inst.operands[0].shape.dtype
    return compare_values(kb, inst, dt, ops[0](index), ops[1](index), inst.attrs["direction"],
                          inst.attrs.get("type"))


def _scalar_or(inst, k, index):
    """Index for operand k: a scalar operand of select/clamp broadcasts."""
    return index if inst.operands[k].shape.rank == inst.shape.rank else _scalar_index(index)


def _scalar_index(index):
    from .loops import Index
    from ..ir.shape import ArrayShape
    return Index(index.b, ArrayShape(index.shape.dtype, ()), multi=[])


def select_value(kb, p, t, f):
    if isinstance(t, Cplx):
        return Cplx(kb.b.select(p, t.re, f.re), kb.b.select(p, t.im, f.im))
    return kb.b.select(p, t, f)


@emits("select")
def _emit_select(kb, inst, ops, index):
    if inst.shape.is_tuple:
        raise unsupported(inst, "tuple select in the compiled back end")
    p = ops[0](_scalar_or(inst, 0, index))
    return select_value(kb, p, ops[1](index), ops[2](index))


@emits("clamp")
def _emit_clamp(kb, inst, ops, index):
    dt = inst.shape.dtype
    lo, x, hi = (ops[k](_scalar_or(inst, k, index)) for k in range(3))
    bb = kb.b
    if dt.kind == "float":
        return round_narrow(bb, dt, fmax(kb, hi, fmax(kb, lo, x, True), False))
    if dt.kind in ("int", "uint"):
        mx = _imax(_is_signed, True)(kb, dt, lo, x)
        return _imax(_is_signed, False)(kb, dt, hi, mx)
    if dt.kind == "pred":
        return bb.and_(hi, bb.or_(lo, x))
    raise unsupported(inst, f"clamp on {dt.name} in the compiled back end")


@emits("complex")
def _emit_complex(kb, inst, ops, index):
    return Cplx(ops[0](index), ops[1](index))


def constant_of(dt, v):
    return const(dt, v)


_ = (compute_type,)
