"""Evaluations of HLO's elementwise opcodes, attached to the registry with `@evaluates`.

Each evaluation picks the operands' element types from the instruction, runs a pure
kernel from numerics.py / conversions.py under `np.errstate(all="ignore")` and checks
that the result has exactly the storage dtype of the instruction's element type.
Results take their dimensions from the operands (so the lane engine in lanes.py
can run these on arrays of any shape); scalar operands of select and clamp broadcast;
copy of a tuple is the element-by-element (deep) copy.
An element type the kernel does not take becomes `ctx.unsupported(...)`.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import DTYPES
from ..ops import facets
from . import conversions as C
from . import numerics as N
from .core import evaluates

BINARY_OPCODES = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum",
                  "minimum", "atan2", "and", "or", "xor", "shift-left",
                  "shift-right-arithmetic", "shift-right-logical", "mulhi")
UNARY_OPCODES = tuple(N.UNARY)


def _dtype(inst, i: int = 0):
    return inst.operands[i].shape.dtype


def _finish(value, inst) -> np.ndarray:
    dt = inst.shape.dtype
    y = np.asarray(value)
    if y.dtype != dt.np:
        raise AssertionError(f"{inst.opcode} produced {y.dtype}, expected {dt.name}")
    return y


def _run(inst, ctx, kernel, *args) -> np.ndarray:
    try:
        with np.errstate(all="ignore"):
            return _finish(kernel(*args), inst)
    except N.Unsupported as e:
        raise ctx.unsupported(inst, f"{inst.opcode}: {e}") from None


def _arrays(operands):
    return [np.asarray(v) for v in operands]


def _unary(kernel):
    def evaluate(inst, operands, ctx):
        src, dt, x = _dtype(inst), inst.shape.dtype, np.asarray(operands[0])
        if src is not dt and src.kind == "float" and dt.kind == "float":
            # Mixed precision (`f32[] sine(f16[])`): as for binary ops, the operand is
            # converted to the result type first.
            x, src = _run_convert(inst, ctx, x, src, dt), dt
        elif src.kind == "complex" and dt.kind == "float":
            part = DTYPES["f32" if src.name == "c64" else "f64"]   # abs, real, imag
            if part is not dt:                                     # `f64[] abs(c64[])`
                with np.errstate(all="ignore"):
                    y = kernel(src, x)
                return _run_convert(inst, ctx, y, part, dt)
        return _run(inst, ctx, kernel, src, x)
    return evaluate


def _binary(key):
    def evaluate(inst, operands, ctx):
        a, b = _arrays(operands)
        dt = inst.shape.dtype
        if _dtype(inst) is not dt or _dtype(inst, 1) is not dt:
            # Mixed precision (the verifier allows it for floats): operands are converted
            # to the result type first, as XLA's float normalization would.
            a, b = (_run_convert(inst, ctx, v, _dtype(inst, i), dt) for i, v in enumerate((a, b)))
        return _run(inst, ctx, N.binary, key, dt, a, b)
    return evaluate


def _run_convert(inst, ctx, x, src, dst):
    if src is dst:
        return x
    try:
        with np.errstate(all="ignore"):
            return C.convert(x, src, dst)
    except N.Unsupported as e:
        raise ctx.unsupported(inst, f"{inst.opcode}: {e}") from None


# Elementwise rows are evaluated by their semantic key (OpDef.semantic): a row naming one
# of these keys is evaluated with no further edit here.
for _key in UNARY_OPCODES:
    if _key != "copy":
        facets.attach_semantic("evaluate", _unary(N.UNARY[_key]), _key)
for _key in BINARY_OPCODES:
    facets.attach_semantic("evaluate", _binary(_key), _key)


def deep_copy(value):
    """A copy of an array, or of a tuple (element by element); tokens stay tokens."""
    if isinstance(value, tuple):
        return tuple(deep_copy(v) for v in value)
    if isinstance(value, np.ndarray) or np.isscalar(value):
        return np.array(value, copy=True)
    return value


@evaluates("copy")
def _copy(inst, operands, ctx):
    return _copy_as(inst, ctx, operands[0], inst.operands[0].shape, inst.shape)


def _copy_as(inst, ctx, value, src, dst):
    """A copy of value; array leaves whose float type the (mixed-precision) result shape
    changes are converted to it."""
    if isinstance(value, tuple):
        return tuple(_copy_as(inst, ctx, v, s, d)
                     for v, s, d in zip(value, src.elements, dst.elements))
    s, d = getattr(src, "dtype", None), getattr(dst, "dtype", None)
    if s is not None and d is not None and s is not d and s.kind == d.kind == "float":
        return _run_convert(inst, ctx, np.asarray(value), s, d)
    return deep_copy(value)


@evaluates("complex")
def _complex(inst, operands, ctx):
    re, im = _arrays(operands)
    return _run(inst, ctx, N.complex_from_parts, inst.shape.dtype, re, im)


@evaluates("compare")
def _compare(inst, operands, ctx):
    a, b = _arrays(operands)
    return _run(inst, ctx, N.compare, _dtype(inst), a, b, inst.attrs["direction"],
                inst.attrs.get("type"))


@evaluates("select")
def _select(inst, operands, ctx):
    pred, on_true, on_false = operands
    if isinstance(on_true, tuple):          # pre-2023 tuple select: scalar predicate
        return on_true if bool(pred) else on_false
    return _run(inst, ctx, N.select, *_arrays(operands))


@evaluates("clamp")
def _clamp(inst, operands, ctx):
    lo, x, hi = _arrays(operands)
    return _run(inst, ctx, N.clamp, _dtype(inst, 1), lo, x, hi)


@evaluates("convert")
def _convert(inst, operands, ctx):
    return _run(inst, ctx, C.convert, np.asarray(operands[0]), _dtype(inst), inst.shape.dtype)


@evaluates("bitcast-convert")
def _bitcast_convert(inst, operands, ctx):
    return _run(inst, ctx, C.bitcast_convert, np.asarray(operands[0]), _dtype(inst),
                inst.shape.dtype)


@evaluates("bitcast")
def _bitcast(inst, operands, ctx):
    return _run(inst, ctx, C.bitcast, np.asarray(operands[0]), inst.operands[0].shape,
                inst.shape)


@evaluates("reduce-precision")
def _reduce_precision(inst, operands, ctx):
    return _run(inst, ctx, C.reduce_precision, _dtype(inst), np.asarray(operands[0]),
                inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"])


@evaluates("stochastic-convert")
def _stochastic_convert(inst, operands, ctx):
    x, rnd = _arrays(operands)
    return _run(inst, ctx, C.stochastic_convert, x, rnd, _dtype(inst, 0), _dtype(inst, 1),
                inst.shape.dtype)
