"""Convolution in the compiled back end: direct loops vs im2col + GEMM vs XLA:CPU.

    python benchmarks/conv.py [--repeat N] [--threads N] [--only conv|step]
    /work/venv-jax/bin/python benchmarks/conv.py    # adds XLA:CPU and the scaled CNN step

Per convolution shape (the CNN training step's five from testdata/dumps/cnn_train_step —
forward, input-gradient and weight-gradient, in XLA's after-optimizations form — and the
same layers scaled up: batch 32, 28x28, 32/64 channels) and for the whole training step
(the dump's module, and with JAX the scaled model lowered by JAX): the compiled back end
with every convolution forced onto the direct loops (hloc.backend.convolution), forced
through im2col + NumPy's OpenBLAS (the JIT's gemm) and through im2col + the emitted GEMM
(Options(gemm="emitted"), what `hloc compile` links), what the default thresholds pick
with each (dflt: the JIT, aot: `hloc compile`; picked: convolutions through GEMM / all),
and XLA:CPU through JAX on the same computation. Times are the best of --repeat
steady-state calls; every result is checked against the direct loops' (ErrorSpec 1e-3).
Not a test: timings on a shared machine vary by +-30 %.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hloc  # noqa: E402
from hloc.backend import compile_module, conv_gemm  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from hloc.compare import ErrorSpec, near  # noqa: E402
from timing import best  # noqa: E402  (benchmarks/timing.py)

NEVER = 1 << 62

# (name, lhs NHWC, kernel HWIO, ((pad_lo, pad_hi) per spatial dim)) in b01f_01io->b01f
DUMP = [
    ("dump fwd conv1", (4, 14, 14, 1), (3, 3, 1, 4), ((1, 1), (1, 1))),
    ("dump fwd conv2", (4, 7, 7, 4), (3, 3, 4, 8), ((0, 0), (0, 0))),
    ("dump dgrad conv2", (4, 5, 5, 8), (3, 3, 8, 4), ((2, 2), (2, 2))),
    ("dump wgrad conv2", (4, 7, 7, 4), (5, 5, 4, 8), ((0, 0), (0, 0))),
    ("dump wgrad conv1", (1, 14, 14, 4), (14, 14, 4, 4), ((1, 1), (1, 1))),
]
SMALL = [
    ("small O4 K18", (1, 8, 8, 2), (3, 3, 2, 4), ((1, 1), (1, 1))),
    ("small O4 K36", (2, 8, 8, 4), (3, 3, 4, 4), ((1, 1), (1, 1))),
    ("small O8 K36", (2, 8, 8, 4), (3, 3, 4, 8), ((1, 1), (1, 1))),
    ("small O1 K72", (1, 16, 16, 8), (3, 3, 8, 1), ((1, 1), (1, 1))),
]
SCALED = [
    ("x8 fwd conv1", (32, 28, 28, 1), (3, 3, 1, 32), ((1, 1), (1, 1))),
    ("x8 fwd conv2", (32, 14, 14, 32), (3, 3, 32, 64), ((0, 0), (0, 0))),
    ("x8 dgrad conv2", (32, 12, 12, 64), (3, 3, 64, 32), ((2, 2), (2, 2))),
    ("x8 wgrad conv2", (32, 14, 14, 32), (12, 12, 32, 64), ((0, 0), (0, 0))),
    ("x8 wgrad conv1", (1, 28, 28, 32), (28, 28, 32, 32), ((1, 1), (1, 1))),
]


def conv_text(lhs, rhs, pads):
    osp = [lhs[1 + j] + lo + hi - rhs[j] + 1 for j, (lo, hi) in enumerate(pads)]
    out = (lhs[0], *osp, rhs[3])
    s = lambda v: ",".join(map(str, v))     # noqa: E731
    win = f"size={rhs[0]}x{rhs[1]} pad={'x'.join(f'{a}_{b}' for a, b in pads)}"
    return (f"HloModule conv\n\nENTRY e {{\n  x = f32[{s(lhs)}] parameter(0)\n"
            f"  k = f32[{s(rhs)}] parameter(1)\n  ROOT c = f32[{s(out)}] convolution(x, k), "
            f"window={{{win}}}, dim_labels=b01f_01io->b01f\n}}\n")


def _compiled(module_fn, threshold, gemm, threads):
    old = conv_gemm.CONV_GEMM_MIN_WORK, conv_gemm.EMITTED_MIN_OK
    conv_gemm.CONV_GEMM_MIN_WORK = threshold
    if threshold == 1:
        conv_gemm.EMITTED_MIN_OK = 0
    try:
        module = module_fn()
        convs = [i for c in module.computations for i in c.instructions if i.opcode == "convolution"]
        taken = sum(conv_gemm.plan(i, _opts(gemm)) is not None for i in convs)
        return compile_module(module, gemm=gemm, threads=threads), taken, len(convs)
    finally:
        conv_gemm.CONV_GEMM_MIN_WORK, conv_gemm.EMITTED_MIN_OK = old


def _opts(gemm):
    from hloc.backend import Options
    return Options("xla-cpu", gemm=gemm)


def _jax():
    try:
        import jax
        return jax
    except ImportError:
        return None


def _row(name, work, times, picked, ref_ok):
    direct = times["direct"]
    cells = [f"{name:<18}", f"{work / 1e6:9.3f}"]
    for k in ("direct", "blas", "emitted", "default", "aot", "xla"):
        t = times.get(k)
        cells.append(f"{t * 1e3:9.3f}" if t is not None else f"{'-':>9}")
    ratio = lambda k: f"{times[k] / direct:7.2f}" if times.get(k) else f"{'-':>7}"   # noqa: E731
    cells += [ratio("blas"), ratio("emitted"), ratio("xla"), f"{picked:>9}", "" if ref_ok else "  MISMATCH"]
    print(" ".join(cells), flush=True)


HEADER = (f"{'case':<18} {'MMAC':>9} {'direct ms':>9} {'blas ms':>9} {'emit ms':>9} "
          f"{'dflt ms':>9} {'aot ms':>9} {'xla ms':>9} {'blas/d':>7} {'emit/d':>7} {'xla/d':>7} {'picked':>9}")


def run_case(name, module_fn, args, work, repeat, threads, xla_fn=None):
    times, outs = {}, {}
    picked = ""
    for key, thr, gemm in (("direct", NEVER, "blas"), ("blas", 1, "blas"), ("emitted", 1, "emitted"),
                           ("default", conv_gemm.CONV_GEMM_MIN_WORK, "blas"),
                           ("aot", conv_gemm.CONV_GEMM_MIN_WORK, "emitted")):
        exe, taken, n = _compiled(module_fn, thr, gemm, threads)
        exe.run(args)
        times[key], outs[key] = best(lambda: exe.run(args), repeat)
        if key in ("default", "aot"):
            picked += f"{'' if key == 'default' else ','}{taken}/{n}"
    if xla_fn is not None:
        times["xla"], outs["xla"] = xla_fn()
    ok = True
    for k, v in outs.items():
        a, b = _leaves(outs["direct"]), _leaves(v)
        ok &= len(a) == len(b) and all(near(x, y, ErrorSpec(1e-3, 1e-3)).ok for x, y in zip(a, b))
    _row(name, work, times, picked, ok)
    return times


def _leaves(v):
    if isinstance(v, (list, tuple)):
        return [np.asarray(x) for y in v for x in _leaves(y)]
    return [np.asarray(v)]


def conv_cases(repeat, threads):
    jax = _jax()
    rng = np.random.default_rng(0)
    for name, lhs, rhs, pads in SMALL + DUMP + SCALED:
        text = conv_text(lhs, rhs, pads)
        args = [rng.standard_normal(lhs).astype(np.float32), rng.standard_normal(rhs).astype(np.float32)]
        m = hloc.parse(text).entry.root
        work = m.shape.size * rhs[0] * rhs[1] * rhs[2]

        def xla_fn(pads=pads, args=args):
            f = jax.jit(lambda x, k: jax.lax.conv_general_dilated(
                x, k, (1, 1), list(pads), dimension_numbers=("NHWC", "HWIO", "NHWC")))
            dev = [jax.device_put(a) for a in args]
            f(*dev).block_until_ready()
            t, out = best(lambda: f(*dev).block_until_ready(), repeat)
            return t, np.asarray(out)
        run_case(name, lambda text=text: hloc.parse(text), args, work, repeat, threads,
                 xla_fn if jax is not None else None)


def cnn_step(jax, batch, size, c1, c2):
    """The MNIST-like CNN training step of tools/gen_dumps.py, sizes as parameters."""
    import jax.numpy as jnp
    from jax import lax

    def model(p, x):
        h = lax.conv_general_dilated(x, p["c1"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + p["b1"])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = lax.conv_general_dilated(h, p["c2"], (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        h = jax.nn.relu(h + p["b2"])
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        h = h.reshape(h.shape[0], -1)
        return h @ p["w"] + p["b"]

    def loss_fn(p, x, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(model(p, x)), y[:, None], 1))

    def f(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return loss, jax.tree.map(lambda a, b: a - 0.05 * b, p, g)

    rng = np.random.default_rng(0)
    s2 = (size // 2 - 2) // 2
    p = {"c1": (rng.standard_normal((3, 3, 1, c1)) * 0.3).astype(np.float32), "b1": np.zeros(c1, np.float32),
         "c2": (rng.standard_normal((3, 3, c1, c2)) * 0.2).astype(np.float32), "b2": np.zeros(c2, np.float32),
         "w": (rng.standard_normal((s2 * s2 * c2, 10)) * 0.2).astype(np.float32), "b": np.zeros(10, np.float32)}
    x = rng.random((batch, size, size, 1)).astype(np.float32)
    y = rng.integers(0, 10, batch).astype(np.int32)
    return f, (p, x, y)


def step_cases(repeat, threads):
    from hloc.inputs import bind_arguments, load_npz
    jax = _jax()
    stem = ROOT / "testdata/dumps/cnn_train_step"
    d = load_npz(f"{stem}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]

    def dump_module():
        return prepare_for_cpu(hloc.parse_file(f"{stem}.before_optimizations.hlo"), None)
    args = bind_arguments(dump_module(), ins)
    xla_fn = None
    if jax is not None:
        f, tree = cnn_step(jax, 4, 14, 4, 8)
        tree = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(tree), ins)   # the dump's inputs
        xla_fn = _xla_step(jax, f, tree, repeat)
    run_case("dump CNN step", dump_module, args, 0, repeat, threads, xla_fn)
    if jax is None:
        print("(no JAX: the scaled CNN step needs it to lower the model)")
        return
    f, tree = cnn_step(jax, 32, 28, 32, 64)
    text = jax.jit(f).lower(*tree).as_text(dialect="hlo")
    leaves = jax.tree_util.tree_leaves(tree)
    run_case("x8 CNN step", lambda: prepare_for_cpu(hloc.parse(text), None), leaves, 0, repeat, threads,
             _xla_step(jax, f, tree, repeat))


def _xla_step(jax, f, tree, repeat):
    def run():
        g = jax.jit(f)
        dev = jax.tree.map(jax.device_put, tree)
        jax.block_until_ready(g(*dev))
        t, out = best(lambda: jax.block_until_ready(g(*dev)), repeat)
        return t, [np.asarray(v) for v in jax.tree_util.tree_leaves(out)]
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--only", choices=["conv", "step"])
    a = ap.parse_args(argv)
    print(f"CONV_GEMM_MIN_WORK = {conv_gemm.CONV_GEMM_MIN_WORK} multiply-adds; times: best of {a.repeat}")
    print(HEADER)
    if a.only != "step":
        conv_cases(a.repeat, a.threads)
    if a.only != "conv":
        step_cases(a.repeat, a.threads)


if __name__ == "__main__":
    main()
