"""A/B of hloc.backend settings on f32 exp: an elementwise exp (the loop LLVM vectorises)
and softmax, in ABBA rounds, optionally as AVX2 code on an AVX-512 host.

    python benchmarks/exp_ab.py MODULE.NAME=VALUE[,...] [--no-avx512] [--threads N]
                                [--rounds N] [--size N]

Compiles each case twice in one process, A as the tree has it and B with the settings
(e.g. `vmath.SCALEF=False`, `vmath.HALVES_FROM_Z=False`), checks that B's output bits are
A's (on the timed inputs and on exp's edge values: +-inf, NaNs, +-0, both clamps, the
overflow and underflow boundaries and a sweep over [-110, 90]), then times single calls
as benchmarks/row_ab.py does and prints each side's minimum and 25th percentile and the
median over rounds of B's time over A's. `--no-avx512`: the host's features with AVX-512
turned off before anything compiles (the code an AVX2 host gets: exp scaled through
exponent bits; softmax keeps its scalar loops, hloc.backend.row_vector.plan). Not a test.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from interleaved import _set, abba  # noqa: E402  (module.NAME=value settings, the same syntax)


def _edges() -> np.ndarray:
    bits = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC12345, 0x7F812345, 0, 0x80000000,
                     0x00000001, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)
    near = np.array([88.72283, -87.33654, -103.27893, -104.0, 89.0], np.float32).view(np.int32)
    near = (near[:, None] + np.arange(-500, 500)).astype(np.int32).view(np.float32).ravel()
    sweep = np.linspace(-110, 90, 1 << 16, dtype=np.float32)
    return np.concatenate([bits, near, sweep])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("settings")
    ap.add_argument("--no-avx512", action="store_true", help="compile for the host without AVX-512")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--size", type=int, default=1 << 18, help="elements of the elementwise exp")
    opts = ap.parse_args(argv)
    from hloc.backend import jit
    if opts.no_avx512:
        target, cpu, feats, triple = jit.host()
        jit._host = (target, cpu, ",".join("-" + f[1:] if f.startswith(("+avx512", "+avx10", "+amx"))
                                           else f for f in feats.split(",")), triple)
    import hloc
    from hloc.backend import compile_module
    from hloc.cli_backend import prepare_for_cpu
    from row_modules import softmax

    def exp_text(n):
        return f"HloModule exp\nENTRY e {{\n  x = f32[{n}] parameter(0)\n  ROOT y = f32[{n}] exponential(x)\n}}\n"
    rng = np.random.default_rng(0)
    edges = _edges()
    cases = [(f"exp {opts.size}", exp_text(opts.size), (rng.standard_normal(opts.size) * 4).astype(np.float32)),
             ("softmax 64x8192", softmax(64, 8192), rng.standard_normal((64, 8192), np.float32)),
             (f"exp edges {edges.size}", exp_text(edges.size), edges)]
    print(f"B: {opts.settings}; threads={opts.threads}; {opts.rounds} ABBA rounds; ms"
          + ("; AVX-512 off" if opts.no_avx512 else ""))
    print("| case | A min | A p25 | B min | B p25 | median B/A |")
    print("|---|---|---|---|---|---|")
    tmp = tempfile.TemporaryDirectory()     # own caches: B may set what no cache key holds
    for k, (name, text, x) in enumerate(cases):
        module = prepare_for_cpu(hloc.parse(text), None)
        exes = []
        for side, spec in (("a", ""), ("b", opts.settings)):
            old = _set(spec)
            try:
                exes.append(compile_module(module, numerics="xla-cpu", threads=opts.threads,
                                           cache_dir=Path(tmp.name) / f"{k}{side}"))
            finally:
                for (m, n), v in old.items():
                    setattr(m, n, v)
        a, b = exes
        assert np.asarray(a.run([x])).tobytes() == np.asarray(b.run([x])).tobytes(), f"{name}: B's bits differ"
        if name.startswith("exp edges"):
            print(f"| {name} | bits equal | | | | |")
            continue

        a_min, a_p25, b_min, b_p25, ratio = abba(lambda: a.run([x]), lambda: b.run([x]), opts.rounds)
        print(f"| {name} | {a_min * 1e3:.4f} | {a_p25 * 1e3:.4f} | {b_min * 1e3:.4f} | {b_p25 * 1e3:.4f} "
              f"| {ratio:.3f} |", flush=True)
    tmp.cleanup()


if __name__ == "__main__":
    main()
