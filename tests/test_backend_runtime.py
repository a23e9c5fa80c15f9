"""The compiled back end's runtime: result buffers reused only when nobody holds them,
`run(out=...)`, the object cache keyed on HLO text (a hit runs neither the HLO passes
nor IR generation), per-kernel profiles (`hloc run --profile`) and memory in --json."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.backend.profile import table
from hloc.diagnostics import InputError

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / "testdata" / "dumps"
SQ = ("HloModule m\n\nENTRY e {\n  a = f32[1000] parameter(0)\n"
      "  ROOT r = f32[1000] multiply(a, a)\n}\n")
PAIR = ("HloModule m\n\nENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n"
        "  t = f32[3,2]{0,1} transpose(a), dimensions={1,0}\n  n = f32[2,3]{0,1} negate(a)\n"
        "  ROOT r = (f32[3,2]{0,1}, f32[2,3]{0,1}) tuple(t, n)\n}\n")


def test_result_buffers_reused_only_when_dropped():
    exe = compile_module(hloc.parse(SQ))
    a = np.arange(1000, dtype=np.float32)
    r1 = exe.run([a])
    p1 = r1.ctypes.data
    r2 = exe.run([a])
    assert not np.shares_memory(r1, r2)            # r1 is held: never overwritten
    view = r1[10:20]
    del r1
    r3 = exe.run([a + 1])
    assert r3.ctypes.data != p1                    # a view keeps r1's buffer alive
    np.testing.assert_array_equal(view, np.arange(10, 20, dtype=np.float32) ** 2)
    del view
    r4 = exe.run([a + 2])
    assert r4.ctypes.data == p1                    # now unused: reused, no allocation
    np.testing.assert_array_equal(r2, a * a)
    np.testing.assert_array_equal(r3, (a + 1) ** 2)
    np.testing.assert_array_equal(r4, (a + 2) ** 2)
    assert exe.memory_bytes["result_pool"] == 3 * 4000


def test_large_results_lie_where_their_largest_argument_does():
    from hloc.backend.executable import PLACE_BYTES
    n = PLACE_BYTES // 4 + 1000
    exe = compile_module(hloc.parse(
        f"HloModule m\n\nENTRY e {{\n  a = f32[{n}] parameter(0)\n  s = f32[8] parameter(1)\n"
        f"  m = f32[{n}] multiply(a, a)\n  w = f64[{n}] convert(a)\n  t = f32[8] negate(s)\n"
        f"  ROOT r = (f32[{n}], f64[{n}], f32[8]) tuple(m, w, t)\n}}\n"))
    raw = np.empty(n * 4 + 8192, np.uint8)
    small = np.arange(8, dtype=np.float32)
    held = []
    for offset in (16, 20, 48, 2064, 0, 4092):
        at = (offset - raw.ctypes.data) % 4096
        a = raw[at:at + n * 4].view(np.float32)
        a[:] = np.arange(n, dtype=np.float32) % 97 - offset
        m, w, t = exe.run([a, small])
        held.append((m, w))                        # held: every call makes new ones
        assert m.ctypes.data % 4096 == offset
        assert w.ctypes.data % 4096 == offset - offset % 8
        np.testing.assert_array_equal(m, a * a)
        np.testing.assert_array_equal(w, a.astype(np.float64))
        np.testing.assert_array_equal(t, -small)
        assert m.flags.writeable and w.flags.c_contiguous


def test_large_results_reused_only_when_dropped():
    # placed results (_new_result) are views of a larger buffer: a view of one, or the
    # transpose run() returns for a {0,1} result, must keep it from reuse as well
    from hloc.backend.executable import PLACE_BYTES
    rows = PLACE_BYTES // 4 // 512 + 1
    for layout in ("{1,0}", "{0,1}"):
        exe = compile_module(hloc.parse(
            f"HloModule m\n\nENTRY e {{\n  a = f32[{rows},512]{layout} parameter(0)\n"
            f"  ROOT r = f32[{rows},512]{layout} negate(a)\n}}\n"))
        a = np.arange(rows * 512, dtype=np.float32).reshape(rows, 512)
        r = exe.run([a])
        view = r[0]
        first = r.copy()
        del r
        again = exe.run([3 * a])                    # view holds the first buffer
        np.testing.assert_array_equal(view, -a[0])
        np.testing.assert_array_equal(again, -3 * a)
        np.testing.assert_array_equal(first, -a)
        places = set()
        for k in range(4):                          # dropped: one buffer, reused
            places.add(exe.run([a + k]).__array_interface__["data"][0])
        assert len(places) == 1


def test_out_argument():
    exe = compile_module(hloc.parse(PAIR))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = np.asfortranarray(np.zeros((3, 2), np.float32))     # {0,1}: column-major
    n = np.asfortranarray(np.zeros((2, 3), np.float32))
    got = exe.run([a], out=(t, n))
    assert got[0] is not None and np.shares_memory(got[0], t) and np.shares_memory(got[1], n)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(n, -a)
    with pytest.raises(InputError, match="contiguous"):
        exe.run([a], out=(np.zeros((3, 2), np.float32), n))
    with pytest.raises(InputError, match="does not match"):
        exe.run([a], out=(t.astype(np.float64), n))
    sq = compile_module(hloc.parse(SQ))
    x = np.ones(1000, np.float32)
    with pytest.raises(InputError, match="overlaps"):
        sq.run([x], out=x)


def test_cache_hit_skips_passes_and_lowering(tmp_path, monkeypatch):
    path = DUMPS / "reduce_sum_xyz.before_optimizations.hlo"
    first = hloc.compile(hloc.parse_file(path), cache_dir=tmp_path)
    assert not first.cache_hit and first.lowered is not None
    import hloc.backend.executable as ex

    def boom(*a, **k):
        raise AssertionError("lowered on a cache hit")
    monkeypatch.setattr(ex, "lower", boom)
    untouched = hloc.parse_file(path)
    before = hloc.to_text(untouched)
    second = hloc.compile(untouched, cache_dir=tmp_path)
    assert second.cache_hit and second.lowered is None
    assert hloc.to_text(untouched) == before               # the passes did not run
    data = np.load(DUMPS / "reduce_sum_xyz.npz")
    args = [data[f"in{i}"] for i in range(3)]
    np.testing.assert_array_equal(first.run(args), second.run(args))
    np.testing.assert_allclose(second.run(args), data["out0"], rtol=1e-3)
    monkeypatch.undo()
    ieee = hloc.compile(hloc.parse_file(path), cache_dir=tmp_path, numerics="ieee")
    assert not ieee.cache_hit                               # options are in the key
    no_opt = hloc.compile(hloc.parse_file(path), cache_dir=tmp_path, optimize=False)
    assert not no_opt.cache_hit                             # so is the pipeline


def test_profile_names_every_kernel():
    text = ("HloModule m\n\nENTRY e {\n  a = f32[256,256] parameter(0)\n"
            "  e1 = f32[256,256] exponential(a)\n"
            "  d = f32[256,256] dot(e1, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
            "  ROOT n = f32[256,256] negate(d)\n}\n")
    exe = compile_module(hloc.parse(text), profile=True)
    a = np.ones((256, 256), np.float32)
    exe.run([a])
    exe.run([a])
    rows = exe.profile()
    names = {r["name"]: r for r in rows}
    assert set(names) == {"e1", "d", "n"}
    assert all(r["calls"] == 2 and r["seconds"] > 0 for r in rows)
    assert names["d"]["opcode"] == "dot:blas" and names["d"]["flops"] == 2 * 2 * 256 ** 3
    assert names["n"]["bytes"] == 2 * 2 * 256 * 256 * 4
    assert [r["seconds"] for r in rows] == sorted((r["seconds"] for r in rows), reverse=True)
    assert "d (dot:blas, e)" in table(rows)
    exe.reset_profile()
    assert exe.profile() == []
    with pytest.raises(ValueError):
        compile_module(hloc.parse(text)).profile()


def test_cli_profile_and_memory(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path))
    path = str(DUMPS / "logsumexp_softmax.after_optimizations.hlo")
    r = subprocess.run([sys.executable, "-m", "hloc", "run", path, "--backend", "cpu",
                        "--profile", "--iterations", "2"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "profile of 2 iteration(s):" in r.stderr and "GB/s" in r.stderr
    assert "(fusion:kLoop, " in r.stderr
    r = subprocess.run([sys.executable, "-m", "hloc", "run", path, "--backend", "cpu",
                        "--profile", "--json"], capture_output=True, text=True, env=env, check=True)
    obj = json.loads(r.stdout)
    assert obj["profile"] and {"name", "seconds", "bytes", "gb_per_s"} <= set(obj["profile"][0])
    assert obj["memory"]["arena"] >= 0 and obj["memory"]["peak_rss"] > 0
    r = subprocess.run([sys.executable, "-m", "hloc", "run", path, "--backend", "interpreter",
                        "--profile"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "--profile needs --backend cpu" in r.stderr


def _full_sum(n, dt="f32", init="0", op="add"):
    return (f"HloModule m\n\nr {{\n  a = {dt}[] parameter(0)\n  b = {dt}[] parameter(1)\n"
            f"  ROOT c = {dt}[] {op}(a, b)\n}}\n\nENTRY e {{\n  x = {dt}[{n}] parameter(0)\n"
            f"  y = {dt}[{n}] multiply(x, x)\n  z = {dt}[] constant({init})\n"
            f"  s = {dt}[] reduce(y, z), dimensions={{0}}, to_apply=r\n"
            f"  k = {dt}[] constant(3)\n  ROOT m = {dt}[] divide(s, k)\n}}\n")


def test_full_reduction_split_in_fixed_chunks():
    """A large full reduction (here fused with its producer and a scalar divide) is split
    into chunks fixed by its size: the bits are the same for 1, 2 and 3 threads."""
    from hloc.backend import emit_llvm
    n = 1 << 20
    text = _full_sum(n)
    assert ".partial" in emit_llvm(hloc.parse(text), optimized=False)
    assert ".partial" not in emit_llvm(hloc.parse(text), numerics="ieee", optimized=False)
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    exe = compile_module(hloc.parse(text), threads=1)
    want = exe.run([x]).tobytes()
    for t in (2, 3):
        exe.set_threads(t)
        assert exe.run([x]).tobytes() == want
    np.testing.assert_allclose(exe.run([x]), np.sum(x.astype(np.float64) ** 2) / 3, rtol=1e-5)
    ints = np.arange(n, dtype=np.int64) % 1000 - 500
    got = compile_module(hloc.parse(_full_sum(n, "s64")), threads=2).run([ints])
    assert int(got) == int(np.sum(ints * ints)) // 3


@pytest.mark.parametrize("init,op,split", [("0", "add", True), ("1", "add", False),
                                           ("-inf", "maximum", True), ("0", "maximum", False),
                                           ("1", "multiply", True), ("inf", "minimum", True)])
def test_full_reduction_split_only_from_an_identity(init, op, split):
    """A chunk starts from init, so only an identity init is split; any other init is
    reduced whole (and still counted once)."""
    from hloc.backend import emit_llvm
    n = 1 << 20
    text = _full_sum(n, init=init, op=op)
    assert (".partial" in emit_llvm(hloc.parse(text), optimized=False)) == split
    x = (np.random.default_rng(2).standard_normal(n) * 0.001 + (1 if op == "multiply" else 0)
         ).astype(np.float32)
    y = x.astype(np.float64) ** 2
    ref = {"add": lambda: np.sum(y) + float(init), "maximum": lambda: max(np.max(y), float(init)),
           "minimum": lambda: min(np.min(y), float(init)),
           "multiply": lambda: np.prod(y) * float(init)}[op]() / 3
    rtol = 5e-3 if op == "multiply" else 1e-4      # f32 rounding over 1M factors
    np.testing.assert_allclose(compile_module(hloc.parse(text)).run([x]), ref, rtol=rtol)


@pytest.mark.parametrize("name", ["scan_carry_f64", "grad_scan_scalars"])
def test_benchmark_scans_match_jax(name):
    """The scan programs of benchmarks/run.py (tools/gen_bench_dumps.py) give the values
    JAX computed on XLA:CPU."""
    from hloc.inputs import bind_arguments, flatten_leaves, load_npz
    stem = ROOT / "benchmarks" / "data" / name
    module = hloc.parse_file(stem.with_suffix(".hlo"))
    d = load_npz(stem.with_suffix(".npz"))
    n_in = sum(1 for k in d if k.startswith("in"))
    n_out = sum(1 for k in d if k.startswith("out"))
    assert (n_in, n_out) == ((2, 1) if name == "scan_carry_f64" else (33, 32))
    args = bind_arguments(module, [d[f"in{i}"] for i in range(n_in)])
    got = flatten_leaves(hloc.compile(module).run(args), module.entry.root.shape)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, d[f"out{i}"], rtol=2e-5, atol=1e-6, err_msg=f"out{i}")


_DUS_LOOP = """HloModule m
body {
  p = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  a = f32[8] get-tuple-element(p), index=1
  b = f32[8] get-tuple-element(p), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  v = f32[] convert(i1)
  u = f32[1] broadcast(v), dimensions={}
  d = f32[8] dynamic-update-slice(a, u, i)
  e = f32[8] dynamic-update-slice(b, u, i)
  %s
  ROOT t = (s32[], f32[8], f32[8]) tuple(i1, d, %s)
}
cond {
  p = (s32[], f32[8], f32[8]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(8)
  ROOT c = pred[] compare(i, n), direction=LT
}
ENTRY e {
  z = s32[] constant(0)
  a = f32[8] parameter(0)
  t = (s32[], f32[8], f32[8]) tuple(z, a, a)
  ROOT w = (s32[], f32[8], f32[8]) while(t), condition=cond, body=body
}
"""


@pytest.mark.parametrize("optimize", [False, True])
@pytest.mark.parametrize("third", ["e", "m"])
def test_dus_in_loops_in_place_and_not(optimize, third):
    """A state element updated only by a DUS is updated in place (one buffer); one whose
    old value is read again (`m` = b * b next to `e`) keeps two: both give the
    interpreter's values, fused or not."""
    from hloc.backend.inplace import inplace_state
    extra = "m = f32[8] multiply(b, e)" if third == "m" else ""
    text = _DUS_LOOP % (extra, third)
    module = hloc.parse(text)
    body = next(c for c in module.computations if c.name == "body")
    assert inplace_state(body) == ({1, 2} if third == "e" else {1})
    x = np.full(8, -1, np.float32)
    want = hloc.parse(text).run(x)
    got = hloc.compile(hloc.parse(text), optimize=optimize).run([x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(got[1], np.arange(1, 9, dtype=np.float32))
