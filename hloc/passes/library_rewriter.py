"""`dot-library-rewriter`: XLA:CPU's LibraryRewriter with the YNNPACK matcher
(xla/backends/cpu/transforms/library_rewriter.cc), run in the `dot-library-passes`
pipeline after layout assignment and before instruction fusion, as jaxlib 0.10.2 runs it.

In each computation that is not a fusion or an embedded body, the dots, convolutions,
reduces and reduce-windows are visited in reverse post order; each one YNNPACK takes
(ynn_support.starts_fusion) and that no earlier fusion swallowed becomes a one-instruction
`%ynn_fusion = fusion(...), kind=kCustom, calls=%fused_computation`, backend_config
`{"outer_dimension_partitions":[],"fusion_config":{"kind":"__ynn_fusion"}}`. A reduction's
fusion then grows breadth first, repeatedly until nothing changes: upwards into operands
whose users are all in the fusion, downwards into the single user; every instruction it
takes must be supported (ynn_support.is_op_supported); a neighbouring YNN fusion is merged
whole (HloFusionInstruction::MergeFusionInstruction). Instruction fusion never fuses
into or out of these fusions, so they are kernels of their own, as in XLA:CPU.
"""
from __future__ import annotations

from collections import deque

from ..ir.clone import clone_instruction
from ..ir.fusing import operand_parameter
from ..ir.graph import post_order, replace_uses
from ..ir.module import Computation, Instruction, Module
from ..ir.rewriter import add_instruction
from ..ir.shape import array
from ..syntax.attr_kinds import Verbatim
from . import register
from .base import Pass, PassContext
from .fusion.build import (StorageOrder, create_fusion, fuse_producer, fusible_computations,
                           replace_with_fusion)
from .ynn_support import (STARTERS, YNN_FUSION_KIND, grows_fusion, is_op_supported,
                          is_ynn_fusion, library_output_dtype, starts_fusion)

BACKEND_CONFIG = ('{"outer_dimension_partitions":[],"fusion_config":{"kind":"%s"}}'
                  % YNN_FUSION_KIND)
UP, DOWN, BOTH = "up", "down", "both"


@register
class LibraryRewriter(Pass):
    name = "dot-library-rewriter"

    def run(self, module: Module, ctx: PassContext) -> bool:
        order = StorageOrder()
        changed = False
        for comp in fusible_computations(module):
            changed |= _Rewriter(comp, order).run()
        if changed:
            order.finish(module)
        return changed


class _Rewriter:
    """LibraryRewriter::ProcessComputation on one computation."""

    def __init__(self, comp: Computation, order: StorageOrder):
        self.comp = comp
        self.order = order
        self.fused: set = set()     # original instructions taken by some fusion

    def run(self) -> bool:
        starters = [i for i in reversed(post_order(self.comp)) if i.opcode in STARTERS]
        for centroid in starters:
            if centroid in self.fused or not starts_fusion(centroid):
                continue
            self.fused.add(centroid)
            self.order.note(self.comp)
            convert = _convert_if_necessary(centroid, library_output_dtype(centroid))
            if convert is not None:
                self.order.added(self.comp, convert)
            fusion = create_fusion(centroid, "kCustom", "ynn_fusion")
            fusion.set_attr("backend_config", Verbatim(BACKEND_CONFIG))
            self.order.added(self.comp, fusion)
            self.order.fused_changed(fusion.attrs["calls"])
            replace_with_fusion(centroid, fusion)
            if grows_fusion(centroid):
                changed = True
                while changed:
                    changed, fusion = self._fuse_neighbors(fusion)
        return bool(self.fused)

    def _candidates(self, fusion, inst, direction, frontier, visited) -> None:
        """AddFusionCandidates."""
        if direction in (UP, BOTH):
            for op in inst.operands:
                if op in self.fused or op in visited:
                    continue
                if all(u is fusion or u is inst or u in self.fused for u in op.users):
                    frontier.append((op, UP))
                    visited.add(op)
        if len(inst.users) != 1:
            return
        user = inst.users[0]
        if direction in (DOWN, BOTH) and user not in self.fused and user not in visited:
            frontier.append((user, DOWN))
            visited.add(user)

    def _fuse_neighbors(self, fusion: Instruction):
        frontier: deque = deque()
        visited = {fusion}
        self._candidates(fusion, fusion, BOTH, frontier, visited)
        changed = False
        while frontier:
            inst, direction = frontier.popleft()
            if is_ynn_fusion(inst):
                fusion = _merge(fusion, inst) if direction == UP else _merge(inst, fusion)
                changed = True
                continue
            if not is_op_supported(inst):
                continue
            self.fused.add(inst)
            self._candidates(fusion, inst, direction, frontier, visited)
            new = self._grow(fusion, inst, direction)
            _convert_if_necessary(new, library_output_dtype(inst))
            changed = True
        return changed, fusion

    def _grow(self, fusion: Instruction, inst: Instruction, direction: str) -> Instruction:
        self.order.fused_changed(fusion.attrs["calls"])
        if direction == UP:   # HloFusionInstruction::FuseInstruction
            new = fuse_producer(fusion, inst)
            if not inst.users:
                _remove(inst)
            return new
        return _fuse_consumer(fusion, inst)


def _remove(inst: Instruction) -> None:
    inst.safely_drop_all_control_deps()
    inst.parent.remove_instruction(inst)


def _fuse_consumer(fusion: Instruction, consumer: Instruction) -> Instruction:
    """FuseConsumerInstruction: `consumer` becomes the fused computation's new root and
    the fusion takes its place."""
    comp = fusion.attrs["calls"]
    old_root = comp.root
    operands = [old_root if o is fusion else operand_parameter(fusion, o)
                for o in consumer.operands]
    new_root = clone_instruction(consumer, comp, operands)
    comp.set_root_instruction(new_root)
    if str(fusion.shape) != str(consumer.shape):
        fusion.set_shape(consumer.shape)
    consumer.move_control_deps_to(fusion)
    consumer.replace_all_uses_with(fusion)
    _remove(consumer)
    return new_root


def _merge(into: Instruction, merged: Instruction) -> Instruction:
    """into.MergeFusionInstruction(merged): merged's fused instructions are put back in
    the computation, then fused into `into` in reverse post order."""
    comp = merged.parent
    inner = merged.attrs["calls"]
    mapping: dict = {}
    unfused = []
    for inst in post_order(inner):
        if inst.opcode == "parameter":
            mapping[inst] = merged.operands[inst.parameter_number]
            continue
        clone = clone_instruction(inst, comp, [mapping[o] for o in inst.operands])
        mapping[inst] = clone
        unfused.append(clone)
    merged.move_control_deps_to(into)
    merged.replace_all_uses_with(mapping[inner.root])
    _remove(merged)
    comp.parent.remove_computation(inner)
    for inst in reversed(unfused):
        fuse_producer(into, inst)
        _remove(inst)
    return into


def _convert_if_necessary(inst: Instruction, dtype: str) -> Instruction | None:
    """InsertConvertIfNecessary: `inst` computes `dtype` and a convert back to its type
    takes its place (returned; None when the type is already `dtype`)."""
    if inst.shape.dtype.name == dtype:
        return None
    comp = inst.parent
    shape = inst.shape
    users = list(inst.users)
    inst.set_shape(array(dtype, shape.dims, shape.layout))
    convert = add_instruction(comp, "convert", shape, [inst])
    replace_uses(inst, users, convert)
    return convert
