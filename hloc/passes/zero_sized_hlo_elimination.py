"""`zero_sized_hlo_elimination` (ZeroSizedHloElimination, zero_sized_hlo_elimination.cc).

In every non-fusion computation, XLA replaces each instruction whose result is a
static array with zero elements by a constant of that shape (`f32[0,3] constant({ })`),
unless it is a constant already, has a side effect (itself or in what it calls), has
control edges or is a parameter. The constant is a new instruction named `constant`
(uniquified); the replaced instruction's metadata moves to it and the instruction and
any operands it leaves dead are removed. Implemented in full.
"""
from __future__ import annotations

import numpy as np

from ..ir.literal import literal_from_array
from ..ir.module import Module
from ..ir.rewriter import add_instruction
from ..ir.shape import ArrayShape, array
from . import register
from .base import Pass
from ..ir.graph import Removal, fusion_computations, post_order, replace_instruction
from ..ir.rewriter import has_side_effect


@register
class ZeroSizedHloElimination(Pass):
    name = "zero_sized_hlo_elimination"

    def run(self, module: Module, ctx) -> bool:
        fused = fusion_computations(module)
        memo: dict = {}
        changed = False
        for comp in list(module.computations):
            if comp in fused or not any(0 in getattr(i.shape, "dims", (1,))
                                        for i in comp.instructions):
                continue                # nothing zero-sized: skip the post order
            editor = Removal(comp)
            for inst in post_order(comp):
                shape = inst.shape
                if not editor.alive(inst) or inst.opcode == "constant" or \
                        not isinstance(shape, ArrayShape) or not shape.dtype.is_array or \
                        shape.size != 0 or any(shape.dynamic):
                    continue
                if not editor.safely_removable(inst) or has_side_effect(inst, memo):
                    continue
                if shape.layout is None:
                    shape = array(shape.dtype, shape.dims)
                value = np.zeros(shape.dims, dtype=shape.dtype.np)
                constant = add_instruction(comp, "constant", shape, before=inst,
                                           literal=literal_from_array(shape, value))
                replace_instruction(inst, constant, editor, memo=memo)
                changed = True
            editor.flush()
        return changed
