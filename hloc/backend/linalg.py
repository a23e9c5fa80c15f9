"""triangular-solve and cholesky as kernel emitters (the interpreter's orders).

op(a) x = b (left_side) or x op(a) = b, reading only a's `lower` (or upper) triangle,
op in NO_TRANSPOSE / TRANSPOSE / ADJOINT. The output starts as b and is solved in place
row by row (forward or backward substitution), batched over the leading dimensions.
The right-side case is the left-side one on transposes (op(a)^T x^T = b^T), done by
index mapping, not by copying.
"""
from __future__ import annotations

from .indexing import _copy_all
from .loops import Index, for_range, i64, loop_names, loop_nest
from .registry import emits_kernel
from .types import I64, Cplx, const, load_elem, storage_type, store_elem


def _ops(kb, dt):
    b = kb.b
    if dt.kind == "complex":
        from . import cplx
        mul = lambda x, y: cplx.multiply(kb, dt, x, y)   # noqa: E731
        sub = lambda x, y: Cplx(b.fsub(x.re, y.re), b.fsub(x.im, y.im))   # noqa: E731
        div = lambda x, y: cplx.divide(kb, dt, x, y)   # noqa: E731
        conj = lambda x: Cplx(x.re, b.fneg(x.im))   # noqa: E731
        return mul, sub, div, conj
    return (lambda x, y: b.fmul(x, y)), (lambda x, y: b.fsub(x, y)), \
        (lambda x, y: b.fdiv(x, y)), (lambda x: x)


@emits_kernel("triangular-solve")
def _emit_triangular_solve(kb, inst, ops, outputs):
    a = inst.attrs
    triangular_solve(kb, inst, ops, outputs, left=bool(a.get("left_side")),
                     lower=bool(a.get("lower")), unit=bool(a.get("unit_diagonal")),
                     trans=a.get("transpose_a") or "NO_TRANSPOSE")


def triangular_solve(kb, inst, ops, outputs, *, left, lower, unit, trans):
    """ops = (a, b generators); outputs = [(x pointer, x shape)]."""
    b = kb.b
    (xptr, xshape), = outputs
    ashape = inst.operands[0].shape
    dt = xshape.dtype
    _copy_all(kb, ops[1], xptr, xshape)
    if xshape.size == 0:
        return
    n = ashape.dims[-1]
    mul, sub, div, conj = _ops(kb, dt)
    swap_a = trans in ("TRANSPOSE", "ADJOINT")
    eff_lower = lower != swap_a            # op(a) is lower triangular
    if not left:
        swap_a, eff_lower = not swap_a, not eff_lower
    rank = xshape.rank
    ncols = xshape.dims[-1] if left else xshape.dims[-2]
    with loop_nest(b, xshape.dims[:rank - 2], names=loop_names("tb", rank - 2)) as bivs:

        def m_at(i, j):       # element (i, j) of the matrix M solved against (M x = rhs)
            r, c = (j, i) if swap_a else (i, j)
            v = ops[0](Index(b, ashape, multi=bivs + [r, c]))
            return conj(v) if trans == "ADJOINT" else v

        def x_ptr(i, k):      # element (i, k) of the left-side unknown
            multi = bivs + ([i, k] if left else [k, i])
            return b.gep(xptr, [Index(b, xshape, multi=multi).linear], source_etype=storage_type(dt),
                         inbounds=True)

        with for_range(b, 0, ncols, name="tk") as k:
            with for_range(b, 0, n, name="ti") as step:
                i = step if eff_lower else b.sub(i64(n - 1), step)
                acc = kb.alloca_entry(_acc_type(dt), name="ts")
                _store_acc(b, acc, load_elem(b, dt, x_ptr(i, k)))
                lo, hi = (i64(0), i) if eff_lower else (b.add(i, i64(1)), i64(n))
                with for_range(b, lo, hi, name="tj") as j:
                    s = _load_acc(b, acc, dt)
                    _store_acc(b, acc, sub(s, mul(m_at(i, j), load_elem(b, dt, x_ptr(j, k)))))
                s = _load_acc(b, acc, dt)
                if not unit:
                    s = div(s, m_at(i, i))
                store_elem(b, dt, s, x_ptr(i, k))


def _acc_type(dt):
    from llvmlite import ir
    from .types import compute_type
    t = compute_type(dt)
    return ir.LiteralStructType([t, t]) if dt.kind == "complex" else t


