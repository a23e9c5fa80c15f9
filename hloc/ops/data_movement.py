"""Data-movement opcodes: broadcast, reshape, transpose, slicing, padding, iota and the
dynamic-shape helpers (gather and scatter are in gather_scatter.py).

Each rule mirrors its ShapeInference::Infer*Shape, messages included. Results that are
an operand's shape (reverse, scatter, dynamic-update-slice, set-dimension-size) keep
its layout; transpose permutes it (as ShapeUtil::PermuteDimensions does); the rest get
the default layout. `broadcast` infers like XLA's parser: with no written shape its
`dimensions` are read as sizes prepended to the operand (so `broadcast(f32[3] x),
dimensions={1}` is `f32[1,3]`); with a written shape it checks the operand-to-result
dimension mapping the way the verifier does.
"""
from __future__ import annotations

from ..ir.dtypes import S32
from ..ir.shape import ArrayShape, Layout
from .base import (CAN_CHANGE_LAYOUT, CPU_WRAPPED, ELEMENTAL, EXPENSIVE, MEMORY_SPACE_MOVER,
                   SHAPE_REQUIRED, AttrSpec, OpDef, register)
from .shape_rules import compatible, declared, dynamic_of, expect_array, fail, higher_precision, human, is_integral, is_permutation, is_scalar, join, make, need_declared, same_type_ignoring_fp, scalar, set_dynamic, type_name


def _dims(attrs, name="dimensions"):
    return tuple(attrs.get(name, ()))


# ---------------------------------------------------------------------------
# broadcast / reshape / transpose / reverse

def _broadcast_infer(ops, attrs, inst):
    (operand,) = ops
    dims = _dims(attrs)
    expect_array(operand, "operand of broadcast")
    out = declared(inst)
    if out is None:                     # InferBroadcastShape(operand, broadcast_sizes)
        for size in dims:
            if size < 0:
                fail(f"Broadcast with negative dimension size {size}.")
        dyn = (False,) * len(dims) + dynamic_of(operand)
        return make(operand.dtype, dims + operand.dims, dyn)
    # ShapeVerifier::HandleBroadcast.
    expect_array(out, "operand of broadcast")
    if operand.dtype is not out.dtype:
        fail(f"Broadcast changes the element type: {human(operand)} -> {human(out)}.")
    if operand.rank != len(dims):
        fail(f"Broadcast dimensions size ({len(dims)}) must match operand rank "
             f"({operand.rank}): {human(operand)} -> {human(out)}.")
    for i, d in enumerate(dims):
        if d < 0 or d >= out.rank or operand.dims[i] != out.dims[d]:
            fail(f"Broadcast operand dimension {i} (size {operand.dims[i]}) does not match "
                 f"output dimension {d}: {human(operand)} -> {human(out)}.")
    # (The verifier's optional verify_broadcast_dimensions_order check is not made.)
    return out


def _reshape_infer(ops, attrs, inst):
    (operand,) = ops
    out = need_declared(inst, "reshape")
    expect_array(operand, "reshape")
    inferred = make(operand.dtype, out.dims, out.dynamic)
    if operand.size != inferred.size:
        fail(f"Reshape operation has mismatched element counts: from={operand.size} "
             f"({human(operand)}) to={inferred.size} ({human(inferred)}).")
    return inferred


def _dynamic_reshape_infer(ops, attrs, inst):
    operand, *sizes = ops
    out = need_declared(inst, "dynamic-reshape")
    for s in sizes:
        if not (is_scalar(s) and s.dtype is S32):
            fail(f"DynamicReshape's dim size has to be scalar S32, got ({s}): ")
    if len(sizes) != out.rank:
        fail(f"DynamicReshape has to have the same number of elements in new_sizes "
             f"({out.rank}) and dims_are_dynamic ({len(sizes)})")
    inferred = make(operand.dtype, out.dims, out.dynamic)
    if operand.size != inferred.size:
        fail(f"Reshape operation has mismatched element counts: from={operand.size} "
             f"({human(operand)}) to={inferred.size} ({human(inferred)}).")
    return inferred


