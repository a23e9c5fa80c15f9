"""run.py's cases timed in interleaved blocks: hloc, the streaming limit and XLA:CPU.

    python benchmarks/interleaved.py [CASE ...] [--calls N] [--block K] [--threads N]
                                     [--variant MODULE.NAME=VALUE,...] [--variant-first]
    /work/venv-jax/bin/python benchmarks/interleaved.py softmax layernorm   # adds XLA:CPU

On a shared machine run.py's best of N consecutive calls of one executor can all fall in
a busy spell that another executor's did not. Here each of --calls rounds runs a block of
--block consecutive calls of every executor in turn and keeps the block's best (its first
call finds the caches as the other executors left them; the later ones find them warm,
as run.py's repeated calls do); the minimum and the 10th percentile over the rounds are
printed, with hloc's ratios to the others. `--variant` compiles a second hloc executable
with module-level settings of hloc.backend changed (an A/B of a setting in the same
process; its results must be bit-identical to the first's). Two identical executables
measured 5-10 % apart here depending on their place in the round (an A/A run with a
variant that changes nothing shows it): compare a variant in both places
(`--variant-first`) before trusting a difference of that size. Not a test.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from run import CASES, STREAM_BYTES  # noqa: E402  (benchmarks/run.py)


def _set(spec: str) -> dict:
    """Apply `module.NAME=value,...` (modules under hloc.backend); the old values."""
    old = {}
    for kv in filter(None, spec.split(",")):
        key, value = kv.split("=", 1)
        mod, name = key.rsplit(".", 1)
        m = importlib.import_module(mod if mod.startswith("hloc.") else f"hloc.backend.{mod}")
        old[(m, name)] = getattr(m, name)
        setattr(m, name, eval(value, {}))       # noqa: S307  (a dev tool's own argument)
    return old


def abba(call_a, call_b, rounds: int):
    """Single calls of `call_a` and `call_b` timed in `rounds` rounds of A B B A (B A A B
    every other round): (A's minimum, A's 25th percentile, B's minimum, B's 25th
    percentile, the median over rounds of B's time over A's), in seconds."""
    def timed(c):
        t0 = time.perf_counter()
        c()
        return time.perf_counter() - t0
    ta, tb, ratios = [], [], []
    for r in range(rounds):
        if r % 2 == 0:
            xa, ya, yb, xb = timed(call_a), timed(call_b), timed(call_b), timed(call_a)
        else:
            ya, xa, xb, yb = timed(call_b), timed(call_a), timed(call_a), timed(call_b)
        ta += [xa, xb]
        tb += [ya, yb]
        ratios.append((ya + yb) / (xa + xb))
    ta.sort()
    tb.sort()
    q = len(ta) // 4
    return ta[0], ta[q], tb[0], tb[q], statistics.median(ratios)


def _xla_call(name, args):
    """One XLA:CPU call of the case (None without JAX)."""
    try:
        import jax
    except ImportError:
        return None
    import run
    jax.config.update("jax_enable_x64", False)
    dev = [jax.device_put(a) for a in args]
    f = jax.jit(run._xla_fns()[name]).lower(*dev).compile()
    return lambda: f(*dev).block_until_ready()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--variant", default=None)
    ap.add_argument("--variant-first", action="store_true", help="the variant's calls before hloc's")
    opts = ap.parse_args(argv)
    kw = {} if opts.threads is None else {"threads": opts.threads}
    for name, (text, make, _) in CASES.items():
        if opts.cases and not any(c in name for c in opts.cases):
            continue
        args = make(np.random.default_rng(0))
        module = prepare_for_cpu(hloc.parse(text, name), None)
        calls = {}
        exe = compile_module(module, numerics="xla-cpu", **kw)
        ref = exe.run(args)
        calls["hloc"] = lambda e=exe: e.run(args)
        if opts.variant:
            old = _set(opts.variant)
            var = compile_module(module, numerics="xla-cpu", **kw)
            got = var.run(args)                 # its result buffers allocated as set too
            for (m, n), v in old.items():
                setattr(m, n, v)
            assert np.asarray(got).tobytes() == np.asarray(ref).tobytes(), "variant's bits differ"
            del got
            calls["variant"] = lambda e=var: e.run(args)
            if opts.variant_first:
                calls = {"variant": calls["variant"], "hloc": calls["hloc"]}
        if name in STREAM_BYTES:
            src, dst = np.ones(STREAM_BYTES[name] // 2, np.uint8), np.empty(STREAM_BYTES[name] // 2, np.uint8)
            calls["stream"] = lambda: np.copyto(dst, src)
        xla = _xla_call(name, args)
        if xla is not None:
            xla()
            calls["XLA:CPU"] = xla
        times = {k: [] for k in calls}
        for _ in range(opts.calls):
            for k, c in calls.items():
                block = []
                for _ in range(opts.block):
                    t0 = time.perf_counter()
                    c()
                    block.append(time.perf_counter() - t0)
                times[k].append(min(block))
        for k in times:
            times[k].sort()
        for label, i in (("min", 0), ("p10", opts.calls // 10)):
            cols = "  ".join(f"{k} {v[i] * 1e3:.3f}" for k, v in times.items())
            ratios = "  ".join(f"{h}/{k} {times[h][i] / v[i]:.2f}" for h in ("hloc", "variant") if h in times
                               for k, v in times.items() if k in ("stream", "XLA:CPU"))
            print(f"{name} {label} ms: {cols} | {ratios}")
    print(f"threads={exe.threads}; calls={opts.calls}; load {tuple(round(x, 2) for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
