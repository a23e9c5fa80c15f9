"""The graph API (hloc.ir.graph, hloc.ir.module): XLA's mutation semantics and invariants."""
from __future__ import annotations

import numpy as np

import hloc
from hloc.ir.graph import post_order, replace_instruction
from hloc.ir.invariants import graph_errors
from hloc.ir.clone import clone_computation, clone_name
from hloc.ir.rewriter import add_instruction
from hloc.printer import module_to_text
from hloc.verifier import verify

SQUARE = """HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  a = f32[2] negate(p)
  b = f32[2] abs(p)
  m = f32[2] multiply(a, a), sharding={replicated}
  ROOT r = f32[2] add(m, a)
}
"""


def _inst(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name == name)


def test_replace_all_uses_lists_each_user_once():
    module = hloc.parse(SQUARE)
    a, b, m = _inst(module, "a"), _inst(module, "b"), _inst(module, "m")
    a.replace_all_uses_with(b)
    assert m.operands == [b, b]
    assert b.users.count(m) == 1 and not a.users
    assert graph_errors(module) == []


def test_replace_instruction_moves_sharding_and_name():
    module = hloc.parse(SQUARE)
    comp = module.entry
    m = _inst(module, "m")
    p = _inst(module, "p")
    new = add_instruction(comp, "multiply", m.shape, [p, p], before=m)
    replace_instruction(m, new)
    assert new.name == "m" and "sharding" in new.attrs      # XLA keeps both
    assert graph_errors(module) == []
    assert m.parent is None and m not in comp.instructions
    verify(module)


def test_post_order_is_iterative_and_operands_first():
    n = 20000                                       # deeper than Python's recursion limit
    lines = ["HloModule deep", "ENTRY e {", "  x0 = f32[] parameter(0)"]
    lines += [f"  x{i} = f32[] negate(x{i - 1})" for i in range(1, n)]
    lines += [f"  ROOT r = f32[] add(x{n - 1}, x0)", "}"]
    module = hloc.parse("\n".join(lines))
    order = post_order(module.entry)
    pos = {inst: k for k, inst in enumerate(order)}
    assert len(order) == n + 1
    assert all(pos[o] < pos[i] for i in order for o in i.operands)


def test_clone_naming_follows_xla():
    assert clone_name("x", "clone") == "x.clone"
    assert clone_name("x.clone", "clone") == "x.clone2"
    assert clone_name("x.clone2", "clone") == "x.clone3"
    module = hloc.parse(SQUARE)
    copy = clone_computation(module.entry)
    again = clone_computation(copy)
    assert copy.name == "e.clone" and again.name == "e.clone2"
    assert {i.name for i in again.instructions} >= {"m.clone2", "r.clone2"}
    assert graph_errors(module) == []


def test_module_clone_is_independent_and_prints_the_same():
    module = hloc.parse(SQUARE)
    copy = module.clone()
    assert copy.name == "m-clone" and copy.entry.name == "e.clone"
    assert {i.name for i in copy.entry.instructions} == {"p.clone", "a.clone", "b.clone",
                                                         "m.clone", "r.clone"}
    same = module.clone(suffix="")
    assert module_to_text(same) == module_to_text(module)
    _inst(same, "a").replace_all_uses_with(_inst(same, "b"))
    assert "multiply(%a, %a)" in module_to_text(module)
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(module.run(x), copy.run(x) * 0 + module.run(x))


def test_control_edges_are_kept_in_both_directions():
    module = hloc.parse("""HloModule m
ENTRY e {
  p = f32[] parameter(0)
  a = f32[] negate(p)
  ROOT b = f32[] abs(p), control-predecessors={a}
}
""")
    a, b = _inst(module, "a"), _inst(module, "b")
    assert a.control_successors == [b] and b.control_predecessors == [a]
    a.drop_all_control_deps()
    assert not a.control_successors and not b.control_predecessors


def test_graph_errors_reports_broken_links():
    module = hloc.parse(SQUARE)
    a = _inst(module, "a")
    a.users.append(a.users[0])
    assert any("listed twice" in e for e in graph_errors(module))


def test_module_clone_remaps_called_computations():
    module = hloc.parse("""HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}
""")
    copy = module.clone()
    reduce_ = copy.entry.root
    assert reduce_.attrs["to_apply"] is copy.computation("add.clone")
    assert reduce_.attrs["to_apply"] not in module.computations
    assert graph_errors(copy) == []
    verify(copy)
    x = np.arange(4, dtype=np.float32)
    assert copy.run(x) == module.run(x) == 6


def test_remove_instruction_and_unused_operands_keeps_shared_and_side_effecting():
    module = hloc.parse("""HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  a = f32[2] negate(p)
  b = f32[2] abs(a)
  c = f32[2] exponential(a)
  t = token[] after-all()
  o = token[] outfeed(b, t), outfeed_shape=f32[2]
  d = f32[2] add(b, c)
  ROOT r = f32[2] copy(p)
}
""")
    from hloc.ir.graph import Removal, remove_instruction_and_unused_operands
    d, c = _inst(module, "d"), _inst(module, "c")
    assert remove_instruction_and_unused_operands(d)
    names = {i.name for i in module.entry.instructions}
    assert "d" not in names and "c" not in names          # c died with d
    assert {"a", "b", "o", "t"} <= names                  # b still feeds the outfeed
    assert graph_errors(module) == []
    removal = Removal(module.entry)
    assert removal.remove_with_unused_operands(_inst(module, "r")) == 0   # the root stays
    assert not removal.flush()
    assert c.parent is None

