"""algsimp rules for arithmetic: add, subtract, multiply, divide, power, remainder.

Each rule is XLA's (AlgebraicSimplifierVisitor::HandleAdd, HandleSubtract, ...), in
XLA's order. Where XLA rewrites floats in a way that changes rounding, the rule is
restricted to integers (noted in its pattern text).
"""
from __future__ import annotations

import numpy as np

from .rules import (bcast_of, is_complex, is_const, is_const_effective_scalar,
                            is_const_scalar, is_float, is_int, is_pred,
                            is_power_of_two_fp_constant, is_signed_int, rule, same)
from ..simplify_util import constant_array, is_all, max_value, np_scalar, scalar_value

ELEMENTWISE = "elementwise"


def _const_pair(c1, c2):
    """(c1, c2) as plain constants, or the scalars under two scalar broadcasts."""
    if is_const(c1) and is_const(c2):
        return c1, c2
    s1 = bcast_of(c1, is_const_scalar)
    s2 = bcast_of(c2, is_const_scalar)
    if s1 is not None and s2 is not None:
        return s1, s2
    return None


def _fold_pair(ctx, opcode, inst, c1, c2):
    """MakeBinaryHlo(opcode, c1, c2), broadcast to inst's shape when it is scalar."""
    v = ctx.b.binary(opcode, c1, c2)
    if v.shape.rank == 0 and inst.shape.rank != 0:
        v = ctx.b.broadcast(v, inst.shape.dims, ())
    return v


# ---------------------------------------------------------------------------
# add

@rule("add", "A + 0 => A")
def _add_zero_rhs(inst, ctx):
    a, b = inst.operands
    return a if is_all(b, 0) and same(inst, a) else None


@rule("add", "0 + A => A")
def _add_zero_lhs(inst, ctx):
    a, b = inst.operands
    return b if is_all(a, 0) and same(inst, b) else None


@rule("add", "C + A => A + C (constants to the right)")
def _add_canonical(inst, ctx):
    a, b = inst.operands
    if is_const(a) and not is_const(b):
        return ctx.b.add("add", inst.shape, [b, a])
    return None


@rule("add", "(A + C1) + C2 => A + (C1 + C2), integers only")
def _add_reassociate(inst, ctx):
    lhs, c2 = inst.operands
    if not is_int(inst) or lhs.opcode != "add":
        return None
    a, c1 = lhs.operands
    pair = _const_pair(c1, c2)
    if is_const(a) or pair is None:
        return None
    return ctx.b.add("add", inst.shape, [a, _fold_pair(ctx, "add", inst, *pair)])


@rule("add", "(C1 - A) + C2 => (C1 + C2) - A, integers only")
def _add_sub_reassociate(inst, ctx):
    lhs, c2 = inst.operands
    if not is_int(inst) or lhs.opcode != "subtract":
        return None
    c1, a = lhs.operands
    pair = _const_pair(c1, c2)
    if is_const(a) or pair is None:
        return None
    return ctx.b.add("subtract", inst.shape, [_fold_pair(ctx, "add", inst, *pair), a])


@rule("add", "A + (B - A) => B, (B - A) + A => B, integers only")
def _add_cancel(inst, ctx):
    if not is_int(inst):
        return None
    for x, s in (inst.operands, reversed(inst.operands)):
        if s.opcode == "subtract" and s.operands[1] is x and same(inst, s.operands[0]):
            return s.operands[0]
    return None


@rule("add", "A*C + B*C => (A+B)*C for integers or C = +-2^k")
def _add_distribute(inst, ctx):
    lhs, rhs = inst.operands
    if lhs.opcode != "multiply" or rhs.opcode != "multiply":
        return None
    if len(lhs.users) != 1 or len(rhs.users) != 1:
        return None
    for a, c in (lhs.operands, reversed(lhs.operands)):
        if rhs.operands[0] is c:
            b = rhs.operands[1]
        elif rhs.operands[1] is c:
            b = rhs.operands[0]
        else:
            continue
        if not (is_int(inst) or is_power_of_two_fp_constant(c)):
            return None
        s = ctx.b.add("add", inst.shape, [a, b])
        return ctx.b.add("multiply", inst.shape, [s, c])
    return None


