"""Data movement: broadcast, reshape, transpose, reverse, slice, concatenate, pad, iota,
dynamic-slice, dynamic-update-slice, gather, scatter, dimension sizes, and the ops that
only pass values through (copy-start/-done, async-*, after-all, add-dependency,
opt-barrier, domain).

Semantics are HloEvaluator's (xla/hlo/evaluator/hlo_evaluator.cc): dynamic-slice and
dynamic-update-slice clamp their starts into [0, dim - size]; gather clamps each start
so the whole slice fits; scatter skips an update window entirely when any part of it
would fall outside the operand, and applies updates one at a time in the updates'
iteration order (scatter dims outer, window dims inner, each in layout order), so
repeated indices combine sequentially. Pad handles negative edges and interior padding
(interior first, then edges). Values are never modified in place.
"""
from __future__ import annotations

import numpy as np

from ..ir.shape import ArrayShape, TupleShape
from .core import TOKEN, evaluates
from .lanes import apply_computation, binary_root
from .reductions import update_rounds


def to_s64(x) -> np.ndarray:
    """Index values as int64 (unsigned 64-bit values wrap, like static_cast)."""
    x = np.asarray(x)
    return x if x.dtype == np.int64 else x.astype(np.int64)


def _attr(inst, name, default=None):
    v = inst.attrs.get(name)
    return default if v is None else v


# ---------------------------------------------------------------------------
# Shape-only ops

def broadcast_array(x: np.ndarray, out_dims, dims) -> np.ndarray:
    dims = tuple(dims)
    order = np.argsort(dims, kind="stable")
    xt = np.transpose(x, order) if x.ndim else x
    shape = [1] * len(out_dims)
    for i, d in enumerate(sorted(dims)):
        shape[d] = xt.shape[i]
    return np.broadcast_to(xt.reshape(shape), tuple(out_dims)).copy()


@evaluates("broadcast")
def _eval_broadcast(inst, operands, ctx):
    return broadcast_array(operands[0], inst.shape.dims, _attr(inst, "dimensions", ()))


@evaluates("reshape")
def _eval_reshape(inst, operands, ctx):
    return np.array(operands[0]).reshape(inst.shape.dims)


@evaluates("dynamic-reshape")
def _eval_dynamic_reshape(inst, operands, ctx):
    sizes = [int(to_s64(v)) for v in operands[1:]]
    if sizes != list(inst.shape.dims) or any(inst.operands[0].shape.dynamic):
        raise ctx.unsupported(inst, "dynamic-reshape to sizes below the bounds "
                                    "(dynamic dimension sizes are not tracked)")
    return np.array(operands[0]).reshape(inst.shape.dims)


@evaluates("transpose")
def _eval_transpose(inst, operands, ctx):
    return np.array(np.transpose(operands[0], inst.attrs["dimensions"]))


@evaluates("reverse")
def _eval_reverse(inst, operands, ctx):
    return np.flip(operands[0], axis=tuple(inst.attrs["dimensions"])).copy()


@evaluates("slice")
def _eval_slice(inst, operands, ctx):
    ranges = inst.attrs["slice"]
    return operands[0][tuple(slice(a, b, s) for a, b, s in ranges)].copy()


@evaluates("concatenate")
def _eval_concatenate(inst, operands, ctx):
    dim = inst.attrs["dimensions"][0]
    out = inst.shape.dims
    if any(np.ndim(o) != len(out) or np.shape(o)[:dim] + np.shape(o)[dim + 1:] !=
           out[:dim] + out[dim + 1:] for o in operands):
        raise ctx.unsupported(inst, f"concatenate into {inst.shape} of operands that differ "
                                    "in other dimensions (XLA's verifier rejects it)")
    return np.concatenate(operands, axis=dim)


