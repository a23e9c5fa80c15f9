"""HLO literal text <-> NumPy values, as XLA's parser and printer do it.

Parsing follows xla/hlo/parser/hlo_parser.cc (ParseDenseLiteral, SetValueInLiteral,
CheckParsedValueIsInRange) and the number rules of hlo_lexer.cc, quirks included:
commas are optional, `...` fills the array with XLA's deterministic pseudo-random
bytes, some errors are recorded but not fatal (`f32[2] constant(5)` is `{5, 0}`),
and the first error XLA would record is the one reported. Printing follows
xla/literal.cc (DenseArrayPrintHelper, RoundTripFpToString): `%.*g` with digits10
falling back to max_digits10 for f32/f64, max_digits10 for the narrow floats, `nan(0x..)`
payloads, 0/1 for pred arrays, `/*iN=k*/` comments for rank > 3. Values are NumPy
arrays in logical (row-major) order with dtype `shape.dtype.np`; tuples are Python tuples.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

import ml_dtypes
import numpy as np

from .dtypes import DTYPES, DType
from .shape import UNBOUNDED, ArrayShape, Shape, TupleShape

__all__ = [
    "LiteralError", "Literal", "ElidedFiller", "parse_literal", "literal_from_array",
    "format_constant", "literal_to_string", "format_scalar", "fill_elided",
]

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

    def to_text(self, *, print_large: bool = False) -> str:
        """What goes inside constant(...): the original text, else XLA's printing."""
        if self.text is not None:
            return self.text
        return format_constant(self.shape, self.value, print_large=print_large)

    def __repr__(self) -> str:
        return f"Literal({self.shape.no_layout()}, {self.to_text()!r})"


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


# ---------------------------------------------------------------------------
# Lexer (hlo_lexer.cc rules, as far as literals can see them)

_SKIP = r"(?:[ \t\n\r]+|/\*.*?\*/|//[^\n\r]*)*"
_TOKEN_RE = re.compile(_SKIP + r"""(?:
   (?P<punct>[{}(),])
  |(?P<dots>\.\.\.)
  |(?=[0-9-])(?:
      (?P<float>-?(?:(?:\d+|\d+\.\d*|\d*\.\d+)[eE][+-]?\d+)|-?(?:\d+\.\d*|\d*\.\d+))
     |(?P<pattern>[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}|[0-9]+(?:x[0-9]+)+
                 |-?[0-9]+_-?[0-9]+(?:_[0-9]+)?(?:x-?[0-9]+_-?[0-9]+(?:_[0-9]+)?)*)
     |(?P<int>-?\d+)
     |(?P<neginf>-inf)
     |(?P<negnan>-nan)
   )
  |(?P<ident>[A-Za-z_][A-Za-z0-9_.\-]*)
)?""", re.S | re.X)
_PAYLOAD_RE = re.compile(r"\(0x([0-9a-fA-F]+)\)")

# token kinds
(_EOF, _ERR, _LBRACE, _RBRACE, _LPAREN, _RPAREN, _COMMA, _DOTS,
 _INT, _DEC, _TRUE, _FALSE, _INF, _NEGINF) = range(14)
_PUNCT = {"{": _LBRACE, "}": _RBRACE, "(": _LPAREN, ")": _RPAREN, ",": _COMMA}
_NUMBER_KINDS = (_INT, _DEC, _TRUE, _FALSE, _INF, _NEGINF)
_QUIET_F64 = 1 << 51
_F64_MASK = (1 << 52) - 1


def _f64_from_bits(bits: int) -> float:
    return float(np.array([bits], np.uint64).view(np.float64)[0])


class _Tok:
    __slots__ = ("kind", "pos", "value", "nan")

    def __init__(self, kind, pos, value=None, nan=None):
        self.kind = kind
        self.pos = pos
        self.value = value
        self.nan = nan          # (sign, payload) for NaN decimals


def _lex_payload(text: str, pos: int):
    """`(0xHEX)` right after nan: (payload, end) or None (XLA: kError)."""
    m = _PAYLOAD_RE.match(text, pos)
    if not m or len(m.group(1).lstrip("0")) > 16:
        return None
    payload = int(m.group(1), 16)
    if payload <= 0 or payload > _F64_MASK:
        return None
    return payload, m.end()


