"""hloc.backend.bounds: the sign and bound facts, and that the code they simplify (exp
without its clamp from above, the row divide without its sign operations) gives the
same bits as the full code on edge inputs."""
from __future__ import annotations

import re

import numpy as np
import pytest

import hloc
from hloc.backend import bounds, buffers, compile_module, emit_llvm, row_groups, row_hosts
from hloc.backend.bounds import Bounds
from hloc.backend.expand import for_codegen
from hloc.cli_backend import prepare_for_cpu

_REDUCERS = """max_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
min_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] minimum(a, b)
}
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
"""


def _module(body, n=64, m=4096):
    return hloc.parse(f"""HloModule b
{_REDUCERS}
ENTRY e {{
  x = f32[{n},{m}] parameter(0)
  y = f32[{n},{m}] parameter(1)
  c = c64[{n},{m}] parameter(2)
  ninf = f32[] constant(-inf)
  zero = f32[] constant(0)
{body}
}}
""")


def _inst(module, name):
    return next(i for i in module.entry.instructions if i.name == name)


_MAX = "  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=max_f\n"
_AT_MOST_ZERO = [
    (_MAX + "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"
            "  ROOT t = f32[64,4096] subtract(x, mb)", True),
    (_MAX + "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"       # m - x >= 0
            "  ROOT t = f32[64,4096] subtract(mb, x)", False),
    ("  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=min_f\n"  # a min
     "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"
     "  ROOT t = f32[64,4096] subtract(x, mb)", False),
    ("  mx = f32[64] reduce(y, ninf), dimensions={1}, to_apply=max_f\n"  # another array's max
     "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"
     "  ROOT t = f32[64,4096] subtract(x, mb)", False),
    ("  mx = f32[64] reduce(x, ninf), dimensions={1}, to_apply=add_f\n"  # a sum
     "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"
     "  ROOT t = f32[64,4096] subtract(x, mb)", False),
    ("  ROOT t = f32[64,4096] subtract(x, y)", False),
]


@pytest.mark.parametrize("body,known", _AT_MOST_ZERO)
def test_at_most_zero(body, known):
    module = _module(body)
    t = _inst(module, "t")
    assert Bounds(t).at_most_zero(t) is known


def test_at_most_zero_needs_the_kept_dimensions_broadcast_back():
    """A square array's row maxima broadcast along the other dimension are not each
    element's own row's maximum."""
    module = _module(_MAX.replace("[64]", "[4096]").replace("dimensions={1}", "dimensions={0}")
                     + "  mb = f32[4096,4096] broadcast(mx), dimensions={0}\n"
                       "  ROOT t = f32[4096,4096] subtract(x, mb)", n=4096)
    t = _inst(module, "t")
    assert not Bounds(t).at_most_zero(t)


_SIGN_CLEAR = [
    ("exponential(x)", True), ("abs(x)", True), ("multiply(ex, ex)", True),
    ("divide(ex, ex)", True), ("add(ex, ex)", True), ("maximum(ex, x)", False),
    ("minimum(ex, ex)", True), ("negate(ex)", False), ("subtract(ex, ex)", False),
    ("log(ex)", False), ("sqrt(ex)", False), ("x", False),
]


@pytest.mark.parametrize("expr,known", _SIGN_CLEAR)
def test_sign_clear(expr, known):
    module = _module(f"  ex = f32[64,4096] exponential(x)\n  ROOT t = f32[64,4096] {expr}"
                     if expr != "x" else "  ROOT t = f32[64,4096] copy(x)")
    t = _inst(module, "t")
    assert Bounds(t).sign_clear(t) is known


def test_sign_clear_only_for_real_values():
    """exp of a complex number is not a non-negative real."""
    module = _module("  ROOT t = c64[64,4096] exponential(c)")
    t = _inst(module, "t")
    assert not Bounds(t).sign_clear(t)


def test_facts_follow_fusion_parameters():
    """Inside softmax's fused members: exp's operand is x - max(x) (parameters followed
    to the instructions feeding them) and the divide's numerator is exp's result."""
    module = for_codegen(prepare_for_cpu(_module(
        _MAX + "  mb = f32[64,4096] broadcast(mx), dimensions={0}\n"
               "  d = f32[64,4096] subtract(x, mb)\n"
               "  ex = f32[64,4096] exponential(d)\n"
               "  s = f32[64] reduce(ex, zero), dimensions={1}, to_apply=add_f\n"
               "  sb = f32[64,4096] broadcast(s), dimensions={0}\n"
               "  ROOT r = f32[64,4096] divide(ex, sb)"), None))
    seen = set()
    for m in module.entry.instructions:
        if m.opcode != "fusion":
            continue
        for i in m.attrs["calls"].instructions:
            if i.opcode == "exponential":
                assert Bounds(m).at_most_zero(i.operands[0])
                seen.add("exp")
            if i.opcode == "divide":
                assert Bounds(m).sign_clear(i.operands[0])
                assert not Bounds(m).sign_clear(i.operands[1])   # a sum: not followed
                seen.add("divide")
    assert seen == {"exp", "divide"}