def _store_acc(b, slot, v):
    from llvmlite import ir
    if isinstance(v, Cplx):
        st = ir.LiteralStructType([v.re.type, v.re.type])
        b.store(v.re, b.gep(slot, [i64(0), ir.Constant(ir.IntType(32), 0)], source_etype=st))
        b.store(v.im, b.gep(slot, [i64(0), ir.Constant(ir.IntType(32), 1)], source_etype=st))
    else:
        b.store(v, slot)


def _load_acc(b, slot, dt):
    from llvmlite import ir
    from .types import compute_type
    t = compute_type(dt)
    if dt.kind == "complex":
        st = ir.LiteralStructType([t, t])
        return Cplx(b.load(b.gep(slot, [i64(0), ir.Constant(ir.IntType(32), 0)], source_etype=st), typ=t),
                    b.load(b.gep(slot, [i64(0), ir.Constant(ir.IntType(32), 1)], source_etype=st), typ=t))
    return b.load(slot, typ=t)


_ = const


@emits_kernel("cholesky")
def _emit_cholesky(kb, inst, ops, outputs):
    """Unblocked Cholesky of the `lower` (or upper, through the transpose) triangle, the
    interpreter's order; a matrix whose diagonal goes NaN becomes all NaN (NaN + 0i for
    complex, as NumPy assigns it). Complex: l_jj = sqrt(re(a_jj - sum l_jk conj(l_jk))),
    l_ij = (a_ij - sum l_ik conj(l_jk)) / l_jj. f16/bf16 factor in an f32 work matrix (the
    interpreter's work type), rounded once at the end (up to 128 x 128, the work matrix
    lives on the stack)."""
    from llvmlite import ir
    from ..interp.core import unsupported
    from ..ir.dtypes import DTYPES
    from .types import F32
    b = kb.b
    (lptr, shape), = outputs
    dt = shape.dtype
    narrow = dt.name in ("f16", "bf16")
    cplx = dt.kind == "complex"
    n = shape.dims[-1]
    if dt.name not in ("f32", "f64", "c64", "c128") and not (narrow and n <= 128):
        raise unsupported(inst, f"cholesky on {dt.name}{f'[{n},{n}]' if narrow else ''} "
                                "in the compiled back end")
    lower = bool(inst.attrs.get("lower"))
    if shape.size == 0:
        return
    ashape = inst.operands[0].shape
    wdt = DTYPES["f32"] if narrow else dt
    mul, sub, div, conj = _ops(kb, wdt)
    zero = const(wdt, 0.0)
    t = zero.re.type if cplx else zero.type
    work = kb.alloca_entry(ir.ArrayType(F32, n * n), name="chol.work") if narrow else None
    if not narrow:
        _copy_all(kb, lambda index: zero, lptr, shape)
    acc = kb.alloca_entry(_acc_type(wdt), name="cs")
    failed = kb.alloca_entry(ir.IntType(1), name="cfail")
    sqrt = kb.mcx.intrinsic(f"llvm.sqrt.{'f32' if str(t) == 'float' else 'f64'}", t, [t])
    with loop_nest(b, shape.dims[:-2], names=loop_names("cb", shape.rank - 2)) as bivs:
        def a_at(i, j):
            return ops[0](Index(b, ashape, multi=bivs + ([i, j] if lower else [j, i])))

        def out_ptr(i, j):
            multi = bivs + ([i, j] if lower else [j, i])
            return b.gep(lptr, [Index(b, shape, multi=multi).linear], source_etype=storage_type(dt),
                         inbounds=True)

        def l_ptr(i, j):
            if narrow:
                return b.gep(work, [b.add(b.mul(i, i64(n)), j)], source_etype=F32, inbounds=True)
            return out_ptr(i, j)

        def fill(v):
            with loop_nest(b, [n, n], names=["fi", "fj"]) as (i, j):
                store_elem(b, wdt, v, l_ptr(i, j))

        if narrow:
            fill(zero)
        b.store(ir.Constant(ir.IntType(1), 0), failed)
        with for_range(b, 0, n, name="cj") as j:
            _store_acc(b, acc, a_at(j, j))
            with for_range(b, 0, j, name="ck") as k:
                v = load_elem(b, wdt, l_ptr(j, k))
                _store_acc(b, acc, sub(_load_acc(b, acc, wdt), mul(v, conj(v))))
            d = _load_acc(b, acc, wdt)
            ljj = b.call(sqrt, [d.re if cplx else d])
            store_elem(b, wdt, Cplx(ljj, ir.Constant(t, 0.0)) if cplx else ljj, l_ptr(j, j))
            ljj = load_elem(b, wdt, l_ptr(j, j))
            re = ljj.re if cplx else ljj
            b.store(b.or_(b.load(failed, typ=ir.IntType(1)), b.fcmp_unordered("uno", re, re)), failed)
            with for_range(b, b.add(j, i64(1)), i64(n), name="ci") as i:
                _store_acc(b, acc, a_at(i, j))
                with for_range(b, 0, j, name="ck2") as k:
                    p = mul(load_elem(b, wdt, l_ptr(i, k)), conj(load_elem(b, wdt, l_ptr(j, k))))
                    _store_acc(b, acc, sub(_load_acc(b, acc, wdt), p))
                store_elem(b, wdt, div(_load_acc(b, acc, wdt), ljj), l_ptr(i, j))
        with b.if_then(b.load(failed, typ=ir.IntType(1))):
            fill(const(wdt, complex(float("nan"), 0.0)) if cplx else ir.Constant(t, float("nan")))
        if narrow:
            with loop_nest(b, [n, n], names=["oi", "oj"]) as (i, j):
                store_elem(b, dt, load_elem(b, wdt, l_ptr(i, j)), out_ptr(i, j))


