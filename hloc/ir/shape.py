"""Shapes and layouts, with a cached text parser and XLA-style printing.

`f32[2,3]{1,0}`, `(f32[], s32[2])`, `f32[<=4,?]`, `bf16[8,128]{1,0:T(8,128)(2,1)S(1)}`.
A layout keeps minor-to-major as numbers and everything after ':' as verbatim text
(tiles, memory space, element size ...), checked by a regex, so it prints back exactly.
Missing layouts are filled with the default descending order, as XLA's parser does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import reduce
from operator import mul

from .dtypes import DTYPES, DType

UNBOUNDED = -1  # the `?` dimension


class ShapeSyntaxError(ValueError):
    """Raised with an offset into the shape text; the caller adds the location."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


@dataclass(frozen=True)
class Layout:
    minor_to_major: tuple[int, ...]
    tail: str = ""  # text after ':' (tiles, memory space, ...), verbatim

    def __str__(self) -> str:
        m2m = ",".join(map(str, self.minor_to_major))
        return "{" + m2m + (":" + self.tail if self.tail else "") + "}"

    @property
    def memory_space(self) -> int:
        m = re.search(r"(?<![A-Z])S\((\d+)\)", self.tail)
        return int(m.group(1)) if m else 0


class Shape:
    __slots__ = ()
    is_tuple = False

    def leaves(self) -> list["ArrayShape"]:
        raise NotImplementedError


@dataclass(frozen=True, eq=True)
class ArrayShape(Shape):
    dtype: DType
    dims: tuple[int, ...]
    dynamic: tuple[bool, ...] = ()   # per dim: `<=N` or `?`; empty tuple = all static
    layout: Layout | None = None

    def __hash__(self) -> int:
        # Shapes are hashed constantly (CSE keys, verifier memo); compute once.
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dtype, self.dims, self.dynamic, self.layout))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return reduce(mul, self.dims, 1)

    def is_dynamic_dim(self, i: int) -> bool:
        return bool(self.dynamic) and self.dynamic[i]

    def leaves(self):
        return [self]

    def compatible(self, other: Shape) -> bool:
        """Same element type and dimensions; layout ignored (ShapeUtil::Compatible)."""
        return (isinstance(other, ArrayShape) and self.dtype is other.dtype
                and self.dims == other.dims and self.dynamic == other.dynamic)

    def same_dims(self, other: Shape) -> bool:
        return isinstance(other, ArrayShape) and self.dims == other.dims

    def with_dtype(self, dtype: DType) -> "ArrayShape":
        return ArrayShape(dtype, self.dims, self.dynamic, self.layout)

    def with_dims(self, dims, dynamic=()) -> "ArrayShape":
        dims = tuple(dims)
        return ArrayShape(self.dtype, dims, tuple(dynamic) if any(dynamic) else (),
                          default_layout(len(dims)) if self.dtype.is_array else None)

    def dims_text(self) -> str:
        out = []
        for i, d in enumerate(self.dims):
            if d == UNBOUNDED:
                out.append("?")
            elif self.dynamic and self.dynamic[i]:
                out.append(f"<={d}")
            else:
                out.append(str(d))
        return f"{self.dtype.name}[{','.join(out)}]"

    def __str__(self) -> str:
        # Printed and used in keys (CSE, fusion) over and over; shapes are shared
        # (interned by the parser), so the text is kept once per shape.
        text = self.__dict__.get("_str")
        if text is None:
            text = self.dims_text()
            if self.layout is not None and (self.dims or self.layout.tail):
                text += str(self.layout)
            object.__setattr__(self, "_str", text)
        return text

    def no_layout(self) -> str:
        text = self.__dict__.get("_no_layout")
        if text is None:
            text = self.dims_text()
            object.__setattr__(self, "_no_layout", text)
        return text


