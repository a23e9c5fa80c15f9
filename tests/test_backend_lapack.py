"""The LAPACK custom-calls in compiled code (hloc.backend.lapack) against the interpreter.

Every routine (geqrf, orgqr/ungqr, syevd/heevd, gesdd, gesvd, geev) in s/d/c/z, batched,
with a non-default operand layout for some, every mode, a batch matrix holding a NaN
(NaN outputs, info 1, the other batch untouched) and an empty matrix. The interpreter runs
NumPy's LAPACK in double precision and the compiled code the routine of the operand's
precision, so floats are compared within a tolerance of that precision, and eigen- and
singular vectors after fixing each one's free phase (sign for real types).
"""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, runtime
from hloc.inputs import bind_arguments, flatten_leaves
from hloc.runner import run_module

RNG = np.random.default_rng(11)
NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
REAL = {"f32": "f32", "f64": "f64", "c64": "f32", "c128": "f64"}
CPLX = {"f32": "c64", "f64": "c128", "c64": "c64", "c128": "c128"}
P = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
TOL = {"f32": 2e-4, "f64": 1e-10, "c64": 2e-4, "c128": 1e-10}


def _cc(target, operands, result, config=""):
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operands))
    ops = ", ".join(f"p{i}" for i in range(len(operands)))
    cfg = f", backend_config={config}" if config else ""
    return (f"HloModule m\n\nENTRY e {{\n{params}\n  ROOT c = {result} custom-call({ops}), "
            f"custom_call_target=\"{target}\"{cfg}\n}}\n")


def _rand(dt, shape):
    x = RNG.standard_normal(shape)
    if dt.startswith("c"):
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(NP[dt])


def _both(text, *args, tmp_path):
    module = hloc.parse(text)
    bound = bind_arguments(module, list(args))
    shape = module.entry.root.shape
    ref = flatten_leaves(run_module(module, bound).value, shape)
    exe = compile_module(module, numerics="ieee", cache_dir=tmp_path / "cache")
    got = flatten_leaves(exe.run(bound), shape)
    return [np.asarray(r) for r in ref], [np.asarray(g) for g in got]


def _close(ref, got, dt):
    assert ref.shape == got.shape and ref.dtype == got.dtype
    np.testing.assert_allclose(got, ref, rtol=TOL[dt], atol=TOL[dt] * 10)


def _phase_fixed(v, axis):
    """Vectors along `axis` scaled so their largest-magnitude component is real positive."""
    v = np.asarray(v, np.complex128)
    idx = np.expand_dims(np.argmax(np.abs(v), axis=axis), axis)
    big = np.take_along_axis(v, idx, axis=axis)
    ph = np.where(np.abs(big) > 0, big / np.where(np.abs(big) > 0, np.abs(big), 1), 1)
    return v / ph