@rule("add", "A + dus(broadcast(0), U, i) => dus(A, ds(A, i) + U, i)")
def _add_sparse_update(inst, ctx):
    for lhs, rhs in (inst.operands, list(reversed(inst.operands))):
        if rhs.opcode != "dynamic-update-slice":
            continue
        base = rhs.operands[0]
        zero = bcast_of(base, is_const_effective_scalar)
        if zero is None or not is_all(zero, 0):
            continue
        update, idx = rhs.operands[1], rhs.operands[2:]
        sliced = ctx.b.dynamic_slice(lhs, idx, update.shape.dims)
        part = ctx.b.add("add", update.shape, [sliced, update])
        return ctx.b.add("dynamic-update-slice", lhs.shape, [lhs, part, *idx])
    return None


# ---------------------------------------------------------------------------
# subtract

@rule("subtract", "A - A => 0, integers only")
def _sub_self(inst, ctx):
    a, b = inst.operands
    return ctx.b.scalar_like(inst, 0) if is_int(inst) and a is b else None


@rule("subtract", "A - 0 => A")
def _sub_zero(inst, ctx):
    a, b = inst.operands
    return a if is_all(b, 0) and same(inst, a) else None


@rule("subtract", "A - C => A + (-C)")
def _sub_const(inst, ctx):
    a, b = inst.operands
    if is_const(a):
        return None
    c = b.operands[0] if b.opcode == "broadcast" and is_const(b.operands[0]) else b
    if not is_const(c):
        return None
    neg = ctx.b.add("negate", c.shape, [c])
    if c is not b:
        neg = ctx.b.broadcast(neg, b.shape.dims, b.attrs.get("dimensions", ()))
    return ctx.b.add("add", inst.shape, [a, neg])


@rule("subtract", "A - (A - B) => B, integers only")
def _sub_sub(inst, ctx):
    a, s = inst.operands
    if is_int(inst) and s.opcode == "subtract" and s.operands[0] is a and \
            same(inst, s.operands[1]):
        return s.operands[1]
    return None


@rule("subtract", "A - (A + B) => -B, integers only")
def _sub_add(inst, ctx):
    a, s = inst.operands
    if not is_int(inst) or s.opcode != "add":
        return None
    x, y = s.operands
    if x is a:
        return ctx.b.add("negate", inst.shape, [y])
    if y is a:
        return ctx.b.add("negate", inst.shape, [x])
    return None


@rule("subtract", "(A + B) - A => B, integers only")
def _sub_add_cancel(inst, ctx):
    s, a = inst.operands
    if not is_int(inst) or s.opcode != "add":
        return None
    x, y = s.operands
    if y is a and same(inst, x):
        return x
    if x is a and same(inst, y):
        return y
    return None


# ---------------------------------------------------------------------------
# multiply

@rule("multiply", "A * 1 => A")
def _mul_one_rhs(inst, ctx):
    a, b = inst.operands
    return a if is_all(b, 1) and same(inst, a) else None


@rule("multiply", "1 * A => A")
def _mul_one_lhs(inst, ctx):
    a, b = inst.operands
    return b if is_all(a, 1) and same(inst, b) else None


@rule("multiply", "0 * A => 0, A * 0 => 0, integers only (NaN-safe)")
def _mul_zero(inst, ctx):
    if not is_int(inst):
        return None
    for z in inst.operands:
        if is_all(z, 0) and same(inst, z):
            return z
    return None


@rule("multiply", "-A * -B => A * B")
def _mul_negates(inst, ctx):
    a, b = inst.operands
    if a.opcode == "negate" and b.opcode == "negate":
        inst.set_operand(0, a.operands[0])
        inst.set_operand(1, b.operands[0])
        return True
    return None


@rule("multiply", "|A| * |A| => A * A (real A)")
def _mul_abs(inst, ctx):
    a, b = inst.operands
    if a is b and a.opcode == "abs" and not is_complex(a.operands[0]):
        inst.set_operand(0, a.operands[0])
        inst.set_operand(1, a.operands[0])
        return True
    return None


