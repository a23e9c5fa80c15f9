"""algsimp rules for data movement: broadcast, reshape, transpose, pad, reverse, copy
and get-tuple-element (slicing and joining are in algsimp_slicing).

Each rule is XLA's (HandleBroadcast, HandleReshape, ...), in XLA's order; none changes
a value, they only remove, merge or reorder movement.
"""
from __future__ import annotations

import numpy as np

from ...ops import REGISTRY
from ...ir.graph import is_dead, remove_instruction_and_unused_operands
from .rules import (common_factors, compose_permutations, inverse_permutation, is_scalar,
                    reshape_degenerate, reshape_leaves_dims_unmodified, rule, same)
from ..simplify_util import is_zero_element

ELEMENTWISE = "elementwise"


def _dims(inst):
    return tuple(inst.attrs.get("dimensions", ()))


# ---------------------------------------------------------------------------
# broadcast

@rule("broadcast", "broadcast(X) => reshape(X) when sorted and no elements are added")
def _bcast_reshape(inst, ctx):
    x = inst.operands[0]
    dims = _dims(inst)
    if list(dims) == sorted(dims) and inst.shape.size == x.shape.size:
        return ctx.b.reshape(x, inst.shape.dims)
    return None


@rule("broadcast", "broadcast(X) => transpose(X) when rank and size are unchanged")
def _bcast_transpose(inst, ctx):
    x = inst.operands[0]
    if inst.shape.rank == x.shape.rank and inst.shape.size == x.shape.size:
        return ctx.b.transpose(x, inverse_permutation(_dims(inst)))
    return None


@rule("broadcast", "broadcast(reshape(X)) => broadcast(X) when the reshape only adds 1s")
def _bcast_of_degenerate_reshape(inst, ctx):
    x = inst.operands[0]
    desc = reshape_degenerate(x)
    if desc is None or desc[0]:
        return None
    dims = list(_dims(inst))
    for i in sorted(desc[1], reverse=True):
        del dims[i]
    return ctx.b.broadcast(x.operands[0], inst.shape.dims, dims)


def _compatible_broadcast(b, operand, dims):
    if b.opcode != "broadcast":
        return False
    if is_scalar(b.operands[0]):
        return True
    return b.operands[0].shape == operand.shape and _dims(b) == dims


@rule("broadcast", "op(broadcast(x), broadcast(y)) => broadcast(op(x, y)) for elementwise op")
def _bcast_sink(inst, ctx):
    x = inst.operands[0]
    if is_scalar(inst):
        return None
    dims = _dims(inst)
    for user in list(inst.users):
        if is_dead(user) or user.opcode in ("copy", "fusion") or ctx.pinned(user) or \
                ELEMENTWISE not in REGISTRY[user.opcode].traits:
            continue
        if not all(_compatible_broadcast(o, x, dims) for o in user.operands):
            continue
        ctx.b.before = user
        new_ops = []
        for o in user.operands:
            if is_scalar(o.operands[0]):
                new_ops.append(ctx.b.broadcast(o.operands[0], x.shape.dims, ()))
            else:
                new_ops.append(o.operands[0])
        new_user = ctx.b.add(user.opcode, x.shape.with_dtype(user.shape.dtype), new_ops,
                             dict(user.attrs))
        new_bcast = ctx.b.broadcast(new_user, user.shape.dims, dims)
        user.replace_all_uses_with(new_bcast)
        remove_instruction_and_unused_operands(user)
        return True
    return None


_PERMUTING = ("reshape", "reverse", "transpose")


@rule("broadcast", "f(broadcast(scalar)) => broadcast(scalar) for a permuting or "
                   "subsetting user f (reshape, transpose, reverse, sort, slice, dynamic-slice)")
def _bcast_scalar_user(inst, ctx):
    x = inst.operands[0]
    if not is_scalar(x):
        return None
    for user in list(inst.users):
        if is_dead(user) or ctx.pinned(user):
            continue
        ok = user.opcode in _PERMUTING or (user.opcode == "sort" and
                                           not user.shape.is_tuple)
        if user.opcode in ("slice", "dynamic-slice"):
            ok = user.operands[0] is inst and user.operands.count(inst) == 1
        if not ok:
            continue
        ctx.b.before = user
        new = ctx.b.broadcast(x, user.shape.dims, ())
        user.replace_all_uses_with(new)
        remove_instruction_and_unused_operands(user)
        return True
    return None


@rule("broadcast", "broadcast(iota) => iota")
def _bcast_iota(inst, ctx):
    x = inst.operands[0]
    if is_scalar(x) or x.opcode != "iota":
        return None
    d = _dims(inst)[x.attrs["iota_dimension"]]
    return ctx.b.iota(inst.shape.dtype, inst.shape.dims, d)