def _transpose_infer(ops, attrs, inst):
    (operand,) = ops
    perm = _dims(attrs)
    expect_array(operand, "transpose")
    if not is_permutation(perm, operand.rank):
        fail(f"Transpose dimensions [{join(perm, ',')}] are not a permutation of the operand "
             f"dimensions (operand shape is {human(operand)}).")
    dims = tuple(operand.dims[p] for p in perm)
    dyn = tuple(dynamic_of(operand)[p] for p in perm)
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    layout = operand.layout
    if layout is not None and len(layout.minor_to_major) == operand.rank:
        layout = Layout(tuple(inverse[d] for d in layout.minor_to_major), layout.tail)
    return ArrayShape(operand.dtype, dims, dyn if any(dyn) else (), layout)


def _reverse_infer(ops, attrs, inst):
    (operand,) = ops
    dims = _dims(attrs)
    expect_array(operand, "operand of reverse")
    if len(set(dims)) != len(dims):
        fail("a dimension number is duplicated in reverse")
    for d in dims:
        if d >= operand.rank or d < 0:
            fail(f"One of the reverse dimensions ({d}) is out-of-bounds in shape "
                 f"{human(operand)}.")
    return operand


# ---------------------------------------------------------------------------
# slice / dynamic-slice / dynamic-update-slice / concatenate / pad

def _slice_infer(ops, attrs, inst):
    (arg,) = ops
    need_declared(inst, "slice")
    spec = tuple(attrs.get("slice", ()))
    starts = [s[0] for s in spec]
    limits = [s[1] for s in spec]
    strides = [s[2] if len(s) > 2 and s[2] is not None else 1 for s in spec]
    expect_array(arg, "operand of slice")

    def error(message):
        fail(f"{message} in slice operation; argument shape: {human(arg)}; starts: "
             f"{{{join(starts, ',')}}}; limits: {{{join(limits, ',')}}}; strides: "
             f"{{{join(strides, ',')}}}.")

    if len(starts) != arg.rank:
        fail(f"Slice index count does not match argument rank: {len(starts)} vs {arg.rank}.")
    sizes, dyn = [], []
    for d, (start, limit, stride) in enumerate(zip(starts, limits, strides)):
        if start < 0:
            fail(f"Negative start index to slice: {start}.")
        if limit > arg.dims[d]:
            error(f"limit index ({limit}) must be less than or equal to dimension size "
                  f"({arg.dims[d]})")
        if start > limit:
            error(f"limit index ({limit}) must be greater or equal to start index ({start}) "
                  f"in slice with positive stride")
        if stride <= 0:
            fail(f"Stride ({stride}) must be positive.")
        size = (limit - start + stride - 1) // stride
        sizes.append(size)
        dyn.append(size != 1 and arg.is_dynamic_dim(d))
    return make(arg.dtype, sizes, dyn)


def _check_indices(what, operand, indices):
    """The index-operand rules shared by dynamic-slice and dynamic-update-slice."""
    if indices and isinstance(indices[0], ArrayShape) and indices[0].rank == 1:
        if len(indices) != 1:
            fail(f"{what} should have exactly 1 index operand, has {len(indices)}.")
        index = indices[0]
        if not is_integral(index):
            fail(f"{what} start indices must be of integral type.")
        if operand.rank != index.dims[0]:
            fail(f"{what} start number of dimensions {index.dims[0]} ({human(index)}) must "
                 f"match rank {operand.rank} of slice input ({human(operand)}).")
        return
    if operand.rank != len(indices):
        fail(f"{what} start number of dimensions {len(indices)} must match rank "
             f"{operand.rank} of slice input ({human(operand)}).")
    if indices:
        first = indices[0]
        if not is_scalar(first):
            fail(f"{what} indices must be scalar, not {human(first)}.")
        if not is_integral(first):
            fail(f"{what} start indices must be of integral type.")
        for index in indices:
            if not compatible(first, index):
                fail(f"{what} start indices must all have the same shape, got mismatching "
                     f"indices with shapes {human(first)} and {human(index)}.")


def _dynamic_slice_infer(ops, attrs, inst):
    operand, *indices = ops
    need_declared(inst, "dynamic-slice")
    sizes = _dims(attrs, "dynamic_slice_sizes")
    expect_array(operand, "operand of dynamic slice")
    _check_indices("Dynamic slice", operand, indices)
    if len(sizes) != operand.rank:
        fail(f"Dynamic slice index count does not match argument rank: {len(sizes)} vs "
             f"{operand.rank}.")
    for size, bound in zip(sizes, operand.dims):
        if size < 0:
            fail(f"Negative size index to dynamic slice: {size}.")
        if size > bound:
            fail(f"Slice dim size {size} greater than dynamic slice dimension: {bound}.")
    return make(operand.dtype, sizes)


