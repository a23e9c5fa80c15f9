"""Scanning attribute value text as XLA's parser does (whitespace and comments between
tokens, the lexer's number-like patterns, balanced brackets), and the scalar kinds: bool,
int, float (absl SixDigits), C-escaped strings, identifiers.
"""
from __future__ import annotations

import math
import re
import struct
from typing import Any, Callable

from ..ir.attrs import AttrSyntaxError
from ..ir.dtypes import DTYPES


# ---------------------------------------------------------------------------
# Scanning helpers

_SKIP = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_INT = re.compile(r"-?\d+")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NAME = re.compile(r"(%)?([A-Za-z_][A-Za-z0-9_.\-]*)")
_ATTR_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]*)=")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', re.S)
# The lexer's number-like patterns, in its precedence order.
_DECIMAL = re.compile(r"-?(?:(?:\d+\.\d*|\d*\.\d+|\d+)[eE][+-]?\d+|\d+\.\d*|\d*\.\d+)")
_DIM_LABELS = re.compile(r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}")
_DXD = re.compile(r"\d+(?:x\d+)+")
_PAD = re.compile(r"-?\d+_-?\d+(?:_\d+)?(?:x-?\d+_-?\d+(?:_\d+)?)*")
_NUMBER_TOKENS = (("decimal", _DECIMAL), ("dim_labels", _DIM_LABELS), ("dxd", _DXD),
                  ("pad", _PAD), ("int", _INT))
_KEYWORDS = frozenset({"HloModule", "ENTRY", "ROOT", "true", "false", "inf", "nan",
                       "maximal", "replicated", "manual", "unknown", "unreduced",
                       "last_tile_dim_replicate", "shard_as", "shard_like"}) | frozenset(DTYPES)


def _int64(text: str, pos: int) -> int:
    """An XLA int token: int64, or a uint64 bit-cast to int64."""
    v = int(text)
    if -(1 << 63) <= v < (1 << 63):
        return v
    if 0 <= v < (1 << 64):
        return v - (1 << 64)
    raise AttrSyntaxError(f"Failed to parse int literal: {text}", pos)


class _Cur:
    """A position in a value text; every token skips whitespace and comments first."""
    __slots__ = ("s", "i")

    def __init__(self, s: str):
        self.s = s
        self.i = 0

    def ws(self) -> int:
        self.i = _SKIP.match(self.s, self.i).end()
        return self.i

    def at(self, tok: str) -> bool:
        return self.s.startswith(tok, self.ws())

    def eat(self, tok: str) -> bool:
        if self.at(tok):
            self.i += len(tok)
            return True
        return False

    def need(self, tok: str, msg: str) -> None:
        if not self.eat(tok):
            raise self.err(msg)

    def err(self, msg: str, pos: int | None = None) -> AttrSyntaxError:
        return AttrSyntaxError(msg, self.ws() if pos is None else pos)

    def match(self, rx: re.Pattern):
        m = rx.match(self.s, self.ws())
        if m:
            self.i = m.end()
        return m

    def int(self, msg: str = "expects integer") -> int:
        m = self.match(_INT)
        if not m:
            raise self.err(msg)
        return _int64(m.group(), m.start())

    def number_token(self):
        """(kind, match) of the lexer's number-like token here, or (None, None)."""
        p = self.ws()
        for kind, rx in _NUMBER_TOKENS:
            m = rx.match(self.s, p)
            if m:
                return kind, m
        return None, None

    def done(self) -> None:
        if self.ws() != len(self.s):
            raise self.err(f"unexpected text after attribute value: {self.s[self.i:self.i + 20]!r}")


_OPEN = {"{": "}", "(": ")", "[": "]"}
_BRACKETS_OR_QUOTE = re.compile(r'[{}()\[\]"]|/\*')


def _balanced_end(s: str, p: int) -> int:
    """Index just past the bracket group opening at s[p], skipping strings and comments."""
    stack = []
    i = p
    while True:
        m = _BRACKETS_OR_QUOTE.search(s, i)
        if m is None:
            raise AttrSyntaxError(f"unbalanced '{s[p]}'", p)
        ch = m.group()
        i = m.end()
        if ch == '"':
            q = _STRING.match(s, m.start())
            if q is None:
                raise AttrSyntaxError("unterminated string", m.start())
            i = q.end()
        elif ch == "/*":
            j = s.find("*/", i)
            if j < 0:
                raise AttrSyntaxError("unterminated comment", m.start())
            i = j + 2
        elif ch in _OPEN:
            stack.append(_OPEN[ch])
        elif not stack or stack.pop() != ch:
            raise AttrSyntaxError(f"unbalanced '{ch}'", m.start())
        elif not stack:
            return i


