"""Compiling in parts: a module split into several LLVM modules (hloc.backend.partition)
compiled on threads (hloc.backend.compile_threads) gives the bits of the whole module,
objects that do not depend on the thread count, and the same object-cache behaviour;
the object check accepts references between parts and nothing else."""
from __future__ import annotations

import ctypes
import re
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir

import hloc
from hloc.backend import compile_module, compile_threads, jit, partition, runtime
from hloc.backend.context import Options
from hloc.diagnostics import UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"


def _case(stem):
    d = load_npz(DUMPS / f"{stem}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    return (DUMPS / f"{stem}.after_optimizations.hlo").read_text(), ins


def _bits(exe, module, args):
    return [np.asarray(x).tobytes() for x in flatten_leaves(exe.run(args), module.entry.root.shape)]


@pytest.mark.parametrize("stem", ["mlp_train_step", "conv_grouped_grad", "tf_conv_pool"])
def test_parts_give_the_bits_of_the_whole_module(stem, monkeypatch):
    text, ins = _case(stem)
    got = {}
    for part_bytes in (1 << 40, 1):
        monkeypatch.setattr(jit, "PART_BYTES", part_bytes)
        m = hloc.parse(text, stem)
        exe = compile_module(m)
        got[part_bytes] = (len(exe.code.objects), _bits(exe, m, bind_arguments(m, ins)))
    assert got[1 << 40][0] == 1 and got[1][0] > 1          # whole, then split
    assert got[1][1] == got[1 << 40][1]


def test_objects_do_not_depend_on_the_thread_count(monkeypatch):
    monkeypatch.setattr(jit, "PART_BYTES", 1)
    text, _ = _case("mlp_train_step")
    low = jit.lower(hloc.parse(text), Options())
    assert len(low.parts) > 2
    one = jit.compile_objects(low, Options(), threads=1)
    three = jit.compile_objects(low, Options(), threads=3)
    assert one == three
    assert compile_threads.available()          # else the parts compile one by one


def test_split_module_object_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(jit, "PART_BYTES", 1)
    text, ins = _case("mlp_train_step")
    m1 = hloc.parse(text)
    e1 = compile_module(m1, cache_dir=tmp_path)
    m2 = hloc.parse(text)
    e2 = compile_module(m2, cache_dir=tmp_path)
    assert not e1.cache_hit and e2.cache_hit
    assert e2.code.objects == e1.code.objects and len(e1.code.objects) > 1
    assert _bits(e2, m2, bind_arguments(m2, ins)) == _bits(e1, m1, bind_arguments(m1, ins))
    # An entry whose header does not account for its objects is a miss, recompiled.
    from hloc.backend.cache import ObjectCache, pack, unpack
    (path,) = tmp_path.rglob("*.o")
    cache, key = ObjectCache(tmp_path), path.stem
    meta, blob = unpack(cache.get(key))
    cache.put(key, pack(dict(meta, objects=meta["objects"][:-1]), blob))
    e3 = compile_module(hloc.parse(text), cache_dir=tmp_path)
    assert not e3.cache_hit and e3.code.objects == e1.code.objects


def _toy_module():
    """Two noinline functions sharing a counter (mutable, private), a constant and an
    inlinable helper; `entry` calls both and returns counter + constant."""
    i64 = ir.IntType(64)
    m = ir.Module(name="toy")
    _, _, _, m.triple = jit.host()
    m.data_layout = str(jit.target_machine().target_data)
    counter = ir.GlobalVariable(m, i64, name="counter")
    counter.initializer, counter.linkage = ir.Constant(i64, 0), "private"
    const = ir.GlobalVariable(m, i64, name="const.seven")
    const.initializer, const.linkage, const.global_constant = ir.Constant(i64, 7), "private", True
    helper = ir.Function(m, ir.FunctionType(i64, [i64]), name="helper")
    b = ir.IRBuilder(helper.append_basic_block())
    b.ret(b.add(helper.args[0], b.load(const)))
    fns = []
    for name, step in (("bump_a", 1), ("bump_b", 100)):
        f = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name=name)
        f.attributes.add("noinline")
        b = ir.IRBuilder(f.append_basic_block())
        b.store(b.call(helper, [b.add(b.load(counter), ir.Constant(i64, step))]), counter)
        b.ret_void()
        fns.append(f)
    entry = ir.Function(m, ir.FunctionType(i64, []), name="entry")
    b = ir.IRBuilder(entry.append_basic_block())
    for f in fns:
        b.call(f, [])
    b.ret(b.add(b.load(counter), b.load(const)))
    return m


