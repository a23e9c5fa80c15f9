"""Dev-only: XLA:CPU's values for narrow-float ops that XLA:CPU normalises before it
expands them (bf16 batch-norm-* computed in f32, f8 logistic in f16); needs JAX
(/work/venv-jax). Writes testdata/numerics/float_normalization/NAME.hlo and NAME.npz
(`argK`, `outK`: the raw bits, unsigned integers of the type's width), read by
tests/test_float_normalization.py.

    /work/venv-jax/bin/python tools/gen_float_normalization_values.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_dumps import run_hlo  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "testdata" / "numerics" / "float_normalization"
BF = ml_dtypes.bfloat16

BN_INFERENCE = """HloModule bn_inference_bf16
ENTRY e {
  x = bf16[512,64] parameter(0)
  s = bf16[64] parameter(1)
  o = bf16[64] parameter(2)
  m = bf16[64] parameter(3)
  v = bf16[64] parameter(4)
  ROOT y = bf16[512,64] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}
"""
BN_TRAINING = """HloModule bn_training_bf16
ENTRY e {
  x = bf16[256,32] parameter(0)
  s = bf16[32] parameter(1)
  o = bf16[32] parameter(2)
  ROOT y = (bf16[256,32], bf16[32], bf16[32]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
}
"""
BN_GRAD = """HloModule bn_grad_bf16
ENTRY e {
  x = bf16[256,32] parameter(0)
  s = bf16[32] parameter(1)
  m = bf16[32] parameter(2)
  v = bf16[32] parameter(3)
  g = bf16[256,32] parameter(4)
  ROOT y = (bf16[256,32], bf16[32], bf16[32]) batch-norm-grad(x, s, m, v, g), epsilon=0.001, feature_index=1
}
"""


def _logistic(name: str, dtype: str) -> str:
    return (f"HloModule logistic_{name}\nENTRY e {{\n  x = {dtype}[256] parameter(0)\n"
            f"  ROOT l = {dtype}[256] logistic(x)\n}}\n")


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def cases():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((512, 64)) * 3).astype(BF)
    yield "bn_inference_bf16", BN_INFERENCE, [
        x, rng.uniform(0.5, 2, 64).astype(BF), rng.standard_normal(64).astype(BF),
        rng.standard_normal(64).astype(BF), rng.uniform(0.1, 3, 64).astype(BF)]
    x = (rng.standard_normal((256, 32)) * 2 + 1).astype(BF)
    yield "bn_training_bf16", BN_TRAINING, [
        x, rng.uniform(0.5, 2, 32).astype(BF), rng.standard_normal(32).astype(BF)]
    yield "bn_grad_bf16", BN_GRAD, [
        (rng.standard_normal((256, 32)) * 2 + 1).astype(BF), rng.uniform(0.5, 2, 32).astype(BF),
        rng.standard_normal(32).astype(BF), rng.uniform(0.1, 3, 32).astype(BF),
        rng.standard_normal((256, 32)).astype(BF)]
    for name, dt in (("f8e4m3fn", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2)):
        yield f"logistic_{name}", _logistic(name, name), [np.arange(256, dtype=np.uint8).view(dt)]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text, args in cases():
        outs = run_hlo(text, args)
        (OUT / f"{name}.hlo").write_text(text)
        arrays = {f"arg{i}": _bits(a) for i, a in enumerate(args)}
        arrays.update({f"out{i}": _bits(a) for i, a in enumerate(outs)})
        np.savez_compressed(OUT / f"{name}.npz", **arrays)
        print(name, [a.shape for a in outs])


if __name__ == "__main__":
    main()
