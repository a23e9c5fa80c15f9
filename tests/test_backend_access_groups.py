"""Loops told free of loop-carried dependences (hloc.backend.access_groups): which loops
of hand-built IR are marked, that a row kernel's loops are marked only where no buffer
they write is read in them, that LLVM then keeps no run-time overlap check, and that the
bits are those without the marks, donated or not."""
from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

import hloc
from hloc.backend import compile_module, jit, llvm_parts, row_groups, row_hosts, row_vector
from hloc.backend.access_groups import PARALLEL, parallel_accesses
from hloc.backend.context import Options
from hloc.backend.loops import for_range, hint_loops
from hloc.cli_backend import prepare_for_cpu

from row_modules import softmax as _softmax

F32 = ir.FloatType()
I64 = ir.IntType(64)
PTR = ir.PointerType()


def _loop(body, nargs=2, known=None):
    """fn(p0, p1, ...): for j < 64: body(b, args, j); the hints parallel_accesses gives
    its loop (args in `known`, default all, count as distinct buffers); the module text."""
    mod = ir.Module("m")
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [PTR] * nargs), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    slot = b.alloca(F32, name="slot")
    b.store(ir.Constant(F32, 0), slot)
    with for_range(b, 0, 64, name="j") as j:
        body(b, fn.args, j, slot)
    b.ret_void()
    known = fn.args if known is None else [fn.args[k] for k in known]
    got = []
    hint_loops(fn, lambda loop: got.append(parallel_accesses(loop, {id(a) for a in known})) or
               ([got[-1]] if got[-1] else []))
    text = str(mod)
    llvm.parse_assembly(text).verify()
    return got[0], text


def _at(b, p, j):
    return b.gep(p, [j], source_etype=F32, inbounds=True)


def test_copy_between_buffers_is_marked():
    def body(b, a, j, slot):
        v = b.load(_at(b, a[0], j), typ=F32)
        b.store(b.fadd(b.load(slot, typ=F32), v), slot)        # an accumulator: unmarked
        b.store(v, _at(b, a[1], j))
    par, text = _loop(body)
    assert par is not None and par[0] == PARALLEL
    g = re.search(r"!(\d+) = distinct !\{\}", text).group(1)
    assert re.search(rf'!\d+ = !{{ !"llvm.loop.parallel_accesses", !{g} }}', text)
    assert text.count(f"!llvm.access.group !{g}") == 2          # a[0]'s load, a[1]'s store
    slot = [ln for ln in text.splitlines() if '%"slot"' in ln and ("load" in ln or "store" in ln)]
    assert len(slot) == 3 and not any("access.group" in ln for ln in slot)


@pytest.mark.parametrize("case", ["in place", "next element", "unknown base", "same element",
                                  "two stores", "memcpy", "read only"])
def test_loops_left_to_llvm(case):
    """A loop that reads a buffer it writes (the same element or another), writes one
    through a pointer not known distinct, writes one address every iteration, writes a
    buffer twice, calls memcpy or stores nothing is not marked."""
    def body(b, a, j, slot):
        if case == "in place":
            p = _at(b, a[0], j)
            b.store(b.fadd(b.load(p, typ=F32), ir.Constant(F32, 1)), p)
        elif case == "next element":
            v = b.load(_at(b, a[1], b.add(j, ir.Constant(I64, 1))), typ=F32)
            b.store(v, _at(b, a[1], j))
        elif case == "unknown base":
            b.store(b.load(_at(b, a[0], j), typ=F32), _at(b, a[1], j))
        elif case == "same element":
            b.store(b.load(_at(b, a[0], j), typ=F32), _at(b, a[1], ir.Constant(I64, 0)))
        elif case == "two stores":
            v = b.load(_at(b, a[0], j), typ=F32)
            b.store(v, _at(b, a[1], j))
            b.store(v, _at(b, a[1], b.add(j, ir.Constant(I64, 64))))
        elif case == "memcpy":
            f = b.module.declare_intrinsic("llvm.memcpy", [PTR, PTR, I64])
            b.call(f, [_at(b, a[1], j), _at(b, a[0], j), ir.Constant(I64, 4), ir.Constant(ir.IntType(1), 0)])
            b.store(ir.Constant(F32, 0), _at(b, a[1], j))
        else:
            b.store(b.fadd(b.load(slot, typ=F32), b.load(_at(b, a[0], j), typ=F32)), slot)
    par, text = _loop(body, known=[0] if case == "unknown base" else None)
    assert par is None and "llvm.access.group" not in text and "parallel_accesses" not in text


def _module(rows, cols, name="softmax"):
    return prepare_for_cpu(hloc.parse(_softmax(rows, cols), name), None)


def _optimised(module) -> str:
    """The module's IR as the JIT optimises it: every part after its own passes."""
    return llvm_parts.text(llvm_parts.module_parts(module, Options()))


def _rows_ir(module, options=None) -> str:
    text = jit.lower(module, options or Options()).ir_text
    start = text.index('.rows"(')
    return text[start:text.index("\n}\n", start)]


