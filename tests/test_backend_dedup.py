"""Identical kernels compile once (hloc.backend.dedup): two fusions that differ only in
names share one LLVM function and compute what the interpreter computes; any difference
in shape, layout, constant, attribute or parameter order keeps them apart; on real dumps
every kernel merged emits exactly the IR of the kernel it reuses, and the results are
bit-identical with and without sharing."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, dedup, jit
from hloc.backend.context import ModuleContext, Options
from hloc.backend.kernels import emit_kernel
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.interp import run_module

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"

# Two fusions, f.a and f.b, on parameters p0/p1 and p2/p3; the template's fields let a
# test make them differ in one respect.
TEMPLATE = """HloModule twins, entry_computation_layout={{(f32[{n},8]{{1,0}}, f32[{n},8]{{1,0}}, f32[{n},8]{{{lb}}}, f32[{n},8]{{1,0}})->(f32[{n},8]{{1,0}}, f32[{n},8]{{1,0}})}}

%fa (a0: f32[{n},8], a1: f32[{n},8]) -> f32[{n},8] {{
  %a0 = f32[{n},8]{{1,0}} parameter(0)
  %a1 = f32[{n},8]{{1,0}} parameter(1)
  %ca = f32[] constant(2)
  %ba = f32[{n},8]{{1,0}} broadcast(f32[] %ca), dimensions={{}}
  %ma = f32[{n},8]{{1,0}} multiply(f32[{n},8]{{1,0}} %a0, f32[{n},8]{{1,0}} %ba)
  %cmpa = pred[{n},8]{{1,0}} compare(f32[{n},8]{{1,0}} %ma, f32[{n},8]{{1,0}} %a1), direction=GT
  ROOT %sa = f32[{n},8]{{1,0}} select(pred[{n},8]{{1,0}} %cmpa, f32[{n},8]{{1,0}} %ma, f32[{n},8]{{1,0}} %a1)
}}

%fb (b0: f32[{n},8], b1: f32[{n},8]) -> f32[{n},8] {{
  %b0 = f32[{n},8]{{{lb}}} parameter({p0})
  %b1 = f32[{n},8]{{1,0}} parameter({p1})
  %cb = f32[] constant({c})
  %bb = f32[{n},8]{{1,0}} broadcast(f32[] %cb), dimensions={{}}
  %mb = f32[{n},8]{{1,0}} multiply(f32[{n},8]{{{lb}}} %b0, f32[{n},8]{{1,0}} %bb)
  %cmpb = pred[{n},8]{{1,0}} compare(f32[{n},8]{{1,0}} %mb, f32[{n},8]{{1,0}} %b1), direction={d}
  ROOT %sb = f32[{n},8]{{1,0}} select(pred[{n},8]{{1,0}} %cmpb, f32[{n},8]{{1,0}} %mb, f32[{n},8]{{1,0}} %b1)
}}

ENTRY %main (p0: f32[{n},8], p1: f32[{n},8], p2: f32[{n},8], p3: f32[{n},8]) -> (f32[{n},8], f32[{n},8]) {{
  %p0 = f32[{n},8]{{1,0}} parameter(0)
  %p1 = f32[{n},8]{{1,0}} parameter(1)
  %p2 = f32[{n},8]{{{lb}}} parameter(2)
  %p3 = f32[{n},8]{{1,0}} parameter(3)
  %f.a = f32[{n},8]{{1,0}} fusion(f32[{n},8]{{1,0}} %p0, f32[{n},8]{{1,0}} %p1), kind=kLoop, calls=%fa, metadata={{op_name="a"}}
  %f.b = f32[{n},8]{{1,0}} fusion(f32[{n},8]{{{lb}}} %{q0}, f32[{n},8]{{1,0}} %{q1}), kind=kLoop, calls=%fb, metadata={{op_name="b"}}
  ROOT %t = (f32[{n},8]{{1,0}}, f32[{n},8]{{1,0}}) tuple(f32[{n},8]{{1,0}} %f.a, f32[{n},8]{{1,0}} %f.b)
}}
"""
SAME = dict(n=4, lb="1,0", p0=0, p1=1, q0="p2", q1="p3", c=2, d="GT")


def _module(**changes):
    return hloc.parse(TEMPLATE.format(**dict(SAME, **changes)))


def _kernels(ir_text: str) -> list[str]:
    # either kernel ABI: an array of pointers, or (inlinable kernels) the pointers themselves
    return re.findall(r'define [^@]*@"([^"]+)"\((?:ptr %"args"|ptr %"in0"[^)]*), i64 %"wg", i64 %"nwg"\)',
                      ir_text)


@pytest.mark.parametrize("n", [4, 4096])        # inlined into main / its own noinline kernel
def test_identical_fusions_share_one_kernel(n):
    m = _module(n=n)
    low = jit.lower(m, Options())
    assert low.kernels_merged == 1
    assert len(_kernels(low.ir_text)) == 1
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((n, 8)).astype(np.float32) for _ in range(4)]
    got = compile_module(_module(n=n)).run(args)
    want = run_module(_module(n=n), args)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    unshared = jit.lower(_module(n=n), Options(), share_kernels=False)
    assert unshared.kernels_merged == 0 and len(_kernels(unshared.ir_text)) == 2


@pytest.mark.parametrize("change", [
    dict(n=4, lb="0,1"),                 # b's first operand in another layout
    dict(c=3),                           # another constant
    dict(c="-0"),                        # -0 is not 0
    dict(d="GE"),                        # another comparison direction
    dict(p0=1, p1=0, q0="p3", q1="p2"),  # parameters in the other order
])
def test_different_fusions_keep_their_own_kernels(change):
    low = jit.lower(_module(**change), Options())
    assert low.kernels_merged == 0
    assert len(_kernels(low.ir_text)) == 2


def test_shape_difference_is_a_different_key():
    a, b = _module(n=4), _module(n=5)
    k = dedup.Kernels()
    fa = a.entry.instruction_by_name("f.a")
    assert k.key(fa) == k.key(a.entry.instruction_by_name("f.b"))
    assert k.key(fa) != dedup.Kernels().key(b.entry.instruction_by_name("f.a"))


def test_rng_kernels_are_never_shared():
    text = """HloModule r
