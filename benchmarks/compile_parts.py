"""Where a module's LLVM time goes, part by part: the parts the JIT compiles, each alone.

    PYTHONPATH=. python benchmarks/compile_parts.py [CASE ...] [--repeat N] [--functions]

For run.py's file cases (the MLP / BERT-like / CNN training steps and the two scans;
CASE: a substring of the name): every part of the module's split
(hloc.backend.llvm_parts.module_parts: the JIT's plan, units included) with the
settings `hloc emit-llvm` prints in its header, its IR size, how many functions it
defines (owned: external, compiled as they are; shared: internal copies, inlined where
called), and its parse / optimise / code-generation ms compiled alone on one thread,
best of --repeat, with its share of the module's sum. The part with the largest share
bounds the LLVM wall time however many cores there are (compile_time.py's "LLVM"
column: the parts on threads); --functions lists each part's functions (* = owned).
Not a test: timings on a shared machine vary; compare process CPU, not wall, when others
are working.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hloc  # noqa: E402
from hloc.backend import compile_threads, jit, llvm_parts  # noqa: E402
from hloc.backend.context import Options  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from run import FILE_CASES, _file_case  # noqa: E402

_DEFINE = re.compile(r'^define ([^@]*)@"((?:[^"\\]|\\.)*)"', re.M)
PHASES = ("parse", "optimise", "codegen")


def part_seconds(part: llvm_parts.Part) -> dict:
    """Seconds per phase of one part compiled alone, as the JIT compiles it."""
    stats = compile_threads.Stats()
    with compile_threads.OPTIONS_LOCK.compiling(part.brief):
        compile_threads.compile_one(part.text, lambda: jit.compile_machine(part.codegen),
                                    part.level, compile_threads.available(), stats, part.slp)
    return dict(stats.seconds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--functions", action="store_true", help="list each part's functions")
    opts = ap.parse_args(argv)
    jit.host()
    for name, stem in FILE_CASES.items():
        if opts.cases and not any(c in name for c in opts.cases):
            continue
        module = hloc.parse(_file_case(stem)[0], name)
        prepare_for_cpu(module, None)
        parts = llvm_parts.module_parts(module, Options(), optimized=False)
        best = [dict.fromkeys(PHASES, float("inf")) for _ in parts]
        for _ in range(opts.repeat):
            for b, part in zip(best, parts):
                for phase, s in part_seconds(part).items():
                    b[phase] = min(b[phase], s)
        total = sum(sum(b.values()) for b in best)
        print(f"## {name}: {len(parts)} parts, {total * 1e3:.0f} ms LLVM alone on one thread "
              f"(best of {opts.repeat})")
        print("| part | settings | IR KiB | owned / shared | parse | optimise | codegen | "
              "sum | share |")
        print("|---" * 9 + "|")
        for part, b in zip(parts, best):
            defs = _DEFINE.findall(part.text)
            owned = sum(1 for linkage, _ in defs if "internal" not in linkage
                        and "private" not in linkage)
            s = sum(b.values())
            settings = part.header().split(": ", 1)[1]
            print(f"| {part.index + 1} | {settings} | {len(part.text) / 1024:.0f} | "
                  f"{owned} / {len(defs) - owned} | "
                  + " | ".join(f"{b[p] * 1e3:.0f}" for p in PHASES)
                  + f" | {s * 1e3:.0f} | {s / total:.0%} |")
            if opts.functions:
                print("|  | " + ", ".join(n + ("" if "internal" in linkage or "private" in linkage
                                               else "*") for linkage, n in defs) + " |")
        print()


if __name__ == "__main__":
    main()
