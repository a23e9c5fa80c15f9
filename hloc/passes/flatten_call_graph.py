"""`flatten-call-graph` (FlattenCallGraph, xla/hlo/transforms/simplifiers/flatten_call_graph.cc).

XLA makes every computation called in a control-flow context (call, while,
conditional) have exactly one such call site: visiting the call graph callees first,
each further control-flow call site gets its own clone of the computation (named
`<name>.clone`, instructions `<inst>.clone`), and the control-flow callees inside a
clone are cloned with it. A computation called from both contexts gets a clone for every
control-flow site; computations only applied by reduce, map, sort, scatter, fusion,
custom-call and the like (embedded contexts) stay shared. (Known difference: "both"
is judged here by the computation's own call sites; XLA reads the call graph's kBoth,
which a control-flow callee of a kBoth computation inherits, and then clones for its
first site too.) XLA reports "changed"
unconditionally; hloc reports whether it cloned anything. Async computations are left
alone (their start, update and done share one computation by construction).
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from . import register
from .base import Pass
from ..ir.call_graph import CallGraph
from ..ir.clone import clone_computation
from ..ops import CALL_CONTROL_FLOW, call_context, opcodes_with
from ..ops.base import ASYNC, CONTROL_FLOW as _CONTROL_FLOW

ASYNC_OPS = opcodes_with(ASYNC)
CONTROL_FLOW = opcodes_with(_CONTROL_FLOW)


@register
class FlattenCallGraph(Pass):
    name = "flatten-call-graph"

    def run(self, module: Module, ctx) -> bool:
        graph = CallGraph(module)
        changed = False
        for comp in module.post_order():
            sites_of = graph.caller_instructions(comp)
            flow = [call_context(i.opdef) == CALL_CONTROL_FLOW for i in sites_of]
            both = any(flow) and not all(flow)
            done: set = set()
            for n, inst in enumerate(sites_of):
                if not flow[n] or inst.opcode in ASYNC_OPS or inst in done:
                    continue
                done.add(inst)
                if not both and n == 0:
                    continue
                _clone_for(module, inst, comp)
                changed = True
        return changed


def _replace_callees(module: Module, inst: Instruction, which) -> list[Computation]:
    """Point `inst` at fresh clones of the called computations `which` selects."""
    clones = []
    for key, value in list(inst.attrs.items()):
        if isinstance(value, Computation) and which(value):
            inst.set_attr(key, clone_computation(value, module))
            clones.append(inst.attrs[key])
        elif isinstance(value, tuple) and value and isinstance(value[0], Computation):
            new = []
            for c in value:
                if which(c):
                    c = clone_computation(c, module)
                    clones.append(c)
                new.append(c)
            inst.set_attr(key, tuple(new))
    return clones


def _clone_for(module: Module, inst: Instruction, comp: Computation) -> None:
    work = _replace_callees(module, inst, lambda c: c is comp)
    while work:
        current = work.pop()
        for sub in current.instructions:
            if sub.opcode in CONTROL_FLOW:
                work.extend(_replace_callees(module, sub, lambda c: True))
