"""Large dots through BLAS: a call of NumPy's bundled OpenBLAS `cblas_?gemm` per batch.

A standalone `dot` goes to BLAS (in the computation's function, not a kernel) when:
xla-cpu numerics (ieee keeps the interpreter's summation order, so emitted loops); one
element type for operands and result among f32/f64/c64/c128; one contracting dimension
and at most one free dimension per operand (any batch dimensions, looped here); each
matrix has a unit stride in one dimension in its physical layout (a transposed layout
becomes a BLAS transpose flag, a column-major result the transposed product); and
M*N*K >= BLAS_MIN_WORK. Everything else — small shapes, integer/narrow types,
mixed-precision dots, layouts BLAS cannot take — stays in emitted loops.

The gemm symbols are on the runtime table (hloc.backend.runtime), resolved from
`numpy.libs/libscipy_openblas64_*.so` next to NumPy's install; a NumPy build without it
gets a clear error when such a module is loaded. The 64 suffix is OpenBLAS's ILP64
interface: every integer argument is an i64; the order/transpose enums are C ints.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import for_range, i64, strides
from .types import F32, F64, I32, I64, PTR, VOID, itemsize

# Below this many multiply-adds the emitted loop is as fast. Per call of a one-dot f32
# module (Executable.run, 2 shared cores): 16^3 loops 13.8 us / BLAS 13.6 us, 32^3
# 14.4 / 14.3, 48^3 17.4 / 15.5, 64^3 102 / 18 (call overhead dominates below ~32^3).
BLAS_MIN_WORK = 32 ** 3

SYMBOL = {"f32": "scipy_cblas_sgemm64_", "f64": "scipy_cblas_dgemm64_",
          "c64": "scipy_cblas_cgemm64_", "c128": "scipy_cblas_zgemm64_"}
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112


def _matrix(rows, cols, s_r, s_c):
    """(transpose flag, leading dimension) of a rows x cols matrix with element
    strides (s_r, s_c) for a row-major BLAS call, or None if no unit stride."""
    if rows <= 1 and cols <= 1:
        return NO_TRANS, 1
    if cols == 1 or s_c == 1:
        ld = s_r if rows > 1 else cols
        return (NO_TRANS, ld) if ld >= max(1, cols) else None
    if rows == 1 or s_r == 1:
        ld = s_c if cols > 1 else rows
        return (TRANS, ld) if ld >= max(1, rows) else None
    return None


class Plan:
    """How one dot maps onto gemm calls (all sizes in elements)."""

    def __init__(self, dt, batch, m, n, k, ta, tb, lda, ldb, ldc, swap):
        self.dt, self.batch = dt, batch          # batch: [(size, s_lhs, s_rhs, s_out)]
        self.m, self.n, self.k = m, n, k
        self.ta, self.tb, self.lda, self.ldb, self.ldc = ta, tb, lda, ldb, ldc
        self.swap = swap                         # compute C^T = B^T A^T


def plan(inst, options):
    """A Plan for `inst` (a dot) or None when emitted loops compute it."""
    if inst.opcode != "dot" or not options.xla or inst.shape.is_tuple:
        return None
    lhs, rhs, out = inst.operands[0].shape, inst.operands[1].shape, inst.shape
    dt = out.dtype
    if dt.name not in SYMBOL or lhs.dtype != dt or rhs.dtype != dt:
        return None
    at = inst.attrs
    lb, rb = list(at.get("lhs_batch_dims", ())), list(at.get("rhs_batch_dims", ()))
    lc, rc = list(at.get("lhs_contracting_dims", ())), list(at.get("rhs_contracting_dims", ()))
    if len(lc) != 1 or len(rc) != 1:
        return None
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    if len(lfree) > 1 or len(rfree) > 1:
        return None
    sl, sr, so = strides(lhs), strides(rhs), strides(out)
    m = lhs.dims[lfree[0]] if lfree else 1
    n = rhs.dims[rfree[0]] if rfree else 1
    k = lhs.dims[lc[0]]
    if m * n * k < BLAS_MIN_WORK:
        return None
    nb = len(lb)
    batch = [(lhs.dims[dl], sl[dl], sr[dr], so[j]) for j, (dl, dr) in enumerate(zip(lb, rb))]
    s_am = sl[lfree[0]] if lfree else 0
    s_bn = sr[rfree[0]] if rfree else 0
    s_cm = so[nb] if lfree else 0
    s_cn = so[nb + len(lfree)] if rfree else 0
    a_k, b_k = sl[lc[0]], sr[rc[0]]
    if n <= 1 or s_cn == 1:
        swap = False
        ldc = s_cm if m > 1 else n
        a, b = _matrix(m, k, s_am, a_k), _matrix(k, n, b_k, s_bn)
    elif m <= 1 or s_cm == 1:
        swap = True                               # C^T (n x m) = B^T (n x k) A^T (k x m)
        ldc = s_cn if n > 1 else m
        m, n = n, m
        a, b = _matrix(m, k, s_bn, b_k), _matrix(k, n, a_k, s_am)
    else:
        return None
    if a is None or b is None or ldc < max(1, n):
        return None
    return Plan(dt, batch, m, n, k, a[0], b[0], a[1], b[1], ldc, swap)


def _decl(mcx, dt):
    if mcx.options.gemm != "blas":         # the same call, to hloc.backend.gemm's function
        from .gemm import function_for
        return function_for(mcx, dt)
    from . import runtime
    name = SYMBOL[dt.name]
    runtime.require(name)
    if dt.name in ("f32", "f64"):
        s = F32 if dt.name == "f32" else F64
    else:
        s = PTR                                   # complex alpha/beta by pointer
    return mcx.intrinsic(name, VOID, [I32, I32, I32, I64, I64, I64, s, PTR, I64, PTR, I64, s, PTR, I64])


def _complex_const(mcx, ct, t, v):
    name = f"gemm.{'one' if v else 'zero'}.{t}"
    g = mcx.module.globals.get(name)
    if g is None:
        g = ir.GlobalVariable(mcx.module, ct, name=mcx.fixed(name))
        g.initializer = ir.Constant(ct, [ir.Constant(t, v), ir.Constant(t, 0.0)])
        g.global_constant = True
        g.linkage = "private"
    return g


def emit_call(em, inst, p) -> None:
    """Emit the gemm call(s) of Plan `p` in computation emitter `em` (its builder,
    buffer pointers and entry-block allocas)."""
    b, mcx = em.b, em.mcx
    fn = _decl(mcx, p.dt)
    (lbuf,), (rbuf,), (obuf,) = em.leaves(inst.operands[0]), em.leaves(inst.operands[1]), em.leaves(inst)
    a_ptr, b_ptr, c_ptr = em.ptr(lbuf), em.ptr(rbuf), em.ptr(obuf)
    if p.swap:
        a_ptr, b_ptr = b_ptr, a_ptr
    if p.dt.name in ("f32", "f64"):
        t = F32 if p.dt.name == "f32" else F64
        alpha, beta = ir.Constant(t, 1.0), ir.Constant(t, 0.0)
    else:
        t = F32 if p.dt.name == "c64" else F64
        ct = ir.ArrayType(t, 2)
        alpha, beta = (_complex_const(mcx, ct, t, v) for v in (1.0, 0.0))
    size = itemsize(p.dt)
    stack, offs = [], [None, None, None]
    for k, (nbat, sa, sb, sc) in enumerate(p.batch):
        if p.swap:
            sa, sb = sb, sa
        cm = for_range(b, 0, nbat, name=f"{inst.name}.batch{k}")
        iv = cm.__enter__()
        stack.append(cm)
        for j, s in enumerate((sa, sb, sc)):
            term = b.mul(iv, i64(s * size), flags=("nsw", "nuw"))
            offs[j] = term if offs[j] is None else b.add(offs[j], term, flags=("nsw", "nuw"))
    ptrs = [x if o is None else b.gep(x, [o], source_etype=ir.IntType(8), inbounds=True)
            for x, o in zip((a_ptr, b_ptr, c_ptr), offs)]
    b.call(fn, [ir.Constant(I32, ROW_MAJOR), ir.Constant(I32, p.ta), ir.Constant(I32, p.tb),
                i64(p.m), i64(p.n), i64(p.k), alpha, ptrs[0], i64(p.lda), ptrs[1], i64(p.ldb),
                beta, ptrs[2], i64(p.ldc)])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


class Threads:
    """OpenBLAS's own thread count (NumPy's bundled copy, the one compiled dots and LAPACK
    calls go to), set to the executable's for the length of a call and put back after:
    left alone, OpenBLAS runs on its default (every core) whatever `--threads` says, and
    its spinning workers made small GEMM calls erratic on a loaded machine. Set only
    when it differs (a set costs ~1 us; unchanged costs a get)."""

    def __init__(self):
        from . import runtime
        lib = runtime.openblas()
        self._get = getattr(lib, "scipy_openblas_get_num_threads64_", None)
        self._put = getattr(lib, "scipy_openblas_set_num_threads64_", None)
        if self._get is None or self._put is None:
            self._get = self._put = None
        else:
            import ctypes
            self._get.restype, self._get.argtypes = ctypes.c_int, []
            self._put.restype, self._put.argtypes = None, [ctypes.c_int]

    def enter(self, k: int):
        """Set `k` threads; what `exit` needs to restore (None: nothing to restore)."""
        if self._get is None:
            return None
        old = self._get()
        if old == k:
            return None
        self._put(k)
        return old

    def exit(self, old) -> None:
        if old is not None:
            self._put(old)


_threads = None


def threads() -> Threads:
    """The process's Threads (resolved once)."""
    global _threads
    if _threads is None:
        _threads = Threads()
    return _threads
