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
from row_modules import layernorm as _layernorm, softmax as _softmax, vector_code as _vector

_ADD = """add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
"""


def _prepared(text):
    return for_codegen(prepare_for_cpu(hloc.parse(text), None))


def _groups(module):
    comp = module.entry
    return list({id(g): g for g in row_groups.plan(comp, buffers.plan(comp, lambda c: 0)).values()}.values())


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
@pytest.mark.parametrize("cols", [1024, 1000, 144])
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



def _many_rows(rows, lengths):
    """One module with a softmax and a layernorm over each row length of `lengths` (its
    own parameters, names suffixed; a row group each), the results in a tuple."""
    import re
    head, body, roots = None, [], []
    for n in lengths:
        for text in (_softmax(rows, n), _layernorm(rows, n)):
            top, entry = text.split("ENTRY e {\n")
            head = head or top
            lines = [ln.strip().replace("ROOT ", "") for ln in entry.strip().rstrip("}").strip().splitlines()]
            k = len(roots)
            names = re.compile(r"\b(" + "|".join(ln.split(" =")[0] for ln in lines) + r")\b(?![.-])")
            body += [names.sub(lambda m: f"{m.group(1)}_{k}", ln).replace("parameter(0)", f"parameter({k})")
                     for ln in lines]
            roots.append(f"{lines[-1].split(' =')[0]}_{k}")
    shapes = ", ".join([f"f32[{rows},{n}]" for n in lengths for _ in range(2)])
    return (head + "ENTRY e {\n" + "".join(f"  {ln}\n" for ln in body)
            + f"  ROOT out = ({shapes}) tuple({', '.join(roots)})\n}}\n")


@needs_vectors
def test_every_epilogue_of_the_vectoriser_has_the_scalar_bits(monkeypatch, tmp_path):
    """Softmax and layernorm on every row length from 2 * SUM_IC vectors to 36 more (each
    number of positions LLVM's main loop can leave up to two vectors more: epilogues of
    16, 8, 4 and 2 lanes with AVX-512, ties between them, positions left one by one),
    1 thread: the bits of the scalar form, whose loops LLVM vectorises. Shorter rows keep
    their scalar loops (row_vector.plan)."""
    monkeypatch.setattr(row_groups, "MIN_BYTES", 0)
    lanes = row_vector.width(jit.host()[2], jit.host()[3], DTYPES["f32"])
    first = 2 * lanes * row_vector.SUM_IC
    assert not _vector(_prepared(_softmax(64, first - 1))) and _vector(_prepared(_softmax(64, first)))
    lengths = range(first, first + 37)
    module = _prepared(_many_rows(64, lengths))
    assert len(_groups(module)) == 2 * len(lengths)
    rng = np.random.default_rng(5)
    xs = [(rng.standard_normal((64, n)) * 4).astype(np.float32) for n in lengths for _ in range(2)]
    outs = []
    for vector in (True, False):
        monkeypatch.setattr(row_vector, "ENABLED", vector)
        assert _vector(module) == vector
        outs.append([np.asarray(a) for a in compile_module(module, threads=1, cache_dir=tmp_path / str(vector)).run(xs)])
    differ = [(n, kind) for (n, kind), a, b in zip([(n, k) for n in lengths for k in ("softmax", "layernorm")], *outs)
              if a.tobytes() != b.tobytes()]
    assert differ == []

_SCALEF = "llvm.x86.avx512.mask.scalef.ps.512"


