"""Multi-output fusion on and off: compiled run time of sibling-heavy programs.

    PYTHONPATH=. python benchmarks/multi_output_fusion.py [--repeat N] [--rows R --cols C]

For each program (row moments: sum and sum of squares of one input, as layer norm's mean
and variance; four sibling row reductions; three elementwise siblings of one input),
`hloc opt` without and with `--xla_cpu_use_multi_output_fusion`, then hloc's compiled
back end: kernels and best-of-N milliseconds, and off/on. With JAX importable, XLA:CPU
runs the same HLO text with and without the backend option (each mode in a subprocess,
since XLA reads XLA_FLAGS once), for reference. Timings depend on the machine's load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from timing import best  # noqa: E402  (benchmarks/timing.py)

REDUCERS = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%max (c: f32[], d: f32[]) -> f32[] {
  %c = f32[] parameter(0)
  %d = f32[] parameter(1)
  ROOT %m = f32[] maximum(%c, %d)
}
"""


def programs(r: int, c: int) -> dict[str, str]:
    x = f"f32[{r},{c}]{{1,0}}"
    v = f"f32[{r}]{{0}}"
    def head(name: str, out: str) -> str:
        return f"HloModule {name}\n\n{REDUCERS}\nENTRY %main (x: {x}) -> {out} {{\n" \
               f"  %x = {x} parameter(0)\n  %z = f32[] constant(0)\n" \
               f"  %n = f32[] constant(-inf)\n"
    return {
        "row_moments": head("row_moments", f"({v}, {v})") +
        f"  %s = {v} reduce(%x, %z), dimensions={{1}}, to_apply=%add\n"
        f"  %q = {x} multiply(%x, %x)\n"
        f"  %ss = {v} reduce(%q, %z), dimensions={{1}}, to_apply=%add\n"
        f"  ROOT %t = ({v}, {v}) tuple(%s, %ss)\n}}\n",
        "four_row_reductions": head("four_row_reductions", f"({v}, {v}, {v}, {v})") +
        f"  %s = {v} reduce(%x, %z), dimensions={{1}}, to_apply=%add\n"
        f"  %m = {v} reduce(%x, %n), dimensions={{1}}, to_apply=%max\n"
        f"  %e = {x} exponential(%x)\n"
        f"  %se = {v} reduce(%e, %z), dimensions={{1}}, to_apply=%add\n"
        f"  %a = {x} abs(%x)\n"
        f"  %ma = {v} reduce(%a, %n), dimensions={{1}}, to_apply=%max\n"
        f"  ROOT %t = ({v}, {v}, {v}, {v}) tuple(%s, %m, %se, %ma)\n}}\n",
        "elementwise_siblings": head("elementwise_siblings", f"({x}, {x}, {x})") +
        f"  %e = {x} exponential(%x)\n"
        f"  %g = {x} negate(%x)\n"
        f"  %h = {x} multiply(%x, %x)\n"
        f"  ROOT %t = ({x}, {x}, {x}) tuple(%e, %g, %h)\n}}\n",
    }


def hloc_time(text: str, x, mof: bool, repeat: int) -> tuple[int, float]:
    import hloc
    from hloc.passes import default_pipeline
    from hloc.passes.driver import optimize
    module = hloc.parse(text)
    optimize(module, default_pipeline(multi_output_fusion=mof))
    kernels = sum(1 for i in module.entry.instructions
                  if i.opcode not in ("parameter", "constant", "tuple", "get-tuple-element"))
    exe = hloc.compile(module)
    return kernels, best(lambda: exe.run([x]), repeat, warmup=True)[0]


def xla_worker(mof: str, rows: int, cols: int, repeat: int) -> None:
    """Run in a subprocess: XLA:CPU times of every program, as JSON on stdout."""
    if mof == "on":
        os.environ["XLA_FLAGS"] = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from run import _xla_text
    x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
    out = {}
    for name, text in programs(rows, cols).items():
        out[name] = _xla_text(text, [x], repeat)[1]
    print(json.dumps(out))


def xla_times(rows: int, cols: int, repeat: int) -> dict:
    try:
        import jax  # noqa: F401
    except ImportError:
        return {}
    times = {}
    for mof in ("off", "on"):
        r = subprocess.run([sys.executable, __file__, "--xla-worker", mof, "--rows", str(rows),
                            "--cols", str(cols), "--repeat", str(repeat)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return {}
        times[mof] = json.loads(r.stdout.strip().splitlines()[-1])
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--xla-worker", choices=("on", "off"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.xla_worker:
        xla_worker(args.xla_worker, args.rows, args.cols, args.repeat)
        return 0
    x = np.random.default_rng(0).standard_normal((args.rows, args.cols)).astype(np.float32)
    xla = xla_times(args.rows, args.cols, args.repeat)
    print(f"{args.rows}x{args.cols} f32, best of {args.repeat}, ms")
    print("| program | hloc kernels off/on | hloc off | hloc on | off/on | XLA off | XLA on |")
    print("|---|---|---|---|---|---|---|")
    for name, text in programs(args.rows, args.cols).items():
        k0, t0 = hloc_time(text, x, False, args.repeat)
        k1, t1 = hloc_time(text, x, True, args.repeat)
        xo = xla.get("off", {}).get(name)
        xn = xla.get("on", {}).get(name)
        fmt = (lambda t: f"{t * 1e3:.3f}" if t is not None else "-")
        print(f"| {name} | {k0}/{k1} | {t0 * 1e3:.3f} | {t1 * 1e3:.3f} | {t0 / t1:.2f} | "
              f"{fmt(xo)} | {fmt(xn)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