@dataclass(frozen=True, eq=True)
class TupleShape(Shape):
    elements: tuple[Shape, ...]
    is_tuple = True

    def __hash__(self) -> int:
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(self.elements)
            object.__setattr__(self, "_hash", h)
        return h

    def leaves(self):
        # Kept once per shape (shapes are frozen): passes ask a while loop's state tuple
        # for its leaves per instruction they look at (grad(scan): 1,000 walks of ~100).
        leaves = self.__dict__.get("_leaves")
        if leaves is None:
            out = []
            for e in self.elements:
                out.extend(e.leaves())
            leaves = tuple(out)
            object.__setattr__(self, "_leaves", leaves)
        return list(leaves)

    def compatible(self, other: Shape) -> bool:
        return (isinstance(other, TupleShape) and len(self.elements) == len(other.elements)
                and all(a.compatible(b) for a, b in zip(self.elements, other.elements)))

    def _join(self, parts: list[str]) -> str:
        out = []
        for i, p in enumerate(parts):
            if i == 0:
                out.append(p)
            elif i % 5 == 0:
                out.append(f", /*index={i}*/{p}")
            else:
                out.append(", " + p)
        return "(" + "".join(out) + ")"

    def __str__(self) -> str:
        return self._join([str(e) for e in self.elements])

    def no_layout(self) -> str:
        return self._join([e.no_layout() for e in self.elements])


@dataclass(frozen=True, eq=True)
class BufferShape(Shape):
    """`b(shape)`: a buffer (newer XLA)."""
    inner: Shape

    def leaves(self):
        return self.inner.leaves()

    def compatible(self, other):
        return isinstance(other, BufferShape) and self.inner.compatible(other.inner)

    def __str__(self):
        return f"b({self.inner})"

    def no_layout(self):
        return f"b({self.inner.no_layout()})"


_DEFAULT_LAYOUTS: dict[int, Layout] = {}


def default_layout(rank: int) -> Layout:
    lay = _DEFAULT_LAYOUTS.get(rank)
    if lay is None:
        lay = _DEFAULT_LAYOUTS[rank] = Layout(tuple(range(rank - 1, -1, -1)))
    return lay


def array(dtype: DType | str, dims=(), layout: Layout | None = None) -> ArrayShape:
    """Build an array shape with the default layout unless one is given."""
    if isinstance(dtype, str):
        dtype = DTYPES[dtype]
    dims = tuple(int(d) for d in dims)
    if layout is None and dtype.is_array:
        layout = default_layout(len(dims))
    return ArrayShape(dtype, dims, (), layout)


def tuple_shape(elements) -> TupleShape:
    return TupleShape(tuple(elements))


# ---------------------------------------------------------------------------
# Parsing

_TYPE_RE = re.compile(r"([a-z][a-z0-9_]*)\[")
_DIM_RE = re.compile(r"\s*(<=\s*)?(\d+|\?)\s*")
_LAYOUT_TAIL_RE = re.compile(
    r"(?:D\([A-Z+~, ]*\))?(?:T(?:\((?:\*|\d+)(?:,(?:\*|\d+))*\))+)?(?:L\(\d+\))?"
    r"(?:#\([a-z0-9]+\))?(?:\*\([a-z0-9]+\))?(?:E\(\d+\))?(?:S\(\d+\))?"
    r"(?:SC\(\d+:\d+(?:,\d+)*\))?(?:P\(.*\))?(?:M\(\d+\))?")
_SKIP_RE = re.compile(r"(?:\s+|/\*.*?\*/)*", re.S)
_DIM_LEVEL_RE = re.compile(r"D\(([^)]*)\)")

_CACHE: dict[str, Shape] = {}
MAX_ELEMENTS = 1 << 62


def parse_shape(text: str) -> Shape:
    """Parse a whole shape; cached by text. Raises ShapeSyntaxError."""
    shape = _CACHE.get(text)
    if shape is None:
        shape, end = parse_shape_prefix(text, 0)
        end = _SKIP_RE.match(text, end).end()
        if end != len(text):
            raise ShapeSyntaxError(f"unexpected text after shape: {text[end:end + 20]!r}", end)
        if len(_CACHE) < 100_000:
            _CACHE[text] = shape
    return shape


