"""Row groups (hloc.backend.row_groups): reduce-then-broadcast chains run row by row in one
kernel. Softmax and layernorm form one group and equal the interpreter (bit for bit in
ieee numerics, where the group computes what the separate kernels compute); the bits do
not depend on the thread count or the work-group split; runs whose reads are not row by
row (a reversed row, an alias of a member's result) or that would write a buffer a member
reads are not grouped and still compute the interpreter's values."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import (Options, buffers, compile_module, emit_llvm, parallel, row_divide, row_groups, row_hosts,
                          row_vector)
from hloc.backend.expand import for_codegen
from hloc.cli_backend import prepare_for_cpu
from hloc.compare import ErrorSpec, near
from hloc.runner import run_module
from row_modules import layernorm, softmax, vector_code

_REDUCERS = """add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
max_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
"""
SOFTMAX = softmax(96, 2048)
LAYERNORM = layernorm(384, 1024)


def _prepared(text):
    """The module the back end lowers: the pipeline's output with its YNN library
    fusions unwrapped (expand.for_codegen)."""
    return for_codegen(prepare_for_cpu(hloc.parse(text), None))


def _x(module, seed=0):
    shape = module.entry.parameters[0].shape.dims
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 4
    x[3, 5] = np.inf if "softmax" in module.name else x[3, 5]    # a row of NaN
    x[7, :] = -np.inf if "softmax" in module.name else 0.0        # a row of -inf / constant row
    return x


def _groups(module):
    comp = module.entry
    return list({id(g): g for g in row_groups.plan(comp, buffers.plan(comp, lambda c: 0)).values()}.values())


def _kernels(module, numerics="xla-cpu") -> list[str]:
    ir = emit_llvm(module, numerics=numerics, optimized=False)
    return [line.split("@")[1].split("(")[0].strip('"') for line in ir.splitlines()
            if line.startswith("define") and 'i64 %"wg", i64 %"nwg")' in line]   # either ABI


@pytest.mark.parametrize("text", [SOFTMAX, LAYERNORM], ids=["softmax", "layernorm"])
@pytest.mark.parametrize("numerics", ["ieee", "xla-cpu"])
def test_one_group_matches_interpreter(text, numerics, tmp_path):
    module = _prepared(text)
    (group,) = _groups(module)
    assert len(group.members) == len([i for i in module.entry.instructions
                                      if i.opcode in ("fusion", "reduce")])
    assert len(group.internal) >= 1
    assert [k for k in _kernels(module, numerics) if not k.startswith("hloc.")] == \
        [group.members[0].name + ".rows"]
    x = _x(module)
    ref = run_module(module, [x]).value
    got = np.asarray(compile_module(module, numerics=numerics, cache_dir=tmp_path).run([x]))
    if numerics == "ieee":
        np.testing.assert_array_equal(got, ref)
    else:
        r = near(ref, got, ErrorSpec(abs=1e-6, rel=1e-5))
        assert r.ok, r.message


@pytest.mark.parametrize("text", [SOFTMAX, LAYERNORM], ids=["softmax", "layernorm"])
@pytest.mark.parametrize("numerics", ["ieee", "xla-cpu"])
def test_group_bits_equal_separate_kernels(text, numerics, monkeypatch, tmp_path):
    """The group computes each element as the separate kernels do (xla-cpu: up to how LLVM
    vectorises a reduction, which the same loop shape keeps)."""
    module = _prepared(text)
    x = _x(module)
    grouped = np.asarray(compile_module(module, numerics=numerics, cache_dir=tmp_path / "a").run([x]))
    monkeypatch.setattr(row_groups, "MIN_BYTES", 1 << 60)
    assert _groups(module) == []
    separate = np.asarray(compile_module(module, numerics=numerics, cache_dir=tmp_path / "b").run([x]))
    np.testing.assert_array_equal(grouped, separate)


@pytest.mark.parametrize("hosted", [False, True], ids=["stack-rows", "hosted-rows"])
@pytest.mark.parametrize("text", [SOFTMAX, LAYERNORM], ids=["softmax", "layernorm"])
def test_bits_do_not_depend_on_threads_or_split(text, hosted, monkeypatch, tmp_path):
    if hosted:
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    module = _prepared(text)
    x = _x(module)
    whole = compile_module(module, threads=1, cache_dir=tmp_path / "a").run([x]).tobytes()
    monkeypatch.setattr(parallel, "MIN_WORK", 0)
    monkeypatch.setattr(parallel, "CHUNK", 1)
    (group,) = _groups(module)
    assert group.nwg == min(group.rows, parallel.MAX_GROUPS) > 1
    exe = compile_module(module, threads=1, cache_dir=tmp_path / "b")
    for n in (1, 2, 3):
        exe.set_threads(n)
        assert exe.run([x]).tobytes() == whole, f"threads={n}"


_NOT_ROWWISE = f"""HloModule m
{_REDUCERS}
flip {{
  p0 = f32[64,4096] parameter(0)
  rv = f32[64,4096] reverse(p0), dimensions={{0}}
  ROOT a = f32[64,4096] add(p0, rv)
}}
ENTRY e {{
  x = f32[64,4096] parameter(0)
  ex = f32[64,4096] exponential(x)
  ROOT f = f32[64,4096] fusion(ex), kind=kLoop, calls=flip
}}
"""
_ALIAS = f"""HloModule m
{_REDUCERS}
ENTRY e {{
  x = f32[64,4096] parameter(0)
  ex = f32[64,4096] exponential(x)
  al = f32[64,4096] reshape(ex)
  ROOT ng = f32[64,4096] negate(al)
}}
"""
_ROWWISE = _ALIAS.replace("  al = f32[64,4096] reshape(ex)\n", "").replace("negate(al)", "negate(ex)")


@pytest.mark.parametrize("text,grouped", [(_NOT_ROWWISE, False), (_ALIAS, False), (_ROWWISE, True)],
                         ids=["reversed-rows", "alias", "rowwise"])
def test_reads_not_row_by_row_are_not_grouped(text, grouped, tmp_path):
    module = hloc.parse(text)
    assert bool(_groups(module)) == grouped
    x = np.random.default_rng(2).standard_normal((64, 4096)).astype(np.float32)
    ref = run_module(module, [x]).value
    got = np.asarray(compile_module(module, numerics="ieee", cache_dir=tmp_path).run([x]))
    np.testing.assert_array_equal(got, ref)


_REUSE = f"""HloModule m
{_REDUCERS}
ENTRY e {{
  x = f32[64,4096] parameter(0)
  y = f32[32,8192] parameter(1)
  t = f32[32,8192] exponential(y)
  tr = f32[64,4096] reshape(t)
  m1 = f32[64,4096] add(x, tr)
  m2 = f32[64,4096] negate(m1)
  m3 = f32[64,4096] exponential(m2)
  tp = f32[4096,64] transpose(m2), dimensions={{1,0}}
  ROOT out = (f32[64,4096], f32[4096,64]) tuple(m3, tp)
}}
"""


def test_group_cut_where_a_member_would_overwrite_what_another_reads(tmp_path):
    """m2's buffer reuses t's (dead after m1): in one group, m2's rows would be written
    while m1 still reads later rows of t. The group starts after m1."""
    module = hloc.parse(_REUSE)
    comp = module.entry
    plan = buffers.plan(comp, lambda c: 0)
    by = {i.name: i for i in comp.instructions}
    assert row_groups._overlap(plan.leaves[id(by["m2"])][0], plan.leaves[id(by["t"])][0])
    (group,) = _groups(module)
    assert [m.name for m in group.members] == ["m2", "m3"]
    rng = np.random.default_rng(3)
    args = [rng.standard_normal((64, 4096)).astype(np.float32),
            rng.standard_normal((32, 8192)).astype(np.float32)]
    ref = run_module(module, args).value
    got = compile_module(module, numerics="ieee", cache_dir=tmp_path).run(args)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(g), r)


@pytest.mark.parametrize("numerics", ["ieee", "xla-cpu"])
def test_unfused_chain_is_one_group(numerics, tmp_path):
    """Without the fusion pipeline every op is its own kernel: broadcasts and elementwise
    ops between the reductions join the group, their rows kept in scratch."""
    module = hloc.parse(SOFTMAX)
    (group,) = _groups(module)
    assert [m.name for m in group.members] == ["mx", "mxb", "d", "e", "s", "sb", "r"]
    assert {m.name for m in group.members if id(m) in group.internal} == {"mx", "mxb", "d", "e", "s", "sb"}
    x = _x(module)
    ref = run_module(module, [x]).value
    got = np.asarray(compile_module(module, numerics=numerics, cache_dir=tmp_path).run([x]))
    r = near(ref, got, ErrorSpec(abs=0, rel=0) if numerics == "ieee" else ErrorSpec(abs=1e-6, rel=1e-5))
    assert r.ok, r.message


def test_library_fusions_unwrapped_for_codegen():
    """The pipeline wraps softmax's reductions and their neighbours into one YNN library
    fusion (as XLA:CPU does); the back end, which has no YNNPACK, lowers its body fused by
    hloc's own fusion instead (one elemental kernel would recompute each row's reduction
    per element). A YNN fusion of one dot stays for BLAS."""
    module = prepare_for_cpu(hloc.parse(SOFTMAX), None)
    assert [i.attrs.get("kind") for i in module.entry.instructions
            if i.opcode == "fusion"] == ["kCustom"]
    lowered = for_codegen(module)
    kinds = [i.attrs.get("kind") for i in lowered.entry.instructions if i.opcode == "fusion"]
    assert kinds and "kCustom" not in kinds
    assert [i.opcode for i in lowered.entry.instructions].count("reduce") == 2
    dot = prepare_for_cpu(hloc.parse("""HloModule d
