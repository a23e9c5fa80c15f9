"""Per-call overhead of the prepared-executable API (goal <= 40 us for one small kernel).

    python benchmarks/call_overhead.py [--calls N]

Compiles `f32[16] add(a, b)` once with `hloc.compile` and times N calls of
`exe.run([a, b])` from Python (argument checks, pointer arrays, the pooled result, the
native call). Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402

TEXT = ("HloModule m\n\nENTRY e {\n  a = f32[16] parameter(0)\n  b = f32[16] parameter(1)\n"
        "  ROOT r = f32[16] add(a, b)\n}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20000)
    opts = ap.parse_args(argv)
    exe = hloc.compile(hloc.parse(TEXT))
    a, b = np.ones(16, np.float32), np.full(16, 2, np.float32)
    assert np.all(exe.run([a, b]) == 3)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(opts.calls):
            exe.run([a, b])
        best = min(best, (time.perf_counter() - t0) / opts.calls)
    print(f"{best * 1e6:.1f} us per call (best of 5 x {opts.calls} calls); goal <= 40 us")


if __name__ == "__main__":
    main()
