"""Convolutions through im2col + GEMM (hloc.backend.conv_gemm): which convolutions take it,
and that their values equal the direct loops' (hloc.backend.convolution) and the
interpreter's on a grid of strides, paddings (negative too), dilations, reversal,
dim_labels/layouts and f32/f64 — with OpenBLAS (the JIT) and the emitted GEMM (AOT)."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import Options, blas, compile_module, conv_gemm, emit_llvm

NP = {"f32": np.float32, "f64": np.float64}


def _out_size(n, w, stride, lo, hi, ld, rd):
    padded = (n - 1) * ld + 1 + lo + hi if n else lo + hi
    win = (w - 1) * rd + 1
    return max(0, (padded - win) // stride + 1) if padded >= win else 0


def conv_module(dt="f32", batch=2, cin=3, cout=5, spatial=(9, 8), win=(3, 2), stride=(1, 1),
                pad=((1, 1), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1), rev=(0, 0),
                labels=("b01f", "01io", "b01f"), out_layout=""):
    """An HLO module with one convolution (parameters in the labels' logical order)."""
    ln, kn, on = labels
    osp = [_out_size(n, w, s, lo, hi, ld, rd) for n, w, s, (lo, hi), ld, rd
           in zip(spatial, win, stride, pad, lhs_dil, rhs_dil)]

    lhs = ",".join(str(batch if c == "b" else cin if c == "f" else spatial[int(c)]) for c in ln)
    rhs = ",".join(str(cin if c == "i" else cout if c == "o" else win[int(c)]) for c in kn)
    out = ",".join(str(batch if c == "b" else cout if c == "f" else osp[int(c)]) for c in on)
    x = lambda v: "x".join(str(i) for i in v)        # noqa: E731
    w = f"size={x(win)} stride={x(stride)} pad={'x'.join(f'{a}_{b}' for a, b in pad)}"
    if any(d != 1 for d in lhs_dil):
        w += f" lhs_dilate={x(lhs_dil)}"
    if any(d != 1 for d in rhs_dil):
        w += f" rhs_dilate={x(rhs_dil)}"
    if any(rev):
        w += f" rhs_reversal={x(rev)}"
    return (f"HloModule c\n\nENTRY e {{\n  x = {dt}[{lhs}] parameter(0)\n  k = {dt}[{rhs}] parameter(1)\n"
            f"  ROOT c = {dt}[{out}]{out_layout} convolution(x, k), window={{{w}}}, "
            f"dim_labels={ln}_{kn}->{on}\n}}\n")


def _args(module, dt, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(tuple(p.shape.dims)).astype(NP[dt])
            for p in sorted(module.entry.parameters, key=lambda p: p.parameter_number)]


def _direct(text, args, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(conv_gemm, "CONV_GEMM_MIN_WORK", 1 << 62)
        module = hloc.parse(text)
        assert conv_gemm.plan(module.entry.root, Options("xla-cpu")) is None
        return compile_module(module).run(args)


GRID = [
    {},
    {"stride": (2, 3)},
    {"pad": ((2, 1), (1, 3))},
    {"pad": ((-1, 1), (0, -2))},                      # negative padding crops
    {"pad": ((3, -2), (2, 2)), "stride": (2, 2)},
    {"lhs_dil": (2, 1), "pad": ((1, 1), (0, 1))},    # base dilation (transposed-conv style)
    {"rhs_dil": (2, 2), "pad": ((2, 2), (1, 1))},    # window (atrous) dilation
    {"rev": (1, 1), "pad": ((2, 2), (1, 1))},
    {"labels": ("bf01", "oi01", "bf01")},            # NCHW / OIHW
    {"labels": ("bf01", "01io", "b01f")},
    {"labels": ("b01f", "oi01", "bf01"), "stride": (2, 1)},
    {"labels": ("f01b", "i01o", "01bf")},            # weight-gradient style
    {"labels": ("01bf", "o01i", "f01b")},
    {"labels": ("b01f", "01oi", "b01f"), "rev": (1, 1), "pad": ((2, 2), (1, 1))},   # JAX's input gradient
    {"labels": ("b01f", "0oi1", "b01f")},            # o inside: K sliced to (i, 1) per tap row
    {"labels": ("bf01", "i0o1", "bf01")},
    {"out_layout": "{0,3,2,1}"},                     # batch minor-most in the output
    {"dt": "f64"},
    {"dt": "f64", "labels": ("bf01", "oi01", "bf01"), "pad": ((0, -1), (1, 0))},
    {"batch": 1, "cin": 1, "cout": 1, "spatial": (30, 30), "win": (5, 5)},
    {"spatial": (40, 3), "win": (7, 3), "pad": ((0, 0), (0, 0))},
]


@pytest.mark.parametrize("case", GRID, ids=[str(i) for i in range(len(GRID))])
@pytest.mark.parametrize("gemm", ["blas", "emitted"])
def test_im2col_gemm_equals_direct_loops(case, gemm, monkeypatch):
    monkeypatch.setattr(conv_gemm, "CONV_GEMM_MIN_WORK", 1)
    dt = case.get("dt", "f32")
    text = conv_module(**case)
    module = hloc.parse(text)
    p = conv_gemm.plan(module.entry.root, Options("xla-cpu"))
    assert p is not None
    assert p.split == (1 if "0oi1" in text else 2 if "i0o1" in text else 2 if "01oi" in text else 0)
    if gemm == "blas":
        assert blas.SYMBOL[dt] in emit_llvm(module, optimized=False)
    assert blas.SYMBOL[dt] not in emit_llvm(hloc.parse(text), numerics="ieee", optimized=False)
    args = _args(module, dt, len(text))
    got = compile_module(module, gemm=gemm).run(args)
    want = _direct(text, args, monkeypatch)
    interp = hloc.run(hloc.parse(text), *args)
    tol = 1e-5 if dt == "f32" else 1e-12
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, np.asarray(interp), rtol=tol, atol=tol)


@pytest.mark.parametrize("gemm", ["blas", "emitted"])
@pytest.mark.parametrize("labels", [("bf01", "01io", "bf01"), ("b01f", "o01i", "b01f"), ("f01b", "i01o", "01bf")])
@pytest.mark.parametrize("scratch,min_chunk,split", [(24 * 4 * 5, 1, 0), (8 * 4 * 16, 16, 1),
                                                     (4 * 4 * 16, 16, 2)])
def test_chunks_and_k_slices(scratch, min_chunk, split, labels, gemm, monkeypatch):
    """Small stack scratch: a few rows per chunk, or K sliced along the kernel's leading
    dimensions with gemm adding to C (beta = 1): the same values as one gemm."""
    monkeypatch.setattr(conv_gemm, "CONV_GEMM_MIN_WORK", 1)
    text = conv_module(spatial=(13, 11), cin=4, cout=6, win=(3, 2), pad=((1, 0), (2, -1)), labels=labels)
    args = _args(hloc.parse(text), "f32", 3)
    whole = compile_module(hloc.parse(text), gemm=gemm).run(args)
    assert conv_gemm.plan(hloc.parse(text).entry.root, Options("xla-cpu")).split == 0
    monkeypatch.setattr(conv_gemm, "SCRATCH_BYTES", scratch)
    monkeypatch.setattr(conv_gemm, "MIN_CHUNK", min_chunk)
    module = hloc.parse(text)
    p = conv_gemm.plan(module.entry.root, Options("xla-cpu"))
    assert p.split == split and p.chunk < p.n_rows
    got = compile_module(module, gemm=gemm).run(args)
    np.testing.assert_allclose(got, whole, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, _direct(text, args, monkeypatch), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("text,why", [
    (conv_module(batch=1, cin=1, cout=2, spatial=(4, 4)), "small"),
    (conv_module(spatial=(40, 40), cin=8, cout=8).replace("dim_labels", "feature_group_count=2, dim_labels")
     .replace("f32[3,2,8,8]", "f32[3,2,4,8]"), "feature groups"),
    (conv_module(spatial=(40, 40), cin=8, cout=8).replace("f32[", "bf16[", 1).replace("x = bf16", "x = bf16"),
     "mixed types"),
])
def test_convolutions_that_stay_direct(text, why):
    module = hloc.parse(text)
    assert conv_gemm.plan(module.entry.root, Options("xla-cpu")) is None, why


def test_ieee_numerics_never_takes_gemm():
    module = hloc.parse(conv_module(spatial=(40, 40), cin=8, cout=16))
    assert conv_gemm.plan(module.entry.root, Options("xla-cpu")) is not None
    assert conv_gemm.plan(module.entry.root, Options("ieee")) is None


def test_results_do_not_depend_on_threads(monkeypatch):
    text = conv_module(batch=8, spatial=(32, 32), cin=16, cout=32, win=(3, 3), pad=((1, 1), (1, 1)))
    module = hloc.parse(text)
    assert conv_gemm.plan(module.entry.root, Options("xla-cpu")) is not None
    args = _args(module, "f32", 5)
    for gemm in ("blas", "emitted"):
        outs = [compile_module(hloc.parse(text), gemm=gemm, threads=n).run(args) for n in (1, 2, 3)]
        for o in outs[1:]:
            assert np.array_equal(o, outs[0]), gemm


@pytest.mark.parametrize("stage", ["before", "after"])
@pytest.mark.parametrize("gemm", ["blas", "emitted"])
def test_cnn_dump_with_every_conv_through_gemm_matches_xla(stage, gemm, monkeypatch):
    from pathlib import Path

    from hloc.cli_backend import prepare_for_cpu
    from hloc.compare import ErrorSpec, near
    from hloc.inputs import bind_arguments, flatten_leaves, load_npz
    dumps = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
    monkeypatch.setattr(conv_gemm, "CONV_GEMM_MIN_WORK", 1)
    monkeypatch.setattr(blas, "BLAS_MIN_WORK", 1)
    module = prepare_for_cpu(hloc.parse_file(dumps / f"cnn_train_step.{stage}_optimizations.hlo"), None)
    convs = [i for c in module.computations for i in c.instructions if i.opcode == "convolution"]
    taken = [i for i in convs if conv_gemm.plan(i, Options("xla-cpu")) is not None]
    assert len(convs) == 5 and len(taken) == 5, (len(convs), len(taken))
    d = load_npz(dumps / "cnn_train_step.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    outs = [d[f"out{i}"] for i in range(sum(1 for k in d if k.startswith("out") and k[3:].isdigit()))]
    exe = compile_module(module, gemm=gemm)
    got = flatten_leaves(exe.run(bind_arguments(module, ins)), module.entry.root.shape)
    assert len(got) == len(outs)
    bad = [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(outs, got))
           if not (r := near(e, a, ErrorSpec(1e-3, 1e-3))).ok]
    assert not bad, "\n".join(bad)


def test_emitted_gemm_needs_enough_features_times_k():
    """Few output features and a short K: the emitted GEMM loses to the direct loops."""
    module = hloc.parse(conv_module(batch=4, cin=1, cout=4, spatial=(14, 14), win=(3, 3), pad=((1, 1), (1, 1))))
    root = module.entry.root
    assert conv_gemm.plan(root, Options("xla-cpu")) is not None
    assert conv_gemm.plan(root, Options("xla-cpu", gemm="emitted")) is None


def test_convolutions_of_one_function_share_one_stack_buffer(monkeypatch):
    two = ("HloModule c\n\nENTRY e {\n  x = f32[2,20,20,8] parameter(0)\n  k = f32[3,2,8,8] parameter(1)\n"
           "  a = f32[2,20,20,8] convolution(x, k), window={size=3x2 pad=1_1x0_1}, dim_labels=b01f_01io->b01f\n"
           "  b = f32[2,20,20,8] convolution(a, k), window={size=3x2 pad=1_1x0_1}, dim_labels=b01f_01io->b01f\n"
           "  ROOT t = (f32[2,20,20,8], f32[2,20,20,8]) tuple(a, b)\n}\n")
    ir_text = emit_llvm(hloc.parse(two), optimized=False)
    assert ir_text.count("im2col\" = alloca") + ir_text.count("%im2col = alloca") == 1
    args = _args(hloc.parse(two), "f32", 9)
    got = compile_module(hloc.parse(two)).run(args)
    with monkeypatch.context() as m:
        m.setattr(conv_gemm, "CONV_GEMM_MIN_WORK", 1 << 62)
        want = compile_module(hloc.parse(two)).run(args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4)
