"""convolution as an element generator (XLA's elemental convolution; HloEvaluator's
rules for feature and batch groups, base and window dilation, padding, reversal).

Per output element: a loop over the kernel's input features and spatial window; a tap
outside the (dilated, padded) input contributes nothing, and its read uses a clamped
index, so every load is in bounds. Accumulation is in the output's compute type.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from .conversions import convert_value
from .loops import Acc, Index, for_range, i64
from .reductions import _mul_add, _zero
from .registry import emits
from .types import I1, round_narrow


@emits("convolution")
def _emit_convolution(kb, inst, ops, index):
    a = inst.attrs
    dn = a["dim_labels"]
    window = a.get("window")
    b = kb.b
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    out_dt = inst.shape.dtype
    fgc = a.get("feature_group_count") or 1
    bgc = a.get("batch_group_count") or 1
    nsp = len(dn.input_spatial)
    wdims = list(window.dims) if window is not None and window.dims else []
    if len(wdims) != nsp:
        raise unsupported(inst, "convolution without a full window in the compiled back end")
    b_in = lhs.dims[dn.input_batch]
    f_in = lhs.dims[dn.input_feature]
    o_size = rhs.dims[dn.kernel_output_feature]
    in_group = f_in // fgc
    out_group = o_size // fgc
    batch_group_size = b_in // bgc
    depthwise = o_size // bgc if bgc > 1 else 1
    m = index.multi
    ob, o = m[dn.output_batch], m[dn.output_feature]
    if bgc > 1:
        bi = b.urem(b.add(ob, b.mul(b.udiv(o, i64(depthwise)), i64(batch_group_size))), i64(b_in))
    else:
        bi = ob
    fbase = b.mul(b.udiv(o, i64(out_group)), i64(in_group)) if fgc > 1 else i64(0)
    acc = Acc(kb, [_zero(out_dt)])
    if lhs.size == 0 or rhs.size == 0:
        return acc.get()[0]
    stack = []
    cm = for_range(b, 0, in_group, name="ci")
    rz = cm.__enter__()
    stack.append(cm)
    ks = []
    for k, wd in enumerate(wdims):
        cm = for_range(b, 0, wd.size, name=f"kw{k}")
        ks.append(cm.__enter__())
        stack.append(cm)
    ok = ir.Constant(I1, 1)
    lm, rm = [None] * lhs.rank, [None] * rhs.rank
    lm[dn.input_batch] = bi
    lm[dn.input_feature] = b.add(fbase, rz)
    rm[dn.kernel_input_feature] = rz
    rm[dn.kernel_output_feature] = o
    for k, wd in enumerate(wdims):
        pos = m[dn.output_spatial[k]]
        und = b.add(b.sub(b.mul(pos, i64(wd.stride)), i64(wd.pad_lo)), b.mul(ks[k], i64(wd.rhs_dilate)))
        if wd.lhs_dilate > 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(und, i64(wd.lhs_dilate)), i64(0)))
            und = b.sdiv(und, i64(wd.lhs_dilate))
        n = lhs.dims[dn.input_spatial[k]]
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", und, i64(0)), b.icmp_signed("<", und, i64(n))))
        und = b.select(b.icmp_signed("<", und, i64(0)), i64(0), und)
        und = b.select(b.icmp_signed(">", und, i64(max(n - 1, 0))), i64(max(n - 1, 0)), und)
        lm[dn.input_spatial[k]] = und
        rm[dn.kernel_spatial[k]] = b.sub(i64(wd.size - 1), ks[k]) if wd.reversal else ks[k]
    x = convert_value(kb, inst, ops[0](Index(b, lhs, multi=lm)), lhs.dtype, out_dt)
    y = convert_value(kb, inst, ops[1](Index(b, rhs, multi=rm)), rhs.dtype, out_dt)
    cur = acc.get()[0]
    with kb.reassociating():
        new = _mul_add(kb, out_dt, cur, x, y)
    from .elementwise import select_value
    acc.set([select_value(kb, ok, new, cur)])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    v = acc.get()[0]
    return round_narrow(b, out_dt, v) if out_dt.kind == "float" else v
