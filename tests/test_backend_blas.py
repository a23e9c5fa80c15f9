"""Dots through NumPy's bundled OpenBLAS (hloc.backend.blas): which dots call gemm, and
that their values equal the emitted loops' (ieee numerics never calls BLAS) and
NumPy's for every transpose/layout/batch/type combination the mapping handles."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import Options, blas, compile_module, emit_llvm, runtime
from hloc.diagnostics import UnsupportedError

NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def _dot_module(dt, batch, m, k, n, lhs_t, rhs_t, out_layout=""):
    b = f"{batch}," if batch else ""
    nb = 1 if batch else 0
    lhs = f"{dt}[{b}{k},{m}]" if lhs_t else f"{dt}[{b}{m},{k}]"
    rhs = f"{dt}[{b}{n},{k}]" if rhs_t else f"{dt}[{b}{k},{n}]"
    dims = "lhs_batch_dims={0}, rhs_batch_dims={0}, " if batch else ""
    lc, rc = nb + (0 if lhs_t else 1), nb + (1 if rhs_t else 0)
    return (f"HloModule mm\n\nENTRY e {{\n  x = {lhs} parameter(0)\n  y = {rhs} parameter(1)\n"
            f"  ROOT d = {dt}[{b}{m},{n}]{out_layout} dot(x, y), {dims}"
            f"lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{{rc}}}\n}}\n")


def _args(module, dt, rng):
    out = []
    for p in sorted(module.entry.parameters, key=lambda p: p.parameter_number):
        s = tuple(p.shape.dims)
        v = rng.standard_normal(s)
        if dt.startswith("c"):
            v = v + 1j * rng.standard_normal(s)
        out.append(v.astype(NP[dt]))
    return out


CASES = [(dt, batch, lt, rt, lay) for dt in NP for batch in (0, 3) for lt in (False, True)
         for rt in (False, True) for lay in ("", "col")]


@pytest.mark.parametrize("dt,batch,lhs_t,rhs_t,lay", CASES)
def test_gemm_equals_loops_and_numpy(dt, batch, lhs_t, rhs_t, lay):
    rank = 3 if batch else 2
    layout = "" if not lay else ("{0,1}" if rank == 2 else "{1,2,0}")
    text = _dot_module(dt, batch, 40, 50, 36, lhs_t, rhs_t, layout)
    module = hloc.parse(text)
    assert blas.plan(module.entry.root, Options("xla-cpu")) is not None
    assert blas.SYMBOL[dt] in emit_llvm(module, optimized=False)
    assert blas.SYMBOL[dt] not in emit_llvm(module, numerics="ieee", optimized=False)
    args = _args(module, dt, np.random.default_rng(len(text)))
    got = compile_module(module).run(args)
    loops = compile_module(hloc.parse(text), numerics="ieee").run(args)
    x, y = args
    if lhs_t:
        x = np.swapaxes(x, -1, -2)
    if rhs_t:
        y = np.swapaxes(y, -1, -2)
    want = np.matmul(x.astype(np.complex128 if dt.startswith("c") else np.float64), y)
    tol = 1e-4 if dt in ("f32", "c64") else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 50)
    np.testing.assert_allclose(loops, want, rtol=tol, atol=tol * 50)


@pytest.mark.parametrize("text", [
    _dot_module("f32", 0, 8, 8, 8, False, False),                        # too small
    _dot_module("s32", 0, 64, 64, 64, False, False),                     # integers
    _dot_module("f32", 0, 64, 64, 64, False, False).replace("x = f32", "x = bf16"),   # mixed
])
def test_dots_that_stay_in_loops(text):
    assert "cblas" not in emit_llvm(hloc.parse(text), optimized=False)


def test_matrix_vector_and_vector_matrix():
    rng = np.random.default_rng(1)
    for text, f in [
        ("HloModule m\n\nENTRY e {\n  x = f64[300,200] parameter(0)\n  y = f64[200] parameter(1)\n"
         "  ROOT d = f64[300] dot(x, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n",
         lambda x, y: x @ y),
        ("HloModule m\n\nENTRY e {\n  x = f64[200] parameter(0)\n  y = f64[200,300] parameter(1)\n"
         "  ROOT d = f64[300] dot(x, y), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n",
         lambda x, y: x @ y)]:
        module = hloc.parse(text)
        assert "dgemm" in emit_llvm(module, optimized=False)
        args = _args(module, "f64", rng)
        np.testing.assert_allclose(compile_module(module).run(args), f(*args), rtol=1e-10)


def test_missing_openblas_is_a_clear_error(monkeypatch):
    text = _dot_module("f32", 0, 64, 64, 64, False, False)
    e = compile_module(hloc.parse(text))
    table = {k: v for k, v in runtime.resolve_all().items() if k not in runtime.BLAS}
    monkeypatch.setattr(runtime, "_resolved", table)
    with pytest.raises(UnsupportedError, match="libscipy_openblas64_"):
        runtime.check_object(e.code.obj)


def test_executable_keeps_the_library_alive():
    e = compile_module(hloc.parse(_dot_module("f32", 0, 64, 64, 64, False, False)))
    assert runtime.openblas_path() is not None      # NumPy wheels ship it
    assert any(getattr(h, "_name", None) == runtime.openblas_path() for h in e.code.libraries)


DOT_PROGS = ["mlp_train_step", "bert_train_step", "cnn_train_step", "einsum_batched", "dense_relu",
             "tf_dense_softmax", "mixed_precision_dot", "linalg_inv_solve_slogdet", "scan_rnn"]


@pytest.mark.parametrize("stage", ["before", "after"])
@pytest.mark.parametrize("prog", DOT_PROGS)
def test_dumps_with_every_dot_through_blas_match_xla(prog, stage, monkeypatch):
    """The dumps' dots are below the size threshold; with it at 1 every dot that BLAS
    can take calls gemm (real dimension numbers and layouts), compared with XLA's values."""
    from pathlib import Path

    from hloc.cli_backend import prepare_for_cpu
    from hloc.compare import ErrorSpec, near
    from hloc.inputs import bind_arguments, flatten_leaves, load_npz
    dumps = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
    monkeypatch.setattr(blas, "BLAS_MIN_WORK", 1)
    module = prepare_for_cpu(hloc.parse_file(dumps / f"{prog}.{stage}_optimizations.hlo"), None)
    d = load_npz(dumps / f"{prog}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    outs = [d[f"out{i}"] for i in range(sum(1 for k in d if k.startswith("out") and k[3:].isdigit()))]
    exe = compile_module(module)
    got = flatten_leaves(exe.run(bind_arguments(module, ins)), module.entry.root.shape)
    bad = [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(outs, got))
           if not (r := near(e, a, ErrorSpec(1e-3, 1e-3))).ok]
    assert not bad, "\n".join(bad)


