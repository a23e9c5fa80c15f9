"""Shared pieces of XLA's shape inference (xla/service/shape_inference.cc, shape_util.cc).

Element-type predicates and `higher_precision` (primitive_util), the `Compatible*`
comparisons (dynamic dimensions and layout ignored, as ShapeUtil's do), HumanString
text for messages, result constructors that follow XLA's layout rule (ops that change
an operand's element type keep its layout; shapes built from scratch get the default
layout), the window output rule, the reducer signature check used by reduce,
reduce-window, scatter and select-and-scatter, and `declared()` for rules that need
the result shape written in the text (convert, slice, collectives ...).
"""
from __future__ import annotations

from functools import lru_cache

import ml_dtypes

from ..ir.dtypes import DTYPES, PRED, DType
from ..ir.shape import ArrayShape, Shape, TupleShape, array, default_layout
from .base import ShapeInferenceError


def fail(message: str):
    raise ShapeInferenceError(message)


def cannot_infer(opcode: str):
    """XLA's parser message for an opcode whose result shape must be written."""
    fail(f"cannot infer shape for opcode: {opcode}")


def declared(inst) -> Shape | None:
    """The result shape written in the text, when the instruction has one."""
    return getattr(inst, "shape", None) if inst is not None else None


def need_declared(inst, opcode: str) -> Shape:
    shape = declared(inst)
    if shape is None:
        cannot_infer(opcode)
    return shape


def need_attr(attrs, name: str):
    """A required attribute (the parser enforces presence; passes might not)."""
    value = attrs.get(name)
    if value is None:
        fail(f"attribute {name} is expected but not seen")
    return value


# ---------------------------------------------------------------------------
# Text for messages (ShapeUtil::HumanString, PrimitiveType_Name, StrJoin)

def human(shape) -> str:
    if isinstance(shape, TupleShape):
        return "(" + ", ".join(human(e) for e in shape.elements) + ")"
    if isinstance(shape, ArrayShape):
        return shape.dims_text()
    return str(shape)


def type_name(dtype: DType) -> str:
    return "OPAQUE_TYPE" if dtype.name == "opaque" else dtype.name.upper()


def join(values, sep: str = ", ") -> str:
    return sep.join(str(v) for v in values)


def program_text(comp) -> str:
    """ShapeUtil::HumanString(ProgramShape): `(x: f32[], y: f32[]) -> f32[]`."""
    params = ", ".join(f"{p.name}: {human(p.shape)}" for p in comp.parameters)
    return f"({params}) -> {human(comp.root.shape)}"


# ---------------------------------------------------------------------------
# Element-type predicates (primitive_util / ShapeUtil::ElementIs*)

