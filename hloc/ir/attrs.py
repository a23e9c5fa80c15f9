"""Typed HLO attribute values: one `Kind` per attribute kind, in `KINDS`.

A kind parses the raw value text (what follows `name=`, already cut out by the lexer)
into an immutable, hashable value (ints, tuples, frozen dataclasses, `Verbatim`) and
formats a value back to the exact text XLA's printer writes: window_util::ToString,
PaddingConfigToString, ConvolutionDimensionNumbersToString, absl CEscape and SixDigits,
canonical iota replica groups, and so on. Parsing mirrors xla/hlo/parser/hlo_parser.cc,
including its error messages and leniencies (whitespace and comments between tokens,
case-insensitive enums where XLA folds case). Results are cached by text in bounded
dicts, since the same `dimensions={0}` repeats thousands of times in real dumps.
Attributes hloc does not interpret (metadata, sharding, backend_config ...) are kept as
`Verbatim` text and print back unchanged.
"""
from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

from .dtypes import DTYPES
from .shape import Shape, ShapeSyntaxError, TupleShape, parse_shape_prefix


class AttrSyntaxError(ValueError):
    """A malformed attribute value; `offset` is 0-based into the value text."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


# ---------------------------------------------------------------------------
# Value types

@dataclass(frozen=True)
class CompRef:
    """A computation referred to by name (`%name` or `name`); printed as `%name`."""
    name: str


@dataclass(frozen=True)
class InlineComp:
    """An inline computation body `{ ... }`: the text between the braces and its offset."""
    text: str
    offset: int


@dataclass(frozen=True)
class Verbatim:
    """Attribute text hloc keeps but does not interpret; printed unchanged."""
    text: str


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    lhs_dilate: int = 1      # base dilation
    rhs_dilate: int = 1      # window dilation
    reversal: bool = False


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class ConvDimNumbers:
    """ConvolutionDimensionNumbers; unset batch/feature dims are 0, as in the proto."""
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclass(frozen=True)
class ReplicaGroups:
    """Replica groups; `iota` = (num_groups, group_size, reshape_dims, transpose_perm)
    in XLA's canonical form when the text used the iota syntax, else None."""
    groups: tuple[tuple[int, ...], ...]
    iota: tuple | None = None


@dataclass(frozen=True)
class ComputationLayout:
    params: tuple[Shape, ...]
    result: Shape


@dataclass(frozen=True)
class LiteralAttr:
    """`literal=` of custom-call: the literal's shape and its text, kept verbatim."""
    shape: Shape
    text: str


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


# ---------------------------------------------------------------------------
# Lists

def _p_int_list(c: _Cur) -> tuple[int, ...]:
    return _list(c, _Cur.int)


def _f_int_list(v) -> str:
    return "{" + ",".join(map(str, v)) + "}"


def _p_int_list_list(c: _Cur) -> tuple[tuple[int, ...], ...]:
    return _list(c, _p_int_list)


def _f_int_list_list(v) -> str:
    return "{" + ",".join(map(_f_int_list, v)) + "}"


def _p_bool_list(c: _Cur) -> tuple[bool, ...]:
    return _list(c, _p_bool)


def _f_bool_list(v) -> str:
    return "{" + ",".join(map(_f_bool, v)) + "}"


def _p_bool_list_or_bool(c: _Cur) -> tuple[bool, ...]:
    if c.at("{"):
        return _p_bool_list(c)
    return (_p_bool(c),)


def _p_shape(c: _Cur) -> Shape:
    p = c.ws()
    try:
        shape, c.i = parse_shape_prefix(c.s, p)
    except ShapeSyntaxError as e:
        raise AttrSyntaxError(str(e), e.offset) from None
    return shape


def _p_shape_list(c: _Cur) -> tuple[Shape, ...]:
    return _list(c, _p_shape)


def _f_shape_list(v) -> str:
    return "{" + ", ".join(map(str, v)) + "}"


