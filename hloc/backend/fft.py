"""fft as a kernel emitter: O(N log N) for every length, computed in f64 (c64 included).

Per batch element the transformed block is built as a full complex f64 array of
fft_length (inputs truncated or zero-padded; RFFT's real input with zero imaginary part;
IRFFT's half spectrum), then transformed line by line along each transformed dimension
(numpy's order: RFFT the last dim first, then the others on the L/2+1 kept columns only;
IRFFT the others on the half spectrum, then each last-dim row extended Hermitian,
conj(X[L-k]), and inverse-transformed, keeping the real part), then written out (RFFT keeps the first L/2+1 of the last dim,
IRFFT the real part, 1/N on the inverses) in the output's element type and layout.
This is the interpreter's convention (numpy.fft in f64; HloEvaluator's FftTransform).

A line of length L is a radix-2 FFT when L is a power of two, else Bluestein's chirp-z
through radix-2 FFTs of size m >= 2L-1. Inverse lines are conj(FFT(conj(x))). The twiddle
and chirp tables come from libm sin/cos of exactly reduced angles (k/m, (j^2 mod 2L)/L),
once per kernel call and dimension. Working in f64 keeps c64 within ~1e-15 relative of
numpy (a c64 computed in f32 would drift by ~log2(N) f32 roundings).

Three internal functions are emitted once per module: `fft.pow2(data, m, tw)`,
`fft.plan(L, m, tw, chirp, bfft)` and `fft.line(line, L, m, tw, chirp, bfft, work)`.
Scratch is one `malloc` per kernel call, freed before it returns; if it cannot be
allocated every output element is NaN.
"""
from __future__ import annotations

import math

from llvmlite import ir

from .loops import Index, for_range, i64
from .registry import emits_kernel
from .types import F32, F64, I64, PTR, VOID, Cplx, storage_type, store_elem

C128 = ir.ArrayType(F64, 2)
_I32 = ir.IntType(32)


def _pow2_at_least(n: int) -> int:
    m = 1
    while m < n:
        m *= 2
    return m