def is_array(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.is_array


def is_float(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.kind == "float"


def is_complex(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.kind == "complex"


def is_integral(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.kind in ("int", "uint")


def is_signed(shape) -> bool:
    """ShapeUtil::ElementIsSigned: signed integers and floating point."""
    return isinstance(shape, ArrayShape) and shape.dtype.kind in ("int", "float")


def is_scalar(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.rank == 0


def expect_array(shape, what: str) -> None:
    if not is_array(shape):
        fail(f"Expected array argument for {what}, but got {human(shape)}.")


def same_type_ignoring_fp(a, b) -> bool:
    if is_float(a) and is_float(b):
        return True
    return a.dtype is b.dtype


@lru_cache(maxsize=None)
def _properties(dtype: DType) -> tuple:
    comp = {"c64": DTYPES["f32"], "c128": DTYPES["f64"]}.get(dtype.name, dtype)
    if comp.kind == "float":
        info = ml_dtypes.finfo(comp.np)
        exponent, significand = int(info.maxexp), int(info.nmant) + 1
    else:
        exponent = significand = -1
    return (dtype.kind == "complex", exponent, significand, comp.bits, comp.kind == "int")


def higher_precision(a: DType, b: DType) -> DType:
    """primitive_util::HigherPrecisionType."""
    if a is b:
        return a
    return a if _properties(a) >= _properties(b) else b


def _compatible(a, b, ignore_fp: bool, ignore_type: bool) -> bool:
    if isinstance(a, TupleShape) or isinstance(b, TupleShape):
        return (isinstance(a, TupleShape) and isinstance(b, TupleShape)
                and len(a.elements) == len(b.elements)
                and all(_compatible(x, y, ignore_fp, ignore_type)
                        for x, y in zip(a.elements, b.elements)))
    if not (isinstance(a, ArrayShape) and isinstance(b, ArrayShape)):
        return a == b
    if not a.dtype.is_array or not b.dtype.is_array:
        return a.dtype is b.dtype
    if not ignore_type and not (a.dtype is b.dtype
                                or (ignore_fp and is_float(a) and is_float(b))):
        return False
    return a.dims == b.dims


def compatible(a, b) -> bool:
    """ShapeUtil::Compatible: same type and dims; layout and dynamism ignored."""
    return _compatible(a, b, False, False)


def compatible_ignoring_fp(a, b) -> bool:
    return _compatible(a, b, True, False)


def compatible_ignoring_type(a, b) -> bool:
    return _compatible(a, b, False, True)


# ---------------------------------------------------------------------------
# Result constructors

def make(dtype, dims, dynamic=()) -> ArrayShape:
    """ShapeUtil::MakeShape: default layout."""
    shape = array(dtype, dims)
    if any(dynamic):
        shape = ArrayShape(shape.dtype, shape.dims, tuple(bool(d) for d in dynamic),
                           shape.layout)
    return shape


def change_type(shape: ArrayShape, dtype) -> ArrayShape:
    """ShapeUtil::ChangeElementType: keeps dims, dynamism and layout."""
    if isinstance(dtype, str):
        dtype = DTYPES[dtype]
    return shape.with_dtype(dtype)


def dynamic_of(shape: ArrayShape) -> tuple[bool, ...]:
    return shape.dynamic if shape.dynamic else (False,) * shape.rank


def set_dynamic(shape: ArrayShape, dim: int) -> ArrayShape:
    dyn = list(dynamic_of(shape))
    dyn[dim] = True
    return ArrayShape(shape.dtype, shape.dims, tuple(dyn), shape.layout)


def scalar(dtype) -> ArrayShape:
    return array(dtype, ())


def tup(elements) -> TupleShape:
    return TupleShape(tuple(elements))


def pred_like(shape: ArrayShape) -> ArrayShape:
    return change_type(shape, PRED)


def with_default_layout(shape: ArrayShape) -> ArrayShape:
    return ArrayShape(shape.dtype, shape.dims, shape.dynamic,
                      default_layout(shape.rank) if shape.dtype.is_array else None)


# ---------------------------------------------------------------------------
# Windows and reducers

def dilated_bound(bound: int, dilation: int) -> int:
    return 0 if bound == 0 else (bound - 1) * dilation + 1


def strided_bound(bound: int, window: int, stride: int) -> int:
    if window > bound:
        return 0
    return (bound - window) // stride + 1


def window_text(window) -> str:
    """A short Window description for messages."""
    parts = []
    for d in window.dims:
        parts.append(f"size={d.size} stride={d.stride} pad={d.pad_lo}_{d.pad_hi} "
                     f"lhs_dilate={d.lhs_dilate} rhs_dilate={d.rhs_dilate}")
    return "{" + "; ".join(parts) + "}"


def window_output(base: ArrayShape, window, dtype) -> ArrayShape:
    """InferWindowOutputShape."""
    dims = tuple(window.dims) if window is not None else ()
    if len(dims) != base.rank:
        fail(f"Window has dimension {len(dims)} but base shape has dimension {base.rank}.")
    out = []
    for i, d in enumerate(dims):
        if d.size <= 0:
            fail(f"Window {window_text(window)} has a non-positive dimension.")
        if d.stride <= 0:
            fail(f"Window {window_text(window)} has a non-positive stride.")
        if d.lhs_dilate < 1:
            fail(f"Window {window_text(window)} has a non-positive base area dilation factor.")
        if d.rhs_dilate < 1:
            fail(f"Window {window_text(window)} has a non-positive window dilation factor.")
        padded = d.pad_lo + dilated_bound(base.dims[i], d.lhs_dilate) + d.pad_hi
        out.append(strided_bound(padded, dilated_bound(d.size, d.rhs_dilate), d.stride))
    if any(n < 0 for n in out):
        fail(f"Window {window_text(window)} produces a negative output size.")
    return make(dtype, out, dynamic_of(base))


def params_of(comp) -> list:
    return [p.shape for p in comp.parameters]


def verify_reducer(comp, init_shapes, input_types, inputs: int) -> None:
    """VerifyReducerShape."""
    params = params_of(comp)
    if len(params) != inputs * 2:
        fail(f"Reduction function must take {inputs * 2} parameters, but takes "
             f"{len(params)} parameter(s).")
    acc = comp.root.shape
    if isinstance(acc, TupleShape):
        if len(acc.elements) != inputs:
            fail(f"Reduction function must produce a tuple with {inputs} elements, but has "
                 f"{len(acc.elements)} elements")
        subs = list(acc.elements)
    elif isinstance(acc, ArrayShape):
        if inputs != 1:
            fail(f"Reduction function must produce a tuple with {inputs} elements, but "
                 f"produces a scalar")
        subs = [acc]
    else:
        fail(f"Reduction function must produce a scalar or tuple of scalars, but has "
             f"shape: {human(acc)}")
    for sub in subs:
        if not isinstance(sub, ArrayShape) or sub.rank != 0:
            fail(f"Reduction function must return a scalar or tuple of scalars but returns "
                 f"shape: {human(acc)}")
    for i in range(inputs):
        if not compatible(subs[i], params[i]):
            fail(f"Reduction function's {i}-th parameter shape differs from the result "
                 f"shape: {human(params[i])} vs {human(subs[i])}")
        if not compatible_ignoring_fp(subs[i], init_shapes[i]):
            fail(f"Reduction function's accumulator shape at index {i} differs from the "
                 f"init_value shape: {human(subs[i])} vs {human(init_shapes[i])}")
        elem = scalar(input_types[i])
        if not compatible_ignoring_fp(elem, params[inputs + i]):
            fail(f"Reduction function's {inputs + i}-th parameter shape differs from the "
                 f"input type element type: {human(params[inputs + i])} vs {human(elem)}")
        if not compatible_ignoring_fp(subs[i], params[inputs + i]):
            fail(f"Reduction function's {inputs + i}-th parameter shape must match the "
                 f"result shape, but got {human(params[inputs + i])} vs {human(subs[i])}.")


def group_size(replica_groups) -> int | None:
    """Participants per group, or None when it depends on the replica count."""
    groups = getattr(replica_groups, "groups", replica_groups)
    if not groups:
        return None
    return len(groups[0])


def is_permutation(dims, rank: int) -> bool:
    return len(dims) == rank and sorted(dims) == list(range(rank))
