"""The C ABI of an ahead-of-time compiled module: one `Leaf` per argument and result buffer.

ENTRY parameters are flattened leaf by leaf in parameter order (a tuple parameter gives
one leaf per element, depth first); results are the ROOT's leaves in the same way. Each
leaf is one contiguous buffer holding the elements in the leaf's physical layout (the
module's entry layout: dimensions ordered major to minor by reversing minor_to_major; the
default layout is row-major). Token leaves have no bytes: their pointer is ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..backend.loops import minor_to_major

# Element type -> (C storage type, what the bytes mean). Types C has no name for are
# passed as their bits (the same storage NumPy/ml_dtypes use).
_C_TYPES = {
    "pred": ("uint8_t", "0 or 1"), "f32": ("float", ""), "f64": ("double", ""),
    "c64": ("float", "complex: (re, im) float pairs"),
    "c128": ("double", "complex: (re, im) double pairs"),
    "s8": ("int8_t", ""), "s16": ("int16_t", ""), "s32": ("int32_t", ""), "s64": ("int64_t", ""),
    "u8": ("uint8_t", ""), "u16": ("uint16_t", ""), "u32": ("uint32_t", ""), "u64": ("uint64_t", ""),
}


@dataclass
class Leaf:
    index: int            # position in the args / results pointer array
    name: str             # HLO name (parameter name, with [i] for tuple elements)
    ident: str            # C identifier derived from it (unique in its list)
    dtype: str            # HLO element type
    dims: tuple           # logical dimensions
    minor_to_major: tuple
    nbytes: int
    align: int            # required pointer alignment (the element's storage size)
    ctype: str
    note: str

    @property
    def physical_dims(self) -> tuple:
        return tuple(self.dims[d] for d in reversed(self.minor_to_major))

    @property
    def is_default_layout(self) -> bool:
        return tuple(self.minor_to_major) == tuple(range(len(self.dims) - 1, -1, -1))


def _ctype(dt) -> tuple[str, str]:
    if dt.name in _C_TYPES:
        return _C_TYPES[dt.name]
    size = dt.np.itemsize
    return f"uint{8 * size}_t", f"{dt.name} stored as its {8 * size}-bit pattern"


def _leaf(index, name, shape) -> Leaf:
    dt = shape.dtype
    if not dt.is_array:
        return Leaf(index, name, "", dt.name, (), (), 0, 1, "void", "token: no data, pointer ignored")
    ctype, note = _ctype(dt)
    n = 1
    for d in shape.dims:
        n *= d
    item = dt.np.itemsize
    return Leaf(index, name, "", dt.name, tuple(shape.dims), tuple(minor_to_major(shape)),
                n * item, item if not dt.is_complex else item // 2, ctype, note)


def _walk(name, shape, out):
    if shape.is_tuple:
        for k, el in enumerate(shape.elements):
            _walk(f"{name}[{k}]", el, out)
    else:
        out.append(_leaf(len(out), name, shape))


def _identifiers(leaves, fallback):
    used = set()
    for leaf in leaves:
        base = re.sub(r"[^0-9A-Za-z_]", "_", leaf.name).strip("_") or fallback
        if base[0].isdigit():
            base = f"{fallback}_{base}"
        ident, n = base, 1
        while ident in used:
            n += 1
            ident = f"{base}_{n}"
        used.add(ident)
        leaf.ident = ident


def argument_leaves(entry) -> list[Leaf]:
    out: list[Leaf] = []
    params = sorted((i for i in entry.instructions if i.opcode == "parameter"),
                    key=lambda p: p.parameter_number)
    for p in params:
        _walk(p.name, p.shape, out)
    _identifiers(out, "arg")
    return out


def result_leaves(entry) -> list[Leaf]:
    out: list[Leaf] = []
    root = entry.root
    if root.shape.is_tuple and root.opcode == "tuple":
        for k, (op, el) in enumerate(zip(root.operands, root.shape.elements)):
            _walk(op.name, el, out)
    else:
        _walk(root.name, root.shape, out)
    _identifiers(out, "result")
    return out
