"""XLA's CallGraph (xla/hlo/analysis/call_graph.h): call sites with their call contexts.

A call site is an instruction that calls computations; its context is the registry's
GetInstructionCallContext (`hloc.ops.call_context`): kControlFlow for call, while,
conditional and the async ops, kEmbedded for ops that apply a computation inside
themselves (reduce, map, sort, scatter, fusion, custom-call, all-reduce, ...). A
computation's context joins, over its callers, the site's context (kEmbedded) or, for a
control-flow site, the calling computation's own context; computations nobody calls are
kControlFlow, and a computation reached both ways is kBoth (SetCallContexts). Depth is
the longest call chain from an uncalled computation (SetNodeDepths). `is_flattened` is
CallGraph::IsFlattened: every kControlFlow computation has one caller call site and none
is kBoth. Contexts and depths are worked out on first use (a verifier that only needs
callers does not pay for them).
"""
from __future__ import annotations

from collections import deque

from ..ops import CALL_CONTROL_FLOW, CALL_EMBEDDED, call_context
from ..ops.base import CALLS
from .module import Computation, Instruction, Module

CONTROL_FLOW = CALL_CONTROL_FLOW
EMBEDDED = CALL_EMBEDDED
BOTH = "kBoth"
NONE = "kNone"

__all__ = ["CallGraph", "CallGraphNode", "CallSite", "CONTROL_FLOW", "EMBEDDED", "BOTH",
           "NONE", "union_contexts"]


def union_contexts(a: str, b: str) -> str:
    """UnionContexts: kNone is the identity; different contexts join to kBoth."""
    if a == NONE:
        return b
    if b == NONE or a == b:
        return a
    return BOTH


class CallSite:
    """An instruction calling computations, with the context it calls them in."""
    __slots__ = ("instruction", "called_computations", "context")

    def __init__(self, instruction: Instruction, called: tuple, context: str):
        self.instruction = instruction
        self.called_computations = called
        self.context = context

    def __repr__(self) -> str:
        names = ", ".join(c.name for c in self.called_computations)
        return f"{self.instruction.name} calls in context {self.context}: {names}"


class CallGraphNode:
    """One computation: its call sites, callees, the sites calling it and its callers."""
    __slots__ = ("computation", "callsites", "callees", "caller_callsites", "callers",
                 "context", "depth", "_site_of")

    def __init__(self, computation: Computation):
        self.computation = computation
        self.callsites: list[CallSite] = []
        self.callees: list[Computation] = []          # unique, in call order
        self.caller_callsites: list[CallSite] = []    # once per (site, call) as in XLA
        self.callers: list[Computation] = []          # unique, in discovery order
        self.context = NONE
        self.depth = 0
        self._site_of: dict = {}

    def call_site(self, inst: Instruction) -> CallSite | None:
        """GetCallSite: the call site of `inst` in this computation, if it calls."""
        return self._site_of.get(inst)


class CallGraph:
    """The call graph of `module` at the time it is built (rebuild after changes)."""

    def __init__(self, module: Module):
        self.module = module
        self._analysed = False
        self._nodes: dict[Computation, CallGraphNode] = {
            c: CallGraphNode(c) for c in module.computations}
        for comp in module.computations:
            node = self._nodes[comp]
            callees: dict = {}
            for inst in comp.instructions:
                if CALLS not in inst.opdef.traits:
                    continue
                called = inst.called_computations()
                if not called:
                    continue
                ctx = call_context(inst.opdef) or EMBEDDED
                site = CallSite(inst, tuple(called), ctx)
                node.callsites.append(site)
                node._site_of[inst] = site
                for callee in called:
                    callees[callee] = None
                    target = self._nodes.get(callee)
                    if target is None:           # a computation outside the module
                        target = self._nodes[callee] = CallGraphNode(callee)
                    target.caller_callsites.append(site)
                    if not target.callers or target.callers[-1] is not comp:
                        if comp not in target.callers:
                            target.callers.append(comp)
            node.callees = list(callees)

    @property
    def nodes(self) -> dict:
        """computation -> CallGraphNode, contexts and depths set."""
        if not self._analysed:
            self._analysed = True
            self._set_contexts()
            self._set_depths()
        return self._nodes

    def computations(self) -> list[Computation]:
        """The module's computations, then any called computation outside it."""
        return list(self._nodes)

    def node(self, comp: Computation) -> CallGraphNode:
        return self.nodes[comp]

    def context(self, comp: Computation) -> str:
        return self.nodes[comp].context

    def caller_instructions(self, comp: Computation) -> list[Instruction]:
        """The instructions calling `comp`, once per call (module order)."""
        node = self._nodes.get(comp)
        return [s.instruction for s in node.caller_callsites] if node is not None else []

    def computations_in(self, *contexts: str) -> set:
        """The computations whose context is one of `contexts`."""
        return {c for c, n in self.nodes.items() if n.context in contexts}

    def is_flattened(self) -> bool:
        for node in self.nodes.values():
            if node.context == BOTH:
                return False
            if node.context == CONTROL_FLOW and len(node.caller_callsites) > 1:
                return False
        return True

    def _set_contexts(self) -> None:
        work = deque()
        for node in self._nodes.values():
            if not node.callers:
                node.context = CONTROL_FLOW
                work.append(node)
        while work:                  # the lattice has height 3: each node moves twice at most
            node = work.popleft()
            for site in node.callsites:
                add = EMBEDDED if site.context == EMBEDDED else node.context
                for callee in site.called_computations:
                    target = self._nodes[callee]
                    new = union_contexts(add, target.context)
                    if new != target.context:
                        target.context = new
                        work.append(target)

    def _set_depths(self) -> None:
        """Longest call chain from an uncalled computation; a call cycle (invalid HLO)
        stops growing once every node has been raised len(nodes) times."""
        limit = len(self._nodes)
        work = deque(n for n in self._nodes.values() if not n.callers)
        while work:
            node = work.popleft()
            for callee in node.callees:
                target = self._nodes[callee]
                if target.depth < node.depth + 1 and node.depth < limit:
                    target.depth = node.depth + 1
                    work.append(target)
