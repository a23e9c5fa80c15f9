"""Reductions and windows: reduce, reduce-window, select-and-scatter, map (sort, topk and
scan are in sorting.py; the lane engine that runs a scalar computation over whole arrays
is in lanes.py).

Reducers and combiners run on lanes (lanes.py). Sequential semantics are kept by
looping over the sequential axis only (the reduced elements, the window positions, the
update rounds) and vectorising over the independent one (the output elements).
Orders follow HloEvaluator (xla/hlo/evaluator/hlo_evaluator.cc): reduce folds the reduced
elements in the operand's layout order starting from init, and sums floats with `add` in
double (its use_fast_path_reduce_ path, chunks of 512); reduce-window and
select-and-scatter walk each window row-major (no `window=` is the rank-0 window of a
scalar). The common reducers `op(p0, p1)` fold whole rows
at once where that gives the sequential fold's exact result: add/multiply/and/or/xor/
maximum/minimum on integers of any width and on pred, maximum/minimum on floats (NaN
payload and signed-zero rules included), and float add in the evaluator's order.
"""
from __future__ import annotations

import numpy as np

from ..ir.attrs import Window
from ..ir.shape import TupleShape
from . import numerics as N
from .core import evaluates
from .lanes import _leaf_dtypes, apply_computation, binary_root


# ---------------------------------------------------------------------------
# Float helpers

def from_double(x, dtype):
    """Round double values to `dtype` as XLA's SetFromDouble does: Eigen converts to
    half and bfloat16 through float, everything else directly."""
    dtype = np.dtype(dtype)
    x = np.asarray(x, dtype=np.float64)
    if dtype.itemsize == 2 and is_real_float(dtype):
        x = x.astype(np.float32)
    return x.astype(dtype)


def is_real_float(dtype) -> bool:
    """True for f16/f32/f64 and the ml_dtypes floats (bf16, f8*, f4*)."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or (dtype.kind == "V" and (
        dtype.name == "bfloat16" or dtype.name.startswith("float")))


def total_order_key(x: np.ndarray) -> np.ndarray:
    """Integer keys ordering floats as XLA's TOTALORDER compare does:
    -NaN < -inf < ... < -0 < +0 < ... < inf < NaN (sign-magnitude bits)."""
    x = np.asarray(x)
    name = x.dtype.name
    if name == "float8_e8m0fnu":                      # no sign bit: the bits are the order
        return x.view(np.uint8).astype(np.int64)
    if name.startswith("float4"):                     # 4 bits in a byte: sign is bit 3
        b = x.view(np.uint8).astype(np.int64) & 0xF
        return np.where(b & 0x8, -(b & 0x7) - 1, b)
    bits = x.dtype.itemsize * 8
    sint = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    b = x.view(sint).astype(np.int64)
    mask = (1 << (bits - 1)) - 1
    return np.where(b < 0, b ^ mask, b)


# ---------------------------------------------------------------------------
# reduce

_CHUNK = 512


def _layout_major_to_minor(shape) -> list[int]:
    lay = getattr(shape, "layout", None)
    if lay is None or len(lay.minor_to_major) != shape.rank:
        return list(range(shape.rank))
    return list(reversed(lay.minor_to_major))


def reduce_arrays(ctx, comp, inputs, inits, dims, order=None, out_dtypes=None):
    """Reduce `inputs` over `dims` with scalar computation `comp`, starting from `inits`.

    `order` lists the reduced dims from major to minor (the iteration order; default
    ascending). Returns a list of arrays (one per input).
    """
    x0 = inputs[0]
    rank = x0.ndim
    dims = tuple(dims)
    order = [d for d in (order if order is not None else range(rank)) if d in dims]
    kept = [d for d in range(rank) if d not in dims]
    out_dims = tuple(x0.shape[d] for d in kept)
    k = 1
    for d in dims:
        k *= x0.shape[d]
    if out_dtypes is None:
        out_dtypes = [np.asarray(i).dtype for i in inits]
    flat = [np.transpose(x, kept + order).reshape(out_dims + (k,)) for x in inputs]
    inits = [np.asarray(i) for i in inits]
    if k == 0 or 0 in out_dims:
        return [np.broadcast_to(i, out_dims).astype(dt) for i, dt in zip(inits, out_dtypes)]
    fast = _reduce_fast(comp, flat, inits, out_dtypes)
    if fast is not None:
        return fast
    acc = [np.broadcast_to(i, out_dims).astype(dt) for i, dt in zip(inits, out_dtypes)]
    for j in range(k):
        acc = apply_computation(ctx, comp, acc + [f[..., j] for f in flat], out_dims)
    return [np.array(a) for a in acc]


def evaluator_float_sum(x: np.ndarray, init, dtype) -> np.ndarray:
    """Sum the last axis as HloEvaluator's reduce fast path does: in double, 512 elements
    at a time (each partial sum starting from 0.0), the partial sums added to init one
    after another, rounded once. np.cumsum is a sequential left fold, so both levels
    keep the evaluator's order."""
    with np.errstate(all="ignore"):
        x64 = np.asarray(x).astype(np.float64)
        pad = (-x64.shape[-1]) % _CHUNK
        if pad:
            x64 = np.concatenate([x64, np.zeros(x64.shape[:-1] + (pad,))], axis=-1)
        chunks = x64.reshape(x64.shape[:-1] + (-1, _CHUNK))
        zero = np.zeros(chunks.shape[:-1] + (1,))
        partial = np.cumsum(np.concatenate([zero, chunks], axis=-1), axis=-1)[..., -1]
        start = np.broadcast_to(np.asarray(init).astype(np.float64),
                                partial.shape[:-1])[..., None]
        total = np.cumsum(np.concatenate([start, partial], axis=-1), axis=-1)[..., -1]
    return from_double(total, dtype)


