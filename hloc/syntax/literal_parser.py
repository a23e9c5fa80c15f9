"""HLO literal text -> values, as XLA's parser reads it (hlo_parser.cc ParseDenseLiteral,
hlo_lexer.cc's number rules): commas optional, `...` filled with XLA's deterministic
pseudo-random bytes, recorded-but-not-fatal errors (`f32[2] constant(5)` is `{5, 0}`),
and the first error XLA would record is the one reported. `parse_literal` is the entry.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..ir.dtypes import DType
from ..ir.literal import ElidedFiller, Literal, LiteralError, _human, _pt_name
from ..ir.shape import UNBOUNDED, ArrayShape, Shape, TupleShape
from .literal_checks import (_QUIET_F64, _Dense, _Fatal, _build, _check, _fast_dense,
                             _fast_scalar, _six)


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
