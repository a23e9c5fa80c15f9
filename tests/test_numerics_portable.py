"""Interpreter numerics do not depend on the CPU NumPy runs on (issue 8).

NumPy dispatches exp, log, cbrt, pow, atan2, asin ... to AVX-512 loops where it can, and
those differ from its other loops in the last bit; the interpreter therefore calls the
platform libm's scalar routines (hloc.interp.libm) as HloEvaluator does. Here every
transcendental kernel runs on a table of inputs twice, in subprocesses with NumPy's default
CPU features and limited to AVX2 (NPY_ENABLE_CPU_FEATURES="X86_V2 X86_V3"), and the bits
must be identical. Values are compared with libm through Python's math module (the same
routine, so the same bits) where math has the function; cbrt is exact on perfect cubes.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from hloc.interp import libm
from hloc.interp import numerics as N
from hloc.ir.dtypes import DTYPES

AVX2_ONLY = {"NPY_ENABLE_CPU_FEATURES": "X86_V2 X86_V3"}

UNARY = ("exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "sqrt",
         "rsqrt", "cbrt", "sine", "cosine", "tan", "tanh", "erf", "acos", "acosh", "asin",
         "asinh", "atan", "atanh", "sinh", "cosh")
BINARY = ("power", "atan2", "divide", "remainder", "multiply")
TYPES = ("f64", "f32", "bf16", "f16", "c64", "c128")

_CHILD = r"""
import json, sys
import numpy as np
import numpy._core._multiarray_umath as mu
from hloc.interp import numerics as N
from hloc.ir.dtypes import DTYPES
unary, binary, types = json.loads(sys.argv[1])
rng = np.random.default_rng(8)
n = 4000
base = np.concatenate([rng.uniform(-4, 4, n), rng.uniform(-1, 1, n),
                       np.ldexp(rng.uniform(0.5, 1, n), rng.integers(-80, 80, n))
                       * rng.choice([-1.0, 1.0], n),
                       [0.0, -0.0, np.inf, -np.inf, np.nan, -27.0, 27.0, 0.125, 1e-310, 700.0]])
other = np.roll(base, 11)
out = {"x86_v4": bool(mu.__cpu_features__.get("X86_V4", False))}
with np.errstate(all="ignore"):
    for t in types:
        dt = DTYPES[t]
        x = base.astype(dt.np) if dt.kind == "float" else (base + 1j * other).astype(dt.np)
        y = other.astype(dt.np) if dt.kind == "float" else (other - 0.5j * base).astype(dt.np)
        for op in unary:
            try:
                r = N.UNARY[op](dt, x)
            except N.Unsupported:
                continue
            out[f"{op}:{t}"] = np.ascontiguousarray(r).view(np.uint8).tobytes().hex()
        for op in binary:
            try:
                r = N.binary(op, dt, x, y)
            except (N.Unsupported, KeyError):
                continue
            out[f"{op}:{t}"] = np.ascontiguousarray(r).view(np.uint8).tobytes().hex()
print(json.dumps(out))
"""


def _child(env_extra):
    env = dict(os.environ, **env_extra)
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([UNARY, BINARY, TYPES])],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _has_avx512() -> bool:
    import numpy._core._multiarray_umath as mu
    return bool(mu.__cpu_features__.get("X86_V4", False))


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not _has_avx512(),
                    reason="needs an x86-64 CPU with AVX-512 to compare both NumPy paths")
def test_results_are_bit_identical_with_and_without_avx512():
    full = _child({})
    avx2 = _child(AVX2_ONLY)
    assert full.pop("x86_v4") is True
    assert avx2.pop("x86_v4") is False, "NPY_ENABLE_CPU_FEATURES did not take effect"
    assert full.keys() == avx2.keys() and len(full) >= 100, len(full)
    differ = sorted(k for k in full if full[k] != avx2[k])
    assert not differ, differ


def test_libm_kernels_are_the_platform_routines():
    # Python's math module calls the same libm functions: bit-identical on any machine.
    xs = [0.1, -0.7, 2.5, 30.0, 1e-300, 700.0, -745.5]
    names = {"asin": "asin", "acos": "acos", "atan": "atan", "asinh": "asinh",
             "acosh": "acosh", "atanh": "atanh"}
    for name in libm.UNARY:
        fn = getattr(math, names.get(name, name))
        for x in xs:
            try:
                want = fn(x)
            except (ValueError, OverflowError):
                continue
            got = libm.apply(name, x).item()
            assert got == want or (math.isnan(got) and math.isnan(want)), (name, x)
    assert libm.apply("pow", 2.0, 0.5).item() == math.pow(2.0, 0.5)
    assert libm.apply("atan2", -0.0, -1.0).item() == math.atan2(-0.0, -1.0)
    assert libm.apply("exp", np.zeros((2, 0))).shape == (2, 0)


def test_cbrt_is_exact_on_perfect_cubes():
    f64 = DTYPES["f64"]
    x = np.array([-27.0, 8.0, 0.125, -3375.0, 2.0 ** 60, -0.0, np.inf, np.nan, 1e308])
    with np.errstate(all="ignore"):
        r = N.UNARY["cbrt"](f64, x)
    assert r[:5].tolist() == [-3.0, 2.0, 0.5, -15.0, 2.0 ** 20]
    assert math.copysign(1, r[5]) == -1 and r[6] == np.inf and np.isnan(r[7])
    # Elsewhere libm's cbrt, within 1 ulp of the true root (3 ulp once cubed, + rounding).
    assert abs(r[8] ** 3 / 1e308 - 1) <= 4 * 2.0 ** -52
