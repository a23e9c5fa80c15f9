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

Donated parameters (`Options(donate=...)`, ENTRY parameters the caller gives up): for an
`input_output_alias` entry of a donated parameter, the ENTRY plan puts the output leaf
in the parameter's buffer when it can prove the parameter's old value is not read after
the output's producer starts writing (`_place_donated`): the output is the parameter
itself, or every read of the parameter comes from an earlier kernel, or the producer is
a dynamic-update-slice whose base is the parameter and reads it nowhere else (it then
writes only its window, hloc.backend.inplace), a kernel that reads it only elementwise
(element i for element i), or a while loop whose state leaf starts from it (its state
then lives there from the start). Otherwise the output gets its own buffer
as without donation (the runtime copies it into the donated array for must-alias, as
XLA's copy insertion would, hloc.backend.executable).
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
        self.inplace: dict[int, int] = {}     # out leaf -> donated param leaf holding it

    def no_code(self, inst) -> bool:
        return inst.opcode in _NO_CODE or _aliases_operand(inst)


def plan(comp, callee_arena, donated=()) -> Plan:
    """The buffer plan of `comp`; callee_arena(c) gives a called computation's arena size;
    `donated`: (out leaf, param leaf, kind) of the donated aliases (alias_leaves), ENTRY only."""
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
    tuple_ranges: dict[int, list] = {}
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
            tup = inst.operands[0]
            ranges = tuple_ranges.get(id(tup))
            if ranges is None:        # once per tuple, not per element taken (scan states)
                ranges = tuple_ranges[id(tup)] = leaf_ranges(tup.shape)
            start, stop = ranges[inst.attrs["index"]]
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
    if donated:      # after `out` is given out: row groups see outs and params alike
        p.inplace = _place_donated(p, comp, owned, donated)
    return p


def alias_leaves(module, donate) -> list[tuple[int, int, str]]:
    """(out leaf, param leaf, kind) of each `input_output_alias` entry of `module` whose
    parameter number is in `donate`, both sides one array leaf of the same shape and layout."""
    from .loops import minor_to_major
    entry = module.entry
    params = sorted(entry.parameters, key=lambda i: i.parameter_number)
    starts, k = [], 0
    for par in params:
        starts.append(k)
        k += len(par.shape.leaves())
    out = []
    for out_index, pno, pindex, kind in module.attrs.get("input_output_alias", ()):
        if pno not in donate or not 0 <= pno < len(params):
            continue
        o, q = _leaf_at(entry.root.shape, out_index), _leaf_at(params[pno].shape, pindex)
        if o is None or q is None:
            continue
        (j, os_), (i, ps) = o, q
        if os_.dtype != ps.dtype or tuple(os_.dims) != tuple(ps.dims) \
                or minor_to_major(os_) != minor_to_major(ps) or not os_.dtype.is_array:
            continue
        out.append((j, starts[pno] + i, kind))
    return out


def _leaf_at(shape, index) -> tuple[int, object] | None:
    """(flat leaf number, leaf shape) of the array at `index` in `shape`, or None."""
    k = 0
    for i in index:
        if not shape.is_tuple or not 0 <= i < len(shape.elements):
            return None
        k += sum(len(e.leaves()) for e in shape.elements[:i])
        shape = shape.elements[i]
    return None if shape.is_tuple else (k, shape)


# Readers that may still read their operands after their own position.
_DEFERRED_READERS = frozenset({"async-start", "copy-start"})


def _place_donated(p: Plan, comp, owned, donated) -> dict[int, int]:
    """out leaf -> param leaf for the donated aliases whose output can be computed in the
    parameter's buffer with no read of the parameter's old value after it is written.
    Runs on the finished plan: an output leaf moved from `out` to `param` changes neither
    offsets nor row groups (which see only arena overlaps), so the groups seen here are
    those the emitter forms."""
    from . import row_groups
    from .inplace import dus_base
    insts = comp.instructions
    leaves = p.leaves
    root = leaves[id(comp.root)]
    made = {id(b): pos for pos, b in owned}
    params = {b.index: b for i in insts if i.opcode == "parameter" for b in leaves[id(i)]}
    groups = row_groups.plan(comp, p)       # a row group's members run in its first's kernel
    at = {id(i): pos for pos, i in enumerate(insts)}

    def start(pos: int) -> int:
        g = groups.get(id(insts[pos]))
        return pos if g is None else min(at[id(m)] for m in g.members)

    readers: dict[int, list[int]] = {}
    for pos, inst in enumerate(insts):
        if p.no_code(inst):
            continue
        for o in inst.operands:
            for b in leaves[id(o)]:
                if b.kind == "param":
                    readers.setdefault(id(b), []).append(pos)
    placed: dict[int, int] = {}
    for j, pi, _kind in donated:
        par = params.get(pi)
        if par is None or not 0 <= j < len(root) or pi in placed.values():
            continue
        b = root[j]
        if b is par:                 # the output is the parameter, unchanged
            placed[j] = pi
            p.root_copies = [(k, c) for k, c in p.root_copies if k != j]
            continue
        if b.kind != "out" or b.index != j or id(b) not in made \
                or b.size != par.size or any(r is par for r in root):
            continue
        pos = made[id(b)]
        inst = insts[pos]
        if inst.opcode in _DEFERRED_READERS:
            continue
        first = start(pos)
        base = dus_base(inst) if groups.get(id(inst)) is None else None
        ok = True
        for r in readers.get(id(par), ()):
            if insts[r].opcode in _DEFERRED_READERS:
                ok = False
            elif start(r) < first:
                continue
            elif r == pos and base is not None and leaves[id(inst.operands[base])] == [par] \
                    and not any(par in leaves[id(o)] for k, o in enumerate(inst.operands)
                                if k != base):
                continue             # the DUS's own base: it writes only its window
            elif r == pos and inst.opcode == "while" and _state_from(b, par, leaves[id(inst)],
                                                                     leaves[id(inst.operands[0])]):
                continue             # the loop state starts in it (a no-op copy) and stays
            elif r == pos and groups.get(id(inst)) is None and _elementwise_on(
                    inst, [k for k, o in enumerate(inst.operands) if par in leaves[id(o)]],
                    [leaves[id(o)] for o in inst.operands], par):
                continue             # element i of it is read only to compute element i
            else:
                ok = False
            if not ok:
                break
        if ok:
            b.kind, b.index = "param", pi
            placed[j] = pi
    return placed


def _state_from(b, par, state: list, init: list) -> bool:
    """Whether while state leaf `b` starts from `par` and no other state leaf does."""
    k = next((k for k, x in enumerate(state) if x is b), None)
    return k is not None and len(init) == len(state) and init[k] is par \
        and sum(x is par for x in init) == 1


def _elementwise_on(inst, ks: list[int], op_leaves: list, par) -> bool:
    """Whether `inst` (one array, the parameter's shape and layout) reads operands `ks`
    (each exactly the parameter) only elementwise: an elementwise op, or a fusion in
    which everything downstream of those parameters is elementwise of the root's dims."""
    from ..ops.base import ELEMENTWISE
    if inst.shape.is_tuple or any(op_leaves[k] != [par] for k in ks):
        return False
    dims = tuple(inst.shape.dims)

    def ok(i) -> bool:
        return ELEMENTWISE in i.opdef.traits and not i.shape.is_tuple \
            and tuple(i.shape.dims) == dims and not i.attrs.get("calls")
    if inst.opcode != "fusion":
        return ok(inst)
    if inst.attrs.get("kind") != "kLoop":
        return False
    body = inst.attrs["calls"]
    params = {i.parameter_number: i for i in body.instructions if i.opcode == "parameter"}
    seen: set[int] = set()
    todo = [params[k] for k in ks if k in params]
    if len(todo) != len(ks):
        return False
    while todo:
        i = todo.pop()
        for u in i.users:
            if id(u) not in seen:
                if not ok(u):
                    return False
                seen.add(id(u))
                todo.append(u)
    return True


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
