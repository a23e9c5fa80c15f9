#!/usr/bin/env python3
"""Which opt CHECK tests notice when a pass is disabled.

For every pass `hloc opt --list-passes` names, each testdata/opt/**/*.hlo test is run
in-process as tests/test_opt_passes.py runs it, with `--disable-passes=<pass>` added to its
RUN line; a test "notices" when it then fails (non-zero exit or a CHECK line not
matched). Prints one line per pass (how many tests notice, and which), and exits 1 when
some pass is noticed by no test, i.e. disabling it would leave the suite green.

Usage::

    PYTHONPATH=. python tools/mutate_check.py [-v] [PASS ...]

Dev tool; the suite's own guard is
tests/test_opt_passes.py::test_disabling_a_pass_fails_one_of_its_tests (only the tests
whose RUN line names the pass).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from opt_cli import opt_case_fails  # noqa: E402

from hloc.passes import PASSES  # noqa: E402

OPT = ROOT / "testdata" / "opt"


def case_fails(path: Path, disabled: str | None) -> bool:
    return opt_case_fails(path, disabled) is not None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("passes", nargs="*", help="passes to disable (default: all)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every noticing test")
    ns = ap.parse_args(argv)
    cases = sorted(OPT.rglob("*.hlo"))
    broken = [c for c in cases if case_fails(c, None)]
    if broken:
        print("failing without any pass disabled:", *(str(c.relative_to(OPT)) for c in broken))
        return 2
    unnoticed = []
    for name in ns.passes or sorted(PASSES):
        noticed = [str(c.relative_to(OPT)) for c in cases if case_fails(c, name)]
        shown = noticed if ns.verbose else noticed[:4] + (["..."] if len(noticed) > 4 else [])
        print(f"{name:30s} {len(noticed):4d} of {len(cases)} tests notice  {' '.join(shown)}")
        if not noticed:
            unnoticed.append(name)
    if unnoticed:
        print("disabled without any CHECK test failing:", ", ".join(unnoticed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
