"""Single-thread ns/element of the softmax and layernorm row kernels (hloc.backend.row_groups).

    python benchmarks/rows.py [--repeat N] [--numerics xla-cpu|ieee] [--threads N]

run.py's softmax 512x8192 / layernorm 4096x1024 on one thread measure the kernel with
memory (each input row read from DRAM or L3 once); the same programs on 1/8 of the rows
(softmax 64x8192, layernorm 512x1024: inputs and outputs 2 MiB each, in L3 after the
first call) measure its arithmetic and cache traffic, which is much less sensitive to
other processes on a shared machine. Best of --repeat calls writing into the same
output array (`out=`). Not a test.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from run import _layernorm, _softmax  # noqa: E402  (benchmarks/run.py's modules)
from timing import best  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--numerics", default="xla-cpu", choices=["xla-cpu", "ieee"])
    ap.add_argument("--threads", type=int, default=1)
    opts = ap.parse_args(argv)
    cases = [("softmax", _softmax, 64, 8192), ("softmax", _softmax, 512, 8192),
             ("layernorm", _layernorm, 512, 1024), ("layernorm", _layernorm, 4096, 1024)]
    print(f"numerics={opts.numerics}; threads={opts.threads}; best of {opts.repeat}")
    print("| case | ms | ns/element |")
    print("|---|---|---|")
    for name, make, rows, cols in cases:
        module = prepare_for_cpu(hloc.parse(make(rows, cols), name), None)
        exe = compile_module(module, numerics=opts.numerics, threads=opts.threads)
        x = np.random.default_rng(0).standard_normal((rows, cols), np.float32)
        out = np.empty_like(x)
        t, _ = best(lambda: exe.run([x], out=out), opts.repeat, warmup=True)
        print(f"| {name} {rows}x{cols} | {t * 1e3:.3f} | {t * 1e9 / x.size:.3f} |")


if __name__ == "__main__":
    main()