ENTRY e {
  a = f32[128,128] parameter(0)
  b = f32[128,128] parameter(1)
  ROOT d = f32[128,128] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""), None)
    assert "__ynn_fusion" in hloc.to_text(dot)
    assert for_codegen(dot) is dot


def _extremum_module(dt, op, init):
    return f"""HloModule ext
r_{op} {{
  a = {dt}[] parameter(0)
  b = {dt}[] parameter(1)
  ROOT r = {dt}[] {op}(a, b)
}}
ENTRY e {{
  x = {dt}[16,4096] parameter(0)
  i = {dt}[] constant({init})
  ROOT m = {dt}[16] reduce(x, i), dimensions={{1}}, to_apply=r_{op}
}}
"""


def _special_rows(np_dt):
    """Rows where a NaN-ignoring, zero-sign-blind max/min would differ from HLO's."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 4096)).astype(np_dt)
    x[1, 100] = np.nan
    x[2, 4000] = -np.array(np.nan, np_dt)
    x[3, 7] = np.inf
    x[4, 9] = -np.inf
    x[5, 11], x[5, 12] = np.inf, -np.inf          # the flag sum is NaN, no element is
    x[6] = -np.abs(x[6])
    x[6, 50] = 0.0                                # max +0 among negatives
    x[7] = -np.abs(x[7])
    x[7, 60], x[7, 61] = -0.0, 0.0                # -0 before +0
    x[8] = -0.0                                   # all -0
    x[9] = np.abs(x[9])
    x[9, 70], x[9, 71] = 0.0, -0.0                # min: -0 after +0
    x[10] = np.finfo(np_dt).max                   # the sum overflows, the max does not
    x[11] = -np.inf                               # all -inf
    x[12] = np.inf                                # all +inf
    x[13, 4095] = np.nan                          # NaN last
    x[14] = -0.0
    x[14, 3::97] = 0.0                            # +0 among -0 (every lane, both orders)
    x[15] = 0.0
    x[15, 5::89] = -0.0                           # -0 among +0
    return x


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    nan = np.isnan(a)
    assert (nan == np.isnan(b)).all()
    assert (a[~nan].view(np.uint8) == b[~nan].view(np.uint8)).all(), (a, b)


@pytest.mark.parametrize("dt", ["f32", "f64"])
@pytest.mark.parametrize("op,init", [("maximum", "-inf"), ("minimum", "inf"), ("maximum", "0"),
                                     ("minimum", "-0"), ("maximum", "nan")])
@pytest.mark.parametrize("numerics", ["ieee", "xla-cpu"])
def test_float_max_min_reduction_is_exact(dt, op, init, numerics, tmp_path):
    """The max/min reduction's maxnum fast loop gives HLO's maximum/minimum bit for bit
    (NaN anywhere, infinities, signed zeros, an overflowing flag sum, the init value)."""
    module = hloc.parse(_extremum_module(dt, op, init))
    assert "llvm.maxnum" in emit_llvm(module, numerics=numerics, optimized=False) \
        or "llvm.minnum" in emit_llvm(module, numerics=numerics, optimized=False)
    x = _special_rows(np.float32 if dt == "f32" else np.float64)
    ref = run_module(module, [x]).value
    got = compile_module(module, numerics=numerics, cache_dir=tmp_path).run([x])
    _same_bits(ref, got)


def _row_divide_module(op):
    return f"""HloModule rowdiv