@rule("multiply", "A * convert(P) => select(P, A, 0), integers only")
def _mul_pred(inst, ctx):
    if not is_int(inst):
        return None
    for x, c in (inst.operands, list(reversed(inst.operands))):
        if c.opcode == "convert" and is_pred(c.operands[0]):
            zero = ctx.b.scalar_like(inst, 0)
            return ctx.b.add("select", inst.shape, [c.operands[0], x, zero])
    return None


def _mul_by_const(inst):
    """(A, C) when inst is A * C (either order) with A non-constant, C constant."""
    if inst.opcode != "multiply":
        return None
    a, c = inst.operands
    if not is_const(a) and is_const(c):
        return a, c
    if not is_const(c) and is_const(a):
        return c, a
    return None


@rule("multiply", "(A*C1) * (B*C2) => (A*B) * (C1*C2), integers only")
def _mul_two_consts(inst, ctx):
    if not is_int(inst):
        return None
    m1, m2 = _mul_by_const(inst.operands[0]), _mul_by_const(inst.operands[1])
    if m1 is None or m2 is None:
        return None
    (a, c1), (b, c2) = m1, m2
    prod = _fold_pair(ctx, "multiply", inst, c1, c2)
    ab = ctx.b.add("multiply", inst.shape, [a, b])
    return ctx.b.add("multiply", inst.shape, [ab, prod])


@rule("multiply", "(A*C1) * C2 => A * (C1*C2), integers only")
def _mul_reassociate(inst, ctx):
    if not is_int(inst):
        return None
    for m, c2 in (inst.operands, list(reversed(inst.operands))):
        inner = _mul_by_const(m)
        if inner is not None and is_const(c2):
            a, c1 = inner
            return ctx.b.add("multiply", inst.shape,
                             [a, _fold_pair(ctx, "multiply", inst, c1, c2)])
    for m, c2 in (inst.operands,):
        if m.opcode == "multiply":
            a, bc1 = m.operands
            s1, s2 = bcast_of(bc1, is_const_scalar), bcast_of(c2, is_const_scalar)
            if s1 is not None and s2 is not None:
                return ctx.b.add("multiply", inst.shape,
                                 [a, _fold_pair(ctx, "multiply", inst, s1, s2)])
    return None


# ---------------------------------------------------------------------------
# divide

@rule("divide", "A / 1 => A")
def _div_one(inst, ctx):
    a, b = inst.operands
    return a if is_all(b, 1) and same(inst, a) else None


@rule("divide", "A / 2^k => A >> k (integers; signed via select on the sign)")
def _div_shift(inst, ctx):
    if not is_int(inst):
        return None
    a, b = inst.operands
    c = b if is_const_effective_scalar(b) else bcast_of(b, is_const_effective_scalar)
    if c is None:
        return None
    v = int(scalar_value(c))
    if is_signed_int(inst):
        if v <= 0 or v & (v - 1):
            return None
        neg = ctx.b.compare(a, ctx.b.scalar_like(a, 0), "LT")
        absa = ctx.b.select(neg, ctx.b.unary("negate", a), a)
        q = ctx.b.add("shift-right-logical", inst.shape,
                      [absa, ctx.b.scalar_like(absa, v.bit_length() - 1)])
        return ctx.b.add("select", inst.shape, [neg, ctx.b.unary("negate", q), q])
    if v <= 0 or v & (v - 1):
        return None
    return ctx.b.add("shift-right-logical", inst.shape,
                     [a, ctx.b.scalar_like(a, v.bit_length() - 1)])


@rule("divide", "A / C => A * (1/C), float C of powers of two only (exact)")
def _div_const(inst, ctx):
    a, b = inst.operands
    if not is_float(inst) or is_const(a):
        return None
    c = b if is_const(b) else (b.operands[0] if b.opcode == "broadcast" and
                               is_const(b.operands[0]) else None)
    if c is None:
        return None
    arr = constant_array(c)
    with np.errstate(all="ignore"):
        wide = arr.astype(np.float64)
        mant, _ = np.frexp(wide)
        inv = (1.0 / wide).astype(arr.dtype)
    if not np.all(np.abs(mant) == 0.5) or not np.all(np.isfinite(inv.astype(np.float64))):
        return None
    if not np.all(inv.astype(np.float64) * wide == 1.0):   # subnormal/overflowing 1/C
        return None
    inverse = ctx.b.constant(c.shape.dtype, inv, c.shape.dims)
    if c is not b:
        inverse = ctx.b.broadcast(inverse, b.shape.dims, b.attrs.get("dimensions", ()))
    return ctx.b.binary("multiply", a, inverse)


# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------
# power, remainder

@rule("power", "pow(A, 0) => 1")
def _pow_zero(inst, ctx):
    return ctx.b.scalar_like(inst, 1) if is_all(inst.operands[1], 0) else None


@rule("power", "pow(A, 1) => A")
def _pow_one(inst, ctx):
    a, b = inst.operands
    return a if is_all(b, 1) and same(inst, a) else None


@rule("power", "pow(A, 2) => A * A")
def _pow_two(inst, ctx):
    a, b = inst.operands
    return ctx.b.add("multiply", inst.shape, [a, a]) if is_all(b, 2) else None


@rule("power", "pow(A, 3) => A * (A * A), integers only")
def _pow_three(inst, ctx):
    a, b = inst.operands
    if is_int(inst) and is_all(b, 3):
        sq = ctx.b.add("multiply", inst.shape, [a, a])
        return ctx.b.add("multiply", inst.shape, [a, sq])
    return None


@rule("power", "pow(A, -1) => 1 / A, floating point only")
def _pow_minus_one(inst, ctx):
    a, b = inst.operands
    if (is_float(inst) or is_complex(inst)) and is_all(b, -1):
        return ctx.b.add("divide", inst.shape, [ctx.b.scalar_like(a, 1), a])
    return None


@rule("remainder", "(A % B) % B => A % B")
def _rem_rem(inst, ctx):
    a, b = inst.operands
    if a.opcode == "remainder" and a.operands[1] is b:
        return a
    return None


@rule("remainder", "A % 2^k => A & (2^k - 1) (integers; signed via select on the sign)")
def _rem_and(inst, ctx):
    if not is_int(inst):
        return None
    a, b = inst.operands
    c = b if is_const_effective_scalar(b) else bcast_of(b, is_const_effective_scalar)
    if c is None:
        return None
    v = int(scalar_value(c))
    if v <= 0 or v & (v - 1):
        return None
    if is_signed_int(inst):
        neg = ctx.b.compare(a, ctx.b.scalar_like(a, 0), "LT")
        absa = ctx.b.select(neg, ctx.b.unary("negate", a), a)
        q = ctx.b.add("and", inst.shape, [absa, ctx.b.scalar_like(absa, v - 1)])
        return ctx.b.add("select", inst.shape, [neg, ctx.b.unary("negate", q), q])
    mask = ctx.b.constant(inst.shape.dtype, np_scalar(inst.shape.dtype, v - 1))
    if b.shape.rank:
        mask = ctx.b.broadcast(mask, b.shape.dims, ())
    return ctx.b.add("and", inst.shape, [a, mask])


def _iota_bound(iota):
    return iota.shape.dims[iota.attrs["iota_dimension"]]


@rule("remainder", "iota % N => iota when N >= the iota's size")
def _rem_iota(inst, ctx):
    a, b = inst.operands
    d = bcast_of(b, is_const_effective_scalar)
    if a.opcode != "iota" or d is None or not is_int(inst):
        return None
    return a if int(scalar_value(d)) >= _iota_bound(a) else None


@rule("remainder", "(iota + N) % N => iota % N when iota + N cannot overflow")
def _rem_iota_shift(inst, ctx):
    s, bc = inst.operands
    d = bcast_of(bc, is_const_effective_scalar)
    if s.opcode != "add" or d is None or not is_int(inst):
        return None
    for iota, add_b in (s.operands, list(reversed(s.operands))):
        if iota.opcode == "iota" and bcast_of(add_b, is_const_effective_scalar) is d:
            top = int(scalar_value(d)) + _iota_bound(iota)
            if top <= max_value(iota.shape.dtype):
                return ctx.b.add("remainder", inst.shape, [iota, bc])
    return None