@needs_vectors
@pytest.mark.parametrize("rows,cols", [(32, 8192), (150, 1001)])
def test_vector_exp_scales_by_vscalef_on_the_float_n(rows, cols, monkeypatch, tmp_path):
    """With AVX-512, softmax's exp loop (4 zmm registers an iteration) scales by vscalefps
    on the float n (vmath._scalef), not by llvm.ldexp of the integer n: the intrinsic in
    emit-llvm's IR, and no vcvtdq2ps or vpaddd in the exp loop's machine code; its
    epilogue of 8 lanes and scalar tail keep ldexp. vmath.SCALEF off: ldexp, the same
    bits (on edge rows, 1 and 2 threads)."""
    import re
    import llvmlite.binding as llvm
    from hloc.backend import compile_threads, llvm_parts, vmath
    if "+avx512f" not in jit.host()[2].split(","):
        pytest.skip("host without AVX-512")
    module = _prepared(_softmax(rows, cols))
    x = _edge_rows(rows, cols)
    outs = {}
    for scalef in (True, False):
        monkeypatch.setattr(vmath, "SCALEF", scalef)
        text = emit_llvm(module, numerics="xla-cpu")
        vector_ldexp = re.findall(r"llvm\.ldexp\.v(\d+)f32", text)
        assert (_SCALEF in text) == scalef
        assert ("64" in vector_ldexp) != scalef and set(vector_ldexp) <= {"64", "8"}
        asm = []
        for part in llvm_parts.read(text):
            with compile_threads.OPTIONS_LOCK.compiling(part.brief):
                asm.append(jit.compile_machine(part.codegen).emit_assembly(llvm.parse_assembly(part.text)))
        exp_loops = [blk for blk in re.split(r"\n(?=\.LBB)", "".join(asm)) if "vscalefps\t%zmm" in blk]
        assert exp_loops and all(("vcvtdq2ps\t%zmm" in blk) != scalef for blk in exp_loops)
        assert all("vpaddd\t%zmm" not in blk for blk in exp_loops) == scalef
        exe = compile_module(module, threads=2, cache_dir=tmp_path / str(scalef))
        outs[scalef] = [exe.run([x]).tobytes()]
        exe.set_threads(1)
        outs[scalef].append(exe.run([x]).tobytes())
    assert outs[True] == outs[False]


def _edge_rows(rows, cols):
    """Rows with NaN of both signs (alone and together), infinities, the largest float,
    subnormals, signed zeros, exp's underflow and the row divide's redo cases."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    f32 = np.finfo(np.float32)
    nan, neg_nan = np.float32(np.nan), -np.float32(np.nan)
    x[1, cols // 2] = nan
    x[2, 3] = neg_nan
    x[3, 1], x[3, cols - 1] = neg_nan, nan              # both signs, main loop and tail
    x[4, 0], x[4, cols - 2] = nan, neg_nan
    x[5, 7] = np.inf
    x[6, 5] = -np.inf
    x[7] = -np.inf
    x[8] = np.inf
    x[9, 2], x[9, 4] = np.inf, -np.inf
    x[10] = f32.max
    x[11, 0], x[11, cols - 1] = f32.max, -f32.max
    x[12] = (rng.integers(1, 1 << 23, cols, dtype=np.uint32)).view(np.float32)   # subnormals
    x[13] = -0.0
    x[14] = 0.0
    x[14, ::3] = -0.0
    x[15] = rng.uniform(-200, 0, cols).astype(np.float32)      # exp underflows
    x[16] = rng.uniform(-80, 0, cols).astype(np.float32)       # quotients below the range
    x[17] = 88.0 + rng.uniform(0, 1, cols).astype(np.float32)
    x[18, cols - 1] = 1e30                                    # the max in the scalar tail
    return x


@needs_vectors
@pytest.mark.parametrize("mode", ["stack-rows", "hosted-rows", "kernels"])
@pytest.mark.parametrize("rows,cols", [(32, 8192), (160, 1000), (150, 1001), (900, 144)])
def test_vector_softmax_has_the_scalar_bits(rows, cols, mode, monkeypatch, tmp_path):
    """Softmax's row group in explicit vectors (the row-ahead max, the sum carried beside
    the exp loop, the row divide, e kept in the output's row when hosted) gives the bits
    of its scalar form, whose loops LLVM vectorises, on edge rows, on 1 and 2 threads:
    rows of whole vector iterations, with an epilogue and a scalar tail; as separate
    kernels neither form applies."""
    from hloc.backend import row_hosts
    if mode == "hosted-rows":
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    if mode == "kernels":
        monkeypatch.setattr(row_groups, "MIN_BYTES", 1 << 60)
    module = _prepared(_softmax(rows, cols))
    groups = _groups(module)
    assert len(groups) == (mode != "kernels") and all(bool(g.hosts) == (mode == "hosted-rows") for g in groups)
    x = _edge_rows(rows, cols)
    outs = {}
    for vector in (True, False):
        monkeypatch.setattr(row_vector, "ENABLED", vector)
        assert _vector(module) == (vector and mode != "kernels")
        exe = compile_module(module, threads=2, cache_dir=tmp_path / str(vector))
        outs[vector] = [exe.run([x]).tobytes()]
        exe.set_threads(1)
        outs[vector].append(exe.run([x]).tobytes())
    assert outs[True] == outs[False]
    assert outs[True][0] == outs[True][1]
    got = np.frombuffer(outs[True][0], np.float32).reshape(x.shape)
    r = near(run_module(module, [x]).value, got, ErrorSpec(abs=1e-30, rel=1e-5))
    assert r.ok, r.message


@needs_vectors
@pytest.mark.parametrize("rows,cols", [(20, 8192), (150, 1001)])
def test_first_row_of_every_work_group_has_the_exact_bits(rows, cols, monkeypatch, tmp_path):
    """One row per work group: every edge row is a group's first, whose max the fast loop
    computes on its own (row_ahead.FIRST_FAST), falling back to the exact loop on NaN and
    zeros; the bits of the exact loop alone, of the scalar form and the interpreter's."""
    from hloc.backend import parallel, row_ahead
    monkeypatch.setattr(parallel, "CHUNK", 1)
    monkeypatch.setattr(parallel, "MAX_GROUPS", 1 << 20)
    module = _prepared(_softmax(rows, cols))
    assert [g.nwg for g in _groups(module)] == [rows]
    x = _edge_rows(rows, cols)
    outs = []
    for vector, fast in ((True, True), (True, False), (False, True)):
        monkeypatch.setattr(row_vector, "ENABLED", vector)
        monkeypatch.setattr(row_ahead, "FIRST_FAST", fast)
        assert _vector(module) == vector
        exe = compile_module(module, threads=2, cache_dir=tmp_path / f"{vector}{fast}")
        outs.append(exe.run([x]).tobytes())
    assert outs[0] == outs[1] == outs[2]
    got = np.frombuffer(outs[0], np.float32).reshape(x.shape)
    r = near(run_module(module, [x]).value, got, ErrorSpec(abs=1e-30, rel=1e-5))
    assert r.ok, r.message


