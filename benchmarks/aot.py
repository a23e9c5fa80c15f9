"""`hloc compile` libraries called from C, against `hloc run --backend cpu` and XLA:CPU.

    python benchmarks/aot.py [--repeat N] [--threads N] [CASE ...]
    (XLA:CPU column: run with any Python; the XLA side runs in /work/venv-jax/bin/python
     or $HLOC_XLA_PYTHON, skipped when that has no JAX)

Cases: `sum_xyz dump` (testdata/dumps/reduce_sum_xyz, f32[4,8]: call overhead), `sum_xyz 4M`
(the same program on f32[4194304]), `mlp_train_step` and `bert_train_step` (training steps
from testdata/dumps, on their recorded inputs), and `sgemm 1024` (f32[1024,1024] dot:
the library's emitted GEMM vs the JIT's OpenBLAS call). Each is compiled once by
hloc.aot into a shared library, timed by the C driver benchmarks/aot_bench.c (best and
median of --repeat calls after warm-up, in the C process: no Python), by
`Executable.run` (what each `hloc run --backend cpu` iteration does, NumPy in and out), and by XLA:CPU
(the before-optimizations text compiled by jaxlib, execute_sharded on device arrays).
The C results are checked against hloc run's (ErrorSpec 1e-3). Not a test: timings on a
shared machine vary by +-30 %.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from timing import best  # noqa: E402  (benchmarks/timing.py)
DUMPS = ROOT / "testdata" / "dumps"

from run import _sum_xyz  # noqa: E402  (benchmarks/run.py: the same program as its table)

SGEMM = """HloModule sgemm
ENTRY e {
  a = f32[1024,1024] parameter(0)
  b = f32[1024,1024] parameter(1)
  ROOT d = f32[1024,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def _cases():
    rng = np.random.default_rng(0)
    n = 1 << 22
    big = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    mats = [rng.standard_normal((1024, 1024)).astype(np.float32) for _ in range(2)]
    return {
        "sum_xyz dump": lambda: (_read(DUMPS / "reduce_sum_xyz.before_optimizations.hlo"), _npz("reduce_sum_xyz")),
        "sum_xyz 4M": lambda: (_sum_xyz(n), big),
        "mlp_train_step": lambda: (_read(DUMPS / "mlp_train_step.before_optimizations.hlo"), _npz("mlp_train_step")),
        "bert_train_step": lambda: (_read(DUMPS / "bert_train_step.before_optimizations.hlo"), _npz("bert_train_step")),
        "sgemm 1024": lambda: (SGEMM, mats),
    }


def _read(p):
    return Path(p).read_text()


def _npz(prog):
    from hloc.inputs import load_npz
    d = load_npz(DUMPS / f"{prog}.npz")
    return [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]


def _xla(text, inputs, repeat, python):
    if python is None:
        return None
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "m.hlo").write_text(text)
        np.savez(Path(d) / "in.npz", *inputs)
        r = subprocess.run([python, __file__, "--xla-worker", d, str(repeat)], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"  (XLA failed: {r.stderr.strip().splitlines()[-1:]})", file=sys.stderr)
            return None
        return float(r.stdout.split()[-1])


def _xla_worker(d, repeat):
    from run import _xla_text
    text = (Path(d) / "m.hlo").read_text()
    with np.load(Path(d) / "in.npz") as z:
        inputs = [z[f"arr_{i}"] for i in range(len(z.files))]
    print(_xla_text(text, inputs, repeat)[1] * 1e6)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--xla-worker", nargs=2, metavar=("DIR", "REPEAT"))
    opts = ap.parse_args()
    if opts.xla_worker:
        return _xla_worker(opts.xla_worker[0], int(opts.xla_worker[1]))
    import hloc
    from hloc.aot import compile_library
    from hloc.backend import compile_module
    from hloc.cli_backend import prepare_for_cpu
    from hloc.compare import ErrorSpec, near
    from hloc.inputs import bind_arguments, flatten_leaves
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        sys.exit("benchmarks/aot.py needs a C compiler (cc)")
    python = os.environ.get("HLOC_XLA_PYTHON", "/work/venv-jax/bin/python")
    if not (os.path.exists(python) and subprocess.run([python, "-c", "import jax"],
                                                      capture_output=True).returncode == 0):
        python = None
    cases = _cases()
    names = opts.cases or list(cases)
    rows = []
    for name in names:
        text, inputs = cases[name]()
        module = hloc.parse(text, name)
        prepare_for_cpu(module, None)
        with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as d:
            d = Path(d)
            t0 = time.perf_counter()
            lib = compile_library(module, str(d / "libm.so"), header=str(d / "m.h"), name="m",
                                  threads=opts.threads)
            build_s = time.perf_counter() - t0
            subprocess.run([cc, "-O2", "-include", str(d / "m.h"), str(ROOT / "benchmarks" / "aot_bench.c"),
                            str(d / "libm.so"), f"-Wl,-rpath,{d}", "-o", str(d / "bench")], check=True)
            from hloc.backend.loops import minor_to_major
            params = sorted((i for i in module.entry.instructions if i.opcode == "parameter"),
                            key=lambda p: p.parameter_number)
            for i, (a, p) in enumerate(zip(inputs, params)):
                perm = tuple(reversed(minor_to_major(p.shape)))
                (d / f"in{i}.bin").write_bytes(np.ascontiguousarray(np.asarray(a).transpose(perm)).tobytes())
            r = subprocess.run([str(d / "bench"), str(d), str(opts.repeat), str(opts.threads)],
                               capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
            if r.returncode != 0:
                sys.exit(f"{name}: C driver failed: {r.stderr}")
            c_best, c_med = map(float, r.stdout.split())
            exe = compile_module(module, threads=opts.threads)
            bound = bind_arguments(module, inputs)
            hl = best(lambda: exe.run(bound), opts.repeat, warmup=True)[0] * 1e6
            ref = flatten_leaves(exe.run(bound), module.entry.root.shape)
            shapes = [s for s in module.entry.root.shape.leaves() if s.dtype.is_array]
            for j, (s, e) in enumerate(zip(shapes, ref)):
                perm = tuple(reversed(minor_to_major(s)))
                raw = np.frombuffer((d / f"c_out{j}.bin").read_bytes(), s.dtype.np)
                got = raw.reshape([s.dims[k] for k in perm]).transpose(np.argsort(perm))
                res = near(e, got, ErrorSpec(1e-3, 1e-3))
                if not res.ok:
                    sys.exit(f"{name}: C result {j} differs from hloc run's: {res.message}")
        xla = _xla(text, inputs, opts.repeat, python)
        rows.append((name, c_best, c_med, hl, xla, build_s, lib.scratch_bytes))
        print(json.dumps({"case": name, "c_best_us": c_best, "c_median_us": c_med, "hloc_run_us": hl,
                          "xla_us": xla, "compile_s": round(build_s, 2)}), file=sys.stderr)
    print(f"threads {opts.threads}, best of {opts.repeat} (us); ratios > 1: the C library is faster")
    print(f"{'case':18} {'C lib':>10} {'C median':>10} {'hloc run':>10} {'XLA:CPU':>10} "
          f"{'hloc/C':>7} {'XLA/C':>7} {'compile s':>9} {'scratch B':>10}")
    for name, c, cm, hl, xla, bs, sc in rows:
        xs = f"{xla:10.1f}" if xla else f"{'-':>10}"
        xr = f"{xla / c:7.2f}" if xla else f"{'-':>7}"
        print(f"{name:18} {c:10.1f} {cm:10.1f} {hl:10.1f} {xs} {hl / c:7.2f} {xr} {bs:9.1f} {sc:10d}")


if __name__ == "__main__":
    main()
