"""triangular-solve and cholesky as kernel emitters (the interpreter's orders).

op(a) x = b (left_side) or x op(a) = b, reading only a's `lower` (or upper) triangle,
op in NO_TRANSPOSE / TRANSPOSE / ADJOINT. The output starts as b and is solved in place
row by row (forward or backward substitution), batched over the leading dimensions.
The right-side case is the left-side one on transposes (op(a)^T x^T = b^T), done by
index mapping, not by copying.
"""
from __future__ import annotations

from .indexing import _copy_all
from .loops import Index, for_range, i64
from .registry import emits_kernel
from .types import Cplx, const, load_elem, storage_type, store_elem


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
    b = kb.b
    (xptr, xshape), = outputs
    ashape, bshape = inst.operands[0].shape, inst.operands[1].shape
    dt = xshape.dtype
    _copy_all(kb, ops[1], xptr, xshape)
    if xshape.size == 0:
        return
    left, lower = bool(a.get("left_side")), bool(a.get("lower"))
    unit = bool(a.get("unit_diagonal"))
    trans = a.get("transpose_a") or "NO_TRANSPOSE"
    n = ashape.dims[-1]
    mul, sub, div, conj = _ops(kb, dt)
    swap_a = trans in ("TRANSPOSE", "ADJOINT")
    eff_lower = lower != swap_a            # op(a) is lower triangular
    if not left:
        swap_a, eff_lower = not swap_a, not eff_lower
    rank = xshape.rank
    ncols = xshape.dims[-1] if left else xshape.dims[-2]
    stack, bivs = [], []
    for d in range(rank - 2):
        cm = for_range(b, 0, xshape.dims[d], name=f"tb{d}")
        bivs.append(cm.__enter__())
        stack.append(cm)

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
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


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
    interpreter's order; a matrix whose diagonal goes NaN becomes all NaN. Real types."""
    from llvmlite import ir
    from ..interp.core import unsupported
    b = kb.b
    (lptr, shape), = outputs
    dt = shape.dtype
    if dt.name not in ("f32", "f64"):     # narrow floats: the interpreter works in f32
        raise unsupported(inst, f"cholesky on {dt.name} in the compiled back end")
    lower = bool(inst.attrs.get("lower"))
    n = shape.dims[-1]
    if shape.size == 0:
        return
    ashape = inst.operands[0].shape
    zero = const(dt, 0.0)
    _copy_all(kb, lambda index: zero, lptr, shape)
    stack, bivs = [], []
    for d in range(shape.rank - 2):
        cm = for_range(b, 0, shape.dims[d], name=f"cb{d}")
        bivs.append(cm.__enter__())
        stack.append(cm)

    def a_at(i, j):
        return ops[0](Index(b, ashape, multi=bivs + ([i, j] if lower else [j, i])))

    def l_ptr(i, j):
        multi = bivs + ([i, j] if lower else [j, i])
        return b.gep(lptr, [Index(b, shape, multi=multi).linear], source_etype=storage_type(dt),
                     inbounds=True)

    t = zero.type
    acc = kb.alloca_entry(t, name="cs")
    failed = kb.alloca_entry(ir.IntType(1), name="cfail")
    b.store(ir.Constant(ir.IntType(1), 0), failed)
    sqrt = kb.mcx.intrinsic(f"llvm.sqrt.{'f32' if str(t) == 'float' else 'f64'}", t, [t])
    with for_range(b, 0, n, name="cj") as j:
        b.store(a_at(j, j), acc)
        with for_range(b, 0, j, name="ck") as k:
            v = load_elem(b, dt, l_ptr(j, k))
            b.store(b.fsub(b.load(acc, typ=t), b.fmul(v, v)), acc)
        ljj = b.call(sqrt, [b.load(acc, typ=t)])
        store_elem(b, dt, ljj, l_ptr(j, j))
        ljj = load_elem(b, dt, l_ptr(j, j))
        b.store(b.or_(b.load(failed, typ=ir.IntType(1)), b.fcmp_unordered("uno", ljj, ljj)), failed)
        with for_range(b, b.add(j, i64(1)), i64(n), name="ci") as i:
            b.store(a_at(i, j), acc)
            with for_range(b, 0, j, name="ck2") as k:
                p = b.fmul(load_elem(b, dt, l_ptr(i, k)), load_elem(b, dt, l_ptr(j, k)))
                b.store(b.fsub(b.load(acc, typ=t), p), acc)
            store_elem(b, dt, b.fdiv(b.load(acc, typ=t), ljj), l_ptr(i, j))
    with b.if_then(b.load(failed, typ=ir.IntType(1))):
        nan = ir.Constant(t, float("nan"))
        with for_range(b, 0, n, name="fi") as i:
            with for_range(b, 0, n, name="fj") as j:
                store_elem(b, dt, nan, l_ptr(i, j))
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
