#!/usr/bin/env python3
"""Generate real XLA dumps (HLO text) and XLA-computed values as hloc test data.

DEV-ONLY.  Needs the ``dev`` extra of pyproject.toml in the *same* Python as
the rest of the project::

    pip install jax==0.10.2 jaxlib==0.10.2 tensorflow-cpu   # tensorflow-cpu 2.21.0 was used

(tensorflow-cpu 2.21.0 coexists with jax 0.10.2 / numpy 2.4 / ml_dtypes 0.6, so no
separate virtual environment is needed.)  The hloc tests never import jax or TF.

Usage (from the repository root)::

    python tools/gen_dumps.py                      # regenerate testdata/dumps/ (all programs)
    python tools/gen_dumps.py --only NAME [NAME..] # regenerate some programs
    python tools/gen_dumps.py --list               # list the programs
    python tools/gen_dumps.py --transformer24 benchmarks/data   # big parse-benchmark input
    python tools/gen_dumps.py --transformer-layers benchmarks/data/scale [--layers 8 24 48 96]
                                                   # opt-scaling family (benchmarks/opt_scale.py)
    python tools/gen_dumps.py --transformer-layers benchmarks/data/scale --width 256 --seq 64 \
        --batch 2 [--layers 8 24] [--after]        # the same family with realistic tensor sizes
    python tools/check_dumps.py                    # replay every dump through XLA and compare

How it works: every program runs in its own subprocess (``--worker NAME``) with
``XLA_FLAGS=--xla_dump_to=<tmpdir> --xla_dump_large_constants=true`` so that the
dumped ``before_optimizations`` text is replayable (constants are printed in full
instead of ``{...}``).  ``jax_hlo_source_file_canonicalization_regex`` strips the
checkout path, so the FileNames section of the JAX dumps says
``"tools/gen_dumps.py"`` wherever the repo lives.  From the dump folder the
parent picks the module of the program's own jitted function (JAX: module name
``jit_<program>``; TF: ``a_inference_<program>_<N>__...``; TF auto-clustering:
``cluster_<N>...``) and copies the exact bytes XLA wrote to

* ``testdata/dumps/<program>.before_optimizations.hlo``  (``module_NNNN.<name>.before_optimizations.txt``)
* ``testdata/dumps/<program>.after_optimizations.hlo``   (``module_NNNN.<name>.cpu_after_optimizations.txt``)
* ``testdata/dumps/<program>.npz``: ``in0..`` (entry ``parameter(i)`` <-> ``in_i``),
  ``out0..`` (flattened outputs as XLA computed them, in ENTRY ROOT tuple order,
  or the single non-tuple ROOT), and ``dtypes`` (0-d JSON string: key -> numpy
  dtype name).  Non-native dtypes (bfloat16, float8_*, int4, ...) are stored as raw
  bits in the unsigned integer of the same item size (the encoding of
  shared/corpus/stablehlo/README.md).

Everything is deterministic (fixed per-program seeds derived from the name) and
the output folder is rewritten from scratch on a full run (idempotent).
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCRIPT_REL = "tools/gen_dumps.py"
DEFAULT_OUT = REPO / "testdata" / "dumps"
DUMP_FLAGS = "--xla_dump_large_constants=true"

NATIVE = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16", "float32", "float64", "complex64", "complex128"}

PROGRAMS: dict[str, dict] = {}


def _register(kind, desc, **opts):
    def deco(fn):
        name = fn.__name__
        assert name not in PROGRAMS, name
        PROGRAMS[name] = dict(name=name, kind=kind, desc=desc, build=fn, **opts)
        return fn
    return deco


def jax_program(desc, x64=False, prng=None, large_constants=True):
    """``build(rng) -> (fn, args)``; args is a tuple of numpy arrays / pytrees."""
    return _register("jax", desc, x64=x64, prng=prng, large_constants=large_constants)


def tf_program(desc, autocluster=False, text_only=False):
    """``build(rng) -> (fn, args, variables)`` with fn a tf.function."""
    return _register("tf", desc, autocluster=autocluster, text_only=text_only)


# ----------------------------------------------------------------------------
# npz encoding helpers
# ----------------------------------------------------------------------------

def encode_arrays(named: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out, dts = {}, {}
    for k, a in named.items():
        a = np.asarray(a)
        name = a.dtype.name
        if name not in NATIVE:
            a = a.view(np.dtype(f"u{a.dtype.itemsize}"))
        out[k] = np.array(a, order="C", copy=True)
        dts[k] = name
    out["dtypes"] = np.array(json.dumps(dts, sort_keys=True))
    return out


def load_npz(path) -> dict[str, np.ndarray]:
    import ml_dtypes
    d = np.load(path)
    dt = json.loads(str(d["dtypes"]))
    return {k: (d[k] if dt[k] in NATIVE else d[k].view(getattr(ml_dtypes, dt[k])))
            for k in d.files if k != "dtypes"}


def save_npz(path, named):
    # np.savez writes zip entries with the current time: fix it for idempotency.
    import zipfile
    enc = encode_arrays(named)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, a in enc.items():
            info = zipfile.ZipInfo(k + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, allow_pickle=False)
            zf.writestr(info, buf.getvalue())


# ----------------------------------------------------------------------------
# input helpers (numpy only)
# ----------------------------------------------------------------------------

def f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


SPECIAL_F32 = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan,
                        1e-45, -1e-45, 1.1754942e-38, 1.17549435e-38,
                        3.4028235e38, -3.4028235e38, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5,
                        0.49999997, 1e-30, 8388609.0, 16777217.0], dtype=np.float32)

# ============================================================================
# JAX programs
# ============================================================================


@jax_program("jnp.sum(x + y*z) over f32[4,8]")
def reduce_sum_xyz(rng):
    import jax.numpy as jnp

    def f(x, y, z):
        return jnp.sum(x + y * z)
    return f, (f32(rng, 4, 8), f32(rng, 4, 8), f32(rng, 4, 8))


@jax_program("dense layer + relu: relu(x @ W + b)")
def dense_relu(rng):
    import jax

    def f(x, w, b):
        return jax.nn.relu(x @ w + b)
    return f, (f32(rng, 4, 16), f32(rng, 16, 8, scale=0.3), f32(rng, 8))


@jax_program("3-layer MLP training step: value_and_grad of softmax cross-entropy + SGD update")
def mlp_train_step(rng):
    import jax
    import jax.numpy as jnp

    def loss_fn(params, x, y):
        h = x
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < len(params) - 1:
                h = jax.nn.relu(h)
        logp = jax.nn.log_softmax(h)
        return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(y, h.shape[-1]), axis=-1))

    def f(params, x, y):
        loss, g = jax.value_and_grad(loss_fn)(params, x, y)
        new = jax.tree.map(lambda p, gp: p - 0.1 * gp, params, g)
        return loss, new

    dims = [12, 16, 16, 4]
    params = [(f32(rng, a, b, scale=1 / np.sqrt(a)), np.zeros(b, np.float32))
              for a, b in zip(dims[:-1], dims[1:])]
    return f, (params, f32(rng, 8, 12), rng.integers(0, 4, 8).astype(np.int32))


@jax_program("MNIST-like CNN training step: conv, relu, max-pool (reduce_window), avg-pool, "
             "dense, softmax cross-entropy, grad (select-and-scatter), SGD")
def cnn_train_step(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def model(p, x):
        h = lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + p["b1"])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = lax.conv_general_dilated(h, p["c2"], (1, 1), "VALID",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + p["b2"])
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        h = h.reshape(h.shape[0], -1)
        return h @ p["w"] + p["b"]

    def loss_fn(p, x, y):
        logits = model(p, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], 1))

    def f(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return loss, jax.tree.map(lambda a, b: a - 0.05 * b, p, g)

    p = {"c1": f32(rng, 3, 3, 1, 4, scale=0.3), "b1": np.zeros(4, np.float32),
         "c2": f32(rng, 3, 3, 4, 8, scale=0.2), "b2": np.zeros(8, np.float32),
         "w": f32(rng, 2 * 2 * 8, 10, scale=0.2), "b": np.zeros(10, np.float32)}
    x = rng.random((4, 14, 14, 1)).astype(np.float32)
    y = rng.integers(0, 10, 4).astype(np.int32)
    return f, (p, x, y)


def _bert_parts(vocab, d, heads, ff, layers, seq, scan_layers=False, gelu_approx=True):
    import jax
    import jax.numpy as jnp

    def layernorm(x, g, b):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean((x - m) ** 2, -1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def attention(x, p, mask):
        B, S, D = x.shape
        hd = D // heads
        q = (x @ p["wq"]).reshape(B, S, heads, hd)
        k = (x @ p["wk"]).reshape(B, S, heads, hd)
        v = (x @ p["wv"]).reshape(B, S, heads, hd)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd).astype(np.float32)
        s = jnp.where(mask[:, None, None, :], s, -1e9)
        a = jax.nn.softmax(s, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, S, D)
        return o @ p["wo"]

    def block(x, lp, mask):
        x = layernorm(x + attention(x, lp, mask), lp["ln1g"], lp["ln1b"])
        h = jax.nn.gelu(x @ lp["w1"] + lp["b1"], approximate=gelu_approx)
        return layernorm(x + h @ lp["w2"] + lp["b2"], lp["ln2g"], lp["ln2b"])

    def model(p, tok, mask):
        x = p["emb"][tok] + p["pos"][None, :tok.shape[1]]
        if scan_layers:  # layer params stacked on a leading axis, one while loop
            x, _ = jax.lax.scan(lambda x, lp: (block(x, lp, mask), None), x, p["layers"])
        else:
            for lp in p["layers"]:
                x = block(x, lp, mask)
        return x @ p["emb"].T

    def loss_fn(p, tok, mask, tgt):
        logits = model(p, tok, mask)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, tgt[..., None], -1)[..., 0]
        return jnp.sum(nll * mask) / jnp.sum(mask)

    def init(rng):
        def lin(a, b):
            return f32(rng, a, b, scale=1 / np.sqrt(a))
        layers_p = []
        for _ in range(layers):
            layers_p.append({"wq": lin(d, d), "wk": lin(d, d), "wv": lin(d, d), "wo": lin(d, d),
                             "ln1g": np.ones(d, np.float32), "ln1b": np.zeros(d, np.float32),
                             "w1": lin(d, ff), "b1": np.zeros(ff, np.float32),
                             "w2": lin(ff, d), "b2": np.zeros(d, np.float32),
                             "ln2g": np.ones(d, np.float32), "ln2b": np.zeros(d, np.float32)})
        if scan_layers:
            layers_p = {k: np.stack([lp[k] for lp in layers_p]) for k in layers_p[0]}
        return {"emb": f32(rng, vocab, d, scale=0.1), "pos": f32(rng, seq, d, scale=0.1),
                "layers": layers_p}
    return loss_fn, init


@jax_program("BERT-like 2-layer transformer training step (embedding gather, layernorm, "
             "masked multi-head attention, gelu, tied output, CE loss, SGD); tiny dims; the 2 layers "
             "are stacked and run by lax.scan (forward and backward while loops)")
def bert_train_step(rng):
    import jax
    loss_fn, init = _bert_parts(vocab=40, d=16, heads=2, ff=32, layers=2, seq=8, scan_layers=True)

    def f(p, tok, mask, tgt):
        loss, g = jax.value_and_grad(loss_fn)(p, tok, mask, tgt)
        return loss, jax.tree.map(lambda a, b: a - 0.01 * b, p, g)
    p = init(rng)
    tok = rng.integers(0, 40, (2, 8)).astype(np.int32)
    mask = np.ones((2, 8), np.float32)
    mask[1, 6:] = 0
    tgt = rng.integers(0, 40, (2, 8)).astype(np.int32)
    return f, (p, tok, mask, tgt)


@jax_program("1-D convolution (NWC), stride 2, explicit asymmetric padding, rhs dilation 2")
def conv1d_stride_pad(rng):
    from jax import lax

    def f(x, w):
        return lax.conv_general_dilated(x, w, (2,), [(2, 1)], rhs_dilation=(2,),
                                        dimension_numbers=("NWC", "WIO", "NWC"))
    return f, (f32(rng, 2, 16, 3), f32(rng, 3, 3, 5))


@jax_program("2-D convolutions NCHW/OIHW: SAME padding stride 2, and VALID with rhs dilation")
def conv2d_variants(rng):
    from jax import lax

    def f(x, w):
        a = lax.conv_general_dilated(x, w, (2, 2), "SAME")
        b = lax.conv_general_dilated(x, w, (1, 1), "VALID", rhs_dilation=(2, 2))
        return a, b
    return f, (f32(rng, 2, 3, 9, 9), f32(rng, 4, 3, 3, 3))


@jax_program("2-D transposed convolution (lhs dilation) via lax.conv_transpose and explicit lhs_dilation")
def conv2d_lhs_dilation(rng):
    from jax import lax

    def f(x, w):
        a = lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        b = lax.conv_general_dilated(x, w, (1, 1), [(1, 2), (0, 1)], lhs_dilation=(2, 3),
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return a, b
    return f, (f32(rng, 1, 5, 5, 2), f32(rng, 3, 3, 2, 3))


@jax_program("3-D convolution NDHWC with stride and padding")
def conv3d(rng):
    from jax import lax

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 2, 1), [(1, 1), (0, 0), (1, 0)],
                                        dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    return f, (f32(rng, 1, 4, 6, 5, 2), f32(rng, 2, 3, 2, 2, 3))


@jax_program("depthwise 2-D convolution (feature_group_count = channels) and a grouped conv")
def conv2d_depthwise_grouped(rng):
    from jax import lax

    def f(x, wd, wg):
        a = lax.conv_general_dilated(x, wd, (1, 1), "SAME", feature_group_count=4,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        b = lax.conv_general_dilated(x, wg, (1, 1), "VALID", feature_group_count=2,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return a, b
    return f, (f32(rng, 2, 6, 6, 4), f32(rng, 3, 3, 1, 4), f32(rng, 2, 2, 2, 6))


@jax_program("gradient of a grouped convolution w.r.t. the kernel (batch_group_count) and input")
def conv_grouped_grad(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=2,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def f(x, w):
        return jax.grad(lambda x, w: jnp.sum(jnp.sin(conv(x, w))), argnums=(0, 1))(x, w)
    return f, (f32(rng, 2, 5, 5, 4), f32(rng, 3, 3, 2, 6))


@jax_program("direct batch_group_count convolution (lax.conv_general_dilated batch_group_count=2)")
def conv_batch_group(rng):
    from jax import lax

    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return f, (f32(rng, 4, 5, 5, 3), f32(rng, 2, 2, 3, 4))


@jax_program("lax.while_loop: Collatz step counts per element (s32 carry, data-dependent trip count)")
def while_loop_collatz(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(n):
        def cond(c):
            x, steps = c
            return jnp.any(x != 1)

        def body(c):
            x, steps = c
            done = x == 1
            nx = jnp.where(x % 2 == 0, x // 2, 3 * x + 1)
            return jnp.where(done, x, nx), steps + jnp.where(done, 0, 1)
        return lax.while_loop(cond, body, (n, jnp.zeros_like(n)))
    return f, (np.array([1, 2, 3, 6, 7, 27, 97, 12], np.int32),)


@jax_program("lax.fori_loop with dynamic_update_slice into a buffer and a float accumulator")
def fori_loop_accumulate(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x):
        def body(i, c):
            buf, acc = c
            row = jnp.sin(x * i.astype(jnp.float32))
            return lax.dynamic_update_slice(buf, row[None], (i, 0)), acc + jnp.sum(row)
        return lax.fori_loop(0, 6, body, (jnp.zeros((6, x.shape[0]), x.dtype), jnp.float32(0)))
    return f, (f32(rng, 5),)


@jax_program("lax.scan: a tiny tanh RNN over 6 steps with stacked outputs and final carry")
def scan_rnn(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(h0, xs, wh, wx):
        def step(h, x):
            h = jnp.tanh(h @ wh + x @ wx)
            return h, h.sum()
        return lax.scan(step, h0, xs)
    return f, (f32(rng, 2, 4), f32(rng, 6, 2, 3), f32(rng, 4, 4, scale=0.5), f32(rng, 3, 4))


@jax_program("lax.cond on a pred (bool) input; branches with different ops")
def cond_pred_input(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(p, x):
        return lax.cond(p, lambda x: jnp.exp(x) * 2.0, lambda x: jnp.cos(x) - x, x)
    return f, (np.array(True), f32(rng, 3, 3))


@jax_program("lax.switch with 3 branches; index input includes out-of-range (clamped) values via vmap")
def switch_branches(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def f(idx, x, k):
        branches = [lambda x: x + 1.0, lambda x: x * x, lambda x: -jnp.abs(x)]
        a = lax.switch(k, branches, x)
        b = jax.vmap(lambda i, v: lax.switch(i, branches, v))(idx, x)
        return a, b
    return f, (np.array([-2, 0, 1, 2, 5], np.int32), f32(rng, 5), np.array(7, np.int32))


@jax_program("gathers: x[idx] with negative indices, 2-D fancy indexing, jnp.take_along_axis")
def gather_indexing(rng):
    import jax.numpy as jnp

    def f(x, idx, idx2, ta):
        return x[idx], x[idx2[:, 0], idx2[:, 1]], jnp.take_along_axis(x, ta, axis=1)
    x = f32(rng, 5, 4)
    return f, (x, np.array([0, -1, 3, -5, 2], np.int32),
               np.array([[0, 1], [4, 3], [2, 2]], np.int32),
               rng.integers(0, 4, (5, 3)).astype(np.int32))


@jax_program("gather with out-of-bounds indices: mode=clip, mode=fill, promise_in_bounds, default")
def gather_oob_modes(rng):
    def f(x, idx):
        return (x.at[idx].get(mode="clip"), x.at[idx].get(mode="fill", fill_value=-7.0),
                x.at[idx].get(mode="promise_in_bounds"), x[idx])
    return f, (f32(rng, 6), np.array([0, 5, 6, 9, -1, -6, -7, -100], np.int32))


@jax_program("scatter: x.at[idx].add/set/min/max/mul with duplicate indices (6 outputs)")
def scatter_ops(rng):
    def f(x, idx, u):
        return (x.at[idx].add(u), x.at[idx].set(u), x.at[idx].min(u), x.at[idx].max(u),
                x.at[idx].multiply(u), x.at[idx[:2], 1:].add(u[:2, :2]))
    x = f32(rng, 5, 3)
    return f, (x, np.array([1, 3, 1, 0], np.int32), f32(rng, 4, 3))


@jax_program("scatter with out-of-bounds indices: default (drop), mode=clip, mode=drop, promise_in_bounds")
def scatter_oob_modes(rng):
    def f(x, idx, u):
        return (x.at[idx].add(u), x.at[idx].add(u, mode="clip"), x.at[idx].set(u, mode="drop"),
                x.at[idx].add(u, mode="promise_in_bounds"))
    return f, (f32(rng, 6), np.array([0, 6, -1, 10, -8, 2], np.int32), f32(rng, 6))


@jax_program("dynamic_slice / dynamic_update_slice with out-of-range and negative start indices (clamped)")
def dynamic_slice_oob(rng):
    from jax import lax

    def f(x, u, i, j):
        return (lax.dynamic_slice(x, (i, j), (2, 3)), lax.dynamic_update_slice(x, u, (i, j)),
                lax.dynamic_slice(x, (j, i), (3, 2)), lax.dynamic_update_slice(x, u, (j, i)))
    return f, (f32(rng, 5, 6), f32(rng, 2, 3), np.array(9, np.int32), np.array(-4, np.int32))


@jax_program("sorting: jnp.sort (with NaN/-0), argsort (stable), descending, lax.sort multi-operand")
def sort_ops(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, k, v):
        s = jnp.sort(x)
        a = jnp.argsort(x, stable=True)
        d = jnp.sort(x, descending=True)
        ks, vs = lax.sort((k, v), num_keys=1, is_stable=True)
        s2 = jnp.sort(v.reshape(2, 4), axis=0)
        return s, a, d, ks, vs, s2
    x = np.array([3.0, -0.0, np.nan, 0.0, -np.inf, 1.0, 1.0, np.inf, -2.0], np.float32)
    k = np.array([2, 1, 2, 0, 1, 2, 0, 1], np.int32)
    return f, (x, k, f32(rng, 8))


@jax_program("lax.top_k (k=3) on the rows of a matrix, with ties")
def top_k(rng):
    from jax import lax

    def f(x):
        v, i = lax.top_k(x, 3)
        return v, i
    x = f32(rng, 4, 7)
    x[0, :] = [1, 3, 3, 2, 3, 0, -1]
    return f, (x,)


@jax_program("threefry RNG inside jit with a raw uint32[2] key argument: uniform, normal, bits, split")
def random_threefry(rng):
    import jax

    def f(key):
        k1, k2, k3 = jax.random.split(key, 3)
        return (jax.random.uniform(k1, (3, 4)), jax.random.normal(k2, (5,)),
                jax.random.bits(k3, (4,), "uint32"), jax.random.randint(k3, (6,), -5, 5))
    return f, (np.array([0, 42], np.uint32),)


@jax_program("jax.random.key(seed) with jax_default_prng_impl=rbg (rng-bit-generator) inside jit",
             prng="rbg")
def random_rbg(rng):
    import jax

    def f(seed):
        key = jax.random.key(seed)
        k1, k2 = jax.random.split(key)
        return jax.random.uniform(k1, (3, 4)), jax.random.normal(k2, (6,)), jax.random.bits(k1, (5,))
    return f, (np.array(1234, np.int32),)


@jax_program("jax_default_prng_impl=unsafe_rbg: key data uint32[4] argument, uniform + bits + split",
             prng="unsafe_rbg")
def random_unsafe_rbg(rng):
    import jax

    def f(kd):
        key = jax.random.wrap_key_data(kd)
        k1, k2 = jax.random.split(key)
        return jax.random.uniform(k1, (2, 5)), jax.random.bits(k2, (4,), "uint8")
    return f, (np.array([1, 2, 3, 4], np.uint32),)


@jax_program("signed integer div/rem (s8/s16/s32 lax.div/lax.rem and jnp //, %): INT_MIN/-1, x/0, negatives")
def int_div_rem_signed(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(a8, b8, a16, b16, a32, b32):
        outs = []
        for a, b in ((a8, b8), (a16, b16), (a32, b32)):
            outs.extend([lax.div(a, b), lax.rem(a, b)])
        outs.extend([jnp.floor_divide(a32, b32), jnp.remainder(a32, b32)])
        return tuple(outs)

    def mk(dt):
        info = np.iinfo(dt)
        a = np.array([7, -7, 7, -7, info.min, info.min, info.max, 0, 5, -5, info.min, 1], dt)
        b = np.array([2, 2, -2, -2, -1, 1, -1, 3, 0, 0, 0, info.min], dt)
        return a, b
    return f, (*mk(np.int8), *mk(np.int16), *mk(np.int32))


@jax_program("unsigned integer div/rem (u8/u32) incl. division by zero, and wraparound add/sub/mul")
def int_unsigned_math(rng):
    from jax import lax

    def f(a8, b8, a32, b32):
        return (lax.div(a8, b8), lax.rem(a8, b8), lax.div(a32, b32), lax.rem(a32, b32),
                a8 + b8, a8 - b8, a8 * b8, a32 * b32, a32 - b32)
    a8 = np.array([255, 200, 7, 0, 128, 1], np.uint8)
    b8 = np.array([0, 3, 255, 0, 2, 255], np.uint8)
    a32 = np.array([0xFFFFFFFF, 123456789, 7, 0, 0x80000000, 1], np.uint32)
    b32 = np.array([0, 1000, 0xFFFFFFFF, 5, 2, 3], np.uint32)
    return f, (a8, b8, a32, b32)


@jax_program("s64/u64 integer math (x64): div, rem, INT64_MIN // -1, x/0, shifts, mul overflow",
             x64=True)
def int64_math(rng):
    from jax import lax

    def f(a, b, ua, ub, sh):
        return (lax.div(a, b), lax.rem(a, b), a * b, a + b, lax.div(ua, ub), lax.rem(ua, ub),
                ua * ub, lax.shift_left(a, sh), lax.shift_right_arithmetic(a, sh),
                lax.shift_right_logical(ua, sh.astype(np.uint64)))
    i64 = np.iinfo(np.int64)
    a = np.array([i64.min, i64.min, i64.max, -7, 7, 0, 3037000500], np.int64)
    b = np.array([-1, 0, 2, 2, -3, 0, 3037000500], np.int64)
    ua = np.array([2**64 - 1, 2**63, 5, 0, 12345678901234567, 1, 2**32], np.uint64)
    ub = np.array([0, 3, 2**64 - 1, 0, 1000, 1, 2**32], np.uint64)
    sh = np.array([0, 1, 63, 64, 65, -1, 200], np.int64)
    return f, (a, b, ua, ub, sh)


@jax_program("shifts s8/s16/s32/u32: left, right arithmetic/logical, by negative and >= bit width")
def int_shifts(rng):
    from jax import lax

    def f(a8, s8, a16, s16, a32, s32, u32):
        r = []
        for a, s in ((a8, s8), (a16, s16), (a32, s32)):
            r += [lax.shift_left(a, s), lax.shift_right_arithmetic(a, s),
                  lax.shift_right_logical(a, s)]
        us = s32.astype(np.uint32)
        r += [lax.shift_left(u32, us), lax.shift_right_logical(u32, us),
              lax.shift_right_arithmetic(u32, us)]
        return tuple(r)
    sh = [0, 1, 7, 8, 9, -1, 15, 16, 31, 32, 33, 100]

    def av(dt):
        return np.array([-1, 1, -128, 127, 85, -86, 3, -3, 1, -1, 64, -64], dt)
    return f, (av(np.int8), np.array(sh, np.int8), av(np.int16), np.array(sh, np.int16),
               av(np.int32), np.array(sh, np.int32),
               np.array([0xFFFFFFFF, 1, 0x80000000, 7, 2, 3, 4, 5, 6, 0xF0F0F0F0, 9, 10], np.uint32))


@jax_program("bitwise and/or/xor/not, population_count, clz on s8/u8/s16/s32/u32/u64 (x64)", x64=True)
def int_bitwise_popcnt_clz(rng):
    from jax import lax

    def f(a8, b8, u8, a16, a32, b32, u32, u64):
        r = [a8 & b8, a8 | b8, a8 ^ b8, ~a8, lax.population_count(a8), lax.clz(a8),
             ~u8, lax.population_count(u8), lax.clz(u8), lax.population_count(a16), lax.clz(a16)]
        r += [a32 & b32, a32 | b32, a32 ^ b32, ~a32, lax.population_count(a32), lax.clz(a32),
              lax.population_count(u32), lax.clz(u32), lax.population_count(u64), lax.clz(u64), ~u64]
        return tuple(r)
    return f, (np.array([0, -1, 1, -128, 127, 85], np.int8), np.array([3, 5, -2, 127, -128, 0], np.int8),
               np.array([0, 1, 255, 128, 15, 16], np.uint8),
               np.array([0, -1, 1, -32768, 255, 256], np.int16),
               np.array([0, -1, 1, -2**31, 2**31 - 1, 0x00F00000], np.int32),
               np.array([-1, 0, 3, 2**31 - 1, -2**31, 12345], np.int32),
               np.array([0, 1, 0xFFFFFFFF, 0x80000000, 0x10000, 3], np.uint32),
               np.array([0, 1, 2**64 - 1, 2**63, 2**32, 3], np.uint64))


@jax_program("integer overflow & conversions: s32 add/mul wrap, abs/neg of INT_MIN, f32->s32/u8 "
             "conversion of inf/NaN/out-of-range, s32->s8 truncation")
def int_overflow_convert(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(a, b, x):
        return (a + b, a * b, jnp.abs(a), -a, lax.convert_element_type(x, jnp.int32),
                lax.convert_element_type(x, jnp.uint8), a.astype(jnp.int8), a.astype(jnp.uint16),
                a.astype(jnp.float32), (a > 0).astype(jnp.int32))
    i32 = np.iinfo(np.int32)
    a = np.array([i32.max, i32.min, 65536, -1, 0, 300, -300, 123456789], np.int32)
    b = np.array([1, -1, 65536, i32.min, 0, 2, 3, 100], np.int32)
    x = np.array([np.inf, -np.inf, np.nan, 3e9, -3e9, 255.9, -0.9, 256.5], np.float32)
    return f, (a, b, x)


@jax_program("special f32 values (±0, ±inf, NaN, denormals, max finite) through add/mul/div, "
             "max/min (NaN-propagating), sign, round (half-away and half-even), floor/ceil, abs, neg")
def special_floats_arith(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, y):
        return (x + y, x * y, x / y, x - y, jnp.maximum(x, y), jnp.minimum(x, y), jnp.sign(x),
                lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
                lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), jnp.floor(x), jnp.ceil(x),
                jnp.abs(x), -x, jnp.fmax(x, y), lax.rem(x, y))
    x = SPECIAL_F32
    y = np.roll(SPECIAL_F32[::-1], 3).copy()
    return f, (x, y)


@jax_program("special f32 values: comparisons (eq/ne/lt/total order), is_finite, isnan/isinf, "
             "nextafter, sqrt/rsqrt/log/exp of edge values")
def special_floats_compare(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, y):
        return (x == y, x != y, x < y, x >= y, jnp.isfinite(x), jnp.isnan(x), jnp.isinf(x),
                jnp.nextafter(x, y), jnp.nextafter(x, jnp.float32(np.inf)), jnp.sqrt(x),
                lax.rsqrt(x), jnp.log(x), jnp.exp(x), jnp.signbit(x))
    x = SPECIAL_F32
    y = np.roll(SPECIAL_F32, 5).copy()
    return f, (x, y)


@jax_program("f64 math (x64): exp/log/sin/cos/tan/sqrt/pow/atan2, sums and a matmul in double",
             x64=True)
def f64_math(rng):
    import jax.numpy as jnp

    def f(x, y, m):
        return (jnp.exp(x), jnp.log(jnp.abs(x)), jnp.sin(x), jnp.cos(x), jnp.tan(x),
                jnp.sqrt(jnp.abs(x)), jnp.power(jnp.abs(x), y), jnp.arctan2(x, y), jnp.sum(x * y),
                m @ m.T, x.astype(jnp.float32), (x * 1e300) * 1e10)
    x = np.concatenate([rng.standard_normal(6) * 3, [0.0, -0.0, 5e-324, 1e308]]).astype(np.float64)
    y = np.concatenate([rng.standard_normal(6), [1.0, -1.0, 2.0, 0.5]]).astype(np.float64)
    return f, (x, y, rng.standard_normal((3, 4)))


@jax_program("f16 arithmetic: add/mul/div/exp/tanh, overflow to inf, f16 matmul, f16<->f32 converts")
def f16_arith(rng):
    import jax.numpy as jnp

    def f(x, y, m):
        return (x + y, x * y, x / y, jnp.exp(x), jnp.tanh(x), x * jnp.float16(1000),
                m @ m.T, x.astype(jnp.float32), (x.astype(jnp.float32) * 3).astype(jnp.float16),
                jnp.sum(x))
    x = np.array([0.1, -2.5, 65504, 6e-8, 1e-4, 3.0, np.inf, np.nan], np.float16)
    y = np.array([3.0, 0.5, 2.0, 0.5, 0.0, -7.0, 1.0, 1.0], np.float16)
    return f, (x, y, rng.standard_normal((3, 5)).astype(np.float16))


@jax_program("bf16 arithmetic (bf16 inputs/outputs stored as uint16 bits): add/mul/div/exp, bf16 dot, "
             "converts, rounding of f32->bf16")
def bf16_arith(rng):
    import jax.numpy as jnp
    import ml_dtypes

    def f(x, y, m, z):
        return (x + y, x * y, x / y, jnp.exp(x), m @ m.T, x.astype(jnp.float32),
                z.astype(jnp.bfloat16), jnp.sum(x), jnp.max(m, axis=1))
    bf = ml_dtypes.bfloat16
    x = np.array([0.1, -2.5, 3.3e38, 1e-39, 1.0, 3.0, np.inf, np.nan], bf)
    y = np.array([3.0, 0.5, 2.0, 0.5, 0.0, -7.0, 1.0, 1.0], bf)
    z = np.array([1.00390625, 1.01171875, 1.0078125, -1.00390625, 3.4e38, 1e-40], np.float32)
    return f, (x, y, rng.standard_normal((3, 4)).astype(bf), z)


@jax_program("complex64 math: mul, div, abs, exp, log, sqrt, conj, real/imag, angle, complex matmul")
def complex64_math(rng):
    import jax.numpy as jnp

    def f(a, b):
        return (a * b, a / b, jnp.abs(a), jnp.exp(a), jnp.log(a), jnp.sqrt(a), jnp.conj(a),
                jnp.real(a), jnp.imag(b), jnp.angle(a), a.reshape(2, 3) @ b.reshape(3, 2),
                jnp.sum(a), a == b)
    a = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    b = (rng.standard_normal(6) + 1j * rng.standard_normal(6)).astype(np.complex64)
    a[0] = -4 + 0j
    b[1] = 0j
    return f, (a, b)


@jax_program("complex128 math (x64): mul, div, abs, exp, log, sqrt, conj, pow, tanh", x64=True)
def complex128_math(rng):
    import jax.numpy as jnp

    def f(a, b):
        return (a * b, a / b, jnp.abs(a), jnp.exp(a), jnp.log(a), jnp.sqrt(a), jnp.conj(a),
                a ** b, jnp.tanh(a), jnp.prod(a))
    a = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    b = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    a[0] = -1 + 0j
    return f, (a.astype(np.complex128), b.astype(np.complex128))


@jax_program("FFTs: fft/ifft (c64), rfft/irfft (f32), 2-D fft2/ifft2, and c128 fft (x64)", x64=True)
def fft_ops(rng):
    import jax.numpy as jnp

    def f(c, r, c2, cd):
        return (jnp.fft.fft(c), jnp.fft.ifft(c), jnp.fft.rfft(r), jnp.fft.irfft(jnp.fft.rfft(r), n=8),
                jnp.fft.fft2(c2), jnp.fft.ifft2(c2), jnp.fft.fft(cd), jnp.fft.irfft(c, n=6))
    c = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)
    c2 = (rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))).astype(np.complex64)
    cd = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex128)
    return f, (c, f32(rng, 8), c2, cd)


@jax_program("cumulative ops: jnp.cumsum/cumprod, lax.cummax/cummin, reverse cumsum, cumsum of s32")
def cumulative_ops(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, i):
        return (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0), lax.cummax(x, axis=1),
                lax.cummin(x, axis=0), lax.cumsum(x, axis=1, reverse=True), jnp.cumsum(i),
                lax.cumlogsumexp(x, axis=1))
    return f, (f32(rng, 3, 7), rng.integers(-5, 5, 9).astype(np.int32))


@jax_program("associative_scan (prefix sums and a linear recurrence) and explicit lax.reduce_window "
             "with base/window dilation and padding")
def scan_reduce_window(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, a, b):
        ps = lax.associative_scan(jnp.add, x)

        def comb(l, r):
            return (l[0] * r[0], r[0] * l[1] + r[1])
        _, rec = lax.associative_scan(comb, (a, b))
        rw = lax.reduce_window(x, 0.0, lax.add, (3,), (2,), [(2, 1)], base_dilation=(2,),
                               window_dilation=(2,))
        return ps, rec, rw
    return f, (f32(rng, 10), f32(rng, 10, scale=0.5), f32(rng, 10))


@jax_program("jnp.linalg.cholesky and lax.linalg.triangular_solve (left/right, lower/upper, transpose)")
def linalg_cholesky_trisolve(rng):
    import jax.numpy as jnp
    from jax.lax import linalg

    def f(a, b):
        spd = a @ a.T + 4 * jnp.eye(4)
        l = jnp.linalg.cholesky(spd)
        x1 = linalg.triangular_solve(l, b, left_side=True, lower=True)
        x2 = linalg.triangular_solve(l, b.T, left_side=False, lower=True, transpose_a=True)
        x3 = linalg.triangular_solve(l.T, b, left_side=True, lower=False, unit_diagonal=True)
        return l, x1, x2, x3
    return f, (f32(rng, 4, 4), f32(rng, 4, 3))


@jax_program("jnp.linalg.qr (reduced and complete) and eigh (lapack custom-calls)")
def linalg_qr_eigh(rng):
    import jax.numpy as jnp

    def f(a, s):
        q, r = jnp.linalg.qr(a)
        qc, rc = jnp.linalg.qr(a, mode="complete")
        w, v = jnp.linalg.eigh(s + s.T)
        return q, r, qc, rc, w, jnp.abs(v)
    return f, (f32(rng, 5, 3), f32(rng, 4, 4))


@jax_program("jnp.linalg.svd (full and values only)")
def linalg_svd(rng):
    import jax.numpy as jnp

    def f(a):
        u, s, vt = jnp.linalg.svd(a, full_matrices=False)
        return jnp.abs(u), s, jnp.abs(vt), jnp.linalg.svd(a, compute_uv=False)
    return f, (f32(rng, 5, 3),)


@jax_program("jnp.linalg.inv, solve, slogdet, det (LU custom-call)")
def linalg_inv_solve_slogdet(rng):
    import jax.numpy as jnp

    def f(a, b):
        sign, logdet = jnp.linalg.slogdet(a)
        return jnp.linalg.inv(a), jnp.linalg.solve(a, b), sign, logdet, jnp.linalg.det(a)
    return f, (f32(rng, 4, 4) + 3 * np.eye(4, dtype=np.float32), f32(rng, 4, 2))


@jax_program("lax.reduce_precision to bf16/f16/e4m3/e5m2-like formats incl. inf/NaN/denormal inputs")
def reduce_precision_ops(rng):
    from jax import lax

    def f(x):
        return (lax.reduce_precision(x, exponent_bits=8, mantissa_bits=7),
                lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10),
                lax.reduce_precision(x, exponent_bits=4, mantissa_bits=3),
                lax.reduce_precision(x, exponent_bits=5, mantissa_bits=2),
                lax.reduce_precision(x, exponent_bits=2, mantissa_bits=0))
    return f, (np.concatenate([SPECIAL_F32, f32(rng, 8) * 100]),)


@jax_program("lax.bitcast_convert_type: f32<->s32/u32, f32->u8[4] (narrowing), u16[2]->f32, f16->s16")
def bitcast_convert_ops(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, u16, h):
        i = lax.bitcast_convert_type(x, jnp.int32)
        return (i, lax.bitcast_convert_type(x, jnp.uint32), lax.bitcast_convert_type(i + 1, jnp.float32),
                lax.bitcast_convert_type(x, jnp.uint8), lax.bitcast_convert_type(u16, jnp.float32),
                lax.bitcast_convert_type(h, jnp.int16))
    return f, (SPECIAL_F32[:8].copy(), np.array([[0, 0x3F80], [0xFFFF, 0x7FFF], [1, 0]], np.uint16),
               np.array([1.0, -0.0, np.inf, 6e-8], np.float16))


@jax_program("lax.clamp (scalar and array bounds, NaN), lax.select_n (bool and s32 selector), jnp.where")
def clamp_select_n(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, lo, hi, p, w, i):
        return (lax.clamp(jnp.float32(-0.5), x, jnp.float32(0.5)), lax.clamp(lo, x, hi),
                lax.select_n(p, x, hi), lax.select_n(w, x, lo, hi), jnp.where(x > 0, x, 0.1 * x),
                lax.clamp(-3, i, 3))
    x = np.array([-2.0, -0.5, 0.0, 0.3, 0.7, np.nan, np.inf, -np.inf], np.float32)
    return f, (x, f32(rng, 8) - 1, f32(rng, 8) + 1, rng.random(8) > 0.5,
               rng.integers(0, 3, 8).astype(np.int32), np.arange(-5, 3, dtype=np.int32))


@jax_program("lax.pad with negative (cropping), interior, and mixed edge padding; jnp.pad modes")
def pad_negative_interior(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x):
        return (lax.pad(x, jnp.float32(-1), [(1, 2, 1), (-1, 0, 2)]),
                lax.pad(x, jnp.float32(0), [(-2, -1, 0), (2, -3, 1)]),
                jnp.pad(x, ((1, 1), (2, 0)), mode="reflect"), jnp.pad(x, 1, mode="edge"),
                jnp.pad(x, ((0, 2), (1, 1)), mode="wrap"))
    return f, (f32(rng, 4, 5),)


@jax_program("iota/arange/linspace/eye, broadcasting, transpose, reshape, concatenate, reverse, "
             "strided slice, squeeze/expand_dims, tile")
def shape_ops(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, y):
        a = jnp.arange(12, dtype=jnp.int32).reshape(3, 4)
        return (x + jnp.arange(4, dtype=jnp.float32), jnp.linspace(0.0, 1.0, 5), jnp.eye(3, 4),
                x.T, x.reshape(2, 6), jnp.concatenate([x, y, x], axis=0), lax.rev(x, (0, 1)),
                x[::2, 1::2], x[None, :, None, :].squeeze(0), jnp.tile(y, (2, 1)),
                jnp.transpose(x.reshape(3, 2, 2), (2, 0, 1)), a * 2, jnp.broadcast_to(y, (3, 3, 4)))
    return f, (f32(rng, 3, 4), f32(rng, 1, 4))


@jax_program("argmax/argmin (variadic reduce) along axes with ties and NaN; jnp.max/min/prod/any/all")
def argmax_argmin(rng):
    import jax.numpy as jnp

    def f(x, i, b):
        return (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(i), jnp.argmin(i, axis=1),
                jnp.max(x, axis=0), jnp.min(i), jnp.prod(x, axis=1), jnp.any(b, axis=1), jnp.all(b))
    x = f32(rng, 4, 5)
    x[1, 2] = np.nan
    x[2, 0] = x[2, 3] = 9.0
    return f, (x, rng.integers(-3, 3, (4, 5)).astype(np.int32), rng.random((3, 4)) > 0.3)


@jax_program("logsumexp, softmax, log_softmax (numerically stable, with -inf entries)")
def logsumexp_softmax(rng):
    import jax
    from jax.scipy.special import logsumexp

    def f(x):
        return logsumexp(x, axis=-1), jax.nn.softmax(x), jax.nn.log_softmax(x, axis=0), logsumexp(x)
    x = f32(rng, 3, 6) * 10
    x[0, :3] = -np.inf
    return f, (x,)


@jax_program("einsum with batch dims, contraction over several dims, outer product, trace; "
             "dot_general with preferred_element_type and int8 x int8 -> int32")
def einsum_batched(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(a, b, c, i8, j8):
        return (jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bij,bij->b", a, a),
                jnp.einsum("i,j->ij", c, c), jnp.einsum("ii->", a[0, :, :3]),
                jnp.einsum("bij,kj->bki", a, b[0].T), jnp.einsum("abc,cab->", a, a.transpose(2, 0, 1)),
                lax.dot_general(i8, j8, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32))
    return f, (f32(rng, 2, 3, 4), f32(rng, 2, 4, 5), f32(rng, 3),
               rng.integers(-128, 127, (3, 4)).astype(np.int8),
               rng.integers(-128, 127, (4, 2)).astype(np.int8))


@jax_program("special functions: erf, erfc, erf_inv, lgamma, digamma, tanh, logistic, expm1, log1p, "
             "cbrt, atan2, pow, sinh/cosh/asinh, igamma")
def special_functions(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.scipy import special

    def f(x, y, p):
        ax = jnp.abs(x) + 0.1
        return (lax.erf(x), special.erfc(x), lax.erf_inv(jnp.tanh(x) * 0.9), lax.lgamma(ax),
                lax.digamma(ax), jnp.tanh(x), jax.nn.sigmoid(x), jnp.expm1(x), jnp.log1p(ax),
                jnp.cbrt(x), jnp.arctan2(x, y), jnp.power(ax, y), lax.pow(x, p), jnp.sinh(x),
                jnp.cosh(x), jnp.arcsinh(x), lax.igamma(ax, ax + 0.5))
    x = np.concatenate([f32(rng, 8) * 2, np.array([0.0, -0.0, 1e-7, 20.0], np.float32)])
    y = np.concatenate([f32(rng, 8), np.array([0.0, -1.0, 1.0, -0.0], np.float32)])
    return f, (x, y, np.array([0, 1, 2, 3, -1, -2, 5, 7, 0, 2, 31, -3], np.int32))


@jax_program("jax.vmap of a per-example function (matvec + norm + where) and lax.map (loop)")
def vmap_map(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def per(m, v):
        y = m @ v
        return jnp.where(y > 0, y / jnp.linalg.norm(y), y)

    def f(ms, vs):
        return jax.vmap(per)(ms, vs), jax.vmap(per, in_axes=(None, 0))(ms[0], vs), \
            lax.map(lambda v: jnp.sum(jnp.sin(v)), vs)
    return f, (f32(rng, 4, 3, 5), f32(rng, 4, 5))


@jax_program("jnp.where three-operand and single-operand-mask forms, nonzero with size, select on pred")
def where_select(rng):
    import jax.numpy as jnp

    def f(x, m):
        return (jnp.where(m, x, -x), jnp.where(x > 0.5, 1, 0), jnp.nonzero(m, size=6, fill_value=-1)[0],
                jnp.where(jnp.isnan(x), 0.0, x), jnp.count_nonzero(m))
    x = f32(rng, 8)
    x[3] = np.nan
    return f, (x, rng.random(8) > 0.5)


@jax_program("many outputs (8) of different dtypes and ranks from one computation")
def many_outputs(rng):
    import jax.numpy as jnp

    def f(x, i):
        return (x, x + 1, jnp.sum(x), x > 0, i * 2, i.astype(jnp.float32), x.T, jnp.float32(3.5))
    return f, (f32(rng, 2, 3), np.arange(4, dtype=np.int32))


@jax_program("nested tuple-of-tuple pytree outputs ((a, (b, c)), (d,)); XLA flattens them in the ROOT tuple")
def nested_tuple_outputs(rng):
    import jax.numpy as jnp

    def f(x, y):
        return ((x * y, (x - y, jnp.dot(x, y))), (jnp.stack([x, y]),))
    return f, (f32(rng, 3), f32(rng, 3))


@jax_program("zero-sized arrays: f32[0,3] input, reductions over empty dims, concatenate with empty")
def zero_sized_array(rng):
    import jax.numpy as jnp

    def f(e, x):
        return (jnp.sum(e, axis=0), jnp.max(e, axis=0, initial=-1.0), e * 2, jnp.concatenate([e, x]),
                jnp.zeros((0,), jnp.int32), jnp.prod(e))
    return f, (np.zeros((0, 3), np.float32), f32(rng, 2, 3))


@jax_program("scalar-only inputs (f32[], s32[], f32[]) and scalar outputs")
def scalar_only_inputs(rng):
    import jax.numpy as jnp

    def f(a, n, b):
        return a * b + n.astype(jnp.float32), jnp.maximum(a, b), n * n - 1, jnp.sqrt(jnp.abs(a))
    return f, (np.float32(2.5), np.int32(7), np.float32(-1.25))


@jax_program("dtype conversions: f32->f16/bf16/f8e4m3fn/f8e5m2 (incl. inf/NaN/overflow), s32->s4/u8/f32/pred, "
             "f32->pred (fp8/int4 outputs stored as raw bits)")
def convert_types(rng):
    import jax.numpy as jnp

    def f(x, i):
        return (x.astype(jnp.float16), x.astype(jnp.bfloat16), x.astype(jnp.float8_e4m3fn),
                x.astype(jnp.float8_e5m2), i.astype(jnp.int4), i.astype(jnp.uint8),
                i.astype(jnp.float32), (x != 0).astype(jnp.float32), i.astype(jnp.bool_),
                x.astype(jnp.float8_e4m3fn).astype(jnp.float32))
    x = np.concatenate([SPECIAL_F32[:8], np.array([448.0, 500.0, 57344.0, 1e-3, 0.3, -3.7, 65520.0, 1e5],
                                                  np.float32)])
    return f, (x, np.array([-9, -8, -1, 0, 1, 7, 8, 300, -300, 15, 16, 255, 256, -129, 3, 2], np.int32))


@jax_program("int4 inputs and arithmetic (s4 stored as one byte per element, raw bits)")
def int4_inputs(rng):
    import jax.numpy as jnp
    import ml_dtypes

    def f(a, b):
        return a + b, a * b, a.astype(jnp.int32), jnp.maximum(a, b)
    return f, (np.array([-8, -1, 0, 1, 7, 3], ml_dtypes.int4), np.array([1, 1, 7, -8, 7, -4], ml_dtypes.int4))


@jax_program("reductions: sum/max/min/prod over several axes, keepdims, s32 and pred reduce, mean/var")
def reduce_ops(rng):
    import jax.numpy as jnp

    def f(x, i):
        return (jnp.sum(x, axis=(0, 2)), jnp.max(x, axis=1, keepdims=True), jnp.min(x), jnp.prod(x, axis=2),
                jnp.sum(i, axis=0), jnp.max(i), jnp.any(i > 3), jnp.mean(x, axis=-1), jnp.var(x, axis=0),
                jnp.sum(x.astype(jnp.bfloat16), axis=2))
    return f, (f32(rng, 2, 3, 4), rng.integers(-9, 9, (5, 3)).astype(np.int32))


@jax_program("max-pool and avg-pool with SAME padding and strides, and their gradients "
             "(select-and-scatter, pad/reduce_window)")
def pooling_grad(rng):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def maxpool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")

    def avgpool(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME") / 4

    def f(x):
        return (maxpool(x), avgpool(x), jax.grad(lambda x: jnp.sum(maxpool(x) ** 2))(x),
                jax.grad(lambda x: jnp.sum(jnp.sin(avgpool(x))))(x))
    return f, (f32(rng, 1, 5, 6, 2),)


@jax_program("jax.checkpoint (remat) inside grad: produces opt-barrier; plus custom_jvp (softplus)")
def remat_custom_jvp(rng):
    import jax
    import jax.numpy as jnp

    @jax.custom_jvp
    def softplus(x):
        return jnp.logaddexp(x, 0.0)

    @softplus.defjvp
    def softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * jax.nn.sigmoid(x)

    @jax.checkpoint
    def block(w, x):
        return softplus(jnp.sin(x @ w) @ w.T)

    def f(w, x):
        return jax.value_and_grad(lambda w: jnp.sum(block(w, block(w, x))))(w)
    return f, (f32(rng, 4, 4, scale=0.5), f32(rng, 3, 4))


@jax_program("while_loop with a nested tuple carry (pytree), early exit on tolerance (Newton sqrt)")
def while_loop_newton(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(a):
        def cond(c):
            i, (x, err) = c
            return (i < 50) & (err > 1e-6)

        def body(c):
            i, (x, err) = c
            nx = 0.5 * (x + a / x)
            return i + 1, (nx, jnp.max(jnp.abs(nx - x)))
        return lax.while_loop(cond, body, (jnp.int32(0), (jnp.ones_like(a), jnp.float32(1.0))))
    return f, (np.array([2.0, 9.0, 0.25, 1e4, 3.0], np.float32),)


@jax_program("nested control flow: fori_loop containing cond and an inner while_loop")
def nested_control_flow(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(x, n):
        def body(i, acc):
            acc = lax.cond(i % 2 == 0, lambda a: a * 1.5, lambda a: a - 1.0, acc)
            j = lax.while_loop(lambda j: j * j < i * 7, lambda j: j + 1, jnp.int32(0))
            return acc + j.astype(jnp.float32)
        return lax.fori_loop(0, n, body, x)
    return f, (f32(rng, 4), np.array(5, np.int32))


@jax_program("mixed-precision matmuls: bf16 x bf16 -> f32 (preferred_element_type), f16 batched "
             "dot, precision=HIGHEST f32 matmul")
def mixed_precision_dot(rng):
    import jax.numpy as jnp
    from jax import lax

    def f(a, b, c, d, x, y):
        return (lax.dot(a, b, preferred_element_type=jnp.float32), jnp.matmul(c, d),
                jnp.dot(x, y, precision=lax.Precision.HIGHEST), lax.dot(x, y.astype(jnp.float16).astype(jnp.float32)))
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    return f, (f32(rng, 3, 4).astype(bf), f32(rng, 4, 2).astype(bf),
               f32(rng, 2, 3, 4).astype(np.float16), f32(rng, 2, 4, 3).astype(np.float16),
               f32(rng, 5, 6), f32(rng, 6, 3))


@jax_program("trig & exp family on f32: sin, cos, tan, asin, acos, atan, exp, exp2, log, log2, "
             "log10, sqrt, square, reciprocal")
def trig_exp_family(rng):
    import jax.numpy as jnp

    def f(x):
        u = jnp.tanh(x)
        return (jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.arcsin(u), jnp.arccos(u), jnp.arctan(x),
                jnp.exp(x), jnp.exp2(x), jnp.log(jnp.abs(x)), jnp.log2(jnp.abs(x)),
                jnp.log10(jnp.abs(x)), jnp.sqrt(jnp.abs(x)), jnp.square(x), jnp.reciprocal(x))
    return f, (np.concatenate([f32(rng, 12) * 3, np.array([0.0, 100.0, -100.0, 1e-20], np.float32)]),)


@jax_program("sparse-style segment_sum / segment_max (scatter-add, scatter-max) and bincount")
def segment_ops(rng):
    import jax
    import jax.numpy as jnp

    def f(data, seg, ids):
        return (jax.ops.segment_sum(data, seg, num_segments=4), jax.ops.segment_max(data, seg, num_segments=4),
                jnp.bincount(ids, length=6), jax.ops.segment_min(data, seg, num_segments=5))
    return f, (f32(rng, 8, 2), np.array([0, 0, 1, 3, 3, 3, 1, 0], np.int32),
               np.array([0, 1, 1, 5, 3, 3, 3, 2, 9], np.int32))


@jax_program("jnp.searchsorted (left/right), digitize, interp, clip, round(decimals)")
def searchsorted_interp(rng):
    import jax.numpy as jnp

    def f(xp, fp, x):
        return (jnp.searchsorted(xp, x), jnp.searchsorted(xp, x, side="right"), jnp.interp(x, xp, fp),
                jnp.clip(x, 0.0, 2.0), jnp.round(x, 2), jnp.digitize(x, xp))
    return f, (np.array([0.0, 0.5, 1.0, 1.5, 3.0], np.float32), f32(rng, 5),
               np.array([-1.0, 0.0, 0.25, 0.5, 0.75, 1.2, 2.999, 3.0, 4.0, 1.2345], np.float32))


@jax_program("unused argument kept by jit(keep_unused=True); constant outputs and an iota-only output")
def unused_arg(rng):
    import jax.numpy as jnp

    def f(x, unused, y):
        return x * y, jnp.arange(3, dtype=jnp.int32)
    return f, (f32(rng, 3), f32(rng, 2, 2), f32(rng, 3))


@jax_program("an array constant with > 10 elements inside the program, dumped WITHOUT "
             "--xla_dump_large_constants so the text has `{...}` elided literals (text only)",
             large_constants=False)
def elided_large_constants(rng):
    import jax.numpy as jnp

    def f(x):
        table = jnp.asarray(np.arange(24, dtype=np.float32).reshape(4, 6) * 0.5)
        return x @ table + table[0]
    return f, (f32(rng, 2, 4),)


@jax_program("an array constant with > 10 elements inside the program (printed in full)")
def large_constant_table(rng):
    import jax.numpy as jnp

    def f(x, i):
        table = jnp.asarray(np.linspace(-1, 1, 40, dtype=np.float32).reshape(8, 5))
        lut = jnp.asarray(np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8], np.int32))
        return x @ table.T, lut[i]
    return f, (f32(rng, 2, 5), np.array([0, 11, 5, 7], np.int32))


# ============================================================================
# TensorFlow programs (tf.function(jit_compile=True))
# ============================================================================


@tf_program("TF: dense + bias + softmax and an argmax (tf.function jit_compile=True)")
def tf_dense_softmax(rng):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def tf_dense_softmax(x, w, b):
        logits = tf.matmul(x, w) + b
        return tf.nn.softmax(logits), tf.argmax(logits, axis=1, output_type=tf.int32)
    return tf_dense_softmax, (f32(rng, 4, 6), f32(rng, 6, 3), f32(rng, 3)), []


@tf_program("TF: conv2d (SAME, stride 2) + relu + max_pool + reduce_mean")
def tf_conv_pool(rng):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def tf_conv_pool(x, k):
        h = tf.nn.relu(tf.nn.conv2d(x, k, strides=2, padding="SAME"))
        p = tf.nn.max_pool2d(h, ksize=2, strides=1, padding="VALID")
        return p, tf.reduce_mean(p, axis=[1, 2])
    return tf_conv_pool, (f32(rng, 2, 8, 8, 3), f32(rng, 3, 3, 3, 4)), []


@tf_program("TF: tf.while_loop computing a cumulative product / counter")
def tf_while_loop(rng):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def tf_while_loop(x, n):
        i = tf.constant(0)
        acc = tf.ones_like(x)

        def body(i, acc):
            return i + 1, acc * x + tf.cast(i, tf.float32)
        _, acc = tf.while_loop(lambda i, acc: i < n, body, (i, acc))
        return acc
    return tf_while_loop, (f32(rng, 5, scale=0.5), np.array(4, np.int32)), []


@tf_program("TF: gather, tensor_scatter_nd_add, cumsum, top_k, sort")
def tf_gather_scatter(rng):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def tf_gather_scatter(x, idx, upd):
        g = tf.gather(x, idx, axis=0)
        s = tf.tensor_scatter_nd_add(x, idx[:, None], upd)
        v, i = tf.math.top_k(x[:, 0], k=2)
        return g, s, tf.cumsum(x, axis=1), v, i, tf.sort(x[:, 1])
    return tf_gather_scatter, (f32(rng, 5, 3), np.array([4, 0, 2], np.int32), f32(rng, 3, 3)), []


@tf_program("TF: resource variable update (assign_add on a tf.Variable captured by the function); "
            "the variable is an extra entry parameter and its new value an extra output")
def tf_variable_update(rng):
    import tensorflow as tf
    v = tf.Variable(f32(rng, 3, 2), name="v")

    @tf.function(jit_compile=True)
    def tf_variable_update(x):
        v.assign_add(x * 0.5)
        return tf.reduce_sum(v * v)
    return tf_variable_update, (f32(rng, 3, 2),), [v]


@tf_program("TF: elementwise math as TF's tf2xla emits it (logistic opcode for sigmoid, erf, lgamma, "
            "digamma, expm1, log1p, atan2, pow, round, is_finite, int floordiv/floormod, bitwise)")
def tf_elementwise_math(rng):
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def tf_elementwise_math(x, y, a, b):
        return (tf.sigmoid(x), tf.math.erf(x), tf.math.lgamma(tf.abs(x) + 0.5),
                tf.math.digamma(tf.abs(x) + 0.5), tf.math.expm1(x), tf.math.log1p(tf.abs(x)),
                tf.math.atan2(x, y), tf.pow(tf.abs(x), y), tf.round(x * 3.0), tf.math.is_finite(x / y),
                tf.math.floordiv(a, b), tf.math.floormod(a, b), tf.bitwise.bitwise_xor(a, b),
                tf.bitwise.right_shift(a, tf.abs(b)))
    x = np.concatenate([f32(rng, 6) * 2, np.array([0.5, -0.5, 0.0, 2.5], np.float32)])
    y = np.concatenate([f32(rng, 6), np.array([0.0, 1.0, 0.0, -1.0], np.float32)])
    a = np.array([7, -7, 7, -7, 0, 100, -100, 5, 2**31 - 1, -2**31], np.int32)
    b = np.array([2, 2, -2, -2, 3, 7, 7, 1, 3, 3], np.int32)
    return tf_elementwise_math, (x, y, a, b), []


@tf_program("TF auto-clustering (TF_XLA_FLAGS=--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit) of a plain "
            "tf.function: the dumped cluster_N module", autocluster=True)
def tf_autocluster(rng):
    import tensorflow as tf

    @tf.function
    def tf_autocluster(x, y):
        a = tf.tanh(tf.matmul(x, y)) * 2.0 + 1.0
        return tf.reduce_sum(tf.nn.relu(a - 1.5), axis=1)
    return tf_autocluster, (f32(rng, 4, 5), f32(rng, 5, 3)), []


# ============================================================================
# worker side
# ============================================================================


def _canonical_paths(jax):
    # Python makes the main script's path absolute; strip the checkout location so the
    # dumps' FileNames read "tools/gen_dumps.py" wherever the repo lives.
    jax.config.update("jax_hlo_source_file_canonicalization_regex",
                      "^" + re.escape(str(REPO) + os.sep))


def _worker(name: str, result_path: str):
    spec = PROGRAMS[name]
    rng = np.random.default_rng(seed_of(name))
    if spec["kind"] == "jax":
        import jax
        _canonical_paths(jax)
        jax.config.update("jax_enable_x64", bool(spec["x64"]))
        if spec["prng"]:
            jax.config.update("jax_default_prng_impl", spec["prng"])
        fn, args = spec["build"](rng)
        fn.__name__ = name
        fn.__qualname__ = name
        leaves_in = jax.tree.leaves(args)
        dev_args = jax.tree.map(jax.device_put, args)
        out = jax.jit(fn, keep_unused=True)(*dev_args)
        out = jax.block_until_ready(out)
        ins = [np.asarray(a) for a in jax.tree.leaves(dev_args)]
        assert len(ins) == len(leaves_in)
        outs = [np.asarray(a) for a in jax.tree.leaves(out)]
    else:
        import tensorflow as tf
        fn, args, variables = spec["build"](rng)
        init_vals = [v.numpy().copy() for v in variables]
        res = fn(*args)
        outs = [np.asarray(t) for t in tf.nest.flatten(res)]
        outs += [v.numpy() for v in variables]
        ins = [np.asarray(a) for a in args] + init_vals
    named = {f"in{i}": a for i, a in enumerate(ins)}
    named.update({f"out{i}": a for i, a in enumerate(outs)})
    save_npz(result_path, named)


# ============================================================================
# parent side
# ============================================================================


def _module_regex(spec):
    n = re.escape(spec["name"])
    if spec["kind"] == "jax":
        return re.compile(rf"^module_(\d+)\.(jit_{n})\.before_optimizations\.txt$")
    if spec.get("autocluster"):
        return re.compile(r"^module_(\d+)\.(cluster_\d+[^/]*)\.before_optimizations\.txt$")
    return re.compile(rf"^module_(\d+)\.(a_inference_{n}_\d+__[^/]*)\.before_optimizations\.txt$")


def _env_for(spec, dump_dir):
    env = dict(os.environ)
    flags = f"--xla_dump_to={dump_dir}"
    if spec.get("large_constants", True):
        flags += " " + DUMP_FLAGS
    env["XLA_FLAGS"] = flags
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONHASHSEED"] = "0"
    env.pop("TF_XLA_FLAGS", None)
    if spec.get("autocluster"):
        env["TF_XLA_FLAGS"] = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
    return env


def _validate(text: str, npz_path: Path | None) -> str:
    """Parse with XLA's parser; check entry signature against npz. Return '' or a problem."""
    import jaxlib._hlo as h
    m = h.hlo_module_from_text(text)
    if npz_path is None:
        return ""
    xc = h.XlaComputation(m.as_serialized_hlo_module_proto())
    ps = xc.program_shape()
    params = ps.parameter_shapes()
    res = ps.result_shape()
    results = res.tuple_shapes() if res.is_tuple() else [res]
    d = load_npz(npz_path)
    ins = [d[f"in{i}"] for i in range(sum(k.startswith("in") for k in d))]
    outs = [d[f"out{i}"] for i in range(sum(k.startswith("out") for k in d))]
    if len(params) != len(ins):
        return f"entry has {len(params)} parameters, npz has {len(ins)} inputs"
    if len(results) != len(outs):
        return f"entry ROOT has {len(results)} results, npz has {len(outs)} outputs"
    for kind, shapes, arrs in (("in", params, ins), ("out", results, outs)):
        for i, (s, a) in enumerate(zip(shapes, arrs)):
            if s.is_tuple():
                return f"{kind}{i}: tuple shape {s}"
            if tuple(s.dimensions()) != a.shape or s.numpy_dtype() != a.dtype:
                return f"{kind}{i}: entry shape {s} vs npz {a.dtype}{list(a.shape)}"
    return ""


