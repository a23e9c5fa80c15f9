"""Ops the compiled back end gained late, each against the interpreter (ieee numerics):
complex inverse trig, expm1, log1p and atan2 (a grid through the branch cuts, signed
zeros, large and tiny values), tuple-shaped constants, and the rest of #11's list.
"""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.compare import ErrorSpec, near
from hloc.inputs import bind_arguments, flatten_leaves
from hloc.runner import run_module

SPEC = ErrorSpec(abs=1e-5, rel=1e-5)


def _both(text, *args, tmp_path, numerics="ieee"):
    module = hloc.parse(text)
    bound = bind_arguments(module, list(args))
    shape = module.entry.root.shape
    ref = flatten_leaves(run_module(module, bound).value, shape)
    got = flatten_leaves(compile_module(module, numerics=numerics,
                                        cache_dir=tmp_path / "cache").run(bound), shape)
    return [np.asarray(r) for r in ref], [np.asarray(g) for g in got]


def _grid(dt):
    vals = [0.0, -0.0, 0.3, -0.7, 1.0, -1.0, 1.5, -2.5, 1e-8, 30.0, -300.0]
    z = np.array([complex(a, b) for a in vals for b in vals], dtype=np.complex128)
    return z.astype(dt)


@pytest.mark.parametrize("op", ["asin", "acos", "atan", "asinh", "acosh", "atanh",
                                "exponential-minus-one", "log-plus-one"])
@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_unary(op, dt, tmp_path):
    z = _grid(np.complex64 if dt == "c64" else np.complex128)
    n = z.size
    text = f"HloModule m\nENTRY e {{\n  x = {dt}[{n}] parameter(0)\n  ROOT r = {dt}[{n}] {op}(x)\n}}\n"
    (ref,), (got,) = _both(text, z, tmp_path=tmp_path)
    r = near(ref, got, SPEC)
    assert r.ok, r.message


@pytest.mark.parametrize("dt", ["c64", "c128"])
def test_complex_atan2(dt, tmp_path):
    z = _grid(np.complex64 if dt == "c64" else np.complex128)
    y, x = z, z[::-1].copy()
    n = z.size
    text = (f"HloModule m\nENTRY e {{\n  y = {dt}[{n}] parameter(0)\n  x = {dt}[{n}] parameter(1)\n"
            f"  ROOT r = {dt}[{n}] atan2(y, x)\n}}\n")
    (ref,), (got,) = _both(text, y, x, tmp_path=tmp_path)
    if dt == "c64":
        # atan2(1e-8i, -300+0.3i): the quotient's imaginary part is -3e-11 in f64 and
        # rounds to -0 in f32 (NumPy computes c64 in f32), putting the f32 result on the
        # other side of the branch cut: -pi (compiled, f64) vs +pi (interpreter).
        assert np.isclose(got[8].real, -np.pi) and np.isclose(ref[8].real, np.pi)
        ref, got = np.delete(ref, 8), np.delete(got, 8)
    r = near(ref, got, SPEC)
    assert r.ok, r.message


def test_tuple_constant(tmp_path):
    text = ("HloModule m\nENTRY e {\n  ROOT c = (f32[2], (s32[], f32[2,2]{0,1})) "
            "constant(({1, 2}, (3, {{1,2},{3,4}})))\n}\n")
    ref, got = _both(text, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)


def test_dynamic_slice_and_update_with_an_index_vector(tmp_path):
    text = ("HloModule m\nENTRY e {\n  x = f32[4,5] parameter(0)\n  i = s32[2] parameter(1)\n"
            "  u = f32[2,2] parameter(2)\n"
            "  ds = f32[2,3] dynamic-slice(x, i), dynamic_slice_sizes={2,3}\n"
            "  dus = f32[4,5] dynamic-update-slice(x, u, i)\n"
            "  ROOT t = (f32[2,3], f32[4,5]) tuple(ds, dus)\n}\n")
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    u = -np.ones((2, 2), np.float32)
    for idx in ([1, 2], [-5, 9], [2**31 - 1, -2**31], [3, 0]):
        ref, got = _both(text, x, np.array(idx, np.int32), u, tmp_path=tmp_path)
        for r, g in zip(ref, got):
            np.testing.assert_array_equal(r, g)


