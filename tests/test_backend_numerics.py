"""One table of numeric edge cases, checked on every executor (the interpreter and the
compiled back end in both numerics modes): integer x/0 and INT_MIN/-1, shifts by >= the
bit width, NaN-propagating maximum/minimum and signed zeros, f16/bf16 rounding,
saturating float->int conversion, TOTALORDER compares. Plus what only the modes differ
in (FTZ/DAZ), and the index fuzz: extreme values in every index operand never crash and
give the interpreter's values.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.compare import ErrorSpec, near
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.runner import run_module

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
MIN32, MAX32 = -2**31, 2**31 - 1
NAN = float("nan")

# (op text producing %r from %a, %b of the given types, a, b, expected)
CASES = [
    ("s32", "divide", [7, -7, 5, MIN32, MIN32], [2, 2, 0, -1, 1], [3, -3, -1, MIN32, MIN32]),
    ("s32", "remainder", [7, -7, 5, MIN32, MIN32], [2, 2, 0, -1, 1], [1, -1, 5, 0, 0]),
    ("u32", "divide", [7, 5, 0], [2, 0, 0], [3, 2**32 - 1, 2**32 - 1]),
    ("u32", "remainder", [7, 5], [2, 0], [1, 5]),
    ("s32", "shift-left", [1, 1, 1, 1], [0, 31, 32, -1], [1, MIN32, 0, 0]),
    ("s32", "shift-right-arithmetic", [-8, -8, 8, -1], [1, 40, 40, 31], [-4, -1, 0, -1]),
    ("s32", "shift-right-logical", [-8, 8, -1], [1, 32, 31], [2**31 - 4, 0, 1]),
    ("s8", "multiply", [100, -128], [3, -1], [44, -128]),
    ("s32", "power", [2, 2, -1, -1, 1, 3], [10, -1, -3, -2, -5, 0], [1024, 0, -1, 1, 1, 1]),
    ("f32", "maximum", [NAN, 1.0, -0.0, 0.0], [1.0, NAN, 0.0, -0.0], [NAN, NAN, 0.0, 0.0]),
    ("f32", "minimum", [NAN, 1.0, -0.0, 0.0], [1.0, NAN, 0.0, -0.0], [NAN, NAN, -0.0, -0.0]),
    ("f32", "divide", [1.0, -1.0, 0.0], [0.0, 0.0, 0.0], [np.inf, -np.inf, NAN]),
    ("bf16", "add", [1.0, 256.0], [2.0**-8, 1.0], [1.0, 256.0]),
    ("f16", "multiply", [1000.0, 2.0**-14], [1000.0, 2.0**-2], [np.inf, 2.0**-16]),
]
CONVERTS = [   # (from, to, values, expected)
    ("f32", "s32", [NAN, 3e9, -3e9, -2.7, 2.7], [0, MAX32, MIN32, -2, 2]),
    ("f32", "u8", [NAN, 300.0, -5.0, 255.9], [0, 255, 0, 255]),
    ("f64", "f16", [1.0 + 2.0**-11 + 2.0**-40, 70000.0], [1.0 + 2.0**-10, np.inf]),
    ("s32", "s8", [300, -129], [44, 127]),     # wraps
    ("f32", "bf16", [1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8], [1.0, 1.0 + 2.0**-6]),
]


def _np(dt):
    from hloc.ir.dtypes import DTYPES
    return DTYPES[dt].np


def _binary_module(dt, op, n):
    return (f"HloModule m\n\nENTRY e {{\n  a = {dt}[{n}] parameter(0)\n"
            f"  b = {dt}[{n}] parameter(1)\n  ROOT r = {dt}[{n}] {op}(a, b)\n}}\n")


def _convert_module(src, dst, n):
    return (f"HloModule m\n\nENTRY e {{\n  a = {src}[{n}] parameter(0)\n"
            f"  ROOT r = {dst}[{n}] convert(a)\n}}\n")


EXECUTORS = ["interpreter", "xla-cpu", "ieee"]


def _run(text, args, executor, tmp_path):
    module = hloc.parse(text)
    if executor == "interpreter":
        return run_module(module, args).value
    return compile_module(module, numerics=executor, cache_dir=tmp_path).run(args)


def _same(got, want):
    """Equal values; floats also equal in sign (NaN == NaN, any sign)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind in "biu" and want.dtype.kind in "biu":
        return np.array_equal(got, want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(g) & np.isnan(w)
    return bool(np.all(nan | ((g == w) & (np.signbit(g) == np.signbit(w)))))


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_binary_edge_cases(case, executor, tmp_path):
    dt, op, a, b, want = case
    t = _np(dt)
    args = [np.array(a).astype(t) if dt.startswith(("f", "b")) else np.array(a, dtype=np.int64).astype(t),
            np.array(b).astype(t) if dt.startswith(("f", "b")) else np.array(b, dtype=np.int64).astype(t)]
    got = _run(_binary_module(dt, op, len(a)), args, executor, tmp_path)
    exp = np.array(want).astype(t) if dt.startswith(("f", "b")) else np.array(want, dtype=np.int64).astype(t)
    assert _same(got, exp), (got, exp)


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("case", CONVERTS, ids=lambda c: f"{c[0]}-{c[1]}")
def test_convert_edge_cases(case, executor, tmp_path):
    src, dst, a, want = case
    got = _run(_convert_module(src, dst, len(a)), [np.array(a).astype(_np(src))], executor, tmp_path)
    exp = np.array(want, dtype=np.float64).astype(_np(dst)) if dst[0] in "fb" else np.array(want).astype(_np(dst))
    assert _same(got, exp), (got, exp)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_totalorder_compare(executor, tmp_path):
    text = ("HloModule m\n\nENTRY e {\n  a = f32[6] parameter(0)\n  b = f32[6] parameter(1)\n"
            "  ROOT r = pred[6] compare(a, b), direction=LT, type=TOTALORDER\n}\n")
    a = np.array([-0.0, -NAN, 1.0, -np.inf, NAN, 0.0], np.float32)
    b = np.array([0.0, -np.inf, NAN, -1.0, np.inf, -0.0], np.float32)
    got = _run(text, [a, b], executor, tmp_path)
    assert np.asarray(got).tolist() == [True, True, True, True, False, False]


def test_ftz_daz_only_in_xla_cpu_numerics(tmp_path):
    text = ("HloModule m\n\nENTRY e {\n  a = f32[2] parameter(0)\n  b = f32[2] parameter(1)\n"
            "  ROOT r = f32[2] multiply(a, b)\n}\n")
    args = [np.array([1e-40, 1e-35], np.float32), np.array([1e30, 1e-5], np.float32)]
    xla = compile_module(hloc.parse(text), numerics="xla-cpu", cache_dir=tmp_path).run(args)
    ieee = compile_module(hloc.parse(text), numerics="ieee", cache_dir=tmp_path).run(args)
    assert xla.tolist() == [0.0, 0.0]
    np.testing.assert_allclose(ieee, [1e-10, 1e-40], rtol=1e-3)
    # the caller's MXCSR is restored: NumPy still computes with subnormals afterwards
    assert np.float32(1e-40) * np.float32(1.0) != 0


# ---------------------------------------------------------------------------
# Index fuzz: every integer parameter of the index-heavy dumps gets extreme values.

FUZZ = ["dynamic_slice_oob", "gather_oob_modes", "scatter_oob_modes", "gather_indexing",
        "scatter_ops", "segment_ops", "searchsorted_interp", "tf_gather_scatter"]


def _extremes(shape, dtype, rng, dims):
    info = np.iinfo(dtype)
    pool = np.array(sorted({info.min, info.max, -1 if info.min < 0 else 0, 0, 1,
                            *[min(d, info.max) for d in dims], *[min(d + 1, info.max) for d in dims]}),
                    dtype=np.int64)
    return rng.choice(pool, size=shape).astype(dtype)


@pytest.mark.parametrize("prog", FUZZ)
def test_index_fuzz_matches_interpreter(prog, tmp_path):
    for stage in ("before", "after"):
        module = hloc.parse_file(DUMPS / f"{prog}.{stage}_optimizations.hlo")
        d = load_npz(DUMPS / f"{prog}.npz")
        ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
        try:
            exe = compile_module(module, numerics="ieee", cache_dir=tmp_path)
        except hloc.diagnostics.UnsupportedError:
            continue      # listed and checked in test_backend_dumps
        dims = sorted({n for a in ins for n in np.shape(a)})
        rng = np.random.default_rng(7)
        for _ in range(4):
            args = [_extremes(a.shape, a.dtype, rng, dims) if np.asarray(a).dtype.kind in "iu" else a
                    for a in ins]
            bound = bind_arguments(module, args)
            shape = module.entry.root.shape
            ref = flatten_leaves(run_module(module, bound).value, shape)
            got = flatten_leaves(exe.run(bound), shape)
            for e, g in zip(ref, got):
                e, g = np.asarray(e), np.asarray(g)
                if e.dtype.kind in "biu":
                    assert np.array_equal(e, g), prog
                else:
                    assert near(e, g, ErrorSpec(abs=1e-3, rel=1e-3)).ok, prog


@pytest.mark.parametrize("alg,n", [("rng_philox", 3), ("rng_philox", 2), ("rng_three_fry", 2),
                                   ("rng_default", 2)])
def test_rng_bit_generator_bit_exact(alg, n, tmp_path):
    for shape in ("u32[5,3]", "u32[]", "u64[7]", "u8[4,6]", "u32[3,5]", "u16[9]"):
        text = (f"HloModule m\nENTRY e {{\n  s = u64[{n}] parameter(0)\n"
                f"  ROOT r = (u64[{n}], {shape}) rng-bit-generator(s), algorithm={alg}\n}}\n")
        module = hloc.parse(text)
        state = np.array([2**64 - 3, 2**64 - 1, 12345][:n], np.uint64)
        got = compile_module(module, cache_dir=tmp_path).run([state])
        ref = run_module(module, [state]).value
        for g, r in zip(got, ref):
            assert np.array_equal(g, r), (alg, n, shape)


FFTS = [("FFT", "c64[3,8]", "c64[3,8]", "{8}"), ("IFFT", "c128[4,6]", "c128[4,6]", "{4,6}"),
        ("RFFT", "f32[2,10]", "c64[2,6]", "{10}"), ("IRFFT", "c64[2,6]", "f32[2,10]", "{10}"),
        ("IRFFT", "c64[3,4,5]", "f32[3,4,8]", "{4,8}"), ("RFFT", "f64[5,6]", "c128[5,4]", "{5,6}"),
        ("IRFFT", "c128[5,4]", "f64[5,7]", "{5,7}"), ("FFT", "c64[5]", "c64[8]", "{8}")]


@pytest.mark.parametrize("case", FFTS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_fft_matches_interpreter(case, tmp_path):
    kind, ins, outs, lengths = case
    text = (f"HloModule m\nENTRY e {{\n  a = {ins} parameter(0)\n"
            f"  ROOT r = {outs} fft(a), fft_type={kind}, fft_length={lengths}\n}}\n")
    module = hloc.parse(text)
    dims = [int(x) for x in ins[ins.index("[") + 1:-1].split(",")]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(dims) + (1j * rng.standard_normal(dims) if ins[0] == "c" else 0)
    x = x.astype(module.entry.parameters[0].shape.dtype.np)
    got = compile_module(module, cache_dir=tmp_path).run([x])
    assert near(run_module(module, [x]).value, got, ErrorSpec(1e-5, 1e-5)).ok


COMPLEX_UNARY = ["exponential", "log", "sqrt", "rsqrt", "sine", "cosine", "tan", "tanh", "sinh",
                 "cosh", "logistic", "sign", "abs", "negate"]


@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_unary_matches_interpreter(dt, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64) * 3 + 1j * rng.standard_normal(64) * 3
    x[:4] = [0, 1j, -1, -2 - 0j]
    x = x.astype(np.complex64 if dt == "c64" else np.complex128)
    for op in COMPLEX_UNARY:
        rdt = {"c64": "f32", "c128": "f64"}[dt] if op == "abs" else dt
        text = (f"HloModule m\nENTRY e {{\n  a = {dt}[64] parameter(0)\n"
                f"  ROOT r = {rdt}[64] {op}(a)\n}}\n")
        module = hloc.parse(text)
        got = compile_module(module, cache_dir=tmp_path).run([x])
        assert near(run_module(module, [x]).value, got, ErrorSpec(1e-5, 1e-5)).ok, op


@pytest.mark.parametrize("dt", ["f32", "c64"])
def test_triangular_solve_matches_interpreter(dt, tmp_path):
    import itertools
    rng = np.random.default_rng(0)
    for left, lower, unit, tr in itertools.product([True, False], [True, False], [True, False],
                                                   ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]):
        bsh = "[2,4,3]" if left else "[2,3,4]"
        flag = lambda v: "true" if v else "false"   # noqa: E731
        text = (f"HloModule m\nENTRY e {{\n  a = {dt}[2,4,4] parameter(0)\n  b = {dt}{bsh} parameter(1)\n"
                f"  ROOT r = {dt}{bsh} triangular-solve(a, b), left_side={flag(left)}, "
                f"lower={flag(lower)}, unit_diagonal={flag(unit)}, transpose_a={tr}\n}}\n")
        module = hloc.parse(text)
        npd = module.entry.parameters[0].shape.dtype.np
        a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)
        if dt == "c64":
            a = a + 1j * rng.standard_normal((2, 4, 4))
        a = a.astype(npd)
        b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4)).astype(npd)
        got = compile_module(module, cache_dir=tmp_path).run([a, b])
        assert near(run_module(module, [a, b]).value, got, ErrorSpec(1e-4, 1e-4)).ok, (left, lower, unit, tr)


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("lower", ["true", "false"])
def test_cholesky_matches_interpreter(dt, lower, tmp_path):
    text = (f"HloModule m\nENTRY e {{\n  a = {dt}[3,4,4] parameter(0)\n"
            f"  ROOT r = {dt}[3,4,4] cholesky(a), lower={lower}\n}}\n")
    module = hloc.parse(text)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 4))
    x = x @ x.transpose(0, 2, 1) + np.eye(4)
    x[2, 0, 0] = -5                       # not positive definite: all NaN
    x = x.astype(module.entry.parameters[0].shape.dtype.np)
    got = compile_module(module, cache_dir=tmp_path).run([x])
    assert near(run_module(module, [x]).value, got, ErrorSpec(1e-4, 1e-4)).ok
    assert np.isnan(got[2]).all()