def _dynamic_update_slice_infer(ops, attrs, inst):
    operand, update, *indices = ops
    need_declared(inst, "dynamic-update-slice")
    expect_array(operand, "operand of dynamic update slice")
    expect_array(update, "update of dynamic update slice")
    _check_indices("Dynamic update slice", operand, indices)
    if update.rank != operand.rank:
        fail(f"Dynamic update slice update rank does not match argument rank: "
             f"{update.rank} vs {operand.rank}.")
    if not same_type_ignoring_fp(operand, update):
        fail(f"Dynamic update slice update element type does not match argument. "
             f"operand.element_type: {type_name(operand.dtype)} vs update.element_type: "
             f"{type_name(update.dtype)}.")
    for u, o in zip(update.dims, operand.dims):
        if u < 0:
            fail(f"Size index {u} to dynamic update slice must be >= 0.")
        if u > o:
            fail(f"Update dim size {u} greater than dynamic slice dimension: {o}.")
    result = operand
    for i in range(update.rank):
        if update.is_dynamic_dim(i) and update.dims[i] == operand.dims[i]:
            result = set_dynamic(result, i)
    return result


def _concatenate_infer(ops, attrs, inst):
    if not ops:
        fail("Concatenate expects at least one argument.")
    dims = _dims(attrs) or (-1,)
    if len(dims) != 1:          # XLA's parser rejects these (dimensions->size() != 1)
        fail(f"Concatenate expects exactly one dimension, got {len(dims)}.")
    (dimension,) = dims
    first = ops[0]
    expect_array(first, "operand of concatenation")
    if dimension < 0 or dimension >= first.rank:
        fail(f"Concatenate dimension out of bounds: {dimension}.")
    dtype = first.dtype
    for s in ops[1:]:
        expect_array(s, "operand of concatenation")
        if s.rank != first.rank:
            fail(f"Cannot concatenate arrays with different ranks: {first.rank} "
                 f"({human(first)}) vs {s.rank} ({human(s)}).")
        if not same_type_ignoring_fp(first, s):
            fail(f"Cannot concatenate arrays with different element types: "
                 f"{type_name(first.dtype)} vs {type_name(s.dtype)}.")
        for d in range(first.rank):
            if d != dimension and first.dims[d] != s.dims[d]:
                fail(f"Cannot concatenate arrays that differ in dimensions other than the one "
                     f"being concatenated. Dimension {d} in both shapes must be equal (or "
                     f"compatible): "
                     f"{human(first)} vs {human(s)}.")
        dtype = higher_precision(dtype, s.dtype)
    dims = list(first.dims)
    dims[dimension] = sum(s.dims[dimension] for s in ops)
    dyn = [any(s.is_dynamic_dim(i) for s in ops) for i in range(first.rank)]
    return make(dtype, dims, dyn)


def _pad_infer(ops, attrs, inst):
    operand, value = ops
    config = tuple(attrs.get("padding", ()))
    if not isinstance(operand, ArrayShape) or not operand.dtype.is_array:
        fail("Pad operation does not support tuple-shape operands.")
    if not is_scalar(value):
        fail("Pad operation does not support non-scalar padding values.")
    if operand.rank != len(config):
        text = "x".join(f"{lo}_{hi}_{interior}" for lo, hi, interior in config)
        fail(f"The rank of the operand and the padding configuration do not match: "
             f"{human(operand)} vs {text}.")
    if not same_type_ignoring_fp(operand, value):
        fail("The element types of the operands to Pad do not match.")
    if any(interior < 0 for _, _, interior in config):
        text = "x".join(f"{lo}_{hi}_{interior}" for lo, hi, interior in config)
        fail(f"Interior padding cannot be negative: {text}")
    dims = []
    for i, (lo, hi, interior) in enumerate(config):
        n = operand.dims[i]
        size = n + lo + hi + max(n - 1, 0) * interior
        if size < 0:
            fail(f"Padding result in negative size for dimension {i}")
        dims.append(size)
    return make(higher_precision(operand.dtype, value.dtype), dims, dynamic_of(operand))


