"""The three instructions IR generation builds most (inbounds GEPs, loads and stores of
buffer elements and kernel arguments), made without IRBuilder's generic path.

llvmlite builds each instruction through five Python calls (the builder method, the
class's __init__, Instruction's, NamedValue's with its type assertions, the name
registration) and a fresh VoidType for every store: about a fifth of IR generation on a
scan body of scalar kernels (grad(scan): 6,000 of them). Here the object is filled in
directly: the same class, the same attributes with the same values (llvmlite 0.50's
GEPInstr, LoadInstr and StoreInstr constructors), the name registered in the same scope
with the same deduplication, inserted where IRBuilder._insert inserts. The printed IR is
byte-identical (tools/compare_ir.py); a builder carrying debug metadata goes the generic
way.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as li

_GEP, _LOAD, _STORE = li.GEPInstr, li.LoadInstr, li.StoreInstr
_VOID = ir.VoidType()


def _insert(b: ir.IRBuilder, inst) -> None:
    b._block.instructions.insert(b._anchor, inst)
    b._anchor += 1


def gep(b: ir.IRBuilder, ptr, indices: list, etype: ir.Type, name: str = ""):
    """`b.gep(ptr, indices, source_etype=etype, inbounds=True, name=name)`."""
    if b.debug_metadata is not None:
        return b.gep(ptr, indices, source_etype=etype, inbounds=True, name=name)
    blk = b._block
    i = _GEP.__new__(_GEP)
    d = i.__dict__
    d["source_etype"] = etype
    d["parent"] = blk
    d["type"] = ptr.type
    d["_name"] = blk.parent.scope.register(name, deduplicate=True)
    d["opname"] = "getelementptr"
    d["operands"] = [ptr, *indices]
    d["flags"] = []
    d["metadata"] = {}
    d["pointer"] = ptr
    d["indices"] = indices
    d["inbounds"] = True
    _insert(b, i)
    return i


def load(b: ir.IRBuilder, ptr, typ: ir.Type, name: str = ""):
    """`b.load(ptr, typ=typ, name=name)` of a pointer value."""
    if b.debug_metadata is not None:
        return b.load(ptr, typ=typ, name=name)
    blk = b._block
    i = _LOAD.__new__(_LOAD)
    d = i.__dict__
    d["parent"] = blk
    d["type"] = typ
    d["_name"] = blk.parent.scope.register(name, deduplicate=True)
    d["opname"] = "load"
    d["operands"] = [ptr]
    d["flags"] = []
    d["metadata"] = {}
    d["align"] = None
    _insert(b, i)
    return i


def store(b: ir.IRBuilder, value, ptr):
    """`b.store(value, ptr)` through an opaque pointer."""
    if b.debug_metadata is not None or not ptr.type.is_opaque:
        return b.store(value, ptr)
    blk = b._block
    i = _STORE.__new__(_STORE)
    d = i.__dict__
    d["parent"] = blk
    d["type"] = _VOID
    d["_name"] = blk.parent.scope.register("", deduplicate=True)
    d["opname"] = "store"
    d["operands"] = [value, ptr]
    d["flags"] = []
    d["metadata"] = {}
    d["align"] = None
    _insert(b, i)
    return i