def _lex(text: str, pos: int) -> tuple[_Tok, int]:
    m = _TOKEN_RE.match(text, pos)
    kind = m.lastgroup
    if kind is None:
        start = m.end()
        return _Tok(_EOF if start >= len(text) else _ERR, start), start
    start, end = m.start(kind), m.end()
    s = m.group(kind)
    if kind == "punct":
        return _Tok(_PUNCT[s], start), end
    if kind == "dots":
        return _Tok(_DOTS, start), end
    if kind == "float":
        return _Tok(_DEC, start, float(s)), end
    if kind == "int":
        v = int(s)
        if v < -(1 << 63) or v >= (1 << 64):
            return _Tok(_ERR, start), start
        return _Tok(_INT, start, v - (1 << 64) if v >= (1 << 63) else v), end
    if kind == "neginf":
        return _Tok(_NEGINF, start), end
    if kind == "negnan" or (kind == "ident" and s == "nan" and text[end:end + 1] not in (":", "=")):
        payload = _QUIET_F64
        if text.startswith("(", end):
            got = _lex_payload(text, end)
            if got is None:
                return _Tok(_ERR, start), start
            payload, end = got
        sign = kind == "negnan"
        bits = (0x7FF << 52) | (1 << 63 if sign else 0) | payload
        return _Tok(_DEC, start, _f64_from_bits(bits), (sign, payload)), end
    if kind == "ident" and text[end:end + 1] not in (":", "="):
        if s == "true":
            return _Tok(_TRUE, start, True), end
        if s == "false":
            return _Tok(_FALSE, start, False), end
        if s == "inf":
            return _Tok(_INF, start), end
    return _Tok(_ERR, start), start


# ---------------------------------------------------------------------------
# Parser

class _Fatal(Exception):
    def __init__(self, seq, offset, message):
        super().__init__(message)
        self.seq, self.offset, self.message = seq, offset, message


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


class _Dense:
    """Values seen while parsing one dense array, checked and converted in bulk."""

    __slots__ = ("vals", "offs", "seqs", "nans", "fill", "fill_at")

    def __init__(self):
        self.vals, self.offs, self.seqs = [], [], []
        self.nans = {}          # index -> (sign, payload) of NaN decimals / complex parts
        self.fill = None        # data of the last `...`
        self.fill_at = 0        # writes made before the last `...` (overwritten by it)