def _iota_infer(ops, attrs, inst):
    out = need_declared(inst, "iota")
    if not isinstance(out, ArrayShape) or not out.dtype.is_array:
        fail("Iota does not support non-array result.")
    if out.rank == 0:
        fail("Iota does not support scalars.")
    dim = attrs.get("iota_dimension", 0)
    if dim >= out.rank or dim < 0:
        fail("The iota dimension cannot go beyond the operation rank or be negative.")
    if out.dtype.kind not in ("int", "uint", "float", "complex"):
        fail(f"Only support iota of integral, floating point or complex primitive type, got "
             f"{type_name(out.dtype)}")
    return out


def _get_dimension_size_infer(ops, attrs, inst):
    (operand,) = ops
    (dim,) = _dims(attrs) or (-1,)
    if dim < 0 or dim >= operand.rank:
        fail(f"GetDimensionSize dimension out of bounds: {dim}.")
    if operand.dims[dim] > 2**31 - 1:
        fail(f"GetDimensionSize's input shape is {human(operand)}, the {dim}th dimension "
             f"exceeds the INT_MAX limit.")
    return scalar(S32)


def _set_dimension_size_infer(ops, attrs, inst):
    operand, value = ops
    (dim,) = _dims(attrs) or (-1,)
    if dim < 0 or dim >= operand.rank:
        fail(f"SetDimensionSize dimension out of bounds: {dim}.")
    if value.rank != 0 or value.dtype is not S32:
        fail(f"SetDimensionSize's value has to be S32 scalar, got {value}")
    if operand.dims[dim] > 2**31 - 1:
        fail(f"SetDimensionSize's input shape is {human(operand)}, the {dim}th dimension "
             f"exceeds the INT_MAX limit.")
    return set_dynamic(operand, dim)


# ---------------------------------------------------------------------------
# Registration (attributes in XLA's printing order)

_DIMS = AttrSpec("dimensions", "int_list", required=True)
_SR = frozenset({SHAPE_REQUIRED})

register(OpDef("broadcast", 1, (AttrSpec("dimensions", "int_list", default=(),
                                         always_print=True),),
               infer=_broadcast_infer),             # required unless operand is scalar
         ELEMENTAL, CPU_WRAPPED, CAN_CHANGE_LAYOUT)
register(OpDef("reshape", 1, (AttrSpec("inferred_dimension", "int", default=-1),), _SR,
               _reshape_infer), ELEMENTAL, CPU_WRAPPED, CAN_CHANGE_LAYOUT)
register(OpDef("dynamic-reshape", (1, None), (), _SR, _dynamic_reshape_infer), CAN_CHANGE_LAYOUT)
register(OpDef("transpose", 1, (_DIMS,), infer=_transpose_infer), ELEMENTAL, CAN_CHANGE_LAYOUT)
register(OpDef("reverse", 1, (_DIMS,), infer=_reverse_infer), ELEMENTAL, CPU_WRAPPED)
register(OpDef("slice", 1, (AttrSpec("slice", "slice", required=True),), _SR, _slice_infer),
         ELEMENTAL, CPU_WRAPPED)
register(OpDef("dynamic-slice", (1, None),
               (AttrSpec("dynamic_slice_sizes", "int_list", required=True),), _SR,
               _dynamic_slice_infer), ELEMENTAL, CPU_WRAPPED, MEMORY_SPACE_MOVER)
register(OpDef("dynamic-update-slice", (2, None), (), _SR, _dynamic_update_slice_infer), ELEMENTAL,
         MEMORY_SPACE_MOVER)
register(OpDef("concatenate", None, (_DIMS,), infer=_concatenate_infer), ELEMENTAL)
register(OpDef("pad", 2, (AttrSpec("padding", "padding", required=True),), infer=_pad_infer),
         ELEMENTAL, CPU_WRAPPED)
register(OpDef("iota", 0, (AttrSpec("iota_dimension", "int", required=True),), _SR,
               _iota_infer), ELEMENTAL, CPU_WRAPPED, CAN_CHANGE_LAYOUT)
register(OpDef("get-dimension-size", 1, (_DIMS,), frozenset({EXPENSIVE}),
               _get_dimension_size_infer), CAN_CHANGE_LAYOUT)
register(OpDef("set-dimension-size", 2, (_DIMS,), frozenset({EXPENSIVE}),
               _set_dimension_size_infer))
# layout-sensitive size check only; no rule
register(OpDef("bitcast", 1, (), _SR), ELEMENTAL, CAN_CHANGE_LAYOUT)
register(OpDef("shuffle", 1, (), unsupported="shuffle is an upstream-tip opcode that "
               "jaxlib 0.10.2 does not know; its attributes and shape rule are unknown"))