@pytest.mark.parametrize("dt", list(NP))
def test_geqrf_orgqr(dt, tmp_path):
    p, orth = P[dt], ("un" if dt.startswith("c") else "or")
    a = _rand(dt, (2, 5, 3))
    text = _cc(f"lapack_{p}geqrf_ffi", [f"{dt}[2,5,3]{{1,2,0}}"], f"({dt}[2,5,3]{{1,2,0}}, {dt}[2,3])")
    ref, got = _both(text, a, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        _close(r, g, dt)
    text = _cc(f"lapack_{p}{orth}gqr_ffi", [f"{dt}[2,5,3]", f"{dt}[2,3]"], f"{dt}[2,5,3]")
    ref, got = _both(text, *ref, tmp_path=tmp_path)
    _close(ref[0], got[0], dt)


@pytest.mark.parametrize("dt", list(NP))
@pytest.mark.parametrize("mode,uplo", [("V", "L"), ("V", "U"), ("N", "L")])
def test_syevd_heevd(dt, mode, uplo, tmp_path):
    target = f"lapack_{P[dt]}{'he' if dt.startswith('c') else 'sy'}evd_ffi"
    a = _rand(dt, (3, 4, 4))
    a[1, 2, 3] = np.nan
    cfg = f"{{mode = {ord(mode)} : ui8, uplo = {ord(uplo)} : ui8}}"
    text = _cc(target, [f"{dt}[3,4,4]"], f"({dt}[3,4,4], {REAL[dt]}[3,4], s32[3])", cfg)
    (rv, rw, ri), (gv, gw, gi) = _both(text, a, tmp_path=tmp_path)
    np.testing.assert_array_equal(gi, ri)
    np.testing.assert_array_equal(gi, [0, 1, 0])
    _close(rw, gw, dt)
    assert np.isnan(gw[1]).all()
    if mode == "V":
        assert np.isnan(gv[1]).all()
        _close(_phase_fixed(rv, 1), _phase_fixed(gv, 1), dt)
    else:
        np.testing.assert_array_equal(gv, rv)


@pytest.mark.parametrize("routine", ["gesdd", "gesvd"])
@pytest.mark.parametrize("dt", list(NP))
@pytest.mark.parametrize("mode", ["A", "S", "N"])
def test_svd(routine, dt, mode, tmp_path):
    m, n = 5, 3
    a = _rand(dt, (2, m, n))
    a[0, 0, 0] = np.inf
    ucols, vtrows = (m, n) if mode == "A" else (n, n)
    text = _cc(f"lapack_{P[dt]}{routine}_ffi", [f"{dt}[2,{m},{n}]"],
               f"({dt}[2,{m},{n}], {REAL[dt]}[2,{n}], {dt}[2,{m},{ucols}]{{1,2,0}}, "
               f"{dt}[2,{vtrows},{n}], s32[2])", f"{{mode = {ord(mode)} : ui8}}")
    ref, got = _both(text, a, tmp_path=tmp_path)
    np.testing.assert_array_equal(got[4], ref[4])
    np.testing.assert_array_equal(got[4], [1, 0])
    np.testing.assert_array_equal(got[0], ref[0])
    _close(ref[1], got[1], dt)
    if mode == "N":
        np.testing.assert_array_equal(got[2], 0)
        np.testing.assert_array_equal(got[3], 0)
        return
    assert np.isnan(got[2][0]).all() and np.isnan(got[3][0]).all()
    u, s, vt = got[2][1], got[1][1], got[3][1]
    np.testing.assert_allclose(u[:, :n] @ (s[:, None] * vt[:n]), a[1], rtol=TOL[dt] * 10,
                               atol=TOL[dt] * 10)
    # u's columns and vt's rows carry one joint phase per singular value
    ru, rvt = ref[2][1][:, :n], ref[3][1][:n]
    k = np.argmax(np.abs(ru), axis=0)
    ph = ru[k, range(n)] / u[k, range(n)]
    _close(ru, (u[:, :n] * ph).astype(ru.dtype), dt)
    _close(rvt, (vt[:n] * np.conj(ph)[:, None]).astype(rvt.dtype), dt)


@pytest.mark.parametrize("dt", list(NP))
def test_geev(dt, tmp_path):
    n = 4
    a = _rand(dt, (2, n, n))
    a[1, 0, 1] = np.nan
    c = CPLX[dt]
    if dt.startswith("c"):
        result = f"({dt}[2,{n}], {c}[2,{n},{n}], {c}[2,{n},{n}], s32[2])"
    else:
        result = f"({dt}[2,{n}], {dt}[2,{n}], {c}[2,{n},{n}], {c}[2,{n},{n}], s32[2])"
    text = _cc(f"lapack_{P[dt]}geev_ffi", [f"{dt}[2,{n},{n}]"], result,
               "{compute_left = 78 : ui8, compute_right = 86 : ui8}")
    ref, got = _both(text, a, tmp_path=tmp_path)
    np.testing.assert_array_equal(got[-1], ref[-1])
    np.testing.assert_array_equal(got[-1], [0, 1])
    np.testing.assert_array_equal(got[-3], 0)
    if dt.startswith("c"):
        w, rw = got[0], ref[0]
    else:
        w, rw = got[0] + 1j * got[1], ref[0] + 1j * ref[1]
        np.testing.assert_array_equal(got[1][1], 0)
    assert np.isnan(w[1].real).all() and np.isnan(got[-2][1].real).all()
    vr = got[-2][0]
    np.testing.assert_allclose(a[0] @ vr, vr * w[0][None, :], atol=TOL[dt] * 100)
    np.testing.assert_allclose(np.sort_complex(w[0]), np.sort_complex(rw[0]), rtol=TOL[dt] * 10)


def test_empty_and_unbatched(tmp_path):
    text = _cc("lapack_dgesdd_ffi", ["f64[0,3]"], "(f64[0,3], f64[0], f64[0,0], f64[0,3], s32[])",
               "{mode = 83 : ui8}")
    ref, got = _both(text, np.zeros((0, 3)), tmp_path=tmp_path)
    assert [g.shape for g in got] == [r.shape for r in ref]
    np.testing.assert_array_equal(got[4], 0)


def test_ir_calls_only_table_symbols():
    ir_text = emit_llvm(hloc.parse(_cc("lapack_sgesdd_ffi", ["f32[4,4]"],
                                       "(f32[4,4], f32[4], f32[4,4], f32[4,4], s32[])",
                                       "{mode = 65 : ui8}")), optimized=False)
    declared = {line.split("@")[1].split("(")[0].strip('"') for line in ir_text.splitlines()
                if line.startswith("declare")}
    assert "scipy_sgesdd_64_" in declared
    assert declared - {d for d in declared if d.startswith("llvm.")} <= runtime.ALLOWED


def test_missing_lapack_is_a_clear_error(monkeypatch):
    from hloc.diagnostics import UnsupportedError
    table = dict(runtime.resolve_all())
    table.pop("scipy_sgeqrf_64_")
    monkeypatch.setattr(runtime, "_resolved", table)
    module = hloc.parse(_cc("lapack_sgeqrf_ffi", ["f32[3,3]"], "(f32[3,3], f32[3])"))
    with pytest.raises(UnsupportedError, match="scipy_sgeqrf_64_.*--backend interpreter"):
        compile_module(module, cache_dir=None)
