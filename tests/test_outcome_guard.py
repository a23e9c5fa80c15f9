"""The count guard itself (outcome_guard.py): it must flag fewer passes, more skips,
xfails or unsupported cases, a guarded test that was not collected, and ../shared missing
under CI=true; and stay quiet on a partial run."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import pytest

import outcome_guard as og

ROOT = Path(__file__).resolve().parents[1]
BOUNDS = {"tests/t.py::f": og.Bound(2, max_skipped=1, max_xfailed=1, max_unsupported=0),
          "tests/t.py::g": og.Bound(1, shared=True)}


def _guard(args=("tests",), keyword=""):
    config = NS(args=[str(ROOT / a) for a in args], rootpath=ROOT,
                option=NS(keyword=keyword, markexpr=""))
    guard = og.OutcomeGuard(config)
    guard.pytest_collection_finish(NS(items=[NS(nodeid=f"tests/t.py::f[{i}]") for i in range(4)]
                                   + [NS(nodeid="tests/t.py::g")]))
    return guard


def _report(nodeid, outcome, why=None):
    r = NS(nodeid=nodeid, when="call", passed=outcome == "passed",
           failed=outcome == "failed", skipped=outcome in ("skipped", "xfailed"),
           longrepr=("t.py", 1, f"Skipped: {why}") if outcome == "skipped" else None)
    if outcome == "xfailed":
        r.wasxfail = why or "listed"
    return r


def _run(guard, outcomes, shared=True, ci=False, monkeypatch=None):
    monkeypatch.setattr(og, "BOUNDS", BOUNDS)
    monkeypatch.setattr(og, "ci", lambda: ci)
    monkeypatch.setattr(og, "SHARED", ROOT if shared else ROOT / "no-such-dir")
    for i, (o, why) in enumerate(outcomes):
        guard.pytest_runtest_logreport(_report(f"tests/t.py::f[{i}]", o, why))
    guard.pytest_runtest_logreport(_report("tests/t.py::g", "passed"))
    session = NS(shouldstop=False, shouldfail=False, exitstatus=0)
    guard.pytest_sessionfinish(session)
    return session.exitstatus, guard.problems


TODAY = [("passed", None), ("passed", None), ("skipped", "x"), ("xfailed", "listed")]


def test_todays_figures_pass(monkeypatch):
    assert _run(_guard(), TODAY, monkeypatch=monkeypatch) == (0, [])


@pytest.mark.parametrize("outcomes,word", [
    ([("passed", None), ("failed", None)] + TODAY[2:], "passed"),
    ([("passed", None), ("passed", None), ("skipped", "x"), ("skipped", "y")], "skipped"),
    ([("passed", None), ("passed", None), ("xfailed", "a"), ("xfailed", "b")], "xfailed"),
    (TODAY[:3] + [("xfailed", "unsupported: opcode atan2 (instruction %a)")], "unsupported"),
    (TODAY[:2] + [("skipped", "unsupported: opcode atan2"), TODAY[3]], "unsupported"),
])
def test_a_regression_fails_the_run(outcomes, word, monkeypatch):
    status, problems = _run(_guard(), outcomes, monkeypatch=monkeypatch)
    assert status == 1 and any(word in p for p in problems), problems


def test_partial_runs_are_not_judged(monkeypatch):
    bad = [("failed", None)] * 4
    assert _run(_guard(args=("tests/t.py::f",)), bad, monkeypatch=monkeypatch) == (0, [])
    guard = _guard()
    guard.pytest_deselected([NS(nodeid="tests/t.py::f[0]")])
    assert _run(guard, bad, monkeypatch=monkeypatch)[0] == 0


def test_missing_shared_fails_only_under_ci(monkeypatch):
    guard = _guard()
    assert _run(guard, TODAY, shared=False, monkeypatch=monkeypatch)[0] == 0
    assert guard.notes and "left out" in guard.notes[0]
    status, problems = _run(_guard(), TODAY, shared=False, ci=True, monkeypatch=monkeypatch)
    assert status == 1 and "CI=true" in problems[0]


def test_a_guarded_test_that_vanished_fails_a_whole_run(monkeypatch):
    config = NS(args=[str(ROOT / "tests")], rootpath=ROOT, option=NS(keyword="", markexpr=""))
    guard = og.OutcomeGuard(config)
    guard.pytest_collection_finish(NS(items=[NS(nodeid=f"tests/t.py::f[{i}]")
                                             for i in range(4)]))
    status, problems = _run(guard, TODAY, monkeypatch=monkeypatch)
    assert status == 1 and any("tests/t.py::g: not collected" in p for p in problems)