def pad_array(x: np.ndarray, value, config) -> np.ndarray:
    """`config`: per dim (low, high, interior); low/high may be negative (they crop)."""
    out_dims = [lo + n + max(n - 1, 0) * interior + hi
                for n, (lo, hi, interior) in zip(x.shape, config)]
    out = np.full(out_dims, value, dtype=x.dtype)
    src, dst = [], []
    for n, m, (lo, hi, interior) in zip(x.shape, out_dims, config):
        step = interior + 1
        # Input index i lands at lo + i * step; keep those inside [0, m).
        i0 = (-lo + step - 1) // step if lo < 0 else 0
        i1 = min(n, (m - 1 - lo) // step + 1) if m - 1 - lo >= 0 else 0
        if i1 <= i0:
            return out
        src.append(slice(i0, i1))
        dst.append(slice(lo + i0 * step, lo + (i1 - 1) * step + 1, step))
    out[tuple(dst)] = x[tuple(src)]
    return out


@evaluates("pad")
def _eval_pad(inst, operands, ctx):
    return pad_array(operands[0], operands[1], inst.attrs["padding"])


def iota_array(dtype, dims, dimension: int) -> np.ndarray:
    dtype = np.dtype(dtype)
    if 0 in dims:                      # no elements, whatever the other dimensions
        return np.zeros(tuple(dims), dtype=dtype)
    n = dims[dimension]
    shape = [1] * len(dims)
    shape[dimension] = n
    base = np.arange(n, dtype=np.int64)
    if dtype == np.bool_:
        vals = base != 0
    elif dtype.kind in "iu" or (dtype.kind == "V" and "int" in dtype.name):
        bits = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4}.get(dtype.name, dtype.itemsize * 8)
        vals = base
        if bits < 64:   # static_cast wraps
            vals = base & ((1 << bits) - 1)
            if dtype.name.startswith("int"):
                vals = np.where(vals >= 1 << (bits - 1), vals - (1 << bits), vals)
        vals = vals.astype(dtype)
    elif dtype.kind == "c" or dtype.itemsize >= 4:
        vals = base.astype(dtype)
    else:
        vals = base.astype(np.float32).astype(dtype)     # Eigen: int -> float -> half
    return np.broadcast_to(vals.reshape(shape), tuple(dims)).copy()


@evaluates("iota")
def _eval_iota(inst, operands, ctx):
    if not isinstance(inst.shape, ArrayShape) or not 0 <= inst.attrs["iota_dimension"] < \
            inst.shape.rank:
        raise ctx.unsupported(inst, f"iota of shape {inst.shape} along dimension "
                                    f"{inst.attrs['iota_dimension']} (XLA's verifier rejects it)")
    return iota_array(inst.shape.dtype.np, inst.shape.dims, inst.attrs["iota_dimension"])


# ---------------------------------------------------------------------------
# dynamic-slice, dynamic-update-slice

def _starts(index_operands) -> list[int]:
    """One scalar start per dimension, or (the old form) a single rank-1 index vector."""
    if len(index_operands) == 1 and np.ndim(index_operands[0]) == 1:
        return [int(v) for v in to_s64(index_operands[0])]
    return [int(to_s64(v)) for v in index_operands]


def dynamic_slice_array(x, starts, sizes) -> np.ndarray:
    sl = []
    for s, size, n in zip(starts, sizes, x.shape):
        s = min(max(0, s), n - size)
        sl.append(slice(s, s + size))
    return x[tuple(sl)].copy()


def dynamic_update_slice_array(x, update, starts) -> np.ndarray:
    out = x.copy()
    sl = []
    for s, size, n in zip(starts, update.shape, x.shape):
        s = min(max(0, s), n - size)
        sl.append(slice(s, s + size))
    out[tuple(sl)] = update
    return out


@evaluates("dynamic-slice")
def _eval_dynamic_slice(inst, operands, ctx):
    x = operands[0]
    return dynamic_slice_array(x, _starts(operands[1:]), inst.shape.dims)


@evaluates("dynamic-update-slice")
def _eval_dynamic_update_slice(inst, operands, ctx):
    x = operands[0]
    return dynamic_update_slice_array(x, operands[1], _starts(operands[2:]))


# ---------------------------------------------------------------------------
# gather

def _place(arr: np.ndarray, axes, rank: int) -> np.ndarray:
    """Reshape `arr` (dims in the order of `axes`, which is increasing) into `rank` dims."""
    shape = [1] * rank
    for k, a in enumerate(axes):
        shape[a] = arr.shape[k]
    return arr.reshape(shape)


