"""An emitted, tiled and vectorised GEMM: what large dots call when no BLAS is linked.

`gemm_function(mcx, dtype)` defines `hloc.gemm.<t>` with the cblas `?gemm` signature that
hloc.backend.blas calls (order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C,
ldc; ILP64 sizes, complex alpha/beta by pointer), so a module built with
`Options(gemm="emitted")` — the AOT library, or the JIT when asked — needs no BLAS.

f32/f64 with alpha = 1 and beta = 0 or 1 (every call hloc emits; beta = 1 continues each
element's sum from C, as convolutions sliced along K need) take the blocked path, in the
BLIS style: K in blocks of KC, rows in blocks of MC, for each NR-wide column strip a
KC x NR panel of B packed on the stack (zero padded, so edge strips use the same code),
then an MR x NR register tile per MR rows: per k one broadcast of A and NR/VW vector loads
of the packed panel, MR * NR/VW fused multiply-adds into accumulators that stay in
registers (NR = 2 vectors; MR = 12 with 32 vector registers, 6 with 16). Edge row tiles
clamp their extra rows' A reads and do not store them. Rows are split over work groups
(hloc.parallel) in whole tiles. Every element is the sequence acc = fma(a[i,k], b[k,j],
acc) over k in order, whatever the tiling, vector width or thread count: results do not
depend on any of them (and differ from OpenBLAS's only in summation order).
Other alpha/beta values and complex types take a plain loop with the same per-element order.
"""
from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir

from .loops import for_range, i64
from .types import F32, F64, I32, I64, PTR, VOID, opaque

KC_BYTES = 1024            # K block: 256 f32 / 128 f64
MAX_GROUPS = 16
MIN_PARALLEL = 1 << 21          # multiply-adds below which one work group does everything
ROW_MAJOR, COL_MAJOR, NO_TRANS = 101, 102, 111
ARGS_T = ir.LiteralStructType([I64, I64, I64, PTR, I64, I64, PTR, I64, I64, PTR, I64, I64])
# M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, accumulate (beta = 1: C += A B)


def host_vector_bytes() -> int:
    feats = llvm.get_host_cpu_features().flatten()
    return vector_bytes_for(feats, llvm.get_host_cpu_name(), llvm.get_process_triple())


def vector_bytes_for(features: str, cpu: str, triple: str) -> int:
    """The widest vector register of a target (only speed depends on it)."""
    if "+avx512f" in features:
        return 64
    if "+avx" in features.split(","):
        return 32
    if not features and triple.startswith("x86_64"):
        if any(s in cpu for s in ("avx512", "x86-64-v4", "znver4", "znver5", "icelake",
                                  "sapphirerapids", "tigerlake", "cooperlake", "cascadelake")):
            return 64
        if any(s in cpu for s in ("x86-64-v3", "haswell", "broadwell", "skylake", "znver",
                                  "alderlake", "raptorlake")):
            return 32
    return 16


def _regs32(mcx, vbytes) -> bool:
    return vbytes == 64 or mcx.module.triple.startswith(("aarch64", "arm64"))


def gemm_function(mcx, dt) -> ir.Function:
    name = f"hloc.gemm.{dt.name}"
    fn = mcx._decls.get(name)
    if fn is not None:
        return fn
    t = {"f32": F32, "f64": F64, "c64": F32, "c128": F64}[dt.name]
    complex_ = dt.name in ("c64", "c128")
    s = PTR if complex_ else t
    fn = ir.Function(mcx.module, ir.FunctionType(VOID, [I32, I32, I32, I64, I64, I64, s, PTR, I64,
                                                        PTR, I64, s, PTR, I64]), name=mcx.fixed(name))
    fn.linkage = "internal"
    mcx._decls[name] = fn
    names = ("order", "ta", "tb", "m", "n", "k", "alpha", "a", "lda", "b", "ldb", "beta", "c", "ldc")
    for a, nm in zip(fn.args, names):
        a.name = nm
    order, ta, tb, m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    row = b.icmp_signed("!=", order, ir.Constant(I32, COL_MAJOR))
    pick = lambda x, y: b.select(row, x, y)    # noqa: E731  col-major: C^T = B^T A^T
    ta, tb = pick(ta, tb), pick(tb, ta)
    m, n = pick(m, n), pick(n, m)
    a, bm = pick(a, bm), pick(bm, a)
    lda, ldb = pick(lda, ldb), pick(ldb, lda)
    a_n = b.icmp_signed("==", ta, ir.Constant(I32, NO_TRANS))
    b_n = b.icmp_signed("==", tb, ir.Constant(I32, NO_TRANS))
    rsa, csa = b.select(a_n, lda, i64(1)), b.select(a_n, i64(1), lda)
    rsb, csb = b.select(b_n, ldb, i64(1)), b.select(b_n, i64(1), ldb)
    empty = b.or_(b.icmp_signed("<=", m, i64(0)), b.icmp_signed("<=", n, i64(0)))
    with b.if_then(empty):
        b.ret_void()
    strided = (m, n, k, a, rsa, csa, bm, rsb, csb, c, ldc)
    if complex_:
        _reference_complex(b, t, alpha, beta, *strided)
        b.ret_void()
        return fn
    accumulate = b.fcmp_ordered("==", beta, ir.Constant(t, 1.0))
    plain = b.and_(b.fcmp_ordered("==", alpha, ir.Constant(t, 1.0)),
                   b.or_(b.fcmp_ordered("==", beta, ir.Constant(t, 0.0)), accumulate))
    plain = b.and_(plain, b.icmp_signed(">", k, i64(0)))
    with b.if_else(plain) as (fast, other):
        with fast:
            _blocked_call(mcx, b, t, strided + (b.zext(accumulate, I64),))
        with other:
            _reference_real(mcx, b, t, alpha, beta, *strided)
    b.ret_void()
    return fn