def potrf(kb, inst, ops, outputs, *, lower: bool):
    """jaxlib's lapack potrf FFI: the `uplo` triangle replaced by the factor, the other
    triangle kept from the input; info = the first column whose pivot is not positive
    (NaN included), 0 on success. Real f32/f64."""
    from llvmlite import ir
    from ..interp.core import unsupported
    from .types import I32
    b = kb.b
    (optr, shape), (iptr, ishape) = outputs
    dt = shape.dtype
    if dt.name not in ("f32", "f64"):
        raise unsupported(inst, f"lapack potrf on {dt.name} in the compiled back end")
    n = shape.dims[-1]
    ashape = inst.operands[0].shape
    _copy_all(kb, ops[0], optr, shape)
    if shape.size == 0 and ishape.size == 0:
        return
    with loop_nest(b, shape.dims[:shape.rank - 2], names=loop_names("pb", shape.rank - 2)) as bivs:

        def a_at(i, j):
            return ops[0](Index(b, ashape, multi=bivs + ([i, j] if lower else [j, i])))

        def l_ptr(i, j):
            multi = bivs + ([i, j] if lower else [j, i])
            return b.gep(optr, [Index(b, shape, multi=multi).linear], source_etype=storage_type(dt),
                         inbounds=True)

        t = const(dt, 0.0).type
        acc = kb.alloca_entry(t, name="ps")
        info = kb.alloca_entry(I32, name="pinfo")
        b.store(ir.Constant(I32, 0), info)
        sqrt = kb.mcx.intrinsic(f"llvm.sqrt.{'f32' if str(t) == 'float' else 'f64'}", t, [t])
        with for_range(b, 0, n, name="pj") as j:
            b.store(a_at(j, j), acc)
            with for_range(b, 0, j, name="pk") as k:
                v = load_elem(b, dt, l_ptr(j, k))
                b.store(b.fsub(b.load(acc, typ=t), b.fmul(v, v)), acc)
            d = b.load(acc, typ=t)
            ljj = b.call(sqrt, [d])
            bad = b.fcmp_unordered("ule", ljj, ir.Constant(t, 0.0))       # NaN or <= 0
            first = b.and_(bad, b.icmp_signed("==", b.load(info, typ=I32), ir.Constant(I32, 0)))
            b.store(b.select(first, b.add(b.trunc(j, I32), ir.Constant(I32, 1)), b.load(info, typ=I32)), info)
            store_elem(b, dt, ljj, l_ptr(j, j))
            with for_range(b, b.add(j, i64(1)), i64(n), name="pi") as i:
                b.store(a_at(i, j), acc)
                with for_range(b, 0, j, name="pk2") as k:
                    p = b.fmul(load_elem(b, dt, l_ptr(i, k)), load_elem(b, dt, l_ptr(j, k)))
                    b.store(b.fsub(b.load(acc, typ=t), p), acc)
                store_elem(b, dt, b.fdiv(b.load(acc, typ=t), ljj), l_ptr(i, j))
        ip = b.gep(iptr, [Index(b, ishape, multi=list(bivs)).linear], source_etype=storage_type(ishape.dtype),
                   inbounds=True)
        b.store(b.load(info, typ=I32), ip)


