"""Plain syntax records the grammar produces, before names are resolved.

Positions are character offsets into the source text; the builder turns them into
line:column only when it reports an error.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class OperandRec:
    kind: str                  # "name" | "nested" | "int"
    pos: int
    name: str | None = None
    shape: object = None       # declared operand shape (old long form) or None
    shape_pos: int = 0
    nested: "InstrRec | None" = None
    value: int = 0


@dataclass(slots=True)
class InstrRec:
    root: bool
    name: str
    pos: int
    shape: object              # Shape or None when omitted
    shape_pos: int
    opcode: str
    opcode_pos: int
    operands: list             # list[OperandRec]
    literal: tuple | None      # (text, pos) for constant(...)
    attrs: list                # [(name, value_text, value_pos)]
    end: int = 0
    # Fast path: operands given as bare names (operands == []); positions are found in
    # the argument text (at args_pos) only when an error needs one.
    operand_names: list | None = None
    args_pos: int = 0


@dataclass(slots=True)
class CompRec:
    is_entry: bool
    name: str
    pos: int
    params: list | None        # [(name, shape, pos)] from the signature, or None
    result: object             # signature result shape or None
    instrs: list
    attrs: list
    end: int = 0


@dataclass(slots=True)
class ModuleRec:
    name: str | None
    name_pos: int
    attrs: list
    stack_index: list | None   # [(section, [(id, text, pos)])]
    comps: list = field(default_factory=list)
