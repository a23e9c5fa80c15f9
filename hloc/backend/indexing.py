"""gather (element generator) and scatter (kernel emitter), with XLA's index rules.

gather: each start index is clamped so the whole slice lies inside the operand
(XLA's semantics), so no index data can make a read go out of bounds. scatter: the
output starts as a copy of the operand; an update window that would not lie fully
inside the operand is dropped (XLA's semantics), checked before any write. Batching
dims (operand_batching_dims / input_batching_dims) pair with the index operand's.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from .loops import Index, clamp_i64, for_range, i64
from .reductions import inline_computation
from .registry import emits, emits_kernel
from .types import I1, I64, storage_type, store_elem


def _to_i64(b, v, dt):
    if dt.bits >= 64:
        return v if dt.kind == "int" else b.select(b.icmp_signed("<", v, i64(0)), i64(2**62), v)
    return b.sext(v, I64) if dt.kind == "int" else b.zext(v, I64)


def _index_vector(b, gen, ishape, batch, ivd, count):
    """The `count` start indices at batch position `batch` (index operand dims but ivd)."""
    out = []
    for k in range(count):
        multi = list(batch)
        if ivd < ishape.rank:
            multi.insert(ivd, i64(k))
        v = gen(Index(b, ishape, multi=multi))
        out.append(_to_i64(b, v, ishape.dtype))
    return out


@emits("gather")
def _emit_gather(kb, inst, ops, index):
    a = inst.attrs
    b = kb.b
    op, ishape = inst.operands[0].shape, inst.operands[1].shape
    offset_dims = list(a["offset_dims"])
    collapsed = set(a["collapsed_slice_dims"])
    start_map = list(a["start_index_map"])
    obatch = list(a.get("operand_batching_dims", ()))
    ibatch = list(a.get("start_indices_batching_dims", ()))
    ivd = a["index_vector_dim"]
    sizes = list(a["slice_sizes"])
    out = index.multi
    batch = [out[d] for d in range(inst.shape.rank) if d not in offset_dims]
    starts = _index_vector(b, ops[1], ishape, batch, ivd, len(start_map))
    start = [i64(0)] * op.rank
    for k, d in enumerate(start_map):
        start[d] = clamp_i64(b, starts[k], 0, max(op.dims[d] - sizes[d], 0))
    idims = [d for d in range(ishape.rank) if d != ivd]          # batch coordinates
    for od, idim in zip(obatch, ibatch):
        start[od] = clamp_i64(b, batch[idims.index(idim)], 0, op.dims[od] - 1)
    window_dims = [d for d in range(op.rank) if d not in collapsed and d not in obatch]
    multi = list(start)
    for j, d in enumerate(window_dims):
        multi[d] = b.add(start[d], out[offset_dims[j]])
    return ops[0](Index(b, op, multi=multi))


@emits_kernel("scatter")
def _emit_scatter(kb, inst, ops, outputs):
    a = inst.attrs
    b = kb.b
    n = len(inst.operands) // 2
    operands = [o.shape for o in inst.operands[:n]]
    ishape = inst.operands[n].shape
    updates = [o.shape for o in inst.operands[n + 1:]]
    op = operands[0]
    # 1. the output is a copy of the operand
    for k in range(n):
        ptr, shape = outputs[k]
        _copy_all(kb, ops[k], ptr, shape)
    # 2. every in-bounds update window is combined into it
    uw = list(a["update_window_dims"])
    inserted = set(a["inserted_window_dims"])
    to_op = list(a["scatter_dims_to_operand_dims"])
    obatch = list(a.get("input_batching_dims", ()))
    ibatch = list(a.get("scatter_indices_batching_dims", ()))
    ivd = a["index_vector_dim"]
    window_dims = [d for d in range(op.rank) if d not in inserted and d not in obatch]
    up = updates[0]
    wsize = [1] * op.rank
    for j, d in enumerate(window_dims):
        wsize[d] = up.dims[uw[j]]
    comp = a["to_apply"]
    if up.size == 0:
        return
    ivs, stack = [], []
    for d in range(up.rank):
        cm = for_range(b, 0, up.dims[d], name=f"u{d}")
        ivs.append(cm.__enter__())
        stack.append(cm)
    batch = [ivs[d] for d in range(up.rank) if d not in uw]
    starts = _index_vector(b, ops[n], ishape, batch, ivd, len(to_op))
    start = [i64(0)] * op.rank
    for k, d in enumerate(to_op):
        start[d] = starts[k]
    idims = [d for d in range(ishape.rank) if d != ivd]
    for od, idim in zip(obatch, ibatch):
        start[od] = batch[idims.index(idim)]
    ok = ir.Constant(I1, 1)
    for d in range(op.rank):
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", start[d], i64(0)),
                               b.icmp_signed("<=", start[d], i64(op.dims[d] - wsize[d]))))
    with b.if_then(ok):
        multi = list(start)
        for j, d in enumerate(window_dims):
            multi[d] = b.add(start[d], ivs[uw[j]])
        olds, news = [], []
        for k in range(n):
            ptr, shape = outputs[k]
            from .types import load_elem
            p = b.gep(ptr, [Index(b, shape, multi=multi).linear], source_etype=storage_type(shape.dtype),
                      inbounds=True)
            olds.append((p, shape))
        cur = [load_elem(b, s.dtype, p) for p, s in olds]
        upd = [ops[n + 1 + k](Index(b, updates[k], multi=list(ivs))) for k in range(n)]
        news = inline_computation(kb, comp, cur + upd)
        for (p, s), v in zip(olds, news):
            store_elem(b, s.dtype, v, p)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _copy_all(kb, gen, ptr, shape):
    b = kb.b
    if shape.size == 0:
        return
    stack, ivs = [], []
    for d in range(shape.rank):
        cm = for_range(b, 0, shape.dims[d], name=f"c{d}")
        ivs.append(cm.__enter__())
        stack.append(cm)
    index = Index(b, shape, multi=ivs)
    v = gen(index)
    p = b.gep(ptr, [index.linear], source_etype=storage_type(shape.dtype), inbounds=True)
    store_elem(b, shape.dtype, v, p)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


_ = unsupported
