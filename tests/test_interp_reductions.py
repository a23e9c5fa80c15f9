"""Reductions, windows and sorting (hloc/interp/reductions.py, sorting.py) at their edges.

Orders are HloEvaluator's: reduce folds from init in the operand's layout order and sums
floats in double; reduce-window and select-and-scatter walk windows row-major through
padding and base/window dilation; sort is stable. References are plain loops.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import hloc
import hloc.interp.data_movement  # noqa: F401
import hloc.interp.elementwise  # noqa: F401
import hloc.interp.reductions as red
import hloc.interp.sorting as sorting
from hloc.interp.core import Interpreter

RNG = np.random.default_rng(7)

ADD_F32 = """add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
"""


def run(text, *args):
    return Interpreter(hloc.parse(text)).run(list(args))


# ---------------------------------------------------------------------------
# reduce

def test_reduce_float_add_sums_in_double_like_the_evaluator():
    x = np.array([1e8, 1, -1e8, 1], np.float32)      # f32 left to right would give 1
    out = run(f"""HloModule m
{ADD_F32}
ENTRY e {{ x = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(x, z), dimensions={{0}}, to_apply=add }}""", x)
    assert out == np.float32(2) and out.shape == ()


def test_reduce_iterates_in_layout_order():
    # acc = 2*acc + x weighs each element by its position in the iteration order.
    text = """HloModule m
f { a = s64[] parameter(0)
  b = s64[] parameter(1)
  two = s64[] constant(2)
  m = s64[] multiply(a, two)
  ROOT r = s64[] add(m, b) }
ENTRY e { x = s64[2,3]{LAYOUT} parameter(0)
  z = s64[] constant(0)
  ROOT r = s64[] reduce(x, z), dimensions={0,1}, to_apply=f }"""
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int64)

    def fold(seq):
        acc = 0
        for v in seq:
            acc = 2 * acc + int(v)
        return acc
    assert run(text.replace("LAYOUT", "1,0"), x) == fold(x.ravel())
    assert run(text.replace("LAYOUT", "0,1"), x) == fold(x.T.ravel())


def test_variadic_reduce_argmax_keeps_first_max():
    text = """HloModule m
amax { v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT
  eq = pred[] compare(v0, v1), direction=EQ
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, v0, v1)
  i = s32[] select(keep, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i) }
ENTRY e { x = f32[3,5] parameter(0)
  io = s32[3,5] iota(), iota_dimension=1
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[3], s32[3]) reduce(x, io, ninf, zero), dimensions={1}, to_apply=amax }"""
    x = np.array([[1, 5, 5, 2, 0], [3, 3, 3, 3, 3], [-1, -2, -3, 9, 9]], np.float32)
    v, i = run(text, x)
    np.testing.assert_array_equal(v, [5, 3, 9])
    np.testing.assert_array_equal(i, [1, 0, 3])


@pytest.mark.parametrize("op,dtype", [("add", "s8"), ("multiply", "u16"), ("maximum", "s32"),
                                      ("minimum", "f32"), ("and", "pred"), ("or", "pred"),
                                      ("xor", "u8"), ("maximum", "f16")])
def test_reduce_fast_paths_agree_with_the_sequential_fold(op, dtype):
    np_t = {"s8": np.int8, "u16": np.uint16, "s32": np.int32, "f32": np.float32,
            "pred": np.bool_, "u8": np.uint8, "f16": np.float16}[dtype]
    if np_t == np.bool_:
        x = RNG.integers(0, 2, (4, 37)).astype(bool)
    elif np.issubdtype(np_t, np.integer):
        x = RNG.integers(np.iinfo(np_t).min, np.iinfo(np_t).max, (4, 37)).astype(np_t)
    else:
        x = (RNG.standard_normal((4, 37)) * 10).astype(np_t)
        x[1, 3] = -0.0
    init = {"add": 0, "multiply": 1, "maximum": 0, "minimum": 0, "and": 1, "or": 0,
            "xor": 0}[op]
    text = f"""HloModule m
f {{ a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT r = {dtype}[] {op}(a, b) }}
g {{ a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  c = {dtype}[] {op}(a, b)
  ROOT r = {dtype}[] copy(c) }}
