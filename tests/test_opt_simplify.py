"""Differential test of the simplification passes: a pass must not change results.

Every real dump with XLA-computed inputs (testdata/dumps/<prog>.before_optimizations.hlo
with <prog>.npz) and a few dozen corpus modules (XLA's own pass tests, with
run_hlo_module-style fake arguments) run on the interpreter before and after each
simplification pass, one pass at a time and as XLA:CPU's simplification sequence; the
results must agree (ints and preds exactly, floats within abs 1e-3 or rel 1e-3) and the
verifier must accept the rewritten module. Corpus modules the verifier rejects, with
values over MAX_ELEMENTS elements or async computations, and those the interpreter cannot
run before the pass (an HlocError, quoted), are skipped; tests/outcome_guard.py bounds
their number. Any other exception fails.
"""
from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import pytest

import hloc
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import HlocError
from hloc.fake_args import make_fake_arguments
from hloc.inputs import bind_arguments, load_npz
from hloc.interp import Interpreter
from hloc.passes import PassContext, get_pass
from hloc.verifier import collect_errors

from corpus import XLA, xla_manifest

for _m in ("algsimp", "constant_folding", "reshape_mover", "while_loop_simplifier",
           "conditional_simplifier", "expanders"):
    importlib.import_module(f"hloc.passes.{_m}")

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
SPEC = ErrorSpec(abs=1e-3, rel=1e-3)
PASS_NAMES = ("algsimp", "constant_folding", "reshape-mover", "simplify-while-loops",
              "while-loop-constant-sinking", "simplify-conditional", "logistic-expander",
              "comparison-expander", "batchnorm_expander", "dot_decomposer")
# XLA:CPU's order: expanders before the "simplification" fixed point.
SEQUENCE = ("comparison-expander", "dot_decomposer", "batchnorm_expander",
            "logistic-expander", "algsimp", "while-loop-constant-sinking",
            "simplify-while-loops", "reshape-mover", "constant_folding",
            "simplify-conditional", "algsimp")

# XLA's own pass tests (modules up to MAX_ELEMENTS elements per value).
CORPUS_SOURCES = ("algebraic_simplifier_test.cc", "hlo_constant_folding_test.cc",
                  "reshape_mover_test.cc", "while_loop_simplifier_test.cc",
                  "dot_decomposer_test.cc", "batchnorm_expander_test.cc")
MAX_ELEMENTS = 1 << 16
# Loops that never end (their conditions are constant true or ignore the inputs).
NON_TERMINATING = frozenset({
    "0972_testwithcontroldependencies.hlo", "1191_nontupleshapedloopnotsimplified.hlo",
    "1192_loopswappingtupleelementsnotsimplified.hlo",
    "1193_loopwithunusedbutmodifiedtupleelementnotsimplifi.hlo",
    "1195_loopwithemptytuplenotsimplified.hlo", "1196_loopwithelemusedtwicenotsimplified.hlo",
    "1200_loopwithnontuplebodyshapenotsimplified.hlo", "1203_flattennestedtuple.hlo",
    "1204_onlyconstantsinloopcarry.hlo", "1205_removeconstantfromloopcarry.hlo"})


def _dump_cases():
    return sorted(p.name.split(".")[0] for p in DUMPS.glob("*.npz")
                  if (DUMPS / f"{p.stem}.before_optimizations.hlo").exists())


def _small(module) -> bool:
    return all(leaf.size <= MAX_ELEMENTS for c in module.computations
               for i in c.instructions for leaf in i.shape.leaves()
               if hasattr(leaf, "size"))


def _corpus_cases():
    return [row["file"] for row in xla_manifest()
            if row["source_path"].endswith(CORPUS_SOURCES) and row["expect"] == "parse_ok"
            and row["file"] not in NON_TERMINATING]


def _load_dump(prog):
    text = (DUMPS / f"{prog}.before_optimizations.hlo").read_text()
    data = load_npz(DUMPS / f"{prog}.npz")
    n = sum(1 for k in data if k.startswith("in") and k[2:].isdigit())
    module = hloc.parse(text, prog)
    return text, bind_arguments(module, [data[f"in{i}"] for i in range(n)])


def _run(module, args):
    return Interpreter(module, seed=7).run(list(args))


def _check(text, args, label, names):
    module = hloc.parse(text, label)
    expected = _run(module, args)
    ctx = PassContext(verify_each=True)
    for name in names:
        ctx.run_pass(get_pass(name), module)
    errors = collect_errors(module)
    assert not errors, f"{label} after {names}: {errors[0].message}\n{hloc.to_text(module)}"
    actual = _run(module, args)
    result = near(expected, actual, SPEC)
    assert result.ok, f"{label} after {names}: {result.message}\n{hloc.to_text(module)}"


def _reference_error(text, args, label) -> str | None:
    """Why the interpreter cannot run the module before any pass, or None."""
    try:
        _run(hloc.parse(text, label), args)
    except HlocError as e:
        return e.message
    return None


@pytest.mark.parametrize("prog", _dump_cases())
def test_dump_passes_keep_values(prog):
    text, args = _load_dump(prog)
    if (why := _reference_error(text, args, prog)) is not None:
        pytest.skip(f"the interpreter cannot run this dump: {why}")
    for name in PASS_NAMES:
        _check(text, args, prog, (name,))
    _check(text, args, prog, SEQUENCE)


def _corpus_params():
    if not XLA.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason="no corpus"))]
    return _corpus_cases()


@pytest.mark.parametrize("name", _corpus_params())
def test_corpus_passes_keep_values(name):
    text = textwrap.dedent((XLA / name).read_text())
    try:
        module = hloc.parse(text, name)
    except HlocError:
        pytest.skip("does not parse")
    if collect_errors(module) or not _small(module) or \
            any(c.name.startswith("async") for c in module.computations):
        pytest.skip("not a runnable module")
    args = make_fake_arguments(module, seed=3)
    if (why := _reference_error(text, args, name)) is not None:
        pytest.skip(f"the interpreter cannot run this module: {why}")
    for pass_name in PASS_NAMES:
        _check(text, args, name, (pass_name,))


def test_algsimp_rules_are_documented():
    """Every algsimp rule is one (pattern, rewrite) pair: its text says `... => ...`."""
    from hloc.passes.algsimp import rule_table
    table = rule_table()
    assert len(table) > 100
    for opcode, doc in table:
        assert "=>" in doc, (opcode, doc)
