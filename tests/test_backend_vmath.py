"""The xla-cpu f32 exp (hloc.backend.vmath): within 1 ulp of exp in f64 over the whole
input range, exact at 0, overflow to inf, underflow to 0 (FTZ), NaN kept — through both
ways of scaling by 2^n (AVX-512's ldexp, and exponent bits elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, vmath


def _inputs():
    n = 1 << 17
    pos = np.linspace(0, 0x42B20000, n, dtype=np.uint32).view(np.float32)     # 0 .. 89
    neg = -np.linspace(0, 0x42D00000, n, dtype=np.uint32).view(np.float32)    # 0 .. -104
    rng = np.random.default_rng(1)
    dense = rng.uniform(-20, 20, n).astype(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229,
                        88.5, 89.5, -87.33654, -88.0, -103.9, -1e4, 1e4, 1e-30, -1e-30],
                       np.float32)
    return np.concatenate([pos, neg, dense, special])


@pytest.mark.parametrize("vscalef", [True, False])
def test_xla_cpu_exp_within_one_ulp(vscalef, monkeypatch, tmp_path):
    if vscalef:
        feats = __import__("llvmlite.binding", fromlist=["x"]).get_host_cpu_features().flatten()
        if "+avx512f" not in feats.split(","):
            pytest.skip("host without AVX-512")
    else:
        monkeypatch.setattr(vmath, "has_vscalef", lambda mcx: False)
    x = _inputs()
    text = (f"HloModule m\nENTRY e {{\n  x = f32[{x.size}] parameter(0)\n"
            f"  ROOT y = f32[{x.size}] exponential(x)\n}}\n")
    assert ("llvm.ldexp" in emit_llvm(hloc.parse(text), numerics="xla-cpu", optimized=False)) == vscalef
    y = np.asarray(compile_module(hloc.parse(text), numerics="xla-cpu", cache_dir=tmp_path).run([x]))
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    normal = np.isfinite(ref32) & (ref32 >= tiny)
    ulp = np.abs(y[normal] - ref[normal]) / np.spacing(ref32[normal]).astype(np.float64)
    assert ulp.max() < 1.0, (ulp.max(), x[normal][ulp.argmax()])
    assert np.all(y[ref32 < tiny] == 0)                      # FTZ: flushed, never garbage
    assert np.all(np.isposinf(y[np.isinf(ref32) & ~np.isnan(x)]))
    assert np.isnan(y[np.isnan(x)]).all()
    assert y[x == 0].tolist() == [1.0] * int((x == 0).sum())
