"""Names a dump may give its computations and instructions never collide with the symbols
hloc emits under fixed names (hloc.backend.context.RESERVED and the names `reserved`
accepts): a module whose instructions are called `hloc_entry`, `hloc_nthreads`,
`hloc.parallel`, `hloc.gemm.f32`, `f8e4m3fn.decode`, `getpid`, `llvm.fabs.f32` ... compiles
(the last hung IR generation before) and computes
what the interpreter computes, with hloc's own symbols where the runtime looks for them."""
from __future__ import annotations

import re

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, context, jit
from hloc.backend.context import ModuleContext, Options
from hloc.runner import run_module

# Every instruction that becomes a kernel of its own is named like a reserved symbol; the
# transposes of 64x32 each make a kernel named after the instruction, the 2^20-element
# sine a kernel split over threads (the module then has hloc_nthreads and hloc.parallel),
# the dot goes through the emitted GEMM (hloc.gemm.f32 ...) with gemm="emitted".
NAMES = ["hloc_entry", "hloc_nthreads", "hloc_profile", "hloc_device_abort", "hloc_aot_ctx",
         "hloc.parallel", "hloc_rt_parallel", "hloc.gemm.f32", "hloc.gemm.f32.kernel",
         "hloc.cblas.f32", "gemm.one.float", "f8e4m3fn.decode", "getpid", "sin", "memcpy",
         "llvm.fabs.f32"]


def _module_text() -> str:
    lines = ["HloModule hloc_entry", "", "hloc_profile {",
             "  a = f32[] parameter(0)", "  b = f32[] parameter(1)",
             "  ROOT hloc_entry = f32[] add(a, b)", "}", "", "ENTRY hloc_nthreads {",
             "  p = f32[64,32] parameter(0)", "  big = f32[1048576] parameter(1)",
             "  w = f32[32,48] parameter(2)", "  zero = f32[] constant(0)"]
    outs, shapes = [], []
    for k, name in enumerate(NAMES):      # a kernel of its own each (shapes differ)
        c = 32 - k
        lines += [f"  s{k} = f32[64,{c}] slice(p), slice={{[0:64], [0:{c}]}}",
                  f"  {name} = f32[{c},64] transpose(s{k}), dimensions={{1,0}}"]
        outs.append(name)
        shapes.append(f"f32[{c},64]")
    lines += ["  hloc_entry.1 = f32[1048576] sine(big)",
              "  hloc_rt_stop = f32[64] reduce(p, zero), dimensions={1}, to_apply=hloc_profile",
              "  hloc.gemm.f64 = f32[64,48] dot(p, w), lhs_contracting_dims={1}, "
              "rhs_contracting_dims={0}"]
    outs += ["hloc_entry.1", "hloc_rt_stop", "hloc.gemm.f64"]
    shapes += ["f32[1048576]", "f32[64]", "f32[64,48]"]
    lines += [f"  ROOT t = ({', '.join(shapes)}) tuple({', '.join(outs)})", "}"]
    return "\n".join(lines) + "\n"


def _args():
    rng = np.random.default_rng(3)
    return [rng.standard_normal((64, 32), np.float32),
            rng.standard_normal(1 << 20, np.float32),
            rng.standard_normal((32, 48), np.float32)]


@pytest.mark.parametrize("kw", [{}, {"profile": True}, {"gemm": "emitted"},
                                {"numerics": "ieee", "threads": 1}])
def test_dump_names_like_hloc_symbols_compile_and_run(kw):
    text = _module_text()
    args = _args()
    want = run_module(hloc.parse(text), args).value
    exe = compile_module(hloc.parse(text), **kw)
    got = exe.run(args)
    assert len(got) == len(want) == len(NAMES) + 3
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-5,
                                   err_msg=f"output {k}")
    assert exe.splits_kernels              # hloc_nthreads is the module's thread count


def test_hloc_symbols_keep_their_names():
    text = jit.lower(hloc.parse(_module_text()), Options(profile=True, gemm="emitted")).ir_text
    defined = re.findall(r'^define [^@]*@"([^"]+)"\((.*)\)', text, re.M)
    names = [n for n, _ in defined]
    assert dict(defined)["hloc_entry"] == 'ptr %"params", ptr %"outs", ptr %"temp"'
    assert names.count("hloc_entry") == 1 and "hloc.parallel" in names
    assert re.search(r'^@"hloc_nthreads" = global i64 1$', text, re.M)
    assert re.search(r'^@"hloc_profile" = global ptr null$', text, re.M)
    for name in NAMES:                     # the dump's kernels, renamed
        if name not in ("hloc_entry", "hloc.parallel"):
            assert ("_" + name if name.startswith("llvm.") else f"{name}.2") in names, name


def test_unique_and_fixed():
    mcx = ModuleContext("m", Options())
    for name in [n for n in NAMES if not n.startswith("llvm.")] + ["exp", "pthread_create",
                                                                     "bf16.codes"]:
        assert context.reserved(name), name
        assert mcx.unique(name) == f"{name}.2"
        assert ModuleContext.fixed(name) == name
    # an intrinsic's name: no suffix would make it anything else (this loop never ended)
    assert context.reserved("llvm.fma.f32") and mcx.unique("llvm.fma.f32") == "_llvm.fma.f32"
    assert mcx.unique("hloc_entry.2") == "hloc_entry.2.2"      # already taken above
    assert mcx.unique("add.7") == "add.7" and not context.reserved("gemm.one.float.2")
    with pytest.raises(ValueError, match="not a reserved name"):
        ModuleContext.fixed("add.7")
    for module_constant in (jit.ENTRY,):
        assert context.reserved(module_constant)
    from hloc.aot import lower as aot_lower
    from hloc.backend import collective_calls, parallel, profile
    for name in (parallel.NTHREADS, profile.GLOBAL, collective_calls.ABORT, aot_lower.CTX):
        assert name in context.RESERVED
