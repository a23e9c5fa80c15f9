"""algsimp rules for slicing and joining: slice, concatenate, dynamic-slice and
dynamic-update-slice (XLA's HandleSlice, HandleConcatenate, HandleDynamicSlice,
HandleDynamicUpdateSlice), in XLA's order. None changes a value.
"""
from __future__ import annotations

from .rules import bcast_of, inverse_permutation, is_const, is_scalar, rule, same
from ..simplify_util import is_all, is_zero_element, scalar_value


def _dims(inst):
    return tuple(inst.attrs.get("dimensions", ()))


def _slice_spec(inst):
    return [tuple(s) for s in inst.attrs["slice"]]


def _unstrided(inst) -> bool:
    return all(st == 1 for _, _, st in _slice_spec(inst))


# ---------------------------------------------------------------------------
# slice

@rule("slice", "slice(X) => X when nothing is sliced away")
def _slice_noop(inst, ctx):
    x = inst.operands[0]
    return x if same(inst, x) else None


@rule("slice", "slice(pad(X, v)) => broadcast(v) | X | slice(X) when it reads only "
               "padding, undoes the pad, or stays inside X")
def _slice_pad(inst, ctx):
    pad = inst.operands[0]
    if pad.opcode != "pad":
        return None
    x, value = pad.operands
    undoes, inside = True, True
    starts, limits = [], []
    for i, (s, lim, st) in enumerate(_slice_spec(inst)):
        lo, hi, interior = pad.attrs["padding"][i]
        edge = pad.shape.dims[i] - hi
        if lim <= lo or s >= edge:
            return ctx.b.broadcast(value, inst.shape.dims, ())
        if s != lo or st - 1 != interior:
            undoes = False
        if s < lo or lim > edge or interior != 0 or st != 1:
            inside = False
        starts.append(s - lo)
        limits.append(lim - lo)
    if undoes and same(inst, x):
        return x
    if inside:
        strides = [st for _, _, st in _slice_spec(inst)]
        return ctx.b.slice(x, starts, limits, strides)
    return None


@rule("slice", "slice(slice(X)) => slice(X) for unstrided slices")
def _slice_slice(inst, ctx):
    x = inst.operands[0]
    if x.opcode != "slice" or not _unstrided(inst) or not _unstrided(x):
        return None
    outer = _slice_spec(x)
    spec = _slice_spec(inst)
    starts = [s + o[0] for (s, _, _), o in zip(spec, outer)]
    limits = [lim + o[0] for (_, lim, _), o in zip(spec, outer)]
    return ctx.b.slice(x.operands[0], starts, limits)


@rule("slice", "slice(broadcast(X)) => broadcast(slice(X)) (or broadcast(X) when only "
               "broadcast dimensions are sliced)")
def _slice_bcast(inst, ctx):
    b = inst.operands[0]
    if b.opcode != "broadcast":
        return None
    x = b.operands[0]
    spec = _slice_spec(inst)
    dims = _dims(b)
    if all(spec[d][0] == 0 and spec[d][2] == 1 and spec[d][1] == b.shape.dims[d]
           for d in dims):
        return ctx.b.broadcast(x, inst.shape.dims, dims)
    sub = [spec[d] for d in dims]
    new = ctx.b.slice(x, [s for s, _, _ in sub], [lim for _, lim, _ in sub],
                      [st for _, _, st in sub])
    return ctx.b.broadcast(new, inst.shape.dims, dims)


def _scalar_slice_of_concat(inst):
    c = inst.operands[0]
    if inst.shape.size != 1 or c.opcode != "concatenate" or inst.shape.rank != 1:
        return None
    start = _slice_spec(inst)[0][0]
    pos = 0
    for k, o in enumerate(c.operands):
        if pos + o.shape.dims[0] > start:
            return k, pos
        pos += o.shape.dims[0]
    return None


@rule("slice", "slice(concat(..., X, ...)) => X | slice(X) | slice(concat(fewer))")
def _slice_concat(inst, ctx):
    c = inst.operands[0]
    found = _scalar_slice_of_concat(inst)
    if found is not None:
        k, pos = found
        o = c.operands[k]
        if same(inst, o):
            return o
        s = _slice_spec(inst)[0][0] - pos
        return ctx.b.slice(o, [s], [s + 1], [_slice_spec(inst)[0][2]])
    if c.opcode != "concatenate" or not _unstrided(inst):
        return None
    cd = _dims(c)[0]
    s0, l0, _ = _slice_spec(inst)[cd]
    piece = 0
    start_op = limit_op = None
    cstart = 0
    for i, o in enumerate(c.operands):
        size = o.shape.dims[cd]
        if start_op is None and piece <= s0 < piece + size:
            start_op, cstart = i, piece
        piece += size
        if limit_op is None and piece >= l0:
            limit_op = i + 1
            break
    if start_op is None or limit_op is None:
        return None
    if start_op + 1 == limit_op and same(c.operands[start_op], inst):
        return c.operands[start_op]
    if limit_op - start_op >= len(c.operands):
        return None
    spec = _slice_spec(inst)
    starts = [s for s, _, _ in spec]
    limits = [lim for _, lim, _ in spec]
    starts[cd] -= cstart
    limits[cd] = starts[cd] + inst.shape.dims[cd]
    operand = c.operands[start_op]
    if start_op + 1 != limit_op:
        operand = ctx.b.infer("concatenate", c.operands[start_op:limit_op],
                              {"dimensions": (cd,)})
    return ctx.b.slice(operand, starts, limits)


