"""`call-inliner` (CallInliner, xla/hlo/transforms/simplifiers/call_inliner.cc).

XLA visits the call graph callees first and replaces every `call` instruction by a copy
of its callee's body: the callee's instructions are cloned (post order, same names
uniquified, attributes and control edges kept) into the caller just before the call,
parameters bound to the call's operands, and the call is replaced by the clone of the
callee's root (ReplaceInstruction: metadata and sharding follow when the root has
none). DCE then drops the computations nothing calls any more. With
`single_call_site` (how XLA:CPU's pipeline runs it) only callees with exactly one call
site are inlined. Calls inside asynchronous computations, calls whose callee runs on
another execution thread, calls with a backend_config and calls whose frontend attribute
`inlineable` is not "true" (FrontendAttributesAllowInlining; JAX marks shard_map/pmap
manual-region bodies `inlineable="false"`) stay. Composite calls are inlined (XLA keeps only the ones
named in `composites_to_preserve`, empty by default). Not implemented: domain updates.
"""
from __future__ import annotations

from collections import Counter

from ..ir.graph import Removal, post_order, relay_control_deps, replace_instruction
from ..ir.clone import inline_computation
from ..ir.module import Instruction, Module
from ..ops import opcodes_with
from ..ops.base import ASYNC
from . import register
from .base import Pass
from .dce import run_dce

ASYNC_OPS = opcodes_with(ASYNC)


@register
class CallInliner(Pass):
    name = "call-inliner"

    def __init__(self, single_call_site: bool = False):
        self.single_call_site = single_call_site

    def run(self, module: Module, ctx) -> bool:
        call_sites: Counter = Counter()
        async_bodies: set = set()
        for comp in module.computations:
            for inst in comp.instructions:
                for callee in inst.called_computations():
                    call_sites[callee] += 1
                    if inst.opcode in ASYNC_OPS:
                        async_bodies.add(callee)
        changed = False
        for comp in module.post_order():
            if comp in async_bodies or not any(i.opcode == "call" for i in comp.instructions):
                continue                # (no call: no post order)
            editor = Removal(comp)
            for inst in post_order(comp):
                if inst.opcode != "call" or not editor.alive(inst):
                    continue
                callee = inst.attrs.get("to_apply")
                if callee is None or callee.execution_thread != comp.execution_thread:
                    continue
                if self.single_call_site and call_sites[callee] != 1:
                    continue
                if not _allows_inlining(inst):
                    continue
                inline_call(inst, editor)
                changed = True
            editor.flush()
        if changed:
            run_dce(module)
        return changed


def _allows_inlining(call: Instruction) -> bool:
    """No backend_config, and frontend attribute `inlineable` absent or "true"."""
    from ..verify.text_attrs import frontend_attributes
    config = call.attrs.get("backend_config")
    if (getattr(config, "text", config) or "") not in ("", "{}"):
        return False
    fe = call.attrs.get("frontend_attributes")
    if fe is None:
        return True
    return (frontend_attributes(getattr(fe, "text", fe)) or {}).get("inlineable",
                                                                       "true") == "true"


def inline_call(call: Instruction, removal: Removal) -> Instruction:
    """Clone the callee of `call` in front of it and replace the call by the clone of
    the callee's root; returns that clone."""
    new_root = inline_computation(call.attrs["to_apply"], call.operands, call.parent, call)
    relay_control_deps(call, new_root, removal)
    replace_instruction(call, new_root, removal)
    return new_root
