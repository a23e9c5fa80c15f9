"""HLO literal values: `Literal` (shape, NumPy value, original text), the per-type facts
literal text needs, XLA's `{...}` filler, and `literal_from_array` for computed values.

Values are NumPy arrays in logical (row-major) order with dtype `shape.dtype.np`; tuples
are Python tuples. Reading and writing literal text is hloc.syntax's
(literal_parser.py, literal_checks.py, literal_printer.py).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .dtypes import DTYPES, DType
from .shape import ArrayShape, Shape, TupleShape

__all__ = ["LiteralError", "Literal", "ElidedFiller", "literal_from_array", "fill_elided"]

TRUNCATE_AT = 1000          # literal_comparison::ToStringTruncated
CONSTANT_INLINE_MAX = 10    # HloConstantInstruction prints <= 10 elements inline
# A zero-element array can have any number of rows (f32[1000000000000,0]); XLA would print
# each as `{  }`. Beyond this many we print one summary line instead of hanging.
TEXT_ROWS_MAX = 100_000


class LiteralError(ValueError):
    """A literal that XLA's parser rejects; `offset` is 0-based into the literal text."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.message = message
        self.offset = offset


class Literal:
    """A parsed or computed constant: shape, value, and the text it came from (if any)."""

    __slots__ = ("shape", "text", "elided", "value")

    def __init__(self, shape: Shape, value, text: str | None = None, elided: bool = False):
        self.shape = shape
        self.value = value
        self.text = text
        self.elided = elided

    def __repr__(self) -> str:
        return f"Literal({self.shape.no_layout()}, {self.value!r})"


_DTYPE_NAMES: dict = {}     # numpy dtype -> str(dtype) (numpy builds the name each time)


