"""Adding an elementwise op takes one registry row (with its semantic key) and no other
edit: the made-up op below is parsed, verified, evaluated (interpreter and compiled back
end), constant-folded, fused and CSE'd through the traits and the semantic key alone."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
import hloc.interp  # noqa: F401  (attaches the evaluations)
from hloc.ops import REGISTRY, facets
from hloc.ops.base import COMMUTATIVE, ELEMENTAL, ELEMENTWISE, OpDef, register
from hloc.diagnostics import VerifyError
from hloc.printer import module_to_text
from hloc.verifier import verify

from opt_cli import invoke_opt

NAME = "hloc-test-larger"      # not an XLA opcode; behaves as maximum


@pytest.fixture
def made_up_op():
    op = register(OpDef(NAME, 2, traits=frozenset({ELEMENTWISE, COMMUTATIVE}),
                        infer=REGISTRY["maximum"].infer, semantic="maximum"))
    try:
        yield op
    finally:
        del REGISTRY[NAME]


def test_the_row_alone_gives_an_evaluation(made_up_op):
    assert facets.get("evaluate", NAME) is facets.get("evaluate", "maximum") is not None
    assert NAME not in facets.missing("evaluate")


def test_the_row_alone_gives_an_emitter(made_up_op):
    import hloc.backend  # noqa: F401  (attaches the emitters)
    assert ELEMENTAL in made_up_op.traits
    assert facets.get("emit", NAME) is facets.get("emit", "maximum") is not None
    assert NAME not in facets.missing("emit", "emit_kernel")


def test_the_row_alone_gives_the_derived_facts(made_up_op):
    from hloc.ops import call_context, has_side_effect, is_expensive, opcodes_with
    module = hloc.parse(f"""HloModule m
ENTRY e {{
  a = f32[3]{{0}} parameter(0)
  b = f32[3]{{0}} parameter(1)
  ROOT r = f32[3]{{0}} {NAME}(a, b)
}}
""")
    verify(module, layout_sensitive=True, allow_mixed_precision=False)
    root = module.entry.root
    assert not has_side_effect(root) and not is_expensive(root)
    assert call_context(made_up_op) is None
    assert NAME in opcodes_with(ELEMENTWISE) and NAME in opcodes_with(COMMUTATIVE)
    relaid = hloc.parse(f"""HloModule m
ENTRY e {{
  a = f32[3,2]{{0,1}} parameter(0)
  ROOT r = f32[3,2]{{1,0}} {NAME}(a, a)
}}
""")
    with pytest.raises(VerifyError, match="layout"):     # it cannot change layouts
        verify(relaid, layout_sensitive=True)


def test_parsed_verified_evaluated(made_up_op):
    module = hloc.parse(f"""HloModule m
ENTRY e {{
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  ROOT r = f32[3] {NAME}(a, b)
}}
""")
    verify(module)
    assert f"{NAME}(%a, %b)" in module_to_text(module)
    a = np.array([1, 5, np.nan], np.float32)
    b = np.array([2, 3, 0], np.float32)
    want = np.array([2, 5, np.nan], np.float32)
    np.testing.assert_array_equal(module.run(a, b), want)
    np.testing.assert_array_equal(module.run(a, b, backend="cpu"), want)   # compiled too


def test_constant_folded(made_up_op):
    r = invoke_opt(["-", "--passes=constant_folding"], stdin=f"""HloModule m
ENTRY e {{
  a = s32[] constant(4)
  b = s32[] constant(9)
  ROOT r = s32[] {NAME}(a, b)
}}
""")
    assert r.exit_code == 0, r.output
    assert "constant(9)" in r.stdout and NAME not in r.stdout


def test_cse_and_fusion(made_up_op):
    text = f"""HloModule m
ENTRY e {{
  a = f32[64] parameter(0)
  b = f32[64] parameter(1)
  x = f32[64] {NAME}(a, b)
  y = f32[64] {NAME}(a, b)
  n = f32[64] negate(x)
  ROOT r = f32[64] add(n, y)
}}
"""
    r = invoke_opt(["-", "--passes=cse"], stdin=text)
    assert r.exit_code == 0, r.output
    assert r.stdout.count(f"{NAME}(") == 1
    r = invoke_opt(["-", "--passes=cse,fusion"], stdin=text)
    assert r.exit_code == 0, r.output
    entry = r.stdout[r.stdout.index("ENTRY"):]
    assert "fusion(%a, %b), kind=kLoop" in entry and NAME not in entry
    fused = r.stdout[:r.stdout.index("ENTRY")]
    assert f"{NAME}(" in fused
