"""XLA's CallGraph (hloc.ir.call_graph): call sites, call contexts, depths, flattening.

The expected contexts follow xla/hlo/analysis/call_graph.cc (SetCallContexts): a
computation nobody calls is kControlFlow; a control-flow site passes on its caller's
context, an embedded site gives kEmbedded; both at once give kBoth.
"""
from __future__ import annotations

import hloc
from hloc.ir.call_graph import BOTH, CONTROL_FLOW, EMBEDDED, CallGraph, union_contexts
from hloc.ops import REGISTRY, call_context
from hloc.verifier import verify

MODULE = """HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

double {
  q = f32[] parameter(0)
  u = f32[] parameter(1)
  ROOT d = f32[] add(q, u)
}

twice {
  p = f32[] parameter(0)
  o = f32[] parameter(1)
  ROOT c = f32[] call(p, o), to_apply=double
}

cond {
  t = (f32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(t), index=1
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  t = (f32[], s32[]) parameter(0)
  v = f32[] get-tuple-element(t), index=0
  i = s32[] get-tuple-element(t), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  w = f32[] call(v, v), to_apply=twice
  ROOT r = (f32[], s32[]) tuple(w, j)
}

ENTRY e {
  a = f32[4] parameter(0)
  z = f32[] constant(0)
  red = f32[] reduce(a, z), dimensions={0}, to_apply=add
  red2 = f32[] reduce(a, z), dimensions={0}, to_apply=twice
  k = s32[] constant(0)
  init = (f32[], s32[]) tuple(red, k)
  loop = (f32[], s32[]) while(init), condition=cond, body=body
  ROOT out = f32[] get-tuple-element(loop), index=0
}
"""


def _graph():
    module = hloc.parse(MODULE)
    verify(module)
    comps = {c.name: c for c in module.computations}
    return CallGraph(module), comps


def test_contexts_follow_xla():
    graph, comps = _graph()
    got = {name: graph.context(c) for name, c in comps.items()}
    assert got == {
        "e": CONTROL_FLOW,          # uncalled
        "add": EMBEDDED,            # reduce's reducer
        "cond": CONTROL_FLOW, "body": CONTROL_FLOW,
        "twice": BOTH,              # called from the while body and as a reducer
        "double": BOTH,             # through twice's control-flow call: twice's context
    }
    assert not graph.is_flattened()


def test_call_sites_callers_and_depths():
    graph, comps = _graph()
    entry = graph.node(comps["e"])
    assert [s.instruction.name for s in entry.callsites] == ["red", "red2", "loop"]
    loop = entry.call_site(next(i for i in comps["e"].instructions if i.name == "loop"))
    assert loop.context == CONTROL_FLOW
    assert [c.name for c in loop.called_computations] == ["cond", "body"]
    assert entry.call_site(comps["e"].root) is None
    twice = graph.node(comps["twice"])
    assert [s.instruction.name for s in twice.caller_callsites] == ["w", "red2"]
    assert [c.name for c in twice.callers] == ["body", "e"]
    assert [i.name for i in graph.caller_instructions(comps["twice"])] == ["w", "red2"]
    assert {n: graph.node(c).depth for n, c in comps.items()} == {
        "e": 0, "add": 1, "cond": 1, "body": 1, "twice": 2, "double": 3}
    assert graph.computations_in(EMBEDDED) == {comps["add"]}


def test_a_second_control_flow_caller_is_not_flat():
    text = MODULE.replace("ROOT out = f32[] get-tuple-element(loop), index=0",
                          "o = f32[] get-tuple-element(loop), index=0\n"
                          "  ROOT out = f32[] call(o, o), to_apply=double")
    text = text.replace("red2 = f32[] reduce(a, z), dimensions={0}, to_apply=twice\n", "")
    module = hloc.parse(text)
    graph = CallGraph(module)
    double = next(c for c in module.computations if c.name == "double")
    assert graph.context(double) == CONTROL_FLOW
    assert len(graph.node(double).caller_callsites) == 2 and not graph.is_flattened()


def test_union_is_a_lattice():
    assert union_contexts("kNone", EMBEDDED) == EMBEDDED
    assert union_contexts(CONTROL_FLOW, "kNone") == CONTROL_FLOW
    assert union_contexts(EMBEDDED, EMBEDDED) == EMBEDDED
    assert union_contexts(EMBEDDED, CONTROL_FLOW) == BOTH


def test_every_calling_op_has_a_context():
    """GetInstructionCallContext covers every op that can call a computation."""
    calling = {n for n, op in REGISTRY.items()
               if any(a.kind in ("computation", "computation_list") for a in op.attrs)}
    assert {n for n in calling if call_context(REGISTRY[n]) is None} == set()
    assert {n for n in calling if call_context(REGISTRY[n]) == CONTROL_FLOW} == {
        "call", "while", "conditional", "async-start", "async-update", "async-done"}