def _softmax(n=64, m=4096):
    return for_codegen(prepare_for_cpu(_module(
        _MAX + f"""  mb = f32[{n},{m}] broadcast(mx), dimensions={{0}}
  d = f32[{n},{m}] subtract(x, mb)
  ex = f32[{n},{m}] exponential(d)
  s = f32[{n}] reduce(ex, zero), dimensions={{1}}, to_apply=add_f
  sb = f32[{n},{m}] broadcast(s), dimensions={{0}}
  ROOT r = f32[{n},{m}] divide(ex, sb)""".replace("[64]", f"[{n}]").replace("[64,4096]", f"[{n},{m}]"),
        n, m), None))


def _edge_rows(n=64, m=4096):
    """Rows with NaN (either sign), infinities, the largest and smallest magnitudes,
    subnormals, signed zeros, spreads past exp's underflow, and the row divide's redo
    cases (quotients below its range, a zero sum)."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((n, m)) * 4).astype(np.float32)
    f32 = np.finfo(np.float32)
    x[1, 100] = np.nan
    x[2, 7] = -np.array(np.nan, np.float32)
    x[3, 9] = np.inf
    x[4, 11] = -np.inf
    x[5] = -np.inf
    x[6] = np.inf
    x[7, 5], x[7, 6] = np.inf, -np.inf
    x[8] = f32.max
    x[9, 0], x[9, 1] = f32.max, -f32.max                # x - max = -inf
    x[10] = f32.tiny * rng.standard_normal(m).astype(np.float32)
    x[11] = (rng.integers(1, 1 << 23, m, dtype=np.uint32)).view(np.float32)   # subnormals
    x[12] = -0.0
    x[13] = 0.0
    x[13, ::3] = -0.0
    x[14] = rng.uniform(-200, 0, m).astype(np.float32)  # exp underflows to 0
    x[15] = rng.uniform(-80, 0, m).astype(np.float32)   # quotients below 2^-90
    x[16] = 88.0 + rng.uniform(0, 1, m).astype(np.float32)
    x[17] = 1e30
    x[17, 3] = -1e30
    x[18] = -1e30
    x[19, 17] = 1e38
    x[20] = np.float32(89.5)
    x[21, ::2] = -np.inf
    return x


@pytest.mark.parametrize("mode", ["stack-rows", "hosted-rows", "kernels"])
def test_simplified_code_gives_the_same_bits(mode, monkeypatch, tmp_path):
    """xla-cpu: softmax with exp's upper clamp left out (bounds known) and, in a row group,
    the row divide's copysign and abs equals the full code bit for bit on edge rows, on 1
    and 2 threads: in a row group (rows on the stack or hosted in the output) and as
    separate kernels."""
    if mode == "hosted-rows":
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    if mode == "kernels":
        monkeypatch.setattr(row_groups, "MIN_BYTES", 1 << 60)
    module = _softmax()
    comp = module.entry
    assert bool(row_groups.plan(comp, buffers.plan(comp, lambda c: 0))) == (mode != "kernels")
    x = _edge_rows()
    args = [x, x, np.zeros(x.shape, np.complex64)]
    outs, texts = {}, {}
    for on in (False, True):
        monkeypatch.setattr(bounds, "ENABLED", on)
        texts[on] = emit_llvm(module, numerics="xla-cpu", optimized=False)
        exe = compile_module(module, numerics="xla-cpu", threads=2, cache_dir=tmp_path / str(on))
        outs[on] = [exe.run(args).tobytes()]
        exe.set_threads(1)
        outs[on].append(exe.run(args).tobytes())
    if mode != "kernels":
        assert "llvm.copysign." in texts[False] and "llvm.copysign." not in texts[True]
    clamp = r"fcmp ogt (?:float|<\d+ x float>) \S+, (?:splat \(float )?0x4056400000000000"
    assert re.search(clamp, texts[False]) and not re.search(clamp, texts[True])
    assert outs[True] == outs[False]
    assert outs[True][0] == outs[True][1]
