"""`hloc opt --force` of its own output prints the same text (issue 13).

test_opt_differential.py checks this on every dump with inputs; here the rest: the
before-optimizations dumps without inputs, and XLA's after-optimizations dumps (forced
once, then forced again on hloc's output). The first forced run of an XLA-optimized module
may change it; the second must not.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import hloc
from hloc.passes import default_pipeline
from hloc.passes.driver import optimize
from hloc.printer import module_to_text

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
NO_INPUTS = sorted(p.name[:-len(".before_optimizations.hlo")]
                   for p in DUMPS.glob("*.before_optimizations.hlo")
                   if not (DUMPS / p.name.replace(".before_optimizations.hlo", ".npz")).exists())
AFTER = sorted(p.name[:-len(".after_optimizations.hlo")]
               for p in DUMPS.glob("*.after_optimizations.hlo"))


def _opt(text: str, force: bool):
    module = hloc.parse(text, "fixed-point")
    result = optimize(module, default_pipeline(), force=force)
    return module_to_text(module), result


def _check(first: str):
    again, result = _opt(first, force=True)
    assert again == first, "opt --force of opt differs; changed by: " + \
        ", ".join(t.name for t in result.timings.values() if t.changes)


def test_corpus_counts():
    assert len(NO_INPUTS) >= 1 and len(AFTER) >= 80, (len(NO_INPUTS), len(AFTER))


@pytest.mark.parametrize("prog", NO_INPUTS)
def test_before_dump_without_inputs(prog):
    _check(_opt((DUMPS / f"{prog}.before_optimizations.hlo").read_text(), force=False)[0])


@pytest.mark.parametrize("prog", AFTER)
def test_xla_optimized_dump(prog):
    _check(_opt((DUMPS / f"{prog}.after_optimizations.hlo").read_text(), force=True)[0])
