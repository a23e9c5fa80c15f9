"""reshape-mover: XLA's ReshapeMover, sinking reshapes and transposes below elementwise ops.

An elementwise instruction is a candidate when one of its operands is a reshape or
transpose ("rearrange") that is not trivial, every other rearrange operand is an
equivalent one, and every remaining operand can be rearranged for free: a constant, an
rng with one user, or a broadcast with sorted dimensions that a transpose keeps in
order (or, for a reshape, a broadcast of a scalar; XLA:CPU leaves
reshape_of_1d_broadcast_is_cheap off). Candidates whose rearrange operands have users
outside the candidate set are dropped until the set is stable; then each candidate
becomes rearrange(op(inverse-rearranged operands)). The inverse rearranges this puts
on constants, broadcasts and the old rearranges are left for algsimp and constant
folding, as in XLA.
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from ..ops import REGISTRY
from . import PassContext, register
from .algsimp.rules import inverse_permutation
from .base import Pass
from ..ir.graph import remove_instruction_and_unused_operands
from .simplify_util import Builder

_REARRANGE = ("reshape", "transpose")


def _dims(inst):
    return tuple(inst.attrs.get("dimensions", ()))


def _is_identity(perm) -> bool:
    return list(perm) == list(range(len(perm)))


def _equivalent(a: Instruction, b: Instruction) -> bool:
    """AreEquivalentRearranges."""
    if a.opcode != b.opcode or a.shape.dims != b.shape.dims:
        return False
    if a.opcode == "transpose":
        return _dims(a) == _dims(b)
    return a.operands[0].shape.dims == b.operands[0].shape.dims


def _trivial(instr: Instruction, rearrange: Instruction) -> bool:
    """CanTriviallyRearrange(instr, rearrange)."""
    if rearrange.opcode == "reshape" and rearrange.shape == rearrange.operands[0].shape:
        return True
    if rearrange.opcode == "transpose" and _is_identity(_dims(rearrange)):
        return True
    if instr.opcode == "constant":
        return True
    if instr.opcode == "rng" and len(instr.users) == 1:
        return True
    if instr.opcode == "broadcast":
        bdims = list(_dims(instr))
        if bdims != sorted(bdims):
            return False
        if rearrange.opcode == "reshape":
            return instr.operands[0].shape.rank == 0
        perm = _dims(rearrange)
        new = [perm[d] for d in bdims]
        return new == sorted(new)
    return False


def _first_nontrivial(operands):
    for op in operands:
        if op.opcode in _REARRANGE and not _trivial(op.operands[0], op):
            return op
    return None


def _is_candidate(inst: Instruction) -> bool:
    if "elementwise" not in REGISTRY[inst.opcode].traits or not inst.operands:
        return False
    r = _first_nontrivial(inst.operands)
    if r is None:
        return False
    return all(_equivalent(op, r) if op.opcode in _REARRANGE else _trivial(op, r)
               for op in inst.operands)


def _inverse(b: Builder, rearrange: Instruction, operand: Instruction) -> Instruction:
    """ApplyInverseRearrange."""
    if rearrange.opcode == "reshape":
        new_shape = rearrange.operands[0].shape.with_dtype(operand.shape.dtype)
        if operand.shape == new_shape:
            return operand
        if operand.opcode == "reshape" and operand.operands[0].shape == new_shape:
            return operand.operands[0]
        return b.add("reshape", new_shape, [operand])
    perm = _dims(rearrange)
    if _is_identity(perm):
        return operand
    return b.transpose(operand, inverse_permutation(perm))


def _sink(comp: Computation, inst: Instruction) -> None:
    r = _first_nontrivial(inst.operands)
    b = Builder(comp, before=inst)
    operands = [_inverse(b, r, op) for op in inst.operands]
    attrs = {k: v for k, v in inst.attrs.items() if k != "sharding"}
    shape = r.operands[0].shape.with_dtype(inst.shape.dtype)
    new = b.add(inst.opcode, shape, operands, attrs, name=inst.name)
    if r.opcode == "reshape":
        out = b.add("reshape", inst.shape, [new])
    else:
        out = b.add("transpose", inst.shape, [new], {"dimensions": _dims(r)})
    if "metadata" in inst.attrs:
        out.set_attr("metadata", inst.attrs["metadata"])
    inst.replace_all_uses_with(out)
    remove_instruction_and_unused_operands(inst)


@register
class ReshapeMover(Pass):
    name = "reshape-mover"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        for comp in list(module.computations):
            if comp.is_fusion_computation:
                continue
            changed |= _run_computation(comp)
        return changed


def _run_computation(comp: Computation) -> bool:
    candidates = [i for i in comp.instructions
                  if not i.control_predecessors and _is_candidate(i)]
    chosen = {id(i) for i in candidates}
    removed = True
    while chosen and removed:
        removed = False
        rearranges = {}
        for inst in candidates:
            if id(inst) in chosen:
                for op in inst.operands:
                    if op.opcode in _REARRANGE:
                        rearranges[id(op)] = op
        for op in rearranges.values():
            if any(id(u) not in chosen for u in op.users):
                for u in op.users:
                    if id(u) in chosen:
                        chosen.discard(id(u))
                        removed = True
    if not chosen:
        return False
    for inst in candidates:
        if id(inst) in chosen:
            _sink(comp, inst)
    return True
