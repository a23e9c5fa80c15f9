"""Fake arguments honour MakeFakeArguments' data-flow constraints (xla/tests/test_utils.cc)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import hloc
from hloc.diagnostics import InputError
from hloc.fake_args import find_constraints, make_fake_arguments

ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""
MUL = """mul {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] multiply(a, b)
}
"""
MAX = """max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] maximum(a, b)
}
"""


def module(body: str, comps: str = "") -> hloc.ir.module.Module:
    return hloc.parse("HloModule m\n" + comps + "ENTRY e {\n" + body + "\n}\n")


def args_for(m, seed=42, **kw):
    return make_fake_arguments(m, seed=seed, **kw)


def test_unconstrained_ranges_and_types():
    m = module("""
  f = f32[1000] parameter(0)
  h = bf16[500] parameter(1)
  i = s8[2000] parameter(2)
  u = u16[2000] parameter(3)
  p = pred[100] parameter(4)
  c = c64[100] parameter(5)
  q = s4[300] parameter(6)
  ROOT t = (f32[1000], bf16[500], s8[2000], u16[2000], pred[100], c64[100], s4[300]) tuple(f, h, i, u, p, c, q)""")
    f, h, i, u, p, c, q = args_for(m)
    assert f.dtype == np.float32 and f.shape == (1000,)
    assert f.min() >= -0.1 and f.max() <= 0.2 and f.std() > 0.05
    assert h.dtype == ml_dtypes.bfloat16
    assert -0.11 <= h.astype(np.float32).min() and h.astype(np.float32).max() <= 0.21
    assert i.dtype == np.int8 and i.min() < -100 and i.max() > 100      # full range
    assert u.dtype == np.uint16 and u.max() > 60000
    assert p.dtype == np.bool_ and p.any() and not p.all()
    assert c.dtype == np.complex64 and np.abs(c.imag).max() > 0
    assert q.dtype == ml_dtypes.int4 and int(q.astype(np.int8).min()) == -8
    assert int(q.astype(np.int8).max()) == 7


def test_seeded_and_deterministic():
    m = module("  x = f32[16] parameter(0)\n  ROOT n = f32[16] negate(x)")
    a, = args_for(m, seed=1)
    b, = args_for(m, seed=1)
    c, = args_for(m, seed=2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_large_float_range():
    m = module("  x = f32[4000] parameter(0)\n  ROOT n = f32[4000] negate(x)")
    x, = args_for(m, use_large_float_range=True)
    mags = np.abs(x[x != 0])
    assert mags.max() > 1e30 and mags.min() < 1e-30
    assert (x < 0).any() and (x > 0).any()


def test_dynamic_slice_indices_in_range():
    m = module("""
  x = f32[10,7] parameter(0)
  i = s32[] parameter(1)
  j = s32[] parameter(2)
  ROOT ds = f32[4,7] dynamic-slice(x, i, j), dynamic_slice_sizes={4,7}""")
    for seed in range(20):
        _, i, j = args_for(m, seed=seed)
        assert i.dtype == np.int32 and i.shape == ()
        assert 0 <= int(i) <= 6 and int(j) == 0


def test_dynamic_update_slice_indices_in_range():
    m = module("""
  x = f32[10,8] parameter(0)
  u = f32[3,2] parameter(1)
  i = s64[] parameter(2)
  j = s64[] parameter(3)
  ROOT d = f32[10,8] dynamic-update-slice(x, u, i, j)""")
    seen = set()
    for seed in range(30):
        _, _, i, j = args_for(m, seed=seed)
        assert 0 <= int(i) <= 7 and 0 <= int(j) <= 6
        seen.add(int(i))
    assert len(seen) > 3          # random within the range, not a constant


def test_index_followed_through_convert_call_and_fusion():
    m = module("""
  x = f32[10] parameter(0)
  i = s64[] parameter(1)
  k = s32[] parameter(2)
  c = s32[] convert(i)
  a = f32[3] dynamic-slice(x, c), dynamic_slice_sizes={3}
  b = f32[5] fusion(x, k), kind=kLoop, calls=fused
  ROOT t = (f32[3], f32[5]) tuple(a, b)""", """fused {
  p0 = f32[10] parameter(0)
  p1 = s32[] parameter(1)
  ROOT d = f32[5] dynamic-slice(p0, p1), dynamic_slice_sizes={5}
}
""")
    for seed in range(20):
        _, i, k = args_for(m, seed=seed)
        assert 0 <= int(i) <= 7 and 0 <= int(k) <= 5


def test_index_followed_through_tuple_and_while():
    m = module("""
  x = f32[10] parameter(0)
  i = s32[] parameter(1)
  t = (f32[10], s32[]) tuple(x, i)
  ROOT w = (f32[10], s32[]) while(t), condition=cond, body=body""", """cond {
  p = (f32[10], s32[]) parameter(0)
  ROOT f = pred[] constant(false)
}
body {
  p = (f32[10], s32[]) parameter(0)
  v = f32[10] get-tuple-element(p), index=0
  j = s32[] get-tuple-element(p), index=1
  s = f32[2] dynamic-slice(v, j), dynamic_slice_sizes={2}
  ROOT r = (f32[10], s32[]) tuple(v, j)
}
""")
    for seed in range(20):
        _, i = args_for(m, seed=seed)
        assert 0 <= int(i) <= 8


def test_gather_indices_in_range_and_sorted():
    m = module("""
  x = f32[6,4] parameter(0)
  i = s32[50,1] parameter(1)
  ROOT g = f32[50,4] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}, indices_are_sorted=true""")
    _, i = args_for(m)
    assert i.min() >= 0 and i.max() <= 5 and len(np.unique(i)) > 2
    assert np.all(np.diff(i.reshape(-1)) >= 0)


def test_gather_indices_through_reshape_and_transpose():
    m = module("""
  x = f32[9,4] parameter(0)
  i = s32[2,25] parameter(1)
  tr = s32[25,2] transpose(i), dimensions={1,0}
  r = s32[50,1] reshape(tr)
  ROOT g = f32[50,4] gather(x, r), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}""")
    _, i = args_for(m)
    assert i.min() >= 0 and i.max() <= 8


def test_scatter_indices_use_the_scattered_dims():
    m = ADD + """ENTRY e {
  x = f32[5,30] parameter(0)
  i = s32[40,2] parameter(1)
  u = f32[40] parameter(2)
  ROOT s = f32[5,30] scatter(x, i, u), update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add
}
"""
    _, i, _ = args_for(hloc.parse("HloModule m\n" + m))
    assert i.min() >= 0 and i.max() <= 4       # min over the indexed dims of (dim - 1)


@pytest.mark.parametrize("comp,name,expected", [(ADD, "add", 0.0), (MUL, "mul", 1.0)])
def test_reduce_init_is_the_identity(comp, name, expected):
    m = module(f"""
  x = f32[8] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[] reduce(x, z), dimensions={{0}}, to_apply={name}""", comp)
    for seed in range(5):
        _, z = args_for(m, seed=seed)
        assert z.dtype == np.float32 and z.shape == () and float(z) == expected


def test_reduce_window_and_select_and_scatter_inits():
    m = module("""
  x = f32[8] parameter(0)
  z = f32[] parameter(1)
  rw = f32[4] reduce-window(x, z), window={size=2 stride=2}, to_apply=mul
  s = f32[4] parameter(2)
  y = f32[] parameter(3)
  ss = f32[8] select-and-scatter(x, s, y), window={size=2 stride=2}, select=ge, scatter=add
  ROOT t = (f32[4], f32[8]) tuple(rw, ss)""", MUL + ADD + """ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}
