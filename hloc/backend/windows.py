"""reduce-window as an element generator (XLA's elemental reduce-window).

For each output position a loop nest runs over the window; the operand position is
`out*stride - pad_lo + w*window_dilation`, divided by the base dilation. Positions in
the padding or between dilated elements contribute nothing (the init value stands for
them, as in HLO); the read itself uses a clamped index, so it is always in bounds.
"""
from __future__ import annotations

from llvmlite import ir

from .elementwise import select_value
from .loops import Acc, Index, clamp_i64, i64, loop_names, loop_nest
from .reductions import inline_computation
from .registry import emits, emits_kernel
from .types import I1


def _window_position(b, wd, out_iv, w_iv, size):
    """(operand position clamped into [0, size), whether it is a real element) of window
    element `w_iv` for output/source position `out_iv` along one dimension (`wd` None: no
    window there, the position itself)."""
    if wd is None:
        return out_iv, ir.Constant(I1, 1)
    w = w_iv if wd.reversal is False else b.sub(i64(wd.size - 1), w_iv)
    p = b.add(b.sub(b.mul(out_iv, i64(wd.stride)), i64(wd.pad_lo)), b.mul(w, i64(wd.rhs_dilate)))
    ok = ir.Constant(I1, 1)
    if wd.lhs_dilate != 1:
        ok = b.icmp_signed("==", b.srem(p, i64(wd.lhs_dilate)), i64(0))
        p = b.sdiv(p, i64(wd.lhs_dilate))
    ok = b.and_(ok, b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", p, i64(size))))
    return clamp_i64(b, p, 0, max(size - 1, 0)), ok


def _window(inst):
    window = inst.attrs.get("window")
    return list(window.dims) if window is not None and window.dims else []


def _positions(b, dims, outer, wivs, shape):
    """Operand multi-index (clamped) and validity of window element `wivs` at `outer`."""
    ok, multi = ir.Constant(I1, 1), []
    for d in range(shape.rank):
        wd = dims[d] if d < len(dims) else None
        p, valid = _window_position(b, wd, outer[d], wivs[d] if wd is not None else None, shape.dims[d])
        ok = b.and_(ok, valid)
        multi.append(p)
    return multi, ok


@emits("reduce-window")
def _emit_reduce_window(kb, inst, ops, index):
    b = kb.b
    n = len(inst.operands) // 2
    shapes = [o.shape for o in inst.operands[:n]]
    dims = _window(inst)
    inits = [ops[n + k](Index(b, inst.operands[n + k].shape, multi=[])) for k in range(n)]
    acc = Acc(kb, inits)
    with loop_nest(b, [wd.size for wd in dims], names=loop_names("w", len(dims))) as ivs:
        multi, ok = _positions(b, dims, index.multi, ivs, shapes[0])
        if shapes[0].size:
            xs = [ops[k](Index(b, shapes[k], multi=list(multi))) for k in range(n)]
            cur = acc.get()
            with kb.reassociating():
                new = inline_computation(kb, inst.attrs["to_apply"], cur + xs)
            acc.set([select_value(kb, ok, x, c) for x, c in zip(new, cur)])
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
    dims = _window(inst)
    sel_comp, sc_comp = inst.attrs["select"], inst.attrs["scatter"]
    with loop_nest(b, src_shape.dims, names=loop_names("s", src_shape.rank)) as sivs:
        has = kb.alloca_entry(I1, name="has")
        b.store(ir.Constant(I1, 0), has)
        idx_slots = [kb.alloca_entry(I64, name=f"sel{d}") for d in range(op_shape.rank)]
        zero_v = load_elem(b, op_shape.dtype, b.gep(out_ptr, [i64(0)], source_etype=storage_type(out_shape.dtype)))
        val_acc = Acc(kb, [zero_v])
        with loop_nest(b, [wd.size for wd in dims], names=loop_names("w", len(dims))) as wivs:
            pos, ok = _positions(b, dims, sivs, wivs, op_shape)
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
                    for slot, p in zip(idx_slots, pos):
                        b.store(p, slot)
                    b.store(ir.Constant(I1, 1), has)
        with b.if_then(b.load(has, typ=I1)):
            multi = [b.load(slot, typ=I64) for slot in idx_slots]
            p = b.gep(out_ptr, [Index(b, out_shape, multi=multi).linear],
                      source_etype=storage_type(out_shape.dtype), inbounds=True)
            current = load_elem(b, out_shape.dtype, p)
            src = ops[1](Index(b, src_shape, multi=list(sivs)))
            store_elem(b, out_shape.dtype, inline_computation(kb, sc_comp, [src, current])[0], p)