class _Parser:
    def __init__(self, text: str, filler: ElidedFiller | None):
        self.text = text
        self.filler = filler
        self.tok, self.end = _lex(text, 0)
        self.seq = 0
        self.soft: list[tuple] = []   # errors XLA records without stopping
        self.elided = False

    def advance(self):
        self.tok, self.end = _lex(self.text, self.end)

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def soft_error(self, offset, message):
        self.soft.append((self.next_seq(), offset, message))

    def fatal(self, message, offset=None):
        return _Fatal(self.next_seq(), self.tok.pos if offset is None else offset, message)

    # -- entry points --------------------------------------------------------

    def parse(self, shape: Shape):
        try:
            value = self.literal(shape)
            if self.tok.kind != _EOF:
                raise self.fatal("expects ')' after constant literal")
        except _Fatal as f:
            seq, offset, message = min(self.soft + [(f.seq, f.offset, f.message)])
            raise LiteralError(message, offset) from None
        return value

    def literal(self, shape: Shape):
        if isinstance(shape, TupleShape):
            return self.tuple_literal(shape)
        if not isinstance(shape, ArrayShape) or not shape.dtype.is_array:
            raise self.fatal(f"expects an array or tuple shape for a literal, but sees {shape}")
        if any(d == UNBOUNDED for d in shape.dims):
            raise self.fatal(f"a literal cannot have unbounded dimensions: {shape.no_layout()}")
        return self.dense_literal(shape)

    def tuple_literal(self, shape: TupleShape):
        if self.tok.kind != _LPAREN:
            raise self.fatal("expects '(' in front of tuple elements")
        self.advance()
        n = len(shape.elements)
        values = []
        if self.tok.kind == _RPAREN and n:
            # XLA accepts `()` for any tuple shape and builds nil elements; we cannot.
            raise self.fatal(f"expects {n} tuple elements, but sees 0")
        for i, sub in enumerate(shape.elements):
            if i > 0:
                if self.tok.kind == _COMMA:
                    self.advance()
                else:
                    self.soft_error(self.tok.pos, "expects ',' to separate tuple elements")
            values.append(self.literal(sub))
        if self.tok.kind != _RPAREN:
            raise self.fatal(f"expects ')' at the end of the tuple with {n}elements")
        self.advance()
        return tuple(values)

    # -- dense arrays (ParseDenseLiteral) ------------------------------------

    def dense_literal(self, shape: ArrayShape):
        dt, dims = shape.dtype, shape.dims
        rank = len(dims)
        size = math.prod(dims)
        if rank and self.tok.kind == _LBRACE:
            fast = _fast_dense(self.text, self.tok.pos, shape)
            if fast is not None:
                value, self.end = fast
                self.advance()
                return value
        seen = [0] * rank
        nest = 0
        d = _Dense()
        kind = dt.kind
        try:
            while True:
                tok = self.tok
                k = tok.kind
                if k in _NUMBER_KINDS:
                    self.add_elem_seen(rank, nest, seen, dims, fatal=False)
                    self.scalar(tok, dt, d, shape, size)
                elif k == _COMMA:
                    self.advance()
                elif k == _LBRACE:
                    nest += 1
                    if nest > rank:
                        raise self.fatal(f"expects nested array in rank {rank}, but sees larger")
                    if nest > 1:
                        seen[nest - 2] += 1
                        if seen[nest - 2] > dims[nest - 2]:
                            where = _index_str(seen, nest - 2)
                            raise self.fatal(f"expects {dims[nest - 2]} elements in the "
                                             f"{where}th element, but sees more")
                    self.advance()
                elif k == _RBRACE:
                    if nest == 0:
                        raise self.fatal("unexpected '}' token")
                    nest -= 1
                    if seen[nest] != dims[nest]:
                        where = _index_str(seen, nest)
                        raise self.fatal(f"expects {dims[nest]} elements in the {where}th "
                                         f"element, but sees {seen[nest]}")
                    seen[nest] = 0
                    self.advance()
                elif k == _LPAREN:
                    if kind != "complex":
                        raise self.fatal("unexpected '(' in literal. Parens are only valid for "
                                         "complex literals")
                    self.add_elem_seen(rank, nest, seen, dims, fatal=True)
                    self.complex_value(d, shape, size)
                elif k == _DOTS:
                    if nest != 1:
                        raise self.fatal(f"expects `...` at nest level 1, but sees it at nest "
                                         f"level {nest}")
                    seen[0] = dims[0]
                    self.advance()
                    self.elided = True
                    d.fill = (self.filler or ElidedFiller()).fill(dt, dims).reshape(-1)
                    d.fill_at = len(d.vals)
                else:
                    raise self.fatal("unexpected token type in a literal")
                if nest <= 0:
                    break
        except _Fatal as f:
            err = _check(d, dt, shape, until=f.seq)
            if err is not None and err[0] < f.seq:
                raise _Fatal(*err) from None
            raise
        err = _check(d, dt, shape)
        if err is not None:
            raise _Fatal(*err)
        return _build(d, dt, dims, size)

    def add_elem_seen(self, rank, nest, seen, dims, fatal):
        if rank == 0:
            return
        msg = None
        if nest != rank:
            msg = f"expects nested array in rank {rank}, but sees {nest}"
        else:
            seen[rank - 1] += 1
            if seen[rank - 1] > dims[rank - 1]:
                msg = (f"expects {dims[rank - 1]} elements on the minor-most dimension, "
                       f"but sees more")
        if msg is not None:
            if fatal:
                raise self.fatal(msg)
            self.soft_error(self.tok.pos, msg)

    def scalar(self, tok, dt, d: _Dense, shape, size):
        k, kind = tok.kind, dt.kind
        if k in (_TRUE, _FALSE):
            if kind != "pred":   # XLA CHECK-fails here ("is not PRED type")
                raise self.fatal(_expects_number(dt))
            value = tok.value
        elif kind in ("pred", "int", "uint"):
            if k != _INT:
                raise self.fatal(_expects_number(dt))
            value = tok.value
        elif kind == "float":
            value = self.double(tok)
        else:
            raise self.fatal(f"unsupported primitive type {_pt_name(dt)}")
        self.record(d, value, tok, shape, size)
        self.advance()

    def double(self, tok) -> float:
        """ParseDouble on the current token (already known to be a number)."""
        k = tok.kind
        if k == _DEC:
            if math.isinf(tok.value):
                raise self.fatal("Constant is out of range for double (+/-1.79769e+308) and so "
                                 "is unparsable.")
            return tok.value
        if k == _INT:
            return float(tok.value)
        if k == _INF:
            return math.inf
        if k == _NEGINF:
            return -math.inf
        raise self.fatal("expects decimal or integer")

    def record(self, d: _Dense, value, tok, shape, size):
        index = len(d.vals)
        d.vals.append(value)
        d.offs.append(tok.pos)
        d.seqs.append(self.next_seq())
        if tok.nan is not None:
            d.nans[index] = tok.nan
        if index >= size:
            if shape.dtype.kind == "pred":
                shown = int(bool(value))
            else:
                shown = _six(value) if isinstance(value, float) else value
            f = self.fatal(f"tries to set value {shown} to a literal in shape {_human(shape)} "
                           f"at linear index {index}, but the index is out of range", tok.pos)
            f.seq = d.seqs[-1] + 0.5
            raise f

    def complex_value(self, d: _Dense, shape, size):
        start = self.tok
        self.advance()
        parts, nans = [], []
        for name, sep, sep_msg in (
                ("real", _COMMA, "expect comma after real part of complex literal"),
                ("imaginary", _RPAREN, "expect ')' after complex number")):
            tok = self.tok
            if tok.kind not in (_DEC, _INT, _INF, _NEGINF):
                self.soft_error(tok.pos, "expects decimal or integer")
                raise self.fatal(f"expect floating-point value for {name} part of complex number",
                                 tok.pos)
            parts.append(self.double(tok))
            nans.append(tok.nan)
            self.advance()
            if self.tok.kind != sep:
                raise self.fatal(sep_msg)
            self.advance()
        index = len(d.vals)
        if nans[0] is not None or nans[1] is not None:
            d.nans[index] = tuple(nans)
        d.vals.append(tuple(parts))
        d.offs.append(start.pos)
        d.seqs.append(self.next_seq())
        if index >= size:
            f = self.fatal(f"tries to set value ({parts[0]:f}, {parts[1]:f}) to a literal in "
                           f"shape {_human(shape)} at linear index {index}, but the index is out "
                           f"of range", start.pos)
            f.seq = d.seqs[-1] + 0.5
            raise f


