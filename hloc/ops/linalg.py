"""Linear-algebra opcodes: dot, ragged-dot, scaled-dot, convolution, fft,
triangular-solve, cholesky and the batch-norm family.

Rules mirror ShapeInference (InferDotOpShape, InferRaggedDotOpShape, InferConvolveShape,
InferFftShape, InferTriangularSolveShape, InferCholeskyShape, InferBatchNorm*Shape).
Dot and convolution results take the higher-precision operand type, or the written
result type when the text has one (XLA's verifier passes it as preferred_element_type),
so mixed-precision dots verify as they do in XLA. `operand_precision` is printed only
when some entry is not "default" (its default is one "default" per operand).
"""
from __future__ import annotations

from ..ir.dtypes import DTYPES
from ..ir.shape import ArrayShape
from .base import (CAN_CHANGE_LAYOUT, EXPENSIVE, MIXED_OPERANDS_OK, AttrSpec, OpDef, register)
from .shape_rules import (declared, dynamic_of, expect_array, fail, higher_precision, human,
                          is_complex, is_float, make, need_attr, tup, type_name,
                          window_output)


def _preferred(dtype, inst):
    """MaybeUpcast(dtype, written result type)."""
    out = declared(inst)
    want = getattr(out, "dtype", None)
    if want is None or want is dtype:
        return dtype
    if not dtype.is_float and want.bits < dtype.bits:
        fail("`preferred_element_type` must not be narrower than the original type.")
    return want


# ---------------------------------------------------------------------------
# dot family

def _dnums_text(lc, rc, lb, rb) -> str:
    """DotDimensionNumbers::DebugString (proto text format)."""
    lines = [f"lhs_contracting_dimensions: {d}" for d in lc]
    lines += [f"rhs_contracting_dimensions: {d}" for d in rc]
    lines += [f"lhs_batch_dimensions: {d}" for d in lb]
    lines += [f"rhs_batch_dimensions: {d}" for d in rb]
    return "".join(line + "\n" for line in lines)


def dot_shape(lhs, rhs, attrs, inst, skip_rhs=()):
    """InferDotOpShape; `skip_rhs` drops extra rhs dimensions (ragged-dot's group dim)."""
    expect_array(lhs, "lhs of dot")
    expect_array(rhs, "rhs of dot")
    lc = tuple(attrs.get("lhs_contracting_dims", ()))
    rc = tuple(attrs.get("rhs_contracting_dims", ()))
    lb = tuple(attrs.get("lhs_batch_dims", ()))
    rb = tuple(attrs.get("rhs_batch_dims", ()))
    text = _dnums_text(lc, rc, lb, rb)
    if not (all(0 <= d < lhs.rank for d in lc + lb) and all(0 <= d < rhs.rank for d in rc + rb)):
        fail(f"A dimension number is out of range in Dot: {text}.")
    if len(set(lc + lb)) != len(lc + lb) or len(set(rc + rb)) != len(rc + rb):
        fail(f"A dimension number is not unique in Dot: {text}.")

    def bad(addendum):
        fail(f"Cannot infer shape for dot operation: {human(lhs)} <dot> {human(rhs)}. "
             f"{addendum}")

    if len(lc) != len(rc):
        bad("Must specify the same number of contracting dimensions for lhs and rhs.")
    if any(lhs.dims[a] != rhs.dims[b] for a, b in zip(lc, rc)):
        bad("Contracting dimension sizes are not compatible.")
    if len(lb) != len(rb):
        bad("Must the same number of batch dimensions for lhs and rhs.")
    if any(lhs.dims[a] != rhs.dims[b] for a, b in zip(lb, rb)):
        bad("Batch dimension sizes are not compatible.")
    dims, dyn = [], []
    for d in lb:
        dims.append(lhs.dims[d])
        dyn.append(lhs.is_dynamic_dim(d))
    for d in range(lhs.rank):
        if d not in lc and d not in lb:
            dims.append(lhs.dims[d])
            dyn.append(lhs.is_dynamic_dim(d))
    for d in range(rhs.rank):
        if d not in rc and d not in rb and d not in skip_rhs:
            dims.append(rhs.dims[d])
            dyn.append(rhs.is_dynamic_dim(d))
    dtype = _preferred(higher_precision(lhs.dtype, rhs.dtype), inst)
    return make(dtype, dims, dyn)


