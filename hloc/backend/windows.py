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
from .registry import emits
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