ENTRY %main () -> (f32[4], f32[4]) {
  %lo = f32[] constant(0)
  %hi = f32[] constant(1)
  %r1 = f32[4]{0} rng(f32[] %lo, f32[] %hi), distribution=rng_uniform
  %r2 = f32[4]{0} rng(f32[] %lo, f32[] %hi), distribution=rng_uniform
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %r1, f32[4]{0} %r2)
}
"""
    m = hloc.parse(text)
    assert dedup.Kernels().key(m.entry.instruction_by_name("r1")) is None
    assert jit.lower(m, Options()).kernels_merged == 0


class _Checking(dedup.Kernels):
    """Emits every reused kernel again on its own and compares it with its twin's."""

    def __init__(self, options):
        super().__init__()
        self.options, self.owner, self.checked = options, {}, 0

    def get(self, mcx, inst, emit):
        key = self.key(inst)
        if key is not None and key in self.owner:
            assert _alone(mcx, inst) == _alone(mcx, self.owner[key]), inst.name
            self.checked += 1
        elif key is not None:
            self.owner[key] = inst
        return super().get(mcx, inst, emit)


def _alone(mcx, inst) -> str:
    """`inst`'s kernel emitted into a module of its own, names made neutral."""
    own = ModuleContext("k", mcx.options, mcx.module.triple, mcx.module.data_layout)
    own.features = mcx.features
    fn = emit_kernel(own, inst)
    text = str(own.module).replace(f'@"{fn.name}"', "@K")
    return re.sub(r'@"const\.[^"]*"', "@C", text)


@pytest.mark.parametrize("stem", ["bert_train_step", "mlp_train_step", "remat_custom_jvp",
                                  "scan_rnn", "random_threefry"])
def test_merged_kernels_emit_the_same_ir(stem, monkeypatch):
    path = DUMPS / f"{stem}.after_optimizations.hlo"
    if not path.exists():
        pytest.skip(f"no dump {stem}")
    from hloc.backend import computation
    made = []

    def checking():
        made.append(_Checking(Options()))
        return made[-1]
    monkeypatch.setattr(computation.dedup, "Kernels", checking)
    low = jit.lower(hloc.parse(path.read_text(), stem), Options())
    assert made[0].checked == low.kernels_merged
    if stem in ("bert_train_step", "mlp_train_step"):
        assert low.kernels_merged > 0                 # the check ran on something


@pytest.mark.parametrize("stem", ["bert_train_step", "mlp_train_step"])
def test_sharing_gives_the_same_bits(stem, monkeypatch):
    d = load_npz(DUMPS / f"{stem}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    text = (DUMPS / f"{stem}.after_optimizations.hlo").read_text()
    bits = []
    for share in (True, False):
        if not share:
            monkeypatch.setattr(dedup.Kernels, "key", lambda self, inst: None)
        m = hloc.parse(text, stem)
        exe = compile_module(m)
        out = exe.run(bind_arguments(m, ins))
        bits.append([np.asarray(x).tobytes() for x in flatten_leaves(out, m.entry.root.shape)])
    assert bits[0] == bits[1]


def test_a_side_effect_anywhere_inside_is_never_shared():
    """A kernel calling a computation with a side effect (here two levels down: a
    fusion whose reduce applies a computation with a side-effecting custom call) has no
    key; the same kernel without the side effect has one."""
    text = """HloModule s
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  t = token[] after-all()
  e = token[] custom-call(t), custom_call_target="noop", custom_call_has_side_effect=%s
  ROOT s = f32[] add(x, y)
}
fused {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply=add
}
ENTRY e {
  a = f32[4] parameter(0)
  ROOT f = f32[] fusion(a), kind=kLoop, calls=fused
}
"""
    for effect, shared in (("true", False), ("false", True)):
        m = hloc.parse(text % effect)
        key = dedup.Kernels().key(m.entry.root)
        assert (key is not None) == shared, effect
