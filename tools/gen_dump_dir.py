#!/usr/bin/env python3
"""Generate a whole XLA dump directory (every kind of file XLA:CPU writes) as test data.

DEV-ONLY (needs jax; the hloc tests never import it).  Usage, from the repository root::

    python tools/gen_dump_dir.py            # rewrites testdata/dumpdir/mlp_step/

One small JAX program (an MLP training step whose parameters are a dict, so the ENTRY
parameters get JAX's decorated names such as ``params__b1__.1``) is jitted in a
subprocess with ``XLA_FLAGS=--xla_dump_to=<tmp> --xla_dump_hlo_as_text``.  XLA then
writes, besides the HLO text (``*.before_optimizations.txt``,
``*.cpu_after_optimizations.txt``), LLVM IR (``*.ll``), object files (``*.o``), buffer
assignment / live range / memory usage reports, ``*.debug_options`` and, in a
``module_NNNN.<name>/`` folder, ``module.mlir`` (StableHLO) and ``*.textproto``.  Every
file is copied byte for byte, but of each kind other than HLO text only the two smallest
are kept, and none over 16 KiB unless it is the only one (the directory must stay small).  ``mlp_step.npz`` is
added: ``in0..`` / ``out0..`` / ``dtypes`` as in testdata/dumps/README.md, the values
JAX computed.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "testdata" / "dumpdir" / "mlp_step"
MAX_BYTES = 16 * 1024
MAX_PER_KIND = 2


def worker(out_npz: str) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=tools/)")

    def loss_fn(params, x, y):
        h = jnp.tanh(x @ params["w1"] + params["b1"])
        out = h @ params["w2"] + params["b2"]
        return jnp.mean((out - y) ** 2)

    def mlp_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        new = {k: params[k] - 0.1 * grads[k] for k in params}
        return loss, new

    rng = np.random.default_rng(9)
    params = {"w1": rng.standard_normal((8, 16), np.float32) * 0.3,
              "b1": rng.standard_normal((16,), np.float32) * 0.1,
              "w2": rng.standard_normal((16, 4), np.float32) * 0.3,
              "b2": rng.standard_normal((4,), np.float32) * 0.1}
    x = rng.standard_normal((32, 8), np.float32)
    y = rng.standard_normal((32, 4), np.float32)
    fn = jax.jit(mlp_step, keep_unused=True)
    loss, new = fn(params, x, y)
    flat_in = jax.tree_util.tree_leaves((params, x, y))
    flat_out = jax.tree_util.tree_leaves((loss, new))
    arrays = {f"in{i}": np.asarray(a) for i, a in enumerate(flat_in)}
    arrays.update({f"out{i}": np.asarray(a) for i, a in enumerate(flat_out)})
    import json
    arrays["dtypes"] = np.array(json.dumps({k: v.dtype.name for k, v in arrays.items()},
                                           sort_keys=True))
    np.savez(out_npz, **arrays)


def kind(name: str) -> str:
    for suffix in (".ll", ".o", ".mlir", ".textproto", ".debug_options"):
        if name.endswith(suffix):
            return suffix
    for part in ("buffer-assignment", "memory-usage", "live-range"):
        if part in name:
            return part
    return "hlo"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump"
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} --xla_dump_hlo_as_text",
                   JAX_PLATFORMS="cpu")
        npz = Path(tmp) / "mlp_step.npz"
        subprocess.run([sys.executable, __file__, "--worker", str(npz)], env=env, check=True,
                       cwd=REPO)
        if OUT.exists():
            shutil.rmtree(OUT)
        OUT.mkdir(parents=True)
        files = sorted(p for p in dump.rglob("*") if p.is_file() and "jit_mlp_step" in str(p))
        kept: dict[str, int] = {}
        for p in sorted(files, key=lambda p: p.stat().st_size):
            k = kind(p.name)
            if k != "hlo" and kept.get(k) and (p.stat().st_size > MAX_BYTES
                                               or kept[k] >= MAX_PER_KIND):
                print(f"pruned {p.relative_to(dump)} ({p.stat().st_size} bytes)")
                continue
            kept[k] = kept.get(k, 0) + 1
            dest = OUT / p.relative_to(dump)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
        shutil.copyfile(npz, OUT / "mlp_step.npz")
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:8d}  {p.relative_to(REPO)}")


if __name__ == "__main__":
    main()
