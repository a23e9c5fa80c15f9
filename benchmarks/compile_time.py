"""Where an uncached compile's time goes, per phase, beside XLA:CPU's compile of the same text.

    PYTHONPATH=TREE python TREE/benchmarks/compile_time.py [CASE ...] [--repeat N]
                                                         [--llvm-threads N]
    PYTHONPATH=. /work/venv-jax/bin/python benchmarks/compile_time.py      # adds XLA:CPU

For run.py's file cases (the MLP / BERT-like / CNN training steps and the two scans) and,
with --small, its one-kernel cases (sum, x*x+2x+1, mean(relu^2), softmax, layernorm, matmul;
their XLA:CPU compile is run.py's jit(...).lower(...).compile(), wall time only):
HLO passes, LLVM IR generation, LLVM (optimise + codegen, the parts on threads where the
tree has hloc.backend.compile_threads) and loading, each as wall / process-CPU ms (CPU
sums every thread: on a loaded machine wall time mostly measures the load; where the tree
compiles large computations ahead, jit.lower(ahead=True), their LLVM time runs beside IR
generation, whose CPU column then includes it, and "LLVM" is what is left), best of
--repeat; then XLA:CPU's compile (run.py's `compile_and_load` of the same HLO text) and
the wall-time ratio; then how many parts LLVM compiled and how many kernels were
compiled once for several identical instructions (hloc.backend.dedup). --llvm-threads N compiles the parts on N threads (default: every
core; 1 gives the same objects one part after another). It drives the back end's functions directly, so it also runs on an
older tree (e.g. `git archive` of the base commit) for before/after tables.
Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hloc  # noqa: E402
from hloc.backend import jit  # noqa: E402
from hloc.backend.context import Options  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from run import CASES, FILE_CASES, _file_case, _xla_text, _xla_time  # noqa: E402

PHASES = ("HLO passes", "IR gen", "LLVM", "load")


def _ms(s: float) -> str:
    """Milliseconds: a tenth under 10 ms (the one-kernel cases' phases), whole above."""
    return f"{s * 1e3:.1f}" if s < 0.01 else f"{s * 1e3:.0f}"


def _compile(text, name, best, threads):
    def tick(k, t, c):
        w, cc = time.perf_counter() - t, time.process_time() - c
        ow, oc = best.get(k, (float("inf"), float("inf")))
        best[k] = (min(ow, w), min(oc, cc))
        return time.perf_counter(), time.process_time()
    m = hloc.parse(text, name)
    t, c = time.perf_counter(), time.process_time()
    prepare_for_cpu(m, None)
    t, c = tick("HLO passes", t, c)
    import inspect
    ahead = "ahead" in inspect.signature(jit.lower).parameters     # as Executable does
    low = jit.lower(m, Options(), ahead=True) if ahead else jit.lower(m, Options())
    t, c = tick("IR gen", t, c)
    # parts LLVM compiles, kernels compiled once for several instructions (older trees: -)
    best["shape"] = (len(getattr(low, "parts", [None])), getattr(low, "kernels_merged", "-"))
    if hasattr(jit, "compile_objects"):
        code = jit.compile_objects(low, Options(), threads=threads)
    else:                                    # a tree from before parts
        code = jit.compile_object(low, Options())
    t, c = tick("LLVM", t, c)
    jit.load(code, Options())
    tick("load", t, c)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--llvm-threads", type=int, default=None)
    ap.add_argument("--small", action="store_true", help="also run.py's one-kernel cases")
    opts = ap.parse_args(argv)
    jit.host()
    print("ms (a tenth under 10), wall / CPU; hloc = sum of the phases' best; "
          "ratio = hloc wall / XLA wall")
    print("| case | " + " | ".join(PHASES) + " | hloc | XLA:CPU | hloc/XLA | parts | merged |")
    print("|---" * (len(PHASES) + 6) + "|")
    cases = [(name, stem, None) for name, stem in FILE_CASES.items()]
    if opts.small:
        cases += [(name, None, text) for name, (text, _, _) in CASES.items()]
    for name, stem, small_text in cases:
        if opts.cases and not any(c in name for c in opts.cases):
            continue
        if small_text is None:
            text, ins, _ = _file_case(stem)
        else:
            import numpy as np
            text, ins = small_text, CASES[name][1](np.random.default_rng(0))
        best: dict = {}
        xla = (float("inf"), float("inf"))
        for _ in range(opts.repeat):
            _compile(text, name, best, opts.llvm_threads)
            t, c = time.perf_counter(), time.process_time()
            if small_text is not None:
                compile_s = _xla_time(name, ins, 1)[1]
                if compile_s is not None:
                    xla = min(xla, (compile_s, float("nan")))
            elif _xla_text(text, ins, 1)[0] is not None:
                xla = min(xla, (time.perf_counter() - t, time.process_time() - c))
        wall = sum(best[k][0] for k in PHASES)
        cpu = sum(best[k][1] for k in PHASES)
        fmt = lambda w, c: f"{_ms(w)} / " + ("-" if c != c else _ms(c))   # noqa: E731
        have_xla = xla[0] != float("inf")
        print(f"| {name} | " + " | ".join(fmt(*best[k]) for k in PHASES) + f" | {fmt(wall, cpu)} | "
              + (f"{fmt(*xla)} | {wall / xla[0]:.2f}x |" if have_xla else "- | - |")
              + " {} | {} |".format(*best["shape"]), flush=True)


if __name__ == "__main__":
    main()