# Reducers whose fold is order-independent on integers (computed in int64/uint64, which
# wraps mod 2**64, then wrapped to the element type's width) and on pred (as
# EmitPredBinaryOp: add/maximum/or = any, multiply/minimum/and = all, xor = parity).
_INT_FOLDS = {
    "add": (np.add.reduce, np.add), "multiply": (np.multiply.reduce, np.multiply),
    "maximum": (np.maximum.reduce, np.maximum), "minimum": (np.minimum.reduce, np.minimum),
    "and": (np.bitwise_and.reduce, np.bitwise_and), "or": (np.bitwise_or.reduce, np.bitwise_or),
    "xor": (np.bitwise_xor.reduce, np.bitwise_xor),
}
_PRED_FOLDS = {"add": "any", "maximum": "any", "or": "any",
               "multiply": "all", "minimum": "all", "and": "all", "xor": "parity"}


def _reduce_fast(comp, flat, inits, out_dtypes):
    """Vectorised folds for the common scalar reducers `op(p0, p1)`: exactly the
    sequential fold's result (order-independent ops), or HloEvaluator's order (float
    add). Returns None where only the sequential path is exact."""
    if len(flat) != 1:
        return None
    op = binary_root(comp)
    if op is None:
        return None
    hdt = comp.root.shape.dtype                 # the reducer's element type (s1 vs s8 ...)
    x, init = flat[0], np.asarray(inits[0])
    if x.dtype != hdt.np or init.dtype != hdt.np or np.dtype(out_dtypes[0]) != hdt.np:
        return None
    if hdt.kind in ("int", "uint") and op in _INT_FOLDS:
        fold, combine = _INT_FOLDS[op]
        with np.errstate(all="ignore"):
            r = combine(fold(N.widen(x, hdt), axis=-1), N.widen(init, hdt))
        return [N.wrap(r, hdt)]
    if hdt.kind == "pred" and op in _PRED_FOLDS:
        how = _PRED_FOLDS[op]
        if how == "any":
            r = np.any(x, axis=-1) | init
        elif how == "all":
            r = np.all(x, axis=-1) & init
        else:
            r = (np.count_nonzero(x, axis=-1) % 2 == 1) ^ init
        return [np.asarray(r)]
    if hdt.kind == "float" and op == "add":
        return [evaluator_float_sum(x, init, hdt.np)]
    if hdt.kind == "float" and op in ("maximum", "minimum"):
        return [_float_extremum(op, x, init, hdt)]
    return None


