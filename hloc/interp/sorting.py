"""sort (a stable merge sort as HloEvaluator's, comparators run on lanes; a bitonic network
for comparators that are not simple), topk and scan.
"""
from __future__ import annotations

import numpy as np

from ..ir.module import Computation
from ..ir.shape import TupleShape
from .core import evaluates
from .lanes import apply_computation, lane_program
from .reductions import is_real_float, total_order_key


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