@rule("slice", "slice with a stride that reaches one element => stride 1")
def _slice_redundant_stride(inst, ctx):
    spec = _slice_spec(inst)
    change = [i for i, (s, lim, st) in enumerate(spec) if st != 1 and (st >= lim or
                                                                       s + st >= lim)]
    if not change:
        return None
    starts = [s for s, _, _ in spec]
    limits = [s + 1 if i in change else lim for i, (s, lim, _) in enumerate(spec)]
    strides = [1 if i in change else st for i, (_, _, st) in enumerate(spec)]
    return ctx.b.slice(inst.operands[0], starts, limits, strides)


# ---------------------------------------------------------------------------
# concatenate

@rule("concatenate", "concatenate(X) => X")
def _concat_one(inst, ctx):
    return inst.operands[0] if len(inst.operands) == 1 and same(inst, inst.operands[0]) \
        else None


@rule("concatenate", "concat(X, empty, Y) => concat(X, Y) (operands without elements dropped)")
def _concat_empty(inst, ctx):
    keep = [o for o in inst.operands if not is_zero_element(o.shape)]
    if len(keep) == len(inst.operands):
        return None
    if not keep:
        repl = inst.operands[0]
    elif len(keep) == 1:
        repl = keep[0]
    else:
        repl = ctx.b.add("concatenate", inst.shape, keep, {"dimensions": _dims(inst)})
    return repl if same(inst, repl) else None


@rule("concatenate", "concat(x, concat(y, z)) => concat(x, y, z) on the same dimension")
def _concat_flatten(inst, ctx):
    ops = []
    for o in inst.operands:
        if o.opcode == "concatenate" and _dims(o) == _dims(inst):
            ops.extend(o.operands)
        else:
            ops.append(o)
    if len(ops) == len(inst.operands):
        return None
    return ctx.b.add("concatenate", inst.shape, ops, {"dimensions": _dims(inst)})


@rule("concatenate", "concat(slice(X), slice(X)) of adjacent unstrided slices => slice(X)")
def _concat_slices(inst, ctx):
    cd = _dims(inst)[0]
    ops = inst.operands
    new_ops = []
    i = 0
    merged = False
    while i < len(ops):
        o = ops[i]
        if o.opcode != "slice" or not _unstrided(o):
            new_ops.append(o)
            i += 1
            continue
        spec = _slice_spec(o)
        end = spec[cd][1]
        j = i + 1
        while j < len(ops):
            n = ops[j]
            if n.opcode != "slice" or not _unstrided(n) or n.operands[0] is not \
                    o.operands[0] or _slice_spec(n)[cd][0] != end:
                break
            if any(_slice_spec(n)[k][0] != spec[k][0] for k in range(len(spec)) if k != cd):
                break
            end = _slice_spec(n)[cd][1]
            j += 1
        if j - i > 1:
            starts = [s for s, _, _ in spec]
            limits = [lim for _, lim, _ in spec]
            limits[cd] = end
            new_ops.append(ctx.b.slice(o.operands[0], starts, limits))
            merged = True
        else:
            new_ops.append(o)
        i = j
    if not merged:
        return None
    if len(new_ops) == 1:
        return new_ops[0] if same(inst, new_ops[0]) else None
    return ctx.b.add("concatenate", inst.shape, new_ops, {"dimensions": _dims(inst)})


@rule("concatenate", "concat(X, broadcast(s)) => pad(X, s) (and the low-side form)")
def _concat_pad(inst, ctx):
    if len(inst.operands) != 2:
        return None
    a, b = inst.operands
    low = bcast_of(a, is_scalar) is not None
    high = bcast_of(b, is_scalar) is not None
    if not low and not high:
        return None
    cd = _dims(inst)[0]
    cfg = []
    for d in range(inst.shape.rank):
        if d == cd:
            cfg.append((a.shape.dims[d], 0, 0) if low else (0, b.shape.dims[d], 0))
        else:
            cfg.append((0, 0, 0))
    x, value = (b, a.operands[0]) if low else (a, b.operands[0])
    return ctx.b.add("pad", inst.shape, [x, value], {"padding": tuple(cfg)})