CBLAS = {"f32": "cblas_sgemm", "f64": "cblas_dgemm", "c64": "cblas_cgemm", "c128": "cblas_zgemm"}
INT_MAX = (1 << 31) - 1


def function_for(mcx, dt) -> ir.Function:
    """What hloc.backend.blas calls for Options.gemm "emitted" or "cblas"."""
    return cblas_function(mcx, dt) if mcx.options.gemm == "cblas" else gemm_function(mcx, dt)


def cblas_function(mcx, dt) -> ir.Function:
    """`hloc.cblas.<t>`: the same ILP64 signature onto a standard (LP64, `int` sizes)
    `cblas_?gemm` of a linked BLAS (`hloc compile --blas`); a size past INT_MAX, which an
    LP64 BLAS cannot take, goes to the emitted GEMM instead."""
    name = f"hloc.cblas.{dt.name}"
    fn = mcx._decls.get(name)
    if fn is not None:
        return fn
    inner = gemm_function(mcx, dt)
    ftype = inner.function_type
    fn = ir.Function(mcx.module, ftype, name=mcx.fixed(name))
    fn.linkage = "internal"
    mcx._decls[name] = fn
    narrow = [I32 if a == I64 else a for a in ftype.args]
    ext = mcx.intrinsic(CBLAS[dt.name], VOID, narrow)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    wide = [a for a in fn.args if a.type == I64]
    big = b.icmp_signed(">", wide[0], i64(INT_MAX))
    for a in wide[1:]:
        big = b.or_(big, b.icmp_signed(">", a, i64(INT_MAX)))
    with b.if_else(big) as (large, small):
        with large:
            b.call(inner, list(fn.args))
        with small:
            b.call(ext, [b.trunc(a, I32) if a.type == I64 else a for a in fn.args])
    b.ret_void()
    return fn


def _fma(mcx, ty):
    suffix = f"v{ty.count}{'f32' if ty.element == F32 else 'f64'}" if isinstance(ty, ir.VectorType) \
        else ("f32" if ty == F32 else "f64")
    return mcx.intrinsic(f"llvm.fma.{suffix}", ty, [ty, ty, ty])


def _elem(b, t, base, idx):
    return b.gep(base, [idx], source_etype=t, inbounds=True)


def _reference_real(mcx, b, t, alpha, beta, m, n, k, a, rsa, csa, bm, rsb, csb, c, ldc):
    """c[i,j] = alpha * sum_k fma(...) + beta * c[i,j] (c not read when beta == 0)."""
    fma = _fma(mcx, t)
    acc = b.alloca(t)
    with for_range(b, 0, m, name="ri") as i, for_range(b, 0, n, name="rj") as j:
        b.store(ir.Constant(t, 0.0), acc)
        with for_range(b, 0, k, name="rk") as kk:
            x = b.load(_elem(b, t, a, b.add(b.mul(i, rsa), b.mul(kk, csa))), typ=t)
            y = b.load(_elem(b, t, bm, b.add(b.mul(kk, rsb), b.mul(j, csb))), typ=t)
            b.store(b.call(fma, [x, y, b.load(acc, typ=t)]), acc)
        cp = _elem(b, t, c, b.add(b.mul(i, ldc), j))
        v = b.fmul(alpha, b.load(acc, typ=t))
        with b.if_else(b.fcmp_ordered("==", beta, ir.Constant(t, 0.0))) as (zero, nonzero):
            with zero:
                b.store(v, cp)
            with nonzero:
                b.store(b.fadd(v, b.fmul(beta, b.load(cp, typ=t))), cp)