ENTRY e {{ x = {dtype}[4,37] parameter(0)
  z = {dtype}[] constant({'true' if dtype == 'pred' and init else init})
  f = {dtype}[4] reduce(x, z), dimensions={{1}}, to_apply=f
  g = {dtype}[4] reduce(x, z), dimensions={{1}}, to_apply=g
  ROOT t = ({dtype}[4], {dtype}[4]) tuple(f, g) }}"""
    fast, slow = run(text, x)
    assert fast.dtype == np_t
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(np.signbit(fast.astype(np.float64)),
                                  np.signbit(slow.astype(np.float64)))


# ---------------------------------------------------------------------------
# reduce-window

def ref_reduce_window(x, init, sizes, strides, pads, lhs_dil, rhs_dil, f):
    out_dims = []
    for n, w, s, (lo, hi), ld, rd in zip(x.shape, sizes, strides, pads, lhs_dil, rhs_dil):
        base = (n - 1) * ld + 1 + lo + hi if n else lo + hi
        span = (w - 1) * rd + 1
        out_dims.append(max(0, (base - span) // s + 1))
    out = np.full(out_dims, init, x.dtype)
    for oi in itertools.product(*map(range, out_dims)):
        acc = x.dtype.type(init)
        for wi in itertools.product(*map(range, sizes)):
            src = []
            for o, w, s, (lo, _), ld, rd, n in zip(oi, wi, strides, pads, lhs_dil, rhs_dil,
                                                    x.shape):
                p = o * s + w * rd - lo
                if p % ld or not 0 <= p // ld < n:
                    break
                src.append(p // ld)
            else:
                acc = f(acc, x[tuple(src)])
        out[oi] = acc
    return out


def test_reduce_window_dilation_padding_strides_random():
    for _ in range(12):
        shape = tuple(int(v) for v in RNG.integers(1, 6, 2))
        x = RNG.integers(-50, 50, shape).astype(np.int32)
        sizes = [int(v) for v in RNG.integers(1, 4, 2)]
        strides = [int(v) for v in RNG.integers(1, 3, 2)]
        pads = [(int(a), int(b)) for a, b in RNG.integers(-1, 3, (2, 2))]
        ld = [int(v) for v in RNG.integers(1, 3, 2)]
        rd = [int(v) for v in RNG.integers(1, 3, 2)]
        # acc*3 + x is order-sensitive: checks the row-major window walk.
        want = ref_reduce_window(x, 1, sizes, strides, pads, ld, rd,
                                 lambda a, b: np.int32(a * 3 + b))
        window = (f"size={sizes[0]}x{sizes[1]} stride={strides[0]}x{strides[1]} "
                  f"pad={pads[0][0]}_{pads[0][1]}x{pads[1][0]}_{pads[1][1]} "
                  f"lhs_dilate={ld[0]}x{ld[1]} rhs_dilate={rd[0]}x{rd[1]}")
        dims = ",".join(map(str, want.shape))
        got = run(f"""HloModule m
f {{ a = s32[] parameter(0)
  b = s32[] parameter(1)
  three = s32[] constant(3)
  m = s32[] multiply(a, three)
  ROOT r = s32[] add(m, b) }}
ENTRY e {{ x = s32[{shape[0]},{shape[1]}] parameter(0)
  one = s32[] constant(1)
  ROOT r = s32[{dims}] reduce-window(x, one), window={{{window}}}, to_apply=f }}""", x)
        np.testing.assert_array_equal(got, want)


def test_reduce_window_variadic_max_with_index():
    text = """HloModule m
