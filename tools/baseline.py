"""The `--write DIR` / `--check DIR` loop of the byte-for-byte baseline tools
(tools/compare_opt.py, tools/compare_ir.py): each case's text is stored under a hashed
file name on --write and compared with it on --check (exit 1 on any difference or
missing case)."""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent


def main(argv, description: str, cases: Callable[[], Iterable[tuple[str, Callable[[], str]]]],
         suffix: str) -> int:
    """`cases()` gives (name, function computing the case's text) in a fixed order."""
    ap = argparse.ArgumentParser(description=description)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", help="store the outputs as the baseline")
    mode.add_argument("--check", metavar="DIR", help="compare against the baseline")
    ap.add_argument("-k", metavar="SUBSTR", help="only cases whose name contains SUBSTR")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    base = Path(a.write or a.check)
    todo = [(n, f) for n, f in cases() if not a.k or a.k in n]

    def file(name: str) -> Path:
        return base / (hashlib.sha1(name.encode()).hexdigest()[:16] + suffix)

    if a.write:
        base.mkdir(parents=True, exist_ok=True)
        (base / "INDEX").write_text("".join(f"{file(n).name} {n}\n" for n, _ in todo))
    bad = missing = 0
    for name, compute in todo:
        got = compute()
        f = file(name)
        if a.write:
            f.write_text(got, encoding="utf-8")
        elif not f.exists():
            missing += 1
            print(f"MISSING {name}")
        elif f.read_text(encoding="utf-8") != got:
            bad += 1
            print(f"DIFF {name} (baseline {f})")
    print(f"{len(todo)} cases, {bad} differ, {missing} without a baseline")
    return 1 if bad or missing else 0