def _expects_number(dt: DType) -> str:
    if dt.is_float:
        return f"expect floating point value for primitive type: {_pt_name(dt)}"
    return f"expects integer for primitive type: {_pt_name(dt)}"


def _index_str(seen, dim) -> str:
    return "[" + ",".join(str(n - 1) for n in seen[:dim]) + "]"


def _six(v: float) -> str:
    """absl::StrCat(double): %g with six significant digits."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return "%.6g" % v


# ---------------------------------------------------------------------------
# Bulk range checks and conversion (CheckParsedValueIsInRange, SetValueInLiteralHelper)

def _first(mask: np.ndarray, limit: int):
    idx = np.flatnonzero(mask[:limit])
    return int(idx[0]) if idx.size else None


def _check(d: _Dense, dt: DType, shape: ArrayShape, until=None):
    """The first (seq, offset, message) range/payload error among the recorded values."""
    n = len(d.vals)
    if until is not None:
        while n and d.seqs[n - 1] > until:
            n -= 1
    if n == 0:
        return None
    kind = dt.kind
    name = _pt_name(dt)
    if kind in ("int", "uint"):
        arr = np.array(d.vals[:n], dtype=np.int64)
        if kind == "int":
            lo, hi = -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
            i = _first((arr < lo) | (arr > hi), n)
        else:
            lo, hi = 0, (1 << dt.bits) - 1
            i = _first(arr.view(np.uint64) > np.uint64(hi), n)
        if i is None:
            return None
        return (d.seqs[i], d.offs[i], f"value {int(arr[i])} is out of range for literal's "
                f"primitive type {name} namely [{lo}, {hi}].")
    if kind == "float":
        info = _finfo(dt)
        x = np.array(d.vals[:n], dtype=np.float64)
        with np.errstate(all="ignore"):
            back = _to_float(x, dt).astype(np.float64)
            use = np.where(~np.isfinite(x) | np.isfinite(back), back, x)
            bad = np.isfinite(use) & ((use > info.max) | (use < info.lowest))
        i = _first(bad, n)
        range_err = None
        if i is not None:
            range_err = (d.seqs[i], d.offs[i], f"value {_six(float(use[i]))} is out of range for "
                         f"literal's primitive type {name} namely [{_six(info.lowest)}, "
                         f"{_six(info.max)}].")
        nan_err = _check_nans(d, dt, info, shape, n)
        return min((e for e in (range_err, nan_err) if e is not None), default=None)
    if kind == "complex":
        info = _finfo(_component(dt))
        for i in range(n):
            for part, v in zip(("real", "imaginary"), d.vals[i]):
                if math.isfinite(v) and (v < info.lowest or v > info.max):
                    err = (d.seqs[i], d.offs[i], f"{part} part {_six(v)} is out of range for "
                           f"literal's primitive type {name}, namely [{_six(info.lowest)}, "
                           f"{_six(info.max)}].")
                    nan_err = _check_nans(d, dt, info, shape, i)
                    return min(e for e in (err, nan_err) if e is not None)
        return _check_nans(d, dt, info, shape, n)
    return None


def _check_nans(d: _Dense, dt, info: _FloatInfo, shape, n):
    """NaN payload errors (only the real part of a complex value is checked, as in XLA)."""
    for j in sorted(d.nans):
        if j >= n:
            break
        nan = d.nans[j]
        if dt.kind == "complex":
            if nan[0] is None:
                continue
            payload = nan[0][1]
        else:
            payload = nan[1]
        msg = _payload_error(payload, dt, info, shape, j)
        if msg is not None:
            return (d.seqs[j] + 0.75, d.offs[j], msg)
    return None


def _payload_error(payload, dt, info: _FloatInfo, shape, index):
    head = (f"tries to set NaN payload 0x{payload:x} to a literal in shape {_human(shape)} "
            f"at linear index {index}, but ")
    if info.payload_bits:
        if payload != _QUIET_F64 and payload > info.payload_mask:
            return head + f"the NaN payload is out of range (0x{info.payload_mask:x})"
        return None
    if payload != _QUIET_F64:
        return head + f"{dt.name} does not support payloads"
    return None


def _nan_bits(info: _FloatInfo, sign: bool, payload: int) -> int:
    """NanWithSignAndPayload<T> for a payload given as a double's NaN payload."""
    if payload == _QUIET_F64:
        payload = info.quiet
    return info.nan_base | (info.sign_bit if sign else 0) | payload


