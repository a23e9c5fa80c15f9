"""LLVM loop hints (hloc.backend.loops.hint_loops): which branches get a node, what the
nodes say, that they reach LLVM through the partitioner, and that a row kernel's loops
really are not unrolled (hloc.backend.row_loop_hints.row_hints) with the same bits."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

import hloc
from hloc.backend import compile_module, emit_llvm, partition, row_groups, row_loop_hints
from hloc.backend.loops import for_range, hint_loops
from hloc.cli_backend import prepare_for_cpu

from row_modules import softmax as _softmax

NO_UNROLL = "llvm.loop.unroll.disable"
FOLLOWUP = ("llvm.loop.vectorize.followup_all", [("llvm.loop.isvectorized", 1), NO_UNROLL])


def _nest(mod: ir.Module, name: str, flags=()) -> ir.Function:
    """for i < 8: for j < 16: p[j] += 1 ; then a loop closed by a conditional branch."""
    f32 = ir.FloatType()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name)
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    with for_range(b, 0, 8, name="i"):
        with for_range(b, 0, 16, name="j") as j:
            p = b.gep(fn.args[0], [j], source_etype=f32)
            b.store(b.fadd(b.load(p, typ=f32), ir.Constant(f32, 1.0), flags=flags), p)
    pre, loop, end = b.block, fn.append_basic_block("do"), fn.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(ir.IntType(64))
    k.add_incoming(ir.Constant(ir.IntType(64), 0), pre)
    nxt = b.add(k, ir.Constant(ir.IntType(64), 1))
    k.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, ir.Constant(ir.IntType(64), 4)), loop, end)
    b.position_at_end(end)
    b.ret_void()
    return fn


def _hints(loop):
    return [FOLLOWUP] if loop.innermost else [NO_UNROLL]


def test_each_loop_gets_its_own_node_with_its_hints():
    mod = ir.Module("m")
    fn = _nest(mod, "f")
    assert hint_loops(fn, _hints) == 2          # not the loop closed by a conditional branch
    text = str(mod)
    j_id = re.search(r'br label %"j.head", !llvm.loop !(\d+)', text).group(1)
    i_id = re.search(r'br label %"i.head", !llvm.loop !(\d+)', text).group(1)
    assert i_id != j_id
    assert f"!{j_id} = distinct !{{!{j_id}, " in text and f"!{i_id} = distinct !{{!{i_id}, " in text
    assert '!"llvm.loop.vectorize.followup_all"' in text and '!"llvm.loop.isvectorized", i32 1' in text
    assert hint_loops(fn, _hints) == 0          # marked once
    m = llvm.parse_assembly(text)
    m.verify()


def test_hints_reach_every_part():
    mod = ir.Module("m")
    fns = [_nest(mod, "f"), _nest(mod, "g")]
    for fn in fns:
        hint_loops(fn, _hints)
    sp = partition.split(mod, 1, 2)
    assert len(sp.parts) == 2                   # module metadata no longer prevents a split
    for text in sp.parts + [sp.text]:
        assert "!llvm.loop !" in text
        llvm.parse_assembly(text).verify()      # every node a part references is there


def test_row_hints_keep_interleaving_where_it_decides_bits_or_hides_latency():
    seen = []

    def record(loop):
        seen.append((loop.innermost, row_loop_hints.row_hints(loop)))
        return []
    for flags in ((), ("reassoc",)):
        hint_loops(_nest(ir.Module("m"), "f", flags), record)
    keep, once = row_loop_hints.KEEP_INTERLEAVE, [row_loop_hints.NO_UNROLL]
    assert seen == [(True, once), (False, once), (True, keep), (False, once)]


def test_row_kernel_is_not_unrolled_and_keeps_its_bits(monkeypatch, tmp_path):
    # the scalar form, whose loops LLVM vectorises and would unroll (explicit vector
    # loops, hloc.backend.row_vector, compile at the lean level: nothing unrolls them)
    from hloc.backend import row_vector
    monkeypatch.setattr(row_vector, "ENABLED", False)
    module = prepare_for_cpu(hloc.parse(_softmax(256, 1024), "softmax"), None)
    x = np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32)

    def compiled(tag):
        ir_text = emit_llvm(module, optimized=False)
        (rows,) = re.findall(r'define void @"([^"]*\.rows)"', ir_text)
        opt = emit_llvm(module)
        body = opt[opt.index(f"@{rows}("):]
        body = body[:body.index("\n}\n")]
        out = compile_module(module, cache_dir=tmp_path / tag).run([x])
        return ir_text, body, np.asarray(out).tobytes()

    hinted, hinted_opt, bits = compiled("hinted")
    monkeypatch.setattr(row_groups, "hint_loops", lambda fn, hints: 0)
    plain, plain_opt, plain_bits = compiled("plain")
    assert "!llvm.loop" in hinted and "!llvm.loop" not in plain
    # partial unrolling copies the vector loops' bodies: fewer vector loads without it
    assert 0 < hinted_opt.count("load <") < plain_opt.count("load <")
    assert bits == plain_bits                   # same vectorisation, same partial sums
