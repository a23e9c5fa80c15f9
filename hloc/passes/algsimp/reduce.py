"""algsimp rules for reduce, dot, constants and the remaining structural ops (iota,
sort, scatter, gather).

Each rule is XLA's (HandleReduce, HandleDot, HandleConstant, ...), in XLA's order.
XLA:CPU runs without dot strength reduction, so a dot is only rewritten when it has no
contracting dimensions (a multiply), no elements, or size-1 dimensions to drop.
"""
from __future__ import annotations

import numpy as np

from ...ir.shape import ArrayShape, TupleShape, array
from ...ops import REGISTRY
from .rules import (dims_unmodified_by_reshape, is_const_effective_scalar,
                            is_float, is_int, param_root, rule, same)
from ..simplify_util import constant_array, is_all, is_zero_element


def _dims(inst):
    return tuple(inst.attrs.get("dimensions", ()))


def _split(reduce):
    n = len(reduce.operands) // 2
    return reduce.operands[:n], reduce.operands[n:]


def _result_shape(reduce):
    s = reduce.shape
    return s.elements[0] if isinstance(s, TupleShape) else s


def _delete_dims(shape: ArrayShape, dims):
    return [n for i, n in enumerate(shape.dims) if i not in set(dims)]


# ---------------------------------------------------------------------------
# reduce

@rule("reduce", "reduce(X) => broadcast(init) when X or the result has no elements")
def _reduce_empty(inst, ctx):
    inputs, inits = _split(inst)
    if not (is_zero_element(inputs[0].shape) or is_zero_element(_result_shape(inst))):
        return None
    if isinstance(inst.shape, TupleShape):
        return ctx.b.tuple([ctx.b.broadcast(i, s.dims, ())
                            for i, s in zip(inits, inst.shape.elements)])
    return ctx.b.broadcast(inits[0], inst.shape.dims, ())


@rule("reduce", "reduce(X) => reshape(X) when nothing is reduced (init is the identity)")
def _reduce_reshape(inst, ctx):
    inputs, _ = _split(inst)
    if _result_shape(inst).size != inputs[0].shape.size:
        return None
    if isinstance(inst.shape, TupleShape):
        return ctx.b.tuple([ctx.b.reshape(x, s.dims)
                            for x, s in zip(inputs, inst.shape.elements)])
    return ctx.b.reshape(inputs[0], inst.shape.dims)


