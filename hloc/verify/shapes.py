"""Shape and layout comparisons the verifier needs (ShapeUtil / Shape::Equal / Layout::Equal).

`compatible` ignores layouts and dynamic-dimension flags (ShapeUtil::Compatible);
`compatible_ignoring_fp` also treats all floating-point types as one;
`equal(a, b, eq)` compares layouts too, as Shape::Equal does, with `Eq` switching parts
off (tiles, memory space, element size, everything but minor-to-major). A layout's text
after ':' is split into its parts once (cached) so those switches are cheap. Also here:
shape indices (`subshape`, `leaves_with_index`), byte sizes for bitcast/aliasing checks,
and `describe(inst)`, the short `name = shape opcode(operands)` form put in messages.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..ir.shape import UNBOUNDED, ArrayShape, BufferShape, Layout, TupleShape

HOST_MEMORY_SPACE = 5            # Layout::kHostMemorySpace
GENERIC_FAST_MEMORY_SPACE = 1    # Layout::kGenericFastMemorySpace

_TAIL_PARTS = re.compile(
    r"(?P<D>D\([A-Z+~, ]*\))?(?P<T>T(?:\((?:\*|\d+)(?:,(?:\*|\d+))*\))+)?(?P<L>L\(\d+\))?"
    r"(?P<I>#\([a-z0-9]+\))?(?P<P>\*\([a-z0-9]+\))?(?P<E>E\(\d+\))?(?P<S>S\(\d+\))?"
    r"(?P<SC>SC\(\d+:\d+(?:,\d+)*\))?(?P<PS>P\(.*\))?(?P<M>M\(\d+\))?")


@lru_cache(maxsize=4096)
def tail_parts(tail: str) -> dict[str, str]:
    """The parts of a layout's text after ':' ({'T': 'T(8,128)', 'S': 'S(5)', ...})."""
    m = _TAIL_PARTS.fullmatch(tail)
    if m is None:                     # unknown syntax: compare it as one opaque part
        return {"?": tail}
    return {k: v for k, v in m.groupdict().items() if v}


def memory_space(shape) -> int:
    lay = getattr(shape, "layout", None)
    if lay is None or not lay.tail:
        return 0
    s = tail_parts(lay.tail).get("S")
    return int(s[2:-1]) if s else 0


@dataclass(frozen=True)
class Eq:
    """Which parts of a layout Shape::Equal ignores."""
    tiles: bool = False
    memory_space: bool = False
    element_size: bool = False
    tail_padding: bool = False
    split_config: bool = False
    minor_to_major_only: bool = False
    dynamic_dims: bool = False


FULL = Eq()


def layout_equal(a: Layout | None, b: Layout | None, eq: Eq = FULL, dtype=None,
                 dtype_b=None) -> bool:
    """Layout::Equal; `dtype`/`dtype_b` (the element types) let E(bits) of a sub-byte
    type count as its default element size."""
    if a is None or b is None:
        return a is b
    if a.minor_to_major != b.minor_to_major:
        return False
    if eq.minor_to_major_only or a.tail == b.tail:
        return True
    pa, pb = dict(tail_parts(a.tail)), dict(tail_parts(b.tail))
    for key, skip in (("T", eq.tiles), ("S", eq.memory_space), ("E", eq.element_size),
                      ("L", eq.tail_padding), ("SC", eq.split_config)):
        if skip:
            pa.pop(key, None)
            pb.pop(key, None)
    for p, t in ((pa, dtype), (pb, dtype_b or dtype)):
        if t is not None and t.bits < 8 and p.get("E") == f"E({t.bits})":
            del p["E"]
    return pa == pb


def _same_type(a, b, ignore_fp: bool) -> bool:
    return a is b or (ignore_fp and a.kind == "float" and b.kind == "float")


