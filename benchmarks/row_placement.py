"""Run time of run.py's softmax and layernorm row kernels against where the output lies
relative to the input, modulo a 4 KiB page.

    python benchmarks/row_placement.py [--offsets 16,1024,2048,3072] [--x-offset 16]
                                       [--threads N] [--rounds N]

One executable per case; the input at byte offset --x-offset of a page (16: where glibc's
mmap puts NumPy's large arrays, so run.py's input and the output hloc allocates both lie
there), each output (the `out=` API) at one of --offsets; the outputs' bits are checked
equal, then calls run in rounds over the offsets forwards and backwards (reversed every
other round). Prints each offset's minimum, 25th percentile and median, and the median
over the first offset's. Found for issue 12 (one thread, input at 16): softmax 512x8192
ran 5-13 % faster with its output 64-byte aligned (offsets 64, 2048, 3072) than at 16
mod 64 (16, 80, 2064, 3088), where NumPy's large arrays lie (run.py's input, and the
output hloc allocates, at the input's offset: hloc.backend.executable._new_result);
layernorm 4096x1024 the other way round, fastest at the input's offset mod 64 and 14-40 %
slower aligned, the larger effect. Not a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from row_modules import layernorm, softmax  # noqa: E402  (run.py's texts)

PAGE = 4096


def placed(shape, offset: int) -> np.ndarray:
    """An f32 array of `shape` starting `offset` bytes into a page."""
    n = int(np.prod(shape)) * 4
    raw = np.empty(n + 2 * PAGE, np.uint8)
    at = (offset - raw.ctypes.data) % PAGE
    return raw[at:at + n].view(np.float32).reshape(shape)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offsets", default="16,1024,2048,3072")
    ap.add_argument("--x-offset", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=100)
    opts = ap.parse_args(argv)
    offsets = [int(o) for o in opts.offsets.split(",")]
    print(f"threads={opts.threads}; {opts.rounds} rounds; input at {opts.x_offset} of a page; ms")
    print("| case | output at | min | p25 | median | median / first's |")
    print("|---|---|---|---|---|---|")
    for name, make, rows, cols in (("softmax", softmax, 512, 8192), ("layernorm", layernorm, 4096, 1024),
                                   ("softmax", softmax, 64, 8192)):
        module = prepare_for_cpu(hloc.parse(make(rows, cols), name), None)
        x = placed((rows, cols), opts.x_offset)
        x[...] = np.random.default_rng(0).standard_normal((rows, cols), np.float32)
        exe = compile_module(module, numerics="xla-cpu", threads=opts.threads)
        outs = [placed((rows, cols), o) for o in offsets]
        for o in outs:
            exe.run([x], out=o)
        assert all(o.tobytes() == outs[0].tobytes() for o in outs), "bits differ with the output's place"
        times = [[] for _ in offsets]
        order = list(range(len(offsets)))
        for r in range(opts.rounds):
            for k in (order + order[::-1])[::(-1 if r % 2 else 1)]:
                t0 = time.perf_counter()
                exe.run([x], out=outs[k])
                times[k].append(time.perf_counter() - t0)
        first = statistics.median(times[0])
        for o, t in zip(offsets, times):
            t = sorted(t)
            print(f"| {name} {rows}x{cols} | {o} | {t[0] * 1e3:.3f} | {t[len(t) // 4] * 1e3:.3f} "
                  f"| {statistics.median(t) * 1e3:.3f} | {statistics.median(t) / first:.3f} |", flush=True)


if __name__ == "__main__":
    main()