def _float_extremum(op, x, init, hdt):
    """The fold acc = op(acc, x_i) from init with the elementwise llvm.maximum/minimum
    (numerics.fmax/fmin): order-independent except for NaN payloads, where the fold keeps
    the first NaN it meets (init first; a + b keeps the NaN operand's payload), quieted by
    the add."""
    xs = N.widen(x, hdt)
    i0 = N.widen(init, hdt)
    seq = np.concatenate([np.broadcast_to(i0, xs.shape[:-1])[..., None], xs], axis=-1)
    pick = N.fmax if op == "maximum" else N.fmin
    red = np.max if op == "maximum" else np.min
    with np.errstate(all="ignore"):
        r = red(seq, axis=-1)
        zero = r == 0            # which zero wins: +0 for maximum, -0 for minimum
        if zero.any():
            want_neg = op == "minimum"
            has_pref = np.any((seq == 0) & (np.signbit(seq) == want_neg), axis=-1)
            signed = np.where(has_pref == want_neg, -0.0, 0.0).astype(r.dtype)
            r = np.where(zero, signed, r)
        nan = np.isnan(seq)
        if nan.any():
            first = np.take_along_axis(seq, np.argmax(nan, axis=-1)[..., None], axis=-1)[..., 0]
            r = np.where(nan.any(axis=-1), pick(first, first), r)
    return N.narrow(r, hdt)


@evaluates("reduce")
def _eval_reduce(inst, operands, ctx):
    n = len(operands) // 2
    dims = tuple(inst.attrs["dimensions"])
    order = _layout_major_to_minor(inst.operands[0].shape)
    out = reduce_arrays(ctx, inst.attrs["to_apply"], operands[:n], operands[n:], dims,
                        order, _leaf_dtypes(inst.shape))
    return tuple(out) if isinstance(inst.shape, TupleShape) else out[0]


# ---------------------------------------------------------------------------
# Windows (reduce-window, select-and-scatter)

def window_positions(window, base_dims, count_dims):
    """For each window offset (row-major): per-dim (source index array, valid array) for
    every window placement along that dim, as in HloEvaluator's IterateThroughWindow."""
    sizes = [d.size for d in window.dims]
    per_dim = []
    for d, (wd, n, cnt) in enumerate(zip(window.dims, base_dims, count_dims)):
        rows = []
        place = np.arange(cnt, dtype=np.int64)
        for w in range(wd.size):
            pos = place * wd.stride + w * wd.rhs_dilate - wd.pad_lo
            ok = pos % wd.lhs_dilate == 0
            idx = pos // wd.lhs_dilate
            ok &= (idx >= 0) & (idx < n)
            rows.append((np.clip(idx, 0, max(n - 1, 0)), ok))
        per_dim.append(rows)
    for offs in np.ndindex(*sizes):
        idx = [per_dim[d][o][0] for d, o in enumerate(offs)]
        ok = [per_dim[d][o][1] for d, o in enumerate(offs)]
        yield np.ix_(*idx) if idx else (), _outer_and(ok, count_dims)


def _outer_and(oks, dims):
    mask = np.ones(tuple(dims), dtype=bool)
    for d, ok in enumerate(oks):
        shape = [1] * len(dims)
        shape[d] = len(ok)
        mask = mask & ok.reshape(shape)
    return mask