r_{op} {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] {op}(a, b)
}}
ENTRY e {{
  x = f32[64,8192] parameter(0)
  s = f32[64] parameter(1)
  i = f32[] constant(0)
  m = f32[64] reduce(x, i), dimensions={{1}}, to_apply=r_{op}
  mb = f32[64,8192] broadcast(m), dimensions={{0}}
  t = f32[64,8192] subtract(x, mb)
  sb = f32[64,8192] broadcast(s), dimensions={{0}}
  ROOT q = f32[64,8192] divide(t, sb)
}}
"""


def _row_divide_args(sign):
    """Numerators x - 0 = x of one sign over every exponent, zeros and subnormals; per-row
    divisors across [1, 2^32] (all-ones significands, the ends) and, in some rows, a
    divisor or numerator outside the proven range (those rows are redone exactly)."""
    rng = np.random.default_rng(7)
    bits = rng.integers(row_divide.A_MIN_BITS, 0x7F800000, (64, 8192), dtype=np.uint32)
    x = bits.view(np.float32) * np.float32(sign)
    x[:, ::7] = (bits[:, ::7] & 0x007FFFFF).view(np.float32) * np.float32(sign)   # subnormals
    x[:, 1::97] = 0.0
    x[:, 2::101] = -0.0
    x[:, 3] = np.uint32(row_divide.A_MIN_BITS).view(np.float32) * sign
    for row in range(40, 64):                                   # rows with an outsider
        x[row, 5] = (2.0 ** -91, np.inf, np.nan, 2.0 ** -126)[row % 4] * sign
    x[:, 0] = 0.0                                               # the row max/min
    ones = lambda e: np.float32(np.ldexp(np.float32(2) - np.float32(2) ** -23, e))  # noqa: E731
    s = np.concatenate([
        [1.0, np.nextafter(np.float32(1), np.float32(2)), 2.0 ** 32, np.nextafter(np.float32(2 ** 32), np.float32(0)),
         3.0, 7.0, 1.5, ones(0), ones(10), ones(31)],
        np.exp2(rng.uniform(0, 32, 22)),
        [0.5, 2.0 ** 33, -3.0, 0.0, np.nan, np.inf, -np.inf, 1e-40],            # out of range
        np.exp2(rng.uniform(0, 32, 24))]).astype(np.float32)
    return [x, s]


_FORMS = pytest.mark.parametrize("vector", [True, False], ids=["vector-form", "scalar-form"])


@_FORMS
@pytest.mark.parametrize("op,sign", [("maximum", -1), ("minimum", 1)])
def test_row_divide_bits_equal_true_division(op, sign, vector, monkeypatch, tmp_path):
    """xla-cpu: the divide by a per-row divisor (hloc.backend.row_divide) equals fdiv bit
    for bit, inside its range and, through the exact redo, outside it; on vectors
    (hloc.backend.row_vector) and in the scalar loops LLVM vectorises."""
    monkeypatch.setattr(row_vector, "ENABLED", vector)
    module = _prepared(_row_divide_module(op))
    (group,) = _groups(module)
    fma = "llvm.fma.v" if vector and _has_vectors() else "llvm.fma.f32"
    assert fma in emit_llvm(module, numerics="xla-cpu", optimized=False)
    args = _row_divide_args(sign)
    fast = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "a").run(args)
    monkeypatch.setattr(row_groups, "FAST_DIVIDE", False)
    assert "llvm.fma." not in emit_llvm(module, numerics="xla-cpu", optimized=False)
    true = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "b").run(args)
    _same_bits(true, fast)


def _divided_by_own_sum(exp: bool, cols: int = 1000) -> str:
    """a / sum(a) along the rows, a = x or exp(x) (softmax without the max: e can be
    infinite): the divisor is the sum of what is divided (bounds.sums)."""
    a = f"\n  a = f32[40,{cols}] exponential(x)" if exp else ""
    return f"""HloModule ownsum
{_REDUCERS}
ENTRY e {{
  x = f32[40,{cols}] parameter(0){a}
  z = f32[] constant(0)
  s = f32[40] reduce({"a" if exp else "x"}, z), dimensions={{1}}, to_apply=add_f
  sb = f32[40,{cols}] broadcast(s), dimensions={{0}}
  ROOT q = f32[40,{cols}] divide({"a" if exp else "x"}, sb)
}}
"""


def _own_sum_rows(cols: int):
    """Rows of a at the ends of the row divide's ranges, each
    at a position of the 64-lane main loop, the 16-lane loop after it or the scalar tail
    (cols 1000: 960, 992): a 1.0 fixes d at about 1 where the row is not about d."""
    bits = lambda v: np.uint32(v).view(np.float32)  # noqa: E731
    a_min = bits(row_divide.A_MIN_BITS)
    special = [a_min, bits(row_divide.A_MIN_BITS - 1), bits(0x00800000), bits(0x007FFFFF), bits(1),
               0.0, -0.0, -a_min, -bits(row_divide.A_MIN_BITS - 1), -bits(0x00800000), -bits(0x007FFFFF),
               2.0 ** 31, np.inf, -np.inf, np.nan, -np.float32(np.nan), np.finfo(np.float32).max, 1.5]
    rows = []
    for k, v in enumerate(special):
        r = np.zeros(cols, np.float32)
        r[1] = 1.0
        r[(5, cols - 30, cols - 4)[k % 3]] = v
        rows.append(r)
    for v in (1.0, np.nextafter(np.float32(1), np.float32(0)), 2.0 ** 32,       # d alone: its ends
              np.nextafter(np.float32(2 ** 32), np.float32(np.inf)), 0.0, -1.0):
        r = np.zeros(cols, np.float32)
        r[cols - 30] = v
        rows.append(r)
    a = np.stack(rows + [np.full(cols, 0.25, np.float32)] * (40 - len(rows)))
    return a


def _expected_redo(a):
    """Per row: outside the row divide's proven range (row_divide's docstring): d = the
    row's sum (exact here, or far from the ends) outside [1, 2^32], or an a with |a| a
    normal below 2^-90, an infinity or a NaN."""
    u = a.view(np.uint32) & 0x7FFFFFFF
    bad_a = ((u >= 0x00800000) & (u < row_divide.A_MIN_BITS)) | (u >= 0x7F800000)
    with np.errstate(invalid="ignore", over="ignore"):
        d = a.astype(np.float64).sum(axis=1).astype(np.float32)
        bad_d = ~((d >= 1) & (d <= 2.0 ** 32))
    return bad_d | bad_a.any(axis=1)


def _redone_rows(module, args, tmp_path):
    """Which rows the row divide redoes: the fast quotient replaced by a sentinel value,
    so a row is redone exactly where none of its outputs is the sentinel."""
    sentinel = 12345.0
    real = row_divide.RowDivide.divide

    def divide(self, kb, inst, a, d):
        real(self, kb, inst, a, d)
        return row_vector.const(a.type, sentinel)
    row_divide.RowDivide.divide = divide
    try:
        out = np.asarray(compile_module(module, numerics="xla-cpu", cache_dir=tmp_path).run(args))
    finally:
        row_divide.RowDivide.divide = real
    assert (out == sentinel).any()
    return ~(out == sentinel).any(axis=1)


@_FORMS
@pytest.mark.parametrize("cols", [1000, 8192])
def test_row_divide_by_its_own_sum_redoes_the_same_rows(cols, vector, monkeypatch, tmp_path):
    """a / sum(a): the numerator's `< inf` check is left out (row_divide.SUM_BOUND: an
    infinite or NaN a makes d one). The rows redone are those outside the proven range,
    with and without the check, at the ends of each range (a at the lowest exponent that
    passes and the highest that fails, zero, subnormals, infinities, NaN of both signs,
    -0, both signs; d at its ends), in the main loop, the loop after it and the tail;
    the bits are true division's."""
    monkeypatch.setattr(row_vector, "ENABLED", vector)
    monkeypatch.setattr(row_groups, "MIN_BYTES", 0)
    module = _prepared(_divided_by_own_sum(False, cols))
    (group,) = _groups(module)
    assert vector_code(module) == (vector and _has_vectors())
    a = _own_sum_rows(cols)
    args = [a]
    want = _expected_redo(a)
    assert want[:24].tolist() == [False, True, True, False, False, False, False, False, True, True, False,
                                  False, True, True, True, True, True, False, False, True, False, True, True, True]
    text = emit_llvm(module, numerics="xla-cpu", optimized=False)
    assert "llvm.umin" in text and "llvm.umax" not in text and "vector.reduce.umax" not in text
    for bound in (True, False):
        monkeypatch.setattr(row_divide, "SUM_BOUND", bound)
        assert list(_redone_rows(module, args, tmp_path / f"r{bound}")) == list(want)
    monkeypatch.setattr(row_divide, "SUM_BOUND", True)
    fast = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "a").run(args)
    monkeypatch.setattr(row_groups, "FAST_DIVIDE", False)
    true = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "b").run(args)
    _same_bits(true, fast)