@rule("broadcast", "broadcast(broadcast(X)) => broadcast(X)")
def _bcast_bcast(inst, ctx):
    x = inst.operands[0]
    if is_scalar(x) or x.opcode != "broadcast":
        return None
    dims = _dims(inst)
    return ctx.b.broadcast(x.operands[0], inst.shape.dims, [dims[d] for d in _dims(x)])


@rule("broadcast", "broadcast(X) => broadcast(reshape(X)) dropping X's size-1 dimensions")
def _bcast_degenerate(inst, ctx):
    x = inst.operands[0]
    if is_scalar(x) or 1 not in x.shape.dims:
        return None
    keep = [i for i, n in enumerate(x.shape.dims) if n != 1]
    r = ctx.b.reshape(x, [x.shape.dims[i] for i in keep])
    dims = _dims(inst)
    return ctx.b.broadcast(r, inst.shape.dims, [dims[i] for i in keep])


# ---------------------------------------------------------------------------
# reshape

@rule("reshape", "reshape(X) => constant {} when the result has no elements")
def _reshape_empty(inst, ctx):
    if not is_zero_element(inst.shape):
        return None
    return ctx.b.constant(inst.shape.dtype, np.zeros(inst.shape.dims, inst.shape.dtype.np),
                          inst.shape.dims)


@rule("reshape", "reshape(X) => X when the shape does not change")
def _reshape_noop(inst, ctx):
    x = inst.operands[0]
    return x if same(inst, x) else None


@rule("reshape", "reshape(reshape(X)) => reshape(X)")
def _reshape_reshape(inst, ctx):
    x = inst.operands[0]
    if x.opcode == "reshape":
        return ctx.b.reshape(x.operands[0], inst.shape.dims)
    return None