@needs_vectors
def test_vector_row_divide_exact_loop_stays_scalar():
    """The row divide's exact loop (run only for a row redone) is left in scalar code in
    the vector form (row_groups.COLD_SCALAR): no vector fdiv in the row kernel but the
    per-row 1/d, which is a scalar one."""
    text = emit_llvm(_prepared(_softmax(32, 8192)), numerics="xla-cpu", optimized=False)
    assert "fma.v" in text and "fdiv <" not in text and "fdiv float" in text


def _vector_loop_bodies(text):
    """{label: text} of the explicit vector loops' body blocks (row_vector.vector_loop's
    v<d>.body and the epilogue's e<d>.body) in emit-llvm's IR."""
    import re
    blocks = re.split(r"\n(?=[^\s;][^\n]*:\n)", text)
    return {blk.split(":", 1)[0]: blk for blk in blocks if re.match(r"[ve]\d+\.body", blk)}


@needs_vectors
@pytest.mark.parametrize("rows,cols", [(32, 8192), (150, 1001)])
def test_vector_row_divide_reduces_across_lanes_after_its_loop(rows, cols, monkeypatch, tmp_path):
    """Softmax divided by the row's sum of x: the divide is the member whose loop
    carries the row-ahead max, in SUM_IC registers an iteration; its range checks fold
    them lane by lane into one register's accumulators, and across lanes only after the
    loop (no llvm.vector.reduce in any vector loop body). The bits: the scalar form's."""
    module = _prepared(_softmax(rows, cols, "x"))
    text = emit_llvm(module, numerics="xla-cpu", optimized=False)
    bodies = _vector_loop_bodies(text)
    assert any(f"<{row_vector.SUM_IC * 16} x float>" in blk or f"<{row_vector.SUM_IC * 8} x float>" in blk
               for blk in bodies.values())
    assert any("fma.v" in blk for blk in bodies.values())        # the divide is in one
    assert [k for k, blk in bodies.items() if "vector.reduce" in blk] == []
    assert "llvm.vector.reduce.umin" in text
    assert "llvm.vector.reduce.umax" in text    # e / sum(x): a < inf checked (not bounds.sums)
    x = _edge_rows(rows, cols)
    outs = []
    for vector in (True, False):
        monkeypatch.setattr(row_vector, "ENABLED", vector)
        assert _vector(module) == vector
        outs.append(compile_module(module, threads=2, cache_dir=tmp_path / str(vector)).run([x]).tobytes())
    assert outs[0] == outs[1]       # (a sum of x near 0 is ill-conditioned: no tolerance
    #                                  against the interpreter's sequential sum holds)