def literal_bytes(shape: Shape, value, limit: int | None = None):
    """A constant's value (of `shape`) as a comparable key: (dtype name, dims, bytes),
    tuples element-wise; None when not comparable (tokens, opaque) or an array is over
    `limit` bytes. Equal keys: the same value bit for bit (-0.0 is not 0.0)."""
    if isinstance(shape, ArrayShape):
        if not shape.dtype.is_array:
            return None
        if limit is not None and shape.size * max(1, shape.dtype.bits // 8) > limit:
            return None
        array = np.ascontiguousarray(np.asarray(value))
        name = _DTYPE_NAMES.get(array.dtype)
        if name is None:
            name = _DTYPE_NAMES[array.dtype] = str(array.dtype)
        return (name, array.shape, array.tobytes())
    elements = getattr(shape, "elements", None)
    if elements is None or not isinstance(value, tuple):
        return None
    parts = []
    for sub_shape, sub_value in zip(elements, value):
        sub = literal_bytes(sub_shape, sub_value, limit)
        if sub is None:
            return None
        parts.append(sub)
    return tuple(parts)


# ---------------------------------------------------------------------------
# Per-type facts

def _pt_name(dt: DType) -> str:
    """PrimitiveType_Name: F32, BF16, F8E4M3FN, PRED ..."""
    return dt.name.upper()


def _human(shape: ArrayShape) -> str:
    """ShapeUtil::HumanString of the (static) literal shape."""
    return f"{shape.dtype.name}[{','.join(str(d) for d in shape.dims)}]"


def _elem_bytes(dt: DType) -> int:
    return 1 if dt.bits < 8 else dt.bits // 8


class _FloatInfo:
    """What XLA's templates read from std::numeric_limits<T> for one float type."""

    def __init__(self, dt: DType):
        fi = ml_dtypes.finfo(dt.np)
        self.nmant = int(fi.nmant)
        self.minexp = int(fi.minexp)
        self.max = float(fi.max)
        self.lowest = float(fi.min)   # numeric_limits::lowest (positive for f8e8m0fnu)
        self.ubits = np.dtype(f"u{dt.np.itemsize}")
        self.max_digits10 = math.ceil(1 + (self.nmant + 1) * math.log10(2))
        # Types with signalling NaNs (IEEE-like, with inf) carry NaN payloads.
        has_payload = dt.name in ("f16", "bf16", "f32", "f64", "f8e5m2", "f8e4m3", "f8e3m4")
        self.payload_bits = self.nmant if has_payload else 0
        self.payload_mask = (1 << self.payload_bits) - 1 if has_payload else 0
        self.quiet = 1 << (self.payload_bits - 1) if has_payload else 0
        self.sign_bit = 1 << (8 * dt.np.itemsize - 1)
        qnan = np.array([np.nan], np.float32).astype(dt.np).view(self.ubits)[0]
        self.nan_base = int(qnan) & ~self.payload_mask & ~self.sign_bit


_FLOAT_INFO: dict[str, _FloatInfo] = {}


def _finfo(dt: DType) -> _FloatInfo:
    info = _FLOAT_INFO.get(dt.name)
    if info is None:
        info = _FLOAT_INFO[dt.name] = _FloatInfo(dt)
    return info


def _component(dt: DType) -> DType:
    """The part type of a complex type."""
    return DTYPES["f32"] if dt.name == "c64" else DTYPES["f64"]


class ElidedFiller:
    """XLA's filler for `{...}`: process-wide u32 word and u8 byte counters.

    XLA keeps the counters in function statics, so the n-th elided constant parsed in a
    process gets different bytes from the first. Share one filler across a module's
    constants (in text order) to reproduce what a fresh XLA process fills in.
    """

    def __init__(self, word: int = 0, byte: int = 0):
        self.word = word
        self.byte = byte

    def fill(self, dtype: DType, dims) -> np.ndarray:
        dims = tuple(dims)
        n = int(np.prod(dims, dtype=np.int64)) if dims else 1
        nbytes = n * _elem_bytes(dtype)
        nwords, rem = divmod(nbytes, 4)
        pred = dtype.kind == "pred"
        buf = np.zeros(nbytes, np.uint8)
        words = (np.arange(nwords, dtype=np.uint64) + self.word) & 0xFFFFFFFF
        words = words.astype("<u4")
        if pred:
            words &= 0x01010101
        buf[:nwords * 4] = words.view(np.uint8)
        self.word = (self.word + nwords) & 0xFFFFFFFF
        for i in range(rem):  # XLA writes these at nbytes/4 + i (sic), not 4*(nbytes/4) + i
            b = (self.byte + i) & 0xFF
            buf[nwords + i] = b & 1 if pred else b
        self.byte = (self.byte + rem) & 0xFF
        return _from_raw(buf, dtype).reshape(dims)


class ElidedLiteral(Literal):
    """`constant({...})` of an array: the fill is made only when the value is used, so a
    dump with a huge elided constant still parses and prints without allocating it."""

    __slots__ = ("_state", "_value")

    MAX_BYTES = 1 << 31

    def __init__(self, shape: ArrayShape, text: str, filler: "ElidedFiller"):
        self.shape = shape
        self.text = text
        self.elided = True
        self._value = None
        nbytes = shape.size * _elem_bytes(shape.dtype)
        self._state = (filler.word, filler.byte)
        filler.word = (filler.word + nbytes // 4) & 0xFFFFFFFF
        filler.byte = (filler.byte + nbytes % 4) & 0xFF

    @property
    def value(self):
        if self._value is None:
            nbytes = self.shape.size * _elem_bytes(self.shape.dtype)
            if nbytes > self.MAX_BYTES:
                raise LiteralError(f"elided constant of shape {self.shape} is too large to "
                                   f"materialise ({nbytes} bytes)")
            self._value = ElidedFiller(*self._state).fill(self.shape.dtype, self.shape.dims)
        return self._value


def _from_raw(buf: np.ndarray, dt: DType) -> np.ndarray:
    """Reinterpret raw literal bytes as XLA reads them (sub-byte types use the low bits)."""
    if dt.name == "s1":
        return -(buf & 1).astype(np.int8)
    if dt.name == "u1":
        return (buf & 1).astype(np.uint8)
    if dt.kind == "pred":
        return buf.view(np.bool_).copy()
    if dt.bits < 8:
        mid = np.float32 if dt.is_float else np.int8
        return buf.view(dt.np).astype(mid).astype(dt.np)
    return buf.view(dt.np).copy()


def fill_elided(shape: ArrayShape, filler: ElidedFiller | None = None) -> np.ndarray:
    """The value XLA gives `shape constant({...})`; a fresh filler starts both counters at 0."""
    if not isinstance(shape, ArrayShape) or not shape.dtype.is_array:
        raise LiteralError(f"cannot fill {shape} with elided values")
    return (filler or ElidedFiller()).fill(shape.dtype, shape.dims)


def literal_from_array(shape: Shape, value) -> Literal:
    """A literal for a computed value (no original text)."""
    return Literal(shape, _coerce(shape, value))


def _coerce(shape: Shape, value):
    if isinstance(shape, TupleShape):
        if len(value) != len(shape.elements):
            raise LiteralError(f"tuple value has {len(value)} elements, shape "
                               f"{shape.no_layout()} has {len(shape.elements)}")
        return tuple(_coerce(s, v) for s, v in zip(shape.elements, value))
    if not isinstance(shape, ArrayShape) or not shape.dtype.is_array:
        if value is None:
            return None
        raise LiteralError(f"no array value for shape {shape}")
    arr = np.asarray(value)
    if arr.dtype != shape.dtype.np:
        arr = arr.astype(shape.dtype.np)
    if arr.shape != tuple(shape.dims):
        if arr.ndim == 0:
            arr = np.full(shape.dims, arr, dtype=shape.dtype.np)
        elif not shape.dynamic:
            raise LiteralError(f"value of shape {arr.shape} does not match {shape.no_layout()}")
    return arr
