"""Every opcode the registry knows can be evaluated, or says why not."""
from __future__ import annotations

import dataclasses

import pytest

import hloc.interp  # noqa: F401  (registers the evaluations)
from hloc.interp.core import Interpreter
from hloc.ops import REGISTRY, facets
from hloc.ops.base import ELEMENTAL, ELEMENTWISE, STRUCTURAL


def test_every_op_has_an_evaluation_or_a_reason():
    missing = facets.missing("evaluate")
    assert not missing, f"ops with neither an evaluation nor an unsupported reason: {missing}"


# Elemental ops the compiled back end does not compile yet (it reports them unsupported;
# the interpreter evaluates them): none since stochastic-convert has its emitter.
NOT_COMPILED: list[str] = []


def test_every_elemental_op_has_an_emitter_or_is_listed():
    import hloc.backend  # noqa: F401  (attaches the emitters)
    assert facets.missing("emit", "emit_kernel") == NOT_COMPILED


def test_structural_ops_are_the_walkers():
    assert {n for n, op in REGISTRY.items() if STRUCTURAL in op.traits} == {
        "parameter", "constant", "tuple", "get-tuple-element", "call", "fusion", "while",
        "conditional"}


def test_opdefs_are_frozen_and_facets_attach_once():
    op = REGISTRY["add"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.unsupported = "patched"
    with pytest.raises(ValueError, match="registered twice"):
        facets.attach("evaluate", lambda *a: None, "compare")
    with pytest.raises(ValueError, match="registered twice"):
        facets.attach_semantic("evaluate", lambda *a: None, "add")
    with pytest.raises(ValueError, match="unknown opcode"):
        facets.attach("evaluate", lambda *a: None, "no-such-op")
    with pytest.raises(ValueError, match="unknown facet kind"):
        facets.attach("no-such-kind", lambda *a: None, "add")


def test_elementwise_rows_are_elemental_and_have_a_semantic_key():
    for name, op in REGISTRY.items():
        if ELEMENTWISE in op.traits:
            assert ELEMENTAL in op.traits and op.semantic, name


def test_an_unsupported_op_names_itself_and_its_line():
    import hloc
    from hloc.diagnostics import UnsupportedError
    text = ("HloModule m\nENTRY e {\n  t = token[] after-all()\n"
            "  ROOT i = ((f32[2]), token[]) infeed(t)\n}\n")
    module = hloc.parse(text, "m.hlo")
    try:
        Interpreter(module).run([])
    except UnsupportedError as e:
        assert "infeed" in e.message and e.loc.line == 4
    else:
        raise AssertionError("infeed ran")