@rule("reduce", "reduce(-X, 0, add) => -reduce(X, 0, add) for floats")
def _reduce_negate(inst, ctx):
    if len(inst.operands) != 2 or not is_float(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "negate" or not is_const_effective_scalar(init) or \
            not is_all(init, 0) or not param_root(inst.attrs["to_apply"], "add"):
        return None
    users = list(inst.users)
    was_root = ctx.comp.root is inst
    inst.set_operand(0, arg.operands[0])
    ctx.b.before, ctx.b.after = None, inst
    neg = ctx.b.add("negate", inst.shape, [inst])
    for u in users:
        for k, o in enumerate(u.operands):
            if o is inst:
                u.set_operand(k, neg)
    if was_root:
        ctx.comp.set_root_instruction(neg)
    return True


def _single(inst) -> bool:
    return not isinstance(inst.shape, TupleShape)


@rule("reduce", "reduce(transpose(X)) => reduce(X) (transposed back when needed)")
def _reduce_transpose(inst, ctx):
    if not _single(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "transpose":
        return None
    if not (inst.shape.rank < 2 or len(arg.users) == 1 or
            all(u.opcode == "reduce" for u in arg.users)):
        return None
    perm = _dims(arg)
    new_dims = [perm[d] for d in _dims(inst)]
    x = arg.operands[0]
    new = ctx.b.add("reduce", _shape(inst, _delete_dims(x.shape, new_dims)), [x, init],
                    {"dimensions": tuple(new_dims), "to_apply": inst.attrs["to_apply"]})
    rest = [d for d in perm if d not in new_dims]
    if rest == sorted(rest):
        return new
    adj = [d - sum(1 for r in new_dims if d > r) for d in rest]
    return ctx.b.transpose(new, adj)


def _shape(inst, dims):
    return array(_result_shape(inst).dtype, dims)


def _identical_init(a, b) -> bool:
    if a is b:
        return True
    if a.opcode == "constant" and b.opcode == "constant" and a.shape == b.shape:
        return bool(np.array_equal(constant_array(a), constant_array(b)))
    return False


def _reducer_kind(comp):
    for op in ("add", "multiply", "and", "or"):
        if param_root(comp, op) and len(comp.parameters) == 2:
            return op
    return None


@rule("reduce", "reduce(reduce(X, dims1), dims2) => reduce(X, dims1 + dims2)")
def _reduce_reduce(inst, ctx):
    if not _single(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "reduce" or len(arg.operands) != 2 or \
            not _identical_init(init, arg.operands[1]):
        return None
    f, g = inst.attrs["to_apply"], arg.attrs["to_apply"]
    if f is not g and (_reducer_kind(f) is None or _reducer_kind(f) != _reducer_kind(g)):
        return None
    inner = sorted(_dims(arg))
    outer = sorted(_dims(inst))
    for a in inner:
        outer = [d + 1 if d >= a else d for d in outer]
    new_dims = tuple(sorted(inner + outer))
    return ctx.b.add("reduce", inst.shape, [arg.operands[0], init],
                     {"dimensions": new_dims, "to_apply": f})


@rule("reduce", "reduce(reshape(X)) => reduce(X) or reshape(reduce(X)) when the reshape "
                "only touches reduced (or only kept) dimensions")
def _reduce_reshape_arg(inst, ctx):
    if not _single(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "reshape":
        return None
    x = arg.operands[0]
    unmodified = dims_unmodified_by_reshape(x.shape.dims, arg.shape.dims)
    reduced = set(_dims(inst))
    in_output = [i not in reduced for i in range(arg.shape.rank)]
    unmod = [False] * arg.shape.rank
    for _, out in unmodified:
        unmod[out] = True
    f = inst.attrs["to_apply"]
    if all(unmod[i] or not in_output[i] for i in range(arg.shape.rank)):
        keep = {a for a, b in unmodified if in_output[b]}
        new_dims = tuple(i for i in range(x.shape.rank) if i not in keep)
        return ctx.b.add("reduce", inst.shape, [x, init],
                         {"dimensions": new_dims, "to_apply": f})
    if len(arg.users) == 1 and all(unmod[d] for d in _dims(inst)):
        new_dims = tuple(next(a for a, b in unmodified if b == d) for d in _dims(inst))
        r = ctx.b.add("reduce", _shape(inst, _delete_dims(x.shape, new_dims)), [x, init],
                      {"dimensions": new_dims, "to_apply": f,
                       **({"metadata": inst.attrs["metadata"]}
                          if "metadata" in inst.attrs else {})})
        return ctx.b.reshape(r, inst.shape.dims)
    return None


@rule("reduce", "reduce(broadcast(s), init, min|max|and|or) over everything => op(s, init)")
def _reduce_bcast_scalar(inst, ctx):
    if not _single(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "broadcast" or arg.operands[0].shape.rank != 0:
        return None
    f = inst.attrs["to_apply"]
    op = next((o for o in ("maximum", "minimum", "and", "or") if param_root(f, o)), None)
    if op is None or len(_dims(inst)) != arg.shape.rank:
        return None
    return ctx.b.add(op, inst.shape, [arg.operands[0], init])


@rule("reduce", "reduce(broadcast(X)) over X's own dimensions => broadcast(reduce(X))")
def _reduce_bcast_first(inst, ctx):
    if not _single(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "broadcast":
        return None
    bdims = list(_dims(arg))
    if not all(d in bdims for d in _dims(inst)):
        return None
    new_dims = [bdims.index(d) for d in _dims(inst)]
    x = arg.operands[0]
    r = ctx.b.add("reduce", _shape(inst, _delete_dims(x.shape, new_dims)), [x, init],
                  {"dimensions": tuple(new_dims), "to_apply": inst.attrs["to_apply"]})
    out_dims = []
    for od in range(x.shape.rank):
        if od in new_dims:
            continue
        bd = bdims[od]
        out_dims.append(bd - sum(1 for d in _dims(inst) if d < bd))
    return ctx.b.broadcast(r, inst.shape.dims, out_dims)


@rule("reduce", "reduce(broadcast(X), init, add) over broadcast-only dimensions => "
                "broadcast(init + X * n), integers only")
def _reduce_bcast_sum(inst, ctx):
    if not _single(inst) or not is_int(inst):
        return None
    arg, init = inst.operands
    if arg.opcode != "broadcast" or not param_root(inst.attrs["to_apply"], "add"):
        return None
    bdims = _dims(arg)
    if list(bdims) != sorted(bdims):
        return None
    reduced = set(_dims(inst))
    n = 1
    new_shape, new_bdims, common = [], [], 0
    for i, size in enumerate(arg.shape.dims):
        added = i not in bdims
        if i in reduced and not added:
            return None
        if i in reduced:
            n *= size
            common += 1
        else:
            new_shape.append(size)
            if not added:
                new_bdims.append(i - common)
    x = arg.operands[0]
    scaled = ctx.b.binary("multiply", x, ctx.b.scalar_like(x, n))
    total = ctx.b.binary("add", ctx.b.broadcast(init, scaled.shape.dims, ()), scaled)
    return ctx.b.broadcast(total, new_shape, new_bdims)


# ---------------------------------------------------------------------------
# dot

def _dnums(dot):
    a = dot.attrs
    return (tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ())),
            tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ())))


@rule("dot", "dot with no elements => broadcast(0)")
def _dot_empty(inst, ctx):
    lhs, rhs = inst.operands
    if any(is_zero_element(s) for s in (inst.shape, lhs.shape, rhs.shape)):
        zero = ctx.b.constant(inst.shape.dtype, 0)
        return ctx.b.broadcast(zero, inst.shape.dims, ())
    return None


def _normalize(ctx, x, batch, contracting):
    perm = list(batch) + [i for i in range(x.shape.rank)
                          if i not in batch and i not in contracting] + list(contracting)
    return x if perm == sorted(perm) else ctx.b.transpose(x, perm)


@rule("dot", "dot without contracting dimensions => multiply(broadcast(A), broadcast(B))")
def _dot_outer(inst, ctx):
    lb, lc, rb, rc = _dnums(inst)
    if lc or inst.attrs.get("algorithm", "unset") != "unset":
        return None
    lhs, rhs = inst.operands
    a = _normalize(ctx, lhs, lb, lc)
    if a.shape.dtype is not inst.shape.dtype:
        a = ctx.b.convert(a, inst.shape.dtype)
    b = _normalize(ctx, rhs, rb, rc)
    if b.shape.dtype is not inst.shape.dtype:
        b = ctx.b.convert(b, inst.shape.dtype)
    if inst.shape.rank != lhs.shape.rank:
        a = ctx.b.broadcast(a, inst.shape.dims, range(lhs.shape.rank))
    if inst.shape.rank != rhs.shape.rank:
        dims = list(range(len(lb))) + list(range(lhs.shape.rank, inst.shape.rank))
        b = ctx.b.broadcast(b, inst.shape.dims, dims)
    return ctx.b.add("multiply", inst.shape, [a, b])


@rule("dot", "dot(A, B) => dot(reshape(A), reshape(B)) without size-1 dimensions")
def _dot_degenerate(inst, ctx):
    lhs, rhs = inst.operands
    if 1 not in lhs.shape.dims and 1 not in rhs.shape.dims:
        return None
    lb, lc, rb, rc = _dnums(inst)

    def remap(shape):
        out, k = [], 0
        for n in shape.dims:
            out.append(-1 if n == 1 else k)
            k += n != 1
        return out

    lm, rm = remap(lhs.shape), remap(rhs.shape)
    attrs = {k: v for k, v in inst.attrs.items()
             if k not in ("metadata", "frontend_attributes", "sharding")}
    attrs["lhs_batch_dims"] = tuple(lm[d] for d in lb if lm[d] != -1)
    attrs["lhs_contracting_dims"] = tuple(lm[d] for d in lc if lm[d] != -1)
    attrs["rhs_batch_dims"] = tuple(rm[d] for d in rb if rm[d] != -1)
    attrs["rhs_contracting_dims"] = tuple(rm[d] for d in rc if rm[d] != -1)
    for key in ("lhs_batch_dims", "rhs_batch_dims"):
        if not attrs[key]:
            del attrs[key]
    new_l = ctx.b.reshape(lhs, [n for n in lhs.shape.dims if n != 1]) \
        if 1 in lhs.shape.dims else lhs
    new_r = ctx.b.reshape(rhs, [n for n in rhs.shape.dims if n != 1]) \
        if 1 in rhs.shape.dims else rhs
    shape = REGISTRY["dot"].infer([new_l.shape, new_r.shape], attrs, None)
    shape = shape.with_dtype(inst.shape.dtype)
    for key in ("metadata", "frontend_attributes"):
        if key in inst.attrs:
            attrs[key] = inst.attrs[key]
    new = ctx.b.add("dot", shape, [new_l, new_r], attrs)
    if same(new, inst):
        return new
    return ctx.b.reshape(new, inst.shape.dims)


# ---------------------------------------------------------------------------
# constants, iota, sort, scatter, gather

@rule("constant", "tuple constant => tuple(constants)")
def _const_tuple(inst, ctx):
    if not isinstance(inst.shape, TupleShape):
        return None

    def build(shape, value):
        if isinstance(shape, TupleShape):
            return ctx.b.tuple([build(s, v) for s, v in zip(shape.elements, value)])
        return ctx.b.constant(shape.dtype, value, shape.dims)

    return build(inst.shape, inst.literal.value)


@rule("constant", "constant {c, c, ..., c} => broadcast(c)")
def _const_splat(inst, ctx):
    arr = constant_array(inst)
    if arr is None or arr.size <= 1 or not inst.shape.dtype.is_array:
        return None
    flat = arr.reshape(-1)
    first = flat[0]
    if inst.shape.dtype.kind in ("float", "complex"):
        eq = flat.view(np.uint8).reshape(flat.size, -1)
        if not np.all(eq == eq[0]):
            return None
    elif not np.all(flat == first):
        return None
    c = ctx.b.constant(inst.shape.dtype, first)
    return ctx.b.broadcast(c, inst.shape.dims, ())


@rule("constant", "constant {0, 1, ..., n-1} => iota; {0, k, 2k, ...} => iota * k")
def _const_iota(inst, ctx):
    arr = constant_array(inst)
    if arr is None or arr.ndim != 1 or arr.size <= 1 or inst.shape.dtype.kind == "pred":
        return None
    n = arr.size
    with np.errstate(all="ignore"):
        if np.array_equal(arr, np.arange(n).astype(arr.dtype)):
            return ctx.b.iota(inst.shape.dtype, inst.shape.dims, 0)
    if not inst.shape.dtype.is_integral:
        return None
    vals = arr.astype(object)
    stride = int(vals[1])
    if vals[0] != 0 or stride in (0, 1) or any(int(v) != i * stride for i, v in enumerate(vals)):
        return None
    iota = ctx.b.iota(inst.shape.dtype, inst.shape.dims, 0)
    return ctx.b.add("multiply", inst.shape, [iota, ctx.b.scalar_like(inst, stride)])


@rule("iota", "iota along a dimension of size <= 1 => 0")
def _iota_trivial(inst, ctx):
    if inst.shape.dims[inst.attrs["iota_dimension"]] <= 1:
        return ctx.b.scalar_like(inst, 0)
    return None


@rule("sort", "sort along a dimension of size <= 1 => its operands")
def _sort_trivial(inst, ctx):
    x = inst.operands[0]
    d = inst.attrs["dimensions"][0]
    if not (is_zero_element(x.shape) or x.shape.dims[d] <= 1):
        return None
    if len(inst.operands) == 1:
        return x
    return ctx.b.tuple(inst.operands)


@rule("scatter", "scatter with empty updates => its operands")
def _scatter_empty(inst, ctx):
    n = len(inst.operands) // 2
    ops, updates = inst.operands[:n], inst.operands[n + 1:]
    if not all(is_zero_element(u.shape) for u in updates):
        return None
    repl = ops[0] if n == 1 else ctx.b.tuple(ops)
    return repl if same(inst, repl) else None


@rule("gather", "gather from an empty operand => 0; from a scalar => broadcast")
def _gather_trivial(inst, ctx):
    x = inst.operands[0]
    if is_zero_element(x.shape):
        return ctx.b.scalar_like(inst, 0)
    if x.shape.size == 1:
        s = x if x.shape.rank == 0 else ctx.b.reshape(x, ())
        return ctx.b.broadcast(s, inst.shape.dims, ())
    return None

