"""Compiled sort and fft against NumPy and XLA:CPU (via JAX, when importable).

    python benchmarks/sort_fft.py [--repeat N]
    /work/venv-jax/bin/python benchmarks/sort_fft.py      # adds the XLA:CPU column

Cases (issue: the compiled sort was an insertion sort and the fft a direct DFT, both
quadratic): a stable sort of 1M f32 (TOTALORDER, as jnp.sort), sort of 1M (f32, s32)
key/value pairs, a c64 FFT of 2^16, a c64 FFT of 100003 (prime: Bluestein) and a 3-D
IRFFT c64[5,64,128,33] -> f32[5,64,128,64] (XLA's Irfft3d test shape). Times are the best of
--repeat steady-state calls, compile time excluded; ratios are hloc / other. Every result
is checked against NumPy (sort: exactly; fft: ErrorSpec 1e-4 relative to the largest
magnitude). Not a test: timings on a shared machine vary by +-30 %.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from timing import best  # noqa: E402  (benchmarks/timing.py)

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402

_CMP = """cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
%s  ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER
}
"""


def _sort(n):
    return (f"HloModule sort1\n{_CMP % ''}\nENTRY e {{\n  x = f32[{n}] parameter(0)\n"
            f"  ROOT s = f32[{n}] sort(x), dimensions={{0}}, is_stable=true, to_apply=cmp\n}}\n")


def _sort_kv(n):
    extra = "  i = s32[] parameter(2)\n  j = s32[] parameter(3)\n"
    return (f"HloModule sort2\n{_CMP % extra}\nENTRY e {{\n  x = f32[{n}] parameter(0)\n"
            f"  k = s32[{n}] parameter(1)\n  ROOT s = (f32[{n}], s32[{n}]) sort(x, k), "
            f"dimensions={{0}}, is_stable=true, to_apply=cmp\n}}\n")


def _fft(n):
    return (f"HloModule fft1\nENTRY e {{\n  x = c64[{n}] parameter(0)\n"
            f"  ROOT r = c64[{n}] fft(x), fft_type=FFT, fft_length={{{n}}}\n}}\n")


def _irfft3d():
    return ("HloModule irfft3d\nENTRY e {\n  x = c64[5,64,128,33] parameter(0)\n"
            "  ROOT r = f32[5,64,128,64] fft(x), fft_type=IRFFT, fft_length={64,128,64}\n}\n")


def _cases(rng):
    n = 1 << 20
    x = rng.standard_normal(n).astype(np.float32)
    k = np.arange(n, dtype=np.int32)
    keys = rng.integers(0, 1000, n).astype(np.float32)         # many ties: stability matters
    c16 = (rng.standard_normal(1 << 16) + 1j * rng.standard_normal(1 << 16)).astype(np.complex64)
    cp = (rng.standard_normal(100003) + 1j * rng.standard_normal(100003)).astype(np.complex64)
    c3 = (rng.standard_normal((5, 64, 128, 33)) + 1j * rng.standard_normal((5, 64, 128, 33))
          ).astype(np.complex64)
    perm = np.argsort(keys, kind="stable")
    return [
        ("sort f32[1M]", _sort(n), [x], lambda: np.sort(x, kind="stable"),
         lambda jnp: (lambda a: jnp.sort(a)), np.sort(x, kind="stable"), "exact"),
        ("sort (f32,s32)[1M]", _sort_kv(n), [keys, k], lambda: np.argsort(keys, kind="stable"),
         lambda jnp: (lambda a, b: __import__("jax").lax.sort((a, b), num_keys=1)),
         (keys[perm], k[perm]), "exact"),
        ("fft c64[65536]", _fft(1 << 16), [c16], lambda: np.fft.fft(c16),
         lambda jnp: jnp.fft.fft, np.fft.fft(c16.astype(np.complex128)), "fft"),
        ("fft c64[100003]", _fft(100003), [cp], lambda: np.fft.fft(cp),
         lambda jnp: jnp.fft.fft, np.fft.fft(cp.astype(np.complex128)), "fft"),
        ("irfft3d 5x64x128x64", _irfft3d(), [c3], lambda: np.fft.irfftn(c3, s=(64, 128, 64), axes=(1, 2, 3)),
         lambda jnp: (lambda a: jnp.fft.irfftn(a, s=(64, 128, 64), axes=(1, 2, 3))),
         np.fft.irfftn(c3.astype(np.complex128), s=(64, 128, 64), axes=(1, 2, 3)), "fft"),
    ]


def _check(got, want, how):
    got = got if isinstance(got, (tuple, list)) else [got]
    want = want if isinstance(want, tuple) else [want]
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if how == "exact":
            if g.tobytes() != w.astype(g.dtype).tobytes():
                return "MISMATCH"
        elif np.abs(g - w).max() > 1e-4 * max(np.abs(w).max(), 1):
            return "MISMATCH"
    return "ok"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", False)
    except ImportError:
        jax = jnp = None
    rng = np.random.default_rng(0)
    head = f"{'case':22} {'compile s':>9} {'hloc ms':>9} {'numpy ms':>9} {'xla ms':>9} {'/numpy':>7} {'/xla':>7} check"
    print(head)
    with tempfile.TemporaryDirectory() as cache:
        for name, text, ins, np_fn, jax_fn, want, how in _cases(rng):
            t0 = time.perf_counter()
            exe = compile_module(hloc.parse(text), cache_dir=cache)
            compile_s = time.perf_counter() - t0
            got = exe.run(ins)
            ok = _check(got, want, how)
            th = best(lambda: exe.run(ins), args.repeat)[0]
            tn = best(np_fn, args.repeat)[0]
            tx = float("nan")
            if jax is not None:
                f = jax.jit(jax_fn(jnp))
                dev = [jnp.asarray(a) for a in ins]
                jax.block_until_ready(f(*dev))
                tx = best(lambda: jax.block_until_ready(f(*dev)), args.repeat)[0]
            print(f"{name:22} {compile_s:9.2f} {th * 1e3:9.1f} {tn * 1e3:9.1f} {tx * 1e3:9.1f} "
                  f"{th / tn:7.2f} {th / tx:7.2f} {ok}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
