"""Reductions, windows and sorting: reduce, reduce-window, select-and-scatter, map, sort,
topk, plus the lane engine that runs a scalar computation over whole arrays.

XLA applies reducers, comparators and combiners one scalar at a time (HloEvaluator);
doing that per element in Python would be far too slow, so `apply_computation` compiles a
scalar computation made only of elementwise ops into a `LaneProgram` that evaluates each
instruction once on arrays of "lanes", reusing the registry's own elementwise evaluation,
so the numerics are exactly those of a per-scalar call. Sequential semantics are kept by
looping over the sequential axis only (the reduced elements, the window positions, the
update rounds) and vectorising over the independent one (the output elements).
Orders follow HloEvaluator (xla/hlo/evaluator/hlo_evaluator.cc): reduce folds the reduced
elements in the operand's layout order starting from init, and sums floats with `add` in
double (its use_fast_path_reduce_ path, chunks of 512); reduce-window and
select-and-scatter walk each window row-major (no `window=` is the rank-0 window of a
scalar); sort is a stable merge sort. The common reducers `op(p0, p1)` fold whole rows
at once where that gives the sequential fold's exact result: add/multiply/and/or/xor/
maximum/minimum on integers of any width and on pred, maximum/minimum on floats (NaN
payload and signed-zero rules included), and float add in the evaluator's order.
"""
from __future__ import annotations

import numpy as np

from ..ir.attrs import Window
from ..ir.module import Computation, Instruction
from ..ir.shape import ArrayShape, TupleShape, array as array_shape
from . import numerics as N
from ..ops import opcodes_with
from ..ops.base import ELEMENTWISE
from ..ops import facets
from .core import evaluates

# ---------------------------------------------------------------------------
# Lane engine

# Opcodes whose evaluation on arrays is the same as on each scalar element: the
# elementwise rows, and bitcast-convert (between scalars its widths are equal).
LANE_OPCODES = opcodes_with(ELEMENTWISE) | {"bitcast-convert"}
# Scalar-to-scalar ops that are identities on lanes.
_IDENTITY_OPCODES = frozenset({"broadcast", "reshape", "bitcast", "copy", "transpose"})

_PARAM, _CONST, _TUPLE, _GTE, _IDENT, _OP = range(6)


def _lane_shape(shape, lanes):
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_lane_shape(e, lanes) for e in shape.elements))
    return array_shape(shape.dtype, lanes)


def _is_scalar_shape(shape) -> bool:
    if isinstance(shape, TupleShape):
        return all(_is_scalar_shape(e) for e in shape.elements)
    return isinstance(shape, ArrayShape) and shape.dtype.is_array and shape.rank == 0


class LaneProgram:
    """A scalar computation compiled to run elementwise over arrays of shape `lanes`."""

    def __init__(self, comp: Computation, lanes: tuple):
        self.comp = comp
        self.lanes = lanes
        self.nparams = len(comp.parameters)
        slot: dict[int, int] = {}
        proxies: dict[int, Instruction] = {}
        steps = []
        for inst in comp.instructions:
            if not _is_scalar_shape(inst.shape):
                raise _NotLaneSafe
            ops = tuple(slot[id(o)] for o in inst.operands)
            proxy = Instruction(inst.name, inst.opdef, _lane_shape(inst.shape, lanes),
                                [proxies[id(o)] for o in inst.operands], inst.attrs, inst.loc)
            proxy.parent = inst.parent
            proxy.literal = inst.literal
            proxy.parameter_number = inst.parameter_number
            proxies[id(inst)] = proxy
            op = inst.opcode
            if op == "parameter":
                step = (_PARAM, inst.parameter_number, ops)
            elif op == "constant":
                step = (_CONST, np.broadcast_to(np.asarray(inst.literal.value), lanes), ops)
            elif op == "tuple":
                step = (_TUPLE, None, ops)
            elif op == "get-tuple-element":
                step = (_GTE, inst.attrs["index"], ops)
            elif op in _IDENTITY_OPCODES and len(ops) == 1 and \
                    isinstance(inst.shape, ArrayShape) and \
                    inst.shape.dtype is getattr(inst.operands[0].shape, "dtype", None):
                step = (_IDENT, None, ops)
            elif op in LANE_OPCODES and facets.get("evaluate", op) is not None:
                step = (_OP, (facets.get("evaluate", op), proxy), ops)
            else:
                raise _NotLaneSafe
            slot[id(inst)] = len(steps)
            steps.append(step)
        self.steps = steps
        self.root = slot[id(comp.root)]

    def run(self, ctx, args):
        vals = []
        append = vals.append
        for kind, payload, ops in self.steps:
            if kind == _OP:
                fn, proxy = payload
                append(fn(proxy, [vals[o] for o in ops], ctx))
            elif kind == _PARAM:
                append(args[payload])
            elif kind == _CONST:
                append(payload)
            elif kind == _IDENT:
                append(vals[ops[0]])
            elif kind == _TUPLE:
                append(tuple(vals[o] for o in ops))
            else:
                append(vals[ops[0]][payload])
        return vals[self.root]


