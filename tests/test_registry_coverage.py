"""Every opcode the registry knows can be evaluated, or says why not."""
from __future__ import annotations

import hloc.interp  # noqa: F401  (registers the evaluations)
from hloc.interp.core import Interpreter
from hloc.ops import REGISTRY

# Moved between computations by the interpreter's walker itself (hloc/interp/core.py).
STRUCTURAL = {"parameter", "constant", "tuple", "get-tuple-element", "call", "fusion",
              "while", "conditional"}


def test_every_op_has_an_evaluation_or_a_reason():
    missing = sorted(op.name for op in REGISTRY.values()
                     if op.evaluate is None and not op.unsupported
                     and op.name not in STRUCTURAL)
    assert not missing, f"ops with neither an evaluation nor an unsupported reason: {missing}"


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
