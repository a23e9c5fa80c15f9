"""How the back end attaches itself to the op registry: `@emits` and `@emits_kernel`.

`@emits(*opcodes)` registers an *element generator* `fn(kb, inst, operands, index) -> value`
(operands are generators `g(index) -> value`; the value is a compute value, or a list of
them for a tuple-shaped result). `@emits_kernel(*opcodes)` registers a *kernel emitter*
`fn(kb, inst, operands, outputs)` for ops that are not elemental (scatter, sort ...): it
writes whole output buffers itself. `@emits_semantic(*keys)` registers an element
generator for every elementwise row whose semantic key (OpDef.semantic) is one of `keys`.
All three are facets of the registry (hloc.ops.facets, kinds "emit" and "emit_kernel"),
the twins of hloc.interp's `@evaluates`; `emitter(opdef)` is what code generation reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..ops import REGISTRY, facets

ELEMENTAL = "elemental"
KERNEL = "kernel"

facets.declare("emit_kernel")
# Whether an op's element generator computes on vectors of positions (an Index with
# `lanes`, hloc.backend.row_vector): `pred(inst) -> bool`, per opcode or semantic key.
facets.declare("lanes")


@dataclass(frozen=True)
class Emitter:
    kind: str          # ELEMENTAL or KERNEL
    fn: Callable


def _known(opcodes):
    # An opcode this XLA version lacks is skipped.
    return [op for op in opcodes if op in REGISTRY]


def emits(*opcodes):
    """Decorator: `fn(kb, inst, operands, index) -> value` generates the ops' elements."""
    def register(fn):
        return facets.attach("emit", fn, *_known(opcodes))
    return register


def emits_semantic(*keys):
    """Decorator: the element generator of every elementwise row with one of `keys`."""
    def register(fn):
        return facets.attach_semantic("emit", fn, *keys)
    return register


def emits_kernel(*opcodes):
    """Decorator: `fn(kb, inst, operands, outputs)` emits the ops' whole kernels."""
    def register(fn):
        return facets.attach("emit_kernel", fn, *_known(opcodes))
    return register


def vectorises(pred, *opcodes):
    """`pred(inst)`: the element generator of `inst` (one of `opcodes`) takes an Index
    with `lanes` and then returns <lanes x T> values (hloc.backend.row_vector)."""
    return facets.attach("lanes", pred, *_known(opcodes))


def vectorises_semantic(pred, *keys):
    """As vectorises, for the elementwise rows with one of `keys`."""
    return facets.attach_semantic("lanes", pred, *keys)


def takes_vectors(inst) -> bool:
    """Whether `inst`'s element generator computes on vectors of positions."""
    pred = facets.get("lanes", inst.opcode)
    return pred is not None and bool(pred(inst))


def emitter(opdef) -> Emitter | None:
    """The op's code generation: its element generator, else its kernel emitter."""
    fn = facets.get("emit", opdef.name)
    if fn is not None:
        return Emitter(ELEMENTAL, fn)
    fn = facets.get("emit_kernel", opdef.name)
    return Emitter(KERNEL, fn) if fn is not None else None
