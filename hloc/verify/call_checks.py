"""Instructions that call computations: execution threads, composites, fusion, custom-call.

Threads (CheckCallableInstructionThreadName): call, while, conditional, fusion and
custom-call run their callees on the caller's execution thread, and so must everything
those call in turn (async ops may hop threads inside call/while/conditional bodies, not
inside fusions); `to_apply` computations too. Composite calls carry
frontend_attributes composite.name (non-empty), optional composite.attributes
(non-empty) and composite.version (a non-negative integer). Fusions and custom-calls
may alias outputs to operands only between valid indices of matching shapes; a
layout-constrained custom-call's operands match their constraints; a fused computation
never leaves a non-root instruction unused or its root used.
"""
from __future__ import annotations

import re

from ..ops import has_side_effect
from .core import check
from .shape_checks import shapes_same
from .shapes import Eq, compatible, describe, equal, index_text, subshape, unbuffered
from .text_attrs import frontend_attributes

_NON_NEGATIVE_INT = re.compile(r"[+]?\d+")


def _callable_thread_error(inst, ctx, skip_async: bool) -> str | None:
    parent_thread = ctx.thread(inst.parent)
    for comp in inst.called_computations():
        if ctx.thread(comp) != parent_thread:
            return (f"callable instruction {describe(inst)} expects parent computation thread "
                    f"name same as called computation's thread name ({parent_thread} vs "
                    f"{ctx.thread(comp)}).")
        err = ctx.nested_thread_error(comp, skip_async)
        if err:
            return f"{err}: {describe(inst)}"
    return None


@check("call", "while", "conditional")
def check_control_flow_threads(inst, ctx) -> None:
    err = _callable_thread_error(inst, ctx, skip_async=True)
    if err:
        ctx.fail(inst, err)


@check("fusion")
def check_fusion_threads(inst, ctx) -> None:
    err = _callable_thread_error(inst, ctx, skip_async=False)
    if err:
        ctx.fail(inst, err)


@check("custom-call")
def check_custom_call_threads(inst, ctx) -> None:
    if ctx.opts.verify_custom_call_nested_computation_thread_name:
        err = _callable_thread_error(inst, ctx, skip_async=True)
        if err:
            ctx.fail(inst, err)


@check(attr="to_apply")
def check_to_apply_thread(inst, ctx) -> None:
    comp = inst.attrs.get("to_apply") if inst.attrs else None
    if comp is not None and hasattr(comp, "instructions") and inst.parent is not None and \
            ctx.thread(comp) != ctx.thread(inst.parent):
        ctx.fail(inst, f"{inst.name} top_apply computation execution thread does not match "
                       f"({ctx.thread(comp)} vs {ctx.thread(inst.parent)})")


# ---------------------------------------------------------------------------
# composite calls

@check("call")
def check_composite(inst, ctx) -> None:
    if not inst.attrs.get("is_composite"):
        return
    fa = inst.attrs.get("frontend_attributes")
    if fa is None:
        ctx.fail(inst, f"A composite call op must have frontend attributes: {describe(inst)}")
        return
    attrs = frontend_attributes(fa.text)
    if attrs is None:
        return
    if not attrs.get("composite.name"):
        ctx.fail(inst, f"A composite call op must have frontend attributes with key "
                       f"composite.name whose value is non-empty: {describe(inst)}")
    elif "composite.attributes" in attrs and not attrs["composite.attributes"]:
        ctx.fail(inst, f"A composite call op must have frontend attributes with key "
                       f"composite.attributes whose value is default: {{}} or non-empty: "
                       f"{describe(inst)}")
    elif "composite.version" in attrs and \
            not _NON_NEGATIVE_INT.fullmatch(attrs["composite.version"].strip()):
        ctx.fail(inst, f"A composite call op must have frontend attributes with a "
                       f"composite.version whose value is a non-negative integer but got: "
                       f"{attrs['composite.version']}: {describe(inst)}")


# ---------------------------------------------------------------------------
# fusion and custom-call

def _check_aliasing(inst, ctx, same) -> None:
    for out_index, operand_no, operand_index in inst.attrs.get("output_to_operand_aliasing", ()):
        if not 0 <= operand_no < len(inst.operands):
            ctx.fail(inst, f"Invalid aliasing operand index {operand_no}: {describe(inst)}")
            return
        operand_sub = subshape(inst.operands[operand_no].shape, operand_index)
        out_sub = subshape(inst.shape, out_index)
        if operand_sub is None:
            ctx.fail(inst, f"Invalid aliasing operand shape index "
                           f"{index_text(operand_index)}: {describe(inst)}")
            return
        if out_sub is None:
            ctx.fail(inst, f"Invalid aliasing output shape index {index_text(out_index)}: "
                           f"{describe(inst)}")
            return
        if same is not None and not same(operand_sub, out_sub):
            ctx.fail(inst, f"Different aliasing shapes: {operand_sub} vs {out_sub}: "
                           f"{describe(inst)}")
            return


@check("custom-call")
def check_custom_call(inst, ctx) -> None:
    target = inst.attrs.get("custom_call_target")
    constraints = inst.attrs.get("operand_layout_constraints")
    if constraints is not None and target != "LayoutConstraint":
        if len(constraints) != len(inst.operands):
            ctx.fail(inst, f"custom-call has {len(inst.operands)} operands but "
                           f"{len(constraints)} operand layout constraints: {describe(inst)}")
        for operand, want in zip(inst.operands, constraints):
            if not compatible(operand.shape, want):
                ctx.fail(inst, f"{operand.shape} operand {want}: {describe(inst)}")
                return
    fa = inst.attrs.get("frontend_attributes")
    if fa is not None and "xla_skip_custom_call_alias_shape_check" in fa.text:
        same = None
    else:
        ignore_buffer = target in ("Pin", "Unpin")

        def same(a, b):
            if ignore_buffer:
                a, b = unbuffered(a), unbuffered(b)
            return equal(a, b) if ctx.opts.layout_sensitive else compatible(a, b)
    _check_aliasing(inst, ctx, same)


@check("fusion")
def check_fusion(inst, ctx) -> None:
    comp = inst.attrs.get("calls")
    if comp is None or comp.root is None:
        return
    nested = inst.parent in ctx.fused
    eq = Eq(tiles=True, memory_space=True) if nested else Eq()
    _check_aliasing(inst, ctx, lambda a, b: shapes_same(ctx, a, b, eq))
    root = comp.root
    if ctx.users(root):
        ctx.fail(inst, f"Root of {describe(inst)} may not have users.")
        return
    for fused in comp.instructions:
        if fused is not root and not fused.users and not has_side_effect(fused):
            ctx.fail(inst, f"Non-root instruction {fused.name} in {describe(inst)} must have "
                           f"users.")
            return
