"""Row groups in explicit vector code (hloc.backend.row_vector): which groups take it, that
their values are the interpreter's (tails, NaN, infinities, signed zeros), and that their
sums have the bits of the loops LLVM's vectoriser makes of the scalar form."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import buffers, compile_module, emit_llvm, jit, row_groups, row_vector
from hloc.backend.expand import for_codegen
from hloc.cli_backend import prepare_for_cpu
from hloc.ir.dtypes import DTYPES
from hloc.compare import ErrorSpec, near
from hloc.runner import run_module

_ADD = """add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
"""


def _layernorm(rows, cols, tail="multiply(d, rb)"):
    return f"""HloModule layernorm
{_ADD}
ENTRY e {{
  x = f32[{rows},{cols}] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant({cols})
  nb = f32[{rows}] broadcast(n), dimensions={{}}
  s = f32[{rows}] reduce(x, zero), dimensions={{1}}, to_apply=add_f
  mean = f32[{rows}] divide(s, nb)
  mb = f32[{rows},{cols}] broadcast(mean), dimensions={{0}}
  d = f32[{rows},{cols}] subtract(x, mb)
  d2 = f32[{rows},{cols}] multiply(d, d)
  v = f32[{rows}] reduce(d2, zero), dimensions={{1}}, to_apply=add_f
  var = f32[{rows}] divide(v, nb)
  eps = f32[] constant(1e-05)
  epsb = f32[{rows}] broadcast(eps), dimensions={{}}
  rs = f32[{rows}] rsqrt(add(var, epsb))
  rb = f32[{rows},{cols}] broadcast(rs), dimensions={{0}}
  ROOT y = f32[{rows},{cols}] {tail}
}}
"""


def _prepared(text):
    return for_codegen(prepare_for_cpu(hloc.parse(text), None))


def _groups(module):
    comp = module.entry
    return list({id(g): g for g in row_groups.plan(comp, buffers.plan(comp, lambda c: 0)).values()}.values())


def _vector(module, numerics="xla-cpu") -> bool:
    """Whether the module's code has explicit <W x float> row loops."""
    return "load <" in emit_llvm(module, numerics=numerics, optimized=False)


def _x(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 4
    x[1, 3] = np.nan
    x[2, :] = 0.0
    x[3, :] = -0.0
    x[4, 5] = np.inf
    return x


needs_vectors = pytest.mark.skipif(
    row_vector.width(jit.host()[2], jit.host()[3], DTYPES["f32"]) is None,
    reason="no AVX2/AVX-512 on this host")


@needs_vectors
@pytest.mark.parametrize("cols", [1024, 1000, 80])
def test_vector_layernorm_matches_interpreter_and_scalar_bits(cols, monkeypatch, tmp_path):
    """Row lengths with whole vector iterations only, with a tail of vectors and of
    scalars. The sums keep the vectoriser's structure: the scalar form's bits."""
    module = _prepared(_layernorm(96 * 1024 // cols * 4, cols))
    assert _vector(module)
    x = _x(module.entry.parameters[0].shape.dims)
    got = np.asarray(compile_module(module, cache_dir=tmp_path / "v").run([x]))
    ref = run_module(module, [x]).value
    r = near(ref, got, ErrorSpec(abs=1e-5, rel=1e-4))
    assert r.ok, r.message
    monkeypatch.setattr(row_vector, "ENABLED", False)
    assert not _vector(module)
    scalar = np.asarray(compile_module(module, cache_dir=tmp_path / "s").run([x]))
    np.testing.assert_array_equal(got, scalar)


@needs_vectors
def test_short_rows_and_other_ops_keep_scalar_loops(tmp_path):
    """Rows shorter than SUM_IC vectors, an op without the lanes facet (remainder) and
    ieee numerics (sequential sums): today's scalar loops, the interpreter's values."""
    for text, numerics in [(_layernorm(4096, 48), "xla-cpu"),
                           (_layernorm(1024, 1024, "remainder(d, rb)"), "xla-cpu"),
                           (_layernorm(1024, 1024), "ieee")]:
        module = _prepared(text)
        assert len(_groups(module)) == 1
        assert not _vector(module, numerics), text
        x = _x(module.entry.parameters[0].shape.dims)
        got = np.asarray(compile_module(module, numerics=numerics, cache_dir=tmp_path).run([x]))
        r = near(run_module(module, [x]).value, got, ErrorSpec(abs=1e-5, rel=1e-4))
        assert r.ok, r.message


@needs_vectors
def test_part_of_explicit_row_kernels_compiles_lean(monkeypatch):
    """A part whose only loops are explicit vector row loops is optimised at
    compile_threads.LEAN; with the scalar loops it keeps the row settings."""
    from hloc.backend import compile_threads
    from hloc.backend.context import Options
    module = _prepared(_layernorm(1024, 1024))
    assert jit.lower(module, Options()).levels == [compile_threads.LEAN]
    monkeypatch.setattr(row_vector, "ENABLED", False)
    assert compile_threads.LEAN not in jit.lower(module, Options()).levels


@needs_vectors
@pytest.mark.parametrize("cols", [1024, 1000])
def test_vector_exp_has_the_scalar_bits(cols, monkeypatch, tmp_path):
    """vmath's exp on vectors (a group exp(x - mean(x)), below and above the clamps):
    the bits of the scalar loop LLVM vectorises, and the interpreter's values."""
    text = _layernorm(1024, cols, "exponential(d)").replace("rb = f32", "// rb = f32")
    module = _prepared(text)
    assert _vector(module)
    x = _x(module.entry.parameters[0].shape.dims)
    x[5, :7] = [-200, -104.5, -103, 0, 88, 89.5, 200]
    got = np.asarray(compile_module(module, cache_dir=tmp_path / "v").run([x]))
    r = near(run_module(module, [x]).value, got, ErrorSpec(abs=1e-30, rel=1e-5))
    assert r.ok, r.message
    monkeypatch.setattr(row_vector, "ENABLED", False)
    scalar = np.asarray(compile_module(module, cache_dir=tmp_path / "s").run([x]))
    np.testing.assert_array_equal(got, scalar)
