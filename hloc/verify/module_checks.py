"""Module-wide metadata checks: original values and (optionally) unchanged names.

VerifyOriginalValue: an `origin=` original value's leaves all name a value (`{}` is an
empty leaf). VerifyInstructionNameUnchanged (an option): an instruction whose metadata
carries a scheduling_name still has that name, unless it was cloned (`.clone`) or
rematerialized (`.remat`).
"""
from __future__ import annotations

from .core import check
from .shapes import describe
from .text_attrs import metadata_field_scheduling_name, original_value_has_empty_leaf


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
