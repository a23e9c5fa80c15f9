"""Compiled hloc against XLA:CPU (via JAX), the interpreter and NumPy op by op.

    python benchmarks/run.py [CASE ...] [--repeat N] [--numerics xla-cpu|ieee]
    /work/venv-jax/bin/python benchmarks/run.py      # adds the XLA:CPU column

Same inputs for every executor, one process. Each case is an HLO module written as JAX
would lower it (a before-optimizations module: hloc's default pipeline runs first, as
`hloc run --backend cpu` does). Times are the best of --repeat steady-state calls (the
interpreter: best of 2); compile time is reported separately. Prints a table of times
and ratios; checks that every executor's result agrees with NumPy's (ErrorSpec 1e-3).
Not a test: timings on a shared machine vary by +-30 %.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from hloc.compare import ErrorSpec, near  # noqa: E402
from hloc.runner import run_module  # noqa: E402

_ADD = "add_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n"
_MAX = "max_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] maximum(a, b)\n}\n"


def _sum_xyz(n):
    return f"""HloModule sum_xyz
{_ADD}
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  s = f32[{n}] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={{0}}, to_apply=add_f
}}
"""


def _poly(n):
    return f"""HloModule poly
ENTRY e {{
  x = f32[{n}] parameter(0)
  xx = f32[{n}] multiply(x, x)
  two = f32[] constant(2)
  two_b = f32[{n}] broadcast(two), dimensions={{}}
  tx = f32[{n}] multiply(two_b, x)
  a = f32[{n}] add(xx, tx)
  one = f32[] constant(1)
  one_b = f32[{n}] broadcast(one), dimensions={{}}
  ROOT r = f32[{n}] add(a, one_b)
}}
"""


def _relu_sq_mean(n):
    return f"""HloModule relu_sq_mean
{_ADD}
ENTRY e {{
  x = f32[{n}] parameter(0)
  zero = f32[] constant(0)
  zero_b = f32[{n}] broadcast(zero), dimensions={{}}
  r = f32[{n}] maximum(x, zero_b)
  sq = f32[{n}] multiply(r, r)
  s = f32[] reduce(sq, zero), dimensions={{0}}, to_apply=add_f
  cnt = f32[] constant({n})
  ROOT m = f32[] divide(s, cnt)
}}
"""


def _softmax(rows, cols):
    return f"""HloModule softmax
{_ADD}
{_MAX}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[{rows}] reduce(x, ninf), dimensions={{1}}, to_apply=max_f
  mxb = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mxb)
  e = f32[{rows},{cols}] exponential(d)
  zero = f32[] constant(0)
  s = f32[{rows}] reduce(e, zero), dimensions={{1}}, to_apply=add_f
  sb = f32[{rows},{cols}] broadcast(s), dimensions={{0}}
  ROOT r = f32[{rows},{cols}] divide(e, sb)
}}
"""


def _layernorm(rows, cols):
    return f"""HloModule layernorm
{_ADD}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant({cols})
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add_f
  mean = f32[{rows}] divide(s, nb)
  mb = f32[{rows},{cols}] broadcast(mean), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mb)
  d2 = f32[{rows},{cols}] multiply(d, d)
  v = f32[{rows}] reduce(d2, zero), dimensions={{1}}, to_apply=add_f
  var = f32[{rows}] divide(v, nb)
  eps = f32[] constant(1e-05)
  epsb = f32[{rows}] broadcast(eps), dimensions={{}}
  ve = f32[{rows}] add(var, epsb)
  rs = f32[{rows}] rsqrt(ve)
  rb = f32[{rows},{cols}] broadcast(rs), dimensions={{0}}
  ROOT y = f32[{rows},{cols}] multiply(d, rb)
}}
"""


def _np_softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def _np_layernorm(x):
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    return d / np.sqrt(var + np.float32(1e-5))


M4, M8 = 4 << 20, 8 << 20
CASES = {
    "sum(x+y*z) 3x4M": (_sum_xyz(M4), lambda r: [r.standard_normal(M4, np.float32) for _ in range(3)],
                        lambda x, y, z: np.sum(x + y * z)),
    "x*x+2x+1 8M": (_poly(M8), lambda r: [r.standard_normal(M8, np.float32)],
                    lambda x: x * x + 2 * x + 1),
    "mean(relu(x)^2) 8M": (_relu_sq_mean(M8), lambda r: [r.standard_normal(M8, np.float32)],
                           lambda x: np.mean(np.maximum(x, 0) ** 2)),
    "softmax 512x8192": (_softmax(512, 8192), lambda r: [r.standard_normal((512, 8192), np.float32)],
                         _np_softmax),
    "layernorm 4096x1024": (_layernorm(4096, 1024),
                            lambda r: [r.standard_normal((4096, 1024), np.float32)], _np_layernorm),
}


def _best(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _xla_time(name, args, repeat):
    """XLA:CPU through JAX on the same computation (written with jax.numpy)."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None, None
    fns = {
        "sum(x+y*z) 3x4M": lambda x, y, z: jnp.sum(x + y * z),
        "x*x+2x+1 8M": lambda x: x * x + 2 * x + 1,
        "mean(relu(x)^2) 8M": lambda x: jnp.mean(jnp.maximum(x, 0) ** 2),
        "softmax 512x8192": lambda x: jax.nn.softmax(x, axis=1),
        "layernorm 4096x1024": lambda x: (x - x.mean(1, keepdims=True))
        * jax.lax.rsqrt(((x - x.mean(1, keepdims=True)) ** 2).mean(1, keepdims=True) + 1e-5),
    }
    f = jax.jit(fns[name])
    dev = [jax.device_put(a) for a in args]
    f(*dev).block_until_ready()
    t, out = _best(lambda: f(*dev).block_until_ready(), repeat)
    return t, np.asarray(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--numerics", default="xla-cpu", choices=["xla-cpu", "ieee"])
    ap.add_argument("--no-interpreter", action="store_true")
    opts = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for name, (text, make, np_fn) in CASES.items():
        if opts.cases and not any(c in name for c in opts.cases):
            continue
        args = make(rng)
        module = prepare_for_cpu(hloc.parse(text, name), None)
        t0 = time.perf_counter()
        exe = compile_module(module, numerics=opts.numerics)
        compile_s = time.perf_counter() - t0
        exe.run(args)
        t_hloc, out = _best(lambda: exe.run(args), opts.repeat)
        t_np, ref = _best(lambda: np_fn(*args), max(3, opts.repeat // 2))
        t_int = None
        if not opts.no_interpreter:
            t_int, iout = _best(lambda: run_module(module, args).value, 2)
            assert near(np.asarray(ref, np.float32), np.asarray(iout), ErrorSpec(1e-3, 1e-3)).ok
        assert near(np.asarray(ref, np.float32), np.asarray(out), ErrorSpec(1e-3, 1e-3)).ok, name
        t_xla, _ = _xla_time(name, args, opts.repeat)
        rows.append((name, t_hloc, compile_s, t_int, t_np, t_xla))
    ms = lambda t: "-" if t is None else f"{t * 1e3:9.2f}"   # noqa: E731
    ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:7.2f}x"   # noqa: E731
    print(f"numerics={opts.numerics}; times in ms, best of {opts.repeat}; ratios = other / hloc")
    print(f"{'case':22} {'hloc':>9} {'compile':>9} {'interp':>9} {'numpy':>9} {'xla':>9} "
          f"{'interp/hloc':>11} {'numpy/hloc':>10} {'xla/hloc':>9}")
    for name, th, tc, ti, tn, tx in rows:
        print(f"{name:22} {ms(th)} {ms(tc)} {ms(ti)} {ms(tn)} {ms(tx)} {ratio(ti, th):>11} "
              f"{ratio(tn, th):>10} {ratio(tx, th):>9}")


if __name__ == "__main__":
    main()
