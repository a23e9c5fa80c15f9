"""Building fusions as XLA does, shared by the `fusion` and `fusion-wrapper` passes.

`create_fusion` makes a fusion instruction whose computation holds a clone of the
consumer (HloInstruction::CreateFusion), `fuse_producer` clones a producer into it in
place of the producer's parameter (CloneAndAppendInstructionIntoCalledComputation,
with XLA's re-creation of the shifted `param_<i>` parameters, so the numbering matches
XLA's), `replace_with_fusion` puts the fusion in the consumer's place. `StorageOrder`
and `computation_post_order` give modules the order XLA prints them in (callees before
callers; instructions of unscheduled computations in MakeInstructionPostOrder order),
and `fusible_computations` the computations InstructionFusion visits.
"""
from __future__ import annotations

from ...ir.module import Computation, Instruction, Module
from ...ir.graph import callers, computation_post_order, post_order, replace_instruction
from ...ir.clone import clone_instruction
from ...ir.fusing import clone_into_fusion, operand_parameter
from ...ir.rewriter import uniquer
from ...ops import CALL_EMBEDDED, REGISTRY, call_context


# ---------------------------------------------------------------------------
# Building fusion instructions (HloFusionInstruction / HloCallableInstruction)

def _clone(inst: Instruction, comp: Computation) -> Instruction:
    """A copy of `inst` (same name, made unique) without operands, added to `comp`."""
    return clone_instruction(inst, comp, ())



def create_fusion(consumer: Instruction, kind: str, name: str,
                  computation_name: str = "fused_computation") -> Instruction:
    """A fusion instruction computing `consumer` (which it does not replace yet), placed
    before it when the module is scheduled, else last (the pass sorts afterwards)."""
    comp = consumer.parent
    module = comp.parent
    fused = Computation(uniquer(module).unique(computation_name))
    fused.is_fusion_computation = True
    fused.execution_thread = comp.execution_thread
    module.add_computation(fused)
    attrs = {"kind": kind, "calls": fused}
    for key in ("metadata", "frontend_attributes"):
        if key in consumer.attrs:
            attrs[key] = consumer.attrs[key]
    fusion = Instruction(uniquer(module).unique(name), REGISTRY["fusion"], consumer.shape,
                         (), attrs)
    root = _clone(consumer, fused)
    for operand in consumer.operands:
        root.append_operand(operand_parameter(fusion, operand))
    fused.set_root_instruction(root)
    comp.add_instruction(fusion, before=consumer if module.is_scheduled() else None)
    return fusion


def replace_with_fusion(consumer: Instruction, fusion: Instruction) -> None:
    """ReplaceInstruction(consumer, fusion), moving the consumer's control edges to the
    fusion (which reads all of the consumer's operands: none of them becomes dead)."""
    consumer.move_control_deps_to(fusion)
    replace_instruction(consumer, fusion, operands_stay_used=True)


# fuse_producer(fusion, producer, slot=None): clone `producer` into `fusion`'s
# computation in place of its parameter (hloc.ir.fusing; `slot`, when the caller knows
# it, is producer's operand number: wide fusions need no scan). A producer that is not
# an operand (a new output of a multi-output fusion, multi_output.py) is cloned in
# without replacing a parameter.
fuse_producer = clone_into_fusion


# ---------------------------------------------------------------------------
# Orders as XLA keeps them

class StorageOrder:
    """XLA's instruction storage order for the computations a pass touches: the
    instructions there were, then the ones added (in creation order)."""

    def __init__(self):
        self._before: dict[int, list] = {}
        self._added: dict[int, list] = {}
        self.comps: list[Computation] = []
        self.fused: dict[int, Computation] = {}

    def note(self, comp: Computation) -> None:
        if id(comp) not in self._before:
            self._before[id(comp)] = list(comp.instructions)
            self._added[id(comp)] = []
            self.comps.append(comp)

    def added(self, comp: Computation, inst: Instruction) -> None:
        self.note(comp)
        self._added[id(comp)].append(inst)

    def fused_changed(self, comp: Computation) -> None:
        self.fused[id(comp)] = comp

    def of(self, comp: Computation) -> list:
        if id(comp) not in self._before:
            return comp.instructions
        return [i for i in self._before[id(comp)] + self._added[id(comp)]
                if i.parent is comp]

    def finish(self, module: Module, called=None) -> None:
        """Put the module's computations (and, when it is not scheduled, the touched
        computations' instructions) in the order XLA would print them. `called`, when
        the caller knows it, holds every computation some instruction calls."""
        storage = {id(c): self.of(c) for c in self.comps}
        module.set_computation_order(computation_post_order(
            module, lambda c: storage.get(id(c)) or c.instructions, callers_of=called))
        for comp in self.fused.values():
            comp.set_instruction_order(post_order(comp), check=False)
        if module.is_scheduled():
            return
        for comp in self.comps:
            comp.set_instruction_order(post_order(comp, storage[id(comp)]))


def fusible_computations(module: Module, calls: dict | None = None) -> list[Computation]:
    """Non-fusion computations that are not embedded bodies: InstructionFusion skips a
    computation whose first caller calls it in context kEmbedded (IsEmbeddedComputation;
    e.g. reduce, map, sort, scatter, scan, all-reduce, custom-call), as XLA does.
    `calls`: callers(module), when the caller has it."""
    if calls is None:
        calls = callers(module)     # computation -> calling instructions, once per call
    out = []
    for comp in computation_post_order(module, callers_of=calls):
        first = calls.get(comp)
        if comp.is_fusion_computation or (first and first[0].opcode == "fusion"):
            comp.is_fusion_computation = True
            continue
        if first and call_context(first[0].opdef) == CALL_EMBEDDED:
            continue
        out.append(comp)
    return out