def test_some_dump_dots_do_go_through_blas(monkeypatch):
    from pathlib import Path

    from hloc.cli_backend import prepare_for_cpu
    dumps = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
    monkeypatch.setattr(blas, "BLAS_MIN_WORK", 1)
    n = 0
    for prog in DOT_PROGS:
        module = prepare_for_cpu(hloc.parse_file(dumps / f"{prog}.after_optimizations.hlo"), None)
        n += emit_llvm(module, optimized=False).count("@\"scipy_cblas_")
    assert n >= 10, n


def test_openblas_follows_the_executable_threads(monkeypatch):
    """OpenBLAS runs a call on the executable's thread count and gets its own back after;
    code without BLAS calls leaves it alone."""
    t = blas.threads()
    if t._get is None:
        pytest.skip("this OpenBLAS exports no thread-count functions")
    seen = []
    real_enter = blas.Threads.enter

    def enter(self, k):
        old = real_enter(self, k)
        seen.append((k, self._get()))
        return old

    monkeypatch.setattr(blas.Threads, "enter", enter)
    rng = np.random.default_rng(3)
    module = hloc.parse(_dot_module("f32", 0, 64, 64, 64, False, False))
    args = _args(module, "f32", rng)
    before = t._get()
    t._put(2)
    try:
        e = compile_module(module, threads=1)
        np.testing.assert_allclose(e.run(args), args[0] @ args[1], rtol=1e-4, atol=1e-4)
        assert seen == [(1, 1)] and t._get() == 2          # set for the call, then restored
        e.set_threads(2)
        e.run(args)
        assert seen[-1] == (2, 2)
        small = compile_module(hloc.parse(_dot_module("f32", 0, 4, 4, 4, False, False)), threads=1)
        small.run(_args(small.module, "f32", rng))
        assert len(seen) == 2                                # emitted loops: not touched
    finally:
        t._put(before)
