"""Creating instructions: unique names (XLA's NameUniquer), new instructions, and the
side-effect question the graph's removal rules ask (HloInstruction::HasSideEffect).

Walks, replacement, removal and cloning are in hloc.ir.graph.
"""
from __future__ import annotations

import re

from ..ops import REGISTRY
from ..ops import has_side_effect as _own_side_effect
from .module import Computation, Instruction, Module

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


class NameUniquer:
    """XLA's NameUniquer with separator '.': `add`, `add.1`, `add.2` (module-wide).

    A name made by the counter (`root.N`, N below the root's next number) is known to
    be used without being stored: fusion renames its parameters millions of times on
    large modules, and a set of every name ever handed out would hold them all."""

    def __init__(self, module: Module | None = None):
        self._used: set[str] = set()       # used names the counters do not account for
        self._next: dict[str, int] = {}
        # asked name -> (safe name, root, its number when canonical `root.N`, else 0)
        self._clean: dict[str, tuple[str, str, int]] = {}
        if module is not None:
            for comp in module.computations:
                self._used.add(comp.name)
                for inst in comp.instructions:
                    self._used.add(inst.name)

    def unique(self, name: str) -> str:
        known = self._clean.get(name)
        if known is None:
            asked = name
            if _UNSAFE.search(name):
                name = _UNSAFE.sub("_", name)
            name = name or "_"
            if name[0].isdigit():
                name = "_" + name
            # `root.N` (root, N); no regex: the name is ASCII by now
            root, dot, digits = name.rpartition(".")
            if dot and digits.isdigit():
                known = (name, root, int(digits) if digits[0] != "0" else 0)
            else:
                known = (name, name, 0)
            if len(self._clean) > 4096:     # most names are asked once: keep it small
                self._clean.clear()
            self._clean[asked] = known
        name, root, number = known
        used = self._used
        if name not in used and not 0 < number < self._next.get(root, 1):
            used.add(name)
            return name
        n = self._next.get(root, 1)
        out = f"{root}.{n}"
        while out in used:
            n += 1
            out = f"{root}.{n}"
        self._next[root] = n + 1
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
                    after: Instruction | None = None, literal=None,
                    like: Instruction | None = None) -> Instruction:
    """Create an instruction and insert it (before `before` or after `after`, else at
    the end, its first user not being known yet; callers that replace an instruction
    pass `before`).
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
    comp.add_instruction(inst, before=before, after=after)
    return inst


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


def add_parameter(comp: Computation, shape, number: int, name: str,
                  attrs=None) -> Instruction:
    """A new parameter(number) of comp (kept in its parameters list), placed after the
    existing parameters."""
    module = comp.parent
    inst = Instruction(uniquer(module).unique(name) if module is not None else name,
                       REGISTRY["parameter"], shape, (), dict(attrs or {}))
    inst.parameter_number = number
    first = next((i for i in comp.instructions if i.opcode != "parameter"), None)
    comp.add_instruction(inst, before=first)
    return inst
