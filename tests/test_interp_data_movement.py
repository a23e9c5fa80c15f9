"""Data-movement evaluations (hloc/interp/data_movement.py) at their edges.

The kernels are checked against plain loops written after HloEvaluator's HandleGather,
HandleScatter and HandlePad (clamped gather starts, whole-window scatter drops, ordered
updates, negative and interior padding), and the registered evaluations end to end on
small HLO modules.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import hloc
import hloc.interp.data_movement as dm
import hloc.interp.elementwise  # noqa: F401  (registers the elementwise evaluations)
import hloc.interp.reductions  # noqa: F401
from hloc.interp.core import TOKEN, Interpreter

RNG = np.random.default_rng(1234)


def run(text, *args):
    return Interpreter(hloc.parse(text)).run(list(args))


# ---------------------------------------------------------------------------
# Reference loops (HloEvaluator's algorithms, one element at a time)

def ref_gather(operand, indices, offset_dims, collapsed, start_index_map, ivd, slice_sizes,
               obd=(), sibd=()):
    idx = np.asarray(indices, np.int64)
    if ivd == idx.ndim:
        idx = idx[..., None]
    idx_batch = [d for d in range(idx.ndim) if d != ivd]
    out_rank = len(idx_batch) + len(offset_dims)
    batch_axes = [i for i in range(out_rank) if i not in offset_dims]
    window = [d for d in range(operand.ndim) if d not in collapsed and d not in obd]
    out_shape = [0] * out_rank
    for p, a in enumerate(batch_axes):
        out_shape[a] = idx.shape[idx_batch[p]]
    for j, a in enumerate(offset_dims):
        out_shape[a] = slice_sizes[window[j]]
    out = np.zeros(out_shape, operand.dtype)
    for oi in itertools.product(*map(range, out_shape)):
        vi = [oi[a] for a in batch_axes]
        vi.insert(ivd, 0)
        vec = []
        for k in range(idx.shape[ivd]):
            vi[ivd] = k
            vec.append(idx[tuple(vi)])
        src = []
        for d in range(operand.ndim):
            if d in obd:
                g = oi[batch_axes[idx_batch.index(sibd[list(obd).index(d)])]]
            elif d in start_index_map:
                g = vec[list(start_index_map).index(d)]
            else:
                g = 0
            size = slice_sizes[d] if d in window else 1
            g = min(operand.shape[d] - size, max(0, g))
            src.append(g + (oi[offset_dims[window.index(d)]] if d in window else 0))
        out[oi] = operand[tuple(src)]
    return out


def ref_scatter(operand, indices, updates, uwd, iwd, sdod, ivd, ibd=(), sibd=(),
                combine=lambda a, b: a + b):
    res = operand.copy()
    idx = np.asarray(indices, np.int64)
    if ivd == idx.ndim:
        idx = idx[..., None]
    scatter_axes = [i for i in range(updates.ndim) if i not in uwd]
    idx_batch = [d for d in range(idx.ndim) if d != ivd]
    window = [d for d in range(operand.ndim) if d not in iwd and d not in ibd]
    for si in itertools.product(*(range(updates.shape[a]) for a in scatter_axes)):
        vi = list(si)
        vi.insert(ivd, 0)
        vec = []
        for k in range(idx.shape[ivd]):
            vi[ivd] = k
            vec.append(idx[tuple(vi)])
        start = []
        for d in range(operand.ndim):
            if d in ibd:
                start.append(si[idx_batch.index(sibd[list(ibd).index(d)])])
            else:
                start.append(vec[list(sdod).index(d)] if d in sdod else 0)
        sizes = [updates.shape[uwd[window.index(d)]] if d in window else 1
                 for d in range(operand.ndim)]
        if any(s < 0 or s > n - z for s, n, z in zip(start, operand.shape, sizes)):
            continue                       # the whole window is dropped
        for wi in itertools.product(*(range(updates.shape[a]) for a in uwd)):
            ui = [0] * updates.ndim
            for p, a in enumerate(scatter_axes):
                ui[a] = si[p]
            for p, a in enumerate(uwd):
                ui[a] = wi[p]
            oi = list(start)
            for j, d in enumerate(window):
                oi[d] += wi[j]
            res[tuple(oi)] = combine(res[tuple(oi)], updates[tuple(ui)])
    return res


def ref_pad(x, value, config):
    out_dims = [lo + n + max(n - 1, 0) * it + hi for n, (lo, hi, it) in zip(x.shape, config)]
    out = np.full(out_dims, value, x.dtype)
    for ii in itertools.product(*map(range, x.shape)):
        t = [lo + i * (it + 1) for i, (lo, _, it) in zip(ii, config)]
        if all(0 <= a < m for a, m in zip(t, out_dims)):
            out[tuple(t)] = x[ii]
    return out


# ---------------------------------------------------------------------------
# gather

GATHER_CASES = [
    # operand shape, indices shape, dimension numbers
    ((5, 7, 3), (4, 2), dict(offset_dims=(1,), collapsed_slice_dims=(0, 1),
                             start_index_map=(0, 1), index_vector_dim=1, slice_sizes=(1, 1, 3))),
    ((5, 7, 3), (4, 2), dict(offset_dims=(1, 2), collapsed_slice_dims=(0,),
                             start_index_map=(0, 1), index_vector_dim=1, slice_sizes=(1, 4, 2))),
    ((5, 7, 3), (2, 4), dict(offset_dims=(0, 2), collapsed_slice_dims=(0,),
                             start_index_map=(2, 1), index_vector_dim=0, slice_sizes=(1, 4, 2))),
    # index_vector_dim == rank: scalar indices
    ((5, 7, 3), (6,), dict(offset_dims=(1, 2), collapsed_slice_dims=(1,), start_index_map=(1,),
                           index_vector_dim=1, slice_sizes=(5, 1, 3))),
    # explicit batching dims
    ((5, 7, 3), (5, 4, 1), dict(offset_dims=(2,), collapsed_slice_dims=(1,),
                                start_index_map=(1,), index_vector_dim=2, slice_sizes=(1, 1, 3),
                                operand_batching_dims=(0,), start_indices_batching_dims=(0,))),
    ((5, 7, 3), (4, 5, 1), dict(offset_dims=(), collapsed_slice_dims=(1, 2),
                                start_index_map=(1,), index_vector_dim=2, slice_sizes=(1, 1, 1),
                                operand_batching_dims=(0,), start_indices_batching_dims=(1,))),
    # no index vector at all (start_index_map empty): every slice starts at 0
    ((5, 7), (3, 0), dict(offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(),
                          index_vector_dim=1, slice_sizes=(2, 3))),
]


@pytest.mark.parametrize("case", range(len(GATHER_CASES)))
def test_gather_matches_reference_with_out_of_bounds_starts(case):
    oshape, ishape, dn = GATHER_CASES[case]
    operand = RNG.integers(0, 100, oshape)
    indices = RNG.integers(-4, 10, ishape)          # many starts out of bounds: clamped
    got = dm.gather_array(operand, indices, **dn)
    want = ref_gather(operand, indices, dn["offset_dims"], dn["collapsed_slice_dims"],
                      dn["start_index_map"], dn["index_vector_dim"], dn["slice_sizes"],
                      dn.get("operand_batching_dims", ()),
                      dn.get("start_indices_batching_dims", ()))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_gather_clamps_start_so_slice_fits():
    x = np.arange(10)
    got = dm.gather_array(x, np.array([[-5], [8], [100]]), offset_dims=(1,),
                          collapsed_slice_dims=(), start_index_map=(0,), index_vector_dim=1,
                          slice_sizes=(3,))
    np.testing.assert_array_equal(got, [[0, 1, 2], [7, 8, 9], [7, 8, 9]])


def test_gather_unsigned_indices_wrap_like_static_cast():
    x = np.arange(10)
    idx = np.array([[np.iinfo(np.uint64).max]], dtype=np.uint64)   # -1 as int64: clamps to 0
    got = dm.gather_array(x, idx, offset_dims=(1,), collapsed_slice_dims=(),
                          start_index_map=(0,), index_vector_dim=1, slice_sizes=(2,))
    np.testing.assert_array_equal(got, [[0, 1]])


# ---------------------------------------------------------------------------
# scatter

def _scatter(operand, indices, updates, uwd, iwd, sdod, ivd, ibd=(), sibd=(), combine=None,
             fast=None):
    targets, upos = dm.scatter_targets(
        operand.shape, indices, updates.shape, update_window_dims=uwd,
        inserted_window_dims=iwd, scatter_dims_to_operand_dims=sdod, index_vector_dim=ivd,
        input_batching_dims=ibd, scatter_indices_batching_dims=sibd)

    def comb(args, lanes):
        return [combine(args[0], args[1])]
    return dm.scatter_apply([operand.copy()], targets, [updates.reshape(-1)[upos]], comb,
                            fast)[0]


@pytest.mark.parametrize("fast", [None, "add"])
def test_scatter_add_with_duplicates_and_out_of_bounds(fast):
    for _ in range(10):
        operand = RNG.standard_normal((6, 5)).astype(np.float32)
        idx = RNG.integers(-2, 7, (8, 1))
        upd = RNG.standard_normal((8, 3)).astype(np.float32)
        want = ref_scatter(operand, idx, upd, (1,), (0,), (0,), 1)
        got = _scatter(operand, idx, upd, (1,), (0,), (0,), 1, combine=np.add, fast=fast)
        np.testing.assert_array_equal(got, want)


def test_scatter_applies_updates_in_order():
    # 2*x + u is not commutative: order of the repeated updates matters.
    operand = RNG.standard_normal((4,)).astype(np.float32)
    idx = np.array([1, 1, 3, 1, 0, 3])
    upd = RNG.standard_normal((6,)).astype(np.float32)

    def f(x, u):
        return (x * np.float32(2) + u).astype(np.float32)
    want = ref_scatter(operand, idx, upd, (), (0,), (0,), 1, combine=f)
    got = _scatter(operand, idx, upd, (), (0,), (0,), 1, combine=f)
    np.testing.assert_array_equal(got, want)


def test_scatter_drops_whole_window_when_partly_out_of_bounds():
    operand = np.zeros(6, np.int32)
    upd = np.ones((2, 3), np.int32)
    # start 4 with a window of 3 would cover 4..6: dropped entirely (not clipped).
    got = _scatter(operand, np.array([[4], [1]]), upd, (1,), (), (0,), 1, combine=np.add)
    np.testing.assert_array_equal(got, [0, 1, 1, 1, 0, 0])


def test_scatter_batching_dims():
    operand = RNG.standard_normal((3, 6, 5)).astype(np.float32)
    idx = RNG.integers(-1, 6, (3, 4, 2))
    upd = RNG.standard_normal((3, 4, 2, 2)).astype(np.float32)
    want = ref_scatter(operand, idx, upd, (2, 3), (), (1, 2), 2, (0,), (0,))
    got = _scatter(operand, idx, upd, (2, 3), (), (1, 2), 2, (0,), (0,), combine=np.add)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------
# pad, dynamic slices, iota

def test_pad_negative_and_interior_random():
    for _ in range(200):
        shape = tuple(int(v) for v in RNG.integers(0, 4, RNG.integers(1, 3)))
        x = RNG.integers(0, 100, shape)
        config = []
        for n in shape:
            while True:
                lo, hi, it = (int(RNG.integers(-4, 4)), int(RNG.integers(-4, 4)),
                              int(RNG.integers(0, 3)))
                if lo + n + max(n - 1, 0) * it + hi >= 0:
                    break
            config.append((lo, hi, it))
        np.testing.assert_array_equal(dm.pad_array(x, -1, config), ref_pad(x, -1, config))


def test_dynamic_slice_and_update_clamp_starts():
    x = np.arange(10)
    np.testing.assert_array_equal(dm.dynamic_slice_array(x, [8], [4]), [6, 7, 8, 9])
    np.testing.assert_array_equal(dm.dynamic_slice_array(x, [-3], [4]), [0, 1, 2, 3])
    got = dm.dynamic_update_slice_array(x, np.array([-1, -2]), [9])
    np.testing.assert_array_equal(got, [0, 1, 2, 3, 4, 5, 6, 7, -1, -2])
    got = dm.dynamic_update_slice_array(x, np.array([-1, -2]), [-7])
    np.testing.assert_array_equal(got[:3], [-1, -2, 2])


def test_iota_wraps_and_rounds_like_static_cast():
    np.testing.assert_array_equal(dm.iota_array(np.int8, (300,), 0)[126:130],
                                  [126, 127, -128, -127])
    four = dm.iota_array(ml_dtypes.int4, (18,), 0).astype(np.int64)
    np.testing.assert_array_equal(four[6:11], [6, 7, -8, -7, -6])
    bf = dm.iota_array(ml_dtypes.bfloat16, (2, 300), 1).astype(np.float32)
    np.testing.assert_array_equal(bf[1, 255:260], [255, 256, 256, 258, 260])


# ---------------------------------------------------------------------------
# End to end

def test_e2e_shape_ops():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = run("""
HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  b = f32[4,2,3] broadcast(p), dimensions={1,2}
  t = f32[3,2] transpose(p), dimensions={1,0}
  r = f32[3,2] reshape(p)
  v = f32[2,3] reverse(p), dimensions={1}
  s = f32[1,2] slice(p), slice={[1:2], [0:3:2]}
  c = f32[2,6] concatenate(p, p), dimensions={1}
  ROOT tup = (f32[4,2,3], f32[3,2], f32[3,2], f32[2,3], f32[1,2], f32[2,6]) tuple(b, t, r, v, s, c)
}""", x)
    b, t, r, v, s, c = out
    np.testing.assert_array_equal(b, np.broadcast_to(x, (4, 2, 3)))
    np.testing.assert_array_equal(t, x.T)
    np.testing.assert_array_equal(r, x.reshape(3, 2))
    np.testing.assert_array_equal(v, x[:, ::-1])
    np.testing.assert_array_equal(s, [[3, 5]])
    np.testing.assert_array_equal(c, np.concatenate([x, x], 1))


def test_e2e_gather_and_scatter():
    out = run("""
