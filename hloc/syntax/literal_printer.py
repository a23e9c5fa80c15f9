"""Values -> HLO literal text, as xla/literal.cc prints them (DenseArrayPrintHelper,
RoundTripFpToString): `%.*g` with digits10 falling back to max_digits10 for f32/f64,
max_digits10 for the narrow floats, `nan(0x..)` payloads, 0/1 for pred arrays,
`/*iN=k*/` comments for rank > 3; `format_constant` and `literal_to_string`.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..ir.dtypes import DType
from ..ir.literal import (CONSTANT_INLINE_MAX, TEXT_ROWS_MAX, TRUNCATE_AT, Literal, LiteralError,
                          _component, _finfo, _FloatInfo)
from ..ir.shape import ArrayShape, Shape, TupleShape


# ---------------------------------------------------------------------------
# Printing (RoundTripFpToString, DenseArrayPrintHelper)

def _atof32(s: str) -> np.float32:
    """absl::SimpleAtof: decimal -> float with one rounding (float() then f32 may round twice)."""
    dv = float(s)
    f = np.float32(dv)
    if not math.isfinite(dv) or float(f) == dv:
        return f
    other = np.nextafter(f, np.float32(math.copysign(math.inf, dv - float(f))))
    mid = (float(f) + float(other)) / 2
    if mid != dv:
        return f
    exact, m = Fraction(s), Fraction(mid)
    if exact == m:          # a true tie: the even choice NumPy made is right
        return f
    return other if (exact > m) == (float(other) > float(f)) else f


def _nan_text(info: _FloatInfo, negative: bool, bits: int) -> str:
    text = "-nan" if negative else "nan"     # %g of static_cast<double>(value)
    if info.payload_bits:
        payload = bits & info.payload_mask
        if payload != info.quiet:
            text += f"(0x{payload:x})"
    return text


def _fp_text(dt: DType, x) -> str:
    """RoundTripFpToString for one value of float type `dt`."""
    info = _finfo(dt)
    v = float(x)
    if math.isnan(v):
        bits = int(np.asarray(x, dtype=dt.np).reshape(1).view(info.ubits)[0])
        return _nan_text(info, math.copysign(1.0, v) < 0, bits)
    if math.isinf(v):
        return "-inf" if v < 0 else "inf"
    if dt.name == "f32":
        s = "%.6g" % v
        if _atof32(s) != np.float32(v):
            s = "%.9g" % v
        return s
    if dt.name == "f64":
        s = "%.15g" % v
        if float(s) != v:
            s = "%.17g" % v
        return s
    return "%.*g" % (info.max_digits10, v)


def format_scalar(dtype: DType, x) -> str:
    """One element as LiteralBase::GetAsString prints it (pred as true/false)."""
    kind = dtype.kind
    if kind == "pred":
        return "true" if bool(x) else "false"
    if kind in ("int", "uint"):
        return str(int(x))
    if kind == "float":
        return _fp_text(dtype, np.asarray(x, dtype=dtype.np))
    if kind == "complex":
        comp = _component(dtype)
        c = np.asarray(x, dtype=dtype.np).reshape(1).view(comp.np)
        return f"({_fp_text(comp, c[0])}, {_fp_text(comp, c[1])})"
    raise LiteralError(f"cannot print a {dtype.name} value")


def _wide_float_texts(dt: DType, flat: np.ndarray) -> list[str]:
    """RoundTripFpToString for many f32/f64 values; odd ones go through _fp_text."""
    digits = 6 if dt.name == "f32" else 15
    texts = ["%.*g" % (digits, v) for v in flat.astype(np.float64).tolist()]
    back = np.array(list(map(float, texts)), dtype=np.float64)
    with np.errstate(all="ignore"):
        tie = np.zeros(flat.shape, bool)
        if dt.name == "f32":
            b32 = back.astype(np.float32)
            ok = b32 == flat
            inexact = b32.astype(np.float64) != back
            if inexact.any():   # a decimal that lands on an f32 midpoint may double-round
                other = np.nextafter(b32, np.where(back > b32, np.inf, -np.inf).astype(np.float32))
                tie = inexact & ((b32.astype(np.float64) + other.astype(np.float64)) / 2 == back)
        else:
            ok = back == flat
    redo = ~ok | tie
    if redo.any():
        wide = flat.astype(np.float64)
        plain = redo & ~tie & ~np.isnan(wide)
        fmt = "%.9g" if dt.name == "f32" else "%.17g"
        for i, v in zip(np.flatnonzero(plain).tolist(), wide[plain].tolist()):
            texts[i] = fmt % v
        for i in np.flatnonzero(redo & ~plain).tolist():
            texts[i] = _fp_text(dt, flat[i])
    return texts


def _element_texts(dt: DType, flat: np.ndarray, rank: int) -> list[str]:
    kind = dt.kind
    if kind == "pred":
        if rank == 0:
            return ["true" if flat[0] else "false"]
        return ["1" if b else "0" for b in flat.tolist()]
    if kind in ("int", "uint"):
        if dt.bits < 8 or dt.name in ("s1", "u1"):
            flat = flat.astype(np.int64)
        return [str(v) for v in flat.tolist()]
    if kind == "float":
        if flat.size <= 64:
            return [_fp_text(dt, v) for v in flat]
        if dt.name in ("f32", "f64"):
            return _wide_float_texts(dt, flat)
        uniq, inv = np.unique(flat.view(_finfo(dt).ubits), return_inverse=True)
        texts = [_fp_text(dt, v) for v in uniq.view(dt.np)]
        return [texts[i] for i in inv.reshape(-1).tolist()]
    if kind == "complex":
        comp = _component(dt)
        parts = _element_texts(comp, flat.view(comp.np), 1)
        return [f"({parts[i]}, {parts[i + 1]})" for i in range(0, len(parts), 2)]
    raise LiteralError(f"cannot print a {dt.name} value")


def _dense_text(dt: DType, arr: np.ndarray, oneline: bool) -> str:
    dims = arr.shape
    rank = len(dims)
    texts = _element_texts(dt, np.ascontiguousarray(arr).reshape(-1), rank)
    if rank == 0:
        return texts[0]
    if rank == 1:
        return "{" + ", ".join(texts) + "}"
    lb = " " if oneline else "\n"
    out: list[str] = []
    pos = 0

    def rec(level: int, accum: list[int]):
        nonlocal pos
        n = dims[level]
        if level == rank - 1:   # innermost row of a 2D+ array
            row = texts[pos:pos + n]
            pos += n
            pad = "" if n <= 1 else " "
            out.append(("" if oneline else "  ") + "{" + pad + ", ".join(row) + pad + "}")
            return
        if rank > 3 and accum:
            out.append(f"{{ /*i{len(accum) - 1}={accum[-1]}*/" + (lb if n > 0 else ""))
        else:
            out.append("{" + lb)
        for i in range(n):
            accum.append(i)
            rec(level + 1, accum)
            accum.pop()
            if i < n - 1:
                out.append("," + lb)
        out.append(lb + "}")

    rec(0, [])
    return "".join(out)


def format_constant(shape: Shape, value, *, print_large: bool = False) -> str:
    """HloConstantInstruction's operand text for a constant with this value."""
    if isinstance(shape, TupleShape):
        if not print_large:
            return "{...}"
        return _oneline_tuple(shape, value)
    if (not print_large and shape.size > CONSTANT_INLINE_MAX) or \
            text_rows(shape.dims) > TEXT_ROWS_MAX:
        return "{...}"
    return _dense_text(shape.dtype, np.asarray(value, dtype=shape.dtype.np), oneline=True)


