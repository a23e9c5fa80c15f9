"""`dce` (HloDCE, xla/hlo/transforms/simplifiers/hlo_dce.cc): dead code elimination.

XLA visits the computations reachable from the entry (callers before callees) and, in
each, walks the instructions in reverse post order removing every dead one (no users,
not the root, no control edges, not a parameter, no side effect in it or in anything it
calls) together with the operands that die with it; computations no longer reachable
from the entry are then dropped. Implemented: all of that, including the
`xla_allow_dce_side_effecting_op` frontend attribute on custom-calls and async ops and
the rule that keeps `Sharding` custom-calls on parameters, roots or shared values.
Not implemented: the non-default modes (removing dead parameters through call-graph
analysis, dropping cross-partition collectives) and shrinking multi-output fusions
whose tuple outputs are partly unused.
"""
from __future__ import annotations

import re

from ..ir.module import Computation, Module
from . import register
from .base import Pass
from ..ir.graph import Removal, post_order
from ..ir.rewriter import has_side_effect
from ..ops.base import ASYNC, CALLS

_ALLOW_ATTR = re.compile(r'xla_allow_dce_side_effecting_op="(true|false)"')


@register
class HloDCE(Pass):
    name = "dce"

    def run(self, module: Module, ctx) -> bool:
        return run_dce(module)


def run_dce(module: Module) -> bool:
    if module.entry is None:
        return False
    memo: dict = {}
    changed = False
    reachable = {module.entry}
    agenda = [module.entry]
    while agenda:
        comp = agenda.pop()
        changed |= remove_dead_instructions(comp, memo)
        for inst in comp.instructions:
            if CALLS not in inst.opdef.traits:
                continue
            for callee in inst.called_computations():
                if callee not in reachable:
                    reachable.add(callee)
                    agenda.append(callee)
    dead = [c for c in module.computations if c not in reachable]
    module.remove_computations(dead)
    return changed or bool(dead)


def _allow_attr(inst) -> str | None:
    attrs = inst.attrs.get("frontend_attributes")
    if attrs is None:
        return None
    m = _ALLOW_ATTR.search(getattr(attrs, "text", str(attrs)))
    return m.group(1) if m else None


def _chain_start(inst):
    while inst.opcode in ("async-update", "async-done") and inst.operands:
        inst = inst.operands[0]
    return inst


def _can_remove_root(inst, editor: Removal, memo: dict) -> bool:
    """CanRemoveInstruction for an instruction whose users are all gone."""
    comp = inst.parent
    if not editor.is_dead(inst) or not editor.safely_removable(inst):
        return False
    if inst.opcode == "custom-call" and inst.attrs.get("custom_call_target") == "Sharding" \
            and inst.operands:
        op = inst.operands[0]
        if op is comp.root or op.opcode == "parameter" or len(set(op.users)) != 1:
            return False
    is_async = ASYNC in inst.opdef.traits
    start = _chain_start(inst) if is_async else None
    if _allow_attr(inst) == "false" or (start is not None and _allow_attr(start) == "false"):
        return False
    if has_side_effect(inst, memo):
        allowed = (inst.opcode == "custom-call" and
                   inst.attrs.get("custom_call_target") == "tpu_custom_call") or is_async
        if not (allowed and "true" in (_allow_attr(inst), start and _allow_attr(start))):
            return False
    return True


def remove_dead_instructions(comp: Computation, memo: dict | None = None) -> bool:
    """RemoveDeadRoots for one computation; returns whether anything was removed."""
    memo = {} if memo is None else memo
    editor = Removal(comp)
    # Nothing removable now: nothing becomes removable, so skip the post order.
    if not any(_can_remove_root(i, editor, memo) for i in comp.instructions if not i.users):
        return False
    for inst in reversed(post_order(comp)):
        if editor.alive(inst) and _can_remove_root(inst, editor, memo):
            editor.remove_with_unused_operands(inst, memo)
    return editor.flush()