def reduce_window_arrays(ctx, comp, inputs, inits, window, out_dims, out_dtypes):
    acc = [np.broadcast_to(np.asarray(i), out_dims).astype(dt) for i, dt in zip(inits, out_dtypes)]
    if 0 in out_dims:
        return acc
    base = inputs[0].shape
    if 0 in base:
        return acc
    for ix, mask in window_positions(window, base, out_dims):
        if not mask.any():
            continue
        vals = [x[ix] for x in inputs]
        new = apply_computation(ctx, comp, acc + vals, out_dims, mask)
        acc = [np.where(mask, nw, a) for nw, a in zip(new, acc)]
    return acc


def _window(inst) -> Window:
    """The instruction's window; XLA's parser gives a missing `window=` the rank-0 window
    (only valid on scalar operands)."""
    w = inst.attrs.get("window")
    return Window() if w is None else w


@evaluates("reduce-window")
def _eval_reduce_window(inst, operands, ctx):
    n = len(operands) // 2
    leaves = inst.shape.leaves()
    out = reduce_window_arrays(ctx, inst.attrs["to_apply"], operands[:n], operands[n:],
                               _window(inst), leaves[0].dims,
                               [s.dtype.np for s in leaves])
    return tuple(out) if isinstance(inst.shape, TupleShape) else out[0]


def select_and_scatter_array(ctx, select, scatter, operand, source, init, window, dtype):
    result = np.full(operand.shape, init, dtype=dtype)
    src_dims = source.shape
    if operand.size == 0 or source.size == 0:
        return result
    rank = operand.ndim
    has = np.zeros(src_dims, dtype=bool)
    sel_val = np.zeros(src_dims, dtype=operand.dtype)
    sel_idx = [np.zeros(src_dims, dtype=np.int64) for _ in range(rank)]
    for ix, mask in window_positions(window, operand.shape, src_dims):
        if not mask.any():
            continue
        cur = operand[ix]
        take = mask & ~has
        if has.any():
            keep = apply_computation(ctx, select, [sel_val, cur], src_dims, mask & has)[0]
            take |= mask & has & ~keep.astype(bool)
        sel_val = np.where(take, cur, sel_val)
        for d in range(rank):
            sel_idx[d] = np.where(take, np.broadcast_to(ix[d], src_dims), sel_idx[d])
        has |= mask
    # Scatter in source order (row-major); repeated targets are applied in rounds.
    order = np.flatnonzero(has.ravel())
    targets = np.ravel_multi_index([s.ravel()[order] for s in sel_idx], operand.shape) \
        if rank else np.zeros(order.size, dtype=np.int64)
    values = source.ravel()[order]
    flat = result.reshape(-1)
    for sel in update_rounds(targets):
        t = targets[sel]
        new = apply_computation(ctx, scatter, [values[sel], flat[t]], (len(t),))[0]
        flat[t] = new
    return flat.reshape(operand.shape)


def update_rounds(targets: np.ndarray):
    """Split positions into rounds whose targets are unique, keeping each target's order:
    round r holds every target's r-th occurrence."""
    if targets.size == 0:
        return
    order = np.argsort(targets, kind="stable")
    st = targets[order]
    start = np.r_[0, np.flatnonzero(st[1:] != st[:-1]) + 1]
    run = np.repeat(start, np.diff(np.r_[start, st.size]))
    occ = np.empty(targets.size, dtype=np.int64)
    occ[order] = np.arange(st.size) - run
    for r in range(int(occ.max()) + 1):
        yield np.flatnonzero(occ == r)


@evaluates("select-and-scatter")
def _eval_select_and_scatter(inst, operands, ctx):
    operand, source, init = operands
    return select_and_scatter_array(ctx, inst.attrs["select"], inst.attrs["scatter"], operand,
                                    source, init, _window(inst), inst.shape.dtype.np)


# ---------------------------------------------------------------------------
# map

@evaluates("map")
def _eval_map(inst, operands, ctx):
    dims = inst.shape.dims
    args = [np.broadcast_to(o, dims) for o in operands]
    return np.array(apply_computation(ctx, inst.attrs["to_apply"], args, dims)[0])
