"""Object-cache hit path of the compiled back end, per testdata module.

    python benchmarks/cache_hit.py [SUBSTRING ...] [--cache-dir DIR]

For each testdata/dumps module: compile once (a miss unless DIR already holds it),
then time parse and `hloc.compile` again on a fresh parse (a hit: no HLO passes, no IR
generation — the key is the HLO text). Prints per module the miss (or first) time, the
hit's parse and compile times; the goal is compile <= 0.2 s on a hit for every module.
Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hloc  # noqa: E402
from hloc.diagnostics import HlocError  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--cache-dir", default=None)
    opts = ap.parse_args(argv)
    cache = opts.cache_dir or tempfile.mkdtemp(prefix="hloc-cache-")
    paths = sorted((ROOT / "testdata" / "dumps").glob("*.hlo"))
    if opts.names:
        paths = [p for p in paths if any(n in p.name for n in opts.names)]
    worst = (0.0, "")
    print(f"{'module':58} {'first s':>8} {'parse s':>8} {'hit s':>8}")
    for p in paths:
        try:
            t0 = time.perf_counter()
            hloc.compile(hloc.parse_file(p), cache_dir=cache)
            first = time.perf_counter() - t0
        except HlocError as e:
            print(f"{p.name:58} skipped: {str(e).splitlines()[0][:60]}")
            continue
        t0 = time.perf_counter()
        m = hloc.parse_file(p)
        t1 = time.perf_counter()
        exe = hloc.compile(m, cache_dir=cache)
        t2 = time.perf_counter()
        assert exe.cache_hit, p
        worst = max(worst, (t2 - t1, p.name))
        print(f"{p.name:58} {first:8.3f} {t1 - t0:8.3f} {t2 - t1:8.3f}")
    print(f"slowest hit: {worst[0]:.3f} s ({worst[1]}); goal <= 0.2 s")


if __name__ == "__main__":
    main()
