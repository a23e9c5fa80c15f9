"""Count guards for the parametrised corpus tests: a regression to `unsupported`, a new
skip or a vanished case set fails the run instead of hiding in an xfail or a skip.

`BOUNDS` maps a test function (`file::function`) to the least number of its cases that
must pass and the most that may be skipped, xfailed, or skipped/xfailed for an
UnsupportedError ("unsupported: ..." in the reason, counted apart from the other skips and
xfails) — today's figures; lower them when a case starts passing. The plugin (registered in conftest.py) records each case's outcome
and, at the end of a run that collected the function whole (no `-k`/`-m` deselection of
it, no `file::test` arguments, not interrupted), turns any bound broken into a failed run
with one line per broken bound. A run of the whole suite also fails when a guarded
function was not collected at all.

Functions marked `shared` read ../shared (the corpus beside the checkout). Without it a
CI run (`CI=true`) fails: each of their skips, and any skip whose reason names the corpus
or ../shared, is reported as a failure, and the run fails with a line saying so. A local
run prints one line saying how many cases were left out and does not check their bounds.
"""
from __future__ import annotations

import collections
import os
from dataclasses import dataclass

import pytest

from corpus import SHARED


@dataclass(frozen=True)
class Bound:
    min_passed: int
    max_skipped: int = 0
    max_xfailed: int = 0
    max_unsupported: int = 0
    shared: bool = False        # reads ../shared


def _b(passed, skipped=0, xfailed=0, unsupported=0, shared=True):
    return Bound(passed, skipped, xfailed, unsupported, shared)


BOUNDS: dict[str, Bound] = {
    # ../shared/corpus/xla
    "tests/test_corpus_xla.py::test_parse_errors_are_located": _b(43, 0, 47),
    "tests/test_corpus_xla.py::test_parse_ok_modules_parse_and_print_idempotently": _b(1580),
    "tests/test_corpus_xla.py::test_round_trip_is_byte_exact": _b(101),
    "tests/test_corpus_xla.py::test_verifier_accepts_valid_modules": _b(1093, 0, 13),
    "tests/test_corpus_xla.py::test_verifier_failures_are_reported": _b(93, 0, 5),
    "tests/test_opt_simplify.py::test_corpus_passes_keep_values": _b(271, 59, 0, 9),
    "tests/test_backend_xla_corpus.py::test_compiled_matches_interpreter": _b(282, 64, 0, 49),
    # ../shared/corpus/stablehlo
    "tests/test_stablehlo_corpus.py::test_stablehlo_case": _b(2810, 0, 10),
    # testdata/dumps (checked in)
    "tests/test_differential_dumps.py::test_dump_matches_xla": _b(158, 0, 6, shared=False),
    "tests/test_opt_differential.py::test_opt_preserves_values": _b(82, shared=False),
    "tests/test_opt_simplify.py::test_dump_passes_keep_values": _b(82, shared=False),
    "tests/test_fusion.py::test_fusion_keeps_values_bit_for_bit": _b(83, shared=False),
    "tests/test_fusion.py::test_refusing_xla_dumps_gives_xla_partition": _b(83, shared=False),
    "tests/test_roundtrip_dumps.py::test_dump_prints_back_byte_for_byte": _b(166, shared=False),
    "tests/test_opt_passes.py::test_opt_case": _b(143, shared=False),
    # multi-device, compiled (testdata/multidevice; corpus values from XLA:CPU)
    "tests/test_compiled_multidevice.py::"
    "test_after_dump_compiled_on_4_devices_gives_jax_and_interpreter_values": _b(7, shared=False),
    "tests/test_compiled_multidevice.py::"
    "test_corpus_module_compiled_gives_xla_results_on_every_device": _b(5),
}


def _key(nodeid: str) -> str:
    return nodeid.split("[", 1)[0]


def ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


class OutcomeGuard:
    def __init__(self, config):
        self.config = config
        self.outcomes: dict[str, collections.Counter] = collections.defaultdict(
            collections.Counter)
        self.collected: collections.Counter = collections.Counter()
        self.deselected: set[str] = set()
        self.problems: list[str] = []
        self.notes: list[str] = []

    def pytest_deselected(self, items):
        self.deselected.update(_key(i.nodeid) for i in items)

    def pytest_collection_finish(self, session):
        self.collected.update(_key(i.nodeid) for i in session.items)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.skipped and not hasattr(report, "wasxfail") and ci() and \
                not SHARED.exists():
            why = str(report.longrepr)
            bound = BOUNDS.get(_key(item.nodeid))
            if (bound is not None and bound.shared) or "corpus" in why or "shared" in why:
                report.outcome = "failed"
                report.longrepr = f"../shared is missing and CI=true; the test skipped: {why}"

    def pytest_runtest_logreport(self, report):
        key = _key(report.nodeid)
        if key not in BOUNDS:
            return
        if report.when == "call" or report.failed or report.skipped:
            if report.skipped:
                outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
                why = getattr(report, "wasxfail", None) or str(report.longrepr)
                if "unsupported: " in why:
                    outcome = "unsupported"
            else:
                outcome = "failed" if report.failed else "passed"
            self.outcomes[key][outcome] += 1

    def _partial(self) -> bool:
        args = self.config.args
        return any("::" in a for a in args)

    def check(self, session) -> None:
        if session.shouldstop or session.shouldfail or self._partial():
            return
        whole = not self.config.option.keyword and not self.config.option.markexpr and \
            all(os.path.samefile(a, self.config.rootpath / "tests")
                for a in self.config.args if os.path.exists(a))
        shared_missing = not SHARED.exists()
        if shared_missing:
            left_out = sum(b.min_passed + b.max_skipped + b.max_xfailed + b.max_unsupported
                           for k, b in BOUNDS.items() if b.shared and self.collected[k])
            if ci():
                self.problems.append(f"../shared ({SHARED}) is missing and CI=true: "
                                     f"about {left_out} corpus cases did not run")
            else:
                self.notes.append(f"../shared absent: about {left_out} corpus cases left out "
                                  "(with CI=true this fails)")
        for key, bound in BOUNDS.items():
            if key in self.deselected:
                continue
            if not self.collected[key]:
                if whole:
                    self.problems.append(f"{key}: not collected")
                continue
            if bound.shared and shared_missing and not ci():
                continue
            got = self.outcomes[key]
            if got["passed"] < bound.min_passed:
                self.problems.append(f"{key}: {got['passed']} passed, at least "
                                     f"{bound.min_passed} expected ({dict(got)})")
            for what, most in (("skipped", bound.max_skipped), ("xfailed", bound.max_xfailed),
                               ("unsupported", bound.max_unsupported)):
                if got[what] > most:
                    self.problems.append(f"{key}: {got[what]} {what}, at most {most} "
                                         f"allowed ({dict(got)})")

    def pytest_sessionfinish(self, session):
        self.check(session)
        if self.problems and session.exitstatus == 0:
            session.exitstatus = 1

    def pytest_terminal_summary(self, terminalreporter):
        for line in self.notes:
            terminalreporter.write_line(line)
        if self.problems:
            terminalreporter.section("outcome guard (tests/outcome_guard.py)", red=True)
            for line in self.problems:
                terminalreporter.write_line("GUARD FAILED: " + line, red=True)
