"""Linear algebra: dot, convolution, fft, triangular-solve, cholesky, batch-norm-*.

Accumulation follows HloEvaluator's typed visitor (hlo_evaluator_typed_visitor.h):
operands are first converted to the result type, products are summed one at a time in
the visitor's ElementwiseT (f32 for f16/bf16/f8, the type itself otherwise; integers wrap
in two's complement) starting from zero, and rounded to the result type once. Dot sums
its contracting elements in row-major order; convolution walks the window row-major and,
for each in-bounds window position, the input features of the group (positions that fall
into padding or base-dilation holes are skipped, not multiplied by zero). Loops run over
that sequential axis only, vectorised over all output elements.
fft follows the evaluator's FftTransform conventions (complex128 working precision,
inputs truncated or zero-padded to fft_length, 1/N on the inverse transforms).
cholesky follows CholeskyExpander (zeros in the other triangle, an all-NaN matrix when
the input is not positive definite); batch-norm follows BatchNormExpander's formulas,
rounding every step to the operand type.
"""
from __future__ import annotations

import numpy as np

from .core import evaluates
from .reductions import evaluator_float_sum, is_real_float


def accum_dtype(dtype) -> np.dtype:
    """HloEvaluator's ElementwiseT for a result type (wide ints model wrapping)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.dtype(np.int64)
    if dtype.kind == "c":
        return dtype
    if is_real_float(dtype):
        return dtype if dtype.itemsize >= 4 else np.dtype(np.float32)
    if dtype.kind == "u" or (dtype.kind == "V" and dtype.name.startswith("uint")):
        return np.dtype(np.uint64)
    return np.dtype(np.int64)


def finish(acc: np.ndarray, dtype) -> np.ndarray:
    """Round an accumulator to the result type (wrapping integers, pred = nonzero)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return acc != 0
    if dtype.kind == "V" and "int" in dtype.name:
        bits = 2 if dtype.name.endswith("int2") else 4
        v = acc.astype(np.int64) & ((1 << bits) - 1)
        if dtype.name.startswith("int"):
            v = np.where(v >= 1 << (bits - 1), v - (1 << bits), v)
        return v.astype(dtype)
    with np.errstate(all="ignore"):
        return acc.astype(dtype)


def _convert(x: np.ndarray, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    with np.errstate(all="ignore"):
        return x.astype(dtype)


# ---------------------------------------------------------------------------
# dot

_DOT_ALGORITHMS = {
    # algorithm -> the type float operands are rounded to first (None: unchanged). The
    # multi-pass bf16 (x3/x6/x9) and tf32 algorithms approximate f32 and run as f32 here;
    # integer dots ignore the algorithm, as XLA:CPU does.
    None: None, "unset": None, "dot_f32_f32_f32": None, "dot_f64_f64_f64": None,
    "dot_f16_f16_f32": "float16", "dot_f16_f16_f16": "float16",
    "dot_bf16_bf16_f32": "bfloat16", "dot_bf16_bf16_bf16": "bfloat16",
    "dot_bf16_bf16_f32_x3": None, "dot_bf16_bf16_f32_x6": None,
    "dot_bf16_bf16_f32_x9": None, "dot_tf32_tf32_f32": None, "dot_tf32_tf32_f32_x3": None,
}


def dot_array(lhs, rhs, *, lhs_contracting=(), rhs_contracting=(), lhs_batch=(),
              rhs_batch=(), out_dtype, operand_dtype=None) -> np.ndarray:
    out_dtype = np.dtype(out_dtype)
    lc, rc, lb, rb = (list(v) for v in (lhs_contracting, rhs_contracting, lhs_batch, rhs_batch))
    lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    bdims = [lhs.shape[d] for d in lb]
    lfd = [lhs.shape[d] for d in lf]
    rfd = [rhs.shape[d] for d in rf]
    k = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))
    bp = int(np.prod(bdims, dtype=np.int64))
    m = int(np.prod(lfd, dtype=np.int64))
    n = int(np.prod(rfd, dtype=np.int64))
    out_shape = tuple(bdims + lfd + rfd)
    acc_t = accum_dtype(out_dtype)
    lhs = _convert(np.asarray(lhs), out_dtype)
    rhs = _convert(np.asarray(rhs), out_dtype)
    if operand_dtype is not None and is_real_float(out_dtype):
        lhs = _convert(_convert(lhs, operand_dtype), out_dtype)
        rhs = _convert(_convert(rhs, operand_dtype), out_dtype)
    lt = _convert(np.transpose(lhs, lb + lf + lc), acc_t).reshape(bp, m, k)
    rt = _convert(np.transpose(rhs, rb + rc + rf), acc_t).reshape(bp, k, n)
    if acc_t.kind in "iu":
        acc = np.matmul(lt, rt) if k else np.zeros((bp, m, n), dtype=acc_t)
    else:
        acc = np.zeros((bp, m, n), dtype=acc_t)
        with np.errstate(all="ignore"):
            for j in range(k):
                acc = acc + lt[:, :, j, None] * rt[:, None, j, :]
    return finish(acc, out_dtype).reshape(out_shape)