@_FORMS
def test_row_divide_of_exp_by_its_sum_redoes_the_same_rows(vector, monkeypatch, tmp_path):
    """The same for e / sum(e), e = exp(x) (sign clear: a's bits taken whole): e about
    2^-90 on either side, above 2^-126, flushed to 0, 0, inf, NaN of both signs."""
    monkeypatch.setattr(row_vector, "ENABLED", vector)
    monkeypatch.setattr(row_groups, "MIN_BYTES", 0)
    cols = 1000
    module = _prepared(_divided_by_own_sum(True, cols))
    x = np.full((40, cols), -1.0, np.float32)
    ln2 = np.log(2.0)
    edge = [-90 * ln2 + 1e-5, -90 * ln2 - 1e-5, -126 * ln2 + 1e-5, -88.5, -104.0, -np.inf, 89.0,
            np.nan, -np.float32(np.nan), 0.0, -200.0]
    for k, v in enumerate(edge):
        x[k, (5, cols - 30, cols - 4)[k % 3]] = v
    x[20:] = np.random.default_rng(5).uniform(-70, 0, (20, cols))
    e_mod = _prepared(_divided_by_own_sum(True, cols).replace("ROOT q = f32[40,%d] divide(a, sb)" % cols,
                                                              "q = f32[40,%d] divide(a, sb)\n  ROOT r = (f32[40,%d], f32[40]) tuple(a, s)"
                                                              % (cols, cols)))
    e = np.asarray(compile_module(e_mod, numerics="xla-cpu", cache_dir=tmp_path / "e").run([x])[0])
    want = _expected_redo(e)
    assert want[:10].tolist() == [False, True, True, False, False, False, True, True, True, False]
    for bound in (True, False):
        monkeypatch.setattr(row_divide, "SUM_BOUND", bound)
        assert list(_redone_rows(module, [x], tmp_path / f"r{bound}")) == list(want)
    monkeypatch.setattr(row_divide, "SUM_BOUND", True)
    fast = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "a").run([x])
    monkeypatch.setattr(row_groups, "FAST_DIVIDE", False)
    true = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "b").run([x])
    _same_bits(true, fast)