def _list(c: _Cur, item: Callable[[_Cur], Any], what: str = "a list") -> tuple:
    """'{' [item (',' item)*] '}' (XLA's ParseList)."""
    c.need("{", f"expects '{{' to start {what}")
    out = []
    if not c.eat("}"):
        while True:
            out.append(item(c))
            if not c.eat(","):
                break
        c.need("}", f"expects '}}' to end {what}")
    return tuple(out)


# ---------------------------------------------------------------------------
# Scalars: bool, int, float, string, ident

def _p_bool(c: _Cur) -> bool:
    p = c.ws()
    m = _IDENT.match(c.s, p)
    if m and m.group() in ("true", "false"):
        c.i = m.end()
        return m.group() == "true"
    raise c.err("expects true or false", p)


def _f_bool(v) -> str:
    return "true" if v else "false"


_INF_NAN = re.compile(r"(-?)(inf|nan)(?:\(0x[0-9A-Fa-f]+\))?(?![A-Za-z0-9_.\-])")
_FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]


def _p_float(c: _Cur) -> float:
    p = c.ws()
    kind, m = c.number_token()
    if kind == "decimal" and not c.s.startswith(".", p):
        v = float(m.group())
        if math.isinf(v):
            raise c.err("Constant is out of range for double (+/-1.79769e+308) and so is "
                        "unparsable.", p)
    elif kind == "int":
        v = float(_int64(m.group(), p))
    else:
        m = _INF_NAN.match(c.s, p)
        if not m:
            raise c.err("expects decimal or integer", p)
        # XLA's range check lets NaN through (comparisons are false) but not infinity.
        v = float(m.group(1) + m.group(2)) if m.group(2) == "inf" else math.nan
    if v > _FLT_MAX or v < -_FLT_MAX:
        raise c.err("value out of range for float", p)
    c.i = m.end()
    return struct.unpack("<f", struct.pack("<f", v))[0]   # the attribute is a C++ float


def _f_float(v: float) -> str:
    """absl StrCat(float): SixDigits, i.e. %.6g ("0.001", "1e-05", "inf", "nan")."""
    if v != v:
        return "nan"
    return "%.6g" % v


_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]+)|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))",
                     re.S)
_SIMPLE_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f",
                   "v": b"\v", "\\": b"\\", "'": b"'", '"': b'"', "?": b"?"}


def _c_unescape(body: str, pos: int) -> str:
    """absl::CUnescape; bytes that are not UTF-8 survive as surrogate escapes."""
    if "\\" not in body:
        return body
    out = bytearray()
    last = 0
    for m in _ESCAPE.finditer(body):
        out += body[last:m.start()].encode("utf-8", "surrogateescape")
        octal, hexa, u4, u8, ch = m.groups()
        if octal or hexa:
            v = int(octal, 8) if octal else int(hexa, 16)
            if v > 0xFF:
                raise AttrSyntaxError(f"Value of {m.group()} exceeds 0xff", pos + m.start())
            out.append(v)
        elif u4 or u8:
            cp = int(u4 or u8, 16)
            if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
                raise AttrSyntaxError(f"Value of {m.group()} is not a valid code point",
                                      pos + m.start())
            out += chr(cp).encode("utf-8")
        elif ch in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[ch]
        else:
            raise AttrSyntaxError(f"Unknown escape sequence: \\{ch}", pos + m.start())
        last = m.end()
    out += body[last:].encode("utf-8", "surrogateescape")
    return out.decode("utf-8", "surrogateescape")


_ESCAPE_TABLE = [chr(b) if 0x20 <= b < 0x7F else "\\%03o" % b for b in range(256)]
for _b, _e in ((10, "\\n"), (13, "\\r"), (9, "\\t"), (34, '\\"'), (39, "\\'"), (92, "\\\\")):
    _ESCAPE_TABLE[_b] = _e
_NEEDS_ESCAPE = re.compile(r"[^\x20-\x7e]|[\"'\\]")


def c_escape(s: str) -> str:
    """absl::CEscape of the UTF-8 bytes of `s` (non-ASCII bytes become octal)."""
    if not _NEEDS_ESCAPE.search(s):
        return s
    return "".join(_ESCAPE_TABLE[b] for b in s.encode("utf-8", "surrogateescape"))


def _p_string(c: _Cur) -> str:
    p = c.ws()
    m = _STRING.match(c.s, p)
    if not m:
        raise c.err("expects string", p)
    c.i = m.end()
    return _c_unescape(m.group()[1:-1], p + 1)


def _f_string(v: str) -> str:
    return '"' + c_escape(v) + '"'


def _p_ident(c: _Cur) -> str:
    m = c.match(_IDENT)
    if not m:
        raise c.err("expects an enumeration value")
    return m.group()