def generate(names, out_dir: Path, full: bool):
    out_dir.mkdir(parents=True, exist_ok=True)
    if full:
        for p in out_dir.iterdir():
            if p.name != "README.md" and p.is_file():
                p.unlink()
    problems = {}
    for name in names:
        spec = PROGRAMS[name]
        for suffix in (".before_optimizations.hlo", ".after_optimizations.hlo", ".npz"):
            (out_dir / (name + suffix)).unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"hlodump_{name}_") as tmp:
            dump_dir = Path(tmp) / "dump"
            res_path = Path(tmp) / "result.npz"
            cmd = [sys.executable, SCRIPT_REL, "--worker", name, "--result", str(res_path)]
            p = subprocess.run(cmd, cwd=REPO, env=_env_for(spec, dump_dir),
                               capture_output=True, text=True)
            if p.returncode != 0:
                problems[name] = "worker failed:\n" + p.stderr[-3000:]
                print(f"[FAIL] {name}: worker failed", file=sys.stderr)
                print(p.stderr[-3000:], file=sys.stderr)
                continue
            rx = _module_regex(spec)
            found = sorted((m for m in (rx.match(f.name) for f in dump_dir.iterdir()) if m),
                           key=lambda m: int(m.group(1)))
            if spec.get("autocluster"):
                found = found[-1:]  # the (largest-numbered) cluster of the function
            if len(found) != 1:
                problems[name] = f"expected 1 module, found {[m.group(0) for m in found]}"
                print(f"[FAIL] {name}: {problems[name]}", file=sys.stderr)
                continue
            stem = f"module_{found[0].group(1)}.{found[0].group(2)}"
            before = (dump_dir / f"{stem}.before_optimizations.txt").read_bytes()
            after = (dump_dir / f"{stem}.cpu_after_optimizations.txt").read_bytes()
            text_only = _is_text_only(spec)
            (out_dir / f"{name}.before_optimizations.hlo").write_bytes(before)
            (out_dir / f"{name}.after_optimizations.hlo").write_bytes(after)
            npz = None
            if not text_only:
                npz = out_dir / f"{name}.npz"
                shutil.copyfile(res_path, npz)
            try:
                msg = _validate(before.decode(), npz)
                _validate(after.decode(), None)
            except Exception as e:  # noqa: BLE001
                msg = f"XLA parser rejected the dump: {e}"
            if msg:
                problems[name] = msg
                print(f"[FAIL] {name}: {msg}", file=sys.stderr)
                continue
            sizes = [len(before), len(after), npz.stat().st_size if npz else 0]
            print(f"[ok] {name:32s} before={sizes[0]:7d}B after={sizes[1]:7d}B npz={sizes[2]:6d}B"
                  f"{'  (text only)' if text_only else ''}  <- {stem}")
    return problems