def test_tuple_select(tmp_path):
    text = ("HloModule m\nENTRY e {\n  p = pred[] parameter(0)\n  a = f32[3] parameter(1)\n"
            "  b = s32[2] parameter(2)\n  t1 = (f32[3], s32[2]) tuple(a, b)\n"
            "  n = f32[3] negate(a)\n  t2 = (f32[3], s32[2]) tuple(n, b)\n"
            "  ROOT s = (f32[3], s32[2]) select(p, t1, t2)\n}\n")
    a, b = np.array([1, 2, 3], np.float32), np.array([7, 8], np.int32)
    for p in (True, False):
        ref, got = _both(text, np.array(p), a, b, tmp_path=tmp_path)
        for r, g in zip(ref, got):
            np.testing.assert_array_equal(r, g)


def test_dynamic_reshape_with_constant_sizes(tmp_path):
    text = ("HloModule m\nENTRY e {\n  x = f32[2,6] parameter(0)\n  a = s32[] constant(3)\n"
            "  b = s32[] constant(4)\n  ROOT r = f32[3,4] dynamic-reshape(x, a, b)\n}\n")
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    (ref,), (got,) = _both(text, x, tmp_path=tmp_path)
    np.testing.assert_array_equal(ref, got)
    module = hloc.parse(text.replace("x = f32[2,6] parameter(0)\n  a = s32[] constant(3)",
                                     "x = f32[2,6] parameter(0)\n  a = s32[] parameter(1)"))
    from hloc.diagnostics import UnsupportedError
    with pytest.raises(UnsupportedError, match="dynamic-reshape to sizes that are not constants"):
        compile_module(module, cache_dir=None)


@pytest.mark.parametrize("src,rdt,dst", [("f32", "u32", "s32"), ("f16", "u16", "s8"),
                                         ("bf16", "u16", "s16"), ("f64", "u64", "s64")])
def test_stochastic_convert(src, rdt, dst, tmp_path):
    import ml_dtypes
    from hloc.ir.dtypes import DTYPES
    rng = np.random.default_rng(3)
    vals = np.concatenate([rng.uniform(-300, 300, 200), [np.nan, np.inf, -np.inf, -0.0, 0.5,
                                                           -0.5, 1e30, -1e30, 126.7, -127.9]])
    with np.errstate(over="ignore"):                  # 1e30 is inf in f16, on purpose
        x = vals.astype(DTYPES[src].np if src != "bf16" else ml_dtypes.bfloat16)
    info = np.iinfo(DTYPES[rdt].np)
    r = rng.integers(0, info.max, x.size, dtype=DTYPES[rdt].np, endpoint=True)
    n = x.size
    text = (f"HloModule m\nENTRY e {{\n  x = {src}[{n}] parameter(0)\n  r = {rdt}[{n}] parameter(1)\n"
            f"  ROOT c = {dst}[{n}] stochastic-convert(x, r)\n}}\n")
    (ref,), (got,) = _both(text, x, r, tmp_path=tmp_path)
    np.testing.assert_array_equal(ref, got)


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky(dt, lower, tmp_path):
    import ml_dtypes
    from hloc.ir.dtypes import DTYPES
    rng = np.random.default_rng(5)
    m = rng.standard_normal((3, 5, 5))
    if dt.startswith("c"):                    # Hermitian positive definite
        m = m + 1j * rng.standard_normal((3, 5, 5))
    a = m @ np.swapaxes(m, 1, 2).conj() + 5 * np.eye(5)
    a[2, 1, 1] = -100.0                       # not positive definite: all NaN
    x = a.astype(DTYPES[dt].np if dt != "bf16" else ml_dtypes.bfloat16)
    text = (f"HloModule m\nENTRY e {{\n  a = {dt}[3,5,5] parameter(0)\n"
            f"  ROOT c = {dt}[3,5,5] cholesky(a), lower={'true' if lower else 'false'}\n}}\n")
    (ref,), (got,) = _both(text, x, tmp_path=tmp_path)
    assert np.isnan(np.asarray(got[2].real, np.float32)).all()
    assert not np.isnan(np.asarray(got[:2].real, np.float32)).any()
    r = near(ref, got, ErrorSpec(abs=1e-2, rel=1e-2) if dt in ("f16", "bf16") else SPEC)
    assert r.ok, r.message


