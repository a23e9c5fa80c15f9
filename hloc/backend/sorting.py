"""sort as a kernel emitter: each row along the sort dimension is sorted in place in
the outputs with the comparator inlined (a stable insertion sort: O(n^2) per row, the
simplest correct stable sort; a merge sort is the obvious next step for long rows).
"""
from __future__ import annotations

from llvmlite import ir

from .indexing import _copy_all
from .loops import Index, for_range, i64
from .reductions import inline_computation
from .registry import emits_kernel
from .types import I64, load_elem, storage_type, store_elem


@emits_kernel("sort")
def _emit_sort(kb, inst, ops, outputs):
    b = kb.b
    for gen, (ptr, shape) in zip(ops, outputs):
        _copy_all(kb, gen, ptr, shape)
    shape = outputs[0][1]
    if shape.size == 0:
        return
    dim = inst.attrs["dimensions"][0]
    n = shape.dims[dim]
    comp = inst.attrs["to_apply"]
    others = [d for d in range(shape.rank) if d != dim]
    stack, ivs = [], {}
    for d in others:
        cm = for_range(b, 0, shape.dims[d], name=f"s{d}")
        ivs[d] = cm.__enter__()
        stack.append(cm)

    def ptrs(pos):
        out = []
        for ptr, s in outputs:
            multi = [pos if d == dim else ivs[d] for d in range(s.rank)]
            out.append((b.gep(ptr, [Index(b, s, multi=multi).linear], source_etype=storage_type(s.dtype),
                              inbounds=True), s))
        return out

    with for_range(b, 1, n, name="si") as i:
        jslot = kb.alloca_entry(I64, name="sj")
        b.store(i, jslot)
        head = b.append_basic_block("sort.inner")
        body = b.append_basic_block("sort.swap")
        end = b.append_basic_block("sort.done")
        b.branch(head)
        b.position_at_end(head)
        j = b.load(jslot, typ=I64)
        positive = b.icmp_signed(">", j, i64(0))
        check = b.append_basic_block("sort.compare")
        b.cbranch(positive, check, end)
        b.position_at_end(check)
        jm1 = b.sub(j, i64(1))
        pj, pk = ptrs(j), ptrs(jm1)
        vj = [load_elem(b, s.dtype, p) for p, s in pj]
        vk = [load_elem(b, s.dtype, p) for p, s in pk]
        args = []
        for x, y in zip(vj, vk):
            args += [x, y]
        less = inline_computation(kb, comp, args)[0]
        b.cbranch(less, body, end)
        b.position_at_end(body)
        for (p1, s), (p2, _), x, y in zip(pj, pk, vj, vk):
            store_elem(b, s.dtype, y, p1)
            store_elem(b, s.dtype, x, p2)
        b.store(jm1, jslot)
        b.branch(head)
        b.position_at_end(end)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


_ = ir
