"""Text tests of the optimisation passes: every testdata/opt/**/*.hlo runs through
`hloc opt` with the flags of its `// RUN:` line and its `// CHECK` lines must match the
printed module (tests/filecheck.py has the supported FileCheck subset). Every pass has a
test that fails when the pass is disabled (tools/mutate_check.py reports, for every pass,
which of all the tests notice)."""
from __future__ import annotations

from pathlib import Path

import pytest

from filecheck import FileCheckError, check, parse_checks, run_args
from opt_cli import invoke_opt, opt_case_fails

from hloc.passes import PASSES
from hloc.passes import pipelines  # noqa: F401  (imports, so registers, every pass)

OPT = Path(__file__).resolve().parents[1] / "testdata" / "opt"
CASES = sorted(OPT.rglob("*.hlo"))


@pytest.mark.parametrize("path", CASES, ids=[str(p.relative_to(OPT)) for p in CASES])
def test_opt_case(path):
    text = path.read_text()
    args = run_args(text, str(path))
    checks = parse_checks(text)
    result = invoke_opt(args)
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stderr}{result.stdout}"
    check(result.stdout, checks, str(path.relative_to(OPT)))


def _passes_named(path) -> set[str]:
    return {n for a in run_args(path.read_text(), str(path)) if a.startswith("--passes=")
            for n in a[len("--passes="):].split(",")}


@pytest.mark.parametrize("name", sorted(PASSES))
def test_disabling_a_pass_fails_one_of_its_tests(name):
    """A pass that does nothing must not leave the CHECK tests green: among the tests whose
    RUN line names the pass, one fails with --disable-passes=<pass>."""
    mine = [p for p in CASES if name in _passes_named(p)]
    assert mine, f"no testdata/opt test runs {name} by name"
    assert any(opt_case_fails(p, name) for p in mine), \
        f"every test running {name} passes with it disabled: {[p.name for p in mine]}"


# -- the FileCheck subset itself ----------------------------------------------------

OUT = """HloModule m
ENTRY %e (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  %n = f32[] negate(%p)
  ROOT %a = f32[] add(%n,  %p)
}
"""


def _checks(*lines):
    return parse_checks("\n".join(f"// {l}" for l in lines))


def test_filecheck_in_order_next_same_and_variables():
    check(OUT, _checks("CHECK: ENTRY", "CHECK-NEXT: %p = f32[] parameter(0)",
                       "CHECK-NEXT: [[N:%[a-z]+]] = f32[] negate(%p)",
                       "CHECK-NEXT: ROOT %a = f32[] add([[N]], %p)",
                       "CHECK-SAME: {{$}}", "CHECK-NOT: multiply"))


@pytest.mark.parametrize("lines", [
    ("CHECK: ROOT", "CHECK: negate"),                  # order matters
    ("CHECK: %p = f32[]", "CHECK-NEXT: ROOT"),          # NEXT is the very next line
    ("CHECK: ENTRY", "CHECK-NOT: negate", "CHECK: ROOT"),
    ("CHECK: parameter", "CHECK-SAME: negate"),
    ("CHECK: multiply",),
])
def test_filecheck_failures(lines):
    with pytest.raises(FileCheckError):
        check(OUT, _checks(*lines))


def test_filecheck_rejects_unknown_directives_and_needs_run_line():
    with pytest.raises(FileCheckError):
        parse_checks("// CHECK-DAG: x")
    with pytest.raises(FileCheckError):
        run_args("HloModule m", "x.hlo")
    assert run_args("// RUN: hloc opt %s --passes=dce | FileCheck %s", "f.hlo") == \
        ["f.hlo", "--passes=dce"]
