"""A/B of hloc.backend settings on the softmax and layernorm row kernels, calls in ABBA rounds.

    python benchmarks/row_ab.py MODULE.NAME=VALUE[,...] [--threads N] [--rounds N] [--full]
                                [--donate] [--softmax-rows R[,R...]]

Compiles run.py's softmax and layernorm modules twice in one process, A as the tree has
them and B with the settings (modules under hloc.backend, e.g.
`jit.ROW_CODEGEN_LEVEL=None,jit.ROW_BRIEF_OPTIONS=False`), checks that B's output bits
are A's, then times single calls in rounds of A B B A (B A A B every other round) and
prints each side's minimum and 25th percentile and the median over rounds of B's time
over A's. On 1/8 of run.py's rows (softmax 64x8192, layernorm 512x1024: in L3 after the
first call; `--full` adds run.py's sizes, where the place the results land in memory moves
identical code by up to 20 % on one thread) the ABBA median of two identical
executables was within 0.7 % here, where interleaved.py's blocks of one executable after
the other differ by 5-10 % with their place in the round. `--donate` compiles both with
the input donated (an input_output_alias of it to the output; the placement is printed).
`--softmax-rows` adds softmax Rx8192 for each R (sizes between the cache and run.py's,
where row_hosts.HOST_BYTES and row_ahead.PREFETCH_BYTES draw their lines).
Not a test.
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
from interleaved import _set, abba  # noqa: E402  (module.NAME=value settings, the same syntax)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("settings")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--full", action="store_true", help="also run.py's sizes")
    ap.add_argument("--donate", action="store_true", help="the input donated to the output")
    ap.add_argument("--softmax-rows", default="", help="also softmax Rx8192 for each R (comma list)")
    opts = ap.parse_args(argv)
    cases = [("softmax", _softmax, 64, 8192), ("layernorm", _layernorm, 512, 1024)]
    if opts.full:
        cases += [("softmax", _softmax, 512, 8192), ("layernorm", _layernorm, 4096, 1024)]
    cases += [("softmax", _softmax, int(r), 8192) for r in opts.softmax_rows.split(",") if r]
    donate = (0,) if opts.donate else ()
    print(f"B: {opts.settings}; threads={opts.threads}; {opts.rounds} ABBA rounds; ms"
          + ("; input donated" if donate else ""))
    print("| case | A min | A p25 | B min | B p25 | median B/A |")
    print("|---|---|---|---|---|---|")
    for name, make, rows, cols in cases:
        text = make(rows, cols)
        if donate:
            text = text.replace(f"HloModule {name}",
                                f"HloModule {name}, input_output_alias={{ {{}}: (0, {{}}, may-alias) }}", 1)
        module = prepare_for_cpu(hloc.parse(text, name), None)
        x = np.random.default_rng(0).standard_normal((rows, cols), np.float32)
        a = compile_module(module, numerics="xla-cpu", threads=opts.threads, donate=donate)
        old = _set(opts.settings)
        try:
            b = compile_module(module, numerics="xla-cpu", threads=opts.threads, donate=donate)
        finally:
            for (m, n), v in old.items():
                setattr(m, n, v)
        if donate:
            print(f"{name}: donation {a.donation}", flush=True)
            if any(d["placement"] == "in place" for d in a.donation + b.donation):
                sys.exit("in place: each call would change the input")
        ra, rb = a.run([x]), b.run([x])
        assert np.asarray(ra).tobytes() == np.asarray(rb).tobytes(), "B's bits differ"
        del ra, rb

        a_min, a_p25, b_min, b_p25, ratio = abba(lambda: a.run([x]), lambda: b.run([x]), opts.rounds)
        print(f"| {name} {rows}x{cols} | {a_min * 1e3:.3f} | {a_p25 * 1e3:.3f} | {b_min * 1e3:.3f} "
              f"| {b_p25 * 1e3:.3f} | {ratio:.3f} |", flush=True)


if __name__ == "__main__":
    main()
