"""fft as an element generator: a direct DFT per output element (O(N) each), in f64
with exact integer phase reduction, as the interpreter's conventions (HloEvaluator's
FftTransform): inputs truncated or zero-padded to fft_length, 1/N on the inverses,
IRFFT through the Hermitian extension of its half spectrum (real part of the full sum).
A fast transform is future work (issue 12); this is correct for any size.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .loops import Index, for_range, i64
from .reductions import _Acc
from .registry import emits
from .types import F32, F64, Cplx


@emits("fft")
def _emit_fft(kb, inst, ops, index):
    b = kb.b
    kind = inst.attrs["fft_type"]
    lengths = [int(v) for v in inst.attrs["fft_length"]]
    src = inst.operands[0].shape
    out_dt = inst.shape.dtype
    r = len(lengths)
    tdims = list(range(src.rank - r, src.rank))
    inverse = kind in ("IFFT", "IRFFT")
    sign = 1.0 if inverse else -1.0
    zero = ir.Constant(F64, 0.0)
    acc = _Acc(kb, [Cplx(zero, zero)])
    total = 1
    for n in lengths:
        total *= n
    out_t = F32 if out_dt.name in ("f32", "c64") else F64
    if total == 0 or src.size == 0:
        z = ir.Constant(out_t, 0.0)
        return Cplx(z, z) if out_dt.kind == "complex" else z
    stack, ns = [], []
    for k, n in enumerate(lengths):
        cm = for_range(b, 0, n, name=f"f{k}")
        ns.append(cm.__enter__())
        stack.append(cm)
    # phase = sum_i (k_i * n_i mod L_i) / L_i
    phase = zero
    for k, d in enumerate(tdims):
        prod = b.urem(b.mul(index.multi[d], ns[k]), i64(lengths[k]))
        phase = b.fadd(phase, b.fdiv(b.uitofp(prod, F64), ir.Constant(F64, float(lengths[k]))))
    ang = b.fmul(phase, ir.Constant(F64, sign * 2 * math.pi))
    cos_f = kb.mcx.libm("cos", F64, [F64])
    sin_f = kb.mcx.libm("sin", F64, [F64])
    wr, wi = b.call(cos_f, [ang]), b.call(sin_f, [ang])
    pos = list(ns)
    conj = None
    if kind == "IRFFT":       # k_last > L/2: conj(X[-k mod L]) over all transformed dims
        last = lengths[-1]
        conj = b.icmp_signed(">", ns[-1], i64(last // 2))
        pos = [b.select(conj, b.urem(b.sub(i64(n), p), i64(n)), p) for p, n in zip(ns, lengths)]
    inside = ir.Constant(ir.IntType(1), 1)
    multi = list(index.multi[:src.rank - r])
    for k, d in enumerate(tdims):
        n_in = src.dims[d]
        inside = b.and_(inside, b.icmp_signed("<", pos[k], i64(n_in)))
        multi.append(b.select(b.icmp_signed("<", pos[k], i64(n_in)), pos[k], i64(max(n_in - 1, 0))))
    x = ops[0](Index(b, src, multi=multi))
    if isinstance(x, Cplx):
        xr, xi = x.re, x.im
        if xr.type == F32:
            xr, xi = b.fpext(xr, F64), b.fpext(xi, F64)
    else:
        xr = b.fpext(x, F64) if x.type == F32 else x
        xi = zero
    if conj is not None:
        xi = b.select(conj, b.fneg(xi), xi)
    xr, xi = b.select(inside, xr, zero), b.select(inside, xi, zero)
    cur = acc.get()[0]
    re = b.fadd(cur.re, b.fsub(b.fmul(xr, wr), b.fmul(xi, wi)))
    im = b.fadd(cur.im, b.fadd(b.fmul(xr, wi), b.fmul(xi, wr)))
    acc.set([Cplx(re, im)])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    v = acc.get()[0]
    re, im = v.re, v.im
    if inverse:
        scale = ir.Constant(F64, 1.0 / total)
        re, im = b.fmul(re, scale), b.fmul(im, scale)
    if out_t == F32:
        re, im = b.fptrunc(re, F32), b.fptrunc(im, F32)
    return Cplx(re, im) if out_dt.kind == "complex" else re
