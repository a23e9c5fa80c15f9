"""Compiled sort (merge sort) and fft (radix-2 / Bluestein) against the interpreter.

Sort must equal the interpreter bit for bit (the same stable order, NaN and -0.0
included); fft must be within ErrorSpec(1e-5, 1e-5) of the interpreter (numpy.fft).
"""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.compare import ErrorSpec, near
from hloc.runner import run_module


def _both(text, args, tmp_path):
    module = hloc.parse(text)
    want = run_module(module, args).value
    got = compile_module(module, cache_dir=tmp_path).run(args)
    return want, got


def _flat(v):
    return list(v) if isinstance(v, (tuple, list)) else [v]


def _same_bits(want, got):
    for w, g in zip(_flat(want), _flat(got)):
        w, g = np.asarray(w), np.asarray(g)
        assert w.shape == g.shape and w.dtype == g.dtype
        assert w.tobytes() == g.tobytes()


CMP = """
cmp {{
  p0 = {t}[] parameter(0)
  p1 = {t}[] parameter(1)
{extra}  ROOT c = pred[] compare(p0, p1), direction={d}{ctype}
}}
"""


def _sort_text(t, dims, dim, direction="LT", ctype="", extra_ops=(), layout=""):
    params = "".join(f"  q{2 * k + 2} = {et}[] parameter({2 * k + 2})\n  q{2 * k + 3} = {et}[] "
                     f"parameter({2 * k + 3})\n" for k, et in enumerate(extra_ops))
    comp = CMP.format(t=t, d=direction, ctype=f", type={ctype}" if ctype else "", extra=params)
    shp = ",".join(map(str, dims))
    types = [t] + list(extra_ops)
    ps = "".join(f"  a{k} = {et}[{shp}]{layout} parameter({k})\n" for k, et in enumerate(types))
    if len(types) == 1:
        out = f"{t}[{shp}]{layout}"
    else:
        out = "(" + ", ".join(f"{et}[{shp}]{layout}" for et in types) + ")"
    names = ", ".join(f"a{k}" for k in range(len(types)))
    return (f"HloModule m\n{comp}\nENTRY e {{\n{ps}  ROOT s = {out} sort({names}), "
            f"dimensions={{{dim}}}, is_stable=true, to_apply=cmp\n}}\n")


SIZES = [1, 2, 3, 5, 7, 8, 9, 17, 64, 100, 1000]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("direction,ctype", [("LT", ""), ("GT", ""), ("LT", "TOTALORDER"),
                                             ("GT", "TOTALORDER")])
def test_sort_f32_ties_nan_negzero(n, direction, ctype, tmp_path):
    rng = np.random.default_rng(n)
    x = rng.integers(-3, 4, size=(3, n)).astype(np.float32)      # many ties
    x[rng.random((3, n)) < 0.1] = np.nan
    x[rng.random((3, n)) < 0.1] = -0.0
    x[rng.random((3, n)) < 0.05] = np.inf
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), (3, n)).copy()
    text = _sort_text("f32", [3, n], 1, direction, ctype, extra_ops=["s32"])
    _same_bits(*_both(text, [x, idx], tmp_path))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_sort_any_dimension_three_operands(dim, tmp_path):
    rng = np.random.default_rng(dim)
    dims = [4, 37, 5]
    keys = rng.integers(0, 5, size=dims).astype(np.int32)
    a = rng.standard_normal(dims).astype(np.float64)
    c = rng.integers(0, 2, size=dims).astype(np.bool_)
    text = _sort_text("s32", dims, dim, "GT", extra_ops=["f64", "pred"])
    _same_bits(*_both(text, [keys, a, c], tmp_path))


def test_sort_non_default_layout(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 9, size=(6, 50)).astype(np.float32)
    text = _sort_text("f32", [6, 50], 1, "LT", layout="{0,1}")
    _same_bits(*_both(text, [x], tmp_path))


def test_sort_custom_comparator_and_large_row(tmp_path):
    # order by |x| descending, ties by the second key ascending (a lexicographic comparator)
    text = """HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  aa = f32[] abs(a)
  bb = f32[] abs(b)
  gt = pred[] compare(aa, bb), direction=GT
  eq = pred[] compare(aa, bb), direction=EQ
  lt = pred[] compare(i, j), direction=LT
  both = pred[] and(eq, lt)
  ROOT r = pred[] or(gt, both)
}
ENTRY e {
  x = f32[100000] parameter(0)
  k = s32[100000] parameter(1)
  ROOT s = (f32[100000], s32[100000]) sort(x, k), dimensions={0}, to_apply=cmp
}
"""
    rng = np.random.default_rng(7)
    x = rng.integers(-50, 50, size=100000).astype(np.float32)
    k = rng.integers(0, 1000, size=100000).astype(np.int32)
    _same_bits(*_both(text, [x, k], tmp_path))


def test_sort_large_row_f32(tmp_path):
    rng = np.random.default_rng(11)
    x = rng.standard_normal(100000).astype(np.float32)
    x[::97] = np.nan
    text = _sort_text("f32", [100000], 0, "LT", "TOTALORDER")
    _same_bits(*_both(text, [x], tmp_path))


FFT_SIZES = [1, 2, 3, 5, 7, 8, 64, 100, 1000, 4096]