README_HEAD = """\
# Real XLA dumps with XLA-computed values

Generated by `tools/gen_dumps.py` (dev-only; never imported by hloc or its tests).
**Do not edit by hand**: this README is rewritten by a full run.

## How they were made

```
pip install jax=={jax} jaxlib=={jaxlib} tensorflow-cpu=={tf}   # the pyproject "dev" extra
python tools/gen_dumps.py            # rewrites testdata/dumps/ (deterministic, idempotent)
python tools/check_dumps.py          # replays every before_optimizations dump through XLA
```

Versions: jax {jax}, jaxlib {jaxlib} (XLA:CPU), tensorflow-cpu {tf}, numpy {numpy}, ml_dtypes {mld}.

- Each program runs in its own subprocess (`python tools/gen_dumps.py --worker NAME`) with
  `XLA_FLAGS="--xla_dump_to=<tmp> --xla_dump_large_constants=true"` (constants are printed in
  full, which makes the before_optimizations text replayable). The JAX dumps' `FileNames`
  say `"tools/gen_dumps.py"` (checkout path stripped with
  `jax_hlo_source_file_canonicalization_regex`); the TF dumps' `source_file=` metadata is
  TF's own, an absolute path into the TF installation. JAX programs use
  `jax.jit(f, keep_unused=True)` and concrete numpy inputs; `jax_enable_x64` and
  `jax_default_prng_impl` are set per program (columns below). Seeds are fixed per program.
- From the dump folder only the program's own module is kept (JAX: `module_NNNN.jit_<program>.*`;
  TF: `module_NNNN.a_inference_<program>_<N>__XlaMustCompile_...*`; TF auto-clustering:
  `module_NNNN.cluster_<N>__XlaCompiledKernel_...*`), byte for byte:
  - `<program>.before_optimizations.hlo` = `module_NNNN.<name>.before_optimizations.txt`
  - `<program>.after_optimizations.hlo` = `module_NNNN.<name>.cpu_after_optimizations.txt`
- `<program>.npz`: `in0, in1, ...` (ENTRY `parameter(i)` <-> `in_i`), `out0, out1, ...`
  (the outputs as XLA computed them when the program ran; several outputs = the ENTRY ROOT
  tuple, flat, in order; one output = the non-tuple ROOT), and `dtypes` (0-d string: JSON
  key -> numpy dtype name). Non-native dtypes (bfloat16, float8_*, int4, ...) are stored as
  raw bits in the unsigned int of the same itemsize, exactly as in
  shared/corpus/stablehlo/README.md (same `load()` recipe).
- Every `.hlo` parses with `jaxlib._hlo.hlo_module_from_text`; the generator also checks that
  the ENTRY parameter/result shapes equal the npz arrays.

## Verification (`tools/check_dumps.py`)

For each program: `hlo_module_from_text(before_optimizations) -> hlo_to_stablehlo ->
compile_and_load -> execute_sharded(in*)`, compared with `out*` (ints exact; floats
`EXACT` = bit-identical, `CLOSE` = within rtol 1e-5 / atol 1e-6). Notes:
- The `lapack_*_ffi` custom-calls (linalg programs) need
  `jax._src.lib.lapack._lapack.initialize()` in the replaying process (JAX does it lazily
  when it lowers a linalg op); without it XLA segfaults at run time.
- `--after` also replays the `after_optimizations` dumps; that is informational only: many
  scheduled/laid-out modules cannot go back through hlo_to_stablehlo (layout, bitcast and
  fusion backend_config errors), so don't treat those failures as data problems.

## Notes

- JAX flattens pytree outputs, so `nested_tuple_outputs` has a flat ROOT tuple; nested tuple
  *shapes* do appear inside the dumps (while-loop carries, TF dumps, custom-call results).
- TF: `tf_variable_update` captures a `tf.Variable`: it is the extra ENTRY parameter after the
  function arguments (its initial value is the last `in`), and its updated value is the extra
  last output. The TF dumps carry TF-style metadata (`op_type`, `source_file`...).
- `elided_large_constants` is dumped **without** `--xla_dump_large_constants`, so its
  constants print as `{{...}}` (as in default real-world dumps): text only, no npz.
- `bert_train_step.after_optimizations.hlo` is ~430 KB, over the 300 KB target; a 2-layer
  training step cannot be made smaller without gutting it (its layers already run in a scan).
- The big parse benchmark input is separate: `python tools/gen_dumps.py --transformer24
  benchmarks/data` writes `benchmarks/data/transformer24.{{before,after}}_optimizations.hlo.gz`
  (gzip mtime 0, deterministic).

## Programs ({n} = {n_jax} JAX + {n_tf} TF; text only: {text_only})

| program | source | flags | npz | description |
|---|---|---|---|---|
"""