def _dot_infer(ops, attrs, inst):
    lhs, rhs = ops
    return dot_shape(lhs, rhs, attrs, inst)


def _ragged_dot_infer(ops, attrs, inst):
    """InferRaggedDotOpShape: the ragged lhs dimension is a non-contracting dimension
    (rhs has a group dimension, dropped from the result), a contracting dimension (the
    result gains a leading group dimension) or a batch dimension."""
    lhs, rhs, group_sizes = ops
    expect_array(group_sizes, "group_sizes of ragged dot")

    def bad(message):
        fail(f"Cannot infer shape for ragged dot operation: {human(lhs)} <ragged_dot> "
             f"{human(rhs)}. {message}")

    ragged = tuple(attrs.get("lhs_ragged_dims", ()))
    group = tuple(attrs.get("rhs_group_dims", ()))
    if len(ragged) != 1:
        bad(f"There must be exactly one ragged dimension in the lhs, got {len(ragged)}.")
    (rd,) = ragged
    if rd < 0 or rd >= lhs.rank:
        bad(f"lhs ragged dimension {rd} is out of range [0, {lhs.rank}).")
    lc = tuple(attrs.get("lhs_contracting_dims", ()))
    lb = tuple(attrs.get("lhs_batch_dims", ()))
    num_groups = group_sizes.dims[-1] if group_sizes.rank else 1
    if rd in lc or rd in lb:
        if group:
            bad("There must be no group dimension in the rhs when the lhs ragged dimension "
                "is contracting or batch.")
        result = dot_shape(lhs, rhs, attrs, inst)
        if rd in lc:
            result = make(result.dtype, (num_groups,) + result.dims,
                          (False,) + dynamic_of(result))
        return result
    if len(group) != 1:
        bad("There must be exactly one group dimension in the rhs when the lhs ragged "
            "dimension is non-contracting.")
    (gd,) = group
    if gd < 0 or gd >= rhs.rank:
        bad(f"rhs group dimension {gd} is out of range [0, {rhs.rank}).")
    if rhs.dims[gd] != num_groups:
        bad(f"rhs group dimension is expected to have size={num_groups}, got {rhs.dims[gd]}")
    return dot_shape(lhs, rhs, attrs, inst, skip_rhs=(gd,))


def _scaled_dot_infer(ops, attrs, inst):
    # Operand order as XLA's shape inference reads it: lhs, lhs_scale, rhs, rhs_scale.
    lhs, _lhs_scale, rhs, _rhs_scale = ops
    return dot_shape(lhs, rhs, attrs, inst)


# ---------------------------------------------------------------------------
# convolution