def _fft_case(kind, dt, batch, lengths):
    """(input type, output type) text of an fft of `kind` over `lengths` with `batch` dims."""
    real, cplx = dt, {"f32": "c64", "f64": "c128"}[dt]
    last = lengths[-1]
    half = list(lengths[:-1]) + [last // 2 + 1]
    dims = lambda ds: ",".join(map(str, list(batch) + list(ds)))   # noqa: E731
    if kind in ("FFT", "IFFT"):
        return f"{cplx}[{dims(lengths)}]", f"{cplx}[{dims(lengths)}]"
    if kind == "RFFT":
        return f"{real}[{dims(lengths)}]", f"{cplx}[{dims(half)}]"
    return f"{cplx}[{dims(half)}]", f"{real}[{dims(lengths)}]"


def _run_fft(kind, dt, batch, lengths, tmp_path, spec=ErrorSpec(1e-5, 1e-5)):
    ins, outs = _fft_case(kind, dt, batch, lengths)
    text = (f"HloModule m\nENTRY e {{\n  a = {ins} parameter(0)\n"
            f"  ROOT r = {outs} fft(a), fft_type={kind}, fft_length={{{','.join(map(str, lengths))}}}\n}}\n")
    module = hloc.parse(text)
    shape = module.entry.parameters[0].shape
    rng = np.random.default_rng(sum(lengths) + len(batch))
    x = rng.standard_normal(shape.dims)
    if shape.dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape.dims)
    x = x.astype(shape.dtype.np)
    want, got = _both(text, [x], tmp_path)
    res = near(want, got, spec)
    assert res.ok, res
    # the values really are transforms (guards against a vacuous comparison)
    assert np.abs(np.asarray(want)).max() > 0


@pytest.mark.parametrize("n", FFT_SIZES)
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_fft_1d_sizes(kind, n, tmp_path):
    _run_fft(kind, "f32", [2], [n], tmp_path)


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("lengths", [[1000], [4096], [8, 5], [3, 7, 2]])
def test_fft_f64_tight(kind, lengths, tmp_path):
    _run_fft(kind, "f64", [], lengths, tmp_path, ErrorSpec(1e-10, 1e-10))


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("lengths", [[5, 8], [64, 100], [4, 6, 10], [16, 16, 16], [1, 3, 1]])
def test_fft_nd_batched(kind, lengths, tmp_path):
    _run_fft(kind, "f32", [3, 2], lengths, tmp_path)


@pytest.mark.parametrize("text", [
    # non-default layouts on both sides
    "a = c64[3,8,5]{0,1,2} parameter(0)\n  ROOT r = c64[3,8,5]{1,0,2} fft(a), fft_type=FFT, fft_length={8,5}",
    "a = f64[4,6]{0,1} parameter(0)\n  ROOT r = c128[4,4]{0,1} fft(a), fft_type=RFFT, fft_length={6}",
    # fft_length shorter than the operand (truncated input, zero output tail), as numpy's s=
    "a = c64[2,10] parameter(0)\n  ROOT r = c64[2,10] fft(a), fft_type=IFFT, fft_length={7}",
    "a = c128[2,3,9] parameter(0)\n  ROOT r = f64[2,3,16] fft(a), fft_type=IRFFT, fft_length={3,16}",
], ids=["layouts", "rfft-layout", "truncated", "irfft-even"])
def test_fft_layouts_and_lengths(text, tmp_path):
    text = f"HloModule m\nENTRY e {{\n  {text}\n}}\n"
    module = hloc.parse(text)
    shape = module.entry.parameters[0].shape
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape.dims)
    if shape.dtype.kind == "complex":
        x = x + 1j * rng.standard_normal(shape.dims)
    x = x.astype(shape.dtype.np)
    want, got = _both(text, [x], tmp_path)
    assert near(want, got, ErrorSpec(1e-5, 1e-5)).ok


def test_sort_matches_merge_order_not_insertion_order_with_nan(tmp_path):
    """A FLOAT LT meeting NaN is no strict weak order: the order is the interpreter's merge
    sort's (an insertion sort gives another order on this input)."""
    x = np.array([3, np.nan, 1, 2, np.nan, 0, 5, 4, 7, 6, np.nan, 9, 8, -1, np.nan, 2, 1],
                 dtype=np.float32)
    text = _sort_text("f32", [x.size], 0, "LT")
    want, got = _both(text, [x], tmp_path)
    _same_bits(want, got)
    ins = list(x)                          # a stable insertion sort under the same compare
    for i in range(1, len(ins)):
        j = i
        while j > 0 and ins[j] < ins[j - 1]:
            ins[j - 1], ins[j] = ins[j], ins[j - 1]
            j -= 1
    assert np.asarray(ins, dtype=np.float32).tobytes() != np.asarray(want).tobytes()


def test_sort_rows_split_over_work_groups(tmp_path):
    from hloc.backend import parallel
    text = _sort_text("f32", [512, 1000], 1, "GT", "TOTALORDER", extra_ops=["s32"])
    module = hloc.parse(text)
    assert parallel.work_groups(module.entry.root) > 1       # the rows really are split
    rng = np.random.default_rng(13)
    x = rng.integers(0, 50, size=(512, 1000)).astype(np.float32)
    idx = np.broadcast_to(np.arange(1000, dtype=np.int32), (512, 1000)).copy()
    _same_bits(*_both(text, [x, idx], tmp_path))