def _plan_sizes(L: int) -> tuple[int, int, int, int]:
    """(m, twiddles, chirp, bfft) complex counts of a dimension of length L."""
    if L & (L - 1) == 0:
        return L, max(L // 2, 1), 0, 0
    m = _pow2_at_least(2 * L - 1)
    return m, m // 2, L, m


class _C:
    """Complex f64 arrays (interleaved re, im) at a pointer."""

    def __init__(self, b):
        self.b = b

    def ptr(self, p, k, part):
        return self.b.gep(p, [k, ir.Constant(_I32, part)], source_etype=C128, inbounds=True)

    def load(self, p, k):
        b = self.b
        return b.load(self.ptr(p, k, 0), typ=F64), b.load(self.ptr(p, k, 1), typ=F64)

    def store(self, p, k, v):
        self.b.store(v[0], self.ptr(p, k, 0))
        self.b.store(v[1], self.ptr(p, k, 1))

    def mul(self, x, y):
        b = self.b
        return (b.fsub(b.fmul(x[0], y[0]), b.fmul(x[1], y[1])),
                b.fadd(b.fmul(x[0], y[1]), b.fmul(x[1], y[0])))


def _function(kb, key, args):
    """The module's internal function `key` (created empty on first use) and whether new."""
    mcx = kb.mcx
    fn = mcx._decls.get(key)
    if fn is not None:
        return fn, None
    fn = ir.Function(mcx.module, ir.FunctionType(VOID, args), name=mcx.unique(key))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    mcx._decls[key] = fn
    return fn, type(kb)(mcx, fn)


def _pow2_fn(kb):
    """`fft.pow2(ptr data, i64 m, ptr tw)`: in place forward FFT, m a power of two,
    tw[k] = exp(-2 pi i k / m) for k < m/2."""
    fn, fb = _function(kb, "fft.pow2", [PTR, I64, PTR])
    if fb is None:
        return fn
    b, c = fb.b, _C(fb.b)
    data, m, tw = fn.args
    # bit-reversal permutation
    j = fb.alloca_entry(I64, name="rev")
    b.store(i64(0), j)
    with for_range(b, 1, m, name="br") as i:
        bit = fb.alloca_entry(I64, name="bit")
        b.store(b.lshr(m, i64(1)), bit)
        head = b.append_basic_block("br.head")
        body = b.append_basic_block("br.body")
        done = b.append_basic_block("br.done")
        b.branch(head)
        b.position_at_end(head)
        jv, bv = b.load(j, typ=I64), b.load(bit, typ=I64)
        b.cbranch(b.icmp_unsigned("!=", b.and_(jv, bv), i64(0)), body, done)
        b.position_at_end(body)
        b.store(b.xor(jv, bv), j)
        b.store(b.lshr(bv, i64(1)), bit)
        b.branch(head)
        b.position_at_end(done)
        jv = b.or_(b.load(j, typ=I64), b.load(bit, typ=I64))
        b.store(jv, j)
        with b.if_then(b.icmp_unsigned("<", i, jv)):
            x, y = c.load(data, i), c.load(data, jv)
            c.store(data, i, y)
            c.store(data, jv, x)
    # butterflies: half = 1, 2, 4, ... < m
    half = fb.alloca_entry(I64, name="half")
    b.store(i64(1), half)
    head = b.append_basic_block("st.head")
    body = b.append_basic_block("st.body")
    done = b.append_basic_block("st.done")
    b.branch(head)
    b.position_at_end(head)
    h = b.load(half, typ=I64)
    b.cbranch(b.icmp_unsigned("<", h, m), body, done)
    b.position_at_end(body)
    length = b.shl(h, i64(1))
    step = b.udiv(m, length)
    nblk = b.udiv(m, length)

    def butterfly(blk, k, w):
        p = b.add(b.mul(blk, length), k)
        q = b.add(p, h)
        u, v = c.load(data, p), c.mul(c.load(data, q), w)
        c.store(data, p, (b.fadd(u[0], v[0]), b.fadd(u[1], v[1])))
        c.store(data, q, (b.fsub(u[0], v[0]), b.fsub(u[1], v[1])))
    # the longer loop innermost (early stages: many blocks of few butterflies) while the
    # line stays in cache; long lines keep the block-sequential order
    k_outer = b.and_(b.icmp_unsigned("<", h, nblk), b.icmp_unsigned("<=", m, i64(2048)))
    with b.if_else(k_outer) as (few, many):
        with few:
            with for_range(b, 0, h, name="bk") as k:
                w = c.load(tw, b.mul(k, step))
                with for_range(b, 0, nblk, name="bb") as blk:
                    butterfly(blk, k, w)
        with many:
            with for_range(b, 0, nblk, name="blk") as blk:
                with for_range(b, 0, h, name="bf") as k:
                    butterfly(blk, k, c.load(tw, b.mul(k, step)))
    b.store(length, half)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return fn


def _sincos(fb, ang):
    b = fb.b
    cos_f = fb.mcx.libm("cos", F64, [F64])
    sin_f = fb.mcx.libm("sin", F64, [F64])
    return b.call(cos_f, [ang]), b.call(sin_f, [ang])


def _plan_fn(kb):
    """`fft.plan(i64 L, i64 m, ptr tw, ptr chirp, ptr bfft)`: twiddles of size m; when
    m != L (Bluestein) the chirp c_j = exp(-i pi (j^2 mod 2L) / L), j < L, and
    bfft = FFT_m(b), b[j] = b[m-j] = conj(c_j), zero elsewhere."""
    fn, fb = _function(kb, "fft.plan", [I64, I64, PTR, PTR, PTR])
    if fb is None:
        return fn
    pow2 = _pow2_fn(kb)
    b, c = fb.b, _C(fb.b)
    L, m, tw, chirp, bfft = fn.args
    mf = b.uitofp(m, F64)
    with for_range(b, 0, b.lshr(m, i64(1)), name="tw") as k:
        ang = b.fmul(ir.Constant(F64, -2 * math.pi), b.fdiv(b.uitofp(k, F64), mf))
        c.store(tw, k, _sincos(fb, ang))
    with b.if_then(b.icmp_unsigned("!=", L, m)):
        Lf = b.uitofp(L, F64)
        with for_range(b, 0, m, name="bz") as k:
            c.store(bfft, k, (ir.Constant(F64, 0.0), ir.Constant(F64, 0.0)))
        with for_range(b, 0, L, name="ch") as j:
            r = b.urem(b.mul(j, j), b.shl(L, i64(1)))
            ang = b.fmul(ir.Constant(F64, -math.pi), b.fdiv(b.uitofp(r, F64), Lf))
            cs = _sincos(fb, ang)
            c.store(chirp, j, cs)
            conj = (cs[0], b.fneg(cs[1]))
            c.store(bfft, j, conj)
            with b.if_then(b.icmp_unsigned(">", j, i64(0))):
                c.store(bfft, b.sub(m, j), conj)
        b.call(pow2, [bfft, m, tw])
    b.ret_void()
    return fn


def _line_fn(kb):
    """`fft.line(ptr line, i64 L, i64 m, ptr tw, ptr chirp, ptr bfft, ptr work)`: the
    forward FFT of line[0, L) in place (radix-2 when m == L, else Bluestein in work[0, m))."""
    fn, fb = _function(kb, "fft.line", [PTR, I64, I64, PTR, PTR, PTR, PTR])
    if fb is None:
        return fn
    pow2 = _pow2_fn(kb)
    b, c = fb.b, _C(fb.b)
    line, L, m, tw, chirp, bfft, work = fn.args
    with b.if_else(b.icmp_unsigned("==", L, m)) as (radix2, bluestein):
        with radix2:
            b.call(pow2, [line, m, tw])
        with bluestein:
            zero = ir.Constant(F64, 0.0)
            with for_range(b, 0, m, name="wz") as k:
                inside = b.icmp_unsigned("<", k, L)
                kk = b.select(inside, k, i64(0))
                v = c.mul(c.load(line, kk), c.load(chirp, kk))
                c.store(work, k, (b.select(inside, v[0], zero), b.select(inside, v[1], zero)))
            b.call(pow2, [work, m, tw])
            with for_range(b, 0, m, name="wm") as k:      # times B, conjugated (inverse FFT)
                v = c.mul(c.load(work, k), c.load(bfft, k))
                c.store(work, k, (v[0], b.fneg(v[1])))
            b.call(pow2, [work, m, tw])
            inv_m = b.fdiv(ir.Constant(F64, 1.0), b.uitofp(m, F64))
            with for_range(b, 0, L, name="wo") as k:
                a = c.load(work, k)
                a = (b.fmul(a[0], inv_m), b.fmul(b.fneg(a[1]), inv_m))
                c.store(line, k, c.mul(a, c.load(chirp, k)))
    b.ret_void()
    return fn


@emits_kernel("fft")
def _emit_fft(kb, inst, ops, outputs):
    b = kb.b
    kind = inst.attrs["fft_type"]
    lengths = [int(v) for v in inst.attrs["fft_length"]]
    src = inst.operands[0].shape
    optr, out = outputs[0]
    r = len(lengths)
    nb = out.rank - r
    inverse = kind in ("IFFT", "IRFFT")
    total = math.prod(lengths)
    if out.size == 0:
        return
    out_t = F32 if out.dtype.name in ("f32", "c64") else F64
    if total == 0 or src.size == 0:
        _fill(kb, out, optr, 0.0, out_t)
        return
    # scratch: the block, one line, Bluestein work, per-dimension tables (complex f64 each)
    plans = [_plan_sizes(L) for L in lengths]
    offs, cursor = {}, 0

    def take(name, count):
        nonlocal cursor
        offs[name] = cursor
        cursor += max(count, 1)
    take("block", total)
    take("line", max(lengths))
    take("work", max(p[0] for p in plans))
    for a, (m, ntw, nch, nbf) in enumerate(plans):
        take(f"tw{a}", ntw)
        take(f"ch{a}", nch)
        take(f"bf{a}", nbf)
    malloc = kb.mcx.libm("malloc", PTR, [I64])
    free = kb.mcx.libm("free", VOID, [PTR])
    base = b.call(malloc, [i64(16 * cursor)], name="fft.scratch")
    failed = b.icmp_unsigned("==", b.ptrtoint(base, I64), i64(0))
    with b.if_else(failed) as (then, otherwise):
        with then:
            _fill(kb, out, optr, math.nan, out_t)
        with otherwise:
            c = _C(b)
            at = {k: b.gep(base, [i64(v)], source_etype=C128, inbounds=True) for k, v in offs.items()}
            plan, line_fn = _plan_fn(kb), _line_fn(kb)
            for a, (L, (m, _, _, _)) in enumerate(zip(lengths, plans)):
                if L > 1:
                    b.call(plan, [i64(L), i64(m), at[f"tw{a}"], at[f"ch{a}"], at[f"bf{a}"]])
            stack, bivs = [], []
            for d in range(nb):
                cm = for_range(b, 0, out.dims[d], name=f"fb{d}")
                bivs.append(cm.__enter__())
                stack.append(cm)
            _load_block(kb, c, kind, ops[0], src, bivs, lengths, at["block"])
            # RFFT/IRFFT: the other dims only on the L/2+1 columns of the half spectrum
            half = lengths[-1] // 2 + 1 if kind in ("RFFT", "IRFFT") else None
            order = list(range(r))
            if kind == "RFFT":
                order = [r - 1] + order[:-1]
            for a in order:
                if kind == "IRFFT" and a == r - 1:
                    _hermitian_extend(kb, c, lengths, at["block"])
                if lengths[a] > 1:
                    _transform_dim(kb, c, line_fn, at, a, lengths, plans[a][0], inverse,
                                   half if a < r - 1 else None)
            _store_block(kb, c, kind, out, optr, bivs, lengths, at["block"], out_t,
                         1.0 / total if inverse else 1.0)
            for cm in reversed(stack):
                cm.__exit__(None, None, None)
            b.call(free, [base])


def _row_major(b, ivs, dims):
    lin = i64(0)
    for iv, n in zip(ivs, dims):
        lin = b.add(b.mul(lin, i64(n)), iv)
    return lin


def _load_block(kb, c, kind, gen, src, bivs, lengths, block):
    """block[k] (row-major over lengths) = the transform's complex input at k."""
    b = kb.b
    r = len(lengths)
    zero = ir.Constant(F64, 0.0)
    stack, ns = [], []
    for k, n in enumerate(lengths):
        if kind == "IRFFT" and k == r - 1:
            n = n // 2 + 1          # the half spectrum; _hermitian_extend fills the rest
        cm = for_range(b, 0, n, name=f"fl{k}")
        ns.append(cm.__enter__())
        stack.append(cm)
    pos = list(ns)
    inside = ir.Constant(ir.IntType(1), 1)
    multi = list(bivs)
    for k in range(r):
        n_in = src.dims[src.rank - r + k]
        ok = b.icmp_signed("<", pos[k], i64(n_in))
        inside = b.and_(inside, ok)
        multi.append(b.select(ok, pos[k], i64(max(n_in - 1, 0))))
    x = gen(Index(b, src, multi=multi))
    if isinstance(x, Cplx):
        xr, xi = x.re, x.im
        if xr.type == F32:
            xr, xi = b.fpext(xr, F64), b.fpext(xi, F64)
    else:
        xr = b.fpext(x, F64) if x.type == F32 else x
        xi = zero
    c.store(block, _row_major(b, ns, lengths), (b.select(inside, xr, zero), b.select(inside, xi, zero)))
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _hermitian_extend(kb, c, lengths, block):
    """IRFFT, once the other dims are transformed: block[.., k] = conj(block[.., L-k]) for
    k > L/2 along the last dim (numpy.irfft's extension of each row)."""
    b = kb.b
    L = lengths[-1]
    with for_range(b, 0, math.prod(lengths[:-1]), name="he") as row:
        start = b.mul(row, i64(L))
        with for_range(b, L // 2 + 1, L, name="hk") as k:
            v = c.load(block, b.add(start, b.sub(i64(L), k)))
            c.store(block, b.add(start, k), (v[0], b.fneg(v[1])))


def _transform_dim(kb, c, line_fn, at, a, lengths, m, inverse, cols=None):
    """Every line of the block along transformed dim `a` through fft.line (inverse lines
    as conj(FFT(conj(x)))); with `cols`, only lines whose last-dim index is < cols."""
    b = kb.b
    L = lengths[a]
    inner = math.prod(lengths[a + 1:])
    outer = math.prod(lengths[:a])
    last = lengths[-1]
    block, line = at["block"], at["line"]
    if cols is None or cols >= last:
        cols, last = inner, inner
    with for_range(b, 0, outer, name=f"lo{a}") as o, \
            for_range(b, 0, inner // last, name=f"lm{a}") as mid, \
            for_range(b, 0, cols, name=f"li{a}") as col:
        i = b.add(b.mul(mid, i64(last)), col)
        start = b.add(b.mul(o, i64(L * inner)), i)
        with for_range(b, 0, L, name=f"lg{a}") as t:
            v = c.load(block, b.add(start, b.mul(t, i64(inner))))
            c.store(line, t, (v[0], b.fneg(v[1])) if inverse else v)
        b.call(line_fn, [line, i64(L), i64(m), at[f"tw{a}"], at[f"ch{a}"], at[f"bf{a}"], at["work"]])
        with for_range(b, 0, L, name=f"ls{a}") as t:
            v = c.load(line, t)
            c.store(block, b.add(start, b.mul(t, i64(inner))), (v[0], b.fneg(v[1])) if inverse else v)


def _store_block(kb, c, kind, out, optr, bivs, lengths, block, out_t, scale):
    b = kb.b
    r = len(lengths)
    nb = out.rank - r
    zero = ir.Constant(F64, 0.0)
    stack, ks = [], []
    for k in range(r):
        cm = for_range(b, 0, out.dims[nb + k], name=f"fs{k}")
        ks.append(cm.__enter__())
        stack.append(cm)
    inside = ir.Constant(ir.IntType(1), 1)
    clamped = []
    for k, L in zip(ks, lengths):
        ok = b.icmp_signed("<", k, i64(L))
        inside = b.and_(inside, ok)
        clamped.append(b.select(ok, k, i64(0)))
    re, im = c.load(block, _row_major(b, clamped, lengths))
    if scale != 1.0:
        s = ir.Constant(F64, scale)
        re, im = b.fmul(re, s), b.fmul(im, s)
    re, im = b.select(inside, re, zero), b.select(inside, im, zero)
    if out_t == F32:
        re, im = b.fptrunc(re, F32), b.fptrunc(im, F32)
    p = b.gep(optr, [Index(b, out, multi=list(bivs) + ks).linear],
              source_etype=storage_type(out.dtype), inbounds=True)
    store_elem(b, out.dtype, Cplx(re, im) if out.dtype.kind == "complex" else re, p)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _fill(kb, out, optr, value, out_t):
    b = kb.b
    v = ir.Constant(out_t, value)
    with for_range(b, 0, out.size, name="ff") as k:
        p = b.gep(optr, [k], source_etype=storage_type(out.dtype), inbounds=True)
        store_elem(b, out.dtype, Cplx(v, v) if out.dtype.kind == "complex" else v, p)