def test_partition_keeps_one_copy_of_mutable_state():
    sp = partition.split(_toy_module(), 1, 8, roots=("entry",))
    assert len(sp.parts) == 3
    for p in sp.parts:
        llvm.parse_assembly(p).verify()
    counter_defs = [p for p in sp.parts if '@"counter" = global' in p]
    assert len(counter_defs) == 1                     # one definition, external
    assert sum('@"counter" = external global' in p for p in sp.parts) == 2
    assert sum('@"const.seven" = private constant' in p for p in sp.parts) == 3   # copied
    assert all('define internal i64 @"helper"' in p for p in sp.parts if '@"helper"(' in p)
    objs = compile_threads.compile_all(sp.parts, jit.target_machine, 3, threads=2)
    whole = compile_threads.compile_all([sp.text], jit.target_machine, 3, threads=1)
    results = []
    for o in (objs, whole):
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), jit.target_machine())
        for obj in o:
            engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        f = ctypes.CFUNCTYPE(ctypes.c_int64)(engine.get_function_address("entry"))
        results.append((f(), f()))
    # counter: 0+1+7 = 8, 8+100+7 = 115, +7 returned; the second call goes on from 115
    assert results[0] == results[1] == (122, 237)


def test_object_check_accepts_only_references_between_parts():
    sp = partition.split(_toy_module(), 1, 8, roots=("entry",))
    objs = compile_threads.compile_all(sp.parts, jit.target_machine, 3, threads=1)
    assert any(runtime.undefined_symbols(o) for o in objs)     # calls across parts
    runtime.check_objects(objs)
    with pytest.raises(UnsupportedError, match="bump_"):
        runtime.check_objects(objs[1:])                          # a part missing


def test_small_modules_stay_whole():
    text, _ = _case("reduce_sum_xyz")
    exe = compile_module(hloc.parse(text))
    assert len(exe.code.objects) == 1 and exe.code.obj == exe.code.objects[0]


def test_a_function_address_in_a_global_keeps_the_module_whole():
    m = _toy_module()
    tab = ir.GlobalVariable(m, ir.PointerType(), name="table")
    tab.initializer = m.globals["bump_a"]
    sp = partition.split(m, 1, 8, roots=("entry",))
    assert sp.parts == [sp.text]
    llvm.parse_assembly(sp.text).verify()


