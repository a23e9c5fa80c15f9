"""Element types in LLVM: storage types (what a buffer holds) and compute types.

An element is loaded from its storage type and converted to its compute type; generators
only see compute values, and results are rounded back to storage on the way out:

| HLO            | storage        | compute                                   |
|----------------|----------------|-------------------------------------------|
| pred           | i8 (0/1)       | i1                                        |
| sN / uN        | iN (N=8..64), i8 for N<8 | iN (LLVM wraps at any width)     |
| f16            | half           | float, rounded to half after every op     |
| bf16           | i16 (bits)     | float, rounded by bit manipulation (XLA)  |
| f32 / f64      | float / double | the same                                  |
| c64 / c128     | 2 x float/double | a `Cplx(re, im)` pair of values         |

| f8* / f4e2m1fn | i8 (bits)      | float, through ml_dtypes-exact tables (narrow_floats.py) |
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from llvmlite import ir

from . import irfast

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
PTR = ir.PointerType()
VOID = ir.VoidType()


@dataclass(frozen=True)
class Cplx:
    """A complex compute value: two LLVM values of the component type."""
    re: ir.Value
    im: ir.Value


def opaque(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """`v` (a typed pointer from alloca) as an opaque `ptr` (llvmlite's bitcast would
    fold the cast away and keep the typed pointer)."""
    from llvmlite.ir.instructions import CastInstr
    c = CastInstr(b.block, "bitcast", v, PTR, name=v.name + ".p" if v.name else "")
    b._insert(c)
    return c


class TypeUnsupported(Exception):
    """An element type the back end does not compile yet."""


@lru_cache(maxsize=None)
def _narrow(dt) -> bool:
    from .narrow_floats import NARROW        # (narrow_floats imports this module)
    return dt.name in NARROW


def storage_type(dt) -> ir.Type:
    if dt.kind == "pred":
        return I8
    if dt.kind in ("int", "uint"):
        return ir.IntType(max(dt.bits, 8))
    if dt.name == "f16":
        return F16
    if dt.name == "bf16":
        return I16
    if _narrow(dt):
        return I8
    if dt.name == "f32" or dt.name == "c64":
        return F32 if dt.name == "f32" else ir.ArrayType(F32, 2)
    if dt.name == "f64":
        return F64
    if dt.name == "c128":
        return ir.ArrayType(F64, 2)
    raise TypeUnsupported(f"element type {dt.name}")


def compute_type(dt) -> ir.Type:
    """The LLVM type generators compute in (for complex: the component type)."""
    if dt.kind == "pred":
        return I1
    if dt.kind in ("int", "uint"):
        return ir.IntType(dt.bits)
    if dt.name in ("f16", "bf16", "f32", "c64") or _narrow(dt):
        return F32
    if dt.name in ("f64", "c128"):
        return F64
    raise TypeUnsupported(f"element type {dt.name}")


def itemsize(dt) -> int:
    return dt.np.itemsize


def bf16_to_f32(b: ir.IRBuilder, bits16: ir.Value) -> ir.Value:
    return b.bitcast(b.shl(b.zext(bits16, I32), ir.Constant(I32, 16)), F32)


def f32_to_bf16(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Round to nearest even on the bits (XLA's EmitF32ToBF16); NaN stays a quiet NaN."""
    u = b.bitcast(x, I32)
    lsb = b.and_(b.lshr(u, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.lshr(b.add(b.add(u, ir.Constant(I32, 0x7FFF)), lsb), ir.Constant(I32, 16))
    nan = b.fcmp_unordered("uno", x, x)
    quiet = b.or_(b.lshr(u, ir.Constant(I32, 16)), ir.Constant(I32, 0x40))
    return b.trunc(b.select(nan, quiet, rounded), I16)


def load_elem(b: ir.IRBuilder, dt, ptr: ir.Value):
    """Load the element at `ptr` (already offset) as a compute value."""
    st = storage_type(dt)
    if dt.kind == "complex":
        comp = st.element
        re = b.load(b.gep(ptr, [ir.Constant(I64, 0), ir.Constant(I32, 0)], source_etype=st,
                          inbounds=True), typ=comp)
        im = b.load(b.gep(ptr, [ir.Constant(I64, 0), ir.Constant(I32, 1)], source_etype=st,
                          inbounds=True), typ=comp)
        return Cplx(re, im)
    v = irfast.load(b, ptr, st)
    return from_storage(b, dt, v)


def from_storage(b, dt, v):
    if dt.kind == "pred":
        return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    if dt.kind in ("int", "uint"):
        return b.trunc(v, ir.IntType(dt.bits)) if dt.bits < 8 else v
    if dt.name == "f16":
        return b.fpext(v, F32)
    if dt.name == "bf16":
        return bf16_to_f32(b, v)
    if _narrow(dt):
        from .narrow_floats import decode
        return decode(b, dt, v)
    return v


def to_storage(b, dt, v):
    if dt.kind == "pred":
        return b.zext(v, I8)
    if dt.kind in ("int", "uint"):
        if dt.bits < 8:
            return b.sext(v, I8) if dt.kind == "int" else b.zext(v, I8)
        return v
    if dt.name == "f16":
        return b.fptrunc(v, F16)
    if dt.name == "bf16":
        return f32_to_bf16(b, v)
    if _narrow(dt):
        from .narrow_floats import encode
        return encode(b, dt, v)
    return v


def store_elem(b: ir.IRBuilder, dt, value, ptr: ir.Value) -> None:
    st = storage_type(dt)
    if dt.kind == "complex":
        for k, part in enumerate((value.re, value.im)):
            b.store(part, b.gep(ptr, [ir.Constant(I64, 0), ir.Constant(I32, k)], source_etype=st,
                                inbounds=True))
        return
    irfast.store(b, to_storage(b, dt, value), ptr)


def vector_load(b: ir.IRBuilder, dt, ptr: ir.Value, lanes: int):
    """`lanes` consecutive f32/f64 elements from `ptr` (hloc.backend.row_vector)."""
    st = storage_type(dt)
    v = b.load(ptr, typ=ir.VectorType(st, lanes))
    v.align = itemsize(dt)
    return v


def vector_store(b: ir.IRBuilder, value, ptr: ir.Value) -> None:
    """Store a vector of f32/f64 elements (vector_load's twin)."""
    st = b.store(value, ptr)
    st.align = 4 if value.type.element == F32 else 8


def round_narrow(b, dt, v):
    """A compute value rounded to dt's precision (f16/bf16 ops round after each op)."""
    if dt.name == "f16":
        return b.fpext(b.fptrunc(v, F16), F32)
    if dt.name == "bf16":
        return bf16_to_f32(b, f32_to_bf16(b, v))
    if _narrow(dt):
        from .narrow_floats import decode, encode
        return decode(b, dt, encode(b, dt, v))
    return v


def const(dt, value):
    """A compute-type constant of dt."""
    t = compute_type(dt)
    if dt.kind == "complex":
        c = complex(value)
        return Cplx(ir.Constant(t, c.real), ir.Constant(t, c.imag))
    if dt.kind == "pred":
        return ir.Constant(I1, int(bool(value)))
    if dt.kind in ("int", "uint"):
        return ir.Constant(t, int(value) & ((1 << dt.bits) - 1))
    return ir.Constant(t, float(value))
