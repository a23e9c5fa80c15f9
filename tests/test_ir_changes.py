"""Change tracking in the IR (hloc.ir.module): every edit through the API bumps its
computation's generation and records the instructions whose checks read what changed;
passes edit the IR only through that API (checked on their source)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hloc
from hloc.ir.graph import Removal, dedupe_fusion_operands, replace_instruction
from hloc.ir.module import Computation
from hloc.ir.rewriter import add_instruction, add_parameter
from hloc.ir.dtypes import F32
from hloc.ir.shape import ArrayShape

ROOT = Path(__file__).resolve().parents[1]

TEXT = """HloModule m

add_f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

fused {
  fp0 = f32[4] parameter(0)
  fp1 = f32[4] parameter(1)
  ROOT fm = f32[4] multiply(fp0, fp1)
}

ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  a = f32[4] negate(p)
  b = f32[4] abs(q)
  c = f32[4] add(a, b)
  f = f32[4] fusion(c, c), kind=kLoop, calls=fused
  z = f32[] constant(0)
  r = f32[] reduce(f, z), dimensions={0}, to_apply=add_f
  ROOT t = (f32[4], f32[]) tuple(c, r)
}
"""


def _module():
    module = hloc.parse(TEXT)
    for comp in module.computations:
        comp.take_changes()
    return module


def _get(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name == name)


def _comp(module, name) -> Computation:
    return next(c for c in module.computations if c.name == name)


def _edit(module, comp_name, edit):
    """Run `edit`; return (generation grew?, all changed?, names recorded)."""
    comp = _comp(module, comp_name)
    before = comp.generation
    edit()
    everything, changed = comp.take_changes()
    return comp.generation > before, everything, {i.name for i in changed}


def _shape(*dims):
    return ArrayShape(F32, tuple(dims))


# (name, computation, edit(module), instructions that must be recorded, whole computation)
EDITS = [
    ("set_operand", "e", lambda m: _get(m, "c").set_operand(1, _get(m, "a")), {"c", "a", "b"},
     False),
    ("append_operand", "e", lambda m: _get(m, "t").append_operand(_get(m, "b")), {"t", "b"},
     False),
    ("remove_operand", "e", lambda m: _get(m, "t").remove_operand(1), {"t", "r"}, False),
    ("replace_all_uses_with", "e", lambda m: _get(m, "a").replace_all_uses_with(_get(m, "b")),
     {"a", "b", "c"}, False),
    ("replace_instruction", "e", lambda m: replace_instruction(_get(m, "a"), _get(m, "b")),
     {"b", "c", "p"}, False),
    ("set_shape", "e", lambda m: _get(m, "b").set_shape(_shape(4)), {"b", "q", "c"}, False),
    ("set_attr", "e", lambda m: _get(m, "r").set_attr("dimensions", (0,)), {"r", "f", "z", "t"},
     False),
    ("pop_attr", "e", lambda m: _get(m, "f").pop_attr("kind"), {"f", "c", "r"}, False),
    ("parameter_number", "fused", lambda m: setattr(_get(m, "fp1"), "parameter_number", 5),
     {"fp1", "fm"}, False),
    ("add_control_dependency_to", "e",
     lambda m: _get(m, "a").add_control_dependency_to(_get(m, "b")), {"a", "b"}, False),
    ("remove_control_dependency_to", "e",
     lambda m: _get(m, "a").remove_control_dependency_to(_get(m, "b")), {"a", "b"}, False),
    ("drop_all_control_deps", "e", lambda m: _get(m, "a").drop_all_control_deps(), {"a"},
     False),
    ("add_instruction", "e",
     lambda m: add_instruction(m.entry, "negate", _shape(4), [_get(m, "c")]), {"c"}, False),
    ("add_parameter", "fused", lambda m: add_parameter(_comp(m, "fused"), _shape(4), 2, "fp2"),
     set(), False),
    ("set_root_instruction", "fused",
     lambda m: _comp(m, "fused").set_root_instruction(_get(m, "fp0")), {"fm", "fp0"}, False),
    ("remove_instruction", "e", lambda m: _remove_unused(m), {"c"}, False),
    ("remove_instructions", "e", lambda m: _remove_batch(m), {"c"}, False),
    ("remove_parameter", "fused", lambda m: _remove_param(m), set(), False),
    ("set_instruction_order", "e",
     lambda m: m.entry.set_instruction_order(list(reversed(m.entry.instructions))), set(),
     False),
    ("instructions =", "e", lambda m: setattr(m.entry, "instructions", m.entry.instructions),
     set(), True),
    ("execution_thread", "add_f", lambda m: setattr(_comp(m, "add_f"), "execution_thread", "x"),
     set(), True),
    ("is_fusion_computation", "add_f",
     lambda m: setattr(_comp(m, "add_f"), "is_fusion_computation", True), set(), True),
    ("dedupe_fusion_operands", "fused", lambda m: dedupe_fusion_operands(_get(m, "f")),
     {"fm", "fp0"}, False),
]


def _remove_unused(m):
    extra = add_instruction(m.entry, "negate", _shape(4), [_get(m, "c")])
    m.entry.take_changes()
    m.entry.remove_instruction(extra)


def _remove_batch(m):
    comp = m.entry
    extra = add_instruction(comp, "negate", _shape(4), [_get(m, "c")])
    more = add_instruction(comp, "abs", _shape(4), [extra])
    comp.take_changes()
    removal = Removal(comp)
    removal.remove_with_unused_operands(more)
    removal.flush()


def _remove_param(m):
    comp = _comp(m, "fused")
    extra = add_parameter(comp, _shape(4), 2, "fp2")
    comp.take_changes()
    comp.remove_parameter(extra.parameter_number)


@pytest.mark.parametrize("name,comp,edit,want,everything", EDITS, ids=[e[0] for e in EDITS])
def test_every_edit_is_recorded(name, comp, edit, want, everything):
    module = _module()
    grew, got_all, got = _edit(module, comp, lambda: edit(module))
    assert grew, f"{name} did not bump the generation"
    assert got_all == everything
    assert want <= got, f"{name} recorded {sorted(got)}, not all of {sorted(want)}"


def test_untouched_computations_stay_clean():
    module = _module()
    gens = {c: c.generation for c in module.computations}
    _get(module, "c").set_operand(1, _get(module, "a"))
    assert [c.name for c in module.computations if c.generation != gens[c]] == ["e"]
    assert _comp(module, "fused").take_changes() == (False, set())


def test_module_level_edits_bump_the_module_generation():
    module = _module()
    g = module.generation
    comp = Computation("extra")
    module.add_computation(comp)
    assert module.generation > g and comp.take_changes()[0]
    g = module.generation
    module.set_computation_order(list(reversed(module.computations)))
    assert module.generation > g
    g = module.generation
    module.remove_computation(comp)
    assert module.generation > g


def test_parse_leaves_everything_to_verify():
    module = hloc.parse(TEXT)
    assert all(c.take_changes()[0] for c in module.computations)


# ---------------------------------------------------------------------------
# Passes change the IR only through the API: no raw writes to what the IR tracks.

_FIELDS = {"shape", "operands", "users", "attrs", "root", "literal", "parameters",
           "control_predecessors", "control_successors", "computations", "entry", "parent",
           "_insts", "_changed", "generation"}
_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "update", "setdefault",
             "popitem", "sort", "reverse", "__setitem__", "__delitem__", "discard", "add"}


def _raw_writes(tree: ast.AST) -> list[int]:
    def tracked(node) -> bool:
        """node is `<not self>.<tracked field>`."""
        return isinstance(node, ast.Attribute) and node.attr in _FIELDS and \
            not (isinstance(node.value, ast.Name) and node.value.id == "self")

    bad = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for t in targets:
            for sub in ast.walk(t):
                if tracked(sub) or (isinstance(sub, ast.Subscript) and tracked(sub.value)):
                    bad.append(node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _MUTATORS and tracked(node.func.value):
            bad.append(node.lineno)
    return sorted(set(bad))


def test_passes_edit_only_through_the_ir_api():
    offenders = []
    files = sorted((ROOT / "hloc" / "passes").rglob("*.py"))
    assert len(files) > 30
    for path in files:
        for line in _raw_writes(ast.parse(path.read_text(), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == []


def test_the_raw_write_check_can_fail():
    src = ("inst.attrs['k'] = 1\nx.operands[0] = y\ndel c.attrs['k']\nc.root = r\n"
           "u.users.append(v)\ninst.shape = s\nself.users.append(v)\n")
    assert _raw_writes(ast.parse(src)) == [1, 2, 3, 4, 5, 6]