def _conv_infer(ops, attrs, inst):
    lhs, rhs = ops
    expect_array(lhs, "lhs of convolution")
    expect_array(rhs, "rhs of convolution")
    fgc = attrs.get("feature_group_count", 1)
    bgc = attrs.get("batch_group_count", 1)
    window = attrs.get("window")
    wdims = tuple(window.dims) if window is not None else ()
    dn = need_attr(attrs, "dim_labels")
    text = _conv_text(dn)
    if fgc <= 0:
        fail(f"feature_group_count must be a positive number, got {fgc}")
    if bgc <= 0:
        fail(f"batch_group_count must be a positive number, got {bgc}")
    if bgc > 1 and fgc > 1:
        fail(f"both batch_group_count {bgc} and feature_group_count {fgc} cannot be greater "
             f"than 1")
    nsp = len(dn.input_spatial)
    if len(dn.kernel_spatial) != nsp:
        fail(f"Both arguments to convolution must have same number of dimensions.\n"
             f"Numbers: {text}")
    if len(dn.output_spatial) != nsp:
        fail(f"Both input and output of convolution must have same number of dimensions.\n"
             f"Numbers: {text}")
    if len(wdims) != nsp:
        fail(f"Window must have same number of dimensions as dimension numbers.\n"
             f"Window: {_window_str(window)}\nDimension numbers: {text}.")
    nd = nsp + 2
    if lhs.rank != nd:
        fail(f"The LHS argument to a convolution should have rank {nd}; lhs: {human(lhs)}.")
    if rhs.rank != nd:
        fail(f"The RHS argument to a convolution should have rank {nd}; rhs: {human(rhs)}.")
    inputs = [dn.input_batch, dn.input_feature, *dn.input_spatial]
    kernel = [dn.kernel_input_feature, dn.kernel_output_feature, *dn.kernel_spatial]
    output = [dn.output_batch, dn.output_feature, *dn.output_spatial]
    if not all(0 <= d < nd for d in inputs + kernel + output):
        fail(f"A dimension number is out of range in convolution: {text}.")
    for name, group in (("Input", inputs), ("Window", kernel), ("Output", output)):
        if sorted(group) != list(range(nd)):
            fail(f"{name} dimensions of convolution must contain each dimension exactly "
                 f"once: {text}.")
    in_batch, in_feat = lhs.dims[dn.input_batch], lhs.dims[dn.input_feature]
    k_in, k_out = rhs.dims[dn.kernel_input_feature], rhs.dims[dn.kernel_output_feature]
    conv = f"<conv>({human(lhs)}, {human(rhs)})\nDimension numbers: {{{text}}}."
    if k_out % bgc:
        fail(f"Expected output feature dimension size (value {k_out}) to be a multiple of "
             f"batch group count {bgc}; got {conv}")
    if in_feat % fgc or in_feat // fgc != k_in:
        fail(f"Expected LHS feature dimension (value {in_feat}) to be a multiple of "
             f"feature_group_count (value {fgc}), and LHS feature dimension / "
             f"feature_group_count = RHS feature dimension (value {k_in}); got {conv}")
    if k_out % fgc:
        fail(f"Expected output feature dimension (value {k_out}) to be divisible by "
             f"feature_group_count (value {fgc}); got {conv}")
    if in_batch % bgc:
        fail(f"Expected input batch dimension (value {in_batch}) to be divisible by "
             f"batch_group_count (value {bgc}); got {conv}")
    kernel_spatial = [rhs.dims[d] for d in dn.kernel_spatial]
    if kernel_spatial != [d.size for d in wdims]:
        fail(f"Window dimensions do not match RHS shape:\n\tRHS shape: {human(rhs)}\n\t"
             f"Window: {_window_str(window)}\n\tDimension numbers: {{{text}}}.")
    base = make(lhs.dtype, [lhs.dims[d] for d in dn.input_spatial],
                [lhs.is_dynamic_dim(d) for d in dn.input_spatial])
    spatial = window_output(base, window, lhs.dtype)
    dims = [0] * nd
    dyn = [False] * nd
    dims[dn.output_batch] = in_batch // bgc
    dyn[dn.output_batch] = lhs.is_dynamic_dim(dn.input_batch)
    dims[dn.output_feature] = k_out
    for i, d in enumerate(dn.output_spatial):
        dims[d] = spatial.dims[i]
        dyn[d] = spatial.is_dynamic_dim(i) or rhs.is_dynamic_dim(dn.kernel_spatial[i])
    return make(_preferred(higher_precision(lhs.dtype, rhs.dtype), inst), dims, dyn)


def _conv_text(dn) -> str:
    def part(batch, feat, spatial, b, f):
        labels = ["?"] * (2 + len(spatial))
        for i, d in enumerate(spatial):
            if 0 <= d < len(labels):
                labels[d] = str(i)
        for d, c in ((batch, b), (feat, f)):
            if 0 <= d < len(labels):
                labels[d] = c
        return "".join(labels)
    return (part(dn.input_batch, dn.input_feature, dn.input_spatial, "b", "f") + "_"
            + part(dn.kernel_input_feature, dn.kernel_output_feature, dn.kernel_spatial,
                   "i", "o") + "->"
            + part(dn.output_batch, dn.output_feature, dn.output_spatial, "b", "f"))