# ---------------------------------------------------------------------------
# Computations and instruction names

def _p_computation(c: _Cur):
    p = c.ws()
    if c.s.startswith("{", p):
        c.i = _balanced_end(c.s, p)
        return InlineComp(c.s[p + 1:c.i - 1], p + 1)
    m = _NAME.match(c.s, p)
    if not m or (not m.group(1) and m.group(2) in _KEYWORDS):
        raise c.err("expects computation name", p)
    c.i = m.end()
    return CompRef(m.group(2))


def _f_computation(v) -> str:
    if isinstance(v, InlineComp):
        return "{" + v.text + "}"
    return "%" + (v if isinstance(v, str) else v.name)   # CompRef or a resolved computation


def _p_computation_list(c: _Cur) -> tuple:
    return _list(c, _p_computation, "a computation list")


def _f_computation_list(v) -> str:
    return "{" + ", ".join(map(_f_computation, v)) + "}"


def _p_instruction_list(c: _Cur) -> tuple[str, ...]:
    c.need("{", "expects '{' at the beginning of instruction name list")
    names = []
    while True:
        m = c.match(_NAME)
        if not m:
            raise c.err("expects a instruction name")
        names.append(m.group(2))
        if not c.eat(","):
            break
    c.need("}", "expects '}' at the end of instruction name list")
    return tuple(names)


def _f_instruction_list(v) -> str:
    return "{" + ", ".join("%" + (x if isinstance(x, str) else x.name) for x in v) + "}"


# ---------------------------------------------------------------------------
# slice, padding, window, dim_labels

def _p_slice(c: _Cur) -> tuple[tuple[int, int, int], ...]:
    c.need("{", "expects '{' to start ranges")
    out = []
    if c.eat("}"):
        return ()
    while True:
        p = c.ws()
        c.need("[", "expects a list starting with '['")
        vals = []
        if not c.at("]"):
            while True:
                vals.append(c.int())
                if not c.eat(":"):
                    break
        c.need("]", "expects a list to end with ']'")
        if len(vals) not in (2, 3):
            raise c.err("expects [start:limit:step] or [start:limit], but sees "
                        f"{len(vals)} elements.", p)
        out.append((vals[0], vals[1], vals[2] if len(vals) == 3 else 1))
        if not c.eat(","):
            break
    c.need("}", "expects '}' to end ranges")
    return tuple(out)


def _f_slice(v) -> str:
    omit_stride = all(s == 1 for _, _, s in v)     # strides print for all dims or none
    return "{" + ", ".join(f"[{a}:{b}]" if omit_stride else f"[{a}:{b}:{s}]"
                           for a, b, s in v) + "}"