NARROW_FLOATS = ["f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4", "f8e5m2fnuz",
                 "f8e4m3fnuz", "f8e8m0fnu", "f4e2m1fn"]


@pytest.mark.parametrize("dt", NARROW_FLOATS)
def test_narrow_floats_match_interpreter(dt, tmp_path):
    """f8/f4: arithmetic rounded after each op, and conversion from f32 of every kind of
    value (ties, subnormals, overflow, NaN, signed zero) exactly as ml_dtypes."""
    from hloc.ir.dtypes import DTYPES
    text = (f"HloModule m\nENTRY e {{\n  a = f32[64] parameter(0)\n  b = f32[64] parameter(1)\n"
            f"  ca = {dt}[64] convert(a)\n  cb = {dt}[64] convert(b)\n"
            f"  s = {dt}[64] add(ca, cb)\n  p = {dt}[64] multiply(ca, cb)\n"
            f"  w = f32[64] convert(p)\n  ROOT r = ({dt}[64], {dt}[64], f32[64]) tuple(s, p, w)\n}}\n")
    module = hloc.parse(text)
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(64) * 10.0 ** rng.integers(-8, 5, 64)).astype(np.float32)
    a[:6] = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e30]
    b = (rng.standard_normal(64) * 4).astype(np.float32)
    got = compile_module(module, numerics="ieee", cache_dir=tmp_path).run([a, b])
    ref = run_module(module, [a, b]).value
    for g, r in zip(got, ref):
        assert np.array_equal(np.asarray(g).view(np.uint8) if g.dtype.itemsize == 1 else g,
                              np.asarray(r).view(np.uint8) if r.dtype.itemsize == 1 else r,
                              equal_nan=g.dtype.itemsize != 1), dt
    _ = DTYPES
