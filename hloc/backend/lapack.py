"""jaxlib's LAPACK FFI custom-calls as calls of the LAPACK in NumPy's bundled OpenBLAS.

geqrf, orgqr/ungqr, syevd/heevd, gesdd, gesvd and geev (s/d/c/z) run as jaxlib's kernels
do (jaxlib/cpu/lapack_kernels.cc): for each batch matrix, the operand is copied into a
column-major scratch matrix, the routine (`scipy_dgesdd_64_` ...) is called on it in the
operand's own precision, and the results are copied into the output buffers in their
layouts. The routines are ILP64 (every integer argument an i64 by reference); Fortran
character arguments get their hidden lengths. Workspace sizes come from the routine's
own query (lwork = -1) at run time; all scratch of one call is one malloc, freed before
the kernel returns. Symbol names come only from the runtime table (runtime.LAPACK): a
custom-call target merely selects an entry of ROUTINES.

Where LAPACK leaves a value unspecified, the interpreter's (hloc.interp.custom_calls)
is written: a matrix holding a NaN or an infinity is not passed to syevd/gesdd/gesvd/geev
(jaxlib skips geev on it too); its float outputs are NaN (complex: NaN + 0i) and its info
1. The matrix output of syevd in mode N and of gesdd/gesvd is the input matrix; u and vt
are zero in mode N; vl is zero (left eigenvectors are unsupported, as in the
interpreter). If the scratch cannot be allocated, float outputs are NaN and info -1.
"""
from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from ..interp.core import unsupported
from . import runtime
from .loops import Index, clamp_i64, i64, loop_names, loop_nest
from .types import I1, I8, I64, PTR, VOID, Cplx, const, load_elem, storage_type, store_elem

_PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
_ALIGN = 64


def symbol(prefix: str, routine: str) -> str:
    return f"scipy_{prefix}{routine}_64_"


def _align(b, n):
    return b.and_(b.add(n, i64(_ALIGN - 1)), i64(-_ALIGN))


class _Scratch:
    """One array inside the call's malloc'd block (pointer known after `allocate`)."""

    def __init__(self, dt, count, offset):
        self.dt, self.count, self.offset = dt, count, offset
        self.ptr = None

    def at(self, b, k):
        return b.gep(self.ptr, [k], source_etype=storage_type(self.dt), inbounds=True)