def _p_padding(c: _Cur) -> tuple[tuple[int, int, int], ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind != "pad":
        raise c.err("expects padding config, e.g., '0_0_0x3_3_1'", p)
    c.i = m.end()
    out = []
    for dim in m.group().split("x"):
        lo, hi, *interior = (int(x) for x in dim.split("_"))
        out.append((lo, hi, interior[0] if interior else 0))
    return tuple(out)


def _f_padding(v) -> str:
    interior = any(i != 0 for _, _, i in v)
    return "x".join(f"{lo}_{hi}_{i}" if interior else f"{lo}_{hi}" for lo, hi, i in v)


_WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def _window_dxd(c: _Cur) -> tuple[int, ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind == "int":
        c.i = m.end()
        return (_int64(m.group(), p),)
    if kind == "dxd":
        c.i = m.end()
        return tuple(_int64(x, p) for x in m.group().split("x"))
    raise c.err("expects token type kInt or kDxD", p)


def _window_pad(c: _Cur) -> tuple[tuple[int, int], ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind != "pad":
        raise c.err("expects window pad pattern, e.g., '0_0x3_3'", p)
    out = []
    for dim in m.group().split("x"):
        parts = dim.split("_")
        if len(parts) != 2:
            raise c.err("expects padding_low and padding_high separated by '_'", p)
        out.append((int(parts[0]), int(parts[1])))
    c.i = m.end()
    return tuple(out)


def _p_window(c: _Cur) -> Window:
    start = c.ws()
    c.need("{", "expected '{' to start window attribute")
    fields: dict[str, tuple] = {}
    while not c.at("}"):
        p = c.i
        if p == len(c.s):
            raise c.err("expected '}' to end window attribute")
        m = _ATTR_NAME.match(c.s, p)
        if not m:
            raise c.err("expects sub-attributes in window", p)
        name = m.group(1)
        if name not in _WINDOW_FIELDS:
            raise c.err(f"unexpected attribute name: {name}", p)
        if name in fields:
            raise c.err(f"sub-attribute '{name}=' already exists", m.end())
        c.i = m.end()
        fields[name] = _window_pad(c) if name == "pad" else _window_dxd(c)
    c.i += 1
    size = fields.get("size", ())
    for name in _WINDOW_FIELDS[1:]:
        if name in fields and len(fields[name]) != len(size):
            raise c.err(f"expects '{name}=' has the same size as 'size='", start)
    n = len(size)
    stride = fields.get("stride", (1,) * n)
    pad = fields.get("pad", ((0, 0),) * n)
    lhs = fields.get("lhs_dilate", (1,) * n)
    rhs = fields.get("rhs_dilate", (1,) * n)
    rev = fields.get("rhs_reversal", (0,) * n)
    return Window(tuple(WindowDim(size[i], stride[i], pad[i][0], pad[i][1], lhs[i], rhs[i],
                                  rev[i] == 1) for i in range(n)))


def _f_window(w: Window) -> str:
    """window_util::ToString inside braces; fields at their defaults are left out."""
    dims = w.dims
    if not dims:
        return "{}"
    out = ["size=" + "x".join(str(d.size) for d in dims)]
    if any(d.stride != 1 for d in dims):
        out.append("stride=" + "x".join(str(d.stride) for d in dims))
    if any(d.pad_lo or d.pad_hi for d in dims):
        out.append("pad=" + "x".join(f"{d.pad_lo}_{d.pad_hi}" for d in dims))
    if any(d.lhs_dilate != 1 for d in dims):
        out.append("lhs_dilate=" + "x".join(str(d.lhs_dilate) for d in dims))
    if any(d.rhs_dilate != 1 for d in dims):
        out.append("rhs_dilate=" + "x".join(str(d.rhs_dilate) for d in dims))
    if any(d.reversal for d in dims):
        out.append("rhs_reversal=" + "x".join("1" if d.reversal else "0" for d in dims))
    return "{" + " ".join(out) + "}"


def _dim_labels(c: _Cur, part: str, pos: int, a: str, b: str, what: str):
    seen = [ch for ch in part if ch != "?"]
    if len(set(seen)) != len(seen):
        raise c.err(f"expects unique {what} dimension numbers, but sees {part}", pos)
    spatial = [-1] * sum(ch not in (a, b, "?") for ch in part)
    first = second = 0                      # proto defaults when 'b'/'f' ('i'/'o') is absent
    for i, ch in enumerate(part):
        if ch == a:
            first = i
        elif ch == b:
            second = i
        elif ch.isdigit() and int(ch) < len(spatial):
            spatial[int(ch)] = i
        elif ch != "?":
            raise c.err(f"expects [0-{len(part) - 1}{a}{b}?] in {what} dimension numbers", pos)
    return first, second, tuple(spatial)


def _p_dim_labels(c: _Cur) -> ConvDimNumbers:
    p = c.ws()
    m = _DIM_LABELS.match(c.s, p)
    if not m:
        raise c.err("expects dim labels pattern, e.g., 'bf0_0io->0bf'", p)
    c.i = m.end()
    lhs, rest = m.group().split("_")
    rhs, out = rest.split("->")
    ib, if_, isp = _dim_labels(c, lhs, p, "b", "f", "lhs")
    ki, ko, ksp = _dim_labels(c, rhs, p, "i", "o", "rhs")
    ob, of, osp = _dim_labels(c, out, p, "b", "f", "output")
    if not len(isp) == len(ksp) == len(osp):
        raise c.err("input, kernel, and output must have same number of spatial dimensions, "
                    f"but got {len(isp)}, {len(ksp)}, {len(osp)}, respectively.", p)
    return ConvDimNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)


def _labels_text(x: int, y: int, sx: str, sy: str, spatial: tuple[int, ...]) -> str:
    out = ["?"] * (max(x, y, max(spatial, default=0)) + 1)
    out[x] = sx
    out[y] = sy
    for i, d in enumerate(spatial):
        out[d] = str(i)
    return "".join(out)


def _f_dim_labels(d: ConvDimNumbers) -> str:
    """ConvolutionDimensionNumbersToString."""
    return (_labels_text(d.input_batch, d.input_feature, "b", "f", d.input_spatial) + "_"
            + _labels_text(d.kernel_input_feature, d.kernel_output_feature, "i", "o",
                           d.kernel_spatial) + "->"
            + _labels_text(d.output_batch, d.output_feature, "b", "f", d.output_spatial))


# ---------------------------------------------------------------------------
# Replica groups

def _ints_until(c: _Cur, close: str, close_msg: str) -> tuple[int, ...]:
    vals = [c.int()]
    while c.eat(","):
        vals.append(c.int())
    c.need(close, close_msg)
    return tuple(vals)


def _canonical_iota(dims, perm):
    """IotaTileAssignment::Create's CanonicalizeIotaDims: drop 1s, merge in-order runs."""
    dims, perm = list(dims), list(perm)
    if len(dims) <= 1:
        return tuple(dims), tuple(perm)
    while True:
        old_to_new, n = [], 0
        for d in dims:
            old_to_new.append(-1 if d == 1 else n)
            n += d != 1
        if n != len(dims):
            perm = [old_to_new[q] for q in perm if old_to_new[q] >= 0]
            dims = [d for d in dims if d != 1]
        changed = False
        base = 0
        for i in range(1, len(dims)):
            if perm[base] + (i - base) == perm[i]:
                dims[perm[base]] *= dims[perm[i]]
                dims[perm[i]] = 1
                changed = True
            else:
                base = i
        if not changed:
            break
    if not dims:
        return (1,), (0,)
    return tuple(dims), tuple(perm)


def _iota_groups(num_groups: int, group_size: int, reshape, perm):
    strides = [1] * len(reshape)
    for i in range(len(reshape) - 2, -1, -1):
        strides[i] = strides[i + 1] * reshape[i + 1]
    tstrides = [strides[q] for q in perm]
    flat = [sum(i * s for i, s in zip(idx, tstrides))
            for idx in product(*(range(reshape[q]) for q in perm))]
    return tuple(tuple(flat[g * group_size:(g + 1) * group_size]) for g in range(num_groups))


def _p_replica_groups(c: _Cur) -> ReplicaGroups:
    if c.at("{"):
        return ReplicaGroups(_p_int_list_list(c))
    p = c.ws()
    c.need("[", "expected '[' to start sharding devices shape")
    dims = _ints_until(c, "]", "expected ']' to end sharding devices shape")
    if not c.eat("<="):
        raise c.err("Caller expected iota tile assignment when parsing, which should not "
                    "have any manual device entries.")
    c.need("[", "expected '[' to start sharding iota_reshape_dims")
    reshape = _ints_until(c, "]", "expected ']' to end sharding iota_reshape_dims")
    perm: tuple[int, ...] = (0,)
    if len(reshape) > 1:
        msg = "expected 'T(' to start sharding devices iota_transpose_perm"
        c.need("T", msg)
        c.need("(", msg)
        q = c.ws()
        perm = _ints_until(c, ")", "expected ')' to end sharding devices iota_transpose_perm")
        for d in perm:
            if not 0 <= d < len(reshape):
                raise c.err(f"Out of range iota minor_to_major value {d}, expecting value in "
                            f"range [0, {len(reshape)})", q)
    if len(dims) != 2:
        raise c.err(f"expects iota replica groups with 2 dimensions, but sees {len(dims)}", p)
    if sorted(perm) != list(range(len(reshape))):
        raise c.err("iota_transpose_perm must be a permutation of the reshape dimensions", p)
    if min(dims + reshape) < 0 or math.prod(dims) != math.prod(reshape):
        raise c.err(f"iota replica groups {list(dims)} do not match the {math.prod(reshape)} "
                    "devices of the reshape dimensions", p)
    rdims, rperm = _canonical_iota(reshape, perm)
    return ReplicaGroups(_iota_groups(dims[0], dims[1], rdims, rperm),
                         (dims[0], dims[1], rdims, rperm))


def _f_replica_groups(v: ReplicaGroups) -> str:
    if v.iota is None:
        return _f_int_list_list(v.groups)
    g, s, dims, perm = v.iota
    out = f"[{g},{s}]<=[{','.join(map(str, dims))}]"
    if len(dims) > 1:
        out += "T(" + ",".join(map(str, perm)) + ")"
    return out


# ---------------------------------------------------------------------------
# Aliasing, buffer donors, computation layout

def _shape_index(c: _Cur) -> tuple[int, ...]:
    c.need("{", "Expects '{' at the start of ShapeIndex")
    idx = []
    while not c.at("}"):
        idx.append(c.int())
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of ShapeIndex")
    return tuple(idx)


def _si(idx) -> str:
    return "{" + ",".join(map(str, idx)) + "}"


def _p_aliasing(c: _Cur):
    """output_to_operand_aliasing: ((output_index, operand, operand_index), ...)."""
    c.need("{", "Expects '{' at the start of instruction aliasing description")
    msg = ("Expected format: <output_shape_index>: (<operand_index>, "
           "<operand_shape_index>)")
    out = []
    while not c.at("}"):
        index = _shape_index(c)
        c.need(":", msg)
        c.need("(", msg)
        operand = c.int()
        c.need(",", msg)
        operand_index = _shape_index(c)
        c.need(")", msg)
        out.append((index, operand, operand_index))
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of instruction aliasing description")
    return tuple(out)


def _f_aliasing(v) -> str:
    return "{" + ", ".join(f"{_si(o)}: ({n}, {_si(i)})" for o, n, i in v) + "}"


def _p_input_output_alias(c: _Cur):
    """Module input_output_alias: ((output_index, param, param_index, kind), ...) in
    output-index order; kind is 'may-alias' (the default) or 'must-alias'."""
    c.need("{", "Expects '{' at the start of aliasing description")
    msg = ("Expected format: <output_shape_index>: (<input_param>, "
           "<input_param_shape_index>) OR <output_shape_index>: <input_param>")
    out = []
    while not c.at("}"):
        index = _shape_index(c)
        c.need(":", msg)
        c.need("(", msg)
        param = c.int()
        c.need(",", msg)
        param_index = _shape_index(c)
        kind = "may-alias"
        if c.eat(","):
            p = c.ws()
            m = c.match(_IDENT)
            if not m or m.group() not in ("must-alias", "may-alias"):
                raise c.err("Unexpected aliasing kind; expected SYSTEM or USER", p)
            kind = m.group()
        c.need(")", msg)
        out.append((index, param, param_index, kind))
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of aliasing description")
    return tuple(sorted(out, key=lambda a: a[0]))


def _f_input_output_alias(v) -> str:
    if not v:
        return "{}"
    return "{ " + ", ".join(
        f"{_si(o)}: ({p}, {_si(i)}, {k})"
        for o, p, i, k in v) + " }"


def _p_buffer_donor(c: _Cur):
    """Module buffer_donor: sorted, de-duplicated ((param, param_index), ...)."""
    c.need("{", "Expects '{' at the start of buffer donor description")
    msg = "Expected format: (<input_param>, <input_param_shape_index>)"
    out = set()
    while not c.at("}"):
        c.need("(", msg)
        param = c.int()
        c.need(",", msg)
        out.add((param, _shape_index(c)))
        c.need(")", msg)
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of buffer donor description")
    return tuple(sorted(out))


def _f_buffer_donor(v) -> str:
    if not v:
        return "{}"
    return "{ " + ", ".join(f"({p}, {_si(i)})" for p, i in v) + " }"


def _p_computation_layout(c: _Cur) -> ComputationLayout:
    c.need("{", "Expects '{' at the start of computation layout")
    c.need("(", "Expects ( before parameter shape list")
    params = []
    while not c.at(")"):
        params.append(_p_shape(c))
        if c.at(")"):
            break
        c.need(",", "Expects , between parameter shapes")
    c.need(")", "Expects ) at end of parameter shape list")
    c.need("->", "Expects -> before result shape")
    result = _p_shape(c)
    c.need("}", "Expects '}' at the end of computation layouts")
    return ComputationLayout(tuple(params), result)


def _f_computation_layout(v: ComputationLayout) -> str:
    # Parameters print like a tuple shape, /*index=N*/ comments included.
    return "{" + str(TupleShape(tuple(v.params))) + "->" + str(v.result) + "}"


# ---------------------------------------------------------------------------
# literal, verbatim

_LITERAL_ATOM = re.compile(r"[^\s,(){}\[\]]+")


def _literal_item(c: _Cur) -> Shape:
    """One literal (`shape value` or a tuple `(lit, lit)`); returns its shape."""
    p = c.ws()
    if c.s.startswith("(", p):
        c.i = p + 1
        elements = []
        while not c.at(")"):
            elements.append(_literal_item(c))
            if not c.at(")"):
                c.need(",", "expects ',' to separate tuple elements")
        c.i += 1
        return TupleShape(tuple(elements))
    shape = _p_shape(c)
    p = c.ws()
    if c.s.startswith(("{", "("), p):
        c.i = _balanced_end(c.s, p)
    elif not c.match(_LITERAL_ATOM):
        raise c.err("expects a literal value", p)
    return shape


def _p_literal(c: _Cur) -> LiteralAttr:
    start = c.ws()
    shape = _literal_item(c)
    return LiteralAttr(shape, c.s[start:c.i])


# ---------------------------------------------------------------------------
# Enums

def _enum(what: str, values: tuple[str, ...], fold: bool = False,
          unknown: str | None = None) -> Callable[[_Cur], str]:
    """A parser for one of `values` (printed as written there); `fold`: case-insensitive
    as XLA's StringToEnum; `unknown`: the `, error: ...` XLA appends to the message."""
    table = {(v.lower() if fold else v): v for v in values}

    def parse(c: _Cur) -> str:
        p = c.ws()
        m = _IDENT.match(c.s, p)
        if not m:
            raise c.err(f"expects {what}", p)
        value = table.get(m.group().lower() if fold else m.group())
        if value is None:
            tail = f", error: {unknown.format(m.group())}" if unknown else ""
            raise c.err(f"expects {what} but sees: {m.group()}{tail}", p)
        c.i = m.end()
        return value
    return parse


def _str(v) -> str:
    return str(v)


_DOT_ALGORITHMS = (
    "unset", "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
    "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
    "dot_bf16_bf16_f32_x6", "dot_tf32_tf32_f32", "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32",
    "dot_f64_f64_f64", "dot_bf16_bf16_f32_x9")

_p_precision = _enum("precision", ("default", "high", "highest"), True,
                     "Unknown precision")

_ENUMS: dict[str, Callable[[_Cur], str]] = {
    "direction": _enum("comparison direction", ("EQ", "NE", "GE", "GT", "LE", "LT")),
    "comparison_type": _enum("comparison type", ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")),
    "fusion_kind": _enum("fusion kind", ("kLoop", "kInput", "kOutput", "kCustom"),
                         unknown="Unknown fusion kind: {}"),
    "fft_type": _enum("fft type", ("FFT", "IFFT", "RFFT", "IRFFT")),
    "distribution": _enum("random distribution", ("rng_invalid", "rng_uniform", "rng_normal"),
                          True, "Unknown distribution"),
    "rng_algorithm": _enum("random algorithm", ("rng_default", "rng_three_fry", "rng_philox"),
                           True, "Unknown algorithm"),
    "dot_algorithm": _enum("algorithm", _DOT_ALGORITHMS, True, "Unknown algorithm"),
    "api_version": _enum("custom-call API version", (
        "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
        "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"),
        True, "Unknown API version"),
    "schedule": _enum("custom-call schedule",
                      ("SCHEDULE_NONE", "SCHEDULE_LATEST", "SCHEDULE_EARLIEST"),
                      True, "Unknown schedule"),
    "padding_type": _enum("padding type", ("PADDING_INVALID", "PADDING_VALID", "PADDING_SAME")),
    "transpose_a": _enum("transpose type",
                         ("TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")),
    "conv_kind": _enum("convolution kind", ("fprop", "wgrad", "dgrad", "unset")),
}


def _p_precision_list(c: _Cur) -> tuple[str, ...]:
    return _list(c, _p_precision)


def _f_precision_list(v) -> str:
    return "{" + ",".join(v) + "}"


# ---------------------------------------------------------------------------
# The registry

_CACHE_MAX = 4096
_MISS = object()


class Kind:
    """One attribute kind: `parse(text) -> value` (cached) and `format(value) -> text`."""
    __slots__ = ("name", "_parse", "_format", "_cache")

    def __init__(self, name: str, parse: Callable[[str], Any], fmt: Callable[[Any], str],
                 cache: bool = True):
        self.name = name
        self._parse = parse
        self._format = fmt
        # Verbatim texts (metadata ...) are unique per instruction: caching them only churns.
        self._cache: dict[str, Any] | None = {} if cache else None

    def parse(self, text: str):
        cache = self._cache
        if cache is None:
            return self._parse(text)
        value = cache.get(text, _MISS)
        if value is _MISS:
            value = self._parse(text)
            if len(cache) >= _CACHE_MAX:
                del cache[next(iter(cache))]       # FIFO eviction keeps the dict bounded
            cache[text] = value
        return value

    def format(self, value) -> str:
        return self._format(value)

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


def _whole(item: Callable[[_Cur], Any]) -> Callable[[str], Any]:
    def parse(text: str):
        c = _Cur(text)
        value = item(c)
        c.done()
        return value
    return parse


_INT_LIST_FAST = re.compile(r"\{(-?\d{1,18}(?:,-?\d{1,18})*)?\}")


def _parse_int_list(text: str) -> tuple[int, ...]:
    m = _INT_LIST_FAST.fullmatch(text)
    if m:
        return tuple(map(int, m.group(1).split(","))) if m.group(1) else ()
    return _whole(_p_int_list)(text)


_RA_MODES = ("default", "highest")
_RA_TOLERANCES = ("atol", "rtol", "ulps")
_RA_NAME = re.compile(r"[A-Za-z_][\w.\-]*=")


def _p_result_accuracy(c: _Cur) -> Verbatim:
    """`{mode=highest}` or `{tolerance={atol=0.1,rtol=0,ulps=2}}`, checked as XLA's
    parser checks it and kept verbatim."""
    start = c.ws()
    c.need("{", "expects '{' at the start of result_accuracy")
    m = c.match(_RA_NAME)
    if m is None:
        raise c.err("expects attribute name")
    name = m.group()[:-1]
    if name == "mode":
        mode = c.match(re.compile(r"[A-Za-z_]\w*"))
        if mode is None or mode.group().lower() not in _RA_MODES:
            seen = mode.group() if mode else c.s[c.i:c.i + 10]
            raise c.err(f"expects ResultAccuracy type but sees: {seen}, error: Unknown "
                        f"accuracy mode", mode.start() if mode else None)
    elif name == "tolerance":
        c.need("{", "expects '{' at the start of tolerance")
        while not c.at("}"):
            t = c.match(_RA_NAME)
            if t is None or t.group()[:-1] not in _RA_TOLERANCES:
                raise c.err(f"invalid attribute name: {t.group()[:-1] if t else ''}")
            _p_float(c)
            c.eat(",")
        c.need("}", "expects '}' at the end of tolerance")
    else:
        raise c.err(f"invalid attribute name: {name}")
    c.need("}", "expects '}' at the end of result_accuracy")
    return Verbatim(c.s[start:c.i])


KINDS: dict[str, Kind] = {}


def _register(name: str, parse: Callable[[str], Any], fmt: Callable[[Any], str],
              cache: bool = True) -> None:
    KINDS[name] = Kind(name, parse, fmt, cache)


for _name, _item, _fmt in (
    ("bool", _p_bool, _f_bool),
    ("int", _Cur.int, _str),
    ("float", _p_float, _f_float),
    ("string", _p_string, _f_string),
    ("ident", _p_ident, _str),
    ("int_list_list", _p_int_list_list, _f_int_list_list),
    ("bool_list", _p_bool_list, _f_bool_list),
    ("bool_list_or_bool", _p_bool_list_or_bool, _f_bool_list),
    ("computation", _p_computation, _f_computation),
    ("computation_list", _p_computation_list, _f_computation_list),
    ("instruction_list", _p_instruction_list, _f_instruction_list),
    ("slice", _p_slice, _f_slice),
    ("window", _p_window, _f_window),
    ("dim_labels", _p_dim_labels, _f_dim_labels),
    ("padding", _p_padding, _f_padding),
    ("precision_list", _p_precision_list, _f_precision_list),
    ("shape", _p_shape, _str),
    ("shape_list", _p_shape_list, _f_shape_list),
    ("replica_groups", _p_replica_groups, _f_replica_groups),
    ("aliasing", _p_aliasing, _f_aliasing),
    ("input_output_alias", _p_input_output_alias, _f_input_output_alias),
    ("buffer_donor", _p_buffer_donor, _f_buffer_donor),
    ("computation_layout", _p_computation_layout, _f_computation_layout),
    ("literal", _p_literal, lambda v: v.text),
    ("result_accuracy", _p_result_accuracy, lambda v: v.text),
    *((name, parser, _str) for name, parser in _ENUMS.items()),
):
    _register(_name, _whole(_item), _fmt)
_register("int_list", _parse_int_list, _f_int_list)
_register("verbatim", Verbatim, lambda v: v.text, cache=False)
_register("sparsity", Verbatim, lambda v: v.text, cache=False)


def parse_value(kind_name: str, text: str):
    """Parse `text` as attribute kind `kind_name` (a key of KINDS)."""
    return KINDS[kind_name].parse(text)


def format_value(kind_name: str, value) -> str:
    """Print `value` of attribute kind `kind_name` the way XLA does."""
    return KINDS[kind_name].format(value)


# Mesh-axes replica groups (`mesh['x'=4] {'x'}`) extend the replica_groups kind.
from . import device_groups as _device_groups  # noqa: E402,F401  (re-registers replica_groups)
