"""Shapes and literals of XLA's protos: ShapeProto -> HLO shape text, LiteralProto ->
(hloc shape, NumPy value), as xla::Shape / xla::Literal::CreateFromProto read them
(element data in the literal's layout order, sub-byte and narrow types one per byte,
complex numbers as interleaved real and imaginary parts).
"""
from __future__ import annotations

import numpy as np

from ..diagnostics import InputError

__all__ = ["ProtoError", "shape_text", "type_name", "literal_value", "constant_text"]


class ProtoError(InputError):
    pass


# -- shapes -----------------------------------------------------------------------------

def type_name(shape) -> str:
    name = shape.DESCRIPTOR.fields_by_name["element_type"].enum_type.values_by_number.get(
        shape.element_type)
    if name is None:
        raise ProtoError(f"unknown element type {shape.element_type}")
    return {"OPAQUE_TYPE": "opaque"}.get(name.name, name.name.lower())


def shape_text(shape, *, layout: bool = True) -> str:
    t = type_name(shape)
    if t == "tuple":
        return "(" + ", ".join(shape_text(s, layout=layout) for s in shape.tuple_shapes) + ")"
    if t in ("token", "opaque"):
        return f"{t}[]"
    dyn = list(shape.is_dynamic_dimension)
    dims = ",".join(("<=" if i < len(dyn) and dyn[i] else "") + str(d)
                    for i, d in enumerate(shape.dimensions))
    text = f"{t}[{dims}]"
    if layout and shape.dimensions and shape.HasField("layout") and \
            len(shape.layout.minor_to_major) == len(shape.dimensions):
        text += _layout_text(shape.layout)
    return text


def _layout_text(lay) -> str:
    text = ",".join(str(d) for d in lay.minor_to_major)
    extra = ""
    for tile in lay.tiles:
        extra += "T(" + ",".join("*" if d == -2**63 else str(d) for d in tile.dimensions) + ")"
    if lay.element_size_in_bits:
        extra += f"E({lay.element_size_in_bits})"
    if lay.memory_space:
        extra += f"S({lay.memory_space})"
    return "{" + text + (":" + extra if extra else "") + "}"


# -- literals ---------------------------------------------------------------------------

_BYTES_FIELD = {"s4": "s4s", "u4": "u4s", "s2": "s2s", "u2": "u2s", "s1": "s1s", "u1": "u1s",
                "s8": "s8s", "u8": "u8s", "s16": "s16s", "u16": "u16s", "f16": "f16s",
                "bf16": "bf16s", "f8e5m2": "f8e5m2s", "f8e4m3fn": "f8e4m3fns",
                "f8e4m3b11fnuz": "f8e4m3b11fnuzs", "f8e5m2fnuz": "f8e5m2fnuzs",
                "f8e4m3fnuz": "f8e4m3fnuzs", "f8e4m3": "f8e4m3s", "f8e3m4": "f8e3m4s",
                "f4e2m1fn": "f4e2m1fns", "f8e8m0fnu": "f8e8m0fnus"}
_REPEATED_FIELD = {"pred": "preds", "s32": "s32s", "s64": "s64s", "u32": "u32s",
                   "u64": "u64s", "f32": "f32s", "f64": "f64s", "c64": "c64s",
                   "c128": "c128s"}


def literal_value(lit):
    """(hloc Shape, NumPy value or tuple of values) of a LiteralProto."""
    from ..ir.shape import TupleShape, parse_shape
    shape = parse_shape(shape_text(lit.shape, layout=False))
    if isinstance(shape, TupleShape):
        parts = [literal_value(t) for t in lit.tuple_literals]
        if len(parts) != len(shape.elements):
            raise ProtoError(f"tuple literal of shape {shape} has {len(parts)} elements")
        return shape, tuple(v for _, v in parts)
    dt = shape.dtype
    if dt.np is None:
        raise ProtoError(f"a literal of type {dt.name} has no value")
    n = int(np.prod(shape.dims, dtype=np.int64))
    if dt.name in _BYTES_FIELD:
        raw = getattr(lit, _BYTES_FIELD[dt.name])
        width = np.dtype(dt.np).itemsize
        if len(raw) != n * width:
            raise ProtoError(f"literal {shape}: {len(raw)} bytes for {n} elements")
        flat = np.frombuffer(raw, dtype=np.dtype(dt.np).newbyteorder("<")).astype(dt.np)
    elif dt.name in _REPEATED_FIELD:
        data = list(getattr(lit, _REPEATED_FIELD[dt.name]))
        if dt.kind == "complex":
            pairs = np.asarray(data, dtype=np.float32 if dt.name == "c64" else np.float64)
            if pairs.size != 2 * n:
                raise ProtoError(f"literal {shape}: {pairs.size // 2} values for {n} elements")
            flat = np.empty(n, dtype=dt.np)     # (not re + 1j*im: 1j*inf has a nan real part)
            flat.real, flat.imag = pairs[0::2], pairs[1::2]
        else:
            if len(data) != n:
                raise ProtoError(f"literal {shape}: {len(data)} values for {n} elements")
            flat = np.asarray(data, dtype=dt.np)
    else:
        raise ProtoError(f"hloc cannot read literals of type {dt.name}")
    m2m = list(lit.shape.layout.minor_to_major) if lit.shape.HasField("layout") else []
    dims = list(shape.dims)
    if len(m2m) == len(dims) and m2m != list(range(len(dims) - 1, -1, -1)):
        major = list(reversed(m2m))             # physical order, major first
        value = flat.reshape(tuple(dims[d] for d in major)).transpose(np.argsort(major))
    else:
        value = flat.reshape(tuple(dims))
    return shape, value.copy(order="C")


def constant_text(lit) -> str:
    from ..syntax.literal_printer import format_constant
    shape, value = literal_value(lit)
    return format_constant(shape, value, print_large=True)
