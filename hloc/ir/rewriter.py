"""The mutation API passes use: unique names, new instructions, replacement, DCE.

Everything that changes a module goes through here or through the small methods on
Instruction/Computation, so users lists, roots and instruction order stay consistent.
Graph walks are iterative (real dumps have dependency chains thousands long).
"""
from __future__ import annotations

import re

from ..ops import REGISTRY
from ..ops import has_side_effect as _own_side_effect
from .module import Computation, Instruction, Module

_SUFFIX = re.compile(r"^(.*)\.(\d+)$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


class NameUniquer:
    """XLA's NameUniquer with separator '.': `add`, `add.1`, `add.2` (module-wide)."""

    def __init__(self, module: Module | None = None):
        self._used: set[str] = set()
        self._next: dict[str, int] = {}
        if module is not None:
            for comp in module.computations:
                self._used.add(comp.name)
                for inst in comp.instructions:
                    self._used.add(inst.name)

    def unique(self, name: str) -> str:
        if _UNSAFE.search(name):
            name = _UNSAFE.sub("_", name)
        name = name or "_"
        if name[0].isdigit():
            name = "_" + name
        if name not in self._used:
            self._used.add(name)
            return name
        m = _SUFFIX.match(name)
        root = m.group(1) if m else name
        n = self._next.get(root, 1)
        while f"{root}.{n}" in self._used:
            n += 1
        self._next[root] = n + 1
        out = f"{root}.{n}"
        self._used.add(out)
        return out

    def reserve(self, name: str) -> None:
        self._used.add(name)


def uniquer(module: Module) -> NameUniquer:
    """The module's uniquer, made on first use and kept on the module."""
    u = getattr(module, "_uniquer", None)
    if u is None:
        u = NameUniquer(module)
        module._uniquer = u
    return u


def add_instruction(comp: Computation, opcode: str, shape, operands=(), attrs=None, *,
                    name: str | None = None, before: Instruction | None = None,
                    literal=None, like: Instruction | None = None) -> Instruction:
    """Create an instruction and insert it (before `before`, else before its first user
    is not known yet, so at the end; callers that replace an instruction pass `before`).
    `like` copies metadata/frontend attributes from an instruction being rewritten."""
    module = comp.parent
    opdef = REGISTRY[opcode]
    attrs = dict(attrs or {})
    if like is not None:
        for key in ("metadata", "frontend_attributes", "sharding"):
            if key in like.attrs and key not in attrs:
                attrs[key] = like.attrs[key]
    base = name or opcode
    inst = Instruction(uniquer(module).unique(base) if module is not None else base, opdef,
                       shape, operands, attrs)
    if literal is not None:
        inst.literal = literal
    comp.add_instruction(inst, before=before)
    return inst


def replace_instruction(old: Instruction, new: Instruction) -> None:
    """Make every user of `old` (and the root slot) use `new`; remove `old` if dead."""
    old.replace_all_uses_with(new)
    comp = old.parent
    if comp is not None and not old.users and not has_side_effect(old) and \
            old.opcode != "parameter":
        comp.remove_instruction(old)


def has_side_effect(inst: Instruction, memo: dict | None = None) -> bool:
    """HloInstruction::HasSideEffect: the instruction's own side effect or one anywhere in
    the computations it calls. `memo` (computation -> bool) can be shared across calls."""
    if _own_side_effect(inst):
        return True
    called = inst.called_computations()
    if not called:
        return False
    if memo is None:
        memo = {}
    return any(computation_has_side_effect(c, memo) for c in called)


def computation_has_side_effect(comp: Computation, memo: dict | None = None) -> bool:
    """HloComputation::HasSideEffect (recursing into called computations)."""
    if memo is None:
        memo = {}
    if comp in memo:
        return memo[comp]
    memo[comp] = False                       # guards against call cycles
    result = any(has_side_effect(i, memo) for i in comp.instructions)
    memo[comp] = result
    return result


def post_order(comp: Computation) -> list[Instruction]:
    """Operands before users, iteratively; unreachable instructions keep their place."""
    seen: set[int] = set()
    out: list[Instruction] = []
    for start in comp.instructions:
        if id(start) in seen:
            continue
        stack = [(start, 0)]
        seen.add(id(start))
        while stack:
            inst, i = stack[-1]
            deps = inst.operands + inst.control_predecessors
            if i < len(deps):
                stack[-1] = (inst, i + 1)
                d = deps[i]
                if id(d) not in seen and d.parent is comp:
                    seen.add(id(d))
                    stack.append((d, 0))
            else:
                stack.pop()
                out.append(inst)
    return out


def remove_dead_instructions(comp: Computation) -> bool:
    """Remove instructions whose values are unused (not the root, not parameters, not
    side-effecting). Returns whether anything was removed."""
    changed = False
    worklist = [i for i in comp.instructions if not i.users]
    while worklist:
        inst = worklist.pop()
        if inst.parent is not comp or inst.users or inst is comp.root:
            continue
        if inst.opcode == "parameter" or has_side_effect(inst):
            continue
        if any(inst in other.control_predecessors for other in comp.instructions):
            continue
        operands = list(inst.operands)
        comp.remove_instruction(inst)
        changed = True
        worklist.extend(o for o in operands if not o.users)
    return changed