def _to_float(x: np.ndarray, dt: DType) -> np.ndarray:
    """static_cast<T>(double) for every float type, the way XLA's C++ does it."""
    with np.errstate(all="ignore"):
        return _to_float_raw(x, dt)


def _to_float_raw(x: np.ndarray, dt: DType) -> np.ndarray:
    name = dt.name
    if name == "f64":
        return x.copy()
    if name == "f32":
        return x.astype(np.float32)
    if name in ("f16", "bf16"):          # Eigen converts double -> float -> half
        return x.astype(np.float32).astype(dt.np)
    return _round_narrow(x, dt)          # ml_dtypes float8/float4: direct from double


def _round_narrow(x: np.ndarray, dt: DType) -> np.ndarray:
    """Round-to-nearest-even double -> float8/float4 (NumPy's cast goes through float and
    double-rounds). Overflow, NaN and inf keep ml_dtypes' own behaviour."""
    info = _finfo(dt)
    out = x.astype(dt.np)                # right for non-finite values and as a fallback
    a = np.abs(x)
    finite = np.isfinite(x)
    _, e = np.frexp(np.where(finite & (a > 0), a, 1.0))
    e = np.maximum(e - 1, info.minexp)
    r = np.rint(a / np.ldexp(1.0, e - info.nmant)) * np.ldexp(1.0, e - info.nmant)
    ok = finite & (r <= info.max)
    if dt.name == "f8e8m0fnu":
        # ml_dtypes: (0, 2^-127] -> 2^-127 and (2^-127, 2^-126) -> 2^-126 (no zero, no RNE)
        tiny = finite & (x > 0) & (x < 2.0 ** -126)
        r = np.where(tiny, np.where(x > 2.0 ** -127, 2.0 ** -126, 2.0 ** -127), r)
        ok &= r > 0
    out[ok] = np.copysign(r, x)[ok].astype(np.float32).astype(dt.np)
    over = finite & (r > info.max)
    if over.any():                       # NaN, inf or saturation, as ml_dtypes overflows
        out[over] = (np.sign(x[over]) * info.max * 4).astype(np.float32).astype(dt.np)
    return out