def _window_str(window) -> str:
    if window is None:
        return ""
    sizes = "x".join(str(d.size) for d in window.dims)
    return f"size={sizes}"


# ---------------------------------------------------------------------------
# fft / triangular-solve / cholesky

def _resized(x, dtype, dims):
    """ChangeElementType then set_dimensions: the operand's layout is kept."""
    return ArrayShape(DTYPES[dtype], tuple(dims), x.dynamic, x.layout)


def _fft_infer(ops, attrs, inst):
    (x,) = ops
    kind = attrs.get("fft_type", "FFT")
    length = tuple(attrs.get("fft_length", ()))
    rank = len(length)
    if rank < 1 or rank > 3:
        fail(f"FFT only supports ranks 1-3; got {rank}.")

    def check_rank():
        if x.rank < rank:
            fail(f"FFT of rank {rank} requires input of at least same rank; got input of "
                 f"rank {x.rank}")

    if kind in ("FFT", "IFFT"):
        if not is_complex(x):
            fail(f"{kind} requires complex input type, found {type_name(x.dtype)}.")
        check_rank()
        return x
    if kind == "RFFT":
        if x.dtype.name not in ("f32", "f64"):
            fail(f"RFFT requires F32 or F64 input type, found {type_name(x.dtype)}.")
        check_rank()
        for i in range(rank):
            d = x.rank - rank + i
            if x.dims[d] != length[i]:
                fail(f"RFFT requires innermost dimensions match fft_length but dimension {d} "
                     f"is {x.dims[d]} and should be {length[i]}.")
        dims = list(x.dims)
        if length[-1] != 0:
            dims[-1] = length[-1] // 2 + 1
        return _resized(x, "c64" if x.dtype.name == "f32" else "c128", dims)
    if kind == "IRFFT":
        if not is_complex(x):
            fail(f"IRFFT requires complex input type, found {type_name(x.dtype)}.")
        check_rank()
        for i in range(rank - 1):
            d = x.rank - rank + i
            if x.dims[d] != length[i]:
                fail(f"IRFFT requires all but one innermost dimensions match fft_length, but "
                     f"dimension {d} is {x.dims[d]} and should be {length[i]}.")
        last = x.dims[-1]
        if (last != 0 or length[-1] != 0) and last != length[-1] // 2 + 1:
            fail(f"IRFFT requires innermost dimension matches fft_length/2+1, but dimension "
                 f"{x.rank - 1} is {last} and should be {length[-1] // 2 + 1}.")
        dims = list(x.dims)
        dims[-1] = length[-1]
        return _resized(x, "f32" if x.dtype.name == "c64" else "f64", dims)
    fail(f"Unexpected fft_type: {kind}")


def _triangular_solve_infer(ops, attrs, inst):
    a, b = ops
    if not (is_float(a) or is_complex(a)) or a.dtype is not b.dtype:
        fail(f"Expected element types in shape to be floating or complex and identical for "
             f"TriangularSolve; got {type_name(a.dtype)} and {type_name(b.dtype)}.")
    if a.rank < 2:
        fail(f"The 'a' argument to TriangularSolve must have rank >= 2, got shape {human(a)}")
    if b.rank != a.rank:
        fail(f"Arguments to triangular solve must have equal rank; got {human(b)} and "
             f"{human(a)}.")
    if a.dims[-2] != a.dims[-1]:
        fail(f"The two minor dimensions of 'a' must have equal size, got {human(a)}.")
    shared = b.dims[-2] if attrs.get("left_side", False) else b.dims[-1]
    if a.dims[-1] != shared:
        fail(f"The shared dimension of 'a' and 'b' does not match, got shapes {human(a)} and "
             f"{human(b)}")
    if a.dims[:-2] != b.dims[:-2]:
        fail(f"The leading batch dimensions of the arguments to triangular solve must be "
             f"equal; got {human(b)} and {human(a)}.")
    if attrs.get("transpose_a") in (None, "TRANSPOSE_INVALID"):
        fail("Invalid transpose option value for triangular solve (0).\n")
    return b