def _oneline_tuple(shape: TupleShape, value) -> str:
    parts = []
    for sub, v in zip(shape.elements, value):
        if isinstance(sub, TupleShape):
            parts.append(_oneline_tuple(sub, v))
        elif isinstance(sub, ArrayShape) and sub.dtype.is_array:
            if text_rows(sub.dims) > TEXT_ROWS_MAX:
                return "{...}"
            parts.append(_dense_text(sub.dtype, np.asarray(v, dtype=sub.dtype.np), oneline=True))
        else:
            parts.append("token")
    return "( " + ", ".join(parts) + " )"


def _element_count(shape: Shape) -> int:
    if isinstance(shape, TupleShape):
        return sum(_element_count(s) for s in shape.elements)
    if isinstance(shape, ArrayShape) and shape.dtype.is_array:
        return shape.size
    return 0


def text_rows(dims) -> int:
    """How many innermost `{...}` rows the dense text of an array with these dims has."""
    return math.prod(dims[:-1]) if len(dims) > 1 else 1


def _too_many_rows(shape: Shape) -> int:
    """The row count of the first leaf whose text is too long to build, else 0."""
    if isinstance(shape, TupleShape):
        return next((n for n in map(_too_many_rows, shape.elements) if n), 0)
    if isinstance(shape, ArrayShape) and shape.dtype.is_array:
        n = text_rows(shape.dims)
        return n if n > TEXT_ROWS_MAX else 0
    return 0


def literal_to_string(shape: Shape, value, *, print_all: bool = False) -> str:
    """Literal::ToString; at >= 1000 elements XLA's ToStringTruncated text unless print_all."""
    if not print_all and _element_count(shape) >= TRUNCATE_AT:
        return "[TRUNCATED, Literal with more than 1000 values]"
    rows = _too_many_rows(shape)
    if rows and _element_count(shape) < TRUNCATE_AT:
        return f"[TRUNCATED, Literal with {_element_count(shape)} values in {rows} rows]"
    return _to_string(shape, value)


def _to_string(shape: Shape, value) -> str:
    if isinstance(shape, TupleShape):
        inner = ",\n".join(_to_string(s, v) for s, v in zip(shape.elements, value))
        return "(\n" + inner + "\n)"
    if not isinstance(shape, ArrayShape) or not shape.dtype.is_array:
        return "token"
    arr = np.asarray(value, dtype=shape.dtype.np)
    head = shape.dims_text()
    if shape.dynamic and any(shape.dynamic):
        head += "(" + ",".join(str(n) for n in arr.shape) + ")"
    return head + " " + _dense_text(shape.dtype, arr, oneline=False)


def literal_text(literal: Literal, *, print_large: bool = False) -> str:
    """What goes inside constant(...): the literal's original text, else XLA's printing."""
    if literal.text is not None:
        return literal.text
    return format_constant(literal.shape, literal.value, print_large=print_large)
