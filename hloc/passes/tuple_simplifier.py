"""`tuple-simplifier` (TupleSimplifier, xla/hlo/transforms/simplifiers/tuple_simplifier.cc).

XLA walks every computation in post order and makes two rewrites: a chain of
get-tuple-elements that reaches through tuple instructions becomes the element itself
(`gte(gte(tuple(tuple(a, b), c), 0), 1)` => `b`), and `tuple(gte(x, 0), ..., gte(x,
n-1))` becomes `x` when x's shape is compatible with the tuple's. A replacement is
refused when both instructions carry different shardings. Control edges of a replaced
instruction are relayed as XLA does (its predecessors to its users, or to its control
successors when it has no users; its successors to the replacement). The replaced
instruction and any operands it leaves dead are removed. Implemented in full, except the
`exclude_entry_computation` option.
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from . import register
from .base import Pass
from ..ir.graph import Removal, post_order, relay_control_deps, replace_instruction


@register
class TupleSimplifier(Pass):
    name = "tuple-simplifier"

    def run(self, module: Module, ctx) -> bool:
        changed = False
        memo: dict = {}
        for comp in list(module.computations):
            changed |= _simplify(comp, memo)
        return changed


def _simplify(comp: Computation, memo: dict) -> bool:
    # Nothing to simplify now (every later round of a fixed point): nothing changes
    # during the walk either, so skip the post order.
    if not any(_replacement(i) is not None for i in comp.instructions):
        return False
    editor = Removal(comp)
    changed = False
    for inst in post_order(comp):
        if not editor.alive(inst):
            continue
        replacement = _replacement(inst)
        if replacement is None:
            continue
        if "sharding" in inst.attrs and "sharding" in replacement.attrs and \
                inst.attrs["sharding"] != replacement.attrs["sharding"]:
            continue
        relay_control_deps(inst, replacement, editor)
        changed |= replace_instruction(inst, replacement, editor, preserve_sharding=True,
                                       memo=memo)
    editor.flush()
    return changed


def _replacement(inst: Instruction) -> Instruction | None:
    if inst.opcode == "tuple":
        return _whole_tuple_source(inst)
    if inst.opcode == "get-tuple-element":
        return _element(inst)
    return None


def _whole_tuple_source(tup: Instruction) -> Instruction | None:
    """x when tup is tuple(gte(x, 0), ..., gte(x, n-1)) and x's shape is compatible."""
    source = None
    for i, op in enumerate(tup.operands):
        if op.opcode != "get-tuple-element" or op.attrs.get("index") != i:
            return None
        if source is None:
            source = op.operands[0]
            if not source.shape.compatible(tup.shape):
                return None
        elif op.operands[0] is not source:
            return None
    return source


def _element(gte: Instruction) -> Instruction | None:
    """LatestNonGteAncestorAndIndex, then down through tuple instructions."""
    path = []
    node = gte
    while node.opcode == "get-tuple-element":
        path.append(node.attrs.get("index"))
        node = node.operands[0]
    for index in reversed(path):
        if node.opcode != "tuple":
            return None
        node = node.operands[index]
    return node