@needs_vectors
@pytest.mark.parametrize("rows,cols", [(32, 8192), (150, 1009)])     # 1009: an epilogue of 16
def test_large_softmax_prefetches_both_streams_in_its_main_loop(rows, cols, monkeypatch, tmp_path):
    """Where the group's input is large (row_ahead.PREFETCH_BYTES) and e is hosted in the
    output (row_hosts), the loop that carries the next row's max prefetches into L2 (read,
    locality 2) each line PREFETCH bytes ahead of the next row's input (at row.ahead) and
    of the output where it stores e, in its main loop only (SUM_IC registers: 2 * 4 lines
    an iteration), none in the epilogue or the other loops, none with e in the stack row;
    the bits are those without the prefetches, on edge rows, hosted or not, 1 and 2
    threads."""
    from hloc.backend import row_ahead, row_hosts
    if "+avx512f" not in jit.host()[2].split(","):
        pytest.skip("softmax's vector form (a sum carried beside exp) needs 64-byte vectors")
    big = _prepared(_softmax(512, 8192))
    calls = lambda text: [ln for ln in text.splitlines() if "call void @\"llvm.prefetch.p0\"(" in ln]  # noqa: E731
    assert len(calls(emit_llvm(big, numerics="xla-cpu", optimized=False))) == 8
    module = _prepared(_softmax(rows, cols))
    assert calls(emit_llvm(module, numerics="xla-cpu", optimized=False)) == []     # in cache: none
    monkeypatch.setattr(row_ahead, "PREFETCH_BYTES", 0)
    monkeypatch.setattr(row_hosts, "HOST_BYTES", 1 << 60)       # e in the stack row: none
    assert calls(emit_llvm(module, numerics="xla-cpu", optimized=False)) == []
    monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)             # e in the output row
    text = emit_llvm(module, numerics="xla-cpu", optimized=False)
    with_pf = {k: calls(blk) for k, blk in _vector_loop_bodies(text).items() if calls(blk)}
    assert len(with_pf) == 1 and calls(text) == list(with_pf.values())[0]
    lines = list(with_pf.values())[0]
    assert len(lines) == 2 * row_vector.SUM_IC * 16 * 4 // 64
    assert all(ln.rstrip().endswith("i32 0, i32 2, i32 1)") for ln in lines)
    assert _prefetched_streams(text, lines) == {"row.ahead": row_ahead.PREFETCH, "stored": row_ahead.PREFETCH}
    x = _edge_rows(rows, cols)
    for host in (1 << 60, 0):
        monkeypatch.setattr(row_hosts, "HOST_BYTES", host)
        outs = []
        for ahead in (row_ahead.PREFETCH, None):
            monkeypatch.setattr(row_ahead, "PREFETCH", ahead)
            assert bool(calls(emit_llvm(module, numerics="xla-cpu", optimized=False))) == (ahead is not None
                                                                                          and host == 0)
            exe = compile_module(module, threads=2, cache_dir=tmp_path / f"{host}{ahead}")
            outs += [exe.run([x]).tobytes()]
            exe.set_threads(1)
            outs += [exe.run([x]).tobytes()]
        assert len(set(outs)) == 1
    got = np.frombuffer(outs[0], np.float32).reshape(x.shape)
    r = near(run_module(module, [x]).value, got, ErrorSpec(abs=1e-30, rel=1e-5))
    assert r.ok, r.message



