"""reduce-window as an element generator (XLA's elemental reduce-window).

For each output position a loop nest runs over the window; the operand position is
`out*stride - pad_lo + w*window_dilation`, divided by the base dilation. Positions in
the padding or between dilated elements contribute nothing (the init value stands for
them, as in HLO); the read itself uses a clamped index, so it is always in bounds.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import Index, for_range, i64
from .reductions import _Acc, inline_computation
from .registry import emits, emits_kernel
from .types import I1, Cplx


def _select_all(b, ok, new, old):
    out = []
    for n_, o in zip(new, old):
        if isinstance(n_, Cplx):
            out.append(Cplx(b.select(ok, n_.re, o.re), b.select(ok, n_.im, o.im)))
        else:
            out.append(b.select(ok, n_, o))
    return out


@emits("reduce-window")
def _emit_reduce_window(kb, inst, ops, index):
    b = kb.b
    n = len(inst.operands) // 2
    shapes = [o.shape for o in inst.operands[:n]]
    op = shapes[0]
    window = inst.attrs.get("window")
    dims = window.dims if window is not None and window.dims else ()
    inits = [ops[n + k](Index(b, inst.operands[n + k].shape, multi=[])) for k in range(n)]
    acc = _Acc(kb, inits)
    stack, ivs = [], []
    for d, wd in enumerate(dims):
        cm = for_range(b, 0, wd.size, name=f"w{d}")
        ivs.append(cm.__enter__())
        stack.append(cm)
    ok = ir.Constant(I1, 1)
    multi = []
    for d in range(op.rank):
        wd = dims[d] if d < len(dims) else None
        if wd is None:
            multi.append(index.multi[d])
            continue
        w = ivs[d] if wd.reversal is False else b.sub(i64(wd.size - 1), ivs[d])
        p = b.add(b.sub(b.mul(index.multi[d], i64(wd.stride)), i64(wd.pad_lo)),
                  b.mul(w, i64(wd.rhs_dilate)))
        if wd.lhs_dilate != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(p, i64(wd.lhs_dilate)), i64(0)))
            p = b.sdiv(p, i64(wd.lhs_dilate))
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", p, i64(op.dims[d]))))
        p = b.select(b.icmp_signed("<", p, i64(0)), i64(0), p)
        p = b.select(b.icmp_signed(">", p, i64(max(op.dims[d] - 1, 0))), i64(max(op.dims[d] - 1, 0)), p)
        multi.append(p)
    if op.size:
        xs = [ops[k](Index(b, shapes[k], multi=list(multi))) for k in range(n)]
        cur = acc.get()
        with kb.reassociating():
            new = inline_computation(kb, inst.attrs["to_apply"], cur + xs)
        acc.set(_select_all(b, ok, new, cur))
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    out = acc.get()
    return out if inst.shape.is_tuple else out[0]


@emits_kernel("select-and-scatter")
def _emit_select_and_scatter(kb, inst, ops, outputs):
    """The output starts as init; for each source element (row-major) the window's
    selected operand position (the first valid one that `select` keeps over every later
    one) receives scatter(source, current)."""
    from .indexing import _copy_all
    from .types import I64, load_elem, storage_type, store_elem
    b = kb.b
    op_shape, src_shape = inst.operands[0].shape, inst.operands[1].shape
    (out_ptr, out_shape), = outputs
    init = ops[2]
    _copy_all(kb, lambda index: init(Index(b, inst.operands[2].shape, multi=[])), out_ptr, out_shape)
    if op_shape.size == 0 or src_shape.size == 0:
        return
    window = inst.attrs.get("window")
    dims = list(window.dims) if window is not None and window.dims else []
    sel_comp, sc_comp = inst.attrs["select"], inst.attrs["scatter"]
    stack, sivs = [], []
    for d in range(src_shape.rank):
        cm = for_range(b, 0, src_shape.dims[d], name=f"s{d}")
        sivs.append(cm.__enter__())
        stack.append(cm)
    has = kb.alloca_entry(I1, name="has")
    b.store(ir.Constant(I1, 0), has)
    idx_slots = [kb.alloca_entry(I64, name=f"sel{d}") for d in range(op_shape.rank)]
    zero_v = load_elem(b, op_shape.dtype, b.gep(out_ptr, [i64(0)], source_etype=storage_type(out_shape.dtype)))
    val_acc = _Acc(kb, [zero_v])
    wstack, wivs = [], []
    for d, wd in enumerate(dims):
        cm = for_range(b, 0, wd.size, name=f"w{d}")
        wivs.append(cm.__enter__())
        wstack.append(cm)
    ok = ir.Constant(I1, 1)
    pos = []
    for d in range(op_shape.rank):
        wd = dims[d] if d < len(dims) else None
        p = sivs[d] if wd is None else b.add(b.sub(b.mul(sivs[d], i64(wd.stride)), i64(wd.pad_lo)),
                                             b.mul(wivs[d], i64(wd.rhs_dilate)))
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", p, i64(op_shape.dims[d]))))
        pos.append(p)
    with b.if_then(ok):
        cur = ops[0](Index(b, op_shape, multi=list(pos)))
        had = b.load(has, typ=I1)
        sel = val_acc.get()[0]
        with b.if_else(had) as (then, otherwise):
            with then:
                keep = inline_computation(kb, sel_comp, [sel, cur])[0]
                take_then = b.not_(keep)
                then_block = b.block
            with otherwise:
                take_else = ir.Constant(I1, 1)
                else_block = b.block
        take = b.phi(I1)
        take.add_incoming(take_then, then_block)
        take.add_incoming(take_else, else_block)
        with b.if_then(take):
            val_acc.set([cur])
            for s, p in zip(idx_slots, pos):
                b.store(p, s)
            b.store(ir.Constant(I1, 1), has)
    for cm in reversed(wstack):
        cm.__exit__(None, None, None)
    with b.if_then(b.load(has, typ=I1)):
        multi = [b.load(s, typ=I64) for s in idx_slots]
        p = b.gep(out_ptr, [Index(b, out_shape, multi=multi).linear],
                  source_etype=storage_type(out_shape.dtype), inbounds=True)
        current = load_elem(b, out_shape.dtype, p)
        src = ops[1](Index(b, src_shape, multi=list(sivs)))
        store_elem(b, out_shape.dtype, inline_computation(kb, sc_comp, [src, current])[0], p)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
