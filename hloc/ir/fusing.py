"""A fusion instruction's own edit: cloning an instruction into its fused computation
(HloCallableInstruction::CloneAndAppendInstructionIntoCalledComputation).

`clone_into_fusion` replaces the fused parameter of the producer (if it is an operand)
by a clone of the producer whose operands are fused parameters, new ones appended as
XLA appends them, and re-creates the parameters after the removed one as XLA does: each
gets its new number and a new unique `param_<number>` name. Names are asked of the
module's NameUniquer in XLA's order (the clone's, the shifted parameters', the new
parameters'), so they come out as XLA's do.

It is one edit on the lists, not the generic edits it amounts to (clone,
replace_all_uses_with, remove_parameter, remove_operand, renumbering, append_operand):
the fusion pass makes one per instruction it fuses (37k on a 28k-line module) and the
generic edits cost a few calls each. It leaves what they leave, including the order of
users lists and of the stored instruction list, and records the same changes
(hloc.ir.changes). A fused parameter with control edges, used by a fusion or used as the
root goes through the generic edits.
"""
from __future__ import annotations

from ..ops import REGISTRY
from .changes import touch
from .module import Instruction
from .rewriter import uniquer

_PARAMETER = REGISTRY["parameter"]
_PARAM_NAMES = [f"param_{n}" for n in range(1024)]


def param_name(number: int) -> str:
    """`param_<number>`, the name XLA gives a fused parameter before uniquing."""
    return _PARAM_NAMES[number] if number < 1024 else f"param_{number}"


def operand_parameter(fusion: Instruction, operand: Instruction) -> Instruction:
    """The fused parameter for `operand`, adding an operand/parameter pair if needed."""
    comp = fusion.attrs["calls"]
    ops = fusion.operands
    if operand in ops:                      # identity: instructions have no __eq__
        return comp.parameters[ops.index(operand)]
    number = len(ops)
    param = Instruction(uniquer(comp.parent).unique(param_name(number)), _PARAMETER,
                        operand.shape)
    param.parameter_number = number
    comp.add_instruction(param)
    fusion.append_operand(operand)
    return param


def clone_into_fusion(fusion: Instruction, producer: Instruction,
                      slot: int | None = None) -> Instruction:
    """Clone `producer` into `fusion`'s computation in place of its parameter and return
    the clone; `slot`, when the caller knows it, is producer's operand number (else it
    is looked for; a producer that is not an operand is cloned in without replacing a
    parameter)."""
    comp = fusion.attrs["calls"]
    unique = uniquer(comp.parent).unique
    name = unique(producer.name)
    ops = fusion.operands
    params = comp.parameters
    k = slot if slot is not None and slot < len(ops) and ops[slot] is producer else \
        next((n for n, o in enumerate(ops) if o is producer), None)
    if k is not None:                       # names of the re-created parameters
        renamed = [unique(param_name(n)) for n in range(k, len(params) - 1)]
        number = len(ops) - 1               # the first new parameter's number
    else:
        number = len(ops)
    operands = []
    new = None                              # [(operand, its new parameter)]
    for operand in producer.operands:
        if operand in ops:                  # already an operand (never the producer)
            operands.append(params[ops.index(operand)])
            continue
        if new is None:
            new = []
        else:
            param = None
            for o, p in new:
                if o is operand:            # the producer reads it twice
                    param = p
            if param is not None:
                operands.append(param)
                continue
        param = Instruction(unique(param_name(number)), _PARAMETER, operand.shape)
        param._parameter_number = number    # (in no computation yet: nothing to record)
        number += 1
        new.append((operand, param))
        operands.append(param)
    # The clone with its operands: users lists and change records as append_operand's.
    clone = Instruction(name, producer.opdef, producer.shape, operands, dict(producer.attrs),
                        loc=producer.loc)
    clone.literal = producer.literal
    before = None
    if producer.opcode == "parameter":      # as clone_instruction places one
        clone.parameter_number = producer.parameter_number
        before = next((i for i in comp.instructions if i.opcode != "parameter"), None)
    comp.add_instruction(clone, before=before)
    changed = [clone]                       # what the generic edits record in comp
    outer = []                              # ... and in fusion's computation
    if k is not None:
        old = params[k]
        users = old.users
        plain = not (old.control_predecessors or old.control_successors or comp.root is old)
        for user in users:
            if user.opcode == "fusion":     # its operands get deduplicated
                plain = False
        if not plain:
            old.replace_all_uses_with(clone)
            comp.remove_instruction(old)
        else:                               # replace_all_uses_with + remove_instruction
            for user in users:              # (a new clone is no operand of them yet)
                uops = user.operands
                for i, op in enumerate(uops):
                    if op is old:
                        uops[i] = clone
            clone.users.extend(users)
            changed += users
            old.users = []
            comp._gone.add(old)
            comp._changed.discard(old)
            old.parent = None
        del params[k]
        ops.pop(k)                          # fusion.remove_operand(k)
        if producer not in ops:
            producer.users.remove(fusion)
        outer.append(producer)
        for n in range(k, len(params)):     # XLA re-creates the shifted parameters
            param = params[n]
            param._parameter_number = n
            param.name = renamed[n - k]
            changed.append(param)
            changed += param.users
    if new is not None:
        insts = comp._insts                 # appended as add_instruction appends
        for operand, param in new:          # add_instruction + fusion.append_operand
            param.parent = comp
            insts.append(param)
            params.append(param)
            changed.append(param)
            ops.append(operand)
            operand.users.append(fusion)    # not an operand before: not a user either
            outer.append(operand)
    comp.generation += 1
    if not comp._changed_all:
        comp._changed.update(changed)
    if outer:
        outer.append(fusion)
        for inst in outer:
            touch(inst)
    return clone