@evaluates("dot")
def _eval_dot(inst, operands, ctx):
    if len(operands) != 2:
        raise ctx.unsupported(inst, "sparse dot (meta operands)")
    a = inst.attrs
    algorithm = a.get("algorithm")
    if algorithm not in _DOT_ALGORITHMS:
        raise ctx.unsupported(inst, f"dot algorithm {algorithm}")
    precision = a.get("operand_precision") or ()
    if any(str(p).lower() == "packed_nibble" for p in precision):
        raise ctx.unsupported(inst, "dot with packed_nibble precision")
    return dot_array(operands[0], operands[1],
                     lhs_contracting=a.get("lhs_contracting_dims") or (),
                     rhs_contracting=a.get("rhs_contracting_dims") or (),
                     lhs_batch=a.get("lhs_batch_dims") or (),
                     rhs_batch=a.get("rhs_batch_dims") or (),
                     out_dtype=inst.shape.dtype.np,
                     operand_dtype=_np_dtype(_DOT_ALGORITHMS[algorithm]))


def _np_dtype(name):
    if name is None:
        return None
    from ..ir.dtypes import DTYPES
    return {"float16": DTYPES["f16"].np, "bfloat16": DTYPES["bf16"].np}[name]


# ---------------------------------------------------------------------------
# convolution