def gather_array(operand, indices, *, offset_dims, collapsed_slice_dims, start_index_map,
                 index_vector_dim, slice_sizes, operand_batching_dims=(),
                 start_indices_batching_dims=()) -> np.ndarray:
    idx = to_s64(indices)
    if index_vector_dim == idx.ndim:
        idx = idx[..., None]
    idx = np.moveaxis(idx, index_vector_dim, -1)
    batch_shape = idx.shape[:-1]
    offset_dims = list(offset_dims)
    out_rank = len(batch_shape) + len(offset_dims)
    batch_axes = [i for i in range(out_rank) if i not in offset_dims]
    elided = set(collapsed_slice_dims) | set(operand_batching_dims)
    window_dims = [d for d in range(operand.ndim) if d not in elided]
    out_shape = [0] * out_rank
    for p, a in enumerate(batch_axes):
        out_shape[a] = batch_shape[p]
    for j, a in enumerate(offset_dims):
        out_shape[a] = slice_sizes[window_dims[j]]
    out_shape = tuple(out_shape)
    if operand.size == 0 or 0 in out_shape:
        return np.zeros(out_shape, dtype=operand.dtype)
    full = []
    for d in range(operand.ndim):
        if d in operand_batching_dims:
            sd = start_indices_batching_dims[list(operand_batching_dims).index(d)]
            axis = batch_axes[sd if sd < index_vector_dim else sd - 1]
            start = _place(np.arange(out_shape[axis]), [axis], out_rank)
        elif d in start_index_map:
            start = _place(idx[..., list(start_index_map).index(d)], batch_axes, out_rank)
        else:
            start = np.zeros((1,) * out_rank, dtype=np.int64)
        size = slice_sizes[d] if d in window_dims else 1
        start = np.minimum(operand.shape[d] - size, np.maximum(0, start))
        if d in window_dims:
            axis = offset_dims[window_dims.index(d)]
            start = start + _place(np.arange(slice_sizes[d]), [axis], out_rank)
        full.append(np.broadcast_to(start, out_shape))
    return operand[tuple(full)]


@evaluates("gather")
def _eval_gather(inst, operands, ctx):
    a = inst.attrs
    return gather_array(
        operands[0], operands[1], offset_dims=a["offset_dims"],
        collapsed_slice_dims=_attr(inst, "collapsed_slice_dims", ()),
        start_index_map=a["start_index_map"], index_vector_dim=a["index_vector_dim"],
        slice_sizes=a["slice_sizes"],
        operand_batching_dims=_attr(inst, "operand_batching_dims", ()),
        start_indices_batching_dims=_attr(inst, "start_indices_batching_dims", ()))


# ---------------------------------------------------------------------------
# scatter

def scatter_targets(operand_shape, indices, update_shape, *, update_window_dims,
                    inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim,
                    input_batching_dims=(), scatter_indices_batching_dims=(),
                    update_order=None):
    """(targets, update positions) of the in-bounds update elements, in application
    order: flat operand indices and flat update indices."""
    idx = to_s64(indices)
    if index_vector_dim == idx.ndim:
        idx = idx[..., None]
    idx = np.moveaxis(idx, index_vector_dim, -1)
    urank = len(update_shape)
    uwd = list(update_window_dims)
    scatter_axes = [i for i in range(urank) if i not in uwd]
    elided = set(inserted_window_dims) | set(input_batching_dims)
    window_dims = [d for d in range(len(operand_shape)) if d not in elided]
    full = []
    valid = np.ones((1,) * urank, dtype=bool)
    for d in range(len(operand_shape)):
        if d in input_batching_dims:
            sd = scatter_indices_batching_dims[list(input_batching_dims).index(d)]
            axis = scatter_axes[sd if sd < index_vector_dim else sd - 1]
            start = _place(np.arange(update_shape[axis]), [axis], urank)
        elif d in scatter_dims_to_operand_dims:
            j = list(scatter_dims_to_operand_dims).index(d)
            start = _place(idx[..., j], scatter_axes, urank)
        else:
            start = np.zeros((1,) * urank, dtype=np.int64)
        size = update_shape[uwd[window_dims.index(d)]] if d in window_dims else 1
        valid = valid & (start >= 0) & (start <= operand_shape[d] - size)
        if d in window_dims:
            axis = uwd[window_dims.index(d)]
            start = start + _place(np.arange(update_shape[axis]), [axis], urank)
        full.append(np.broadcast_to(start, update_shape))
    valid = np.broadcast_to(valid, update_shape)
    order = list(update_order) if update_order is not None else list(range(urank))
    seq = [a for a in order if a in scatter_axes] + [a for a in order if a in uwd]
    upos = np.transpose(np.arange(int(np.prod(update_shape))).reshape(update_shape), seq)
    upos = upos.reshape(-1)
    ok = valid.reshape(-1)[upos]
    upos = upos[ok]
    if upos.size == 0:
        return upos, upos
    if not full:            # rank-0 operand: every in-bounds update hits element 0
        return np.zeros(upos.size, dtype=np.int64), upos
    coords = [f.reshape(-1)[upos] for f in full]
    return np.ravel_multi_index(coords, operand_shape), upos


_UFUNC_AT = {"add": np.add, "multiply": np.multiply}
_NATIVE_AT = frozenset("int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 "
                       "float64 complex64 complex128".split())