def write_readme(out_dir: Path):
    from importlib.metadata import version
    text_only = [n for n, s in PROGRAMS.items() if _is_text_only(s)]
    v = dict(jax=version("jax"), jaxlib=version("jaxlib"), tf=version("tensorflow-cpu"),
             numpy=version("numpy"), mld=version("ml_dtypes"))
    n_jax = sum(s["kind"] == "jax" for s in PROGRAMS.values())
    head = README_HEAD.format(**v, n=len(PROGRAMS), n_jax=n_jax, n_tf=len(PROGRAMS) - n_jax,
                              text_only=", ".join(text_only) or "none")
    rows = []
    for n, s in PROGRAMS.items():
        flags = []
        if s.get("x64"):
            flags.append("x64")
        if s.get("prng"):
            flags.append(f"prng={s['prng']}")
        if s.get("autocluster"):
            flags.append("auto_jit=2")
        if not s.get("large_constants", True):
            flags.append("constants elided")
        src = "JAX" if s["kind"] == "jax" else "TF"
        rows.append(f"| `{n}` | {src} | {' '.join(flags)} | {'text only' if _is_text_only(s) else 'yes'} "
                    f"| {s['desc'].replace('|', '/')} |")
    (out_dir / "README.md").write_text(head + "\n".join(rows) + "\n")