def convolution_array(lhs, rhs, *, window, dnums, feature_group_count=1,
                      batch_group_count=1, out_dims, out_dtype) -> np.ndarray:
    """HloEvaluator's convolution: canonical layouts (B,F,S..), (O,I,S..) -> (B,O,S..)."""
    out_dtype = np.dtype(out_dtype)
    acc_t = accum_dtype(out_dtype)
    nsp = len(dnums.input_spatial)
    x = _convert(np.transpose(_convert(np.asarray(lhs), out_dtype),
                              [dnums.input_batch, dnums.input_feature, *dnums.input_spatial]),
                 acc_t)
    w = _convert(np.transpose(_convert(np.asarray(rhs), out_dtype),
                              [dnums.kernel_output_feature, dnums.kernel_input_feature,
                               *dnums.kernel_spatial]), acc_t)
    ob = out_dims[dnums.output_batch]
    oz = out_dims[dnums.output_feature]
    osp = [out_dims[d] for d in dnums.output_spatial]
    b_in, f_in = x.shape[:2]
    o_size = w.shape[0]
    fgc, bgc = feature_group_count, batch_group_count
    in_group = f_in // fgc
    out_group = o_size // fgc
    batch_group_size = b_in // bgc
    depthwise = o_size // bgc if bgc > 1 else 1
    o = np.arange(o_size)
    rank = 2 + nsp
    acc = np.zeros((ob, oz, *osp), dtype=acc_t)
    if acc.size == 0 or x.size == 0 or w.size == 0:
        return _to_output_layout(finish(acc, out_dtype), dnums)
    simple = fgc == 1 and bgc == 1
    if not simple:
        lhs_b = (np.arange(ob)[:, None] + ((o // depthwise) * batch_group_size % b_in)[None, :])
        lhs_b = lhs_b.reshape((ob, o_size) + (1,) * nsp)
        fgi = (o // out_group).reshape((1, o_size) + (1,) * nsp)
    sizes = w.shape[2:]
    per_dim = []
    for ki, wd in enumerate(window.dims):
        pos = np.arange(osp[ki])
        rows = []
        for kw in range(sizes[ki]):
            und = pos * wd.stride - wd.pad_lo + kw * wd.rhs_dilate
            ok = und % wd.lhs_dilate == 0 if wd.lhs_dilate > 1 else np.ones_like(und, bool)
            idx = und // wd.lhs_dilate if wd.lhs_dilate > 1 else und
            ok = ok & (idx >= 0) & (idx < x.shape[2 + ki])
            rows.append((np.clip(idx, 0, x.shape[2 + ki] - 1), ok))
        per_dim.append(rows)
    with np.errstate(all="ignore"):
        for offs in np.ndindex(*sizes):
            mask = np.ones(tuple(osp), dtype=bool)
            sp = []
            for ki, kw in enumerate(offs):
                idx, ok = per_dim[ki][kw]
                shape = [1] * nsp
                shape[ki] = len(idx)
                mask = mask & ok.reshape(shape)
                full = [1] * rank
                full[2 + ki] = len(idx)
                sp.append(idx.reshape(full))
            if not mask.any():
                continue
            mask = mask.reshape((1, 1) + mask.shape)
            kidx = tuple(wd.size - 1 - kw if wd.reversal else kw
                         for wd, kw in zip(window.dims, offs))
            wk = w[(slice(None), slice(None)) + kidx]           # (O, I)
            if simple:
                xs = x[(slice(None), slice(None)) + tuple(s.reshape(s.shape[2:]) for s in sp)]
                for rz in range(in_group):
                    term = xs[:, rz:rz + 1] * wk[:, rz].reshape((1, o_size) + (1,) * nsp)
                    acc = acc + np.where(mask, term, 0)
            else:
                for rz in range(in_group):
                    iz = fgi * in_group + rz
                    xv = x[(lhs_b, iz) + tuple(sp)]
                    term = xv * wk[:, rz].reshape((1, o_size) + (1,) * nsp)
                    acc = acc + np.where(mask, term, 0)
    return _to_output_layout(finish(acc, out_dtype), dnums)


def _to_output_layout(canon: np.ndarray, dnums) -> np.ndarray:
    rank = canon.ndim
    perm = [0] * rank
    perm[dnums.output_batch] = 0
    perm[dnums.output_feature] = 1
    for i, d in enumerate(dnums.output_spatial):
        perm[d] = 2 + i
    return np.array(np.transpose(canon, perm))


@evaluates("convolution")
def _eval_convolution(inst, operands, ctx):
    a = inst.attrs
    precision = a.get("operand_precision") or ()
    if any(str(p).lower() == "packed_nibble" for p in precision):
        raise ctx.unsupported(inst, "convolution with packed_nibble precision")
    window = a.get("window")
    dnums = a["dim_labels"]
    if window is None:
        from ..ir.attrs import Window
        window = Window(())
    return convolution_array(operands[0], operands[1], window=window, dnums=dnums,
                             feature_group_count=a.get("feature_group_count") or 1,
                             batch_group_count=a.get("batch_group_count") or 1,
                             out_dims=inst.shape.dims, out_dtype=inst.shape.dtype.np)


# ---------------------------------------------------------------------------
# fft

def fft_array(x, fft_type: str, fft_length, out_dims, out_dtype) -> np.ndarray:
    fft_length = tuple(int(v) for v in fft_length)
    k = len(fft_length)
    axes = tuple(range(x.ndim - k, x.ndim))
    out = np.zeros(tuple(out_dims), dtype=out_dtype)
    if 0 in fft_length or x.size == 0 or out.size == 0:
        return out
    with np.errstate(all="ignore"):
        if fft_type == "FFT":
            y = np.fft.fftn(x.astype(np.complex128), s=fft_length, axes=axes)
        elif fft_type == "IFFT":
            y = np.fft.ifftn(x.astype(np.complex128), s=fft_length, axes=axes)
        elif fft_type == "RFFT":
            y = np.fft.rfftn(x.astype(np.float64), s=fft_length, axes=axes)
        elif fft_type == "IRFFT":
            y = np.fft.irfftn(x.astype(np.complex128), s=fft_length, axes=axes)
        else:
            raise ValueError(f"unknown fft_type {fft_type}")
        region = tuple(slice(0, min(a, b)) for a, b in zip(y.shape, out.shape))
        out[region] = y[region].astype(out_dtype)
    return out


@evaluates("fft")
def _eval_fft(inst, operands, ctx):
    return fft_array(operands[0], inst.attrs["fft_type"], inst.attrs["fft_length"],
                     inst.shape.dims, inst.shape.dtype.np)


# ---------------------------------------------------------------------------
# triangular-solve, cholesky

def _work_dtype(dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    return dtype if dtype.itemsize >= 4 and dtype.kind == "f" else np.dtype(np.float32)


def triangular_solve_array(a, b, *, left_side, lower, unit_diagonal, transpose_a,
                           out_dtype) -> np.ndarray:
    """Solve op(a) x = b (left_side) or x op(a) = b, reading only a's `lower`/upper
    triangle; op is NO_TRANSPOSE, TRANSPOSE or ADJOINT."""
    wt = _work_dtype(out_dtype)
    a = np.asarray(a).astype(wt)
    b = np.asarray(b).astype(wt)
    n = a.shape[-1]
    tri = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        idx = np.arange(n)
        tri[..., idx, idx] = 1
    if transpose_a in ("TRANSPOSE", "ADJOINT"):
        tri = np.swapaxes(tri, -1, -2)
        if transpose_a == "ADJOINT":
            tri = tri.conj()
        lower = not lower
    if not left_side:
        # x op(a) = b  <=>  op(a)^T x^T = b^T
        tri = np.swapaxes(tri, -1, -2)
        b = np.swapaxes(b, -1, -2)
        lower = not lower
    x = np.zeros(np.broadcast_shapes(tri.shape[:-2], b.shape[:-2]) + b.shape[-2:], dtype=wt)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            if lower:
                s = b[..., i, :] - (tri[..., i:i + 1, :i] @ x[..., :i, :])[..., 0, :]
            else:
                s = b[..., i, :] - (tri[..., i:i + 1, i + 1:] @ x[..., i + 1:, :])[..., 0, :]
            x[..., i, :] = s if unit_diagonal else s / tri[..., i, i, None]
    if not left_side:
        x = np.swapaxes(x, -1, -2)
    return np.array(x).astype(out_dtype)


@evaluates("triangular-solve")
def _eval_triangular_solve(inst, operands, ctx):
    a = inst.attrs
    return triangular_solve_array(
        operands[0], operands[1], left_side=bool(a.get("left_side")),
        lower=bool(a.get("lower")), unit_diagonal=bool(a.get("unit_diagonal")),
        transpose_a=a.get("transpose_a") or "NO_TRANSPOSE", out_dtype=inst.shape.dtype.np)


def cholesky_lower(a: np.ndarray):
    """Unblocked lower Cholesky of the lower triangle of each matrix in `a` (work type);
    returns (l, failed) where failed marks matrices whose diagonal went NaN."""
    n = a.shape[-1]
    cplx = a.dtype.kind == "c"
    l = np.zeros_like(a)
    with np.errstate(all="ignore"):
        for j in range(n):
            row = l[..., j, :j]
            d = a[..., j, j] - np.sum(row * row.conj(), axis=-1)
            ljj = np.sqrt(d.real).astype(a.dtype) if cplx else np.sqrt(d)
            l[..., j, j] = ljj
            if j + 1 < n:
                col = a[..., j + 1:, j] - (l[..., j + 1:, :j] @ row.conj()[..., :, None])[..., 0]
                l[..., j + 1:, j] = col / ljj[..., None]
    diag = np.diagonal(l, axis1=-2, axis2=-1)
    failed = np.isnan(diag.real if cplx else diag).any(axis=-1)
    return l, failed


def cholesky_array(a, *, lower: bool, out_dtype) -> np.ndarray:
    wt = _work_dtype(out_dtype)
    a = np.asarray(a).astype(wt)
    if not lower:
        a = np.swapaxes(a, -1, -2)
    l, failed = cholesky_lower(a)
    l[failed] = np.nan
    if not lower:
        l = np.swapaxes(l, -1, -2)
    return np.array(l).astype(out_dtype)


@evaluates("cholesky")
def _eval_cholesky(inst, operands, ctx):
    return cholesky_array(operands[0], lower=bool(inst.attrs.get("lower")),
                          out_dtype=inst.shape.dtype.np)


# ---------------------------------------------------------------------------
# batch norm (BatchNormExpander)

class _Typed:
    """Elementwise steps computed in the work type and rounded to the storage type."""

    def __init__(self, dtype):
        self.dt = np.dtype(dtype)
        self.wt = _work_dtype(dtype)

    def r(self, v):
        return np.asarray(v).astype(self.dt)

    def op(self, f, *args):
        with np.errstate(all="ignore"):
            return self.r(f(*(np.asarray(a).astype(self.wt) for a in args)))

    def rsqrt(self, v):
        return self.op(lambda x: self.wt.type(1) / np.sqrt(x), v)


def _feature_sum(t: _Typed, x, fi):
    moved = np.moveaxis(x, fi, -1)
    flat = moved.reshape(-1, moved.shape[-1]).T
    return evaluator_float_sum(flat, np.zeros((), t.dt), t.dt)


def _count(t: _Typed, x, fi):
    """Elements per feature, an s32 converted to the operand type (via f32 like Eigen)."""
    count = x.size // max(x.shape[fi], 1)
    return t.r(np.float64(count) if t.dt.itemsize > 4 else np.float32(count))


def _bshape(x, fi):
    shape = [1] * x.ndim
    shape[fi] = x.shape[fi]
    return shape


def batch_norm_training(x, scale, offset, *, epsilon, feature_index):
    t = _Typed(x.dtype)
    fi = feature_index
    bs = _bshape(x, fi)
    n = _count(t, x, fi)
    eps = t.r(np.float32(epsilon))
    total = _feature_sum(t, x, fi)
    sq_total = _feature_sum(t, t.op(np.multiply, x, x), fi)
    mean = t.op(np.divide, total, n)
    square_mean = t.op(np.divide, sq_total, n)
    var = t.op(np.subtract, square_mean, t.op(np.multiply, mean, mean))
    rs = t.rsqrt(t.op(np.add, var.reshape(bs), eps))
    normalized = t.op(np.multiply, t.op(np.subtract, x, mean.reshape(bs)), rs)
    out = t.op(np.add, t.op(np.multiply, normalized, scale.reshape(bs)), offset.reshape(bs))
    return out, mean, var


def batch_norm_inference(x, scale, offset, mean, var, *, epsilon, feature_index):
    t = _Typed(x.dtype)
    bs = _bshape(x, feature_index)
    eps = t.r(np.float32(epsilon))
    true_scale = t.op(np.multiply, scale, t.rsqrt(t.op(np.add, var, eps)))
    true_shift = t.op(np.subtract, offset, t.op(np.multiply, mean, true_scale))
    return t.op(np.add, t.op(np.multiply, x, true_scale.reshape(bs)), true_shift.reshape(bs))


def batch_norm_grad(x, scale, mean, var, grad_out, *, epsilon, feature_index):
    t = _Typed(x.dtype)
    fi = feature_index
    bs = _bshape(x, fi)
    n = _count(t, x, fi)
    eps = t.r(np.float32(epsilon))
    var_b = var.reshape(bs)
    rs_b = t.rsqrt(t.op(np.add, var_b, eps))
    rs = t.rsqrt(t.op(np.add, var, eps))
    x_mean = t.op(np.subtract, x, mean.reshape(bs))
    sum_gxm = _feature_sum(t, t.op(np.multiply, grad_out, x_mean), fi)
    grad_beta = _feature_sum(t, grad_out, fi)
    grad_scale = t.op(np.multiply, sum_gxm, rs)
    i4 = t.op(np.multiply, sum_gxm.reshape(bs), x_mean)
    i5 = t.op(np.divide, i4, t.op(np.add, var_b, eps))
    scale_rs = t.op(np.divide, t.op(np.multiply, scale.reshape(bs), rs_b), n)
    i1 = t.op(np.multiply, grad_out, n)
    i6 = t.op(np.subtract, t.op(np.subtract, i1, grad_beta.reshape(bs)), i5)
    grad_x = t.op(np.multiply, scale_rs, i6)
    return grad_x, grad_scale, grad_beta


def _bn_attrs(inst):
    return dict(epsilon=inst.attrs["epsilon"], feature_index=inst.attrs["feature_index"])


@evaluates("batch-norm-training")
def _eval_bn_training(inst, operands, ctx):
    return batch_norm_training(*operands, **_bn_attrs(inst))


@evaluates("batch-norm-inference")
def _eval_bn_inference(inst, operands, ctx):
    return batch_norm_inference(*operands, **_bn_attrs(inst))


@evaluates("batch-norm-grad")
def _eval_bn_grad(inst, operands, ctx):
    return batch_norm_grad(*operands, **_bn_attrs(inst))

