"""Buffer plan of one computation: which memory holds each instruction's value.

Every array leaf of every instruction gets a `Buf`: a parameter leaf (read only — the
caller's array is never written), an output leaf (the caller's fresh result array),
a constant (a private global), or a region of the computation's temporary arena.
tuple, get-tuple-element and layout-preserving bitcast/reshape alias their operand's
buffers (no code). A value that is a root leaf exactly once is computed straight into
the output. Arena regions are given out in instruction order and returned after the
last use of any alias of them, so dead buffers are reused (first fit, 64-byte aligned).
Called computations (while bodies, branches, calls) share one scratch region after the
caller's own buffers: they run one at a time.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.shape import TupleShape

ALIGN = 64


@dataclass(eq=False)
class Buf:
    kind: str             # param | out | const | temp | none
    size: int             # bytes
    index: int = -1       # param / out leaf number
    offset: int = -1      # temp offset in the arena
    inst: object = None   # const: the constant instruction


def leaf_bytes(shape) -> int:
    if not shape.dtype.is_array:
        return 0
    return max(shape.size, 0) * shape.dtype.np.itemsize


def leaf_ranges(shape) -> list[tuple[int, int]]:
    """(start, stop) of each tuple element's leaves in the flat leaf list."""
    out, k = [], 0
    for el in shape.elements:
        n = len(el.leaves())
        out.append((k, k + n))
        k += n
    return out


def _aliases_operand(inst) -> bool:
    if inst.opcode == "bitcast":      # the same bytes, reinterpreted
        return leaf_bytes(inst.shape) == leaf_bytes(inst.operands[0].shape)
    if inst.opcode in ("set-dimension-size", "add-dependency", "domain"):
        return True
    if inst.opcode == "reshape":
        from .loops import is_default_layout
        return is_default_layout(inst.shape) and is_default_layout(inst.operands[0].shape)
    return False


# Instructions whose value needs no code of their own.
_NO_CODE = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "after-all",
                      "opt-barrier", "copy-done", "async-update", "async-done"})
# Async wrappers: (tuple element of the result, tuple element of the operand) pairs whose
# leaves are the same buffers; the other elements of copy-start/async-start are new.
_ALIASED_ELEMENT = {"copy-done": (None, 0), "async-done": (None, 1), "async-update": (None, None)}


class Plan:
    def __init__(self, comp):
        self.comp = comp
        self.leaves: dict[int, list[Buf]] = {}
        self.scratch: dict[int, list[Buf]] = {}   # per-instruction temporaries (while)
        self.arena = 0
        self.callee_offset = 0
        self.root_copies: list[tuple[int, Buf]] = []   # (out leaf, source) copied at the end
        self.n_params = 0
        self.n_outs = 0

    def no_code(self, inst) -> bool:
        return inst.opcode in _NO_CODE or _aliases_operand(inst)


