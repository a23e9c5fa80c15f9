"""constant_folding: XLA's HloConstantFolding (default level), on the reference interpreter.

An instruction is folded when at least one operand is a constant and every operand is
a constant, a broadcast of a constant or an iota (tuples looked through), it is not a
parameter, constant or tuple, and it is foldable: not a broadcast or iota (they would
only grow constants; algsimp keeps them), not fft or while, not an rng, after-all,
custom-call, collective, async or optimization barrier (here or in any computation it
calls), no side effects or control dependencies, not pad(broadcast, constant), and
neither the result nor the operands hold more than 45,000,000 elements. The value
comes from hloc.interp (XLA uses HloEvaluator); an instruction the interpreter cannot
evaluate is skipped, as TryEvaluate failing is in XLA. The new constant replaces the
instruction, which is removed with any operands left dead. Folded constants larger
than 10 elements print as `{...}` in XLA's dump style; printing them in full (so the
output can be run again) is PrintOptions(large_constants=True).
"""
from __future__ import annotations

from ..ir.literal import literal_from_array
from ..ir.module import Computation, Instruction, Module
from ..ir.graph import remove_instruction_and_unused_operands, stable_post_order
from ..ir.rewriter import add_instruction, has_side_effect
from ..ir.shape import ArrayShape
from ..ops.base import ASYNC, COLLECTIVE
from . import PassContext, register
from .base import Pass
from .simplify_util import NotConstant, evaluate

MAX_CONSTANT_ELEMENTS = 45 * 1000 * 1000   # kMaximumConstantSizeElements

# The pass's own policy, not op facts: never folded (besides async ops and collectives).
_NEVER = frozenset({"broadcast", "iota", "fft", "while", "rng", "rng-bit-generator",
                    "rng-get-and-update-state", "after-all", "custom-call", "bitcast",
                    "opt-barrier", "parameter-replication", "infeed", "outfeed", "send",
                    "recv", "send-done", "recv-done", "domain", "copy-start", "copy-done"})
_UNFOLDABLE_TRAITS = (ASYNC, COLLECTIVE)


def _elements(shape) -> int:
    return shape.size if isinstance(shape, ArrayShape) and shape.dtype.is_array else 0


def _any_constant(inst: Instruction) -> bool:
    """AnyOperandsConstant (tuples looked through)."""
    for op in inst.operands:
        if op.opcode == "constant" or (op.opcode == "tuple" and _any_constant(op)):
            return True
    return False


def _all_constantish(inst: Instruction) -> bool:
    """AllOperandsConstantOrBroadcastConstant (iota counts as a broadcast constant)."""
    for op in inst.operands:
        if op.opcode == "tuple":
            if not _all_constantish(op):
                return False
        elif not (op.opcode in ("constant", "iota") or
                  (op.opcode == "broadcast" and op.operands[0].opcode == "constant")):
            return False
    return True


class _Foldability:
    """IsFoldable with the per-computation cache XLA keeps."""

    def __init__(self):
        self.computations: dict[int, bool] = {}

    def instruction(self, inst: Instruction) -> bool:
        op = inst.opcode
        if op in _NEVER or any(t in inst.opdef.traits for t in _UNFOLDABLE_TRAITS):
            return False
        for comp in inst.called_computations():
            if not self.computation(comp):
                return False
        if has_side_effect(inst) or inst.has_control_dependencies():
            return False
        if op == "pad" and inst.operands[0].opcode == "broadcast" and \
                inst.operands[1].opcode == "constant":
            return False
        if isinstance(inst.shape, ArrayShape):
            if inst.shape.dynamic and any(inst.shape.dynamic):
                return False
            operands = sum(_elements(o.shape) for o in inst.operands)
            if max(_elements(inst.shape), operands) > MAX_CONSTANT_ELEMENTS:
                return False
        return True

    def computation(self, comp: Computation) -> bool:
        key = id(comp)
        if key not in self.computations:
            self.computations[key] = True          # recursion guard
            ok = all(self.instruction(i) for i in comp.instructions
                     if i.opcode != "parameter")
            self.computations[key] = ok
        return self.computations[key]


@register
class HloConstantFolding(Pass):
    name = "constant_folding"

    def run(self, module: Module, ctx: PassContext) -> bool:
        from ..interp import Interpreter
        interp = Interpreter(module)
        foldable = _Foldability()
        changed = False
        composites = _composite_bodies(module)
        for comp in list(module.computations):
            if comp.is_fusion_computation or id(comp) in composites:
                continue
            # Nothing foldable now (every later round of a fixed point): nothing changes
            # during the walk either, so no post order.
            if not any(_candidate(u, comp, foldable) for u in _constant_users(comp)):
                continue
            for inst in stable_post_order(comp):
                if not _candidate(inst, comp, foldable):
                    continue
                try:
                    value = evaluate(inst, interpreter=interp)
                except NotConstant:
                    continue
                literal = literal_from_array(inst.shape, value)
                new = add_instruction(comp, "constant", inst.shape, (), name="constant",
                                      before=inst, literal=literal)
                inst.replace_all_uses_with(new)
                remove_instruction_and_unused_operands(inst)
                changed = True
        return changed


def _candidate(inst: Instruction, comp: Computation, foldable: _Foldability) -> bool:
    """Whether `inst` is to be evaluated (all but the evaluation itself)."""
    if inst.parent is not comp or (not inst.users and inst is not comp.root):
        return False
    if inst.opcode in ("parameter", "constant", "tuple"):
        return False
    return _any_constant(inst) and _all_constantish(inst) and foldable.instruction(inst)


def _constant_users(comp: Computation):
    """Every instruction with a constant operand, or one through tuples (a superset of
    those _any_constant accepts)."""
    seen = set()
    for inst in comp.instructions:
        if inst.opcode != "constant":
            continue
        work = list(inst.users)
        while work:
            u = work.pop()
            if u in seen:
                continue
            seen.add(u)
            yield u
            if u.opcode == "tuple":
                work.extend(u.users)


def _composite_bodies(module: Module) -> set:
    """ids of computations called by composite calls (MakeNonFusionNonComposite...)."""
    out = set()
    for c in module.computations:
        for inst in c.instructions:
            if inst.opcode == "call" and inst.attrs.get("is_composite"):
                out.add(id(inst.attrs.get("to_apply")))
    return out
