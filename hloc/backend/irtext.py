"""LLVM IR text of llvmlite functions, the same bytes as `str(fn)`, in a third of the time.

Printing the module was half of IR generation (BERT step: 23,500 instructions, 0.14 s):
llvmlite formats each instruction through several `str.format` calls, a metadata
check and a buffer join. Here the instruction classes hloc emits most (the exact classes
below: arithmetic, compares, casts, loads, stores, GEPs, selects, phis, branches, returns)
are written with one f-string each, the same format strings as llvmlite 0.50's `descr`
methods (`llvmlite/ir/instructions.py`) and the same trailing-space strip as its
`NamedValue._to_string`; so are allocas and plain calls (no attributes, fast-math, tail
marker, calling convention or varargs). Every other instruction (those calls, anything
with metadata, subclasses) and any instruction whose text llvmlite already cached is
printed by llvmlite itself. tests/test_backend_irtext.py checks the bytes against `str` on real modules.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as li

_CACHED = "_StrCaching__cached_str"          # llvmlite's per-value cache of str()
_CACHED_REF = "_StringReferenceCaching__cached_refstr"     # ... and of get_reference()
_plain: dict[type, bool] = {}


def _ref(v) -> str:
    """`v.get_reference()`, kept in llvmlite's own cache. A named value's reference is
    formatted here the first time (NamedValue._get_reference without the escapes it
    does not need), not through get_reference's cache-miss exception: half the cost
    over the ~45,000 values of a large module."""
    d = v.__dict__
    r = d.get(_CACHED_REF)
    if r is not None:
        return r
    t = type(v)
    plain = _plain.get(t)
    if plain is None:
        plain = _plain[t] = (t._get_reference is ir.NamedValue._get_reference
                             and t.get_reference is ir.NamedValue.get_reference)
    if plain:
        n = d["_name"]
        if "\\" not in n and '"' not in n:
            r = d[_CACHED_REF] = f'{t.name_prefix}"{n}"'
            return r
    return v.get_reference()


def _generic(i) -> str:
    opname = " ".join([i.opname] + i.flags) if i.flags else i.opname
    ops = ", ".join([_ref(op) for op in i.operands])
    return f"{opname} {i.type} {ops}"


def _gep(i) -> str:
    p = i.pointer
    idx = ", ".join([f"{x.type} {_ref(x)}" for x in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    return f"{op} {i.source_etype}, {p.type} {_ref(p)}, {idx} "


def _compare(i) -> str:
    a, b = i.operands
    flags = "".join([" " + f for f in i.flags])
    return f"{i.opname}{flags} {i.op} {a.type} {_ref(a)}, {_ref(b)} "


def _load(i) -> str:
    (p,) = i.operands
    align = "" if i.align is None else f", align {i.align:d}"
    return f"load {i.type}, {p.type} {_ref(p)}{align}"


def _store(i) -> str:
    v, p = i.operands
    align = "" if i.align is None else f", align {i.align:d}"
    return f"store {v.type} {_ref(v)}, {p.type} {_ref(p)}{align}"


def _select(i) -> str:
    c, a, b = i.operands
    return (f"select {' '.join(i.flags)} {c.type} {_ref(c)}, {a.type} "
            f"{_ref(a)}, {b.type} {_ref(b)} ")


def _cast(i) -> str:
    (v,) = i.operands
    return f"{i.opname} {v.type} {_ref(v)} to {i.type} "


def _phi(i) -> str:
    incs = ", ".join([f"[{_ref(v)}, {_ref(b)}]" for v, b in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incs} "


def _terminator(i) -> str:
    ops = ", ".join([f"{op.type} {_ref(op)}" for op in i.operands])
    return f"{i.opname} {ops}"


def _call(i) -> str | None:
    """A plain call (None: llvmlite prints attributes, fast-math, tail, calling
    convention, varargs and argument attributes)."""
    callee = i.callee
    fnty = callee.function_type
    if i.arg_attributes or fnty.var_arg or i.cconv or i.tail or i.attributes or i.fastmath:
        return None
    args = ", ".join([f"{a.type} {_ref(a)}" for a in i.args])
    return f"call {fnty.return_type} {_ref(callee)}({args})"


def _alloca(i) -> str:
    size = f", {i.operands[0].type} {_ref(i.operands[0])}" if i.operands else ""
    align = "" if i.align is None else f", align {i.align}"
    return f"alloca {i.allocated_type}{size}{align}"


def _ret(i) -> str:
    v = i.return_value
    return i.opname if v is None else f"{i.opname} {v.type} {_ref(v)}"


_FORMAT = {li.Instruction: _generic, li.GEPInstr: _gep, li.ICMPInstr: _compare,
           li.FCMPInstr: _compare, li.LoadInstr: _load, li.StoreInstr: _store,
           li.SelectInstr: _select, li.CastInstr: _cast, li.PhiInstr: _phi,
           li.Branch: _terminator, li.ConditionalBranch: _terminator, li.Ret: _ret,
           li.CallInstr: _call, li.AllocaInstr: _alloca}


def instruction_text(i) -> str:
    """`str(i)` for an instruction."""
    d = i.__dict__
    cached = d.get(_CACHED)
    if cached is not None:
        return cached
    fmt = _FORMAT.get(type(i))
    if fmt is None or i.metadata:
        return str(i)
    body = fmt(i)
    if body is None:
        return str(i)
    if isinstance(i.type, ir.VoidType):
        return body.rstrip()
    return f"{_ref(i)} = {body}".rstrip()


def text(value) -> str:
    """`str(value)` for a global value of an llvmlite module (functions printed here)."""
    if not isinstance(value, ir.Function) or not value.blocks or type(value) is not ir.Function:
        return str(value)
    buf: list[str] = []
    value.descr_prototype(buf)
    buf.append("{\n")
    for blk in value.blocks:
        buf.append(f"{blk._format_name()}:\n")
        if blk.instructions:
            buf.append("  " + "\n  ".join(map(instruction_text, blk.instructions)) + "\n")
    buf.append("}\n")
    return "".join(buf)


def module_text(module: ir.Module) -> str:
    """`str(module)`, its functions printed here (llvmlite's Module.__repr__: header,
    identified types, global values, named then unnamed metadata)."""
    lines = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
             f'target datalayout = "{module.data_layout}"', ""]
    lines += [t.get_declaration() for t in module.get_identified_types().values()]
    lines += [text(v) for v in module.globals.values()]
    lines += [f"!{k} = !{{ {', '.join(i.get_reference() for i in v.operands)} }}"
              for k, v in module.namedmetadata.items()]
    lines += [str(md) for md in module.metadata]
    return "\n".join(lines)