class _NotLaneSafe(Exception):
    pass


def lane_program(ctx, comp: Computation, lanes: tuple) -> LaneProgram | None:
    """The compiled program for `comp` over `lanes`, or None if some op is not elementwise.
    Programs are cached per interpreter run (passes may rewrite computations between runs)."""
    cache = getattr(ctx, "_lane_programs", None)
    if cache is None:
        cache = {}
        setattr(ctx, "_lane_programs", cache)
    key = (id(comp), lanes)
    hit = cache.get(key)
    if hit is not None and hit[0] is comp:
        return hit[1]
    try:
        prog = LaneProgram(comp, lanes)
    except _NotLaneSafe:
        prog = None
    if len(cache) > 256:
        cache.clear()
    cache[key] = (comp, prog)
    return prog


def _leaf_dtypes(shape) -> list:
    return [leaf.dtype.np for leaf in shape.leaves()]


def _flatten(value) -> list:
    if isinstance(value, tuple):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [value]


def apply_computation(ctx, comp: Computation, args: list, lanes: tuple, mask=None) -> list:
    """Run scalar computation `comp` on every lane of `args` (arrays of shape `lanes`).

    Returns the result leaves as arrays of shape `lanes`. With `mask`, lanes where it is
    False hold unspecified values (the caller discards them). Elementwise computations
    run as one LaneProgram; anything else falls back to one `ctx.call` per lane.
    """
    lanes = tuple(lanes)
    dtypes = _leaf_dtypes(comp.root.shape)
    prog = lane_program(ctx, comp, lanes)
    if prog is not None:
        with np.errstate(all="ignore"):
            out = _flatten(prog.run(ctx, args))
        return [np.broadcast_to(np.asarray(o, dtype=dt), lanes) for o, dt in zip(out, dtypes)]
    outs = [np.zeros(lanes, dtype=dt) for dt in dtypes]
    it = np.ndindex(*lanes) if mask is None else zip(*np.nonzero(np.broadcast_to(mask, lanes)))
    for idx in it:
        idx = tuple(int(i) for i in idx) + (Ellipsis,)
        res = _flatten(ctx.call(comp, [a[idx].copy() for a in args]))
        for o, r in zip(outs, res):
            o[idx] = r
    return outs


def binary_root(comp: Computation) -> str | None:
    """The opcode if `comp` is exactly `op(p0, p1)` (or `op(p1, p0)`) on two scalars."""
    root = comp.root
    if len(comp.parameters) != 2 or len(comp.instructions) != 3 or len(root.operands) != 2:
        return None
    a, b = root.operands
    if a.opcode != "parameter" or b.opcode != "parameter" or a is b:
        return None
    return root.opcode


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


# ---------------------------------------------------------------------------
# sort

