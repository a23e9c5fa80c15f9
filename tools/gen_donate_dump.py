#!/usr/bin/env python3
"""DEV-ONLY: a jitted step with `donate_argnums` as XLA dumps it, with its inputs and
XLA's outputs, for the donated-parameter tests (tests/test_backend_donate.py).

    /work/venv-jax/bin/python tools/gen_donate_dump.py [testdata/donate]

Writes `donate_step.{before,after}_optimizations.hlo` (the bytes XLA wrote; the header
carries `input_output_alias`) and `donate_step.npz` (`in0..`, `out0..`).
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np


def main(out: Path) -> None:
    tmp = tempfile.mkdtemp()
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={tmp} --xla_dump_large_constants=true"
    import jax
    import jax.numpy as jnp
    from jax import lax

    def donate_step(buf, w, g, row, i):
        buf = lax.dynamic_update_slice(buf, row[None, :], (i, 0))   # a ring-buffer write
        w = w - 0.1 * g                                            # an SGD update
        return buf, w, jnp.sum(buf[i]) + jnp.sum(w)

    rng = np.random.default_rng(12)
    ins = [rng.standard_normal((64, 32)).astype(np.float32),
           rng.standard_normal((32, 16)).astype(np.float32),
           rng.standard_normal((32, 16)).astype(np.float32),
           rng.standard_normal(32).astype(np.float32), np.int32(5)]
    saved = [np.array(a) for a in ins]
    outs = jax.jit(donate_step, donate_argnums=(0, 1))(*[jnp.asarray(a) for a in ins])
    outs = [np.asarray(o) for o in jax.tree.leaves(outs)]
    out.mkdir(parents=True, exist_ok=True)
    for f in sorted(os.listdir(tmp)):
        if "jit_donate_step" not in f:
            continue
        for stage in ("before_optimizations", "after_optimizations"):
            if f.endswith(f"{stage}.txt") and "buffer" not in f:
                shutil.copyfile(os.path.join(tmp, f), out / f"donate_step.{stage}.hlo")
    named = {f"in{k}": a for k, a in enumerate(saved)}
    named.update({f"out{k}": a for k, a in enumerate(outs)})
    np.savez(out / "donate_step.npz", **named)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "testdata/donate"))