f { v0 = f32[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = f32[] parameter(2)
  i1 = s32[] parameter(3)
  ge = pred[] compare(v0, v1), direction=GE
  v = f32[] select(ge, v0, v1)
  i = s32[] select(ge, i0, i1)
  ROOT t = (f32[], s32[]) tuple(v, i) }
ENTRY e { x = f32[6] parameter(0)
  io = s32[6] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  m1 = s32[] constant(-1)
  ROOT r = (f32[3], s32[3]) reduce-window(x, io, ninf, m1), window={size=3 stride=2 pad=1_0}, to_apply=f }"""
    v, i = run(text, np.array([4, 1, 7, 7, 0, 2], np.float32))
    np.testing.assert_array_equal(v, [4, 7, 7])
    np.testing.assert_array_equal(i, [0, 2, 3])


# ---------------------------------------------------------------------------
# select-and-scatter

def test_select_and_scatter_overlapping_windows():
    x = np.array([[7, 2, 5, 3, 10, 2], [3, 8, 9, 3, 4, 2], [1, 5, 7, 5, 6, 1],
                  [0, 6, 2, 7, 2, 8]], np.float32)
    src = np.array([[2, 6], [3, 1]], np.float32)
    got = run("""HloModule m
ge { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE }
""" + ADD_F32 + """
ENTRY e { x = f32[4,6] parameter(0)
  s = f32[2,2] parameter(1)
  z = f32[] constant(0)
  ROOT r = f32[4,6] select-and-scatter(x, s, z), window={size=3x3 stride=2x3 pad=0_1x0_0}, select=ge, scatter=add }""",
              x, src)
    want = np.zeros_like(x)
    for (si, sj), v in np.ndenumerate(src):
        best = None
        for wi, wj in itertools.product(range(3), range(3)):
            i, j = si * 2 + wi, sj * 3 + wj
            if i < 4 and j < 6 and (best is None or not x[best] >= x[i, j]):
                best = (i, j)
        want[best] += v
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# map

def test_map_scalar_computation_over_arrays():
    got = run("""HloModule m
f { a = f32[] parameter(0)
  b = f32[] parameter(1)
  m = f32[] multiply(a, b)
  ROOT r = f32[] sqrt(m) }
ENTRY e { x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT r = f32[2,3] map(x, y), dimensions={0,1}, to_apply=f }""",
              np.full((2, 3), 2, np.float32), np.full((2, 3), 8, np.float32))
    np.testing.assert_array_equal(got, np.full((2, 3), 4, np.float32))


# ---------------------------------------------------------------------------
# sort and topk

SORT_KEY_ONLY = """HloModule m
lt { a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=DIRECTION }
ENTRY e { k = s32[@N] parameter(0)
  v = s32[@N] parameter(1)
  ROOT s = (s32[@N], s32[@N]) sort(k, v), dimensions={0}, is_stable=true, to_apply=lt }"""


@pytest.mark.parametrize("n", [1, 7, 33])
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_sort_is_stable_on_ties(n, direction):
    k = RNG.integers(0, 4, n).astype(np.int32)
    v = np.arange(n, dtype=np.int32)
    ks, vs = run(SORT_KEY_ONLY.replace("DIRECTION", direction).replace("@N", str(n)), k, v)
    order = sorted(range(n), key=lambda i: k[i] if direction == "LT" else -k[i])
    np.testing.assert_array_equal(ks, k[order])
    np.testing.assert_array_equal(vs, v[order])


def test_sort_general_comparator_network_is_stable():
    # Compares |a| < |b| (not a plain compare of the parameters): the lane-program path.
    n = 45
    x = RNG.integers(-5, 6, (3, n)).astype(np.float32)
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), (3, n)).copy()
    xs, ids = run(f"""HloModule m
c {{ a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  aa = f32[] abs(a)
  ab = f32[] abs(b)
  ROOT r = pred[] compare(aa, ab), direction=LT }}
ENTRY e {{ x = f32[3,{n}] parameter(0)
  i = s32[3,{n}] parameter(1)
  ROOT s = (f32[3,{n}], s32[3,{n}]) sort(x, i), dimensions={{1}}, to_apply=c }}""", x, idx)
    for r in range(3):
        order = sorted(range(n), key=lambda j: abs(x[r, j]))
        np.testing.assert_array_equal(ids[r], order)
        np.testing.assert_array_equal(xs[r], x[r, order])


def test_sort_total_order_and_float_compare_with_nan():
    x = np.array([3, np.nan, -0.0, 0.0, -np.inf, 1, -np.nan], np.float32)
    tot = run("""HloModule m
c { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT, type=TOTALORDER }
ENTRY e { x = f32[7] parameter(0)
  ROOT s = f32[7] sort(x), dimensions={0}, to_apply=c }""", x)
    bits = tot.view(np.uint32)
    assert bits[0] == np.float32(-np.nan).view(np.uint32) and np.isnan(tot[0])
    np.testing.assert_array_equal(tot[1:6], [-np.inf, -0.0, 0.0, 1, 3])
    assert np.signbit(tot[2]) and not np.signbit(tot[3]) and np.isnan(tot[6])
    # A FLOAT compare is no strict weak order with NaN: the evaluator's merge sort decides.
    flt = run("""HloModule m
c { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=LT }
ENTRY e { x = f32[7] parameter(0)
  ROOT s = f32[7] sort(x), dimensions={0}, to_apply=c }""", x)
    perm = sorting._merge_sort(list(range(7)), lambda a, b: bool(x[a] < x[b]))
    np.testing.assert_array_equal(flt.view(np.uint32), x[perm].view(np.uint32))


def test_sort_comparator_that_is_not_elementwise_falls_back_to_calls():
    text = """HloModule m
inner { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GT }
c { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = pred[] call(a, b), to_apply=inner }
ENTRY e { x = s32[2,10] parameter(0)
  ROOT s = s32[2,10] sort(x), dimensions={1}, to_apply=c }"""
    x = RNG.integers(0, 100, (2, 10)).astype(np.int32)
    np.testing.assert_array_equal(run(text, x), -np.sort(-x, axis=1))


def test_merge_sort_matches_stable_sort():
    for n in (0, 1, 8, 9, 30):
        keys = RNG.integers(0, 5, n)
        got = sorting._merge_sort(list(range(n)), lambda a, b: keys[a] < keys[b])
        assert got == sorted(range(n), key=lambda i: keys[i])


def test_topk_ties_by_lower_index_and_total_order():
    x = np.array([[1, 3, 3, np.nan, -0.0, 0.0], [2, 2, 2, 2, 2, 2]], np.float32)
    v, i = run("""HloModule m
ENTRY e { x = f32[2,6] parameter(0)
  ROOT t = (f32[2,3], s32[2,3]) topk(x), k=3, largest=true }""", x)
    assert np.isnan(v[0, 0]) and i[0, 0] == 3
    np.testing.assert_array_equal(v[0, 1:], [3, 3])
    np.testing.assert_array_equal(i, [[3, 1, 2], [0, 1, 2]])
    assert i.dtype == np.int32
    v, i = run("""HloModule m
ENTRY e { x = f32[2,6] parameter(0)
  ROOT t = (f32[2,2], s32[2,2]) topk(x), k=2, largest=false }""", x)
    np.testing.assert_array_equal(i, [[4, 5], [0, 1]])
    assert np.signbit(v[0, 0]) and not np.signbit(v[0, 1])


def test_update_rounds_keep_per_target_order():
    t = np.array([5, 1, 5, 5, 2, 1])
    rounds = [list(r) for r in red.update_rounds(t)]
    assert rounds == [[0, 1, 4], [2, 5], [3]]


# ---------------------------------------------------------------------------
# scan, and reducers that are not elementwise (one call per element)

def test_scan_forward_and_reverse_with_carry():
    text = """HloModule m
f { x = f32[2] parameter(0)
  c = f32[2] parameter(1)
  s = f32[2] add(x, c)
  ROOT t = (f32[2], f32[2]) tuple(s, s) }
ENTRY e { x = f32[5,2] parameter(0)
  z = f32[2] parameter(1)
  ROOT s = (f32[5,2], f32[2]) scan(x, z), dimensions={0}, num_carries=1, is_reverse=REV, to_apply=f }"""
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    z = np.array([100, 0], np.float32)
    out, carry = run(text.replace("REV", "false"), x, z)
    np.testing.assert_array_equal(out, np.cumsum(x, 0) + z)
    np.testing.assert_array_equal(carry, x.sum(0) + z)
    out, carry = run(text.replace("REV", "true"), x, z)
    np.testing.assert_array_equal(out, np.cumsum(x[::-1], 0)[::-1] + z)


def test_reduce_with_non_elementwise_reducer_calls_per_element():
    text = """HloModule m
inner { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] subtract(a, b) }
f { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] call(a, b), to_apply=inner }
ENTRY e { x = s32[2,3] parameter(0)
  z = s32[] constant(100)
  ROOT r = s32[2] reduce(x, z), dimensions={1}, to_apply=f }"""
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    np.testing.assert_array_equal(run(text, x), [94, 85])


# ---------------------------------------------------------------------------
# Vectorised reducers, scalar windows

def _fold_module(op, dtype, shape, init):
    dims = ",".join(map(str, shape))
    return f"""HloModule m