@pytest.mark.parametrize("stem", ["scan_rnn", "nested_control_flow", "while_loop_newton"])
def test_computations_compiled_on_their_own_give_the_same_bits(stem, monkeypatch):
    """Every computation function noinline (hloc.backend.computation.OWN_UNIT_INSTRUCTIONS,
    normally only large ones), split finely: the bits of the module with them inlined."""
    from hloc.backend import computation
    d = load_npz(DUMPS / f"{stem}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    text = (DUMPS / f"{stem}.after_optimizations.hlo").read_text()
    got = []
    for limit, part_bytes in ((1 << 40, 1 << 40), (0, 1)):
        monkeypatch.setattr(computation, "OWN_UNIT_INSTRUCTIONS", limit)
        monkeypatch.setattr(jit, "PART_BYTES", part_bytes)
        m = hloc.parse(text, stem)
        low = jit.lower(m, Options())
        noinline = [n for n in ("comp.",) for p in low.parts
                    for line in p.splitlines() if line.startswith("define") and n in line
                    and "noinline" in line]
        got.append((bool(noinline), _bits(compile_module(hloc.parse(text, stem)), m,
                                          bind_arguments(m, ins))))
    assert not got[0][0] and got[1][0]
    assert got[0][1] == got[1][1]


def test_large_scan_bodies_compile_in_parts_of_their_own():
    text = (DUMPS / "bert_train_step.after_optimizations.hlo").read_text()
    low = jit.lower(hloc.parse(text), Options())
    owners = {}
    for k, p in enumerate(low.parts):
        for line in p.splitlines():
            if line.startswith("define ") and '@"comp.' in line and "internal" not in line:
                owners[line.split('@"')[1].split('"')[0]] = k
    assert len(owners) >= 3 and len(set(owners.values())) >= 3, owners


def test_slp_is_off_only_in_parts_with_a_very_large_function(monkeypatch):
    from hloc.backend import computation
    text = (DUMPS / "bert_train_step.after_optimizations.hlo").read_text()
    low = jit.lower(hloc.parse(text), Options())
    assert all(low.slp)                      # no function that large in the BERT step
    monkeypatch.setattr(jit, "SLP_MAX_INSTRUCTIONS", 3000)
    monkeypatch.setattr(computation, "OWN_UNIT_INSTRUCTIONS", 3000)
    low = jit.lower(hloc.parse(text), Options())
    assert len(low.slp) == len(low.parts) and 1 <= low.slp.count(False) < len(low.parts)
    for part, slp in zip(low.parts, low.slp):
        heads = [line for line in part.splitlines()
                 if line.startswith("define ") and '@"comp.' in line and "internal" not in line]
        assert slp == (not heads)           # each large computation is its own owned function
    assert jit.compile_objects(low, Options(), threads=1) == \
        jit.compile_objects(low, Options(), threads=2)


def test_a_small_sort_inlined_into_its_computation_compiles():
    """The weight of a computation does not follow the sort kernel's recursive helper."""
    text = """HloModule s
%cmp (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(f32[] %a, f32[] %b), direction=LT
}
ENTRY %main (p: f32[16]) -> f32[16] {
  %p = f32[16]{0} parameter(0)
  ROOT %s = f32[16]{0} sort(f32[16]{0} %p), dimensions={0}, to_apply=%cmp
}
"""
    x = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    np.testing.assert_array_equal(compile_module(hloc.parse(text)).run([x]), np.sort(x))


@pytest.mark.parametrize("stem", ["scan_rnn", "nested_control_flow", "bert_train_step"])
def test_units_compiled_ahead_give_the_same_text_objects_and_bits(stem, monkeypatch):
    """Large computations compile on a thread of their own while the rest of the module
    is generated (jit.lower(ahead=True)): the whole module's text is unchanged, the units
    come first as parts of their own, their objects do not depend on how they were
    compiled, and the bits are those of the module compiled without them."""
    from hloc.backend import computation
    if stem != "bert_train_step":            # every computation its own unit
        monkeypatch.setattr(computation, "OWN_UNIT_INSTRUCTIONS", 0)
    text, ins = _case(stem)
    lows = {ahead: jit.lower(hloc.parse(text, stem), Options(), ahead=ahead)
            for ahead in (False, True)}
    plain, ahead = lows[False], lows[True]
    assert plain.units == 0 and ahead.units >= 1 and ahead.ahead is not None
    assert ahead.ir_text == plain.ir_text
    for part in ahead.parts[:ahead.units]:
        heads = [line for line in part.splitlines() if line.startswith("define ")
                 and "internal" not in line]
        assert len(heads) == 1 and '@"comp.' in heads[0] and "noinline" in heads[0]
        llvm.parse_assembly(part).verify()
    objs = jit.compile_objects(ahead, Options(), threads=2)
    assert ahead.ahead is None
    again = jit.lower(hloc.parse(text, stem), Options(), ahead=True)
    assert again.parts == ahead.parts
    again.ahead.close()                      # nothing taken ahead: all compiled here
    again.ahead.wait()
    again.ahead = None
    assert jit.compile_objects(again, Options(), threads=1) == objs
    m = hloc.parse(text, stem)
    args = bind_arguments(m, ins)
    exes = [compile_module(hloc.parse(text, stem))]        # Executable compiles ahead
    monkeypatch.setattr("hloc.backend.executable.lower",
                        lambda module, options, ahead=False: jit.lower(module, options))
    exes.append(compile_module(hloc.parse(text, stem)))
    assert len(exes[0].code.objects) > len(exes[1].code.objects) or stem == "bert_train_step"
    assert _bits(exes[0], m, args) == _bits(exes[1], m, args)


def test_a_unit_that_reads_shared_state_is_not_compiled_ahead():
    m = _toy_module()                        # bump_a/bump_b read and write @"counter"
    assert partition.unit_part(m, m.globals["bump_a"], {}, roots=("entry",)) is None
    f = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name="quiet")
    f.attributes.add("noinline")
    b = ir.IRBuilder(f.append_basic_block())
    b.ret_void().set_metadata("hloc.note", m.add_metadata([ir.Constant(ir.IntType(32), 7)]))
    text, members = partition.unit_part(m, f, {}, roots=("entry",))
    assert members == {"quiet"}
    assert "!hloc.note !0" in text and "!0 = !{ i32 7 }" in text    # its metadata too
    llvm.parse_assembly(text).verify()
    sp = partition.split(m, 1, 8, roots=("entry",), units=[("quiet", text, members)])
    assert sp.units == 1 and sp.parts[0] == text
    assert sum('define void @"quiet"' in p for p in sp.parts) == 1


