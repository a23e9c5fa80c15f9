"""Compare the LLVM IR the compiled back end emits against a stored baseline.

Dev tool for changes to LLVM IR generation that must not change the code (issue 12):
capture a baseline from the code before the change, then check the changed code against
it byte for byte.

    python tools/compare_ir.py --write /tmp/ir-baseline    # before
    python tools/compare_ir.py --check /tmp/ir-baseline    # after: exit 1 on any diff

Cases: every testdata/dumps/*.hlo and benchmarks/run.py's modules (the file cases and the
small text cases), each after the default HLO pipeline (as `hloc run` / `hloc.compile`),
lowered in xla-cpu and ieee numerics, and in xla-cpu with profiling. A case records the
whole module's IR text, every part's text, the parts' SLP flags, the arena size and the
donation / profile-site tables (hloc.backend.jit.Lowered), or the error a module raises.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules() -> list[tuple[str, str]]:
    """(name, HLO text) of every case module, in a fixed order."""
    out = [(p.relative_to(ROOT).as_posix(), p.read_text())
           for p in sorted((ROOT / "testdata" / "dumps").glob("*.hlo"))]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run as bench
    for name, (text, _, _) in bench.CASES.items():
        out.append((f"run.py:{name}", text))
    for name, stem in bench.FILE_CASES.items():
        out.append((f"run.py:{name}", bench._file_case(stem)[0]))
    return out


def lowered_text(text: str, name: str, options) -> str:
    import hloc
    from hloc.backend import jit
    from hloc.cli_backend import prepare_for_cpu
    try:
        module = prepare_for_cpu(hloc.parse(text, name), None)
        low = jit.lower(module, options)
    except Exception as e:          # noqa: BLE001  (the error is part of what must not change)
        return f"ERROR {type(e).__name__}: {e}\n"
    meta = (f"arena={low.arena} slp={low.slp} donated={getattr(low, 'donated', None)} "
            f"sites={low.sites} merged={getattr(low, 'kernels_merged', None)}")
    return "\n;; PART\n".join([meta, low.ir_text, *low.parts])


def _file(base: Path, name: str) -> Path:
    return base / (hashlib.sha1(name.encode()).hexdigest()[:16] + ".ll")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="DIR", help="store the IR as the baseline")
    mode.add_argument("--check", metavar="DIR", help="compare against the baseline")
    ap.add_argument("-k", metavar="SUBSTR", help="only cases whose name contains SUBSTR")
    a = ap.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    from hloc.backend.context import Options
    base = Path(a.write or a.check)
    variants = {"xla-cpu": Options("xla-cpu"), "ieee": Options("ieee"),
                "xla-cpu+profile": Options("xla-cpu", profile=True)}
    todo = [(f"{m}#{v}", m, t, o) for m, t in modules() for v, o in variants.items()
            if not a.k or a.k in f"{m}#{v}"]
    if a.write:
        base.mkdir(parents=True, exist_ok=True)
        (base / "INDEX").write_text("".join(f"{_file(base, n).name} {n}\n" for n, *_ in todo))
    bad = missing = 0
    for name, mod, text, options in todo:
        got = lowered_text(text, mod, options)
        f = _file(base, name)
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


if __name__ == "__main__":
    sys.exit(main())
