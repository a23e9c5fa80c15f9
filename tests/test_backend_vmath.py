"""The xla-cpu f32 exp (hloc.backend.vmath): within 1.06 ulp of exp in f64 over the whole
input range (the bound a sweep of every f32 input measured; vmath's docstring), exact at 0,
overflow to inf, underflow to 0 (FTZ), NaN kept — through both ways of scaling by 2^n
(AVX-512's ldexp, and exponent bits elsewhere)."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, vmath


def _inputs():
    n = 1 << 17
    pos = np.linspace(0, 0x42B20000, n, dtype=np.uint32).view(np.float32)     # 0 .. 89
    neg = -np.linspace(0, 0x42D00000, n, dtype=np.uint32).view(np.float32)    # 0 .. -104
    rng = np.random.default_rng(1)
    dense = rng.uniform(-20, 20, n).astype(np.float32)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72283, 88.7229,
                        88.5, 89.5, -87.33654, -88.0, -103.9, -1e4, 1e4, 1e-30, -1e-30,
                        5.201181411743164, 5.202301025390625],     # the worst two: 1.059, 1.028 ulp
                       np.float32)
    return np.concatenate([pos, neg, dense, special])


@pytest.mark.parametrize("vscalef", [True, False])
def test_xla_cpu_exp_within_its_measured_bound(vscalef, monkeypatch, tmp_path):
    if vscalef:
        feats = __import__("llvmlite.binding", fromlist=["x"]).get_host_cpu_features().flatten()
        if "+avx512f" not in feats.split(","):
            pytest.skip("host without AVX-512")
    else:
        monkeypatch.setattr(vmath, "has_vscalef", lambda mcx: False)
    x = _inputs()
    text = (f"HloModule m\nENTRY e {{\n  x = f32[{x.size}] parameter(0)\n"
            f"  ROOT y = f32[{x.size}] exponential(x)\n}}\n")
    assert ("llvm.ldexp" in emit_llvm(hloc.parse(text), numerics="xla-cpu", optimized=False)) == vscalef
    y = np.asarray(compile_module(hloc.parse(text), numerics="xla-cpu", cache_dir=tmp_path).run([x]))
    with np.errstate(over="ignore"):
        ref = np.exp(x.astype(np.float64))
        ref32 = ref.astype(np.float32)
    tiny = np.finfo(np.float32).tiny
    normal = np.isfinite(ref32) & (ref32 >= tiny)
    ulp = np.abs(y[normal] - ref[normal]) / np.spacing(ref32[normal]).astype(np.float64)
    assert ulp.max() < 1.06, (ulp.max(), x[normal][ulp.argmax()])
    assert np.all(y[ref32 < tiny] == 0)                      # FTZ: flushed, never garbage
    assert np.all(np.isposinf(y[np.isinf(ref32) & ~np.isnan(x)]))
    assert np.isnan(y[np.isnan(x)]).all()
    assert y[x == 0].tolist() == [1.0] * int((x == 0).sum())


def _edge_inputs():
    """exp's edges: +-inf, NaNs of both signs (quiet and signalling, with payloads), +-0,
    subnormal inputs, the clamps, and neighbourhoods of the results' boundaries (overflow
    at 88.72; the smallest normal result at -87.34; the smallest subnormal at -103.28);
    then a sweep over every 2^-k step of [-110, 90]."""
    bits = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFD54321,
                     0x7F812345, 0xFF80ABCD, 0x7F800001, 0x00000000, 0x80000000, 0x00000001,
                     0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32).view(np.float32)
    edges = np.array([88.72283, -87.33654, -103.27893, -103.972, -104.0, 89.0, 0.5 * np.log(2)],
                     np.float32)
    near = (edges.view(np.int32)[:, None] + np.arange(-300, 300)).astype(np.int32).view(np.float32)
    pos = np.linspace(0, 0x42B40000, 1 << 18, dtype=np.uint32).view(np.float32)      # 0 .. 90
    neg = np.linspace(0x80000000, 0xC2DC0000, 1 << 18, dtype=np.uint32).view(np.float32)  # -0 .. -110
    x = np.concatenate([bits, -bits, near.ravel(), -near.ravel(), pos, neg])
    return np.concatenate([x, np.zeros(-x.size % 64, np.float32)])


def _features(avx512: bool) -> str:
    """The host's LLVM target features; `avx512` false: with AVX-512 (and AVX10, AMX,
    which imply it) turned off, the features of an AVX2 host (merely leaving them out
    would keep those the CPU name implies)."""
    from hloc.backend import jit
    feats = jit.host()[2]
    if avx512:
        return feats
    return ",".join("-" + f[1:] if f.startswith(("+avx512", "+avx10", "+amx")) else f for f in feats.split(","))


def _exp_function(lanes: int, avx512: bool):
    """LLVM IR text of `run(x, y, n, csr)`: y[:n] = vmath.exp_f32(x[:n]) in <lanes x f32>
    vectors (f32 where lanes is 1), computed in a function called with MXCSR set to csr
    (restored after); `avx512` false: for the host's features without AVX-512."""
    from types import SimpleNamespace
    from llvmlite import ir
    from hloc.backend import jit
    from hloc.backend.context import ModuleContext, Options
    from hloc.backend.types import F32, I32, I64
    mcx = ModuleContext("exp", Options(), jit.host()[3])
    mcx.features = _features(avx512)
    ptr, vt = F32.as_pointer(), F32 if lanes == 1 else ir.VectorType(F32, lanes)
    body = ir.Function(mcx.module, ir.FunctionType(ir.VoidType(), [ptr, ptr, I64]), "body")
    b = ir.IRBuilder(body.append_basic_block("entry"))
    loop, done = body.append_basic_block("loop"), body.append_basic_block("done")
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), body.blocks[0])
    xv = b.load(b.bitcast(b.gep(body.args[0], [i]), vt.as_pointer()), align=4)
    y = vmath.exp_f32(SimpleNamespace(b=b, mcx=mcx), xv)
    b.store(y, b.bitcast(b.gep(body.args[1], [i]), vt.as_pointer()), align=4)
    nxt = b.add(i, ir.Constant(I64, lanes))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_unsigned("<", nxt, body.args[2]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    run = ir.Function(mcx.module, ir.FunctionType(ir.VoidType(), [ptr, ptr, I64, I32]), "run")
    b = ir.IRBuilder(run.append_basic_block("entry"))
    st = mcx.intrinsic("llvm.x86.sse.stmxcsr", ir.VoidType(), [I32.as_pointer()])
    ld = mcx.intrinsic("llvm.x86.sse.ldmxcsr", ir.VoidType(), [I32.as_pointer()])
    old, new = b.alloca(I32), b.alloca(I32)
    b.call(st, [old])
    b.store(run.args[3], new)
    b.call(ld, [new])
    b.call(body, list(run.args[:3]))
    b.call(ld, [old])
    b.ret_void()
    return str(mcx.module)


# the two ways of scaling by 2^n on a path: (vmath's A/B switch, AVX-512 on, text only
# the first way's IR has, text only the second's has)
_WAYS = {"scalef": ("SCALEF", True, "llvm.x86.avx512.mask.scalef.ps.512", "llvm.ldexp"),
         "halves": ("HALVES_FROM_Z", False, str(127 << 23), str(vmath._SHIFT_BITS))}


@pytest.mark.parametrize("path,lanes", [("scalef", 64), ("scalef", 16), ("halves", 64),
                                        ("halves", 8), ("halves", 1)])
def test_ways_of_scaling_have_the_same_bits_in_every_fp_mode(path, lanes, monkeypatch):
    """The two ways of each path give the same bits on exp's edge inputs under every MXCSR
    rounding mode with FTZ/DAZ on and off (subnormal results and their rounding
    included): vmath._scalef (vscalefps on the float n; a wrong rounding argument, or a b
    that is not n's exact integer, would change some) against llvm.ldexp of the integer n
    (vcvtdq2ps + vscalefps); without AVX-512, the halves 2^h, 2^(n-h) from z's bits
    against those from the integer n. NaN results are x's NaN made quiet."""
    import ctypes
    import llvmlite.binding as llvm
    from hloc.backend import jit
    switch, avx512, first, second = _WAYS[path]
    if avx512 and "+avx512f" not in jit.host()[2].split(","):
        pytest.skip("host without AVX-512")
    x = _edge_inputs()
    outs = {}
    for way in (True, False):
        monkeypatch.setattr(vmath, switch, way)
        text = _exp_function(lanes, avx512)
        assert (first in text, second in text) == (way, not way)
        assert avx512 or ("scalef" not in text and "ldexp" not in text)   # no AVX-512, no vscalefps
        target, cpu, _, _ = jit.host()      # the code that runs: compiled for those features too
        tm = target.create_target_machine(cpu=cpu, features=_features(avx512), opt=2, jit=True)
        assert avx512 or "zmm" not in tm.emit_assembly(llvm.parse_assembly(text))
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(text), tm)
        engine.finalize_object()
        run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                               ctypes.c_uint32)(engine.get_function_address("run"))
        for rc in (0x0000, 0x2000, 0x4000, 0x6000):          # nearest, down, up, toward 0
            for ftz in (0, 0x8040):
                y = np.empty_like(x)
                run(x.ctypes.data, y.ctypes.data, x.size, 0x1F80 | rc | ftz)
                outs[way, rc, ftz] = y
        del engine
    for (way, rc, ftz), y in outs.items():
        if way:
            np.testing.assert_array_equal(y.view(np.uint32), outs[False, rc, ftz].view(np.uint32),
                                          err_msg=f"rc={rc:#x} ftz={ftz:#x}")
    y, y_ftz = outs[True, 0, 0], outs[True, 0, 0x8040]
    nan = np.isnan(x)
    assert (y.view(np.uint32)[nan] == x.view(np.uint32)[nan] | 0x400000).all()
    tiny = np.finfo(np.float32).tiny
    sub = (y > 0) & (y < tiny)
    assert sub.sum() > 1000 and (y_ftz[sub] == 0).all()              # gradual underflow, FTZ
    assert (y[(x < -104) & ~nan] == 0).all() and np.isposinf(y[x > 88.73]).all()
    assert y[x == 0].tolist() == [1.0] * int((x == 0).sum())
    # another rounding mode rounds subnormal results otherwise (the modes are in force)
    assert (outs[True, 0x2000, 0].view(np.uint32) != y.view(np.uint32))[sub].any()
