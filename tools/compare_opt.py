"""Compare `hloc opt` output over every dump in testdata/ against a stored baseline.

Dev tool for refactors that must not change behaviour (issue 10): capture a baseline from
the code before the change, then check the changed code against it byte for byte.

    python tools/compare_opt.py --write /work/i10-baseline    # before
    python tools/compare_opt.py --check /work/i10-baseline    # after: exit 1 on any diff

Cases per .hlo file under testdata/: the default pipeline; `--force` as well on
after-optimizations dumps (the default pipeline skips them); and each `// RUN: hloc opt
%s ARGS` line's ARGS. Every case records the exit status, stdout and stderr. `hloc opt`
runs in-process (click's CliRunner), in a fixed order.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_RUN = re.compile(r"^// RUN: hloc opt %s(.*)$", re.M)


def cases(root: Path) -> list[tuple[str, list[str]]]:
    """(case name, opt arguments) for every .hlo file under root/testdata."""
    out = []
    for path in sorted((root / "testdata").rglob("*.hlo")):
        rel = path.relative_to(root).as_posix()
        out.append((f"{rel}#default", [rel]))
        if path.name.endswith(".after_optimizations.hlo"):
            out.append((f"{rel}#force", [rel, "--force"]))
        text = path.read_text(encoding="utf-8", errors="replace")
        for n, m in enumerate(_RUN.finditer(text)):
            out.append((f"{rel}#run{n}", [rel, *m.group(1).split()]))
    return out


def run_case(args: list[str]) -> str:
    from click.testing import CliRunner

    from hloc.cli import main
    if "opt" not in main.commands:
        from hloc.cli_opt import opt
        main.add_command(opt)
    r = CliRunner().invoke(main, ["opt", *args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        err = f"EXCEPTION {type(r.exception).__name__}: {r.exception}"
    else:
        err = r.stderr
    return f"exit={r.exit_code}\n--- stderr\n{err}\n--- stdout\n{r.stdout}"



def main(argv=None) -> int:
    from baseline import main as baseline_main
    return baseline_main(argv, __doc__.splitlines()[0],
                         lambda: [(n, lambda a=a: run_case(a)) for n, a in cases(ROOT)], ".txt")


if __name__ == "__main__":
    sys.exit(main())