def _merge_sort(idx: list, less) -> list:
    """HloEvaluator's stable merge sort (binary insertion below 9 elements)."""
    n = len(idx)
    if n < 2:
        return idx
    if n < 9:
        out: list = []
        for needle in idx:
            lo, length = 0, len(out)
            while length:
                half = length // 2
                mid = lo + half
                if less(needle, out[mid]):
                    length = half
                else:
                    lo = mid + 1
                    length -= half + 1
            out.insert(lo, needle)
        return out
    half = n // 2
    rhs = _merge_sort(idx[half:], less)
    lhs = _merge_sort(idx[:half], less)
    out = []
    i = j = 0
    while i < len(lhs) and j < len(rhs):
        if less(rhs[j], lhs[i]):
            out.append(rhs[j])
            j += 1
        else:
            out.append(lhs[i])
            i += 1
    out.extend(lhs[i:])
    out.extend(rhs[j:])
    return out


def _stable_argsort(key: np.ndarray, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(key, axis=-1, kind="stable")
    n = key.shape[-1]
    rev = np.argsort(key[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    return n - 1 - rev


def _simple_comparator(comp: Computation):
    """(descending, compare type) if `comp` is compare(p0, p1) LT/GT on operand 0."""
    root = comp.root
    if root.opcode != "compare" or len(root.operands) != 2:
        return None
    a, b = root.operands
    if a.opcode != "parameter" or b.opcode != "parameter":
        return None
    pa, pb = a.parameter_number, b.parameter_number
    direction = root.attrs.get("direction")
    if (pa, pb) == (1, 0):
        direction = {"LT": "GT", "GT": "LT"}.get(direction)
    elif (pa, pb) != (0, 1):
        return None
    if direction not in ("LT", "GT"):
        return None
    ctype = root.attrs.get("type") or root.attrs.get("comparison_type")
    return direction == "GT", ctype


def sort_permutation(ctx, comp: Computation, rows: list) -> np.ndarray:
    """Stable-sort permutation (rows x n) for operand rows under comparator `comp`."""
    r, n = rows[0].shape
    if n < 2 or r == 0:
        return np.broadcast_to(np.arange(n), (r, n)).copy()
    simple = _simple_comparator(comp)
    if simple is not None:
        perm = _simple_sort(rows[0], *simple)
        if perm is not None:
            return perm
    if lane_program(ctx, comp, (1,)) is None:
        perm = np.empty((r, n), dtype=np.int64)
        for i in range(r):
            def less(a, b, i=i):
                args = [row[i, j:j + 1].reshape(()).copy() for row in rows for j in (a, b)]
                return bool(ctx.call(comp, args))
            perm[i] = _merge_sort(list(range(n)), less)
        return perm
    return _bitonic_sort(ctx, comp, rows)


def _simple_sort(x: np.ndarray, descending: bool, ctype):
    dt = x.dtype
    if dt == np.bool_:
        key = x.astype(np.uint8)
    elif dt.kind in "iu" and dt.itemsize in (1, 2, 4, 8) and dt.name in (
            "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        key = x
    elif dt.kind in "iuV" and not is_real_float(dt):
        key = x.astype(np.int64)
    elif dt.kind == "c":
        return None
    elif ctype == "TOTALORDER":
        key = total_order_key(x)
    else:
        xf = x.astype(np.float64)
        if np.isnan(xf).any():
            # A FLOAT compare is no strict weak order with NaNs: replay the evaluator's sort.
            perm = np.empty(x.shape, dtype=np.int64)
            for i in range(x.shape[0]):
                v = xf[i].tolist()
                less = (lambda a, b: v[a] > v[b]) if descending else (lambda a, b: v[a] < v[b])
                perm[i] = _merge_sort(list(range(x.shape[1])), less)
            return perm
        key = xf
    return _stable_argsort(key, descending)


def _bitonic_sort(ctx, comp, rows):
    """Stable sort with a bitonic network; comparisons run as lane programs over all rows
    and pairs at once. Equal elements keep their order (ties broken by position)."""
    r, n = rows[0].shape
    p = 1
    while p < n:
        p *= 2
    pos = np.broadcast_to(np.arange(p), (r, p)).copy()       # original position (>= n: pad)
    data = [np.concatenate([row, np.repeat(row[:, :1], p - n, axis=1)], axis=1) for row in rows]
    idx = np.arange(p)
    k = 2
    while k <= p:
        j = k // 2
        while j >= 1:
            partner = idx ^ j
            lo = idx[partner > idx]
            hi = partner[partner > idx]
            asc = (lo & k) == 0
            pa, pb = pos[:, lo], pos[:, hi]
            va = [d[:, lo] for d in data]
            vb = [d[:, hi] for d in data]
            lanes = pa.shape
            ab = apply_computation(ctx, comp, [x for a, b in zip(va, vb) for x in (a, b)],
                                   lanes)[0].astype(bool)
            ba = apply_computation(ctx, comp, [x for a, b in zip(va, vb) for x in (b, a)],
                                   lanes)[0].astype(bool)
            # "b before a" in the stable order (padding sorts last).
            b_first = np.where(pb >= n, False,
                               np.where(pa >= n, True, ba | (~ab & (pb < pa))))
            swap = np.where(asc, b_first, ~b_first)
            for d in data + [pos]:
                a_, b_ = d[:, lo], d[:, hi]
                d[:, lo] = np.where(swap, b_, a_)
                d[:, hi] = np.where(swap, a_, b_)
            j //= 2
        k *= 2
    return pos[:, :n]


@evaluates("sort")
def _eval_sort(inst, operands, ctx):
    dim = inst.attrs["dimensions"][0]
    moved = [np.moveaxis(o, dim, -1) for o in operands]
    shape = moved[0].shape
    n = shape[-1]
    rows = [m.reshape(-1, n) for m in moved]
    perm = sort_permutation(ctx, inst.attrs["to_apply"], rows)
    outs = [np.moveaxis(np.take_along_axis(r, perm, axis=1).reshape(shape), -1, dim)
            for r in rows]
    outs = [np.array(o) for o in outs]
    return tuple(outs) if isinstance(inst.shape, TupleShape) else outs[0]


# ---------------------------------------------------------------------------
# topk

def topk_arrays(x: np.ndarray, k: int, largest: bool = True):
    """XLA's TopkDecomposer: stable sort of the last dim by total order (descending when
    `largest`), first k; indices are s32 and ties keep the lower index first."""
    dt = x.dtype
    if dt == np.bool_:
        key = x.astype(np.uint8)
    elif is_real_float(dt) and dt.kind != "c":
        key = total_order_key(x)
    else:
        key = x.astype(np.int64) if dt.kind in "iuV" else x
    perm = _stable_argsort(key, descending=largest)[..., :k]
    return np.take_along_axis(x, perm, axis=-1), perm.astype(np.int32)


@evaluates("topk")
def _eval_topk(inst, operands, ctx):
    k = inst.attrs["k"]
    largest = inst.attrs.get("largest", True)
    values, indices = topk_arrays(operands[0], k, True if largest is None else largest)
    return values, indices


# ---------------------------------------------------------------------------
# scan

@evaluates("scan")
def _eval_scan(inst, operands, ctx):
    """ScanExpander's loop: to_apply(input slices..., carries...) -> (outputs..., carries...);
    outputs are stacked along the scan dimension, visited backwards when is_reverse."""
    dim = (inst.attrs.get("dimensions") or (0,))[0]
    num_carries = inst.attrs.get("num_carries") or 0
    comp = inst.attrs["to_apply"]
    split = len(operands) - num_carries
    inputs, carries = operands[:split], list(operands[split:])
    shapes = list(inst.shape.elements) if isinstance(inst.shape, TupleShape) else [inst.shape]
    num_outputs = len(shapes) - num_carries
    outs = [np.zeros(s.dims, dtype=s.dtype.np) for s in shapes[:num_outputs]]
    length = inputs[0].shape[dim] if inputs else (outs[0].shape[dim] if outs else 0)
    for step in range(length):
        k = length - 1 - step if inst.attrs.get("is_reverse") else step
        res = ctx.call(comp, [np.take(x, k, axis=dim) for x in inputs] + carries)
        res = list(res) if isinstance(res, tuple) else [res]
        for o, v in zip(outs, res[:num_outputs]):
            o[(slice(None),) * dim + (k,)] = v
        carries = res[num_outputs:]
    results = outs + carries
    return tuple(results) if isinstance(inst.shape, TupleShape) else results[0]
