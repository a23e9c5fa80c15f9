"""Donated parameters: a 64 MiB parameter updated per call, donated vs not.

    python benchmarks/donate.py [--mib 64] [--repeat 50] [--threads N]

Cases (f32, ENTRY parameter 0 aliased to the output, `input_output_alias`):
* dus: a [1, n] row written by a dynamic-update-slice at a moving row (a ring buffer);
  donated, only the row is written; not donated, the whole parameter is copied into a
  result buffer first.
* sgd: w - 0.1*g over the whole array (one fused kernel); donated, in place (no
  result buffer: 2 streams of 64 MiB read, 1 written, as without donation).
Each call feeds the previous result back as the argument (a training loop); best and
median ms per call and the ratio donated / not donated. Not a test: timings on a shared
machine vary.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402


def modules(rows: int, cols: int) -> dict[str, str]:
    a = f"f32[{rows},{cols}]"
    head = "HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n\n"
    return {
        "dus": head + f"ENTRY e {{\n  p = {a} parameter(0)\n  u = f32[1,{cols}] parameter(1)\n"
                      f"  i = s32[] parameter(2)\n  z = s32[] constant(0)\n"
                      f"  ROOT d = {a} dynamic-update-slice(p, u, i, z)\n}}\n",
        "sgd": head + f"ENTRY e {{\n  p = {a} parameter(0)\n  g = {a} parameter(1)\n"
                      f"  c = f32[] constant(0.1)\n  b = {a} broadcast(c), dimensions={{}}\n"
                      f"  m = {a} multiply(g, b)\n  ROOT r = {a} subtract(p, m)\n}}\n",
    }


def timed(exe, state, rest, repeat: int, case: str) -> tuple[float, float, np.ndarray]:
    times = []
    for k in range(repeat + 3):
        args = [state] + rest(k)
        t = time.perf_counter()
        state = exe.run(args)
        times.append(time.perf_counter() - t)
    times = times[3:]
    return min(times) * 1e3, statistics.median(times) * 1e3, state


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None)
    o = ap.parse_args(argv)
    cols = 4096
    rows = o.mib * 2**20 // 4 // cols
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((rows, cols)).astype(np.float32)
    g = rng.standard_normal((rows, cols)).astype(np.float32)
    u = rng.standard_normal((1, cols)).astype(np.float32)
    rests = {"dus": lambda k: [u, np.int32((7 * k) % rows)], "sgd": lambda k: [g]}
    print(f"parameter f32[{rows},{cols}] ({o.mib} MiB), best/median of {o.repeat} calls, ms")
    print(f"{'case':6} {'plain best':>11} {'plain med':>10} {'donated best':>13} "
          f"{'donated med':>12} {'ratio best':>11} {'placement':>10} {'pool MiB plain/don':>19}")
    for case, text in modules(rows, cols).items():
        plain = hloc.compile(hloc.parse(text), optimize=True)     # the default pipeline
        don = hloc.compile(hloc.parse(text), optimize=True, donate=(0,))
        if o.threads:
            plain.set_threads(o.threads)
            don.set_threads(o.threads)
        pb, pm, pres = timed(plain, x0.copy(), rests[case], o.repeat, case)
        db, dm, dres = timed(don, x0.copy(), rests[case], o.repeat, case)
        assert np.array_equal(pres, dres), case       # the same values either way
        print(f"{case:6} {pb:11.3f} {pm:10.3f} {db:13.3f} {dm:12.3f} {db / pb:11.4f} "
              f"{don.donation[0]['placement']:>10} "
              f"{plain.memory_bytes['result_pool'] >> 20:>10}/{don.memory_bytes['result_pool'] >> 20}")


if __name__ == "__main__":
    main()
