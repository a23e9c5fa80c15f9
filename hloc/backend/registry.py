"""How the back end attaches itself to the op registry: `@emits` and `@emits_kernel`.

`@emits(*opcodes)` registers an *element generator* `fn(kb, inst, operands, index) -> value`
(operands are generators `g(index) -> value`; the value is a compute value, or a list of
them for a tuple-shaped result). `@emits_kernel(*opcodes)` registers a *kernel emitter*
`fn(kb, inst, operands, outputs)` for ops that are not elemental (scatter, sort ...): it
writes whole output buffers itself. Both store an `Emitter` record in `OpDef.emit` — the
one place an op's code generation lives (twin of hloc.interp.core's `@evaluates`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ops import REGISTRY

ELEMENTAL = "elemental"
KERNEL = "kernel"


@dataclass(frozen=True)
class Emitter:
    kind: str          # ELEMENTAL or KERNEL
    fn: Callable


def _register(kind: str, opcodes):
    def register(fn):
        for op in opcodes:
            opdef = REGISTRY.get(op)
            if opdef is None:      # an opcode this XLA version lacks
                continue
            if opdef.emit is not None:
                raise ValueError(f"code generation for {op} registered twice")
            opdef.emit = Emitter(kind, fn)
        return fn
    return register


def emits(*opcodes):
    """Decorator: `fn(kb, inst, operands, index) -> value` generates the ops' elements."""
    return _register(ELEMENTAL, opcodes)


def emits_kernel(*opcodes):
    """Decorator: `fn(kb, inst, operands, outputs)` emits the ops' whole kernels."""
    return _register(KERNEL, opcodes)
