"""Multi-device runs: compiled devices (hloc.backend.device_runtime) against the
interpreter's devices, and the cost of one collective call.

    python benchmarks/multidevice.py [--repeat N] [--devices N]

Cases (partitioned SPMD modules, as XLA's after-optimizations dumps are):
  dp_steps   a data-parallel loop: per device 20 steps of a 128x128 matmul, tanh and an
             all-reduce of the result (mean over the devices), in a while loop
  ring       200 collective-permutes of f32[1024] around a ring in a while loop (the
             per-collective overhead: device threads meeting through the runtime)
  testdata   the seven JAX programs of testdata/multidevice (tiny; thread start-up)
Prints best-of-N milliseconds per run of all devices and the interpreter/compiled ratio;
checks the two agree (ErrorSpec 1e-3). Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from timing import best  # noqa: E402  (benchmarks/timing.py)

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.backend.device_runtime import run_devices  # noqa: E402
from hloc.compare import ErrorSpec, near  # noqa: E402
from hloc.interp.devices import run_devices as interp_devices  # noqa: E402


def dp_steps(n: int) -> str:
    groups = "{" + ",".join(map(str, range(n))) + "}"
    return f"""HloModule dp_steps, num_partitions={n}
add {{ a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT c = f32[] add(a, b) }}
cond {{ s = (s32[], f32[128,128]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 k = s32[] constant(20)
 ROOT lt = pred[] compare(i, k), direction=LT }}
body {{ s = (s32[], f32[128,128]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 x = f32[128,128] get-tuple-element(s), index=1
 d = f32[128,128] dot(x, x), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
 t = f32[128,128] tanh(d)
 r = f32[128,128] all-reduce(t), channel_id=1, replica_groups={{{groups}}},
   use_global_device_ids=true, to_apply=add
 c = f32[] constant({1.0 / n})
 cb = f32[128,128] broadcast(c), dimensions={{}}
 m = f32[128,128] multiply(r, cb)
 one = s32[] constant(1)
 j = s32[] add(i, one)
 ROOT o = (s32[], f32[128,128]) tuple(j, m) }}
ENTRY e {{ x = f32[128,128] parameter(0)
 z = s32[] constant(0)
 t = (s32[], f32[128,128]) tuple(z, x)
 w = (s32[], f32[128,128]) while(t), condition=cond, body=body
 ROOT r = f32[128,128] get-tuple-element(w), index=1 }}"""


def ring(n: int) -> str:
    pairs = "{" + ",".join(f"{{{d},{(d + 1) % n}}}" for d in range(n)) + "}"
    return f"""HloModule ring, num_partitions={n}
cond {{ s = (s32[], f32[1024]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 k = s32[] constant(200)
 ROOT lt = pred[] compare(i, k), direction=LT }}
body {{ s = (s32[], f32[1024]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 x = f32[1024] get-tuple-element(s), index=1
 p = f32[1024] collective-permute(x), channel_id=1, source_target_pairs={pairs}
 one = s32[] constant(1)
 j = s32[] add(i, one)
 ROOT o = (s32[], f32[1024]) tuple(j, p) }}
ENTRY e {{ x = f32[1024] parameter(0)
 z = s32[] constant(0)
 t = (s32[], f32[1024]) tuple(z, x)
 w = (s32[], f32[1024]) while(t), condition=cond, body=body
 ROOT r = f32[1024] get-tuple-element(w), index=1 }}"""


def _case(name, m, args, repeat):
    t0 = time.perf_counter()
    exe = compile_module(m)
    compile_s = time.perf_counter() - t0
    tc, got = best(lambda: run_devices(exe, args), repeat)
    tc *= 1e3
    ti, want = best(lambda: interp_devices(m, args), max(1, min(repeat, 3)))
    ti *= 1e3
    ok = all(near(w, g, ErrorSpec(1e-3, 1e-3)).ok for w, g in zip(want, got))
    print(f"| {name} | {len(args)} | {tc:.2f} | {ti:.2f} | {ti / tc:.1f}x | {compile_s:.2f} | "
          f"{'yes' if ok else 'NO'} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--devices", type=int, default=4)
    a = ap.parse_args()
    n = a.devices
    rng = np.random.default_rng(0)
    print("| case | devices | compiled ms | interpreter ms | interp/compiled | compile s | agree |")
    print("|---|---|---|---|---|---|---|")
    m = hloc.parse(dp_steps(n))
    _case("dp_steps", m, [[rng.standard_normal((128, 128), np.float32) * 0.05]
                          for _ in range(n)], a.repeat)
    m = hloc.parse(ring(n))
    _case("ring (200 permutes)", m, [[rng.standard_normal(1024).astype(np.float32)]
                                     for _ in range(n)], a.repeat)
    md = ROOT / "testdata" / "multidevice"
    for f in sorted(md.glob("*.after_optimizations.hlo")):
        name = f.name.split(".")[0]
        d = np.load(md / f"{name}.devices.npz")
        ins = [d[f"in{i}"] for i in range(sum(k.startswith("in") for k in d.files))]
        _case(name, hloc.parse(f.read_text()), [[x[k] for x in ins] for k in range(4)],
              a.repeat)


if __name__ == "__main__":
    main()