""")
    _, z, _, y = args_for(m)
    assert float(z) == 1.0 and float(y) == 0.0


def test_other_reducers_get_random_inits():
    m = module("""
  x = f32[8] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[] reduce(x, z), dimensions={0}, to_apply=max""", MAX)
    values = {float(args_for(m, seed=s)[1]) for s in range(5)}
    assert len(values) > 1


def test_sort_keys_unique_int_and_float():
    m = module("""
  k = s32[40,50] parameter(0)
  v = f32[40,50] parameter(1)
  fk = bf16[3000] parameter(2)
  fv = s32[3000] parameter(3)
  a = (s32[40,50], f32[40,50]) sort(k, v), dimensions={1}, to_apply=lt_s
  b = (bf16[3000], s32[3000]) sort(fk, fv), dimensions={0}, to_apply=lt_b
  ROOT t = ((s32[40,50], f32[40,50]), (bf16[3000], s32[3000])) tuple(a, b)""", """lt_s {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}
lt_b {
  a = bf16[] parameter(0)
  b = bf16[] parameter(1)
  c = s32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=LT
}
""")
    k, v, fk, fv = args_for(m)
    assert len(np.unique(k)) == k.size
    assert k.min() == -1000 and k.max() == 999          # shuffled iota around zero
    assert not np.all(np.diff(k.reshape(-1)) > 0)       # ... shuffled
    assert len(np.unique(fk.astype(np.float32))) == fk.size
    assert np.isfinite(fk.astype(np.float32)).all()
    assert len(np.unique(v)) > 1 and len(np.unique(fv)) > 1   # values unconstrained


def test_conflicting_constraints_are_an_error():
    m = module("""
  x = s32[8] parameter(0)
  i = s32[] parameter(1)
  d = s32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}
  r = s32[] reduce(x, i), dimensions={0}, to_apply=add
  ROOT t = (s32[2], s32[]) tuple(d, r)""", """add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT s = s32[] add(a, b)
}
""")
    with pytest.raises(InputError, match=r"conflicting .*argument 1 \(i\)"):
        args_for(m)


def test_tuple_parameters_get_per_leaf_constraints():
    m = module("""
  p = (f32[10], s32[]) parameter(0)
  x = f32[10] get-tuple-element(p), index=0
  i = s32[] get-tuple-element(p), index=1
  ROOT d = f32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}""")
    (x, i), = args_for(m)
    assert x.shape == (10,) and 0 <= int(i) <= 7
    cons = find_constraints(m)[0]
    assert set(cons) == {(1,)} and cons[(1,)].index_bound == 7


def test_fake_args_run_through_the_interpreter():
    m = module("""
  x = f32[10,4] parameter(0)
  i = s32[] parameter(1)
  z = f32[] parameter(2)
  d = f32[3,4] dynamic-slice(x, i, i), dynamic_slice_sizes={3,4}
  ROOT r = f32[3] reduce(d, z), dimensions={1}, to_apply=add""", ADD)
    out = m.run(*args_for(m))
    assert out.shape == (3,) and out.dtype == np.float32