def test_row_sum_accumulated_in_the_previous_members_loop():
    """xla-cpu: softmax's sum(e) is added up in e's own row loop (one pass over the row
    fewer); ieee keeps the reduction's own loop and its evaluator order."""
    module = _prepared(SOFTMAX)
    (group,) = _groups(module)
    assert any(row_groups._row_sum_of(group.members[k + 1], group.members[k], group.rows)
               for k in range(len(group.members) - 1))
    assert '%"rowsum" = alloca' in emit_llvm(module, numerics="xla-cpu", optimized=False)
    assert '%"rowsum" = alloca' not in emit_llvm(module, numerics="ieee", optimized=False)


def test_row_sum_of_a_redone_row_divide_is_redone(monkeypatch, tmp_path):
    """A row sum accumulated in a loop of row divides: a row redone with true divisions
    (row_divide out of range) has its sum redone too."""
    text = _row_divide_module("maximum").replace("  ROOT q = f32[64,8192] divide(t, sb)\n", """  q = f32[64,8192] divide(t, sb)
  z = f32[] constant(0)
  tot = f32[64] reduce(q, z), dimensions={1}, to_apply=add
  ROOT out = (f32[64,8192], f32[64]) tuple(q, tot)
""").replace("ENTRY e {", """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {""")
    module = _prepared(text)
    (group,) = _groups(module)
    assert any(row_groups._row_sum_of(group.members[k + 1], group.members[k], group.rows)
               for k in range(len(group.members) - 1))
    args = _row_divide_args(-1)
    args[0][41, 6] = -3e38                    # row 41 (an infinite numerator): overflows
    fast = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "a").run(args)
    monkeypatch.setattr(row_groups, "FAST_DIVIDE", False)
    true = compile_module(module, numerics="xla-cpu", cache_dir=tmp_path / "b").run(args)
    for f, t in zip(fast, true):
        _same_bits(t, f)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("numerics", ["ieee", "xla-cpu"])