def scatter_apply(results: list, targets, values: list, combine, fast_op=None,
                  forward=None) -> list:
    """Apply updates `values[i][k]` to `results[i].flat[targets[k]]` in order."""
    flats = [r.reshape(-1) for r in results]
    if targets.size == 0 or forward == 0:
        return results
    if forward == 1:
        # Later updates win: keep each target's last occurrence.
        last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
        flats[0][targets[last]] = values[0][last]
        return results
    ufunc = _UFUNC_AT.get(fast_op)
    if ufunc is not None and len(flats) == 1 and flats[0].dtype.name in _NATIVE_AT and not (
            fast_op == "multiply" and flats[0].dtype.kind == "c"):
        with np.errstate(all="ignore"):
            ufunc.at(flats[0], targets, values[0])
        return results
    n = len(flats)
    for sel in update_rounds(targets):
        t = targets[sel]
        new = combine([f[t] for f in flats] + [v[sel] for v in values], (len(t),))
        for f, v in zip(flats, new[:n]):
            f[t] = v
    return results


@evaluates("scatter")
def _eval_scatter(inst, operands, ctx):
    a = inst.attrs
    n = (len(operands) - 1) // 2
    inputs, indices, updates = operands[:n], operands[n], operands[n + 1:]
    ushape = inst.operands[n + 1].shape
    lay = getattr(ushape, "layout", None)
    order = list(reversed(lay.minor_to_major)) if lay is not None and \
        len(lay.minor_to_major) == ushape.rank else None
    targets, upos = scatter_targets(
        inputs[0].shape, indices, updates[0].shape,
        update_window_dims=a["update_window_dims"],
        inserted_window_dims=_attr(inst, "inserted_window_dims", ()),
        scatter_dims_to_operand_dims=a["scatter_dims_to_operand_dims"],
        index_vector_dim=a["index_vector_dim"],
        input_batching_dims=_attr(inst, "input_batching_dims", ()),
        scatter_indices_batching_dims=_attr(inst, "scatter_indices_batching_dims", ()),
        update_order=order)
    comp = a["to_apply"]
    root = comp.root
    forward = root.parameter_number if root.opcode == "parameter" and n == 1 else None
    dtypes = [s.dtype.np for s in inst.shape.leaves()]
    results = [np.array(x, dtype=dt) for x, dt in zip(inputs, dtypes)]
    values = [u.reshape(-1)[upos] for u in updates]
    fast = binary_root(comp) if n == 1 and inputs[0].dtype == updates[0].dtype else None

    def combine(args, lanes):
        return apply_computation(ctx, comp, args, lanes)
    results = scatter_apply(results, targets, values, combine, fast, forward)
    return tuple(results) if isinstance(inst.shape, TupleShape) else results[0]


# ---------------------------------------------------------------------------
# Dimension sizes, pass-through and async ops

@evaluates("get-dimension-size")
def _eval_get_dimension_size(inst, operands, ctx):
    dim = inst.attrs["dimensions"][0]
    return np.array(operands[0].shape[dim], dtype=inst.shape.dtype.np)


@evaluates("set-dimension-size")
def _eval_set_dimension_size(inst, operands, ctx):
    # Dynamic sizes are not tracked: the padded array is the value.
    return operands[0]


@evaluates("after-all")
def _eval_after_all(inst, operands, ctx):
    return TOKEN


@evaluates("add-dependency", "domain", "opt-barrier")
def _eval_forward(inst, operands, ctx):
    return operands[0]


@evaluates("copy-start")
def _eval_copy_start(inst, operands, ctx):
    if not (isinstance(inst.shape, TupleShape) and len(inst.shape.elements) >= 2):
        raise ctx.unsupported(inst, f"copy-start of shape {inst.shape}, not a (destination, "
                                    "source, context) tuple (XLA's verifier rejects it)")
    ctx_shape = inst.shape.elements[2] if len(inst.shape.elements) > 2 else None
    extra = (zero_value(ctx_shape),) if ctx_shape is not None else ()
    return (operands[0], operands[0]) + extra


@evaluates("copy-done")
def _eval_copy_done(inst, operands, ctx):
    return operands[0][0]


def zero_value(shape):
    """The value XLA's evaluator leaves in a freshly created literal of `shape`."""
    if isinstance(shape, TupleShape):
        return tuple(zero_value(e) for e in shape.elements)
    if not shape.dtype.is_array:
        return TOKEN
    return np.zeros(shape.dims, dtype=shape.dtype.np)


@evaluates("async-start")
def _eval_async_start(inst, operands, ctx):
    comp = inst.attrs["calls"]
    result = ctx.call(comp, list(operands))
    extra = tuple(zero_value(e) for e in inst.shape.elements[2:])
    return (tuple(operands), result) + extra


@evaluates("async-update")
def _eval_async_update(inst, operands, ctx):
    return operands[0]


@evaluates("async-done")
def _eval_async_done(inst, operands, ctx):
    return operands[0][1]
