"""algsimp rules for unary and logical ops, min/max/clamp, compare, select and
conversions (XLA's HandleNegate, HandleNot, HandleAbs, HandleExp, HandleAnd, HandleOr,
HandleXor, HandleMaximum, HandleMinimum, HandleClamp, HandleCompare, HandleSelect,
HandleConvert, HandleBitcastConvert, HandleComplex, HandleReal, HandleImag), in XLA's
order. Float rules that depend on NaN not propagating through min/max are left out, as
XLA:CPU's options make XLA leave them out.
"""
from __future__ import annotations

from ...ops import REGISTRY
from .rules import (bcast_of, is_complex, is_const_effective_scalar,
                            is_const_scalar, is_int, is_nonneg, is_pred, rule, same)
from ..simplify_util import (cast_preserves_values, constant_array, is_all, max_value,
                            min_value, scalar_value)

ELEMENTWISE = "elementwise"


# unary, logical

@rule("negate", "-(-A) => A")
def _neg_neg(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "negate" and same(inst, x.operands[0]):
        return x.operands[0]
    return None


@rule("not", "!(!A) => A")
def _not_not(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "not" and same(inst, x.operands[0]):
        return x.operands[0]
    return None


@rule("abs", "|A| => A when A is known non-negative")
def _abs_nonneg(inst, ctx):
    x = inst.operands[0]
    return x if is_nonneg(x) and same(inst, x) else None


@rule("exponential", "exp(0) => 1")
def _exp_zero(inst, ctx):
    x = inst.operands[0]
    s = x.operands[0] if x.opcode == "broadcast" else x
    if is_const_scalar(s) and is_all(s, 0):
        return ctx.b.scalar_like(inst, 1.0)
    return None


@rule("and", "A && true => A, true && A => A (pred)")
def _and_true(inst, ctx):
    a, b = inst.operands
    if is_pred(a) and is_pred(b):
        if is_all(b, 1) and same(inst, a):
            return a
        if is_all(a, 1) and same(inst, b):
            return b
    return None


@rule("and", "A & 0 => 0, 0 & A => 0")
def _and_zero(inst, ctx):
    a, b = inst.operands
    if is_all(b, 0) and same(inst, b):
        return b
    if is_all(a, 0) and same(inst, a):
        return a
    return None


def _lt_info(cmp):
    """(var, c) for `var < c` or `c > var` with c an s32 effective-scalar constant."""
    if cmp.opcode != "compare":
        return None
    x, y = cmp.operands
    d = cmp.attrs.get("direction")
    if d == "LT" and is_const_effective_scalar(y) and y.shape.dtype.name == "s32":
        return x, int(scalar_value(y))
    if d == "GT" and is_const_effective_scalar(x) and x.shape.dtype.name == "s32":
        return y, int(scalar_value(x))
    return None


@rule("and", "(x < c1) && (x < c2) => x < min(c1, c2) (s32 constants)")
def _and_tautology(inst, ctx):
    a, b = (_lt_info(o) for o in inst.operands)
    if a is None or b is None or a[0] is not b[0]:
        return None
    var = a[0]
    return ctx.b.add("compare", inst.operands[0].shape,
                     [var, ctx.b.scalar_like(var, min(a[1], b[1]))], {"direction": "LT"})


@rule("or", "A || true => true, true || A => true (pred)")
def _or_true(inst, ctx):
    a, b = inst.operands
    if is_pred(a) and is_pred(b):
        if is_all(b, 1) and same(inst, b):
            return b
        if is_all(a, 1) and same(inst, a):
            return a
    return None


@rule("or", "A | 0 => A, 0 | A => A")
def _or_zero(inst, ctx):
    a, b = inst.operands
    if is_all(b, 0) and same(inst, a):
        return a
    if is_all(a, 0) and same(inst, b):
        return b
    return None


@rule("xor", "A ^ A => 0")
def _xor_self(inst, ctx):
    a, b = inst.operands
    return ctx.b.scalar_like(inst, 0) if a is b else None


@rule("xor", "A ^ 0 => A, 0 ^ A => A")
def _xor_zero(inst, ctx):
    a, b = inst.operands
    if is_all(b, 0) and same(inst, a):
        return a
    if is_all(a, 0) and same(inst, b):
        return b
    return None


# ---------------------------------------------------------------------------
# maximum, minimum, clamp

def _minmax_rules(op: str, other: str, extreme, sign: str):
    @rule(op, f"{op}(x, x) => x")
    def _self(inst, ctx):
        a, b = inst.operands
        return a if a is b else None

    @rule(op, f"{op}(x, {sign}) => x, integers only (CPU min/max do not propagate NaN)")
    def _identity(inst, ctx):
        if not is_int(inst):
            return None
        a, b = inst.operands
        ext = extreme(inst.shape.dtype)
        if b.shape.dtype is inst.shape.dtype and is_all(a, ext):
            return b
        if a.shape.dtype is inst.shape.dtype and is_all(b, ext):
            return a
        return None

    @rule(op, f"{op}({op}(x, y), y) => {op}(x, y); {op}(x, {op}(x, y)) => {op}(x, y)")
    def _nested(inst, ctx):
        a, b = inst.operands
        if a.opcode == op and b in a.operands:
            return a
        if b.opcode == op and b.operands[0] is a:
            return b
        return None

    @rule(op, f"{op}(y, {op}(x, y)) => {op}(y, x)")
    def _nested_swap(inst, ctx):
        a, b = inst.operands
        if b.opcode == op and b.operands[1] is a and b.operands[0] is not a:
            inst.set_operand(1, b.operands[0])
            return True
        return None

    @rule(op, f"{op}(bcast(c1), {other}(x, bcast(c2))) => clamp when the bounds are ordered")
    def _to_clamp(inst, ctx):
        for bc, m in (inst.operands, list(reversed(inst.operands))):
            outer = bcast_of(bc, is_const_effective_scalar)
            if outer is None or m.opcode != other:
                continue
            for x, bc2 in (m.operands, list(reversed(m.operands))):
                inner = bcast_of(bc2, is_const_effective_scalar)
                if inner is None:
                    continue
                lo_b, hi_b = (bc, bc2) if op == "maximum" else (bc2, bc)
                lo = constant_array(lo_b.operands[0]).reshape(())
                hi = constant_array(hi_b.operands[0]).reshape(())
                if not bool(lo < hi):
                    return None
                return ctx.b.add("clamp", x.shape, [lo_b, x, hi_b])
        return None

    @rule(op, f"{op}(f(x), f(y)) => f({op}(x, y)) for nondecreasing sublinear f")
    def _sink(inst, ctx):
        a, b = inst.operands
        if a.opcode == b.opcode and a.opcode in ("cbrt", "erf", "logistic", "tanh"):
            m = ctx.b.binary(op, a.operands[0], b.operands[0])
            return ctx.b.add(a.opcode, inst.shape, [m])
        return None


_minmax_rules("maximum", "minimum", min_value, "MIN")
_minmax_rules("minimum", "maximum", max_value, "MAX")


@rule("clamp", "clamp(a, clamp(a, x, b), b) => clamp(a, x, b)")
def _clamp_clamp(inst, ctx):
    lo, x, hi = inst.operands
    if x.opcode == "clamp" and x.operands[0] is lo and x.operands[2] is hi and same(inst, x):
        return x
    return None


# ---------------------------------------------------------------------------
# compare

def _const_pred(ctx, inst, value):
    return ctx.b.scalar_like(inst, bool(value))


@rule("compare", "unsigned: X < 0 => false, X >= 0 => true, 0 > X => false, 0 <= X => true")
def _cmp_unsigned(inst, ctx):
    a, b = inst.operands
    if a.shape.dtype.kind != "uint":
        return None
    d = inst.attrs["direction"]
    if d == "LT" and is_all(b, 0) or d == "GT" and is_all(a, 0):
        return _const_pred(ctx, inst, False)
    if d == "GE" and is_all(b, 0) or d == "LE" and is_all(a, 0):
        return _const_pred(ctx, inst, True)
    return None


@rule("compare", "X < 0 => false, X >= 0 => true (and mirrored) for non-negative X")
def _cmp_nonneg(inst, ctx):
    a, b = inst.operands
    d = inst.attrs["direction"]
    if d == "LT" and is_all(b, 0) and is_nonneg(a) or d == "GT" and is_all(a, 0) \
            and is_nonneg(b):
        return _const_pred(ctx, inst, False)
    if d == "GE" and is_all(b, 0) and is_nonneg(a) or d == "LE" and is_all(a, 0) \
            and is_nonneg(b):
        return _const_pred(ctx, inst, True)
    return None


@rule("compare", "X op X => constant, integers only")
def _cmp_self(inst, ctx):
    a, b = inst.operands
    if a is not b or not is_int(a):
        return None
    return _const_pred(ctx, inst, inst.attrs["direction"] in ("EQ", "GE", "LE"))


@rule("compare", "A != false => A, A == true => A (and mirrored; pred)")
def _cmp_pred(inst, ctx):
    a, b = inst.operands
    if not (is_pred(a) and is_pred(b)):
        return None
    d = inst.attrs["direction"]
    want = {"NE": False, "EQ": True}.get(d)
    if want is None:
        return None
    if is_all(b, want) and same(inst, a):
        return a
    if is_all(a, want) and same(inst, b):
        return b
    return None


@rule("compare", "select(a >= b, 1, 0) != 0 => a >= b")
def _cmp_select_mask(inst, ctx):
    s, z = inst.operands
    if inst.attrs["direction"] != "NE" or not is_all(z, 0) or s.opcode != "select":
        return None
    c, t, f = s.operands
    if c.opcode == "compare" and c.attrs["direction"] == "GE" and is_all(t, 1) and \
            is_all(f, 0) and same(inst, c):
        return c
    return None


@rule("compare", "max(a, b) > a => b > a, a > min(a, b) => a > b (and b variants)")
def _cmp_minmax(inst, ctx):
    if inst.attrs["direction"] != "GT":
        return None
    lhs, rhs = inst.operands
    if lhs.opcode == "maximum":
        a, b = lhs.operands
        if rhs is a:
            inst.set_operand(0, b)
            return True
        if rhs is b:
            inst.set_operand(0, a)
            return True
    elif rhs.opcode == "minimum":
        a, b = rhs.operands
        if lhs is a:
            inst.set_operand(1, b)
            return True
        if lhs is b:
            inst.set_operand(1, a)
            return True
    return None


# ---------------------------------------------------------------------------
# select

@rule("select", "select(p, a, a) => a")
def _sel_same(inst, ctx):
    p, a, b = inst.operands
    return a if a is b and same(inst, a) else None


@rule("select", "select(true, a, b) => a, select(false, a, b) => b")
def _sel_const(inst, ctx):
    p, a, b = inst.operands
    if is_all(p, True) and same(inst, a):
        return a
    if is_all(p, False) and same(inst, b):
        return b
    return None


@rule("select", "select(!p, a, b) => select(p, b, a)")
def _sel_not(inst, ctx):
    p, a, b = inst.operands
    if p.opcode == "not":
        return ctx.b.add("select", inst.shape, [p.operands[0], b, a])
    return None


@rule("select", "pred select(p, true, false) => p, select(p, false, true) => !p")
def _sel_pred(inst, ctx):
    if not is_pred(inst):
        return None
    p, a, b = inst.operands
    if is_all(a, True) and is_all(b, False) and same(inst, p):
        return p
    if is_all(a, False) and is_all(b, True) and same(inst, p):
        return ctx.b.add("not", p.shape, [p])
    return None


@rule("select", "pred select(a cmp b, a, b) => or/and/b/a by direction")
def _sel_pred_compare(inst, ctx):
    if not is_pred(inst):
        return None
    c, a, b = inst.operands
    if c.opcode != "compare" or c.operands[0] is not a or c.operands[1] is not b:
        return None
    d = c.attrs["direction"]
    if d in ("GT", "GE"):
        return ctx.b.add("or", inst.shape, [a, b])
    if d in ("LT", "LE"):
        return ctx.b.add("and", inst.shape, [a, b])
    return b if d == "EQ" else a


# ---------------------------------------------------------------------------
# convert, bitcast-convert, complex parts

@rule("convert", "convert(A) => A when the type does not change")
def _convert_same(inst, ctx):
    x = inst.operands[0]
    return x if x.shape.dtype is inst.shape.dtype and same(inst, x) else None


@rule("convert", "convert(convert(A)) => A when A's type round-trips losslessly")
def _convert_pair(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "convert":
        return None
    src = x.operands[0]
    if src.shape.dtype is inst.shape.dtype and \
            cast_preserves_values(src.shape.dtype, x.shape.dtype) and same(inst, src):
        return src
    return None


_SUB_BYTE = ("s1", "s2", "s4", "u1", "u2", "u4")


@rule("convert", "convert(op(convert(a), convert(b))) => op(a, b) for integer "
                 "upcast-op-downcast (add, subtract, multiply; unsigned divide, remainder)")
def _convert_narrow_op(inst, ctx):
    op = inst.operands[0]
    if op.opcode not in ("add", "subtract", "multiply", "divide", "remainder") or \
            len(op.users) != 1:
        return None
    if op.opcode in ("divide", "remainder") and op.shape.dtype.kind != "uint":
        return None
    c1, c2 = op.operands
    if c1.opcode != "convert" or c2.opcode != "convert" or len(c1.users) != 1 or \
            len(c2.users) != 1:
        return None
    a1, a2 = c1.operands[0], c2.operands[0]
    final, wide = inst.shape.dtype, op.shape.dtype
    if a1.shape.dtype is not final or a2.shape.dtype is not final:
        return None
    if not (final.is_integral and wide.is_integral) or final.name in _SUB_BYTE or \
            wide.name in _SUB_BYTE or final.kind != wide.kind:
        return None
    if not cast_preserves_values(final, wide):
        return None
    return ctx.b.add(op.opcode, op.shape.with_dtype(final), [a1, a2], dict(op.attrs))


@rule("bitcast-convert", "bitcast-convert(bitcast-convert(A)) => bitcast-convert(A)")
def _bitcast_chain(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "bitcast-convert":
        return ctx.b.add("bitcast-convert", inst.shape, [x.operands[0]])
    return None


@rule("bitcast-convert", "bitcast-convert(A) => A when the type does not change")
def _bitcast_same(inst, ctx):
    x = inst.operands[0]
    return x if same(inst, x) else None


@rule("complex", "complex(real(c), imag(c)) => c")
def _complex_parts(inst, ctx):
    r, i = inst.operands
    if r.opcode == "real" and i.opcode == "imag" and r.operands[0] is i.operands[0] \
            and same(inst, r.operands[0]):
        return r.operands[0]
    return None


@rule("real", "real(complex(r, i)) => r; real(x) => x for real x")
def _real(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "complex" and same(inst, x.operands[0]):
        return x.operands[0]
    return x if not is_complex(x) and same(inst, x) else None


@rule("imag", "imag(complex(r, i)) => i; imag(x) => 0 for real x")
def _imag(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "complex" and same(inst, x.operands[1]):
        return x.operands[1]
    return ctx.b.scalar_like(inst, 0) if not is_complex(x) else None


def elementwise(inst) -> bool:
    return ELEMENTWISE in REGISTRY[inst.opcode].traits
