"""clone_into_fusion (hloc.ir.fusing) makes in one edit what the generic IR edits make
(clone_instruction, replace_all_uses_with, remove_parameter, remove_operand, the shifted
parameters' renumbering and renaming, operand_parameter): the fusion passes run with
either leave the same text, the same users lists (in order) and the same change records
for the verifier."""
from __future__ import annotations

from pathlib import Path

import pytest

import hloc
from hloc.ir.clone import clone_instruction
from hloc.ir.fusing import operand_parameter, param_name
from hloc.ir.rewriter import uniquer
from hloc.passes.base import PassContext
from hloc.passes.fusion import CpuMultiOutputFusion, InstructionFusion
from hloc.passes.fusion import instruction_fusion, multi_output
from hloc.printer import module_to_text

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ["bert_train_step", "cnn_train_step", "logsumexp_softmax", "scan_rnn",
         "scatter_ops", "many_outputs", "nested_control_flow", "tf_variable_update",
         "random_threefry"]


def generic_fuse(fusion, producer, slot=None):
    """CloneAndAppendInstructionIntoCalledComputation through the generic edits."""
    comp = fusion.attrs["calls"]
    clone = clone_instruction(producer, comp, ())
    ops = fusion.operands
    k = slot if slot is not None and slot < len(ops) and ops[slot] is producer else \
        next((n for n, o in enumerate(ops) if o is producer), None)
    if k is not None:
        comp.parameters[k].replace_all_uses_with(clone)
        comp.remove_parameter(k, renumber=False)
        fusion.remove_operand(k)
        unique = uniquer(comp.parent).unique
        for n in range(k, len(comp.parameters)):
            param = comp.parameters[n]
            param.parameter_number = n
            param.name = unique(param_name(n))
    for operand in producer.operands:
        clone.append_operand(operand_parameter(fusion, operand))
    return clone


def _fused(text: str, passes) -> tuple:
    module = hloc.parse(text, "t.hlo")
    changes = []
    for p in [None] + passes:       # changes taken after each pass, as the verifier does
        if p is not None:
            p.run(module, PassContext())
        for comp in module.computations:
            every, insts = comp.take_changes()
            changes.append((comp.name, every, sorted(i.name for i in insts)))
    users = {(c.name, i.name): [u.name for u in i.users]
             for c in module.computations for i in c.instructions}
    return module_to_text(module), users, changes


def _dumps():
    out = []
    for name in DUMPS:
        path = ROOT / "testdata" / "dumps" / f"{name}.before_optimizations.hlo"
        if path.exists():
            out.append(path)
    assert len(out) == len(DUMPS)   # guard: the dumps the test is about are there
    return out


@pytest.mark.parametrize("path", _dumps(), ids=lambda p: p.name.split(".")[0])
@pytest.mark.parametrize("siblings", [False, True])
def test_clone_into_fusion_equals_the_generic_edits(path, siblings, monkeypatch):
    text = path.read_text()

    def passes():
        if siblings:
            return [InstructionFusion(may_duplicate=False), CpuMultiOutputFusion()]
        return [InstructionFusion()]

    fast = _fused(text, passes())
    monkeypatch.setattr(instruction_fusion, "fuse_producer", generic_fuse)
    monkeypatch.setattr(multi_output, "fuse_producer", generic_fuse)
    slow = _fused(text, passes())
    assert fast[0] == slow[0]
    assert fast[1] == slow[1]
    assert fast[2] == slow[2]
    assert "fusion(" in fast[0]     # the passes did fuse
