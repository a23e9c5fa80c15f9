"""Scan-shaped programs in the compiled back end: XLA:CPU's tanh, while loops, scalar bodies.

* `tanh` in `xla-cpu` numerics is XLA:CPU's rational approximation: bit for bit the
  values XLA computed (testdata/numerics/tanh_xla.npz, tools/gen_transcendental_values.py);
  `ieee` numerics keep glibc's (the interpreter's bits).
* While loops run body(A -> B) then body(B -> A): every trip count (0, 1, 2, 3, ...)
  ends with the interpreter's state, with in-place DUS and passed-through elements.
* A scan body of small kernels is one straight-line function: its kernels (scalar ops,
  one-element dynamic-slice reads and dynamic-update-slice writes of loop-carried
  arrays) are inlined, so an iteration calls no kernel; a DUS whose output is another
  buffer than its operand still gives the interpreter's values.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm
from hloc.backend.parallel import kernel_work, touched_bytes
from hloc.cli_backend import prepare_for_cpu
from hloc.runner import run_module

ROOT = Path(__file__).resolve().parents[1]
TANH = ROOT / "testdata" / "numerics" / "tanh_xla.npz"


def _tanh_module(dt, n):
    return hloc.parse(f"HloModule t\nENTRY e {{\n  x = {dt}[{n}] parameter(0)\n"
                      f"  ROOT y = {dt}[{n}] tanh(x)\n}}\n")


def _bits(a):
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_tanh_xla_cpu_is_xlas_bits(dt, tmp_path):
    d = np.load(TANH)
    x, want = d[f"x_{dt}"], d[f"tanh_{dt}"]
    got = np.asarray(compile_module(_tanh_module(dt, x.size), numerics="xla-cpu",
                                    cache_dir=tmp_path).run([x]))
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    diff = np.flatnonzero(_bits(got[~nan]) != _bits(want[~nan]))
    assert diff.size == 0, list(zip(x[~nan][diff][:5], got[~nan][diff][:5], want[~nan][diff][:5]))


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_tanh_ieee_is_the_interpreters(dt, tmp_path):
    x = np.load(TANH)[f"x_{dt}"]
    m = _tanh_module(dt, x.size)
    got = np.asarray(compile_module(m, numerics="ieee", cache_dir=tmp_path).run([x]))
    want = np.asarray(run_module(m, [x]).value)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(_bits(got[~nan]), _bits(want[~nan]))


def test_tanh_xla_cpu_is_no_libm_call():
    ir = emit_llvm(_tanh_module("f32", 1024), numerics="xla-cpu")
    assert "@tanh" not in ir and "fdiv" in ir
    assert "@tanh" in emit_llvm(_tanh_module("f32", 1024), numerics="ieee")


# ---------------------------------------------------------------------------
# While loops: A -> B -> A

_LOOP = """HloModule loop

