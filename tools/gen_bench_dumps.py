"""Write the two scan benchmark programs of benchmarks/run.py (dev-only: needs JAX).

    /work/venv-jax/bin/python tools/gen_bench_dumps.py

* `benchmarks/data/scan_carry_f64`: `lax.scan` of 10,000 steps over a 3x3 f64 matrix
  carry (c <- tanh(m @ c) + 0.5 c); XLA:CPU keeps it in one loop.
* `benchmarks/data/grad_scan_scalars`: `jax.grad` through a 1,000-step scan whose
  parameters are 32 scalar leaves (16 tanh layers per step): thousands of tiny ops.

Each is written as `<name>.hlo` (JAX's lowering, before XLA's optimisations) and
`<name>.npz` (`in0..` one per ENTRY parameter, `out0..` one per result leaf, as
JAX computed them on XLA:CPU), so benchmarks and tests never need JAX.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "data"


def _scan_carry():
    import jax.numpy as jnp
    from jax import lax

    def scan_carry(c0, m):
        def body(c, _):
            return jnp.tanh(m @ c) + 0.5 * c, None
        c, _ = lax.scan(body, c0, None, length=10000)
        return c
    r = np.random.default_rng(0)
    return scan_carry, (r.standard_normal((3, 3)), r.standard_normal((3, 3)) * 0.5)


def _grad_scan():
    import jax
    import jax.numpy as jnp
    from jax import lax

    def loss(p, xs):
        def body(h, x):
            for k in range(len(p) // 2):
                h = jnp.tanh(p[f"w{k:02d}"] * h + p[f"b{k:02d}"] * x)
            return h, h
        _, hs = lax.scan(body, jnp.float32(0.0), xs)
        return jnp.sum(hs * hs)
    r = np.random.default_rng(1)
    p = {f"{c}{k:02d}": np.float32(r.uniform(0.5, 1.0)) for k in range(16) for c in "wb"}
    return jax.grad(loss), (p, r.standard_normal(1000).astype(np.float32))


def main():
    import jax
    jax.config.update("jax_enable_x64", True)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, make in (("scan_carry_f64", _scan_carry), ("grad_scan_scalars", _grad_scan)):
        fn, args = make()
        jitted = jax.jit(fn)
        text = jitted.lower(*args).as_text(dialect="hlo")
        outs = jax.tree_util.tree_leaves(jitted(*args))
        ins = jax.tree_util.tree_leaves(args)
        arrays = {f"in{i}": np.asarray(a) for i, a in enumerate(ins)}
        arrays.update({f"out{i}": np.asarray(a) for i, a in enumerate(outs)})
        (OUT / f"{name}.hlo").write_text(text)
        np.savez(OUT / f"{name}.npz", **arrays)
        print(f"{name}: {len(ins)} inputs, {len(outs)} outputs, {len(text)} chars of HLO")


if __name__ == "__main__":
    main()