def _cholesky_infer(ops, attrs, inst):
    (a,) = ops
    if not (is_float(a) or is_complex(a)):
        fail(f"Expected element type in shape to be floating or complex for Cholesky; got "
             f"{type_name(a.dtype)}.")
    if a.rank < 2:
        fail(f"The 'a' argument to Cholesky must have rank >= 2, got shape {human(a)}")
    if a.dims[-2] != a.dims[-1]:
        fail(f"The two minor dimensions of 'a' must have compatible size, got {human(a)}.")
    return a


# ---------------------------------------------------------------------------
# batch norm

def _bn_common(op, operand, feature_index, named):
    """Checks shared by the three batch-norm rules; `named` = [(label, rank_label, shape)]
    for the rank-1 per-feature inputs, in XLA's checking order."""
    if feature_index >= operand.rank:
        fail(f"Expected feature_index of {op} to be smaller than the rank of operand_shape; "
             f"got feature_index {feature_index}, and rank {operand.rank}.")
    if feature_index < 0:
        fail(f"Expected feature_index of {op} to be a non-negative number, got "
             f"{feature_index}.")
    if operand.rank < 1:
        fail(f"Expected the rank of operand to {op} to be at least 1; got {operand.rank}.")
    for _, rank_label, s in named:
        if s.rank != 1:
            fail(f"{rank_label} input of {op} must have rank 1, but has rank {s.rank}.")
    if not is_float(operand):
        fail(f"The operand to {op} must have a floating point element type, but the shape is "
             f"{type_name(operand.dtype)}.")
    for label, _, s in named:
        if not (is_float(s) and is_float(operand)) and s.dtype is not operand.dtype:
            fail(f"The inputs should have the same element type for {op}, but the shape of "
                 f"{label} is {type_name(s.dtype)} and the shape of operand is "
                 f"{type_name(operand.dtype)}.")
    count = operand.dims[feature_index]
    for label, _, s in named:
        if s.dims[0] != count:
            fail(f"The size of {label} should be compatible with feature count, but the size "
                 f"of {label} is {s.dims[0]} and the feature count is {count}.")
    return make(operand.dtype, (count,))


def _bn_training_infer(ops, attrs, inst):
    operand, scale, offset = ops
    op = "batch-norm-training"
    expect_array(operand, "operand of batch norm training")
    expect_array(offset, "offset input of batch norm training")
    expect_array(scale, "scale input of batch norm training")
    feature = _bn_common(op, operand, attrs.get("feature_index", 0),
                         [("offset factor", "Offset", offset), ("scale factor", "Scale", scale)])
    return tup((operand, feature, feature))


def _bn_inference_infer(ops, attrs, inst):
    operand, scale, offset, mean, variance = ops
    op = "batch-norm-inference"
    expect_array(operand, "operand of batch norm inference")
    expect_array(offset, "offset input of batch norm inference")
    expect_array(scale, "scale input of batch norm inference")
    _bn_common(op, operand, attrs.get("feature_index", 0),
               [("offset factor", "Offset", offset), ("scale factor", "Scale", scale),
                ("mean", "Mean", mean), ("variance", "Variance", variance)])
    return operand