@rule("reshape", "reshape(broadcast(X)) => broadcast(X) when X's dimensions survive")
def _reshape_bcast(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "broadcast":
        return None
    dims = reshape_leaves_dims_unmodified(x.shape.dims, inst.shape.dims, _dims(x))
    if dims is None:
        return None
    return ctx.b.broadcast(x.operands[0], inst.shape.dims, dims)


@rule("reshape", "reshape(iota) => iota (or a mixed-radix sum of iotas for integers)")
def _reshape_iota(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "iota":
        return None
    cf = common_factors(x.shape.dims, inst.shape.dims)
    idim = x.attrs["iota_dimension"]
    k = next((k for k, (a, b) in enumerate(cf) if a == idim and b < inst.shape.rank
              and inst.shape.dims[b] > 1), None)
    nxt = next((p for p in cf if p[0] == idim + 1), None)
    if k is None or nxt is None or k + 1 >= len(cf):
        return None
    lo, hi = cf[k][1], cf[k + 1][1]
    if hi - lo > 1 and not inst.shape.dtype.is_integral:
        return None
    result = None
    mult = 1
    for d in range(hi - 1, lo - 1, -1):
        it = ctx.b.iota(inst.shape.dtype, inst.shape.dims, d)
        if result is None:
            result = it
        else:
            scaled = ctx.b.add("multiply", inst.shape, [it, ctx.b.scalar_like(inst, mult)])
            result = ctx.b.add("add", inst.shape, [result, scaled])
        mult *= inst.shape.dims[d]
    return result


# ---------------------------------------------------------------------------
# transpose

@rule("transpose", "transpose(X) => X for an identity permutation")
def _transpose_noop(inst, ctx):
    x = inst.operands[0]
    d = _dims(inst)
    return x if list(d) == sorted(d) and same(inst, x) else None


@rule("transpose", "transpose(transpose(X)) => transpose(X) with the composed permutation")
def _transpose_transpose(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "transpose":
        return None
    return ctx.b.transpose(x.operands[0], compose_permutations(_dims(x), _dims(inst)))


def _is_perm_of_iota(v) -> bool:
    return sorted(v) == list(range(len(v)))


@rule("transpose", "transpose(dot(A, B)) => dot(B, A) for a canonical dot and a swap of "
                   "its last two dimensions")
def _transpose_dot(inst, ctx):
    d = inst.operands[0]
    if d.opcode != "dot" or len(d.users) != 1:
        return None
    lhs, rhs = d.operands
    a = d.attrs
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    if lb != rb or not _is_perm_of_iota(lb) or not lc or not rc or \
            len(lc) + len(lb) + 1 != lhs.shape.rank or len(rc) + len(rb) + 1 != rhs.shape.rank:
        return None
    rank = d.shape.rank
    expected = list(range(rank))
    expected[-1], expected[-2] = expected[-2], expected[-1]
    if list(_dims(inst)) != expected:
        return None
    attrs = dict(a)
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = rc, lc
    prec = a.get("operand_precision")
    if prec is not None and len(prec) == 2:
        attrs["operand_precision"] = (prec[1], prec[0])
    for key in ("metadata", "frontend_attributes", "sharding"):
        attrs.pop(key, None)
    return ctx.b.add("dot", inst.shape, [rhs, lhs], attrs)


@rule("transpose", "transpose(X) => reshape(X) when it only moves size-1 dimensions")
def _transpose_degenerate(inst, ctx):
    x = inst.operands[0]
    perm = _dims(inst)
    kept = [p for i, p in enumerate(perm) if inst.shape.dims[i] != 1]
    if len(kept) < len(perm) and kept == sorted(kept):
        return ctx.b.reshape(x, inst.shape.dims)
    return None


def transposed_broadcast(ctx, inst, perm):
    """SimplifyTransposeOfBroadcast: broadcast(x) permuted => broadcast(x) when the
    relative order of x's dimensions is kept."""
    b = inst.operands[0]
    if b.opcode != "broadcast" or list(_dims(b)) != sorted(_dims(b)):
        return None
    inv = inverse_permutation(perm)
    new = [inv[d] for d in _dims(b)]
    if new != sorted(new):
        return None
    return ctx.b.broadcast(b.operands[0], inst.shape.dims, new)


@rule("transpose", "transpose(broadcast(X)) => broadcast(X) when X's order is kept")
def _transpose_bcast(inst, ctx):
    return transposed_broadcast(ctx, inst, _dims(inst))


# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------
# pad, reverse, copy, get-tuple-element

@rule("pad", "pad(X, v) => broadcast(v) when X has no elements")
def _pad_empty(inst, ctx):
    x, v = inst.operands
    return ctx.b.broadcast(v, inst.shape.dims, ()) if is_zero_element(x.shape) else None


@rule("pad", "interior padding of size-1 dimensions => none")
def _pad_interior(inst, ctx):
    x, v = inst.operands
    cfg = inst.attrs["padding"]
    new = tuple((lo, hi, 0 if (it > 0 and x.shape.dims[i] == 1) else it)
                for i, (lo, hi, it) in enumerate(cfg))
    if new == tuple(tuple(c) for c in cfg):
        return None
    return ctx.b.add("pad", inst.shape, [x, v], {"padding": new})


@rule("pad", "pad(X) => X with no edge padding")
def _pad_noop(inst, ctx):
    x, v = inst.operands
    if all(lo == 0 and hi == 0 for lo, hi, _ in inst.attrs["padding"]) and same(inst, x):
        return x
    return None


@rule("pad", "pad with negative edges => pad with the non-negative part + slice")
def _pad_negative(inst, ctx):
    x, v = inst.operands
    cfg = inst.attrs["padding"]
    if not any(lo < 0 or hi < 0 for lo, hi, _ in cfg):
        return None
    pos = tuple((max(lo, 0), max(hi, 0), it) for lo, hi, it in cfg)
    p = ctx.b.infer("pad", [x, v], {"padding": pos})
    starts = [-lo if lo < 0 else 0 for lo, _, _ in cfg]
    limits = [p.shape.dims[i] + (hi if hi < 0 else 0) for i, (_, hi, _) in enumerate(cfg)]
    return ctx.b.slice(p, starts, limits)


@rule("reverse", "reverse(X) => X when every reversed dimension has size 1")
def _reverse_noop(inst, ctx):
    x = inst.operands[0]
    if all(inst.shape.dims[d] == 1 for d in _dims(inst)) and same(inst, x):
        return x
    return None


@rule("reverse", "reverse(reverse(X)) => X (or a reverse of the symmetric difference)")
def _reverse_reverse(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "reverse":
        return None
    diff = sorted(set(_dims(inst)) ^ set(_dims(x)))
    if not diff:
        return x.operands[0] if same(inst, x.operands[0]) else None
    return ctx.b.add("reverse", inst.shape, [x.operands[0]], {"dimensions": tuple(diff)})


@rule("copy", "copy(copy(X)) => copy(X), or X when the shapes are equal")
def _copy_copy(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "copy":
        return None
    if x.operands[0].shape == inst.shape:
        return x.operands[0]
    return ctx.b.add("copy", inst.shape, [x.operands[0]])


@rule("copy", "copy(X) => X (layout-insensitive)")
def _copy_noop(inst, ctx):
    x = inst.operands[0]
    if "sharding" in inst.attrs and ctx.module.entry is not None and \
            ctx.module.entry.root is inst:
        return None
    if inst.shape != x.shape and any(u.opcode == "bitcast" for u in inst.users):
        return None                         # a bitcast reads the copy's layout
    return x if same(inst, x) else None


@rule("get-tuple-element", "get-tuple-element(tuple(..., A_i, ...), i) => A_i")
def _gte_tuple(inst, ctx):
    t = inst.operands[0]
    if t.opcode != "tuple":
        return None
    x = t.operands[inst.attrs["index"]]
    return x if same(inst, x) else None


# ---------------------------------------------------------------------------