def test_batch_norm_ops_compile_through_the_expander(tmp_path):
    text = """HloModule bn

ENTRY e {
  x = f32[2,3,4] parameter(0)
  scale = f32[3] parameter(1)
  offset = f32[3] parameter(2)
  mean = f32[3] parameter(3)
  var = f32[3] parameter(4)
  dy = f32[2,3,4] parameter(5)
  t = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  i = f32[2,3,4] batch-norm-inference(x, scale, offset, mean, var), epsilon=0.001, feature_index=1
  g = (f32[2,3,4], f32[3], f32[3]) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.001, feature_index=1
  ROOT r = ((f32[2,3,4], f32[3], f32[3]), f32[2,3,4], (f32[2,3,4], f32[3], f32[3])) tuple(t, i, g)
}
"""
    rng = np.random.default_rng(2)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)   # noqa: E731
    args = [f(2, 3, 4), f(3), f(3), f(3), np.abs(f(3)) + 0.5, f(2, 3, 4)]
    ref, got = _both(text, *args, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        res = near(r, g, SPEC)
        assert res.ok, res.message
    from hloc.printer import module_to_text
    module = hloc.parse(text)
    before = module_to_text(module)
    compile_module(module, cache_dir=None)
    assert module_to_text(module) == before        # expanded on a clone


def test_async_wrappers_and_copy_start_done(tmp_path):
    text = """HloModule a

%wrapped (p0: f32[4], p1: f32[4]) -> f32[4] {
  %p0 = f32[4] parameter(0)
  %p1 = f32[4] parameter(1)
  ROOT %m = f32[4] multiply(%p0, %p1)
}

ENTRY %e (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %cs = (f32[4], f32[4], u32[]) copy-start(%x)
  %cd = f32[4] copy-done(%cs)
  %as = ((f32[4], f32[4]), f32[4], s32[]) async-start(%cd, %y), calls=%wrapped
  %au = ((f32[4], f32[4]), f32[4], s32[]) async-update(%as)
  %ad = f32[4] async-done(%au)
  %n = f32[4] negate(%x)
  ROOT %t = (f32[4], f32[4]) tuple(%ad, %n)
}
"""
    x, y = np.arange(4, dtype=np.float32), np.full(4, 3, np.float32)
    ref, got = _both(text, x, y, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    np.testing.assert_array_equal(got[0], x * y)


@pytest.mark.parametrize("dt,dist,a,b", [("f32", "rng_uniform", -2.0, 3.0),
                                         ("f64", "rng_uniform", 0.0, 1.0),
                                         ("bf16", "rng_uniform", 1.0, 2.0),
                                         ("s32", "rng_uniform", -5, 7),
                                         ("u8", "rng_uniform", 3, 250),
                                         ("f32", "rng_normal", 1.5, 2.0),
                                         ("f64", "rng_normal", -3.0, 0.5)])
def test_rng_distributions(dt, dist, a, b, tmp_path):
    """rng is random (compiled values are not the interpreter's): the range, the moments,
    every integer of a small range hit, and a new stream on every run."""
    n = 20000
    text = (f"HloModule m\nENTRY e {{\n  a = {dt}[] constant({a})\n  b = {dt}[] constant({b})\n"
            f"  ROOT r = {dt}[{n}] rng(a, b), distribution={dist}\n}}\n")
    exe = compile_module(hloc.parse(text), numerics="ieee", cache_dir=tmp_path / "cache")
    x1, x2 = (np.asarray(exe.run([]), dtype=np.float64) for _ in range(2))
    assert not np.array_equal(x1, x2)
    if dist == "rng_normal":
        assert abs(x1.mean() - a) < 0.1 * b and abs(x1.std() - b) < 0.05 * b
        return
    assert x1.min() >= a and x1.max() < b
    if dt[0] in "su":
        assert set(np.unique(x1)) == set(range(a, b))
    else:
        assert abs(x1.mean() - (a + b) / 2) < 0.02 * (b - a)


def test_instruction_names_never_take_runtime_symbol_names(tmp_path):
    """A kernel for an instruction called %exp or %memcpy gets another name; the libm and
    runtime functions keep theirs (this used to be a DuplicatedNameError)."""
    text = ("HloModule m\nENTRY e {\n  x = f32[4] parameter(0)\n  exp = f32[4] exponential(x)\n"
            "  memcpy = f32[4] sine(exp)\n  pow = f32[4] power(memcpy, x)\n"
            "  ROOT log = f32[4] log(pow)\n}\n")
    x = np.array([0.5, 1.0, 1.5, 2.0], np.float32)
    (ref,), (got,) = _both(text, x, tmp_path=tmp_path)
    assert near(ref, got, SPEC).ok


def test_rng_get_and_update_state_follows_the_interpreter_across_loop_trips(tmp_path):
    # Three trips of a while loop each take the state and advance it by delta: the
    # compiled per-instruction counter must hand back the interpreter's sequence.
    text = """HloModule m
body {
  p = (s32[], u64[3,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  acc = u64[3,2] get-tuple-element(p), index=1
  s = u64[2] rng-get-and-update-state(), delta=4097
  r = u64[1,2] reshape(s)
  zero = s32[] constant(0)
  acc2 = u64[3,2] dynamic-update-slice(acc, r, i, zero)
  one = s32[] constant(1)
  ROOT t = (s32[], u64[3,2]) tuple(add(i, one), acc2)
}
cond {
  p = (s32[], u64[3,2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  ROOT lt = pred[] compare(i, s32[] constant(3)), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  a = u64[3,2] broadcast(u64[] constant(0)), dimensions={}
  w = (s32[], u64[3,2]) while((s32[], u64[3,2]) tuple(z, a)), condition=cond, body=body
  ROOT out = u64[3,2] get-tuple-element(w), index=1
}
"""
    (ref,), (got,) = _both(text, tmp_path=tmp_path)
    np.testing.assert_array_equal(ref, got)
    np.testing.assert_array_equal(got[:, 0], 0x7012395 + 4097 * np.arange(3))


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
def test_ieee_float_sum_keeps_the_evaluators_wide_order(dt, tmp_path):
    # HloEvaluator's fast reduce path (the interpreter's): sums in double, 512 elements per
    # partial, partials added to init in order, rounded once. An in-order f16/bf16 sum
    # of 3000 ones stalls at 2048 (bf16: 256); the wide sum reaches 3000 (bf16: 2992).
    import ml_dtypes
    from hloc.ir.dtypes import DTYPES
    npt = ml_dtypes.bfloat16 if dt == "bf16" else DTYPES[dt].np
    rng = np.random.default_rng(3)
    ones = np.ones((2, 3000), npt)
    mixed = (rng.standard_normal((4, 300, 5)) * 100).astype(npt)
    text = f"""HloModule m
add {{
  x = {dt}[] parameter(0)
  y = {dt}[] parameter(1)
  ROOT s = {dt}[] add(x, y)
}}
ENTRY e {{
  a = {dt}[2,3000] parameter(0)
  b = {dt}[4,300,5] parameter(1)
  init = {dt}[] constant(-0.25)
  zero = {dt}[] constant(0)
  r0 = {dt}[2] reduce(a, init), dimensions={{1}}, to_apply=add
  r1 = {dt}[4] reduce(b, zero), dimensions={{1,2}}, to_apply=add
  r2 = {dt}[300] reduce(b, init), dimensions={{0,2}}, to_apply=add
  ROOT t = ({dt}[2], {dt}[4], {dt}[300]) tuple(r0, r1, r2)
}}
"""
    ref, got = _both(text, ones, mixed, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r.view(np.uint8), g.view(np.uint8))
    assert float(got[0][0]) == (2992.0 if dt == "bf16" else 2999.75 if dt in ("f32", "f64") else 3000.0)


def test_fusion_with_tuple_shaped_parameters(tmp_path):
    # The leaves of a (nested) tuple operand arrive as separate buffers; the fused
    # get-tuple-element chains read them.
    text = """HloModule m
fused {
  p0 = (f32[2,3], (s32[3], f32[2,3])) parameter(0)
  p1 = f32[2,3] parameter(1)
  a = f32[2,3] get-tuple-element(p0), index=0
  inner = (s32[3], f32[2,3]) get-tuple-element(p0), index=1
  i = s32[3] get-tuple-element(inner), index=0
  c = f32[2,3] get-tuple-element(inner), index=1
  fi = f32[3] convert(i)
  ib = f32[2,3] broadcast(fi), dimensions={1}
  ROOT r = (f32[2,3], s32[3]) tuple(add(multiply(a, c), add(ib, p1)), i)
}
ENTRY e {
  x = f32[2,3] parameter(0)
  y = s32[3] parameter(1)
  z = f32[2,3] parameter(2)
  t = (f32[2,3], (s32[3], f32[2,3])) tuple(x, (s32[3], f32[2,3]) tuple(y, z))
  ROOT f = (f32[2,3], s32[3]) fusion(t, z), kind=kLoop, calls=fused
}
"""
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.array([7, -1, 4], np.int32)
    z = np.full((2, 3), 0.5, np.float32)
    ref, got = _both(text, x, y, z, tmp_path=tmp_path)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)
    np.testing.assert_array_equal(got[0], x * z + y[None, :] + z)


def test_fusion_returning_its_tuple_parameter_is_a_located_unsupported(tmp_path):
    from hloc.diagnostics import UnsupportedError
    text = """HloModule m
fused {
  ROOT p0 = (f32[2], f32[3]) parameter(0)
}
ENTRY e {
  x = f32[2] parameter(0)
  y = f32[3] parameter(1)
  t = (f32[2], f32[3]) tuple(x, y)
  ROOT f = (f32[2], f32[3]) fusion(t), kind=kLoop, calls=fused
}
"""
    with pytest.raises(UnsupportedError) as e:
        compile_module(hloc.parse(text), numerics="ieee", cache_dir=tmp_path / "cache")
    assert "tuple-shaped fusion parameter" in e.value.message and e.value.loc is not None


def test_unary_variadic_add_reduce_with_a_tuple_result(tmp_path):
    # One operand, a tuple-shaped reducer: the sequential fold, not the evaluator's sum.
    text = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT t = (f32[]) tuple(add(x, y))
}
ENTRY e {
  a = f32[7,5] parameter(0)
  ROOT r = (f32[7]) reduce(a, f32[] constant(1.5)), dimensions={1}, to_apply=add
}
"""
    a = np.random.default_rng(2).standard_normal((7, 5)).astype(np.float32)
    (ref,), (got,) = _both(text, a, tmp_path=tmp_path)
    np.testing.assert_array_equal(ref, got)


_SHARED_START = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
fused {
  a = f32[10] parameter(0)
  b = f32[10] parameter(1)
  i = s32[] parameter(2)
  one = f32[1] dynamic-slice(a, i), dynamic_slice_sizes={1}
  sa = f32[] reshape(one)
  two = f32[1] dynamic-slice(b, i), dynamic_slice_sizes={1}
  sb = f32[] reshape(two)
  three = f32[3] dynamic-slice(b, i), dynamic_slice_sizes={3}
  c = f32[] constant(0)
  sc = f32[] reduce(three, c), dimensions={0}, to_apply=add
  m = f32[] multiply(sa, sb)
  ROOT r = f32[] add(m, sc)
}
ENTRY e {
  a = f32[10] parameter(0)
  b = f32[10] parameter(1)
  i = s32[] parameter(2)
  ROOT f = f32[] fusion(a, b, i), kind=kLoop, calls=fused
}
"""


def test_dynamic_slices_sharing_a_start(tmp_path):
    """Dynamic slices at one start operand read and clamp it once per block (structural
    _start); slices of other sizes clamp to their own limit."""
    from hloc.backend import jit
    from hloc.backend.context import Options
    a = np.arange(10, dtype=np.float32) + 1
    b = np.arange(10, dtype=np.float32) * 10 - 3
    for i in (-3, 0, 4, 7, 8, 9, 12, 2**31 - 1):
        (ref,), (got,) = _both(_SHARED_START, a, b, np.array(i, np.int32), tmp_path=tmp_path)
        np.testing.assert_array_equal(ref, got)
    text = jit.lower(hloc.parse(_SHARED_START), Options("ieee")).ir_text
    kernel = text[text.index('define internal void @"f"('):]
    kernel = kernel[:kernel.index("\n}")]
    # one clamp for the size-1 slices (limit 9), one for the size-3 slice (limit 7)
    assert kernel.count("icmp sgt i64") == 2, kernel
    assert kernel.count(", 9\n") == 1 and kernel.count(", 7\n") == 1, kernel