def _reference_complex(b, t, alpha_p, beta_p, m, n, k, a, rsa, csa, bm, rsb, csb, c, ldc):
    ct = ir.ArrayType(t, 2)

    def load(base, idx):
        p = b.gep(base, [idx], source_etype=ct, inbounds=True)
        return (b.load(b.gep(p, [i64(0), ir.Constant(I32, 0)], source_etype=ct), typ=t),
                b.load(b.gep(p, [i64(0), ir.Constant(I32, 1)], source_etype=ct), typ=t))

    def mul(x, y):
        return (b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
                b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0])))
    alpha, beta = load(alpha_p, i64(0)), load(beta_p, i64(0))
    zero = ir.Constant(t, 0.0)
    beta_zero = b.and_(b.fcmp_ordered("==", beta[0], zero), b.fcmp_ordered("==", beta[1], zero))
    re, im = b.alloca(t), b.alloca(t)
    with for_range(b, 0, m, name="ci") as i, for_range(b, 0, n, name="cj") as j:
        b.store(zero, re)
        b.store(zero, im)
        with for_range(b, 0, k, name="ck") as kk:
            p = mul(load(a, b.add(b.mul(i, rsa), b.mul(kk, csa))),
                    load(bm, b.add(b.mul(kk, rsb), b.mul(j, csb))))
            b.store(b.fadd(b.load(re, typ=t), p[0]), re)
            b.store(b.fadd(b.load(im, typ=t), p[1]), im)
        v = mul(alpha, (b.load(re, typ=t), b.load(im, typ=t)))
        cp = b.gep(c, [b.add(b.mul(i, ldc), j)], source_etype=ct, inbounds=True)
        old = load(c, b.add(b.mul(i, ldc), j))
        old = (b.select(beta_zero, zero, old[0]), b.select(beta_zero, zero, old[1]))
        bc = mul(beta, old)
        v = (b.select(beta_zero, v[0], b.fadd(v[0], bc[0])), b.select(beta_zero, v[1], b.fadd(v[1], bc[1])))
        for part in (0, 1):
            b.store(v[part], b.gep(cp, [i64(0), ir.Constant(I32, part)], source_etype=ct))


