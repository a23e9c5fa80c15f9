"""Full reductions over more than 2^24 elements in xla-cpu numerics: hloc's compiled sum
must stay as accurate as XLA:CPU's.

Found in the qa11 sweep (fixed in reductions._nest_sum): reductions.py carried one
accumulator through the whole loop nest of the reduced dimensions; LLVM's loop vectoriser
seeds lane 0 of the innermost loop's vector accumulators with it, so once the running sum
passed 2^24 every element added in lane 0 was rounded away (1 + 2^24 == 2^24 in f32).
Summing 20,459,520 ones (f32[1,999,40,512], all dimensions reduced, no HLO passes) gave
20,401,984: 8 ones lost per 512-element row (VF 16 x 4 interleaved accumulators) for each
of the 7,192 rows after 2^24 -- a relative error of 2.8e-3, past run_hlo_module's 1e-3,
so `hloc replay` reported a mismatch. With the default pipeline (a YNN fusion split in
chunks, hloc.backend.split_reduce) f32[4,999,40,512] lost 1.2 %; the corpus's
xla/1155_timingconsumingtest.hlo (f32[32,999,40,512]) 4.4 % (625996864 for 654704640).
XLA:CPU (jaxlib 0.10.2) returns the exact sum for all three, also from a parameter of
ones; the interpreter and ieee numerics are exact too. A flat f32[20459520] was exact (one
loop: the accumulators never hold the total).
"""
from __future__ import annotations

import pytest

import hloc
from hloc.backend import compile_module
from hloc.cli_backend import cpu_pipeline

SUM_OF_ONES = """HloModule ones
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  one = f32[] constant(1)
  b = f32[DIMS] broadcast(one), dimensions={}
  z = f32[] constant(0)
  ROOT r = f32[] reduce(b, z), dimensions={REDUCED}, to_apply=add
}
"""


def _sum_of_ones(dims, opt):
    text = SUM_OF_ONES.replace("DIMS", ",".join(map(str, dims))).replace(
        "REDUCED", ",".join(str(i) for i in range(len(dims))))
    exe = compile_module(hloc.parse(text), numerics="xla-cpu", pipeline=cpu_pipeline(opt))
    return float(exe.run([]))


def test_flat_sum_past_2_pow_24_is_exact():
    assert _sum_of_ones((20459520,), False) == 20459520


@pytest.mark.parametrize("dims,opt", [((1, 999, 40, 512), False), ((4, 999, 40, 512), None),
                                      ((1, 1100, 16384), False)])
def test_nested_sum_past_2_pow_24_is_as_accurate_as_xla(dims, opt):
    exact = 1
    for d in dims:
        exact *= d
    got = _sum_of_ones(dims, opt)
    assert abs(got - exact) <= 1e-5 * exact, (got, exact)
