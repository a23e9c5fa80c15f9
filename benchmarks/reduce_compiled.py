"""`hloc reduce` on the compiled back end with one emitter deliberately broken: the
issue asks for the 2,556-instruction training step (testdata/reduce) down to <= 10
instructions in under a minute. Prints the wall time, the sizes and the predicate runs.

    python benchmarks/reduce_compiled.py [--opcode log] [--factor 1.01] [--no-inputs]

The `emit` facet of OPCODE is wrapped to multiply its result by FACTOR (as
tests/test_replay.py's broken_log_emitter does); the cpu back end has no object cache
here, so every candidate is compiled. CPU seconds are printed beside the wall time: on a
shared machine the wall time also counts the time other processes held the cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def plant(opcode: str, factor: float) -> None:
    from llvmlite import ir

    from hloc.ops import facets
    good = facets.get("emit", opcode)
    assert good is not None, f"no emitter for {opcode}"

    def wrong(kb, inst, operands, index):
        v = good(kb, inst, operands, index)
        return kb.b.fmul(v, ir.Constant(v.type, factor))
    facets._TABLES["emit"][opcode] = wrong


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opcode", default="log")
    ap.add_argument("--factor", type=float, default=1.01)
    ap.add_argument("--no-inputs", action="store_true")
    ap.add_argument("--file", default=os.path.join(
        ROOT, "testdata", "reduce", "bert6_train_step.before_optimizations.hlo"))
    opts = ap.parse_args()
    from hloc.cli_backend import CpuBackend
    from hloc.inputs import bind_arguments, read_inputs
    from hloc.reduce import mismatch_predicate, reduce_module
    from hloc.replay import ReplayConfig
    from hloc.runner import BACKENDS
    from hloc.syntax import parse_module
    BACKENDS["cpu"] = CpuBackend()
    BACKENDS["cpu"].load()                 # registers the back end's emit facets
    plant(opts.opcode, opts.factor)
    text = open(opts.file).read()
    module = parse_module(text, opts.file)
    args = None
    if not opts.no_inputs:
        npz = opts.file.replace(".before_optimizations.hlo", ".npz")
        args = bind_arguments(module, read_inputs([npz]))
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    r = reduce_module(text, mismatch_predicate(ReplayConfig(test_backend="cpu")), inputs=args)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"{r.start_instructions} -> {r.instructions} instructions, "
          f"{r.evaluations} predicate runs, {r.accepted} accepted, {dt:.1f} s wall, "
          f"{cpu:.1f} s CPU (load average {load:.1f} on {os.cpu_count()} cores)")
    print(r.text)


if __name__ == "__main__":
    main()
