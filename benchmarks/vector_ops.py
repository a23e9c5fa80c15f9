"""Throughput of 512-bit vector ops on this host, alone and in pairs: which ops share
execution ports (on AMD Zen 4, vfmadd/vmulps use one pair of pipes, vaddps, vmaxps,
vcvtdq2ps and vscalefps the other, vscalefps at half rate; vpaddd any).

    python benchmarks/vector_ops.py [KIND[+KIND...] ...]

Each case is a loop of 8 independent chains of the given ops (llvm IR compiled for the
host with llvmlite), timed best of 5 over 2M iterations after a second of warm-up; printed per op, and relative to
one vfmadd231ps (1.00: one op per cycle where an FMA issues once a cycle; 0.50: two per
cycle, i.e. the ops of the pair run on different ports). Needs AVX-512. Not a test.
"""
from __future__ import annotations

import ctypes
import sys
import time

import llvmlite.binding as llvm

V = "<16 x float>"
_OPS = {   # kind -> IR lines computing %out from %a (float vectors; c1, c3 constants)
    "fma": ["%out = call {V} @llvm.fma.v16f32({V} %a, {V} %c1, {V} %c1)"],
    "add": ["%out = fadd {V} %a, %c1"],
    "mul": ["%out = fmul {V} %a, %c1"],
    "max": ["%out = call {V} @llvm.x86.avx512.max.ps.512({V} %a, {V} %c1, i32 4)"],
    "scalef": ["%out = call {V} @llvm.x86.avx512.mask.scalef.ps.512({V} %a, {V} %c3, {V} zeroinitializer, "
               "i16 -1, i32 4)"],
    "cvt": ["%i = bitcast {V} %a to <16 x i32>", "%out = sitofp <16 x i32> %i to {V}"],
    "padd": ["%i = bitcast {V} %a to <16 x i32>", "%j = add <16 x i32> %i, splat (i32 1)",
             "%out = bitcast <16 x i32> %j to {V}"],
    "pshl": ["%i = bitcast {V} %a to <16 x i32>", "%j = shl <16 x i32> %i, splat (i32 1)",
             "%out = bitcast <16 x i32> %j to {V}"],
}
DEFAULT = ["fma", "add", "max", "scalef", "cvt", "padd", "fma+add", "fma+max", "fma+cvt", "fma+scalef",
           "add+scalef", "fma+padd", "add+padd", "fma+add+padd", "fma+fma+add+scalef"]
CHAINS = 8


def _ir(kinds: list[str]) -> str:
    body, cur = [], [f"%a{j}" for j in range(CHAINS)]
    for n, kind in enumerate(kinds):
        for j in range(CHAINS):
            tag = f"k{n}c{j}"
            for line in _OPS[kind]:
                line = line.format(V=V).replace("%a,", f"{cur[j]},").replace("%a ", f"{cur[j]} ")
                body.append("  " + line.replace("%out", f"%{tag}").replace("%i", f"%{tag}.i")
                            .replace("%j", f"%{tag}.j"))
            cur[j] = f"%{tag}"
    phis = [f"  %a{j} = phi {V} [ %c0, %entry ], [ {cur[j]}, %loop ]" for j in range(CHAINS)]
    out = [f"  %s{j} = extractelement {V} {cur[j]}, i32 0" for j in range(CHAINS)]
    out += ["  %f0 = fadd float 0.0, %s0"] + [f"  %f{j} = fadd float %f{j - 1}, %s{j}" for j in range(1, CHAINS)]
    return "\n".join([
        f"declare {V} @llvm.fma.v16f32({V}, {V}, {V})",
        f"declare {V} @llvm.x86.avx512.max.ps.512({V}, {V}, i32)",
        f"declare {V} @llvm.x86.avx512.mask.scalef.ps.512({V}, {V}, {V}, i16, i32)",
        "define float @f(i64 %n, float %x) {", "entry:",
        f"  %ins = insertelement {V} poison, float %x, i32 0",
        f"  %c0 = shufflevector {V} %ins, {V} poison, <16 x i32> zeroinitializer",
        f"  %c1 = fmul {V} %c0, splat (float 0x3E7AD7F2A0000000)",
        f"  %c3 = fmul {V} %c0, splat (float 0.0)",
        "  br label %loop", "loop:", "  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]", *phis, *body,
        "  %i1 = add i64 %i, 1", "  %d = icmp ult i64 %i1, %n", "  br i1 %d, label %loop, label %exit",
        "exit:", *out, f"  ret float %f{CHAINS - 1}", "}"])


def main(argv=None):
    cases = (sys.argv[1:] if argv is None else argv) or DEFAULT
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    feats = llvm.get_host_cpu_features().flatten()
    if "+avx512f" not in feats.split(","):
        sys.exit("needs AVX-512")
    engines = []

    def ns_per_op(kinds, n=2_000_000):
        tm = llvm.Target.from_default_triple().create_target_machine(    # the engine owns it
            cpu=llvm.get_host_cpu_name(), features=feats, opt=2)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(_ir(kinds)), tm)
        engine.finalize_object()
        engines.append(engine)
        f = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_int64, ctypes.c_float)(engine.get_function_address("f"))
        best = min(_timed(f, n) for _ in range(5))
        return best / n / (len(kinds) * CHAINS) * 1e9
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:       # the core at its clock before anything counts
        fma = ns_per_op(["fma"])
    print(f"{CHAINS} chains; ns per op; relative: per op, to one vfmadd231ps ({fma:.4f} ns)")
    print("| ops | ns/op | relative |")
    print("|---|---|---|")
    for case in cases:
        t = ns_per_op(case.split("+"))
        print(f"| {case} | {t:.4f} | {t / fma:.2f} |", flush=True)


def _timed(f, n):
    t0 = time.perf_counter()
    f(n, 1.0)
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
