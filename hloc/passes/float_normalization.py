"""float-normalization: XLA:CPU's FloatNormalization for the ops its later expanders expand.

XLA:CPU runs FloatNormalization (bf16 -> f32; each f8 type, f4e2m1fn -> f16;
f8e8m0fnu -> f32) before BatchNormExpander and LogisticExpander, so a narrow
batch-norm-* or logistic is expanded, and computed, in the wide type and rounded once
(jaxlib 0.10.2's after-optimizations dumps: bf16 batch norm in f32, f8 logistic in f16).
Like XLA, the pass changes the op's type in place: each narrow float operand gets a
convert to the wide type before it, and its users get a convert back (an array result)
or a tuple of converts of its get-tuple-elements (a tuple result; those converts carry
the op's metadata, as in XLA's dumps).

XLA runs one FloatNormalization per narrow type ("float-normalization-bf16", ...); this
one pass does them all (they touch disjoint ops). Only the ops of `OPCODES` are
normalised, the ops whose expansion would otherwise round each step in the narrow type;
every other narrow op stays as it is (hloc's back end computes it in a wider type and
rounds once, where XLA prints convert -> wide op -> convert), so hloc's printed module
differs from XLA's there.
"""
from __future__ import annotations

from ..ir.dtypes import DTYPES
from ..ir.graph import replace_uses
from ..ir.module import Instruction, Module
from ..ir.rewriter import add_instruction
from ..ir.shape import ArrayShape, TupleShape
from . import PassContext, register
from .base import Pass

# XLA:CPU's FloatNormalization instances (cpu_compiler.cc): low type -> the type it computes in.
WIDE = {"bf16": "f32", "f8e5m2": "f16", "f8e4m3": "f16", "f8e4m3fn": "f16",
        "f8e4m3b11fnuz": "f16", "f8e3m4": "f16", "f8e5m2fnuz": "f16", "f8e4m3fnuz": "f16",
        "f4e2m1fn": "f16", "f8e8m0fnu": "f32"}

# The ops XLA:CPU expands after normalising them (batchnorm_expander, logistic-expander).
OPCODES = ("batch-norm-training", "batch-norm-inference", "batch-norm-grad", "logistic")


def _wide(shape):
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_wide(s) for s in shape.elements))
    name = WIDE.get(shape.dtype.name)
    return shape if name is None else shape.with_dtype(DTYPES[name])


def _narrow(inst: Instruction) -> bool:
    shapes = [o.shape for o in inst.operands] + [inst.shape]
    return any(_wide(s) != s for s in shapes)


@register
class FloatNormalization(Pass):
    name = "float-normalization"

    def run(self, module: Module, ctx: PassContext) -> bool:
        insts = [i for c in module.computations if not c.is_fusion_computation
                 for i in c.instructions if i.opcode in OPCODES and _narrow(i)]
        for inst in insts:
            _normalize(inst)
        return bool(insts)


def _normalize(inst: Instruction) -> None:
    comp = inst.parent
    for i, op in enumerate(list(inst.operands)):
        if isinstance(op.shape, ArrayShape) and _wide(op.shape) != op.shape:
            inst.set_operand(i, add_instruction(comp, "convert", _wide(op.shape), [op],
                                                before=inst))
    narrow = inst.shape
    wide = _wide(narrow)
    if wide == narrow:
        return
    users = list(inst.users)
    inst.set_shape(wide)
    if isinstance(narrow, TupleShape):
        meta = {"metadata": inst.attrs["metadata"]} if "metadata" in inst.attrs else {}
        elems = []
        after = inst
        for k, s in enumerate(narrow.elements):
            gte = add_instruction(comp, "get-tuple-element", wide.elements[k], [inst],
                                  {"index": k}, after=after)
            after = gte if s == wide.elements[k] else add_instruction(
                comp, "convert", s, [gte], dict(meta), after=gte)
            elems.append(after)
        out = add_instruction(comp, "tuple", narrow, elems, after=after)
    else:
        out = add_instruction(comp, "convert", narrow, [inst], after=inst)
    replace_uses(inst, users, out)