def test_sizes_count_the_args_arrays_direct_kernels_leave_out():
    """partition.split sizes a function by its text plus `args_array_bytes` (the array of
    pointers a direct kernel's call no longer passes), so part counts stay as tuned."""
    m = _toy_module()
    total = sum(len(partition.irtext.text(f)) for f in m.functions if f.blocks)
    assert len(partition.split(m, total, 8, roots=("entry",)).parts) == 1
    m.globals["bump_a"].args_array_bytes = total
    assert len(partition.split(m, total, 8, roots=("entry",)).parts) == 2


def test_inlinable_kernels_take_their_pointers_as_arguments():
    """A kernel under kernels.INLINE_WORK is `void (ptr in.., ptr out.., i64 wg, i64 nwg)`
    called with the buffers themselves (no array of pointers); a larger one keeps the
    array; both compute what the interpreter does."""
    from hloc.backend import kernels
    from hloc.runner import run_module
    text = ("HloModule m\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
            "  s = f32[4] add(a, b)\n  big = f32[4096] parameter(2)\n"
            "  n = f32[4096] negate(big)\n  ROOT t = (f32[4], f32[4096]) tuple(s, n)\n}\n")
    low = jit.lower(hloc.parse(text), Options())
    assert re.search(r'define internal void @"s"\(ptr %"in0", ptr %"in1", ptr %"out0", '
                     r'i64 %"wg", i64 %"nwg"\) alwaysinline', low.ir_text)
    assert re.search(r'define void @"n"\(ptr %"args", i64 %"wg", i64 %"nwg"\) noinline',
                     low.ir_text)
    entry = low.ir_text[low.ir_text.index('@"comp.e'):]
    assert "alloca [3 x ptr]" not in entry and "alloca [2 x ptr]" in entry
    assert kernels.INLINE_WORK < 4096 * 4 * 2
    m = hloc.parse(text)
    rng = np.random.default_rng(0)
    args = bind_arguments(m, [rng.standard_normal(4, np.float32), rng.standard_normal(4, np.float32),
                              rng.standard_normal(4096, np.float32)])
    got = flatten_leaves(compile_module(m).run(args), m.entry.root.shape)
    want = flatten_leaves(run_module(hloc.parse(text), args).value, m.entry.root.shape)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