def test_hosted_row_gives_the_same_bits(fused, numerics, monkeypatch, tmp_path):
    """A large output keeps softmax's e in its own row (row_hosts.HOST_BYTES), the divide
    then runs in place: the same bits as with e in a stack row, rows the row divide redoes
    (NaN, -inf rows, numerators below its range) included."""
    module = _prepared(SOFTMAX) if fused else hloc.parse(SOFTMAX)
    x = _x(module)
    x[9, :] = np.linspace(-100, 0, x.shape[1])    # e from 2^-144 to 1: the redo's lower end
    kept = compile_module(module, numerics=numerics, cache_dir=tmp_path / "a").run([x])
    assert not _groups(module)[0].hosts
    monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    (group,) = _groups(module)
    e = [m for m in group.members if m.opcode == "exponential" or "exponential" in m.name]
    assert {id(e[0]): group.members[-1]} == group.hosts
    hosted = compile_module(module, numerics=numerics, cache_dir=tmp_path / "b").run([x])
    _same_bits(kept, hosted)


_NOT_AT_INDEX = f"""HloModule m
{_REDUCERS}
scaled {{
  p0 = f32[64,4096] parameter(0)
  z = f32[] constant(0)
  t = f32[64] reduce(p0, z), dimensions={{1}}, to_apply=add_f
  b = f32[64,4096] broadcast(t), dimensions={{0}}
  ROOT d = f32[64,4096] multiply(p0, b)
}}
ENTRY e {{
  x = f32[64,4096] parameter(0)
  ex = f32[64,4096] exponential(x)
  ROOT f = f32[64,4096] fusion(ex), kind=kLoop, calls=scaled
}}
"""