def _is_text_only(spec) -> bool:
    return bool(spec.get("text_only")) or not spec.get("large_constants", True)


# ----------------------------------------------------------------------------
# transformer24: big parse-benchmark input
# ----------------------------------------------------------------------------

T24 = dict(layers=24, d_model=512, heads=8, seq=128, batch=4, mlp=2048, vocab=1024,
           pre_ln=False, dropout=0.1, attn_dropout=True, clip_norm=1.0, weight_decay=0.01)


# The scaling family (issue 13): one and the same training step at several layer counts, small
# dims and no dropout so that the before-optimizations text grows linearly in the layer count.
SCALE = dict(d_model=64, heads=4, seq=16, batch=2, mlp=256, vocab=128, optimizer="sgd",
             pre_ln=False, dropout=0.0, attn_dropout=False, clip_norm=0.0, weight_decay=0.01)
SCALE_LAYERS = (8, 24, 48, 96)


def scale_cfg(width: int | None = None, seq: int | None = None, batch: int | None = None) -> dict:
    """SCALE with realistic tensor sizes where asked: ``width`` sets d_model (mlp = 4 x width,
    heads = width // 64, at least 1, vocab = 2 x width).  With the default tiny dims every
    activation has 2,048 elements, under XLA:CPU's 4,096-element YNNPACK threshold, so XLA
    itself re-fuses the residual-gradient chain into every reduce fusion; realistic sizes keep
    the dots as library fusions, as in transformer24."""
    cfg = dict(SCALE)
    if width:
        cfg.update(d_model=width, mlp=4 * width, heads=max(1, width // 64), vocab=2 * width)
    if seq:
        cfg["seq"] = seq
    if batch:
        cfg["batch"] = batch
    return cfg


def scale_name(layers: int, width: int | None = None, seq: int | None = None,
               batch: int | None = None) -> str:
    """transformer_L<layers> for the tiny family; transformer_w<W>s<S>b<B>_L<layers> otherwise."""
    if not (width or seq or batch):
        return f"transformer_L{layers}"
    c = scale_cfg(width, seq, batch)
    return f"transformer_w{c['d_model']}s{c['seq']}b{c['batch']}_L{layers}"


def _transformer24_worker(result_path: str, name: str = "transformer24", cfg: dict | None = None):
    """24-layer BERT-style (post-LN) transformer LM training step: token+position embeddings
    with dropout; per layer MHA (q/k/v/o with biases, causal+padding mask, softmax, attention
    dropout threefry RNG) -> residual dropout -> LN -> MLP (gelu) -> dropout -> LN; final LN,
    tied logits + bias, masked CE; grads; global-norm clipping; AdamW.  Layers are unrolled (no
    scan), as in most real dumps.  Only lowered and compiled, never run.  The cfg knobs were
    tuned so the cpu_after_optimizations dump is ~11 MB / ~97k lines (pre_ln=True gives ~23 MB:
    XLA fuses long pre-LN residual chains into huge fusions)."""
    import jax
    import jax.numpy as jnp
    _canonical_paths(jax)
    cfg = T24 if cfg is None else cfg
    L, D, H, F, V = cfg["layers"], cfg["d_model"], cfg["heads"], cfg["mlp"], cfg["vocab"]
    B, S = cfg["batch"], cfg["seq"]
    rate = cfg["dropout"]

    def layernorm(x, g, b):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean(jnp.square(x - m), -1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5) * g + b

    def dropout(key, x):
        if not rate:
            return x
        keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
        return jnp.where(keep, x / (1.0 - rate), 0.0)

    def attention(key, x, p, mask):
        hd = D // H
        q = (x @ p["wq"] + p["bq"]).reshape(B, S, H, hd)
        k = (x @ p["wk"] + p["bk"]).reshape(B, S, H, hd)
        v = (x @ p["wv"] + p["bv"]).reshape(B, S, H, hd)
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * (1.0 / np.sqrt(hd))
        s = jnp.where(mask, s, -1e9)
        a = jax.nn.softmax(s, axis=-1)
        if cfg["attn_dropout"]:
            a = dropout(key, a)
        return jnp.einsum("bhqk,bkhd->bqhd", a, v).reshape(B, S, D) @ p["wo"] + p["bo"]

    def loss_fn(p, key, tok, pad, tgt):
        causal = jnp.tril(jnp.ones((S, S), bool))
        mask = causal[None, None] & (pad[:, None, None, :] > 0)
        keys = jax.random.split(key, 3 * L + 1)
        x = dropout(keys[3 * L], p["emb"][tok] + p["pos"][None])
        for i, lp in enumerate(p["layers"]):
            if cfg["pre_ln"]:
                h = attention(keys[3 * i], layernorm(x, lp["ln1g"], lp["ln1b"]), lp, mask)
                x = x + dropout(keys[3 * i + 1], h)
                h = jax.nn.gelu(layernorm(x, lp["ln2g"], lp["ln2b"]) @ lp["w1"] + lp["b1"])
                x = x + dropout(keys[3 * i + 2], h @ lp["w2"] + lp["b2"])
            else:  # post-LN (BERT)
                h = attention(keys[3 * i], x, lp, mask)
                x = layernorm(x + dropout(keys[3 * i + 1], h), lp["ln1g"], lp["ln1b"])
                h = jax.nn.gelu(x @ lp["w1"] + lp["b1"])
                x = layernorm(x + dropout(keys[3 * i + 2], h @ lp["w2"] + lp["b2"]), lp["ln2g"], lp["ln2b"])
        x = layernorm(x, p["lnfg"], p["lnfb"])
        logp = jax.nn.log_softmax(x @ p["emb"].T + p["out_b"])
        nll = -jnp.take_along_axis(logp, tgt[..., None], -1)[..., 0]
        return jnp.sum(nll * pad) / jnp.maximum(jnp.sum(pad), 1.0)

    def transformer24_train_step(p, m, v, step, key, tok, pad, tgt):
        loss, g = jax.value_and_grad(loss_fn)(p, key, tok, pad, tgt)
        gnorm = jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(g)))
        if cfg["clip_norm"]:
            g = jax.tree.map(lambda x: x * jnp.minimum(1.0, cfg["clip_norm"] / (gnorm + 1e-6)), g)
        if cfg.get("optimizer") == "sgd":
            return loss, gnorm, jax.tree.map(lambda p, g: p - 1e-3 * g, p, g), m, v, step + 1
        b1, b2, lr, eps, wd = 0.9, 0.999, 1e-3, 1e-8, cfg["weight_decay"]
        t = step + 1
        m = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1 = 1 / (1 - b1 ** t.astype(jnp.float32))
        c2 = 1 / (1 - b2 ** t.astype(jnp.float32))
        p = jax.tree.map(lambda p, m, v: p - lr * ((m * c1) / (jnp.sqrt(v * c2) + eps) + wd * p), p, m, v)
        return loss, gnorm, p, m, v, t

    lay = {"wq": (D, D), "bq": (D,), "wk": (D, D), "bk": (D,), "wv": (D, D), "bv": (D,),
           "wo": (D, D), "bo": (D,), "ln1g": (D,), "ln1b": (D,), "w1": (D, F), "b1": (F,),
           "w2": (F, D), "b2": (D,), "ln2g": (D,), "ln2b": (D,)}
    shapes = {"emb": (V, D), "pos": (S, D), "lnfg": (D,), "lnfb": (D,), "out_b": (V,),
              "layers": [dict(lay) for _ in range(L)]}
    is_shape = lambda s: isinstance(s, tuple) and all(isinstance(i, int) for i in s)  # noqa: E731
    sds = jax.tree.map(lambda s: jax.ShapeDtypeStruct(s, jnp.float32), shapes, is_leaf=is_shape)
    args = (sds, sds, sds, jax.ShapeDtypeStruct((), jnp.int32), jax.ShapeDtypeStruct((2,), jnp.uint32),
            jax.ShapeDtypeStruct((B, S), jnp.int32), jax.ShapeDtypeStruct((B, S), jnp.float32),
            jax.ShapeDtypeStruct((B, S), jnp.int32))
    # The module is named after the function: jit_<name>_train_step.
    transformer24_train_step.__name__ = transformer24_train_step.__qualname__ = f"{name}_train_step"
    # Compile only (no execution): lowering + XLA compile write both dumps.
    jax.jit(transformer24_train_step).lower(*args).compile()
    Path(result_path).write_text("ok")