def _shapes(a, b, ignore_fp: bool, eq: Eq | None) -> bool:
    """eq None: ShapeUtil::Compatible(IgnoringFpPrecision); else Shape::Equal(eq)."""
    if isinstance(a, ArrayShape):
        if not (isinstance(b, ArrayShape) and _same_type(a.dtype, b.dtype, ignore_fp)
                and a.dims == b.dims):
            return False
        if eq is None:
            return True
        if not eq.dynamic_dims and (a.dynamic or b.dynamic) and \
                tuple(a.dynamic or (False,) * a.rank) != tuple(b.dynamic or (False,) * b.rank):
            return False
        return layout_equal(a.layout, b.layout, eq, a.dtype)
    if isinstance(a, TupleShape):
        return (isinstance(b, TupleShape) and len(a.elements) == len(b.elements)
                and all(_shapes(x, y, ignore_fp, eq) for x, y in zip(a.elements, b.elements)))
    if isinstance(a, BufferShape):
        return isinstance(b, BufferShape) and _shapes(a.inner, b.inner, ignore_fp, eq)
    return a == b


def compatible(a, b) -> bool:
    return _shapes(a, b, False, None)


def compatible_ignoring_fp(a, b) -> bool:
    return _shapes(a, b, True, None)


def equal(a, b, eq: Eq = FULL) -> bool:
    return _shapes(a, b, False, eq)


def unbuffered(shape):
    """The shape with every b(...) replaced by its contents (Equal().IgnoreBuffer())."""
    if isinstance(shape, BufferShape):
        return unbuffered(shape.inner)
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(unbuffered(e) for e in shape.elements))
    return shape


def is_dense_array(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.is_array


def is_unbounded(shape) -> bool:
    if isinstance(shape, ArrayShape):
        return UNBOUNDED in shape.dims
    if isinstance(shape, TupleShape):
        return any(is_unbounded(e) for e in shape.elements)
    if isinstance(shape, BufferShape):
        return is_unbounded(shape.inner)
    return False


# ---------------------------------------------------------------------------
# Shape indices

def subshape(shape, index):
    """ShapeUtil::GetSubshape, or None when the index is not valid."""
    for i in index:
        if not isinstance(shape, TupleShape) or not 0 <= i < len(shape.elements):
            return None
        shape = shape.elements[i]
    return shape


def subshapes(shape, index=()):
    """(index, subshape) for every subshape, tuples and buffers included, pre-order
    (ShapeUtil::ForEachSubshape; a buffer's contents share its index)."""
    yield index, shape
    if isinstance(shape, TupleShape):
        for i, e in enumerate(shape.elements):
            yield from subshapes(e, index + (i,))


def index_text(index) -> str:
    return "{" + ",".join(map(str, index)) + "}"


# ---------------------------------------------------------------------------
# Sizes

def byte_size(shape) -> int:
    """ShapeUtil::ByteSizeOf (8-byte tuple pointers; sub-byte types take E(n) bits)."""
    if isinstance(shape, TupleShape):
        return 8 * len(shape.elements)
    if isinstance(shape, BufferShape):
        return byte_size(shape.inner)
    if not is_dense_array(shape):
        return 0
    bits = shape.dtype.bits
    if bits < 8:
        e = tail_parts(shape.layout.tail).get("E") if shape.layout else None
        bits = int(e[2:-1]) if e else 8
        return (shape.size * bits + 7) // 8
    return shape.size * (bits // 8)


# ---------------------------------------------------------------------------
# Messages

def human(shape) -> str:
    """ShapeUtil::HumanString (no layouts)."""
    return shape.no_layout()


def shape_text(shape, layout_sensitive: bool) -> str:
    return str(shape) if layout_sensitive else shape.no_layout()


def describe(inst) -> str:
    """A short HloInstruction::ToString: `name = shape opcode(op, ...)`."""
    ops = ", ".join(o.name for o in inst.operands[:8])
    if len(inst.operands) > 8:
        ops += ", ..."
    return f"{inst.name} = {inst.shape} {inst.opcode}({ops})"