def test_member_read_at_other_elements_is_not_hosted(monkeypatch, tmp_path):
    """A member that reads e also at other elements of its row (its sum) would read
    what it has already overwritten: e stays in its stack row."""
    monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    module = hloc.parse(_NOT_AT_INDEX)
    (group,) = _groups(module)
    assert [m.name for m in group.members] == ["ex", "f"] and not group.hosts
    assert row_hosts.reads_at_index(group.members[-1], group.members[0]) is False
    x = np.random.default_rng(4).standard_normal((64, 4096)).astype(np.float32)
    ref = run_module(module, [x]).value
    got = np.asarray(compile_module(module, numerics="ieee", cache_dir=tmp_path).run([x]))
    np.testing.assert_array_equal(got, ref)


@_FORMS
@pytest.mark.parametrize("hosted", [False, True], ids=["stack-rows", "hosted-rows"])
@pytest.mark.parametrize("op,init", [("maximum", "-inf"), ("minimum", "inf"), ("maximum", "0"),
                                     ("maximum", "nan")])
def test_row_max_computed_a_row_ahead_gives_the_same_bits(op, init, hosted, vector, monkeypatch, tmp_path):
    """xla-cpu: the group's leading max (min) of row r+1 is accumulated in row r's exp loop
    (hloc.backend.row_ahead): the same bits as the reduce in its own loop, over rows whose
    max is NaN, an infinity or a signed zero, the rows before and after them, and work
    groups of 1 to 16 rows on 1 to 3 threads (each group's first row on its own, its last
    row taking itself as the next); in vectors (hloc.backend.row_vector: the reduce's own
    loops in vectors too) and in the scalar loops."""
    from hloc.backend import row_ahead
    monkeypatch.setattr(row_vector, "ENABLED", vector)
    if hosted:
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    module = _prepared(softmax(16, 4096, op=op, init=init))
    assert vector_code(module) == (vector and _has_vectors())
    x = _special_rows(np.float32)
    monkeypatch.setattr(row_ahead, "ENABLED", False)
    assert "ahead" not in emit_llvm(module, numerics="xla-cpu", optimized=False)
    own = compile_module(module, threads=1, cache_dir=tmp_path / "own").run([x]).tobytes()
    monkeypatch.setattr(row_ahead, "ENABLED", True)
    (group,) = _groups(module)
    assert row_ahead.plan(group, Options("xla-cpu")) and not row_ahead.plan(group, Options("ieee"))
    assert "ahead" in emit_llvm(module, numerics="xla-cpu", optimized=False)
    assert "ahead" not in emit_llvm(module, numerics="ieee", optimized=False)
    x = _before_guard_page(x)         # a read past the last row would fault
    for nwg in (1, 3, 16):
        monkeypatch.setattr(parallel, "MIN_WORK", 0 if nwg > 1 else 1 << 60)
        monkeypatch.setattr(parallel, "CHUNK", 1)
        monkeypatch.setattr(parallel, "MAX_GROUPS", nwg)
        assert _groups(module)[0].nwg == nwg
        exe = compile_module(module, threads=1, cache_dir=tmp_path / f"ahead{nwg}")
        for n in (1, 2, 3):
            exe.set_threads(n)
            assert exe.run([x]).tobytes() == own, f"work groups={nwg} threads={n}"


