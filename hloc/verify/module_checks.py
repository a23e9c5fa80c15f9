"""Module-wide checks: control edges, original values and (optionally) unchanged names.

Control edges: every control predecessor is an instruction of the same computation
(XLA keeps both directions of an edge, so a removed instruction cannot stay named in
one; hloc keeps predecessors only, so a pass that removes an instruction without
HloInstruction::SafelyDropAllControlDependencies leaves a dangling edge).

VerifyOriginalValue: an `origin=` original value's leaves all name a value (`{}` is an
empty leaf). VerifyInstructionNameUnchanged (an option): an instruction whose metadata
carries a scheduling_name still has that name, unless it was cloned (`.clone`) or
rematerialized (`.remat`).
"""
from __future__ import annotations

from .core import check, module_check
from .shapes import describe
from .text_attrs import metadata_field_scheduling_name, original_value_has_empty_leaf


@module_check("pre")
def check_control_edges(ctx) -> None:
    for comp, inst in ctx.with_control_predecessors():
        for pred in inst.control_predecessors:
            if pred.parent is not comp:
                ctx.fail(inst, f"control predecessor {pred.name} of {inst.name} is not "
                               f"an instruction of computation {comp.name}")


@check(attr="origin")
def check_original_value(inst, ctx) -> None:
    origin = inst.attrs.get("origin") if inst.attrs else None
    if origin is not None and original_value_has_empty_leaf(origin.text):
        ctx.fail(inst, f"Leaf nodes in an original value is expected to contain values. "
                       f"Instruction: {describe(inst)}.")


@check(option="verify_instruction_name_unchanged")
def check_instruction_name_unchanged(inst, ctx) -> None:
    if not ctx.opts.verify_instruction_name_unchanged or not inst.attrs:
        return
    metadata = inst.attrs.get("metadata")
    if metadata is None:
        return
    was = metadata_field_scheduling_name(metadata.text)
    if was and was != inst.name and ".remat" not in inst.name and ".clone" not in inst.name:
        ctx.fail(inst, f"Expected instruction name to remain the same. Was '{was}' is "
                       f"'{inst.name}'.")