f {{ a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT r = {dtype}[] {op}(a, b) }}
g {{ a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  c = {dtype}[] {op}(a, b)
  ROOT r = {dtype}[] copy(c) }}
ENTRY e {{ x = {dtype}[{dims}] parameter(0)
  z = {dtype}[] constant({init})
  f = {dtype}[{shape[0]}] reduce(x, z), dimensions={{1}}, to_apply=f
  g = {dtype}[{shape[0]}] reduce(x, z), dimensions={{1}}, to_apply=g
  ROOT t = ({dtype}[{shape[0]}], {dtype}[{shape[0]}]) tuple(f, g) }}"""


@pytest.mark.parametrize("op,dtype,init", [
    ("add", "s4", "3"), ("multiply", "s4", "-1"), ("and", "u4", "15"), ("xor", "u2", "1"),
    ("maximum", "s2", "-2"), ("minimum", "u4", "9"), ("add", "s1", "-1"),
    ("multiply", "u1", "1"), ("or", "s64", "0"), ("add", "u64", "18446744073709551615"),
    ("add", "pred", "false"), ("multiply", "pred", "true"), ("minimum", "pred", "true"),
    ("maximum", "f32", "-inf"), ("minimum", "f32", "inf"), ("maximum", "bf16", "0"),
    ("minimum", "f16", "-0")])
def test_vectorised_reducers_match_the_sequential_fold(op, dtype, init):
    from hloc.interp import numerics as N
    from hloc.ir.dtypes import DTYPES
    dt = DTYPES[dtype]
    shape = (6, 41)
    if dt.kind == "pred":
        x = RNG.integers(0, 2, shape).astype(bool)
        x[0] = True
    elif dt.kind in ("int", "uint"):
        x = N.wrap(RNG.integers(-2**62, 2**62, shape), dt)
    else:
        x = (RNG.standard_normal(shape) * 4).astype(dt.np)
        x[1, 5] = -0.0
        x[2] = 0.0
        x[2, ::3] = -0.0
        x[3, 7] = np.nan
        x[3, 9] = -np.inf
        bits = np.array([np.nan], np.float32).view(np.uint32) | np.uint32(0x1234)
        x[4, 2:4] = bits.view(np.float32)[0].astype(dt.np)
    fast, slow = run(_fold_module(op, dtype, shape, init), x)
    assert fast.dtype == dt.np
    if dt.kind == "float":
        f, s = fast.astype(np.float64), slow.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(f), np.isnan(s))
        np.testing.assert_array_equal(np.nan_to_num(f), np.nan_to_num(s))
        np.testing.assert_array_equal(np.signbit(f), np.signbit(s))
        np.testing.assert_array_equal(fast.view(f"u{fast.itemsize}"), slow.view(f"u{slow.itemsize}"))
    else:
        np.testing.assert_array_equal(fast, slow)


def test_reducing_a_million_u4_is_fast():
    import time

    import ml_dtypes
    text = """HloModule m