@pytest.mark.parametrize("op,init", [("maximum", "-inf"), ("minimum", "inf"), ("maximum", "nan")])
def test_row_max_in_its_own_vector_loops_with_epilogue_and_tail(op, init, monkeypatch, tmp_path):
    """xla-cpu, without the row-ahead max: the reduce's own loops in vectors
    (extremum.emit_row) over rows of 1001, a main loop of SUM_IC vectors, LLVM's
    epilogue loop and positions one by one, with NaN, infinities and signed zeros in each
    and the max (min) in the tail: the scalar form's bits."""
    from hloc.backend import row_ahead
    monkeypatch.setattr(row_ahead, "ENABLED", False)
    cols = 1001
    module = _prepared(softmax(64, cols, op=op, init=init))      # a row group (MIN_BYTES)
    x = np.tile(_special_rows(np.float32)[:, :cols], (4, 1))
    main = cols - cols % (16 * row_vector.SUM_IC)           # 960 with AVX-512, 992 with AVX2
    x[1, main + 3] = np.nan                                 # epilogue (either width)
    x[2, cols - 1] = -np.array(np.nan, np.float32)          # the scalar tail
    x[3, cols - 1] = np.inf
    x[4, main + 1] = -np.inf
    x[6, cols - 1] = 0.0                                    # max +0 among negatives, last
    x[7, main + 2], x[7, cols - 1] = -0.0, 0.0
    x[9, main + 2], x[9, cols - 1] = 0.0, -0.0
    x[0, cols - 1] = 40.0 if op == "maximum" else -40.0     # the extremum in the tail
    x[13, cols - 1] = np.nan
    outs = []
    for vector in (True, False):
        monkeypatch.setattr(row_vector, "ENABLED", vector)
        text = emit_llvm(module, numerics="xla-cpu", optimized=False)
        assert "ahead" not in text
        if vector and _has_vectors():
            assert vector_code(module) and "e1.body" in text and "t1.body" in text
        outs.append(compile_module(module, threads=1, cache_dir=tmp_path / str(vector)).run([x]).tobytes())
    assert outs[0] == outs[1]


def _before_guard_page(a):
    """A copy of `a` that ends where an inaccessible page begins (Linux; else a copy)."""
    import ctypes
    import mmap
    page = mmap.PAGESIZE
    size = (a.nbytes + page - 1) // page * page + page
    mm = mmap.mmap(-1, size)
    out = np.frombuffer(mm, a.dtype, a.size, size - page - a.nbytes).reshape(a.shape)
    out[...] = a
    libc = ctypes.CDLL(None, use_errno=True)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    if getattr(libc, "mprotect", None) is not None:
        assert libc.mprotect(ctypes.c_void_p(base + size - page), ctypes.c_size_t(page), 0) == 0
    return out


def _has_vectors() -> bool:
    """The host has a vector width row_vector uses (AVX2 or AVX-512)."""
    from hloc.backend import jit
    from hloc.ir.dtypes import DTYPES
    return row_vector.width(jit.host()[2], jit.host()[3], DTYPES["f32"]) is not None