@pytest.mark.parametrize("hosted", [False, True])
def test_softmax_rows_marked_where_no_written_buffer_is_read(monkeypatch, hosted):
    """Softmax's row kernel (xla-cpu numerics): the exp loop reads x (this row's and,
    ahead, the next row's max) and writes e; it is marked. With e hosted in the output
    (hloc.backend.row_hosts) the divide loop reads and writes the output row: not marked;
    with e in a row scratch it reads the scratch and writes the output: marked (both
    its fast loop and its exact one). LLVM then checks no distance between x and the
    output at run time. (The scalar form, whose loops LLVM vectorises: row_vector off.)"""
    monkeypatch.setattr(row_vector, "ENABLED", False)
    if hosted:
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    module = _module(256, 1024)
    body = _rows_ir(module)
    groups = re.findall(r"!llvm\.access\.group !(\d+)", body)
    stores = [ln for ln in body.splitlines() if ln.strip().startswith("store float")]
    marked_stores = [ln for ln in stores if "llvm.access.group" in ln]
    # exp; then the divide's fast and exact (redo) loops, unless they update the output row
    assert len(set(groups)) == len(marked_stores) == (1 if hosted else 3)
    if hosted:      # the divide's store into the output row it reads is left unmarked
        assert any("llvm.access.group" not in ln for ln in stores)
    opt = _optimised(module)
    assert "vector.body" in opt and "diff.check" not in opt and "conflict" not in opt
    monkeypatch.setattr(row_groups, "PARALLEL_ACCESSES", False)
    plain = _optimised(module)
    # what the marks take away: x against the output row exp writes (a row scratch on
    # the stack LLVM knows to be apart from any argument)
    assert ("diff.check" in plain) == hosted


def test_ieee_softmax_marked_too():
    body = _rows_ir(_module(256, 1024), Options("ieee"))
    assert "llvm.loop.parallel_accesses" in jit.lower(_module(256, 1024), Options("ieee")).ir_text
    assert "llvm.access.group" in body


@pytest.mark.parametrize("numerics", ["xla-cpu", "ieee"])
def test_same_bits_with_and_without_marks_and_donation(monkeypatch, tmp_path, numerics):
    """Run.py's softmax with its input donated (an input_output_alias; the row group
    reads the parameter, so the output is a fresh array, hloc.backend.buffers), marked
    and not, hosted and not: one set of bits."""
    rows, cols = 128, 8192          # 4 MiB: several work groups
    text = _softmax(rows, cols).replace("HloModule softmax",
                                        "HloModule softmax, input_output_alias={ {}: (0, {}, may-alias) }")
    module = prepare_for_cpu(hloc.parse(text, "softmax"), None)
    x = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32) * 4
    x[5, 7] = np.inf
    x[9] = -np.inf
    want = None
    for k, (marks, host) in enumerate([(True, None), (False, None), (True, 0), (False, 0)]):
        monkeypatch.setattr(row_groups, "PARALLEL_ACCESSES", marks)
        if host is not None:
            monkeypatch.setattr(row_hosts, "HOST_BYTES", host)
        for donate in ((), (0,)):
            exe = compile_module(module, numerics=numerics, donate=donate, cache_dir=tmp_path / f"{k}{donate}")
            arg = x.copy()
            got = np.asarray(exe.run([arg])).tobytes()
            if donate:
                assert [d["placement"] for d in exe.donation] == ["fresh"]
            assert np.array_equal(arg, x)
            want = got if want is None else want
            assert got == want, (marks, host, donate)


@pytest.mark.parametrize("hosted", [False, True])
def test_exact_divide_loop_left_scalar(monkeypatch, hosted):
    """xla-cpu softmax: the row divide's exact loop (true divisions, run only for a row
    redone) is not vectorised (row_groups.COLD_SCALAR): no vector fdiv is left in the
    optimised kernel, one without the setting; the fast loop still is vectorised. (Its
    bits: test_backend_rows' row-divide tests, where rows are redone.) The scalar form,
    whose loops LLVM vectorises (row_vector off); the vector form leaves it scalar too."""
    monkeypatch.setattr(row_vector, "ENABLED", False)
    if hosted:
        monkeypatch.setattr(row_hosts, "HOST_BYTES", 0)
    module = _module(256, 1024)
    text = jit.lower(module, Options()).ir_text
    scalar = re.findall(r'!(\d+) = !\{ !"llvm.loop.vectorize.width", i32 1 \}', text)
    assert len(scalar) == 1
    body = _rows_ir(module)
    loop_ids = re.findall(r"!llvm\.loop !(\d+)", body)
    nodes = dict(re.findall(r"^!(\d+) = distinct !\{(.*)\}$", text, re.M))
    cold = [k for k in loop_ids if f"!{scalar[0]}" in nodes[k].split(", ")[1:]]
    assert len(cold) == 1
    opt = _optimised(module)
    vector_fdiv = re.compile(r"fdiv [a-z ]*<")
    assert re.search(r"fdiv [a-z ]*float", opt) and not vector_fdiv.search(opt) and "fmul <" in opt
    monkeypatch.setattr(row_groups, "COLD_SCALAR", False)
    opt = _optimised(module)
    assert vector_fdiv.search(opt)