def _build(d: _Dense, dt: DType, dims, size) -> np.ndarray:
    """The final array: zeros or the last `...` fill, then the writes made after it."""
    base = d.fill.copy() if d.fill is not None else np.zeros(size, dt.np)
    lo = d.fill_at
    vals = d.vals[lo:]
    if len(vals):
        base[lo:lo + len(vals)] = _convert(vals, d, lo, dt)
    return base.reshape(dims)


def _convert(vals, d: _Dense, lo: int, dt: DType) -> np.ndarray:
    kind = dt.kind
    if kind == "pred":
        return np.array(vals, dtype=np.int64) != 0
    if kind in ("int", "uint"):
        arr = np.array(vals, dtype=np.int64)
        if kind == "uint":
            arr = arr.view(np.uint64)
        return arr.astype(dt.np)
    if kind == "float":
        out = _to_float(np.array(vals, dtype=np.float64), dt)
        info = _finfo(dt)
        bits = out.view(info.ubits)
        for j, (sign, payload) in d.nans.items():
            if j >= lo:
                if info.payload_bits:
                    bits[j - lo] = _nan_bits(info, sign, payload)
                else:
                    with np.errstate(all="ignore"):
                        nan = np.array([-math.nan if sign else math.nan]).astype(dt.np)
                    out[j - lo] = nan[0]
        return out
    # complex
    comp = _component(dt)
    info = _finfo(comp)
    arr = np.array(vals, dtype=np.float64).reshape(-1, 2)
    with np.errstate(all="ignore"):
        parts = arr.astype(comp.np)
    bits = parts.view(info.ubits)
    for j, (re_nan, _im_nan) in d.nans.items():
        if j >= lo and re_nan is not None:
            # XLA's handle_nan(real, &imag) (sic): a NaN real part also sets the imaginary one;
            # a NaN imaginary part alone is a plain static_cast.
            bits[j - lo, :] = _nan_bits(info, re_nan[0], re_nan[1])
    return parts.reshape(-1).view(dt.np)


# A fast path for well-formed dense arrays of plain numbers: braces are walked one by one,
# the numbers between them are split off and converted in bulk. Anything unusual (elision,
# NaN payloads, `//` comments, odd tokens, a count or range error ...) returns None and the
# exact parser above runs instead.
_FAST_CHARS = {
    "int": re.compile(r"[-0-9 \t\n\r,]*"),
    "pred": re.compile(r"[-0-9truefals \t\n\r,]*"),
    "float": re.compile(r"[-+0-9.eEinfa \t\n\r,]*"),
}
_BRACE_RE = re.compile(r"[{}]")
_COMMENT_RE = re.compile(r"/\*[^*]*\*/")


def _fast_dense(text: str, pos: int, shape: ArrayShape):
    dt, dims = shape.dtype, shape.dims
    kind = "int" if dt.kind in ("int", "uint") else dt.kind
    chars = _FAST_CHARS.get(kind)
    if chars is None:
        return None
    rank = len(dims)
    seen = [0] * rank
    nest = 0
    toks: list[str] = []
    prev = pos
    end = None
    for m in _BRACE_RE.finditer(text, pos):
        b = m.start()
        if b > prev:
            piece = text[prev:b]
            if "/*" in piece:
                piece = _COMMENT_RE.sub(" ", piece)
            if not chars.fullmatch(piece):
                return None
            got = piece.replace(",", " ").split()
            if got:
                if nest != rank:
                    return None
                seen[-1] += len(got)
                if seen[-1] > dims[-1]:
                    return None
                toks.extend(got)
        if text[b] == "{":
            nest += 1
            if nest > rank:
                return None
            if nest > 1:
                seen[nest - 2] += 1
                if seen[nest - 2] > dims[nest - 2]:
                    return None
        else:
            nest -= 1
            if seen[nest] != dims[nest]:
                return None
            seen[nest] = 0
            if nest == 0:
                end = b + 1
                break
        prev = b + 1
    if end is None or not _plain_tokens(toks, kind):
        return None
    d = _Dense()
    n = len(toks)
    d.offs = d.seqs = range(n)
    try:
        _fast_values(d, kind, toks)
    except ValueError:          # a token Python's float()/int() rejects
        return None
    if _check(d, dt, shape) is not None:
        return None
    return _build(d, dt, dims, math.prod(dims)), end


