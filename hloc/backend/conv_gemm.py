"""Large convolutions through GEMM: im2col in fixed row chunks, then the dot path's gemm.

A standalone `convolution` is computed here (in its computation's function, like a BLAS
dot) instead of by the direct element generator (hloc.backend.convolution) when: xla-cpu
numerics (GEMM sums in another order; ieee keeps the direct loops' order); f32/f64
operands and result of one type; feature_group_count = batch_group_count = 1; and the
product M*O*K (M output positions, O output features, K = taps x input features) is at
least CONV_GEMM_MIN_WORK (with the emitted GEMM also O*K >= EMITTED_MIN_OK). Strides,
padding (negative too), base and window dilation and reversal are index arithmetic of
the im2col copy, which checks every tap (a tap outside the input stores 0; its read is
clamped into the buffer).

The output's rows are its batch and spatial positions. Where the output feature is the
minor-most physical dimension, C[rows x O] = A[rows x K] W[K x O] with rows in physical
order; otherwise the positions physically outside the feature dimension are an outer
loop and, per outer index, C^T[O x rows] = W^T A^T over the inner positions. The kernel
is W[K x O] with K its other dimensions in physical order. A is built `chunk` rows at a
time in a stack buffer of at most SCRATCH_BYTES (one per computation function, shared by
its convolutions; no arena space), one gemm per chunk. Where a whole row of K would
leave fewer than MIN_CHUNK rows (weight gradients: K = batch x spatial), or the kernel's
output feature lies inside K's dimensions (HWOI), K is sliced along the kernel's leading
dimensions until each slice of W is a matrix with a unit stride and fits, and each
slice's gemm adds to the previous ones (beta = 1).

gemm is hloc.backend.blas's: NumPy's OpenBLAS in the JIT, the emitted GEMM
(hloc.backend.gemm) with Options(gemm="emitted"), i.e. in the AOT library. Chunks and
slices depend on the shape only and gemm's per-element order not on threads, so results
do not depend on the thread count.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .loops import at_entry, for_range, i64, minor_to_major, strides
from .types import F32, F64, I1, I32, opaque

# Below this many multiply-adds the direct loops are as fast. benchmarks/conv.py, 2 shared
# cores, OpenBLAS on one thread: im2col + OpenBLAS takes 0.3-0.95x the direct loops' time
# from ~1k multiply-adds up (0.014 vs 0.017 ms at 1k, 0.016 vs 0.049 at 37k, 2.2 vs 75 ms
# at 85M) and never more.
CONV_GEMM_MIN_WORK = 4096
# The emitted GEMM computes NR (2 vectors) output features per tile: with few output
# features and a short K it loses to the direct loops (O=4, K=9: 1.45x; O=1, K=72: 1.2x;
# O=4, K=36: 0.68x), so with it a rows x O gemm needs O * K at least this.
EMITTED_MIN_OK = 128
SCRATCH_BYTES = 128 * 1024      # the im2col chunk lives on the stack
MIN_CHUNK = 16                  # fewer rows per gemm than this: direct loops instead
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


@dataclass
class ConvGemm:
    dt: object
    outer: list          # output dims looped outside the gemm (physical order, major first)
    rows: list           # output dims that are gemm rows (physical order, major first)
    n_rows: int
    swap: bool           # C^T = W^T A^T (output feature not minor-most)
    kdims: list          # kernel dims of K in physical order (major first)
    k: int
    o: int
    w_o_minor: bool      # W_slice as [K x O]: o has stride 1 (else K's minor dim has)
    w_ld: int            # and the other stride (the leading dimension for gemm)
    chunk: int           # gemm rows per im2col chunk
    split: int           # kdims[:split] are looped outside the gemm (K slices, beta = 1)
    slice_k: int         # K of one slice: the product of kdims[split:]


def plan(inst, options) -> ConvGemm | None:
    """A ConvGemm for `inst` (a convolution) or None when the direct loops compute it."""
    if inst.opcode != "convolution" or not options.xla or inst.shape.is_tuple:
        return None
    a = inst.attrs
    dn, window = a["dim_labels"], a.get("window")
    lhs, rhs, out = inst.operands[0].shape, inst.operands[1].shape, inst.shape
    dt = out.dtype
    if dt.name not in ("f32", "f64") or lhs.dtype != dt or rhs.dtype != dt:
        return None
    if (a.get("feature_group_count") or 1) != 1 or (a.get("batch_group_count") or 1) != 1:
        return None
    nsp = len(dn.input_spatial)
    if window is None or len(list(window.dims or ())) != nsp:
        return None
    if min(lhs.size, rhs.size, out.size) <= 0:
        return None
    kphys = list(reversed(minor_to_major(rhs)))
    ko = dn.kernel_output_feature
    kdims = [d for d in kphys if d != ko]
    ks = strides(rhs)
    k = 1
    for d in kdims:
        k *= rhs.dims[d]
    o = rhs.dims[ko]
    ophys = list(reversed(minor_to_major(out)))
    at = ophys.index(dn.output_feature)
    outer, rows = ophys[:at], ophys[at + 1:]
    swap = bool(rows)
    if not swap:
        outer, rows = [], outer
    n_rows = 1
    for d in rows:
        n_rows *= out.dims[d]
    m_total = out.size // o
    if m_total * o * k < CONV_GEMM_MIN_WORK:
        return None
    if options.gemm != "blas" and not swap and o * k < EMITTED_MIN_OK:
        return None
    item = dt.np.itemsize
    for split in range(len(kdims)):
        g = kdims[split:]
        at_o = kphys.index(ko)
        first, last = kphys.index(g[0]), kphys.index(g[-1])
        if first < at_o < last:
            continue                  # o inside the slice's dims: W_slice has no matrix stride
        if ks[ko] == 1:
            w_o_minor, w_ld = True, ks[g[-1]]
        elif ks[g[-1]] == 1:
            w_o_minor, w_ld = False, ks[ko]
        else:
            continue
        slice_k = 1
        for d in g:
            slice_k *= rhs.dims[d]
        chunk = min(n_rows, max(1, SCRATCH_BYTES // (slice_k * item)))
        if chunk >= min(MIN_CHUNK, n_rows):
            return ConvGemm(dt, outer, rows, n_rows, swap, kdims, k, o, w_o_minor, w_ld, chunk, split,
                            slice_k)
    return None


def im2col_bytes(inst, p: ConvGemm) -> int:
    """Bytes the im2col loops write (one K row per output position; they read about as
    many): the only loops of a convolution through a library gemm that LLVM compiles."""
    return inst.shape.size // p.o * p.k * p.dt.np.itemsize


def _digits(b, linear, dims, sizes):
    """The multi-index (dict dim -> i64) of `linear` over `dims` (major first)."""
    out = {}
    for d in reversed(dims):
        n = sizes[d]
        out[d] = b.urem(linear, i64(n)) if n > 1 else i64(0)
        linear = b.udiv(linear, i64(n)) if n > 1 else linear
    return out


def emit(em, inst, p: ConvGemm) -> None:
    """The im2col copies and gemm calls of `p` in computation emitter `em`."""
    from .blas import _decl
    b, mcx = em.b, em.mcx
    a = inst.attrs
    dn, wdims = a["dim_labels"], list(a["window"].dims)
    lhs, rhs, out = inst.operands[0].shape, inst.operands[1].shape, inst.shape
    t = F32 if p.dt.name == "f32" else F64
    item = p.dt.np.itemsize
    fn = _decl(mcx, p.dt)
    (lbuf,), (rbuf,), (obuf,) = em.leaves(inst.operands[0]), em.leaves(inst.operands[1]), em.leaves(inst)
    x_ptr, w_ptr, c_ptr = em.ptr(lbuf), em.ptr(rbuf), em.ptr(obuf)
    scratch = _scratch(em)
    sl = strides(lhs)
    osz = list(out.dims)
    n_outer = 1
    for d in p.outer:
        n_outer *= osz[d]
    ksp = {dn.kernel_spatial[j]: j for j in range(len(wdims))}
    lead = p.kdims[:p.split]
    n_slices = p.k // p.slice_k
    ksz, kst = list(rhs.dims), strides(rhs)
    sk = p.slice_k
    with for_range(b, 0, n_outer, name=f"{inst.name}.outer") as oi, \
            for_range(b, 0, (p.n_rows + p.chunk - 1) // p.chunk, name=f"{inst.name}.chunk") as ci, \
            for_range(b, 0, n_slices, name=f"{inst.name}.kslice") as ks:
        outer_idx = _digits(b, oi, p.outer, osz)
        fixed = _digits(b, ks, lead, ksz)
        row0 = b.mul(ci, i64(p.chunk))
        left = b.sub(i64(p.n_rows), row0)
        rows_here = b.select(b.icmp_signed("<", left, i64(p.chunk)), left, i64(p.chunk))
        with for_range(b, 0, rows_here, name=f"{inst.name}.r") as r:
            pos = dict(outer_idx)
            pos.update(_digits(b, b.add(row0, r), p.rows, osz))
            _im2col_row(b, t, p, dn, wdims, lhs, rhs, sl, pos, ksp, x_ptr, scratch, r, fixed)
        # the slice's rows of W as [K x O]: o minor-most (W, ld O) or major-most (W^T, ld K)
        w_off = i64(0)
        for d, v in fixed.items():
            w_off = b.add(w_off, b.mul(v, i64(kst[d])))
        wp = b.gep(w_ptr, [w_off], source_etype=t, inbounds=True)
        if p.swap:           # C^T[O x rows]: m = O, n = rows_here, A' = W^T, B' = im2col^T
            c_off = b.add(b.mul(oi, i64(p.o * p.n_rows)), row0)
            ta, lda = (TRANS, p.w_ld) if p.w_o_minor else (NO_TRANS, p.w_ld)
            args = [ta, NO_TRANS, i64(p.o), rows_here, i64(sk), wp, i64(lda), scratch,
                    i64(p.chunk), c_off, i64(p.n_rows)]
        else:                # C[rows x O]: A = im2col, B = W
            c_off = b.mul(row0, i64(p.o))
            tb, ldb = (NO_TRANS, p.w_ld) if p.w_o_minor else (TRANS, p.w_ld)
            args = [NO_TRANS, tb, rows_here, i64(p.o), i64(sk), scratch, i64(sk), wp,
                    i64(ldb), c_off, i64(p.o)]
        ta_, tb_, m, n, k, ap, lda_, bp, ldb_, coff, ldc = args
        cp = b.gep(c_ptr, [b.mul(coff, i64(item))], source_etype=ir.IntType(8), inbounds=True)
        beta = b.select(b.icmp_signed("==", ks, i64(0)), ir.Constant(t, 0.0), ir.Constant(t, 1.0))
        b.call(fn, [ir.Constant(I32, ROW_MAJOR), ir.Constant(I32, ta_), ir.Constant(I32, tb_), m, n, k,
                    ir.Constant(t, 1.0), ap, lda_, bp, ldb_, beta, cp, ldc])


def _any_plan(inst, options) -> ConvGemm | None:
    """plan() of a convolution, or of the one convolution of a library fusion."""
    if inst.opcode == "fusion":
        from .library_fusion import plan as library_plan
        lp = library_plan(inst, options)
        return lp[1] if lp is not None and lp[0].opcode == "convolution" else None
    return plan(inst, options)


def _scratch(em):
    """One stack buffer per computation function, shared by its convolutions (they run
    one at a time): the largest chunk any of them needs."""
    slot = getattr(em, "_conv_im2col", None)      # cached on the emitter of this function
    if slot is None:
        size = max((p.chunk * p.slice_k * p.dt.np.itemsize for i in em.comp.instructions
                    if (p := _any_plan(i, em.mcx.options)) is not None), default=0)
        b = em.b
        with at_entry(b, em.fn):
            arr = b.alloca(ir.ArrayType(ir.IntType(8), max(size, 1)), name="im2col")
            arr.align = 64
            slot = opaque(b, arr)
        em._conv_im2col = slot
    return slot


def _im2col_row(b, t, p, dn, wdims, lhs, rhs, sl, pos, ksp, x_ptr, scratch, r, fixed):
    """Row r of the chunk: for every K column of the slice (kernel dims in physical
    order; the leading ones `fixed`) the input element the tap reads, or 0 outside the
    (dilated, padded) input."""
    ok = ir.Constant(I1, 1)
    base = b.mul(pos[dn.output_batch], i64(sl[dn.input_batch]))
    stack, kk = [], None
    for d in p.kdims:
        if d in fixed:
            iv = fixed[d]
        else:
            cm = for_range(b, 0, rhs.dims[d], name=f"k{d}")
            iv = cm.__enter__()
            stack.append(cm)
            kk = iv if kk is None else b.add(b.mul(kk, i64(rhs.dims[d])), iv)
        if d == dn.kernel_input_feature:
            base = b.add(base, b.mul(iv, i64(sl[dn.input_feature])))
            continue
        j = ksp[d]
        wd = wdims[j]
        tap = b.sub(i64(wd.size - 1), iv) if wd.reversal else iv
        und = b.add(b.sub(b.mul(pos[dn.output_spatial[j]], i64(wd.stride)), i64(wd.pad_lo)),
                    b.mul(tap, i64(wd.rhs_dilate)))
        if wd.lhs_dilate > 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(und, i64(wd.lhs_dilate)), i64(0)))
            und = b.sdiv(und, i64(wd.lhs_dilate))
        n = lhs.dims[dn.input_spatial[j]]
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", und, i64(0)), b.icmp_signed("<", und, i64(n))))
        und = b.select(b.icmp_signed("<", und, i64(0)), i64(0), und)
        und = b.select(b.icmp_signed(">", und, i64(n - 1)), i64(n - 1), und)
        base = b.add(base, b.mul(und, i64(sl[dn.input_spatial[j]])))
    x = b.load(b.gep(x_ptr, [base], source_etype=t, inbounds=True), typ=t)
    v = b.select(ok, x, ir.Constant(t, 0.0))
    at = b.add(b.mul(kk, i64(p.chunk)), r) if p.swap else b.add(b.mul(r, i64(p.slice_k)), kk)
    b.store(v, b.gep(scratch, [at], source_etype=t, inbounds=True))
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