cond {
  p = (s32[], s32[], f32[8], f32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}

body {
  p = (s32[], s32[], f32[8], f32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  xs = f32[8] get-tuple-element(p), index=2
  h = f32[] get-tuple-element(p), index=3
  w = f32[4] get-tuple-element(p), index=4
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  zero = s32[] constant(0)
  four = s32[] constant(4)
  k = s32[] remainder(i, four)
  wk = f32[1] dynamic-slice(w, k), dynamic_slice_sizes={1}
  ws = f32[] reshape(wk)
  hw = f32[] multiply(h, ws)
  h1 = f32[] tanh(hw)
  h2 = f32[] add(h1, ws)
  u = f32[1] reshape(h2)
  xs1 = f32[8] dynamic-update-slice(xs, u, i)
  ROOT t = (s32[], s32[], f32[8], f32[], f32[4]) tuple(i1, n, xs1, h2, w)
}

ENTRY e {
  n = s32[] parameter(0)
  h0 = f32[] parameter(1)
  w = f32[4] parameter(2)
  z = s32[] constant(0)
  c = f32[] constant(0)
  xs = f32[8] broadcast(c), dimensions={}
  init = (s32[], s32[], f32[8], f32[], f32[4]) tuple(z, n, xs, h0, w)
  ROOT r = (s32[], s32[], f32[8], f32[], f32[4]) while(init), condition=cond, body=body
}
"""


@pytest.mark.parametrize("numerics", ["xla-cpu", "ieee"])
def test_while_every_trip_count_ends_in_the_interpreters_state(numerics, tmp_path):
    module = prepare_for_cpu(hloc.parse(_LOOP), None)
    exe = compile_module(module, numerics=numerics, cache_dir=tmp_path)
    w = np.array([0.5, -1.25, 2.0, 0.75], np.float32)
    for n in range(6):
        args = [np.int32(n), np.float32(0.3), w]
        got = exe.run(args)
        want = run_module(module, args).value
        assert int(got[0]) == n
        np.testing.assert_allclose(np.asarray(got[2]), np.asarray(want[2]), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(float(got[3]), float(want[3]), rtol=1e-6, atol=1e-7)
        assert np.array_equal(np.asarray(got[4]), w)
        # the same executable again: the state buffers start over each call
        assert np.array_equal(np.asarray(exe.run(args)[2]), np.asarray(got[2]))


def test_scan_body_calls_no_kernel():
    """The grad(scan) benchmark's loop bodies: straight-line code, no kernel calls."""
    text = (ROOT / "benchmarks" / "data" / "grad_scan_scalars.hlo").read_text()
    module = prepare_for_cpu(hloc.parse(text), None)
    bodies = {w.attrs["body"].name for c in module.computations for w in c.instructions
              if w.opcode == "while"}
    assert len(bodies) == 2
    ir = emit_llvm(module)
    for name in bodies:
        fn = re.search(r"define [^\n]*@\"?comp\." + re.escape(name) + r"\"?\(.*?\n}\n", ir, re.S)
        assert fn is not None, name
        calls = re.findall(r"call [^@\n]*@\"?([\w.$-]+)", fn.group(0))
        assert [c for c in calls if not c.startswith("llvm.")] == [], (name, calls)


def test_touched_bytes_counts_slices_and_in_place_updates():
    module = prepare_for_cpu(hloc.parse(_LOOP), None)
    body = next(c for c in module.computations if c.name == "body")
    fusions = [i for i in body.instructions if i.opcode == "fusion"]
    dus = [f for f in fusions if f.attrs["calls"].root.opcode == "dynamic-update-slice"]
    assert dus, [f.attrs["calls"].root.opcode for f in fusions]
    for f in dus:        # an f32[8] array in, out: one element each way (plus scalars)
        assert touched_bytes(f) < kernel_work(f) and touched_bytes(f) <= 4 * 8
    reads = [f for f in fusions if any(i.opcode == "dynamic-slice"
                                       for i in f.attrs["calls"].instructions)
             and f not in dus]
    for f in reads:
        assert touched_bytes(f) < kernel_work(f)


def test_dus_into_another_buffer_copies_the_operand(tmp_path):
    """A DUS of an entry parameter cannot update in place: its kernel copies the
    operand's bytes into the result, then writes the window."""
    text = ("HloModule d\nENTRY e {\n  a = f32[6,3] parameter(0)\n  u = f32[2,3] parameter(1)\n"
            "  i = s32[] parameter(2)\n  z = s32[] constant(0)\n"
            "  ROOT r = f32[6,3] dynamic-update-slice(a, u, i, z)\n}\n")
    module = hloc.parse(text)
    a = np.arange(18, dtype=np.float32).reshape(6, 3)
    u = -np.ones((2, 3), np.float32)
    exe = compile_module(module, cache_dir=tmp_path)
    for i in (-3, 0, 2, 5, 9):
        got = np.asarray(exe.run([a, u, np.int32(i)]))
        want = np.asarray(run_module(module, [a, u, np.int32(i)]).value)
        assert np.array_equal(got, want), i
    assert np.array_equal(a, np.arange(18, dtype=np.float32).reshape(6, 3))


def test_dus_across_layouts_is_no_byte_copy(tmp_path):
    """Operand {0,1} and result {1,0}: the element loop, not a memcpy of the operand."""
    text = ("HloModule d\nENTRY e {\n  a = f32[4,3]{0,1} parameter(0)\n  u = f32[1,2]{0,1} parameter(1)\n"
            "  i = s32[] parameter(2)\n"
            "  ROOT r = f32[4,3]{1,0} dynamic-update-slice(a, u, i, i)\n}\n")
    module = hloc.parse(text)
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    u = np.array([[-1, -2]], np.float32)
    for i in (0, 1, 3):
        got = np.asarray(compile_module(module, cache_dir=tmp_path).run([a, u, np.int32(i)]))
        want = np.asarray(run_module(module, [a, u, np.int32(i)]).value)
        assert np.array_equal(got, want), i