def parse_shape_prefix(text: str, pos: int) -> tuple[Shape, int]:
    pos = _SKIP_RE.match(text, pos).end()
    if text.startswith("(", pos):
        return _parse_tuple(text, pos + 1)
    if text.startswith("b(", pos):
        inner, pos = parse_shape_prefix(text, pos + 2)
        pos = _SKIP_RE.match(text, pos).end()
        if not text.startswith(")", pos):
            raise ShapeSyntaxError("expects ')' after buffer shape", pos)
        return BufferShape(inner), pos + 1
    m = _TYPE_RE.match(text, pos)
    if not m:
        raise ShapeSyntaxError("expects shape", pos)
    dtype = DTYPES.get(m.group(1))
    if dtype is None:
        raise ShapeSyntaxError(f"unknown primitive type '{m.group(1)}'", pos)
    pos = m.end()
    dims: list[int] = []
    dynamic: list[bool] = []
    if not text.startswith("]", pos):
        while True:
            d = _DIM_RE.match(text, pos)
            if not d:
                raise ShapeSyntaxError("expects dimension size", pos)
            if d.group(2) == "?":
                dims.append(UNBOUNDED)
                dynamic.append(True)
            else:
                dims.append(int(d.group(2)))
                dynamic.append(bool(d.group(1)))
            pos = d.end()
            if text.startswith(",", pos):
                pos += 1
                continue
            break
    if not text.startswith("]", pos):
        raise ShapeSyntaxError("expects ']' at the end of dimensions", pos)
    pos += 1
    if dtype.is_array:
        size = 1
        for d in dims:
            size *= max(d, 1)
        if size > MAX_ELEMENTS:
            raise ShapeSyntaxError(f"shape has too many elements ({size})", m.start())
    layout = None
    if text.startswith("{", pos) and _layout_follows(text, pos + 1):
        layout, pos = _parse_layout(text, pos + 1, len(dims))
    elif dtype.is_array:
        layout = default_layout(len(dims))
    return ArrayShape(dtype, tuple(dims), tuple(dynamic) if any(dynamic) else (), layout), pos


def _layout_follows(text: str, pos: int) -> bool:
    # A '{' starts a layout only when an integer, ':' or '}' follows ("f32[]{}" is
    # handled by the caller: scalars never print a layout).
    p = _SKIP_RE.match(text, pos).end()
    return p < len(text) and (text[p].isdigit() or text[p] == ":")


_M2M_RE = re.compile(r"\s*(\d+(?:\s*,\s*\d+)*)?\s*")


def _parse_layout(text: str, pos: int, rank: int) -> tuple[Layout, int]:
    start = pos
    m = _M2M_RE.match(text, pos)
    m2m = tuple(int(x) for x in m.group(1).split(",")) if m.group(1) else ()
    pos = m.end()
    tail = ""
    if text.startswith(":", pos):
        t = _LAYOUT_TAIL_RE.match(text, pos + 1)
        tail = t.group(0)
        pos = t.end()
        d = _DIM_LEVEL_RE.match(text, t.start())
        if d:
            for m in re.finditer(r"[^,+~ ]+", d.group(1)):
                if m.group() not in ("D", "C", "S", "H"):
                    raise ShapeSyntaxError("expected a DimLevelType abbreviation (D, C, or S)",
                                           d.start(1) + m.start())
        if "P(" in tail and not d:
            raise ShapeSyntaxError("Layout has physical shape, but is not for a sparse array: "
                                   f"{{{text[start:pos]}}}", start)
    if not text.startswith("}", pos):
        raise ShapeSyntaxError("expects '}' at the end of layout", pos)
    if len(m2m) != rank and not (rank == 0 and not m2m):
        raise ShapeSyntaxError(
            f"Dimensions size is {rank}, but minor to major size is {len(m2m)}.", start)
    if sorted(m2m) != list(range(rank)):
        raise ShapeSyntaxError(f"layout {{{text[start:pos]}}} is not a permutation of 0..{rank - 1}", start)
    if not tail:
        lay = default_layout(rank)
        if lay.minor_to_major == m2m:
            return lay, pos + 1
    return Layout(m2m, tail), pos + 1


def _parse_tuple(text: str, pos: int) -> tuple[TupleShape, int]:
    elements = []
    pos = _SKIP_RE.match(text, pos).end()
    if text.startswith(")", pos):
        return TupleShape(()), pos + 1
    while True:
        shape, pos = parse_shape_prefix(text, pos)
        elements.append(shape)
        pos = _SKIP_RE.match(text, pos).end()
        if text.startswith(",", pos):
            pos += 1
            continue
        if text.startswith(")", pos):
            return TupleShape(tuple(elements)), pos + 1
        raise ShapeSyntaxError("expects ')' at the end of tuple", pos)
