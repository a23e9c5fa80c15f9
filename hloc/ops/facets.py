"""Executor facets: what an executor attaches to an opcode, through one registration API.

An OpDef (hloc.ops.base) holds the facts about an opcode and is frozen; what an executor
knows how to do with it is a *facet* of a named kind, attached here: the interpreter's
`evaluate` (hloc.interp, `@evaluates(...)`), the compiled back end's emitters
(`@emits(...)`, and any further kinds it declares, e.g. whole-kernel emitters for
non-elemental ops). `declare(kind, required=...)` names a kind and the ops that must
have it (a predicate on the OpDef, derived from its traits); `registrar(kind)` makes the
decorator; `attach_semantic(kind, fn, key)` attaches by an elementwise row's semantic key
(OpDef.semantic), so a new row with a known key needs no executor edit; `get(kind,
opcode)` answers the executor; `missing(kind)` is what the
coverage tests assert empty. Attaching twice, or to an unknown opcode, is an error.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Callable

from .base import ELEMENTAL, REGISTRY, STRUCTURAL, OpDef

_TABLES: dict[str, dict[str, Callable]] = {}
_BY_SEMANTIC: dict[str, dict[str, Callable]] = {}     # kind -> semantic key -> facet
_REQUIRED: dict[str, Callable[[OpDef], bool]] = {}


def declare(kind: str, required: Callable[[OpDef], bool] | None = None) -> None:
    """Name a facet kind; `required(opdef)` says which ops must have it."""
    _TABLES.setdefault(kind, {})
    _BY_SEMANTIC.setdefault(kind, {})
    if required is not None:
        _REQUIRED[kind] = required


def attach(kind: str, fn: Callable, *opcodes: str) -> Callable:
    """Attach `fn` as the `kind` facet of each of `opcodes`."""
    if kind not in _TABLES:
        raise ValueError(f"unknown facet kind {kind!r} (declare it first)")
    table = _TABLES[kind]
    for op in opcodes:
        if op not in REGISTRY:
            raise ValueError(f"{kind} for unknown opcode {op!r}")
        if op in table:
            raise ValueError(f"{kind} for {op} registered twice")
        table[op] = fn
    return fn


def attach_semantic(kind: str, fn: Callable, *keys: str) -> Callable:
    """Attach `fn` as the `kind` facet of every elementwise row whose semantic key is one
    of `keys` (rows added later included); a facet attached to the opcode itself wins."""
    if kind not in _BY_SEMANTIC:
        raise ValueError(f"unknown facet kind {kind!r} (declare it first)")
    table_ = _BY_SEMANTIC[kind]
    for key in keys:
        if key in table_:
            raise ValueError(f"{kind} for semantic {key} registered twice")
        table_[key] = fn
    return fn


def registrar(kind: str):
    """The decorator for `kind`: `@deco("add", "subtract")` attaches the function."""
    declare(kind)

    def deco(*opcodes: str):
        def register(fn):
            return attach(kind, fn, *opcodes)
        return register
    deco.__name__ = f"attach_{kind}"
    return deco


def get(kind: str, opcode: str) -> Callable | None:
    """The `kind` facet of `opcode`: its own, else its semantic key's."""
    fn = _TABLES.get(kind, {}).get(opcode)
    if fn is None:
        op = REGISTRY.get(opcode)
        if op is not None and op.semantic is not None:
            fn = _BY_SEMANTIC.get(kind, {}).get(op.semantic)
    return fn


def table(kind: str):
    """opcode -> the facets attached to opcodes themselves (read-only), for executors'
    fast paths; fall back to `get` (semantic keys) on a miss."""
    return MappingProxyType(_TABLES.setdefault(kind, {}))


def kinds() -> list[str]:
    return sorted(_TABLES)


def missing(kind: str, *alternatives: str) -> list[str]:
    """Opcodes whose traits require the `kind` facet and that have neither it nor a facet
    of one of the `alternatives` kinds (e.g. a whole-kernel emitter for an elemental op)."""
    need = _REQUIRED.get(kind)
    if need is None:
        return []
    kinds_ = (kind, *alternatives)
    return sorted(name for name, op in REGISTRY.items()
                  if need(op) and all(get(k, name) is None for k in kinds_))


def _runnable(op: OpDef) -> bool:
    return op.unsupported is None and STRUCTURAL not in op.traits


# The interpreter evaluates every op that can run and that its walker does not move.
declare("evaluate", required=_runnable)
evaluates = registrar("evaluate")
# The compiled back end: an element generator for every ELEMENTAL op that can run.
declare("emit", required=lambda op: _runnable(op) and ELEMENTAL in op.traits)
emits = registrar("emit")