def getrf(kb, inst, ops, outputs):
    """jaxlib's lapack getrf FFI as dgetf2 (the interpreter's order): partial pivoting on
    the first largest |a[i, j]|; a zero pivot sets info (first one) and skips the swap
    and the scaling. Outputs: LU in place, 1-based pivots (s32), info (s32). Real types."""
    from llvmlite import ir
    from ..interp.core import unsupported
    from .types import I32
    b = kb.b
    (optr, shape), (pptr, pshape), (iptr, ishape) = outputs
    dt = shape.dtype
    if dt.name not in ("f32", "f64"):
        raise unsupported(inst, f"lapack getrf on {dt.name} in the compiled back end")
    m, n = shape.dims[-2], shape.dims[-1]
    kmin = min(m, n)
    _copy_all(kb, ops[0], optr, shape)
    if shape.size == 0 and ishape.size == 0:
        return
    with loop_nest(b, shape.dims[:shape.rank - 2], names=loop_names("gb", shape.rank - 2)) as bivs:
        st = storage_type(dt)

        def at(i, j):
            return b.gep(optr, [Index(b, shape, multi=bivs + [i, j]).linear], source_etype=st, inbounds=True)

        t = const(dt, 0.0).type
        fabs = kb.mcx.intrinsic(f"llvm.fabs.{'f32' if str(t) == 'float' else 'f64'}", t, [t])
        info = kb.alloca_entry(I32, name="ginfo")
        best = kb.alloca_entry(t, name="gbest")
        bidx = kb.alloca_entry(I64, name="gidx")
        b.store(ir.Constant(I32, 0), info)
        with for_range(b, 0, kmin, name="gj") as j:
            b.store(ir.Constant(t, -1.0), best)
            b.store(j, bidx)
            with for_range(b, j, i64(m), name="gp") as i:
                v = b.call(fabs, [load_elem(b, dt, at(i, j))])
                better = b.fcmp_ordered(">", v, b.load(best, typ=t))
                b.store(b.select(better, v, b.load(best, typ=t)), best)
                b.store(b.select(better, i, b.load(bidx, typ=I64)), bidx)
            p = b.load(bidx, typ=I64)
            pp = b.gep(pptr, [Index(b, pshape, multi=bivs + [j]).linear], source_etype=storage_type(pshape.dtype),
                       inbounds=True)
            b.store(b.trunc(b.add(p, i64(1)), I32), pp)
            pivot = load_elem(b, dt, at(p, j))
            zero = b.fcmp_ordered("==", pivot, ir.Constant(t, 0.0))
            first = b.and_(zero, b.icmp_signed("==", b.load(info, typ=I32), ir.Constant(I32, 0)))
            b.store(b.select(first, b.add(b.trunc(j, I32), ir.Constant(I32, 1)), b.load(info, typ=I32)), info)
            with b.if_then(b.not_(zero)):
                with for_range(b, 0, n, name="gs") as c:
                    x, y = load_elem(b, dt, at(j, c)), load_elem(b, dt, at(p, c))
                    store_elem(b, dt, y, at(j, c))
                    store_elem(b, dt, x, at(p, c))
                d = load_elem(b, dt, at(j, j))
                with for_range(b, b.add(j, i64(1)), i64(m), name="gi") as i:
                    store_elem(b, dt, b.fdiv(load_elem(b, dt, at(i, j)), d), at(i, j))
            with for_range(b, b.add(j, i64(1)), i64(m), name="gu") as i:
                lij = load_elem(b, dt, at(i, j))
                with for_range(b, b.add(j, i64(1)), i64(n), name="gv") as c:
                    upd = b.fsub(load_elem(b, dt, at(i, c)), b.fmul(lij, load_elem(b, dt, at(j, c))))
                    store_elem(b, dt, upd, at(i, c))
        ip = b.gep(iptr, [Index(b, ishape, multi=list(bivs)).linear], source_etype=storage_type(ishape.dtype),
                   inbounds=True)
        b.store(b.load(info, typ=I32), ip)