def _blocked_call(mcx, b, t, strided):
    vbytes = getattr(mcx, "vector_bytes", None) or host_vector_bytes()
    kernel = _kernel(mcx, t, vbytes)
    mr = 12 if _regs32(mcx, vbytes) else 6
    args = opaque(b, b.alloca(ARGS_T))
    for idx, v in enumerate(strided):
        b.store(v, b.gep(args, [i64(0), ir.Constant(I32, idx)], source_etype=ARGS_T, inbounds=True))
    m, n, k = strided[:3]
    tiles = b.udiv(b.add(m, i64(mr - 1)), i64(mr))
    work = b.udiv(b.mul(b.mul(m, n), k), i64(MIN_PARALLEL))
    nwg = b.select(b.icmp_unsigned("<", work, tiles), work, tiles)
    nwg = b.select(b.icmp_unsigned("<", nwg, i64(MAX_GROUPS)), nwg, i64(MAX_GROUPS))
    with b.if_else(b.icmp_unsigned(">", nwg, i64(1))) as (par, one):
        with par:
            from .parallel import parallel_function
            b.call(parallel_function(mcx), [kernel, args, nwg])
        with one:
            b.call(kernel, [args, i64(0), i64(1)])


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _kernel(mcx, t, vbytes) -> ir.Function:
    """`void hloc.gemm.<t>.kernel(ptr args, i64 wg, i64 nwg)`: rows of work group wg."""
    item = 4 if t == F32 else 8
    vw = vbytes // item
    mr = 12 if _regs32(mcx, vbytes) else 6
    nv = 2
    nr = nv * vw
    mc = 8 * mr
    name = f"hloc.gemm.{'f32' if t == F32 else 'f64'}.kernel"
    fn = mcx._decls.get(name)
    if fn is not None:
        return fn
    fn = ir.Function(mcx.module, ir.FunctionType(VOID, [PTR, I64, I64]), name=mcx.fixed(name))
    fn.linkage = "internal"
    mcx._decls[name] = fn
    args, wg, nwg = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vt = ir.VectorType(t, vw)
    fma = _fma(mcx, vt)
    f = [b.load(b.gep(args, [i64(0), ir.Constant(I32, idx)], source_etype=ARGS_T, inbounds=True),
                typ=ty) for idx, ty in enumerate(ARGS_T.elements)]
    m, n, k, a, rsa, csa, bm, rsb, csb, c, ldc, accumulate = f
    kcb = KC_BYTES // item
    apack = b.alloca(ir.ArrayType(t, mc * kcb), name="apack")
    apack.align = 64
    apack = opaque(b, apack)
    panel_t = ir.ArrayType(t, kcb * nr)
    panel = b.alloca(panel_t, name="panel")
    panel.align = 64
    panel = opaque(b, panel)
    tile_t = ir.ArrayType(t, mr * nr)
    tile = b.alloca(tile_t, name="tile")
    tile.align = 64
    tile = opaque(b, tile)
    accs = [[opaque(b, b.alloca(vt, name=f"acc{r}_{v}")) for v in range(nv)] for r in range(mr)]
    tiles = b.udiv(b.add(m, i64(mr - 1)), i64(mr))
    lo = b.mul(b.udiv(b.mul(tiles, wg), nwg), i64(mr))
    hi = _min(b, m, b.mul(b.udiv(b.mul(tiles, b.add(wg, i64(1))), nwg), i64(mr)))
    zero_v = ir.Constant(vt, [0.0] * vw)
    row_vt = ir.VectorType(t, nr)

    with for_range(b, i64(0), k, "pc", step=i64(kcb)) as pc:
        kc = _min(b, i64(kcb), b.sub(k, pc))
        first = b.and_(b.icmp_signed("==", pc, i64(0)), b.icmp_signed("==", accumulate, i64(0)))
        with for_range(b, lo, hi, "ic", step=i64(mc)) as ic:
            ie = _min(b, hi, b.add(ic, i64(mc)))
            # pack A[ic:ie, pc:pc+kc] as MR-row strips, k-major (rows past ie repeat row ie-1)
            last_a = b.sub(ie, i64(1))
            with for_range(b, 0, b.sub(ie, ic), name="ai") as ii:
                src_row = _elem(b, t, a, b.mul(b.add(ic, ii), rsa))
                strip = b.udiv(ii, i64(mr))
                r = b.urem(ii, i64(mr))
                base = b.add(b.mul(b.mul(strip, kc), i64(mr)), r)
                with for_range(b, 0, kc, name="ak") as kk:
                    x = b.load(_elem(b, t, src_row, b.mul(b.add(pc, kk), csa)), typ=t)
                    b.store(x, _elem(b, t, apack, b.add(base, b.mul(kk, i64(mr)))))
            rows_here = b.sub(ie, ic)
            pad_end = b.mul(b.udiv(b.add(rows_here, i64(mr - 1)), i64(mr)), i64(mr))
            with for_range(b, rows_here, pad_end, name="ap") as ii:
                src_row = _elem(b, t, a, b.mul(last_a, rsa))
                strip = b.udiv(ii, i64(mr))
                r = b.urem(ii, i64(mr))
                base = b.add(b.mul(b.mul(strip, kc), i64(mr)), r)
                with for_range(b, 0, kc, name="apk") as kk:
                    x = b.load(_elem(b, t, src_row, b.mul(b.add(pc, kk), csa)), typ=t)
                    b.store(x, _elem(b, t, apack, b.add(base, b.mul(kk, i64(mr)))))
            with for_range(b, i64(0), n, "jc", step=i64(nr)) as jc:
                ncols = _min(b, i64(nr), b.sub(n, jc))
                # pack B[pc:pc+kc, jc:jc+nr] into the panel, zero padded to nr columns
                contiguous = b.and_(b.icmp_signed("==", csb, i64(1)), b.icmp_signed("==", ncols, i64(nr)))
                with b.if_else(contiguous) as (vec, gen):
                    with vec:
                        with for_range(b, 0, kc, name="pk") as kk:
                            src = _elem(b, t, bm, b.add(b.mul(b.add(pc, kk), rsb), jc))
                            row_v = b.load(src, typ=row_vt)
                            row_v.align = item
                            b.store(row_v, _elem(b, t, panel, b.mul(kk, i64(nr))))
                    with gen:
                        last = b.sub(ncols, i64(1))
                        with for_range(b, 0, kc, name="gk") as kk:
                            with for_range(b, 0, nr, name="gj") as j:
                                jj = _min(b, j, last)
                                x = b.load(_elem(b, t, bm, b.add(b.mul(b.add(pc, kk), rsb),
                                                                 b.mul(b.add(jc, jj), csb))), typ=t)
                                x = b.select(b.icmp_signed("<", j, ncols), x, ir.Constant(t, 0.0))
                                b.store(x, _elem(b, t, panel, b.add(b.mul(kk, i64(nr)), j)))
                with for_range(b, ic, ie, "ir", step=i64(mr)) as i0:
                    rows = _min(b, i64(mr), b.sub(ie, i0))
                    full = b.and_(b.icmp_signed("==", rows, i64(mr)), b.icmp_signed("==", ncols, i64(nr)))
                    strip_a = _elem(b, t, apack, b.mul(b.sub(i0, ic), kc))   # (i0-ic)/mr * kc * mr
                    crow = [b.gep(c, [b.add(b.mul(b.add(i0, i64(r)), ldc), jc)], source_etype=t)
                            for r in range(mr)]
                    _init(b, t, vt, vw, nv, mr, nr, accs, first, full, crow, tile, rows,
                          ncols, c, i0, jc, ldc, zero_v)
                    with for_range(b, 0, kc, name="kk") as kk:
                        bv = []
                        for v in range(nv):
                            x = b.load(_elem(b, t, panel, b.add(b.mul(kk, i64(nr)), i64(v * vw))), typ=vt)
                            x.align = min(64, vbytes)
                            bv.append(x)
                        arow = _elem(b, t, strip_a, b.mul(kk, i64(mr)))
                        for r in range(mr):
                            s = b.load(_elem(b, t, arow, i64(r)), typ=t)
                            s = b.insert_element(ir.Constant(vt, None), s, ir.Constant(I32, 0))
                            s = b.shuffle_vector(s, ir.Constant(vt, None),
                                                 ir.Constant(ir.VectorType(I32, vw), [0] * vw))
                            for v in range(nv):
                                b.store(b.call(fma, [s, bv[v], b.load(accs[r][v], typ=vt)]), accs[r][v])
                    _finish(b, t, vt, vw, nv, mr, nr, accs, full, crow, tile, rows, ncols, c, i0, jc, ldc)
    b.ret_void()
    return fn


