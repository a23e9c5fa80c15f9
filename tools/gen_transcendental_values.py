"""Write XLA:CPU's values of tanh for the compiled back end's numerics tests (dev-only: needs JAX).

    /work/venv-jax/bin/python tools/gen_transcendental_values.py

`testdata/numerics/tanh_xla.npz` holds, for f32 and f64, inputs `x_f32`/`x_f64` (random
values over the approximation's ranges plus the edges: +-0, tiny, subnormal, the clamp
points, 20, +-inf, NaN) and `tanh_f32`/`tanh_f64`, what `jnp.tanh` computed on XLA:CPU
(its rational approximation), so tests compare hloc's `xla-cpu` numerics with XLA's
bits without needing JAX.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "testdata" / "numerics" / "tanh_xla.npz"


def _inputs(dt, rng):
    edges = [0.0, -0.0, 1e-30, -1e-30, 1e-40, 5e-324, 0.0004, 0.00039, -0.0004, 1.0, -1.0,
             7.99881172180175781, 7.9, 8.0, 9.0, 17.7, 17.714196154005176, 17.8, 19.99, 20.0,
             -20.0, 25.0, 1e30, -1e30, np.inf, -np.inf, np.nan]
    parts = [rng.uniform(-22, 22, 2048), rng.uniform(-1.5, 1.5, 1024),
             rng.uniform(-0.01, 0.01, 512), np.array(edges)]
    return np.concatenate(parts).astype(dt)


def main():
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(12)
    out = {}
    for name, dt in (("f32", np.float32), ("f64", np.float64)):
        x = _inputs(dt, rng)
        out[f"x_{name}"] = x
        out[f"tanh_{name}"] = np.asarray(jax.jit(jnp.tanh)(x))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **out)
    print(f"wrote {OUT} (jax {jax.__version__})")


if __name__ == "__main__":
    main()
