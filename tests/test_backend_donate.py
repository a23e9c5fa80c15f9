"""Donated parameters in the compiled back end: `compile_module(..., donate=...)` puts an
`input_output_alias` output in the donated argument's buffer where the buffer plan
proves it safe (hloc.backend.buffers), copies where it cannot, and changes nothing
without donation. testdata/donate holds a jitted JAX step with donate_argnums as XLA
dumped it (tools/gen_donate_dump.py) with XLA's values."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.diagnostics import InputError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "testdata" / "donate"


def _module(root: str, params: str, alias: str = "{}: (0, {}, may-alias)") -> str:
    return (f"HloModule m, input_output_alias={{ {alias} }}\n\nENTRY e {{\n{params}"
            f"{root}}}\n")


DUS = _module("  ROOT d = f32[256,64] dynamic-update-slice(p, u, i, z)\n",
              "  p = f32[256,64] parameter(0)\n  u = f32[2,64] parameter(1)\n"
              "  i = s32[] parameter(2)\n  z = s32[] constant(0)\n")
# The DUS's result is the aliased output, but p's old value is read after it (the sum).
DUS_THEN_READ = ("  p = f32[256,64] parameter(0)\n  u = f32[2,64] parameter(1)\n"
                 "  i = s32[] parameter(2)\n  z = s32[] constant(0)\n"
                 "  d = f32[256,64] dynamic-update-slice(p, u, i, z)\n  c = f32[] constant(0)\n"
                 "  s = f32[] reduce(p, c), dimensions={0,1}, to_apply=add\n"
                 "  ROOT t = (f32[256,64], f32[]) tuple(d, s)\n")
ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n\n"


def _with_add(text: str) -> str:
    head, rest = text.split("\n\n", 1)
    return head + "\n\n" + ADD + rest


def _dus_args(rng, row=7):
    return [rng.standard_normal((256, 64)).astype(np.float32),
            rng.standard_normal((2, 64)).astype(np.float32), np.int32(row)]


def test_dus_updated_in_place_same_memory():
    exe = compile_module(hloc.parse(DUS), donate=(0,))
    ref = compile_module(hloc.parse(DUS))
    assert exe.donation == [{"output_leaf": 0, "param_leaf": 0, "kind": "may-alias",
                             "placement": "in place"}]
    rng = np.random.default_rng(0)
    x, u, i = _dus_args(rng)
    addr, before = x.ctypes.data, x.copy()
    want = ref.run([before, u, i])
    got = exe.run([x, u, i])
    assert got is x and x.ctypes.data == addr          # the caller's array, updated
    assert np.array_equal(got, want)
    assert np.array_equal(before, want) is False       # it did change
    assert exe.memory_bytes["result_pool"] == 0         # no result buffer was made
    for row in (0, 100, 254, 300):                     # steps of a ring buffer, clamped start
        u = rng.standard_normal((2, 64)).astype(np.float32)
        want = ref.run([want, u, np.int32(row)])
        got = exe.run([got, u, np.int32(row)])
        assert got is x and np.array_equal(got, want)


def test_without_donation_arguments_untouched():
    for text in (DUS, DUS.replace("may-alias", "must-alias")):
        exe = compile_module(hloc.parse(text))
        assert exe.donation == []
        x, u, i = _dus_args(np.random.default_rng(1))
        keep = x.copy()
        got = exe.run([x, u, i])
        assert not np.shares_memory(got, x) and np.array_equal(x, keep)
        want = keep.copy()
        want[7:9] = u
        assert np.array_equal(got, want)


def test_conflicting_read_copies():
    """p is read after the DUS: no in-place update; must-alias copies the result into the
    donated array after the call (as XLA's copy insertion), may-alias returns a fresh one."""
    results = {}
    for kind in ("must-alias", "may-alias"):
        text = _with_add(_module("", DUS_THEN_READ, "{0}: (0, {}, " + kind + ")"))
        exe = compile_module(hloc.parse(text), donate=(0,))
        ref = compile_module(hloc.parse(text))
        placement = {"must-alias": "copy", "may-alias": "fresh"}[kind]
        assert [d["placement"] for d in exe.donation] == [placement]
        x, u, i = _dus_args(np.random.default_rng(2))
        want = ref.run([x.copy(), u, i])
        got = exe.run([x, u, i])
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
        assert (got[0] is x) == (kind == "must-alias")
        results[kind] = got
    # the sum saw the old value, not the updated one
    x, u, i = _dus_args(np.random.default_rng(2))
    assert results["may-alias"][1] == pytest.approx(float(x.sum(dtype=np.float64)), rel=1e-4)


def test_elementwise_in_place_and_reads_before():
    """p*2+1 (one kernel reading element i for element i) goes in place; a transpose of a
    square p reads other elements: computed in its own buffer, then copied (must-alias)."""
    ew = _module("  ROOT r = f32[64,64] add(m, one)\n",
                 "  p = f32[64,64] parameter(0)\n  c = f32[] constant(1)\n"
                 "  one = f32[64,64] broadcast(c), dimensions={}\n"
                 "  m = f32[64,64] multiply(p, p)\n", "{}: (0, {}, must-alias)")
    tr = _module("  ROOT r = f32[64,64] transpose(p), dimensions={1,0}\n",
                 "  p = f32[64,64] parameter(0)\n", "{}: (0, {}, must-alias)")
    x0 = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    for text, placement, want in ((ew, "in place", x0 * x0 + 1), (tr, "copy", x0.T)):
        exe = compile_module(hloc.parse(text), donate=(0,))
        assert [d["placement"] for d in exe.donation] == [placement], text
        x = x0.copy()
        got = exe.run([x])
        assert got is x and np.array_equal(got, want)
        assert np.array_equal(compile_module(hloc.parse(text)).run([x0]), want)


def test_pass_through_and_layouts():
    """out = p (nothing to do) and a column-major parameter updated in place."""
    through = _module("  ROOT t = (f32[8], f32[8]) tuple(p, n)\n",
                      "  p = f32[8] parameter(0)\n  n = f32[8] negate(p)\n",
                      "{0}: (0, {}, may-alias)")
    exe = compile_module(hloc.parse(through), donate=(0,))
    assert [d["placement"] for d in exe.donation] == ["in place"]
    x = np.arange(8, dtype=np.float32)
    got = exe.run([x])
    assert got[0] is x and np.array_equal(got[1], -np.arange(8, dtype=np.float32))
    col = _module("  ROOT r = f32[3,4]{0,1} negate(p)\n", "  p = f32[3,4]{0,1} parameter(0)\n")
    exe = compile_module(hloc.parse(col), donate=(0,))
    assert [d["placement"] for d in exe.donation] == ["in place"]
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    got = exe.run([x])
    assert np.shares_memory(got, x) and np.array_equal(got, -np.arange(12).reshape(3, 4))


def test_unwritable_or_overlapping_argument_is_copied():
    exe = compile_module(hloc.parse(DUS), donate=(0,))
    x, u, i = _dus_args(np.random.default_rng(4))
    ro = x.copy()
    ro.flags.writeable = False
    got = exe.run([ro, u, i])
    assert not np.shares_memory(got, ro) and np.array_equal(ro, x)
    want = x.copy()
    want[7:9] = u
    assert np.array_equal(got, want)
    # the update is a view of the donated array: donating must not change what it reads
    both = x.copy()
    got = exe.run([both, both[:2], np.int32(100)])
    want = x.copy()
    want[100:102] = x[:2]
    assert np.array_equal(got, want) and np.array_equal(both, x)
    with pytest.raises(InputError, match="out="):
        exe.run([x, u, i], out=np.empty_like(x))


def test_cache_keeps_donated_and_plain_apart(tmp_path):
    plain = compile_module(hloc.parse(DUS), cache_dir=tmp_path)
    donated = compile_module(hloc.parse(DUS), cache_dir=tmp_path, donate=(0,))
    again = compile_module(hloc.parse(DUS), cache_dir=tmp_path, donate=(0,))
    assert again.cache_hit and not donated.cache_hit
    assert [d["placement"] for d in again.donation] == ["in place"]
    x, u, i = _dus_args(np.random.default_rng(5))
    keep = x.copy()
    assert not np.shares_memory(plain.run([x, u, i]), x) and np.array_equal(x, keep)
    assert again.run([x, u, i]) is x


@pytest.mark.parametrize("stage", ["before", "after"])
def test_jax_donated_step(stage):
    """XLA's dump of a donate_argnums step: donated and plain runs bit-identical, both
    outputs in the donated arrays, values close to XLA's."""
    d = np.load(DATA / "donate_step.npz")
    text = (DATA / f"donate_step.{stage}_optimizations.hlo").read_text()
    assert "input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }" in text
    exe = compile_module(hloc.parse(text), donate=(0, 1))
    ref = compile_module(hloc.parse(text))
    assert [x["placement"] for x in exe.donation] == ["in place", "in place"]
    ins = [d[f"in{k}"].copy() for k in range(5)]
    want = ref.run([d[f"in{k}"] for k in range(5)])
    got = exe.run(ins)
    assert got[0] is ins[0] and got[1] is ins[1]
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.array_equal(g, w), k
        np.testing.assert_allclose(g, d[f"out{k}"], rtol=1e-5, atol=1e-5)


def test_hloc_run_on_aliased_dump():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for stage in ("before", "after"):
        r = subprocess.run([sys.executable, "-m", "hloc", "run",
                            str(DATA / f"donate_step.{stage}_optimizations.hlo"),
                            "--inputs", str(DATA / "donate_step.npz"),
                            "--expected", str(DATA / "donate_step.npz")],
                           capture_output=True, text=True, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        assert "OK: 3 outputs match" in r.stdout


def test_hloc_compile_with_pipeline():
    """hloc.compile runs the default pipeline on the before-optimizations dump first."""
    d = np.load(DATA / "donate_step.npz")
    exe = hloc.compile(hloc.parse_file(DATA / "donate_step.before_optimizations.hlo"),
                       donate=(0, 1))
    assert [x["placement"] for x in exe.donation] == ["in place", "in place"]
    ins = [d[f"in{k}"].copy() for k in range(5)]
    got = exe.run(ins)
    assert got[0] is ins[0] and got[1] is ins[1]
    plain = hloc.compile(hloc.parse_file(DATA / "donate_step.before_optimizations.hlo"))
    for g, w in zip(got, plain.run([d[f"in{k}"] for k in range(5)])):
        assert np.array_equal(g, w)


ROWS = _module("  ROOT r = f32[512,1024] subtract(p, mb)\n",
               "  p = f32[512,1024] parameter(0)\n  c = f32[] constant(-inf)\n"
               "  m = f32[512] reduce(p, c), dimensions={1}, to_apply=max\n"
               "  mb = f32[512,1024] broadcast(m), dimensions={0}\n")
MAX = "max {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] maximum(a, b)\n}\n\n"
LOOP = ("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n\n" + ADD +
        "body {\n  s = (s32[], f32[3,3]) parameter(0)\n  k = s32[] get-tuple-element(s), index=0\n"
        "  x = f32[3,3] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n"
        "  k1 = s32[] add(k, one)\n  y = f32[3,3] dot(x, x), lhs_contracting_dims={1}, "
        "rhs_contracting_dims={0}\n  h = f32[] constant(0.5)\n"
        "  hb = f32[3,3] broadcast(h), dimensions={}\n  z = f32[3,3] multiply(y, hb)\n"
        "  ROOT t = (s32[], f32[3,3]) tuple(k1, z)\n}\n\n"
        "cond {\n  s = (s32[], f32[3,3]) parameter(0)\n  k = s32[] get-tuple-element(s), index=0\n"
        "  n = s32[] constant(50)\n  ROOT lt = pred[] compare(k, n), direction=LT\n}\n\n"
        "ENTRY e {\n  p = f32[3,3] parameter(0)\n  z = s32[] constant(0)\n"
        "  t = (s32[], f32[3,3]) tuple(z, p)\n"
        "  w = (s32[], f32[3,3]) while(t), condition=cond, body=body\n"
        "  ROOT r = f32[3,3] get-tuple-element(w), index=1\n}\n")


@pytest.mark.parametrize("name", ["rows", "loop"])
def test_row_group_and_while_read_the_parameter(name):
    """A row group (row max, then subtract) reads p in the kernel that makes the output:
    not in place (may-alias: a fresh result). A while loop whose state starts from p
    keeps its state there. Values unchanged either way."""
    text = _with_add(ROWS).replace(ADD, MAX) if name == "rows" else LOOP
    exe = compile_module(hloc.parse(text), donate=(0,))
    ref = compile_module(hloc.parse(text))
    assert [d["placement"] for d in exe.donation] == ["fresh" if name == "rows" else "in place"]
    shape = (512, 1024) if name == "rows" else (3, 3)
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    if name == "loop":
        x *= 0.3
    keep = x.copy()
    want = ref.run([keep])
    got = exe.run([x])
    assert np.array_equal(got, want) and np.isfinite(want).all()
    assert (got is x) == (name == "loop")
    if name == "rows":
        assert np.array_equal(want, keep - keep.max(axis=1, keepdims=True))


SCAN = ("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n\n"
        "body {\n  s = (s32[], f32[100,16]) parameter(0)\n  k = s32[] get-tuple-element(s), index=0\n"
        "  x = f32[100,16] get-tuple-element(s), index=1\n  one = s32[] constant(1)\n"
        "  k1 = s32[] add(k, one)\n  z = s32[] constant(0)\n"
        "  prev = f32[1,16] dynamic-slice(x, k, z), dynamic_slice_sizes={1,16}\n"
        "  c2 = f32[] constant(2)\n  two = f32[1,16] broadcast(c2), dimensions={}\n"
        "  row = f32[1,16] multiply(prev, two)\n"
        "  y = f32[100,16] dynamic-update-slice(x, row, k1, z)\n"
        "  ROOT t = (s32[], f32[100,16]) tuple(k1, y)\n}\n\n"
        "cond {\n  s = (s32[], f32[100,16]) parameter(0)\n  k = s32[] get-tuple-element(s), index=0\n"
        "  n = s32[] constant(99)\n  ROOT lt = pred[] compare(k, n), direction=LT\n}\n\n"
        "ENTRY e {\n  p = f32[100,16] parameter(0)\n  z = s32[] constant(0)\n"
        "  t = (s32[], f32[100,16]) tuple(z, p)\n"
        "  w = (s32[], f32[100,16]) while(t), condition=cond, body=body\n"
        "  ROOT r = f32[100,16] get-tuple-element(w), index=1\n}\n")


def test_scan_over_donated_carry():
    """A loop writing row k+1 from row k of a donated carry: the state lives in the
    argument; each row doubles the one before."""
    text = SCAN
    exe = compile_module(hloc.parse(text), donate=(0,))
    assert [d["placement"] for d in exe.donation] == ["in place"]
    x = np.zeros((100, 16), np.float32)
    x[0] = np.arange(16)
    want = compile_module(hloc.parse(text)).run([x.copy()])
    got = exe.run([x])
    assert got is x and np.array_equal(got, want)
    assert np.array_equal(got[:, 3], 3 * 2.0 ** np.arange(100, dtype=np.float32))