def _init(b, t, vt, vw, nv, mr, nr, accs, first, full, crow, tile, rows, ncols, c, i0, jc,
          ldc, zero_v):
    with b.if_else(first) as (zero, carry):
        with zero:
            for r in range(mr):
                for v in range(nv):
                    b.store(zero_v, accs[r][v])
        with carry:
            with b.if_else(full) as (direct, edge):
                with direct:
                    for r in range(mr):
                        for v in range(nv):
                            x = b.load(_elem(b, t, crow[r], i64(v * vw)), typ=vt)
                            x.align = 4 if t == F32 else 8
                            b.store(x, accs[r][v])
                with edge:
                    with for_range(b, 0, mr, name="ei") as r, for_range(b, 0, nr, name="ej") as j:
                        ok = b.and_(b.icmp_signed("<", r, rows), b.icmp_signed("<", j, ncols))
                        dst = _elem(b, t, tile, b.add(b.mul(r, i64(nr)), j))
                        b.store(ir.Constant(t, 0.0), dst)
                        with b.if_then(ok):
                            src = _elem(b, t, c, b.add(b.mul(b.add(i0, r), ldc), b.add(jc, j)))
                            b.store(b.load(src, typ=t), dst)
                    for r in range(mr):
                        for v in range(nv):
                            x = b.load(_elem(b, t, tile, i64(r * nr + v * vw)), typ=vt)
                            b.store(x, accs[r][v])


def _finish(b, t, vt, vw, nv, mr, nr, accs, full, crow, tile, rows, ncols, c, i0, jc, ldc):
    with b.if_else(full) as (direct, edge):
        with direct:
            for r in range(mr):
                for v in range(nv):
                    st = b.store(b.load(accs[r][v], typ=vt), _elem(b, t, crow[r], i64(v * vw)))
                    st.align = 4 if t == F32 else 8
        with edge:
            for r in range(mr):
                for v in range(nv):
                    b.store(b.load(accs[r][v], typ=vt), _elem(b, t, tile, i64(r * nr + v * vw)))
            with for_range(b, 0, rows, name="fi") as r, for_range(b, 0, ncols, name="fj") as j:
                x = b.load(_elem(b, t, tile, b.add(b.mul(r, i64(nr)), j)), typ=t)
                b.store(x, _elem(b, t, c, b.add(b.mul(b.add(i0, r), ldc), b.add(jc, j))))

