"""Verification after a pass limited to what changed (hloc.verify.incremental) against
whole-module verification: after every changing pass of the default pipeline on every
before-optimizations dump and every XLA corpus module that verifies, both report the
same errors (none), and modules corrupted
through the IR API right after a pass (a wrong shape, attribute, operand, callee root,
callee parameter or callee thread) are caught by both with the same errors."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

import hloc
from hloc.diagnostics import HlocError
from hloc.ir.graph import fusion_computations
from hloc.ir.invariants import graph_errors
from hloc.ir.shape import ArrayShape
from hloc.passes import default_pipeline
from hloc.passes.base import PassContext
from hloc.verifier import collect_errors
from hloc.verify.incremental import Verifier

from corpus import XLA, needs_corpus, xla_files

ROOT = Path(__file__).resolve().parents[1]
DUMPS = sorted((ROOT / "testdata" / "dumps").glob("*.before_optimizations.hlo"))


def _full(module):
    broken = graph_errors(module)
    return broken, ([] if broken else [str(e) for e in collect_errors(module)])


class Both:
    """The PassContext's verifier: the incremental one, checked against a whole-module
    run each time; `corrupt(module, rng)` (optional) edits the module first and undoes
    the edit afterwards."""

    def __init__(self, module, corrupt=None, seed=0):
        self.module = module
        self.inner = Verifier(module)
        self.corrupt = corrupt
        self.rng = random.Random(seed)
        self.runs = self.caught = 0

    def check(self):
        undo = self.corrupt(self.module, self.rng) if self.corrupt and self.runs else None
        broken, errors = self.inner.check()
        got = (broken, [str(e) for e in errors])
        want = _full(self.module)
        assert got == want, f"run {self.runs}: incremental {got} vs whole module {want}"
        self.runs += 1
        if undo is not None:
            self.caught += bool(want[0] or want[1])
            undo()
            broken, errors = self.inner.check()     # the pass goes on with the module
            assert (broken, errors) == ([], []), "the undo left the module broken"
        return broken, errors

    @property
    def limited(self) -> int:
        return self.inner.limited_runs


def _optimize(path: Path, **kw) -> Both | None:
    """The default pipeline on `path` with a Both verifier (None: the module does not
    verify, or a pass refuses it)."""
    try:
        module = hloc.parse(path.read_text(), str(path))
        if collect_errors(module):
            return None
    except HlocError:
        return None
    for comp in fusion_computations(module):
        comp.is_fusion_computation = True
    both = Both(module, **kw)
    assert both.check() == ([], [])
    try:
        PassContext(verify_each=True, verifier=both).run_pass(default_pipeline(), module)
    except HlocError:
        return None
    return both


def _xla_corpus() -> list[Path]:
    return [XLA / f for f in xla_files()]


def test_corpus_is_there():
    assert len(DUMPS) >= 80


def _all_passes(paths) -> tuple[int, int, int]:
    modules = runs = limited = 0
    for path in paths:
        both = _optimize(path)
        if both is not None:
            modules += 1
            runs += both.runs
            limited += both.limited
    return modules, runs, limited


def test_incremental_equals_whole_module_after_every_pass():
    modules, runs, limited = _all_passes(DUMPS)
    # Guards: every dump ran, with several changing passes, most runs limited.
    assert (modules, runs >= 4 * len(DUMPS), limited >= 3 * len(DUMPS)) == \
        (len(DUMPS), True, True), (modules, runs, limited)


@needs_corpus
def test_incremental_equals_whole_module_on_the_xla_corpus():
    modules, runs, limited = _all_passes(_xla_corpus())
    assert modules >= 1400 and runs >= 2500 and limited >= 700, (modules, runs, limited)


# ---------------------------------------------------------------------------
# Corruptions through the IR API, each with its undo (None: nothing to corrupt here).

def _insts(module):
    return [i for c in module.computations for i in c.instructions]


def _arrays(module, pred=lambda i: True):
    return [i for i in _insts(module) if isinstance(i.shape, ArrayShape) and pred(i)]


def _wrong_shape(shape: ArrayShape) -> ArrayShape:
    return ArrayShape(shape.dtype, shape.dims + (3,))


def corrupt_shape(module, rng):
    cands = _arrays(module, lambda i: i.opcode != "parameter" or i.parent is not module.entry)
    if not cands:
        return None
    inst = rng.choice(cands)
    old = inst.shape
    inst.set_shape(_wrong_shape(old))
    return lambda: inst.set_shape(old)


def corrupt_attr(module, rng):
    cands = [i for i in _insts(module) if i.attrs.get("dimensions")]
    if not cands:
        return None
    inst = rng.choice(cands)
    old = inst.attrs["dimensions"]
    inst.set_attr("dimensions", tuple(d + 7 for d in old))
    return lambda: inst.set_attr("dimensions", old)


def corrupt_operand(module, rng):
    pairs = []
    for comp in module.computations:
        params = [p for p in comp.parameters if p is not None]
        for inst in comp.instructions:
            if inst.operands and inst.opcode not in ("tuple", "get-tuple-element"):
                other = [p for p in params if p.shape != inst.operands[0].shape]
                if other:
                    pairs.append((inst, other[0]))
    if not pairs:
        return None
    inst, param = rng.choice(pairs)
    old = inst.operands[0]
    inst.set_operand(0, param)
    return lambda: inst.set_operand(0, old)


def _callees(module):
    return [c for i in _insts(module) for c in i.called_computations()]


def corrupt_callee_root(module, rng):
    cands = [(c, p) for c in _callees(module) for p in c.parameters
             if p is not None and c.root is not None and p.shape != c.root.shape]
    if not cands:
        return None
    comp, param = rng.choice(cands)
    old = comp.root
    comp.set_root_instruction(param)
    return lambda: comp.set_root_instruction(old)


def corrupt_callee_parameter(module, rng):
    cands = [p for c in _callees(module) for p in c.parameters
             if p is not None and isinstance(p.shape, ArrayShape)]
    if not cands:
        return None
    param = rng.choice(cands)
    old = param.shape
    param.set_shape(_wrong_shape(old))
    return lambda: param.set_shape(old)


def corrupt_callee_thread(module, rng):
    cands = _callees(module)
    if not cands:
        return None
    comp = rng.choice(cands)
    old = comp.execution_thread
    comp.execution_thread = "elsewhere"
    return lambda: setattr(comp, "execution_thread", old)


CORRUPTIONS = [corrupt_shape, corrupt_attr, corrupt_operand, corrupt_callee_root,
               corrupt_callee_parameter, corrupt_callee_thread]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=[c.__name__ for c in CORRUPTIONS])
def test_corruptions_after_a_pass_are_caught_the_same(corrupt):
    caught = limited = 0
    for n, path in enumerate(DUMPS[::4] + _xla_corpus()[::50]):
        both = _optimize(path, corrupt=corrupt, seed=n)
        if both is not None:
            caught += both.caught
            limited += both.limited
    # Guards: the corruptions really broke modules, and runs really were limited.
    assert caught >= 10, caught
    assert limited >= 10, limited


def test_a_small_edit_is_checked_alone_and_header_changes_check_everything():
    path = ROOT / "testdata" / "dumps" / "bert_train_step.before_optimizations.hlo"
    module = hloc.parse(path.read_text(), str(path))
    verifier = Verifier(module)
    assert verifier.check() == ([], [])
    total = verifier.last_checked
    assert total == sum(len(c.instructions) for c in module.computations) > 1000
    inst = next(i for i in module.entry.instructions if i.opcode == "add")
    inst.set_attr("metadata", inst.attrs.get("metadata"))
    assert verifier.check() == ([], []) and 0 < verifier.last_checked < 10
    assert verifier.check() == ([], []) and verifier.last_checked == 0
    module.attrs["num_partitions"] = 1
    assert verifier.check() == ([], []) and verifier.last_checked == total