def _prefetched_streams(text: str, lines: list) -> dict:
    """{stream: distance} of prefetch calls `lines` in IR `text`: each address is a gep of
    i8 at PREFETCH + 64k (k = 0, 1, ... per stream) from one base, either the input at
    the next row ("row.ahead": a float gep whose index is built from %"row.ahead") or a
    pointer a vector store writes ("stored")."""
    import re
    defs = dict(re.findall(r'(%"[^"]+") = (.*)', text))
    stored = set(re.findall(r'store <\d+ x float> %"[^"]+", ptr (%"[^"]+")', text))
    offsets = {}
    for ln in lines:
        at = re.search(r'\(ptr (%"[^"]+")', ln).group(1)
        base, off = re.fullmatch(r'getelementptr i8, ptr (%"[^"]+"), i64 (\d+)', defs[at]).groups()
        offsets.setdefault(base, []).append(int(off))

    def kind(base):
        if base in stored:
            return "stored"
        idx = re.fullmatch(r'getelementptr inbounds float, ptr %"a0", i64 (%"[^"]+")', defs[base]).group(1)
        seen, todo = set(), [idx]
        while todo:                     # the index's operands, back to %"row.ahead"
            v = todo.pop()
            if v == '%"row.ahead"':
                return "row.ahead"
            if v in defs and v not in seen:
                seen.add(v)
                todo += re.findall(r'%"[^"]+"', defs[v])
        return "other"
    out = {}
    for base, offs in offsets.items():
        assert sorted(offs) == [offs[0] + 64 * k for k in range(len(offs))], offs
        out[kind(base)] = min(offs)
    return out

_AVX2_CHILD = """
import sys
import numpy as np
import llvmlite.binding as llvm
from hloc.backend import jit
target, cpu, feats, triple = jit.host()
feats = ",".join("-" + f[1:] if f.startswith(("+avx512", "+avx10", "+amx")) else f
                 for f in feats.split(","))
jit._host = (target, cpu, feats, triple)
sys.path.insert(0, sys.argv[1])
import test_backend_row_vector as t
from hloc.backend import compile_module, emit_llvm, row_vector
rows, cols, sum_of = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
module = t._prepared(t._softmax(rows, cols, sum_of))
x = t._edge_rows(rows, cols)
outs = []
for vector in (True, False):
    row_vector.ENABLED = vector
    text = emit_llvm(module, numerics="xla-cpu", optimized=False)
    assert ("<8 x float>" in text) == (vector and sum_of == "x"), text
    assert "<16 x float>" not in text and "ldexp" not in text and "scalef" not in text
    exe = compile_module(module, threads=2)
    outs.append(exe.run([x]).tobytes())
    exe.set_threads(1)
    assert exe.run([x]).tobytes() == outs[-1]
print("same" if outs[0] == outs[1] else "differ")
"""


@pytest.mark.parametrize("sum_of", ["e", "x"])
@pytest.mark.parametrize("rows,cols", [(32, 8192), (150, 1001), (1600, 80)])
def test_vector_softmax_has_the_scalar_bits_with_avx2(rows, cols, sum_of, tmp_path):
    """The same on an AVX2 target (8 lanes, exp scaled through exponent bits), in a child
    process whose host features have AVX-512 turned off: softmax itself keeps its scalar
    loops there (its sum carried in e's loop, which LLVM interleaves twice with 16
    registers: row_vector.plan); divided by the sum of x instead (the row-ahead max, a
    sum in its own loop, the row divide), it takes vectors of 8."""
    import os
    import subprocess
    import sys
    from pathlib import Path
    import llvmlite.binding as llvm
    if "+avx2" not in llvm.get_host_cpu_features().flatten().split(","):
        pytest.skip("host without AVX2")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _AVX2_CHILD, str(Path(__file__).parent), str(rows), str(cols),
                          sum_of],
                         capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["same"]