def _bn_grad_infer(ops, attrs, inst):
    operand, scale, mean, variance, grad = ops
    op = "batch-norm-grad"
    for s, what in ((operand, "operand"), (scale, "scale input"), (mean, "mean input"),
                    (variance, "var input"), (grad, "output_grad input")):
        expect_array(s, f"{what} of batch norm grad")
    if operand.rank != grad.rank:
        fail(f"Expected operand_shape of batch-norm-grad to have the same rank as "
             f"output_grad_shape; got rank(oprand_shape) {operand.rank}, and "
             f"rank(output_grad_shape) {grad.rank}.")
    if not is_float(grad):
        fail(f"The output_grad to batch-norm-grad must have a floating point element type, "
             f"but the shape is {type_name(grad.dtype)}.")
    feature = _bn_common(op, operand, attrs.get("feature_index", 0),
                         [("mean", "Mean", mean), ("scale factor", "Scale", scale),
                          ("variance", "Var", variance)])
    for i in range(operand.rank):
        if operand.dims[i] != grad.dims[i]:
            fail(f"The bounds of operand shape should be compatible with output_grad's, but "
                 f"the bound of operand_shape at dimension {i} is {operand.dims[i]} and the "
                 f"bound of output_grad_shape is {grad.dims[i]}.")
    return tup((operand, feature, feature))


# ---------------------------------------------------------------------------
# Registration (attributes in XLA's printing order)

_X = frozenset({EXPENSIVE})
_DOT_DIMS = (
    AttrSpec("lhs_batch_dims", "int_list", default=()),
    AttrSpec("lhs_contracting_dims", "int_list", default=(), always_print=True),
    AttrSpec("rhs_batch_dims", "int_list", default=()),
    AttrSpec("rhs_contracting_dims", "int_list", default=(), always_print=True),
)
_PRECISION = AttrSpec("operand_precision", "precision_list")  # default: all "default"
_BN = (AttrSpec("epsilon", "float", required=True),
       AttrSpec("feature_index", "int", required=True))

# 2026 XLA: exactly two operands (the snapshot's sparse meta operands and `sparsity=`
# are gone; jaxlib 0.10.2 rejects `sparsity`).
_ALGORITHM = AttrSpec("algorithm", "dot_algorithm", default="unset")
register(OpDef("dot", 2, _DOT_DIMS + (_PRECISION, _ALGORITHM), _X, _dot_infer,
               arity_after_attrs=True), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("ragged-dot", 3, _DOT_DIMS + (
    AttrSpec("lhs_ragged_dims", "int_list", default=(), always_print=True),
    AttrSpec("rhs_group_dims", "int_list", default=()),
    _PRECISION), _X, _ragged_dot_infer,
    unsupported="ragged-dot is not implemented by XLA's evaluator either"),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("scaled-dot", 4, _DOT_DIMS + (_PRECISION, _ALGORITHM), _X, _scaled_dot_infer,
               unsupported="scaled-dot is not implemented by XLA's evaluator either"))
register(OpDef("convolution", 2, (
    AttrSpec("window", "window"),
    AttrSpec("dim_labels", "dim_labels", required=True),
    AttrSpec("feature_group_count", "int", default=1),
    AttrSpec("batch_group_count", "int", default=1),
    AttrSpec("convolution_kind", "conv_kind", default="unset"),
    AttrSpec("sparsity_config", "sparsity"),   # position unverified (jaxlib crashes on it)
    _PRECISION,
), _X, _conv_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("fft", 1, (AttrSpec("fft_type", "fft_type", required=True),
                          AttrSpec("fft_length", "int_list", required=True)), _X, _fft_infer))
register(OpDef("triangular-solve", 2, (
    AttrSpec("left_side", "bool", default=False),
    AttrSpec("lower", "bool", default=False),
    AttrSpec("unit_diagonal", "bool", default=False),
    AttrSpec("transpose_a", "transpose_a"),   # printed whenever set; absent = invalid
), _X, _triangular_solve_infer))
register(OpDef("cholesky", 1, (AttrSpec("lower", "bool", default=False),), _X,
               _cholesky_infer))
register(OpDef("batch-norm-training", 3, _BN, _X, _bn_training_infer), CAN_CHANGE_LAYOUT)
register(OpDef("batch-norm-inference", 5, _BN, _X, _bn_inference_infer), CAN_CHANGE_LAYOUT)
register(OpDef("batch-norm-grad", 5, _BN, _X, _bn_grad_infer), CAN_CHANGE_LAYOUT)
