"""The compiled back end's machinery: `hloc emit-llvm` output that parses and verifies
with named kernels, the object cache (hit, corrupt entry, key), the runtime table's
object check, argument/result ownership, `hloc run --backend cpu --json`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, runtime
from hloc.backend.cache import ObjectCache
from hloc.diagnostics import UnsupportedError

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / "testdata" / "dumps"
ADD = ("HloModule m\n\nENTRY e {\n  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n"
       "  ROOT add.7 = f32[4] add(a, b)\n}\n")


@pytest.mark.parametrize("prog", ["reduce_sum_xyz", "while_loop_collatz", "switch_branches",
                                  "scatter_ops", "logsumexp_softmax"])
def test_emit_llvm_parses_and_verifies(prog, tmp_path):
    out = tmp_path / "m.ll"
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path))
    path = DUMPS / f"{prog}.after_optimizations.hlo"
    r = subprocess.run([sys.executable, "-m", "hloc", "emit-llvm", str(path), "-o", str(out)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    llvm.parse_assembly(text).verify()
    module = hloc.parse_file(path)
    fusions = [i.name for c in module.computations for i in c.instructions if i.opcode == "fusion"]
    raw = emit_llvm(module, optimized=False)
    llvm.parse_assembly(raw).verify()
    # one function per kernel, named after the instruction (small ones are internal and
    # always inlined, so only the IR before LLVM's passes still has all of them)
    for name in fusions:
        assert f"@{name}(" in raw or f'@"{name}"(' in raw
    assert "define void @hloc_entry" in raw or 'define void @"hloc_entry"' in raw


def test_object_cache_hit_and_corrupt_entry(tmp_path):
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    e1 = compile_module(hloc.parse(ADD), cache_dir=tmp_path)
    assert not e1.cache_hit
    e2 = compile_module(hloc.parse(ADD), cache_dir=tmp_path)
    assert e2.cache_hit
    entries = [p for p in tmp_path.rglob("*.o")]
    assert len(entries) == 1
    entries[0].write_bytes(entries[0].read_bytes()[:-7] + b"garbage")
    e3 = compile_module(hloc.parse(ADD), cache_dir=tmp_path)
    assert not e3.cache_hit                        # validated, recompiled
    np.testing.assert_array_equal(e3.run([a, b]), a + b)
    e4 = compile_module(hloc.parse(ADD), numerics="ieee", cache_dir=tmp_path)
    assert not e4.cache_hit                        # options are part of the key


def test_loaded_code_is_its_objects_alone():
    """jit.load: the engine holds no module (the empty one MCJIT is made with is taken out
    before finalize_object, which would put it through code generation) and finds the
    entry in the objects; the code runs, also once an earlier engine is gone."""
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    for _ in range(2):
        exe = compile_module(hloc.parse(ADD))
        assert not exe.code.engine._modules
        assert exe.code.engine.get_function_address("hloc_entry") == exe.code.address
        np.testing.assert_array_equal(exe.run([a, b]), a + b)
        del exe


def test_cache_put_is_atomic(tmp_path):
    c = ObjectCache(tmp_path)
    c.put("k" * 64, b"\x7fELF...")
    assert c.get("k" * 64) == b"\x7fELF..."
    assert not [p for p in tmp_path.rglob(".tmp-*")]


def test_runtime_refuses_unknown_symbols():
    e = compile_module(hloc.parse(ADD))
    assert set(runtime.undefined_symbols(e.code.obj)) <= runtime.ALLOWED
    from hloc.backend.jit import target_machine
    ir_text = ("declare i32 @system(ptr)\ndefine i32 @f(ptr %p) {\n"
               "  %r = call i32 @system(ptr %p)\n  ret i32 %r\n}\n")
    obj = target_machine().emit_object(llvm.parse_assembly(ir_text))
    assert "system" in runtime.undefined_symbols(obj)
    with pytest.raises(UnsupportedError, match="system"):
        runtime.check_object(obj)


def test_results_are_fresh_and_arguments_untouched():
    text = ("HloModule m, input_output_alias={ {}: (0, {}, may-alias) }\n\nENTRY e {\n"
            "  a = f32[3] parameter(0)\n  ROOT r = f32[3] multiply(a, a)\n}\n")
    exe = compile_module(hloc.parse(text))
    a = np.array([1, 2, 3], np.float32)
    r1 = exe.run([a])
    r2 = exe.run([a])
    assert r1 is not r2 and not np.shares_memory(r1, r2)
    np.testing.assert_array_equal(a, [1, 2, 3])
    np.testing.assert_array_equal(r1, [1, 4, 9])


def test_unsupported_names_op_and_line():
    text = ("HloModule m\n\nENTRY e {\n  a = f32[4] parameter(0)\n"
            "  ROOT f = f32[4] custom-call(a), custom_call_target=\"system\"\n}\n")
    with pytest.raises(UnsupportedError) as e:
        compile_module(hloc.parse(text, "x.hlo"))
    assert "custom-call target 'system'" in e.value.render() and "x.hlo:5" in e.value.render()


def test_module_run_backend_cpu_and_layouts():
    text = ("HloModule m\n\nENTRY e {\n  a = f32[2,3]{0,1} parameter(0)\n"
            "  ROOT t = f32[3,2]{0,1} transpose(a), dimensions={1,0}\n}\n")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = hloc.parse(text).run(a, backend="cpu")
    np.testing.assert_array_equal(got, a.T)


def test_cli_run_cpu_json(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path))
    cmd = [sys.executable, "-m", "hloc", "run", str(DUMPS / "reduce_sum_xyz.before_optimizations.hlo"),
           "--inputs", str(DUMPS / "reduce_sum_xyz.npz"), "--backend", "cpu", "--json",
           "--iterations", "2"]
    first = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout)
    second = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout)
    assert first["backend"] == "cpu" and first["numerics"] == "xla-cpu"
    assert first["cache_hit"] is False and second["cache_hit"] is True
    assert len(first["run_s"]) == 2 and first["compile_s"] > 0
    expected = float(np.load(DUMPS / "reduce_sum_xyz.npz")["out0"])
    assert abs(first["outputs"][0]["values"] - expected) <= 1e-3 * abs(expected)
    assert (tmp_path / "hloc").is_dir()


def test_concurrent_calls_do_not_share_temporaries():
    from concurrent.futures import ThreadPoolExecutor
    text = ("HloModule m\n\nENTRY e {\n  a = f32[65536] parameter(0)\n  b = f32[65536] exponential(a)\n"
            "  c = f32[65536] negate(b)\n  ROOT r = f32[65536] multiply(c, a)\n}\n")
    exe = compile_module(hloc.parse(text))
    xs = [np.full(65536, i / 8, np.float32) for i in range(16)]
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda x: exe.run([x]), xs))
    for x, o in zip(xs, outs):
        np.testing.assert_allclose(o, -np.exp(x) * x, rtol=1e-5)


def test_compile_once_call_many_api():
    module = hloc.parse((DUMPS / "reduce_sum_xyz.before_optimizations.hlo").read_text())
    exe = hloc.compile(module)
    for k in range(3):
        args = [np.full((4, 8), k + 1, np.float32)] * 3
        assert float(exe.run(args)) == 32 * ((k + 1) + (k + 1) ** 2)


def test_integer_constants_one_helper():
    """loops.i64 / loops.i32: one maker of shared integer constants (computation.py had
    its own i32 cache): the right type and value, one object per number while cached,
    still right past the cache's size."""
    from llvmlite import ir

    from hloc.backend import computation, loops
    for make, width in ((loops.i64, 64), (loops.i32, 32)):
        c = make(7)
        assert isinstance(c.type, ir.IntType) and c.type.width == width and c.constant == 7
        assert make(7) is c and make(np.int64(7)) is c
        assert str(make(-3)) == f"i{width} -3"
    assert loops.i32(5) is not loops.i64(5)
    big = [loops.i64(k) for k in range(loops._CACHED + 10)]
    assert [b.constant for b in big[-3:]] == [loops._CACHED + 7, loops._CACHED + 8, loops._CACHED + 9]
    assert not hasattr(computation, "_i32") and computation.i32 is loops.i32
