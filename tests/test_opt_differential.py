"""`hloc opt` against the interpreter on real dumps (testdata/dumps).

For every `<prog>.before_optimizations.hlo` with inputs (`<prog>.npz`), the module is
run on the interpreter before and after the default pipeline and the outputs must agree
(pred and integers exactly, floats per XLA's Near with abs and rel bounds 1e-3, NaN
matching NaN). The optimised text must parse again and print identically; `hloc opt` of
it prints it unchanged, with `--force` too (the whole pipeline run again is a fixed point:
fusions already in the module are not fused into); and the pipeline's last fixed point
("simplification after layout assignment": algsimp, dce, cse), run again on it, finds
nothing to do. UnsupportedError becomes an xfail with its message. The dumps without
inputs and XLA's optimized dumps get the `--force` fixed-point check in
test_opt_fixed_point.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import hloc
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.passes import default_pipeline
from hloc.passes.driver import optimize
from hloc.passes.pipelines import simplification_after_layout_assignment
from hloc.printer import module_to_text
from hloc.runner import run_module

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
SPEC = ErrorSpec(abs=1e-3, rel=1e-3)


def _programs():
    return sorted(p.name[:-len(".before_optimizations.hlo")]
                  for p in DUMPS.glob("*.before_optimizations.hlo")
                  if (DUMPS / p.name.replace(".before_optimizations.hlo", ".npz")).exists())


def _inputs(prog):
    d = load_npz(DUMPS / f"{prog}.npz")
    n = sum(1 for k in d if k.startswith("in") and k[2:].isdigit())
    return [d[f"in{i}"] for i in range(n)]


def _run(module, args):
    return flatten_leaves(run_module(module, args).value, module.entry.root.shape)


def _optimized_text(text: str, name: str, pipeline=None, *, force: bool = False):
    module = hloc.parse(text, name)
    result = optimize(module, pipeline or default_pipeline(), force=force)
    return module_to_text(module), result


@pytest.mark.parametrize("prog", _programs() or
                         [pytest.param(None, marks=pytest.mark.skip(reason="no dumps"))])
def test_opt_preserves_values(prog):
    path = DUMPS / f"{prog}.before_optimizations.hlo"
    text = path.read_text()
    before = hloc.parse(text, str(path))
    args = bind_arguments(before, _inputs(prog))
    try:
        expected = _run(before, args)
    except UnsupportedError as e:
        pytest.xfail(e.message)
    optimized, _ = _optimized_text(text, str(path))
    after = hloc.parse(optimized, f"{path} (optimized)")
    assert module_to_text(after) == optimized, "optimized text does not print back"
    try:
        actual = _run(after, bind_arguments(after, _inputs(prog)))
    except UnsupportedError as e:
        pytest.fail(f"ran before optimisation but not after: {e.message}")
    assert len(actual) == len(expected)
    failures = [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(expected, actual))
                if not (r := near(e, a, SPEC)).ok]
    assert not failures, "\n".join(failures)
    assert _optimized_text(optimized, "again")[0] == optimized, "opt of opt differs"
    forced, result = _optimized_text(optimized, "again", force=True)
    assert forced == optimized, "opt --force of opt differs; changed by: " + \
        ", ".join(t.name for t in result.timings.values() if t.changes)
    again, result = _optimized_text(optimized, "again", simplification_after_layout_assignment(),
                                    force=True)
    assert not result.changed and again == optimized, \
        "the final fixed point is not a fixed point: " + \
        ", ".join(t.name for t in result.timings.values() if t.changes)