class Call:
    """Emission state of one LAPACK custom-call kernel."""

    def __init__(self, kb, inst, routine, ops, outputs):
        from ..interp.custom_calls import ffi_attrs
        self.kb, self.b, self.inst, self.ops, self.outputs = kb, kb.b, inst, ops, outputs
        self.ashape = inst.operands[0].shape
        self.dt = self.ashape.dtype
        target = inst.attrs.get("custom_call_target", "")
        p = _PREFIX.get(self.dt.name)
        if p is None or not target.startswith(f"lapack_{p}"):
            raise unsupported(inst, f"custom-call target {target!r} on {self.dt.name} operands "
                                    "in the compiled back end")
        if self.ashape.rank < 2:
            raise unsupported(inst, f"custom-call target {target!r} on a rank-{self.ashape.rank} operand")
        self.fn_name = symbol(p, routine)
        runtime.require(self.fn_name)
        self.cplx = self.dt.kind == "complex"
        self.m, self.n = self.ashape.dims[-2], self.ashape.dims[-1]
        self.batch = list(self.ashape.dims[:-2])
        self.attrs = ffi_attrs(inst)
        self._fixed = 0
        self._scratch: list[_Scratch] = []
        self.work = self.iwork = self.rwork = None
        self.info = kb.alloca_entry(I64, name="lapack.info")

    # ---- arguments -------------------------------------------------------------
    def char(self, name, default):
        from ..interp.custom_calls import _char
        return _char(self.attrs, name, default)

    def int_arg(self, v):
        slot = self.kb.alloca_entry(I64, name="lapack.int")
        self.b.store(i64(v) if isinstance(v, int) else v, slot)
        return slot

    def char_arg(self, c):
        slot = self.kb.alloca_entry(I8, name=f"lapack.{c}")
        self.b.store(ir.Constant(I8, ord(c)), slot)
        return slot

    def call(self, args, nchars):
        """Call the routine; `args` are pointers, the first `nchars` characters."""
        fn = self.kb.mcx.intrinsic(self.fn_name, VOID, [PTR] * len(args) + [I64] * nchars)
        self.b.call(fn, list(args) + [i64(1)] * nchars)

    # ---- scratch -----------------------------------------------------------------
    def scratch(self, dt, count) -> _Scratch:
        s = _Scratch(dt, max(int(count), 1), self._fixed)
        nbytes = s.count * dt.np.itemsize
        self._fixed += -(-nbytes // _ALIGN) * _ALIGN
        self._scratch.append(s)
        return s

    def query(self, make_args, nchars, *, iwork=None, rwork=None):
        """Workspace query (lwork = -1, and liwork/lrwork = -1 when `iwork`/`rwork` are
        'query'); else `iwork`/`rwork` are fixed counts. Then malloc the whole block.
        iwork and rwork point at one-element slots during the query (some routines, e.g.
        cgeev through ctrevc3, write their first element even when not asked).
        `make_args(work, lwork, iwork, liwork, rwork, lrwork)` gives the argument list."""
        b, kb = self.b, self.kb
        rdt = _real(self.dt)
        q = kb.alloca_entry(storage_type(self.dt), name="lapack.wq")
        qi = kb.alloca_entry(I64, name="lapack.iwq")
        qr = kb.alloca_entry(storage_type(rdt), name="lapack.rwq")
        b.store(ir.Constant(storage_type(self.dt), None), q)
        b.store(i64(0), qi)
        b.store(ir.Constant(storage_type(rdt), None), qr)
        minus = self.int_arg(-1)
        self.call(make_args(q, minus, qi, minus, qr, minus), nchars)
        first = load_elem(b, self.dt, q)
        lwork = _count(b, first.re if isinstance(first, Cplx) else first)
        liwork = _icount(b, b.load(qi, typ=I64)) if iwork == "query" else i64(max(iwork or 1, 1))
        lrwork = _count(b, load_elem(b, rdt, qr)) if rwork == "query" else i64(max(rwork or 1, 1))
        isz, rsz = self.dt.np.itemsize, rdt.np.itemsize
        wbytes = _align(b, b.mul(lwork, i64(isz)))
        ibytes = _align(b, b.mul(liwork, i64(8)))
        rbytes = _align(b, b.mul(lrwork, i64(rsz)))
        total = b.add(b.add(i64(self._fixed), wbytes), b.add(ibytes, rbytes))
        malloc = kb.mcx.libm("malloc", PTR, [I64])
        self.base = b.call(malloc, [total], name="lapack.block")
        for s in self._scratch:
            s.ptr = b.gep(self.base, [i64(s.offset)], source_etype=I8, inbounds=True)
        self.work = b.gep(self.base, [i64(self._fixed)], source_etype=I8, inbounds=True)
        self.iwork = b.gep(self.work, [wbytes], source_etype=I8, inbounds=True)
        self.rwork = b.gep(self.iwork, [ibytes], source_etype=I8, inbounds=True)
        self.lwork, self.liwork, self.lrwork = (self.int_arg(v) for v in (lwork, liwork, lrwork))

    def run(self, body, fail):
        """body(bivs) per batch matrix if the block was allocated, else fail(bivs, -1);
        then free the block."""
        b = self.b
        isnull = b.icmp_unsigned("==", self.base, ir.Constant(PTR, None))
        with b.if_else(isnull) as (oom, ok):
            with oom:
                with loop_nest(b, self.batch, names=loop_names("lb", len(self.batch))) as bivs:
                    fail(bivs, -1)
            with ok:
                with loop_nest(b, self.batch, names=loop_names("lb", len(self.batch))) as bivs:
                    body(bivs)
        b.call(self.kb.mcx.libm("free", VOID, [PTR]), [self.base])

    # ---- copies ------------------------------------------------------------------
    def load_matrix(self, dst, value, rows, cols, ld, check=False):
        """dst[i + j*ld] = value(i, j) (a compute value of dst's type); returns i1
        'all finite' when `check`."""
        b = self.b
        fin = None
        if check:
            fin = self.kb.alloca_entry(I1, name="lapack.finite")
            b.store(ir.Constant(I1, 1), fin)
        with loop_nest(b, [cols, rows], names=["lj", "li"]) as (j, i):
            v = value(i, j)
            store_elem(b, dst.dt, v, dst.at(b, b.add(i, b.mul(j, i64(ld)))))
            if check:
                b.store(b.and_(b.load(fin, typ=I1), self._finite(v)), fin)
        return b.load(fin, typ=I1) if check else None

    def load_input(self, dst, bivs, ld, check=False):
        """The operand's batch matrix `bivs` into dst, column-major with leading dim ld."""
        gen, shape = self.ops[0], self.ashape
        return self.load_matrix(dst, lambda i, j: gen(Index(self.b, shape, multi=bivs + [i, j])),
                                self.m, self.n, ld, check)

    def _finite(self, v):
        b = self.b
        parts = (v.re, v.im) if isinstance(v, Cplx) else (v,)
        out = None
        for x in parts:
            t = x.type
            fabs = self.kb.mcx.intrinsic(f"llvm.fabs.{'f32' if t == ir.FloatType() else 'f64'}", t, [t])
            ok = b.fcmp_ordered("<", b.call(fabs, [x]), ir.Constant(t, float("inf")))
            out = ok if out is None else b.and_(out, ok)
        return out

    def write(self, k, bivs, value):
        """outputs[k][bivs + idx] = value(idx) over the output's trailing dims."""
        b = self.b
        ptr, shape = self.outputs[k]
        tail = list(shape.dims[len(bivs):])
        if shape.size == 0:
            return
        with loop_nest(b, tail, names=loop_names("lo", len(tail))) as idx:
            p = b.gep(ptr, [Index(b, shape, multi=bivs + list(idx)).linear],
                      source_etype=storage_type(shape.dtype), inbounds=True)
            store_elem(b, shape.dtype, value(idx), p)

    def store_matrix(self, k, bivs, src, ld):
        b = self.b
        self.write(k, bivs, lambda ij: load_elem(b, src.dt, src.at(b, b.add(ij[0], b.mul(ij[1], i64(ld))))))

    def store_vector(self, k, bivs, src):
        b = self.b
        self.write(k, bivs, lambda ix: load_elem(b, src.dt, src.at(b, ix[0])))

    def store_input(self, k, bivs):
        self.write(k, bivs, lambda ij: self.ops[0](Index(self.b, self.ashape, multi=bivs + list(ij))))

    def store_const(self, k, bivs, value):
        dt = self.outputs[k][1].dtype
        self.write(k, bivs, lambda _: const(dt, value))

    def store_info(self, k, bivs, value=None):
        b = self.b
        v = b.load(self.info, typ=I64) if value is None else i64(value)
        bits = self.outputs[k][1].dtype.bits
        self.write(k, bivs, lambda _: v if bits == 64 else b.trunc(v, ir.IntType(bits)))

    @contextmanager
    def if_finite(self, ok, bivs, fail):
        """The body runs where `ok`; elsewhere fail(bivs, 1)."""
        with self.b.if_else(ok) as (good, bad):
            with bad:
                fail(bivs, 1)
            with good:
                yield


def _real(dt):
    from ..ir.dtypes import real_part_type
    return real_part_type(dt)


def _count(b, x):
    """A workspace size LAPACK returned as a float: an i64 >= 1, rounded up with some
    headroom (a single-precision size may have been rounded down)."""
    t = x.type
    ok = b.and_(b.fcmp_ordered(">=", x, ir.Constant(t, 1.0)), b.fcmp_ordered("<", x, ir.Constant(t, 2.0 ** 40)))
    n = b.fptosi(b.select(ok, x, ir.Constant(t, 1.0)), I64)
    return b.add(n, b.add(b.sdiv(n, i64(256)), i64(1)))


def _icount(b, n):
    return clamp_i64(b, n, 1, 1 << 40)


def _ld(n):
    return max(int(n), 1)


# ---------------------------------------------------------------------------
# routines

def geqrf(kb, inst, ops, outputs):
    c = Call(kb, inst, "geqrf", ops, outputs)
    m, n, lda = c.m, c.n, _ld(c.m)
    a = c.scratch(c.dt, lda * n)
    tau = c.scratch(c.dt, min(m, n))
    M, N, LDA = c.int_arg(m), c.int_arg(n), c.int_arg(lda)
    null = ir.Constant(PTR, None)
    c.query(lambda w, lw, *_: [M, N, null, LDA, null, w, lw, c.info], 0)

    def body(bivs):
        c.load_input(a, bivs, lda)
        c.call([M, N, a.ptr, LDA, tau.ptr, c.work, c.lwork, c.info], 0)
        c.store_matrix(0, bivs, a, lda)
        c.store_vector(1, bivs, tau)

    def fail(bivs, code):
        c.store_const(0, bivs, float("nan"))
        c.store_const(1, bivs, float("nan"))
    c.run(body, fail)


def orgqr(kb, inst, ops, outputs):
    routine = "ungqr" if inst.operands[0].shape.dtype.kind == "complex" else "orgqr"
    c = Call(kb, inst, routine, ops, outputs)
    m, n, lda = c.m, c.n, _ld(c.m)
    tshape = inst.operands[1].shape
    k = tshape.dims[-1] if tshape.rank else 0
    if not (m >= n >= k):
        raise unsupported(inst, f"{routine} with m={m}, n={n}, k={k} (LAPACK needs m >= n >= k)")
    a = c.scratch(c.dt, lda * n)
    tau = c.scratch(c.dt, k)
    M, N, K, LDA = c.int_arg(m), c.int_arg(n), c.int_arg(k), c.int_arg(lda)
    null = ir.Constant(PTR, None)
    c.query(lambda w, lw, *_: [M, N, K, null, LDA, null, w, lw, c.info], 0)

    def body(bivs):
        c.load_input(a, bivs, lda)
        if k:
            c.load_matrix(tau, lambda i, j: ops[1](Index(kb.b, tshape, multi=bivs + [i])), k, 1, k)
        c.call([M, N, K, a.ptr, LDA, tau.ptr, c.work, c.lwork, c.info], 0)
        c.store_matrix(0, bivs, a, lda)

    def fail(bivs, code):
        c.store_const(0, bivs, float("nan"))
    c.run(body, fail)


def syevd(kb, inst, ops, outputs):
    c = Call(kb, inst, "heevd" if inst.operands[0].shape.dtype.kind == "complex" else "syevd", ops, outputs)
    n, lda = c.n, _ld(c.n)
    mode, uplo = c.char("mode", "V"), c.char("uplo", "L")
    if mode not in "VN" or uplo not in "LU":
        raise unsupported(inst, f"syevd with mode {mode!r} and uplo {uplo!r}")
    a = c.scratch(c.dt, lda * n)
    w = c.scratch(_real(c.dt), n)
    JOBZ, UPLO, N, LDA = c.char_arg(mode), c.char_arg(uplo), c.int_arg(n), c.int_arg(lda)
    null = ir.Constant(PTR, None)
    if c.cplx:
        c.query(lambda wk, lw, iw, liw, rw, lrw: [JOBZ, UPLO, N, null, LDA, null, wk, lw, rw, lrw,
                                                  iw, liw, c.info], 2,
                iwork="query", rwork="query")
    else:
        c.query(lambda wk, lw, iw, liw, *_: [JOBZ, UPLO, N, null, LDA, null, wk, lw, iw, liw,
                                             c.info], 2, iwork="query")

    def body(bivs):
        ok = c.load_input(a, bivs, lda, check=True)
        with c.if_finite(ok, bivs, fail):
            if c.cplx:
                c.call([JOBZ, UPLO, N, a.ptr, LDA, w.ptr, c.work, c.lwork, c.rwork, c.lrwork,
                        c.iwork, c.liwork, c.info], 2)
            else:
                c.call([JOBZ, UPLO, N, a.ptr, LDA, w.ptr, c.work, c.lwork, c.iwork, c.liwork, c.info], 2)
            if mode == "V":
                c.store_matrix(0, bivs, a, lda)
            else:
                c.store_input(0, bivs)
            c.store_vector(1, bivs, w)
            c.store_info(2, bivs)

    def fail(bivs, code):
        if mode == "V":
            c.store_const(0, bivs, float("nan"))
        else:
            c.store_input(0, bivs)
        c.store_const(1, bivs, float("nan"))
        c.store_info(2, bivs, code)
    c.run(body, fail)


def _svd(kb, inst, ops, outputs, routine):
    c = Call(kb, inst, routine, ops, outputs)
    m, n, lda = c.m, c.n, _ld(c.m)
    mn = min(m, n)
    mode = c.char("mode", "A")
    if mode not in "ASN":
        raise unsupported(inst, f"{routine} with mode {mode!r}")
    ushape, vtshape = outputs[2][1], outputs[3][1]
    uv = mode != "N"
    ldu = _ld(m) if uv else 1
    ldvt = _ld(vtshape.dims[-2]) if uv else 1
    a = c.scratch(c.dt, lda * n)
    s = c.scratch(_real(c.dt), mn)
    u = c.scratch(c.dt, ldu * ushape.dims[-1] if uv else 1)
    vt = c.scratch(c.dt, ldvt * n if uv else 1)
    M, N, LDA, LDU, LDVT = (c.int_arg(v) for v in (m, n, lda, ldu, ldvt))
    null = ir.Constant(PTR, None)
    if routine == "gesdd":
        jobs, nchars = [c.char_arg(mode)], 1
        rsize = (7 * mn if not uv else max(5 * mn * mn + 5 * mn, 2 * max(m, n) * mn + 2 * mn * mn + mn))
        iwork = 8 * mn
    else:
        jobs, nchars = [c.char_arg(mode), c.char_arg(mode)], 2
        rsize, iwork = 5 * mn, None

    def args(wk, lw, iw, rw, arrays):
        A, S, U, VT = arrays
        tail = [wk, lw] + ([rw] if c.cplx else []) + ([iw] if routine == "gesdd" else []) + [c.info]
        return jobs + [M, N, A, LDA, S, U, LDU, VT, LDVT] + tail

    c.query(lambda wk, lw, iw, liw, rw, lrw: args(wk, lw, iw, rw, [null] * 4), nchars,
            iwork=iwork, rwork=rsize if c.cplx else None)

    def body(bivs):
        ok = c.load_input(a, bivs, lda, check=True)
        with c.if_finite(ok, bivs, fail):
            c.call(args(c.work, c.lwork, c.iwork, c.rwork, [a.ptr, s.ptr, u.ptr, vt.ptr]), nchars)
            c.store_input(0, bivs)
            c.store_vector(1, bivs, s)
            if uv:
                c.store_matrix(2, bivs, u, ldu)
                c.store_matrix(3, bivs, vt, ldvt)
            else:
                c.store_const(2, bivs, 0.0)
                c.store_const(3, bivs, 0.0)
            c.store_info(4, bivs)

    def fail(bivs, code):
        c.store_input(0, bivs)
        c.store_const(1, bivs, float("nan"))
        for k in (2, 3):
            c.store_const(k, bivs, float("nan") if uv else 0.0)
        c.store_info(4, bivs, code)
    c.run(body, fail)


def gesdd(kb, inst, ops, outputs):
    _svd(kb, inst, ops, outputs, "gesdd")


def gesvd(kb, inst, ops, outputs):
    _svd(kb, inst, ops, outputs, "gesvd")


def geev(kb, inst, ops, outputs):
    c = Call(kb, inst, "geev", ops, outputs)
    b = kb.b
    n, lda = c.n, _ld(c.n)
    if c.char("compute_left", "N") != "N":
        raise unsupported(inst, "geev with left eigenvectors in the compiled back end")
    right = c.char("compute_right", "V") == "V"
    a = c.scratch(c.dt, lda * n)
    rdt = _real(c.dt)
    if c.cplx:
        w = c.scratch(c.dt, n)
    else:
        wr, wi = c.scratch(rdt, n), c.scratch(rdt, n)
    vl = c.scratch(c.dt, 1)
    vr = c.scratch(c.dt, lda * n if right else 1)
    JOBVL, JOBVR = c.char_arg("N"), c.char_arg("V" if right else "N")
    N, LDA, LDVL, LDVR = c.int_arg(n), c.int_arg(lda), c.int_arg(1), c.int_arg(lda if right else 1)
    null = ir.Constant(PTR, None)

    def args(wk, lw, rw, arrays):
        if c.cplx:
            A, W, VL, VR = arrays
            return [JOBVL, JOBVR, N, A, LDA, W, VL, LDVL, VR, LDVR, wk, lw, rw, c.info]
        A, WR, WI, VL, VR = arrays
        return [JOBVL, JOBVR, N, A, LDA, WR, WI, VL, LDVL, VR, LDVR, wk, lw, c.info]

    c.query(lambda wk, lw, iw, liw, rw, lrw: args(wk, lw, rw, [null] * (4 if c.cplx else 5)), 2,
            rwork=2 * n if c.cplx else None)
    k_vl, k_vr, k_info = (1, 2, 3) if c.cplx else (2, 3, 4)
    vshape = outputs[k_vr][1]

    def body(bivs):
        ok = c.load_input(a, bivs, lda, check=True)
        with c.if_finite(ok, bivs, fail):
            arrays = [a.ptr, w.ptr, vl.ptr, vr.ptr] if c.cplx else [a.ptr, wr.ptr, wi.ptr, vl.ptr, vr.ptr]
            c.call(args(c.work, c.lwork, c.rwork, arrays), 2)
            if c.cplx:
                c.store_vector(0, bivs, w)
                if right:
                    c.store_matrix(k_vr, bivs, vr, lda)
            else:
                c.store_vector(0, bivs, wr)
                c.store_vector(1, bivs, wi)
                if right:
                    c.write(k_vr, bivs, lambda ij: _unpacked(b, vr, wi, ij, n, vshape.dtype))
            if not right:
                c.store_const(k_vr, bivs, 0.0)
            c.store_const(k_vl, bivs, 0.0)
            c.store_info(k_info, bivs)

    def fail(bivs, code):
        c.store_const(0, bivs, float("nan"))
        if not c.cplx:
            c.store_const(1, bivs, 0.0)
        c.store_const(k_vr, bivs, complex(float("nan"), 0.0) if right else 0.0)
        c.store_const(k_vl, bivs, 0.0)
        c.store_info(k_info, bivs, code)
    c.run(body, fail)


def _unpacked(b, vr, wi, ij, n, out_dt):
    """Element (i, j) of real geev's packed eigenvectors as a complex value (jaxlib's
    UnpackEigenvectors): a pair wi[j] > 0, wi[j+1] < 0 holds re and im in columns j, j+1."""
    i, j = ij
    x = load_elem(b, wi.dt, wi.at(b, j))
    t = x.type
    pos = b.fcmp_ordered(">", x, ir.Constant(t, 0.0))
    neg = b.fcmp_ordered("<", x, ir.Constant(t, 0.0))
    jr = clamp_i64(b, b.select(neg, b.sub(j, i64(1)), j), 0, n - 1)
    ji = clamp_i64(b, b.select(pos, b.add(j, i64(1)), j), 0, n - 1)
    re = load_elem(b, vr.dt, vr.at(b, b.add(i, b.mul(jr, i64(n)))))
    im = load_elem(b, vr.dt, vr.at(b, b.add(i, b.mul(ji, i64(n)))))
    im = b.select(pos, im, b.select(neg, b.fneg(im), ir.Constant(t, 0.0)))
    return Cplx(re, im)


def targets() -> dict:
    """custom-call target -> kernel emitter, for every routine and precision."""
    out = {}
    for p in "sdcz":
        herm, orth = ("he", "un") if p in "cz" else ("sy", "or")
        out[f"lapack_{p}geqrf_ffi"] = geqrf
        out[f"lapack_{p}{orth}gqr_ffi"] = orgqr
        out[f"lapack_{p}{herm}evd_ffi"] = syevd
        out[f"lapack_{p}gesdd_ffi"] = gesdd
        out[f"lapack_{p}gesvd_ffi"] = gesvd
        out[f"lapack_{p}geev_ffi"] = geev
    return out