f { a = u4[] parameter(0)
  b = u4[] parameter(1)
  ROOT r = u4[] and(a, b) }
ENTRY e { x = u4[1000000] parameter(0)
  z = u4[] constant(15)
  ROOT r = u4[] reduce(x, z), dimensions={0}, to_apply=f }"""
    x = np.full(1000000, 15, ml_dtypes.uint4)
    x[123456] = 6
    t = time.perf_counter()
    out = run(text, x)
    assert time.perf_counter() - t < 1.0
    assert out == 6 and out.dtype == ml_dtypes.uint4


def test_float_sum_adds_the_512_chunks_in_order():
    x = np.zeros((2, 2048), np.float32)
    x[:, 0], x[:, 512], x[:, 1024], x[:, 1536] = 2.0**53, 1, 1, -2.0**53
    got = red.evaluator_float_sum(x, np.float32(0), np.float32)
    # ((2**53 + 1) + 1) - 2**53 in double: each +1 rounds back to 2**53 (a pairwise or
    # reordered sum would give 1 or 2).
    assert got.tolist() == [0.0, 0.0] and got.dtype == np.float32


ADD_S32 = """add { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] add(a, b) }
"""


def test_reduce_window_and_select_and_scatter_without_window_attribute():
    # No `window=`: the rank-0 window of a scalar operand (XLA's parser default).
    out = run(f"""HloModule m
{ADD_F32}
ENTRY e {{ x = f32[] constant(42)
  i = f32[] constant(1)
  ROOT rw = f32[] reduce-window(x, i), to_apply=add }}""")
    assert out == 43 and out.shape == () and out.dtype == np.float32
    out = run(f"""HloModule m
{ADD_F32}
ge {{ a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = pred[] compare(a, b), direction=GE }}
ENTRY e {{ x = f32[] constant(42)
  s = f32[] constant(3)
  i = f32[] constant(1)
  ROOT r = f32[] select-and-scatter(x, s, i), select=ge, scatter=add }}""")
    assert out == 4 and out.shape == () and out.dtype == np.float32


def test_reducer_whose_root_copies_a_tuple():
    text = """HloModule m
f { a = s32[] parameter(0)
  b = f32[] parameter(1)
  c = s32[] parameter(2)
  d = f32[] parameter(3)
  s = s32[] add(a, c)
  t = f32[] maximum(b, d)
  u = (s32[], f32[]) tuple(s, t)
  ROOT r = (s32[], f32[]) copy(u) }
ENTRY e { x = s32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  z = s32[] constant(0)
  w = f32[] constant(-inf)
  ROOT r = (s32[2], f32[2]) reduce(x, y, z, w), dimensions={1}, to_apply=f }"""
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    s, m = run(text, x, x.astype(np.float32) * -1)
    np.testing.assert_array_equal(s, [3, 12])
    np.testing.assert_array_equal(m, [0, -3])