def _plain_tokens(toks: list[str], kind: str) -> bool:
    """No `.5` or stray `+` (not numbers to XLA) and no 19+ digit integer (wraps via u64)."""
    if not toks or max(map(len, toks)) <= 18:
        long_ints = False
    else:
        long_ints = any(len(t) > 18 and t.lstrip("-").isdigit() for t in toks)
    if long_ints:
        return False
    if kind != "float":
        return True
    joined = " ".join(toks)
    if joined.startswith(".") or " ." in joined:
        return False
    plus = joined.count("+")
    return plus == 0 or plus == joined.count("e+") + joined.count("E+")


def _fast_values(d: _Dense, kind: str, toks: list[str]):
    if kind == "float":
        x = np.array(list(map(float, toks)), dtype=np.float64)
        for i in np.flatnonzero((x == 0) & np.signbit(x)).tolist():
            if not any(c in toks[i] for c in ".eE"):
                x[i] = 0.0              # `-0` is an integer token: int64 0 -> +0.0
        for i in np.flatnonzero(np.isinf(x)).tolist():
            if "inf" not in toks[i]:
                raise ValueError("decimal overflows double")   # XLA: out of range for double
        for i in np.flatnonzero(np.isnan(x)).tolist():
            d.nans[i] = (bool(np.signbit(x[i])), _QUIET_F64)
        d.vals = x
    elif kind == "pred":
        d.vals = [1 if t == "true" else 0 if t == "false" else int(t) for t in toks]
    else:
        d.vals = np.array(list(map(int, toks)), dtype=np.int64)


# Scalars are most constants in a module: plain ones skip the token machinery.
_SCALAR_RE = re.compile(r"[ \t\n\r]*(?:(?P<int>-?\d{1,18})|(?P<dec>-?(?:\d+\.\d*|\d+(?=[eE]))"
                        r"(?:[eE][+-]?\d+)?|-\.\d+(?:[eE][+-]?\d+)?)|(?P<word>true|false|-?inf))"
                        r"[ \t\n\r]*")
_F32_OVERFLOW = 3.4028235677973366e38       # doubles at or above this round to inf in f32


def _fast_scalar(text: str, shape: ArrayShape):
    m = _SCALAR_RE.fullmatch(text)
    if m is None:
        return None
    dt, kind = shape.dtype, shape.dtype.kind
    tok = m.group(m.lastgroup)
    if m.lastgroup == "word":
        if tok in ("true", "false"):
            return np.array(tok == "true") if kind == "pred" else None
        x = -math.inf if tok[0] == "-" else math.inf
    elif m.lastgroup == "int":
        v = int(tok)
        if kind == "pred":
            return np.array(v != 0)
        if kind in ("int", "uint"):
            lo = -(1 << (dt.bits - 1)) if kind == "int" else 0
            hi = (1 << (dt.bits - (kind == "int"))) - 1
            return np.array(v, dtype=dt.np) if lo <= v <= hi else None
        x = float(v)
    else:
        x = float(tok)
        if math.isinf(x):
            return None
    if kind != "float" or dt.name not in ("f32", "f64", "f16", "bf16"):
        return None
    if dt.name == "f64":
        return np.array(x)
    if math.isfinite(x) and abs(x) >= _F32_OVERFLOW:
        return None
    if dt.name != "f32" and math.isfinite(x) and abs(x) > _finfo(dt).max:
        return None                     # may overflow f16/bf16: the exact path decides
    return np.array(np.float32(x), dtype=dt.np)


def parse_literal(text: str, shape: Shape, *, filler: ElidedFiller | None = None) -> Literal:
    """Parse what stood between the parentheses of `constant(...)`.

    `filler` carries XLA's `{...}` counters across the constants of one module; without
    it each elided constant is filled as the first one of a fresh process.
    """
    if isinstance(shape, ArrayShape) and not shape.dims and shape.dtype.is_array:
        value = _fast_scalar(text, shape)
        if value is not None:
            return Literal(shape, value, text, False)
    p = _Parser(text, filler)
    value = p.parse(shape)
    return Literal(shape, value, text, p.elided)


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