HloModule m
sub { a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] subtract(a, b) }
ENTRY e {
  x = s32[5] parameter(0)
  i = s32[3,1] parameter(1)
  u = s32[3] parameter(2)
  g = s32[3,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={2}
  s = s32[5] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=sub
  ROOT t = (s32[3,2], s32[5]) tuple(g, s)
}""", np.arange(5, dtype=np.int32) * 10, np.array([[4], [-1], [4]], np.int32),
        np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(out[0], [[30, 40], [0, 10], [30, 40]])
    np.testing.assert_array_equal(out[1], [0, 10, 20, 30, 36])   # index -1 dropped


def test_e2e_variadic_scatter_and_overwrite():
    out = run("""
HloModule m
both { a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  s = f32[] add(a, c)
  m = s32[] maximum(b, d)
  ROOT r = (f32[], s32[]) tuple(s, m) }
last { a = f32[] parameter(0)
  ROOT b = f32[] parameter(1) }
ENTRY e {
  x = f32[3] parameter(0)
  y = s32[3] parameter(1)
  i = s32[4] parameter(2)
  u = f32[4] parameter(3)
  v = s32[4] parameter(4)
  s = (f32[3], s32[3]) scatter(x, y, i, u, v), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=both
  o = f32[3] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=last
  s0 = f32[3] get-tuple-element(s), index=0
  s1 = s32[3] get-tuple-element(s), index=1
  ROOT t = (f32[3], s32[3], f32[3]) tuple(s0, s1, o)
}""", np.zeros(3, np.float32), np.zeros(3, np.int32), np.array([2, 0, 2, 2], np.int32),
        np.array([1, 2, 3, 4], np.float32), np.array([5, -1, 9, 7], np.int32))
    np.testing.assert_array_equal(out[0], [2, 0, 8])
    np.testing.assert_array_equal(out[1], [0, 0, 9])
    np.testing.assert_array_equal(out[2], [2, 0, 4])          # the last update wins


def test_e2e_dynamic_slice_pad_iota_dimension_size():
    out = run("""
HloModule m
ENTRY e {
  x = f32[4,4] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  d = f32[2,3] dynamic-slice(x, i, j), dynamic_slice_sizes={2,3}
  u = f32[4,4] dynamic-update-slice(x, d, j, i)
  z = f32[] constant(-1)
  p = f32[1,9] pad(d, z), padding=-1_0x1_-1_1
  io = u8[2,300] iota(), iota_dimension=1
  g = s32[] get-dimension-size(x), dimensions={1}
  ROOT t = (f32[2,3], f32[4,4], f32[1,9], u8[2,300], s32[]) tuple(d, u, p, io, g)
}""", np.arange(16, dtype=np.float32).reshape(4, 4), np.array(3, np.int32),
        np.array(-2, np.int32))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(out[0], x[2:4, 0:3])
    want = x.copy()
    want[0:2, 1:4] = x[2:4, 0:3]
    np.testing.assert_array_equal(out[1], want)
    np.testing.assert_array_equal(out[2], ref_pad(x[2:4, 0:3], -1, [(-1, 0, 0), (1, -1, 1)]))
    assert out[3].dtype == np.uint8 and out[3][1, 299] == 299 % 256
    assert out[4] == 4 and out[4].dtype == np.int32


def test_e2e_async_copy_and_token_ops():
    out = run("""
HloModule m
wrapped { a = f32[3] parameter(0)
  ROOT n = f32[3] negate(a) }
ENTRY e {
  x = f32[3] parameter(0)
  s = ((f32[3]), f32[3], s32[]) async-start(x), calls=wrapped
  d = f32[3] async-done(s), calls=wrapped
  cs = (f32[3], f32[3], u32[]) copy-start(d)
  cd = f32[3] copy-done(cs)
  tok = token[] after-all()
  dep = f32[3] add-dependency(cd, tok)
  ob = (f32[3], token[]) opt-barrier((f32[3], token[]) tuple(dep, tok))
  ROOT r = f32[3] get-tuple-element(ob), index=0
}""", np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(out, [-1, -2, -3])
    assert run("HloModule m\nENTRY e { ROOT t = token[] after-all() }") is TOKEN


def test_e2e_dynamic_reshape_with_static_sizes():
    out = run("""
HloModule m
ENTRY e {
  x = s32[2,3] parameter(0)
  a = s32[] constant(3)
  b = s32[] constant(2)
  ROOT r = s32[3,2] dynamic-reshape(x, a, b)
}""", np.arange(6, dtype=np.int32).reshape(2, 3))
    np.testing.assert_array_equal(out, np.arange(6).reshape(3, 2))


@pytest.mark.parametrize("combiner", ["add", "subtract"])
def test_scatter_into_a_scalar_with_empty_index_vector(combiner):
    # s32[0] indices with index_vector_dim=0: one update, the whole (rank-0) operand.
    out = run(f"""HloModule m
f {{ a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] {combiner}(a, b) }}
ENTRY e {{ x = s32[] constant(5)
  i = s32[0] constant({{}})
  u = s32[] constant(7)
  ROOT s = s32[] scatter(x, i, u), update_window_dims={{}}, inserted_window_dims={{}}, scatter_dims_to_operand_dims={{}}, index_vector_dim=0, to_apply=f }}""")
    assert out.shape == () and out.dtype == np.int32
    assert out == (12 if combiner == "add" else -2)


def test_zero_size_iota_with_a_huge_dimension_allocates_nothing():
    out = run("""HloModule m
ENTRY e { ROOT i = f32[1000000000000,0] iota(), iota_dimension=0 }""")
    assert out.shape == (10**12, 0) and out.dtype == np.float32


@pytest.mark.parametrize("body", [
    "ROOT c = f32[3,2] concatenate(f32[2,1] a, f32[3,1] b), dimensions={1}",
    "ROOT c = f32[2,1] copy-start(f32[2,1] a)",
])
def test_shapes_the_verifier_rejects_are_unsupported_not_crashes(body):
    from hloc.diagnostics import UnsupportedError
    text = f"""HloModule m
ENTRY e {{ a = f32[2,1] parameter(0)
  b = f32[3,1] parameter(1)
  {body} }}"""
    with pytest.raises(UnsupportedError, match="verifier rejects"):
        run(text, np.zeros((2, 1), np.float32), np.zeros((3, 1), np.float32))