def plan(comp, callee_arena) -> Plan:
    """The buffer plan of `comp`; callee_arena(c) gives a called computation's arena size."""
    p = Plan(comp)
    leaves = p.leaves
    k = 0
    for par in sorted(comp.parameters if hasattr(comp, "parameters") else
                      [i for i in comp.instructions if i.opcode == "parameter"],
                      key=lambda i: i.parameter_number):
        bufs = []
        for s in par.shape.leaves():
            bufs.append(Buf("param", leaf_bytes(s), index=k))
            k += 1
        leaves[id(par)] = bufs
    p.n_params = k
    owned: list[tuple[int, Buf]] = []      # (position, buf) in creation order
    for pos, inst in enumerate(comp.instructions):
        op = inst.opcode
        if op == "parameter":
            continue
        if op == "constant":
            leaves[id(inst)] = [Buf("const", leaf_bytes(s), index=k, inst=inst)   # k: tuple leaf
                                for k, s in enumerate(inst.shape.leaves())]
        elif op == "tuple":
            leaves[id(inst)] = [b for o in inst.operands for b in leaves[id(o)]]
        elif op == "get-tuple-element":
            start, stop = leaf_ranges(inst.operands[0].shape)[inst.attrs["index"]]
            leaves[id(inst)] = leaves[id(inst.operands[0])][start:stop]
        elif op in _ALIASED_ELEMENT:
            el = _ALIASED_ELEMENT[op][1]
            src = leaves[id(inst.operands[0])]
            if el is not None:
                start, stop = leaf_ranges(inst.operands[0].shape)[el]
                src = src[start:stop]
            leaves[id(inst)] = list(src)
        elif op in ("copy-start", "async-start"):
            # copy-start: (destination, source = the operand, context...);
            # async-start: ((operands...), results, context...)
            kept = 1 if op == "copy-start" else 0
            given = [b for o in inst.operands for b in leaves[id(o)]]
            bufs = []
            for k, (start, stop) in enumerate(leaf_ranges(inst.shape)):
                if k == kept:
                    bufs.extend(given)
                    continue
                for s_ in inst.shape.leaves()[start:stop]:
                    n = leaf_bytes(s_)
                    buf = Buf("temp" if n else "none", n)
                    bufs.append(buf)
                    if n:
                        owned.append((pos, buf))
            leaves[id(inst)] = bufs
        elif _aliases_operand(inst) or op == "opt-barrier":
            # bitcast/reshape (same bytes), set-dimension-size (sizes are not tracked)
            leaves[id(inst)] = list(leaves[id(inst.operands[0])])
        else:
            bufs = []
            for s in inst.shape.leaves():
                n = leaf_bytes(s)
                buf = Buf("temp" if n else "none", n)
                bufs.append(buf)
                if n:
                    owned.append((pos, buf))
            leaves[id(inst)] = bufs
            if op == "while":
                scratch = [Buf("temp", leaf_bytes(s)) for s in inst.shape.leaves()] + [Buf("temp", 1)]
                p.scratch[id(inst)] = scratch
                owned.extend((pos, b) for b in scratch if b.size)
    root_leaves = leaves[id(comp.root)]
    p.n_outs = len(root_leaves)
    counts: dict[int, int] = {}
    for b in root_leaves:
        counts[id(b)] = counts.get(id(b), 0) + 1
    for j, b in enumerate(root_leaves):
        if b.kind == "temp" and counts[id(b)] == 1 and all(b is not s for ss in p.scratch.values() for s in ss):
            b.kind, b.index = "out", j
        elif b.size:
            p.root_copies.append((j, b))
    _assign_offsets(p, comp, owned, callee_arena)
    return p


def _assign_offsets(p: Plan, comp, owned, callee_arena) -> None:
    last: dict[int, int] = {}
    n = len(comp.instructions)
    for pos, inst in enumerate(comp.instructions):
        for o in inst.operands:
            for b in p.leaves[id(o)]:
                last[id(b)] = pos
    for b in p.leaves[id(comp.root)]:
        last[id(b)] = n
    for ss in p.scratch.values():
        pass
    free: list[tuple[int, int]] = []      # (offset, size) blocks
    top = 0
    by_pos: dict[int, list[Buf]] = {}
    for pos, b in owned:
        by_pos.setdefault(pos, []).append(b)
    releases: dict[int, list[Buf]] = {}
    for pos, inst in enumerate(comp.instructions):
        for b in by_pos.get(pos, ()):
            if b.kind != "temp":
                continue
            size = (b.size + ALIGN - 1) // ALIGN * ALIGN
            best = None
            for i, (off, sz) in enumerate(free):
                if sz >= size and (best is None or sz < free[best][1]):
                    best = i
            if best is not None:
                off, sz = free.pop(best)
                b.offset = off
                if sz > size:
                    free.append((off + size, sz - size))
            else:
                b.offset = top
                top += size
            end = last.get(id(b), pos)
            releases.setdefault(end, []).append(b)
        for b in releases.pop(pos, ()):
            size = (b.size + ALIGN - 1) // ALIGN * ALIGN
            free.append((b.offset, size))
            free.sort()
            merged = []
            for off, sz in free:
                if merged and merged[-1][0] + merged[-1][1] == off:
                    merged[-1] = (merged[-1][0], merged[-1][1] + sz)
                else:
                    merged.append((off, sz))
            free = merged
    p.callee_offset = top
    callee = 0
    for inst in comp.instructions:
        for c in _called_functions(inst):
            callee = max(callee, callee_arena(c))
    p.arena = top + callee


def _called_functions(inst) -> list:
    """Computations this instruction calls as compiled functions (not inlined)."""
    op = inst.opcode
    if op == "while":
        return [inst.attrs["condition"], inst.attrs["body"]]
    if op == "call":
        return [inst.attrs["to_apply"]]
    if op == "async-start":
        return [inst.attrs["calls"]]
    if op == "conditional":
        if "branch_computations" in inst.attrs:
            return list(inst.attrs["branch_computations"])
        return [inst.attrs["true_computation"], inst.attrs["false_computation"]]
    return []


called_functions = _called_functions
_ = TupleShape
