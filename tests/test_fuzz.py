"""The mutation fuzzer (hloc.devtools.fuzz) over testdata/, fixed seed, in the suite.

2,000 check-level mutants (parse + verify + print) and 150 deep ones (also the interpreter on
fake arguments and the default opt pipeline), with NumPy warnings as errors: every outcome
must be ok, a clean HlocError, or `unsupported`. A deep case may run over its budget only
inside an HLO while loop (a mutated trip count); anything else over budget fails.
tools/fuzz.py runs the same cases at scale, in worker processes.
"""
from __future__ import annotations

import collections
import signal
import traceback

import pytest

from hloc.devtools.fuzz import corpus, make_case, run_case, mutate

from corpus import TESTDATA

CHECK_CASES = 2000
DEEP_CASES = 150
DEEP_BUDGET_S = 3


class OverBudget(BaseException):
    """Raised by the alarm; a BaseException so run_case does not classify it."""


def _alarm(signum, frame):
    raise OverBudget


@pytest.fixture(scope="module")
def files():
    found = corpus(TESTDATA)
    assert len(found) >= 250, len(found)        # guards the corpus the counts assume
    return found


def _run(files, texts, index, deep):
    path, text, names, large = make_case(files, texts, index, 0, deep)
    out = run_case(text, deep=deep, seed=index, large_floats=large)
    return path, names, out


def test_check_level_mutants_never_crash(files):
    texts: dict = {}
    counts = collections.Counter()
    crashes = []
    for i in range(CHECK_CASES):
        path, names, out = _run(files, texts, i, False)
        counts[out.kind] += 1
        if out.kind == "crash":
            crashes.append(f"check {i} ({path.name}, {names}): {out.stage}: {out.detail}")
    assert not crashes, "\n".join(crashes)
    # Both outcomes must be common, or the mutations stopped reaching the verifier.
    assert counts["ok"] > CHECK_CASES // 10 and counts["error"] > CHECK_CASES // 3, counts


def test_deep_mutants_run_and_optimise_cleanly(files):
    small = [p for p in files if p.stat().st_size < 20_000]
    texts: dict = {}
    counts = collections.Counter()
    bad = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i in range(DEEP_CASES):
            signal.setitimer(signal.ITIMER_REAL, DEEP_BUDGET_S)
            try:
                path, names, out = _run(small, texts, i, True)
            except OverBudget as e:
                stack = traceback.extract_tb(e.__traceback__)
                in_loop = any(f.filename.endswith("core.py") and f.line and
                              f.line.startswith(("while bool(self.call(cond",
                                                 "state = self.call(body")) for f in stack)
                counts["over-budget"] += 1
                if not in_loop:
                    bad.append(f"deep {i}: over budget outside a while loop: {stack[-1]}")
                continue
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            counts[out.kind] += 1
            if out.kind == "crash":
                bad.append(f"deep {i} ({path.name}, {names}): {out.stage}: {out.detail}")
    finally:
        signal.signal(signal.SIGALRM, old)
    assert not bad, "\n".join(bad)
    assert counts["ok"] >= DEEP_CASES // 4, counts


def test_mutations_are_deterministic(files):
    import random
    text = files[0].read_text()
    a = mutate(text, random.Random("x"))
    b = mutate(text, random.Random("x"))
    assert a == b and a[0] != text or a[1]