@rule("concatenate", "concat(X, X, ..., X) with size-1 dimension => broadcast(reshape(X))")
def _concat_same(inst, ctx):
    x = inst.operands[0]
    cd = _dims(inst)[0]
    if any(o is not x for o in inst.operands) or x.shape.dims[cd] != 1:
        return None
    keep = [i for i in range(x.shape.rank) if i != cd]
    r = ctx.b.reshape(x, [x.shape.dims[i] for i in keep])
    return ctx.b.broadcast(r, inst.shape.dims, keep)


# ---------------------------------------------------------------------------
# dynamic-slice, dynamic-update-slice

@rule("dynamic-slice", "dynamic-slice(X) => X when the slice is all of X")
def _ds_noop(inst, ctx):
    x = inst.operands[0]
    return x if same(inst, x) else None


@rule("dynamic-slice", "start index of a full-size dimension => 0")
def _ds_full_dims(inst, ctx):
    x, *idx = inst.operands
    if not idx or idx[0].shape.rank != 0:
        return None
    dims = [d for d in range(x.shape.rank) if x.shape.dims[d] == inst.shape.dims[d]
            and not (is_const(idx[d]) and is_all(idx[d], 0))]
    if not dims:
        return None
    zero = ctx.b.scalar_like(idx[0], 0)
    new_idx = [zero if d in dims else i for d, i in enumerate(idx)]
    return ctx.b.add("dynamic-slice", inst.shape, [x, *new_idx], dict(inst.attrs))


@rule("dynamic-slice", "dynamic-slice(broadcast(X)) => broadcast(dynamic-slice(X))")
def _ds_bcast(inst, ctx):
    b, *idx = inst.operands
    if b.opcode != "broadcast" or not idx or idx[0].shape.rank != 0:
        return None
    sizes = inst.attrs["dynamic_slice_sizes"]
    dims = _dims(b)
    new = b.operands[0]
    if dims:
        new = ctx.b.dynamic_slice(new, [idx[d] for d in dims], [sizes[d] for d in dims])
    return ctx.b.broadcast(new, inst.shape.dims, dims)


@rule("dynamic-slice", "dynamic-slice(transpose(X)) => transpose(dynamic-slice(X))")
def _ds_transpose(inst, ctx):
    t, *idx = inst.operands
    if t.opcode != "transpose" or not idx or idx[0].shape.rank != 0:
        return None
    perm = _dims(t)
    inv = inverse_permutation(perm)
    sizes = inst.attrs["dynamic_slice_sizes"]
    new = ctx.b.dynamic_slice(t.operands[0], [idx[i] for i in inv], [sizes[i] for i in inv])
    return ctx.b.transpose(new, perm)


@rule("dynamic-slice", "dynamic-slice(X, constant indices) => slice(X)")
def _ds_const(inst, ctx):
    x, *idx = inst.operands
    if x.opcode == "constant" or not idx or idx[0].shape.rank != 0:
        return None
    if not all(i.opcode == "constant" and i.shape.dtype.is_integral for i in idx):
        return None
    starts = []
    for d, i in enumerate(idx):
        v = int(scalar_value(i))
        if v < 0:
            return None
        starts.append(min(x.shape.dims[d] - inst.shape.dims[d], v))
    return ctx.b.slice(x, starts, [s + n for s, n in zip(starts, inst.shape.dims)])


@rule("dynamic-update-slice", "dynamic-update-slice(X, U) => U when U covers X")
def _dus_full(inst, ctx):
    x, u, *idx = inst.operands
    return u if same(inst, u) else None


@rule("dynamic-update-slice", "start index of a full-size dimension => 0")
def _dus_full_dims(inst, ctx):
    x, u, *idx = inst.operands
    if not idx or idx[0].shape.rank != 0:
        return None
    dims = [d for d in range(u.shape.rank) if u.shape.dims[d] == inst.shape.dims[d]
            and not (is_const(idx[d]) and is_all(idx[d], 0))]
    if not dims:
        return None
    zero = ctx.b.scalar_like(idx[0], 0)
    new_idx = [zero if d in dims else i for d, i in enumerate(idx)]
    return ctx.b.add("dynamic-update-slice", inst.shape, [x, u, *new_idx], dict(inst.attrs))


@rule("dynamic-update-slice", "dynamic-update-slice(X, U) => X when U has no elements")
def _dus_empty(inst, ctx):
    x, u, *idx = inst.operands
    return x if is_zero_element(u.shape) and same(inst, x) else None
