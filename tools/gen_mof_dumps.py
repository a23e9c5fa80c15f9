#!/usr/bin/env python3
"""XLA:CPU's multi-output fusion, dumped by XLA itself, as hloc test data. DEV-ONLY (JAX).

    /work/venv-jax/bin/python tools/gen_mof_dumps.py [--out testdata/mof] [--only NAME ..]

XLA:CPU's flag is the backend extra option `xla_cpu_use_multi_output_fusion`
(XLA_FLAGS=--xla_backend_extra_options=xla_cpu_use_multi_output_fusion; a plain
`--xla_cpu_use_multi_output_fusion` makes XLA abort with "Unknown flag"). Every case is
compiled in its own subprocess with that flag and
`--xla_dump_hlo_pass_re=cpu_multi_output_fusion`, and the parent copies the exact bytes
XLA wrote:

* `<case>.pre_mof.hlo`:  the module after fusion-wrapper, before cpu_multi_output_fusion
* `<case>.post_mof.hlo`: the module after cpu_multi_output_fusion (not kept when it is
  the pre_mof text: XLA changed nothing)
* for the JAX programs below, also `<case>.before.hlo` (before_optimizations) and
  `<case>.mof_after.hlo` (cpu_after_optimizations with the flag).

Cases: the small programs below (sibling reductions as in layer norm, a producer feeding
a reduce and an elementwise output, siblings of different shapes, ...) and every
testdata/dumps/*.before_optimizations.hlo that jaxlib compiles from text (`dump_<name>`).
tests/test_multi_output_fusion.py runs `hloc opt --passes=cpu_multi_output_fusion` on each
pre_mof file and compares with post_mof (or with the input when XLA changed nothing).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DUMPS = ROOT / "testdata" / "dumps"
FLAGS = "--xla_backend_extra_options=xla_cpu_use_multi_output_fusion"


def programs():
    import jax.numpy as jnp

    def layernorm(x):
        m = jnp.mean(x, axis=-1, keepdims=True)
        v = jnp.mean((x - m) ** 2, axis=-1, keepdims=True)
        return (x - m) / jnp.sqrt(v + 1e-5)

    def layernorm_moments(x):
        return jnp.mean(x, axis=-1), jnp.mean(x * x, axis=-1)

    def sum_and_max(x):
        return jnp.sum(x, axis=1), jnp.max(x, axis=1)

    def max_and_sum(x):
        return jnp.max(x, axis=1), jnp.sum(x, axis=1)

    def four_siblings(x):
        return jnp.sum(x, axis=1), jnp.max(x, axis=1), jnp.min(x, axis=1), \
            jnp.sum(x * x, axis=1)

    def fused_siblings(x):
        return jnp.sum(x * x, axis=1), jnp.sum(jnp.exp(x), axis=1)

    def producer_consumer(x):
        y = jnp.exp(x) * 2
        return y, jnp.sum(y, axis=1)

    def elementwise_siblings(x):
        return jnp.exp(x) + 1, jnp.log(x) * 3, jnp.sin(x)

    def different_shapes(x):
        return jnp.sum(x, axis=0), jnp.sum(x, axis=1)

    def chained(x):
        a = jnp.sum(x, axis=1)
        b = jnp.max(x * a[:, None], axis=1)
        return a, b

    def shared_constant_only(x):
        return jnp.sum(x, axis=1), jnp.sum(jnp.flip(x, 0) * 2, axis=1)

    def too_many_operands(x):
        total = x
        for k in range(1, 21):
            total = total + jnp.roll(x, k, axis=1) * k
        return total, x * 3

    def while_body_siblings(x):
        import jax

        def body(i, c):
            return c + jnp.sum(c, axis=1, keepdims=True) * 1e-3 \
                - jnp.max(c, axis=1, keepdims=True) * 1e-3
        return jax.lax.fori_loop(0, 3, body, x)

    def dus_sibling(x):
        import jax
        u = x[:2] * 2
        return jax.lax.dynamic_update_slice(x, u, (3, 0)), x * 3

    def transpose_sibling(x):
        return x.T + 0, jnp.exp(x).T

    return {f.__name__: f for f in (
        layernorm, layernorm_moments, sum_and_max, max_and_sum, four_siblings,
        fused_siblings, producer_consumer, elementwise_siblings, different_shapes,
        chained, shared_constant_only, too_many_operands, while_body_siblings,
        dus_sibling, transpose_sibling)}


def worker(case: str, dump: str) -> None:
    os.environ["XLA_FLAGS"] = f"{FLAGS} --xla_dump_to={dump} " \
        "--xla_dump_hlo_pass_re=cpu_multi_output_fusion"
    import re

    import jax
    jax.config.update("jax_enable_x64", True)
    # FileNames say "tools/gen_mof_dumps.py" wherever the checkout lives.
    jax.config.update("jax_hlo_source_file_canonicalization_regex",
                      "^" + re.escape(str(ROOT) + os.sep))
    import numpy as np
    if case.startswith("dump_"):
        import jaxlib._hlo as h
        from jax._src.interpreters import mlir as jmlir
        from jax._src.lib import xla_client as xc
        from jax._src.lib.mlir import ir
        text = (DUMPS / f"{case[5:]}.before_optimizations.hlo").read_text()
        m = h.hlo_module_from_text(text)
        bc = xc._xla.mlir.hlo_to_stablehlo(m.as_serialized_hlo_module_proto())
        with jmlir.make_ir_context():
            code = jmlir.module_to_bytecode(ir.Module.parse(bc))
        client = jax.devices("cpu")[0].client
        client.compile_and_load(code, xc.DeviceList(tuple(jax.devices("cpu"))),
                                xc.CompileOptions())
        return
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32) + 2
    jax.jit(programs()[case])(x)


def collect(case: str, dump: Path, out: Path) -> list[str]:
    name = None if case.startswith("dump_") else f"jit_{case}"
    files = sorted(p for p in dump.iterdir() if name is None or f".{name}." in p.name)
    wrote = []

    def copy(pattern: str, suffix: str) -> None:
        hits = [p for p in files if pattern in p.name]
        if hits:
            shutil.copyfile(hits[-1], out / f"{case}.{suffix}.hlo")
            wrote.append(suffix)
    copy(".before_cpu_multi_output_fusion", "pre_mof")
    copy(".after_cpu_multi_output_fusion", "post_mof")
    pre, post = out / f"{case}.pre_mof.hlo", out / f"{case}.post_mof.hlo"
    if "post_mof" in wrote and pre.read_bytes() == post.read_bytes():
        post.unlink()           # XLA changed nothing: the test expects the input back
        wrote.remove("post_mof")
    if name is not None:
        copy(".before_optimizations.txt", "before")
        copy(".cpu_after_optimizations.txt", "mof_after")
    return wrote


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "testdata" / "mof"))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--worker", nargs=2, metavar=("CASE", "DUMPDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    cases = list(programs()) + [f"dump_{p.name.split('.')[0]}" for p in
                                sorted(DUMPS.glob("*.before_optimizations.hlo"))]
    if args.only:
        cases = [c for c in cases if c in args.only]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for case in cases:
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([sys.executable, __file__, "--worker", case, tmp],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                print(f"{case}: XLA failed ({r.stderr.strip().splitlines()[-1:]})")
                continue
            print(f"{case}: {' '.join(collect(case, Path(tmp), out)) or 'no MOF dump'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
