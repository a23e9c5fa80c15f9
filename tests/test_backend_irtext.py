"""hloc.backend.irtext prints llvmlite functions byte for byte as llvmlite's `str` does:
on the modules the back end emits for real dumps (every kind of instruction it uses),
and on a hand-built function with the rarer forms (flags, fast-math, metadata, align,
names that need escaping, calls with and without attributes, allocas)."""
from __future__ import annotations

from pathlib import Path

import pytest
from llvmlite import ir

import hloc
from hloc.backend import irtext, jit, partition
from hloc.backend.context import Options
from hloc.cli_backend import prepare_for_cpu

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
STEMS = ["mlp_train_step", "scan_rnn", "sort_ops", "fft_ops", "random_threefry", "bf16_arith",
         "complex64_math", "nested_control_flow", "scatter_ops", "linalg_qr_eigh"]


def _printed(stem, options, monkeypatch) -> list[tuple[str, str, str]]:
    """(name, irtext's text, llvmlite's str) of every global value of the module the
    back end emits for `stem`, printed when it is printed (jit.lower releases it after)."""
    m = hloc.parse((DUMPS / f"{stem}.before_optimizations.hlo").read_text(), stem)
    prepare_for_cpu(m, None)
    seen = []
    real = partition.split

    def capture(module, *a, **k):
        fns = [v for v in module.globals.values() if isinstance(v, ir.Function) and v.blocks]
        assert fns
        # irtext first: llvmlite's own str() caches instruction text
        seen.extend((v.name, irtext.text(v), str(v)) for v in module.globals.values())
        return real(module, *a, **k)
    monkeypatch.setattr(partition, "split", capture)
    jit.lower(m, options)
    return seen


@pytest.mark.parametrize("profile", [False, True])
@pytest.mark.parametrize("stem", STEMS)
def test_emitted_functions_print_as_llvmlite_does(stem, profile, monkeypatch):
    printed = _printed(stem, Options(profile=profile), monkeypatch)
    assert printed
    for name, ours, theirs in printed:
        assert ours == theirs, name


def test_rare_forms_print_as_llvmlite_does():
    m = ir.Module("m")
    i32, f32 = ir.IntType(32), ir.FloatType()
    callee = ir.Function(m, ir.FunctionType(f32, [f32]), name="g")
    fn = ir.Function(m, ir.FunctionType(f32, [i32, f32, ir.PointerType()]), name='f"q\\')
    x, y, p = fn.args
    x.name, y.name, p.name = 'x"1', "y\\", "p"
    b = ir.IRBuilder(fn.append_basic_block('entry"'))
    other = fn.append_basic_block("other")
    a = b.add(x, ir.Constant(i32, 3), name="a", flags=("nsw", "nuw"))
    c = b.icmp_signed("<", a, x)
    fc = b.fcmp_ordered("<", y, ir.Constant(f32, 1.5), flags=("nnan", "fast"))
    s = b.select(c, y, ir.Constant(f32, 0.0), flags=("nnan",))
    fm = b.fmul(s, y, flags=("fast",))
    ld = b.load(p, typ=f32, align=4)
    st = b.store(fm, p, align=8)
    tagged = b.fadd(ld, fm, name="tagged")
    tagged.set_metadata("fpmath", m.add_metadata([ir.Constant(f32, 2.5)]))
    z = b.zext(fc, i32)
    gp = b.gep(p, [ir.Constant(ir.IntType(64), 2)], source_etype=f32, inbounds=False)
    r = b.call(callee, [tagged], fastmath=("fast",))
    sl = b.alloca(f32, name="slot")
    b.alloca(i32, size=ir.Constant(i32, 4))
    b.alloca(ir.ArrayType(f32, 3)).align = 16
    b.call(callee, [y])                                        # plain: ours
    b.call(callee, [y], tail=True)
    b.call(callee, [y], cconv="fastcc")
    b.call(callee, [y], attrs=("nounwind",))
    b.call(callee, [y], arg_attrs={0: ("noundef",)})
    vcallee = ir.Function(m, ir.FunctionType(i32, [i32], var_arg=True), name="printf_like")
    b.call(vcallee, [x, x])
    vfn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name="vf")
    b.call(vfn, [p])
    b.cbranch(b.trunc(z, ir.IntType(1)), other, other)
    b.position_at_end(other)
    phi = b.phi(f32, name="ph")
    phi.add_incoming(r, fn.blocks[0])
    b.store(phi, sl)
    b.store(phi, gp)
    b.ret(phi)
    fn2 = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name="v")
    ir.IRBuilder(fn2.append_basic_block()).ret_void()
    _ = (st,)
    for v in m.globals.values():
        ours = irtext.text(v)
        assert ours == str(v), v.name


def test_module_text_prints_as_llvmlite_does():
    """irtext.module_text = str(module): the thread runtime's module (atomics, calls with
    attributes, identified types where present) and a module with named and unnamed
    metadata and a global."""
    from hloc.backend import threadpool
    triple = jit.host()[3]
    m = ir.Module(name="hloc_rt")
    m.triple, m.data_layout = triple, "e-m:e-i64:64-n8:16:32:64-S128"
    threadpool.Runtime(m, triple, {})
    assert irtext.module_text(m) == str(m)
    assert threadpool.module_text(triple, m.data_layout) == str(m)
    m = ir.Module(name='q"m')
    st = m.context.get_identified_type("pair")
    st.set_body(ir.IntType(32), ir.FloatType())
    g = ir.GlobalVariable(m, st, name="g")
    g.initializer = ir.Constant(st, [1, 2.0])
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []), name="f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ret = b.ret_void()
    ret.set_metadata("hint", m.add_metadata(["x"]))
    m.add_named_metadata("named", m.add_metadata([ir.Constant(ir.IntType(32), 7)]))
    assert irtext.module_text(m) == str(m)
