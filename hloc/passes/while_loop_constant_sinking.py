"""while-loop-constant-sinking (XLA's WhileLoopConstantSinking): uses of a loop-invariant
element (passed through unchanged by the body) whose init is a constant are replaced by
a copy of that constant inside the body (`<name>.sunk`) and the condition.
"""
from __future__ import annotations


from ..ir.clone import clone_instruction
from ..ir.module import Instruction, Module
from . import PassContext, register
from .base import Pass
from .while_loop_simplifier import _body, _cond, _gtes


@register
class WhileLoopConstantSinking(Pass):
    name = "while-loop-constant-sinking"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        comps = [c for c in module.computations if not c.is_fusion_computation]
        whiles = [i for c in reversed(comps) for i in c.instructions if i.opcode == "while"]
        for w in whiles:
            changed |= _sink_constants(w)
        return changed


def _sink_constants(w: Instruction) -> bool:
    init = w.operands[0]
    if init.opcode != "tuple":
        return False
    body, cond = _body(w), _cond(w)
    root = body.root
    if root.opcode != "tuple":
        return False
    changed = False
    cond_gtes: dict[int, list[Instruction]] = {}
    for g in _gtes(cond):
        cond_gtes.setdefault(g.attrs["index"], []).append(g)
    invariant = [g for g in _gtes(body) if root.operands[g.attrs["index"]] is g]
    for g in invariant:
        i = g.attrs["index"]
        value = init.operands[i]
        if value.opcode != "constant":
            continue
        if len(g.users) > 1:
            c = clone_instruction(value, body, [], name=f"{value.name}.sunk", before=g)
            for u in list(g.users):
                for k, o in enumerate(u.operands):
                    if o is g and not (u is root and k == i):
                        u.set_operand(k, c)
            changed = True
        for cg in cond_gtes.get(i, ()):
            if cg.users:
                c = clone_instruction(value, cond, [], name=f"{value.name}.sunk", before=cg)
                cg.replace_all_uses_with(c)
                changed = True
    return changed
