"""Check hloc's `dot-library-rewriter` against jaxlib's own, program by program (dev only).

    /work/venv-jax/bin/python tools/ynn_probe.py [--keep DIR] [NAME ...]

For each small JAX program below, jaxlib 0.10.2 compiles it with
`--xla_dump_hlo_pass_re=dot-library-rewriter`, which writes the module just before and
just after XLA:CPU's library rewriter. The before-pass module goes through
`hloc opt --passes=dot-library-rewriter --force` (with this checkout on PYTHONPATH); the
YNN fusions of both results are compared as (result shape, operand count, sorted fused
opcodes with their shapes). Prints one line per program that differs and `N/M match`;
exit status 1 on any difference. The programs probe each rule of ynn_support.py:
thresholds, types, ops that are and are not fused, growth directions, merging.
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def programs(jax, jnp, np):
    lax = jax.lax

    def a(*shapes, dt=np.float32):
        return [np.ones(s, dt) for s in shapes]

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def rw(x, size, stride, pad="VALID", init=0.0, op=lax.add):
        return lax.reduce_window(x, init, op, size, stride, pad)

    bf = jnp.bfloat16
    return {
        "elementwise_only": (lambda x, y: x * y + 1.0, a((64, 128), (64, 128))),
        "reduce_1024": (lambda x: jnp.sum(x, 1), a((32, 32))),
        "reduce_4096": (lambda x: jnp.sum(x, 1), a((64, 64))),
        "reduce_4095": (lambda x: jnp.sum(x, 1), a((63, 65))),
        "shared_producer": (lambda x, y: (jnp.sum(x * y, 1), x * y), a((64, 128), (64, 128))),
        "reduce_exp": (lambda x: jnp.sum(jnp.exp(x), 1), a((64, 128))),
        "reduce_to_scalar": (lambda x: jnp.sum(x), a((64, 128))),
        "grow_down": (lambda x: jnp.exp(x - jnp.max(x, 1, keepdims=True)) * 2.0,
                      a((64, 128))),
        "two_reduces": (lambda x: jnp.sum(jnp.exp(x - jnp.max(x, 1, keepdims=True)), 1),
                        a((64, 128))),
        "small_in_between": (lambda x: jnp.exp(x - jnp.max(x, 1, keepdims=True) * 2.0),
                             a((64, 128))),
        "softmax": (lambda x: jax.nn.softmax(x, -1), a((64, 128))),
        "layernorm": (lambda x: (x - x.mean(-1, keepdims=True))
                      / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5), a((64, 128))),
        "bf16_input": (lambda x: jnp.sum(x, 1), [np.ones((64, 128), bf)]),
        "bf16_roundtrip": (lambda x: jnp.sum((x * 2).astype(bf).astype(jnp.float32), 1),
                           a((64, 128))),
        "f16_sum_f32": (lambda x: jnp.sum(x, 1, dtype=jnp.float32), a((64, 128), dt=np.float16)),
        "f64": (lambda x: jnp.sum(x * x, 1), a((64, 128), dt=np.float64)),
        "s32_sum": (lambda x: jnp.sum(x * 3, 1), a((64, 128), dt=np.int32)),
        "s8_max": (lambda x: jnp.max(x, 1), a((64, 128), dt=np.int8)),
        "s8_sum_s32": (lambda x: jnp.sum(x, 1, dtype=jnp.int32), a((64, 128), dt=np.int8)),
        "min": (lambda x: jnp.min(x, 0), a((64, 128))),
        "prod": (lambda x: jnp.prod(x, 1), a((64, 128))),
        "int_convert": (lambda x, i: jnp.sum(x * i.astype(jnp.float32), 1),
                        [np.ones((64, 128), np.float32), np.ones((64, 128), np.int32)]),
        "reduce_window": (lambda x: rw(x, (1, 4), (1, 4)), a((64, 128))),
        "reduce_window_stride": (lambda x: rw(x, (1, 4), (1, 2)), a((64, 128))),
        "reduce_window_pad": (lambda x: rw(x, (1, 4), (1, 4), ((0, 0), (2, 2))), a((64, 128))),
        "max_pool": (lambda x: rw(x, (1, 2, 2, 1), (1, 2, 2, 1), init=-jnp.inf, op=lax.max),
                     a((2, 32, 32, 8))),
        "rank8": (lambda x: jnp.sum(x * 2.0, 7), a((2, 2, 2, 2, 2, 2, 4, 64))),
        "rank9": (lambda x: jnp.sum(x * 2.0, 8), a((2, 2, 2, 2, 2, 2, 2, 4, 64))),
        "reduce_window_rank8": (lambda x: rw(x, (1,) * 7 + (4,), (1,) * 7 + (4,)),
                                a((2, 2, 2, 2, 2, 2, 4, 64))),
        "dot_4": (lambda x, y: x @ y, a((4, 4), (4, 4))),
        "dot_8": (lambda x, y: x @ y, a((8, 8), (8, 8))),
        "matvec": (lambda x, y: x @ y, a((64, 64), (64,))),
        "dot_lhs_transposed": (lambda x, y: x.T @ y, a((64, 64), (64, 64))),
        "dot_rhs_transposed": (lambda x, y: x @ y.T, a((64, 64), (64, 64))),
        "dot_bias_relu": (lambda x, y, b: jnp.maximum(x @ y + b, 0.0),
                          a((64, 64), (64, 64), (64,))),
        "dot_batched": (lambda x, y: jnp.einsum("bij,bjk->bik", x, y),
                        a((4, 32, 32), (4, 32, 32))),
        "dot_s32": (lambda x, y: x @ y, a((64, 64), (64, 64), dt=np.int32)),
        "dot_bf16": (lambda x, y: x @ y, [np.ones((64, 64), bf)] * 2),
        "dot_f64": (lambda x, y: x @ y, a((64, 64), (64, 64), dt=np.float64)),
        "dot_two_users": (lambda x, y: (jnp.sum(x @ y, 0), x @ y), a((64, 64), (64, 64))),
        "dot_grown_into": (lambda x, y, z: jnp.sum(jnp.tanh(x @ y) * z, 1),
                           a((64, 64), (64, 64), (64, 64))),
        "dot_chain": (lambda x, y, w: jnp.sum((x @ y) @ w, 1), a((64, 64), (64, 64), (64, 64))),
        "merge_down": (lambda x, y, w: (jnp.sum(x, 1, keepdims=True) * y) @ w,
                       a((64, 128), (64, 128), (128, 64))),
        "pad": (lambda x: jnp.sum(jnp.pad(x, ((0, 0), (1, 1))) * 2.0, 1), a((64, 128))),
        "iota": (lambda x: jnp.sum(x * jnp.arange(128, dtype=jnp.float32), 1), a((64, 128))),
        "slice": (lambda x: jnp.sum(x[:, 1:100] * 2.0, 1), a((64, 128))),
        "concatenate": (lambda x, y: jnp.sum(jnp.concatenate([x, y], 1) * 2.0, 1),
                        a((64, 128), (64, 128))),
        "select": (lambda x: jnp.sum(jnp.where(x > 0, x, 0.0), 1), a((64, 128))),
        "transpose": (lambda x, y: jnp.sum(jnp.transpose(jnp.exp(x), (1, 0)) * y, 1),
                      a((64, 128), (128, 64))),
        "reshape": (lambda x: jnp.sum(jnp.reshape(x * 2.0, (64, 4, 32)), 2), a((64, 128))),
        "constant_array": (lambda x: jnp.sum(
            x * np.arange(128 * 64, dtype=np.float32).reshape(64, 128), 1), a((64, 128))),
        "conv": (conv, a((1, 16, 16, 32), (3, 3, 32, 32))),
        "conv_16_features": (conv, a((1, 16, 16, 16), (3, 3, 16, 16))),
        "conv_bias": (lambda x, w, b: jnp.maximum(conv(x, w) + b, 0.0),
                      a((1, 16, 16, 32), (3, 3, 32, 32), (32,))),
        "remainder": (lambda x: jnp.sum(jnp.remainder(x, 3.0), 0), a((64, 128))),
        "power": (lambda x, y: jnp.sum(x ** y, 0), a((64, 128), (64, 128))),
        "compare": (lambda x: jnp.sum((x > 1.0).astype(jnp.float32), 0), a((64, 128))),
        "long_chain": (lambda x: jnp.sum(x, 1, keepdims=True) * x + jnp.exp(x) * jnp.log(x)
                       - jnp.sqrt(x) * jnp.tanh(x) + sum(x * float(i) for i in range(12)),
                       a((64, 128))),
        "log_softmax_grad": (lambda x: jax.grad(
            lambda x: jnp.sum(jax.nn.log_softmax(x) * x))(x), a((64, 128))),
    }


def worker(name: str) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    jax.config.update("jax_enable_x64", True)
    f, args = programs(jax, jnp, np)[name]
    jax.jit(f).lower(*args).compile()


def summary(text: str) -> list:
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    text = re.sub(r", backend_config=\{.*\}", "", text)
    comps = dict(re.findall(r"^(%\S+) .*?\{\n(.*?)\n\}", text, re.M | re.S))
    out = []
    for m in re.finditer(r"^\s*(?:ROOT )?%\S+ = (\S+) fusion\((.*?)\), kind=kCustom, "
                         r"calls=(%\S+)", text, re.M):
        ops = [re.sub(r"^\s*(ROOT )?%\S+ = (\S+) ([\w\-]+)\(.*", r"\3:\2", line)
               for line in comps[m.group(3)].split("\n")]
        ops = sorted(o.split("{")[0] for o in ops if not o.startswith("parameter"))
        out.append((m.group(1).split("{")[0], len(m.group(2).split(",")), tuple(ops)))
    return sorted(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--keep", type=Path, help="keep the XLA dumps here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker)
        return 0
    import jax
    import jax.numpy as jnp
    import numpy as np
    names = a.names or list(programs(jax, jnp, np))
    top = a.keep or Path(tempfile.mkdtemp(prefix="ynn_probe_"))
    env_hloc = dict(os.environ, PYTHONPATH=str(ROOT))
    bad = 0
    for name in names:
        d = top / name
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={d} "
                   "--xla_dump_hlo_pass_re=dot-library-rewriter")
        subprocess.run([sys.executable, __file__, "--worker", name], env=env, check=True,
                       stderr=subprocess.DEVNULL)
        before = glob.glob(f"{d}/*before_dot-library-rewriter*")
        after = glob.glob(f"{d}/*after_dot-library-rewriter*")
        r = subprocess.run([sys.executable, "-m", "hloc", "opt", before[0],
                            "--passes=dot-library-rewriter", "--force"],
                           capture_output=True, text=True, env=env_hloc, cwd=ROOT)
        xla = summary(Path(after[0]).read_text())
        mine = summary(r.stdout) if r.returncode == 0 else [("error", r.stderr[-300:])]
        if mine != xla:
            bad += 1
            print(f"{name}:\n  xla  {xla}\n  hloc {mine}")
    print(f"{len(names) - bad}/{len(names)} match")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