def _before_only(cmd, env, dump_dir: Path, rx):
    """Run the worker until XLA has written the before-optimizations dump, then stop it: the
    scaling family needs only that text, and XLA:CPU's own compile of the 96-layer step takes
    many minutes.  With a per-pass dump regex, the first pass dump after the before-optimizations
    file proves that file complete."""
    import time
    env = dict(env, XLA_FLAGS=env["XLA_FLAGS"] + " --xla_dump_hlo_pass_re=.*")
    proc = subprocess.Popen(cmd, cwd=REPO, env=env)
    try:
        while proc.poll() is None:
            names = [f.name for f in dump_dir.iterdir()] if dump_dir.exists() else []
            if any(rx.match(n) for n in names) and any(".after_" in n for n in names):
                break
            time.sleep(0.2)
        else:
            assert proc.returncode == 0, proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def transformer24(out_dir: Path, layers: int | None = None, dims: tuple = (None, None, None),
                  after: bool = False):
    """Write transformer24.{before,after}_optimizations.hlo.gz, or with ``layers`` the scaling
    family's transformer_L<layers>.{...}.hlo.gz (same program at every layer count; ``dims``
    = (width, seq, batch) for a family with realistic tensor sizes, see scale_cfg).  The scaling
    family is written before-optimizations only unless ``after``: XLA:CPU's own optimised text
    too (its line count is the reference for hloc opt's output size)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    name = "transformer24" if layers is None else scale_name(layers, *dims)
    with tempfile.TemporaryDirectory(prefix="hlodump_t24_") as tmp:
        dump_dir = Path(tmp) / "dump"
        env = _env_for({"name": name, "kind": "jax"}, dump_dir)
        env["XLA_FLAGS"] = f"--xla_dump_to={dump_dir}"  # real-world default: large constants elided
        cmd = [sys.executable, SCRIPT_REL, "--transformer24-worker", str(Path(tmp) / "r")]
        rx = re.compile(rf"^module_(\d+)\.jit_{name}_train_step\.before_optimizations\.txt$")
        kinds = (("before_optimizations", "before_optimizations"),
                 ("cpu_after_optimizations", "after_optimizations"))
        if layers is not None:
            cmd += ["--scale-layers", str(layers)]
            for flag, v in zip(("--width", "--seq", "--batch"), dims):
                if v:
                    cmd += [flag, str(v)]
        if layers is None or after:
            subprocess.run(cmd, cwd=REPO, env=env, check=True)
        else:
            _before_only(cmd, env, dump_dir, rx)
            kinds = kinds[:1]
        found = [m for m in (rx.match(f.name) for f in dump_dir.iterdir()) if m]
        assert len(found) == 1, found
        stem = f"module_{found[0].group(1)}.jit_{name}_train_step"
        for src, dst in kinds:
            data = (dump_dir / f"{stem}.{src}.txt").read_bytes()
            gz = out_dir / f"{name}.{dst}.hlo.gz"
            with open(gz, "wb") as fh:
                with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as g:
                    g.write(data)
            nl = data.count(b"\n")
            print(f"{gz}: {len(data)} bytes, {nl} lines, gz {gz.stat().st_size} bytes")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--readme", action="store_true", help="only rewrite <out>/README.md")
    ap.add_argument("--transformer24", type=Path, metavar="OUT_DIR")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    ap.add_argument("--transformer24-worker", help=argparse.SUPPRESS)
    ap.add_argument("--transformer-layers", type=Path, metavar="OUT_DIR",
                    help="write the opt-scaling family transformer_L{8,24,48,96} (issue 13)")
    ap.add_argument("--layers", type=int, nargs="+", default=list(SCALE_LAYERS),
                    help="layer counts for --transformer-layers")
    ap.add_argument("--width", type=int, help="with --transformer-layers: d_model (mlp 4x, "
                    "heads width/64, vocab 2x); default the tiny family (d_model 64)")
    ap.add_argument("--seq", type=int, help="with --transformer-layers: sequence length (default 16)")
    ap.add_argument("--batch", type=int, help="with --transformer-layers: batch (default 2)")
    ap.add_argument("--after", action="store_true",
                    help="with --transformer-layers: also XLA:CPU's after-optimizations dump "
                    "(a full XLA compile)")
    ap.add_argument("--scale-layers", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        _worker(a.worker, a.result)
        return 0
    if a.transformer24_worker:
        if a.scale_layers:
            dims = (a.width, a.seq, a.batch)
            _transformer24_worker(a.transformer24_worker, scale_name(a.scale_layers, *dims),
                                  dict(scale_cfg(*dims), layers=a.scale_layers))
        else:
            _transformer24_worker(a.transformer24_worker)
        return 0
    if a.readme:
        write_readme(a.out.resolve())
        return 0
    if a.list:
        for n, s in PROGRAMS.items():
            print(f"{n:32s} {s['kind']:3s} {s['desc']}")
        return 0
    if a.transformer24:
        transformer24(a.transformer24.resolve())
        return 0
    if a.transformer_layers:
        for n in a.layers:
            transformer24(a.transformer_layers.resolve(), n, (a.width, a.seq, a.batch), a.after)
        return 0
    names = a.only or list(PROGRAMS)
    unknown = [n for n in names if n not in PROGRAMS]
    if unknown:
        ap.error(f"unknown programs: {unknown}")
    problems = generate(names, a.out.resolve(), full=not a.only)
    if not a.only:
        write_readme(a.out.resolve())
    n_ok = len(names) - len(problems)
    print(f"{n_ok}/{len(names)} programs generated")
    for n, msg in problems.items():
        print(f"  FAILED {n}: {msg.splitlines()[0] if msg else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
