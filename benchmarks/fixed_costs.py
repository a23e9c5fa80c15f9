"""What a compile pays whatever its kernels: LLVM's floor and hloc's own set-up.

    PYTHONPATH=TREE python TREE/benchmarks/fixed_costs.py [--repeat N]

Prints ms, best of --repeat (steady state, one thread):
- LLVM's floor, through hloc's own calls (compile_threads.compile_one at O3 with the
  thread's kept target machine): parse + verify + optimise + emit of an empty module, and
  what each further function adds even when it is one store (the slope from 1 to 9 such
  functions); a module's parts and functions each pay these on top of their code;
- making a target machine (the host's CPU and features, as compiles use; generic);
- loading one small object into an engine of its own (jit.load);
- a one-instruction HLO module through compile_module, by phase (Executable.compile_times)
  and in all: what the smallest module costs end to end;
- once per process: LALR tables of the HLO grammar (hloc.syntax.parser's Lark), the
  digest of hloc's sources that keys the object cache (jit.sources_digest).
Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hloc  # noqa: E402
from hloc.backend import compile_module, compile_threads, jit  # noqa: E402
from hloc.backend.context import Options  # noqa: E402
from timing import best  # noqa: E402  (benchmarks/timing.py)

SCALAR = ("HloModule one\nENTRY e {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
          "  ROOT r = f32[] add(a, b)\n}\n")


def _functions(n: int) -> str:
    _, _, _, triple = jit.host()
    fns = [f'define void @f{k}(ptr %p) {{\n  store i32 {k}, ptr %p\n  ret void\n}}'
           for k in range(n)]
    return "\n".join([f'target triple = "{triple}"'] + fns) + "\n"


def _llvm(text: str, repeat: int) -> float:
    def one():
        with compile_threads.OPTIONS_LOCK:
            return compile_threads.compile_one(text, jit.compile_machine, 3, False)
    return best(one, repeat, warmup=True)[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    opts = ap.parse_args(argv)
    r = opts.repeat
    target, cpu, feats, _ = jit.host()
    rows = []
    empty = _llvm(_functions(0), r)
    one, nine = _llvm(_functions(1), r), _llvm(_functions(9), r)
    rows += [("LLVM: empty module (parse, verify, optimise, emit)", empty),
             ("LLVM: each further function of one store", (nine - one) / 8)]
    rows += [("target machine: host CPU and features",
              best(lambda: target.create_target_machine(cpu=cpu, features=feats, opt=3,
                                                        jit=True), r)[0]),
             ("target machine: generic", best(lambda: target.create_target_machine(jit=True),
                                              r)[0])]
    entry = _functions(0) + f"define void @{jit.ENTRY}(ptr %p, ptr %o, ptr %t) {{\n  ret void\n}}\n"
    with compile_threads.OPTIONS_LOCK:
        obj = compile_threads.compile_one(entry, jit.compile_machine, 3, False)
    rows.append(("load: one small object (jit.load)", best(lambda: jit.load([obj], Options()),
                                                           r, warmup=True)[0]))
    phases, total = {}, float("inf")
    compile_module(hloc.parse(SCALAR))
    for _ in range(r):
        m = hloc.parse(SCALAR)
        t0 = time.perf_counter()
        exe = compile_module(m)
        t = time.perf_counter() - t0
        if t < total:
            total, phases = t, exe.compile_times
    for k in ("ir_gen", "llvm", "load"):
        rows.append((f"one-instruction module: {k}", phases[k]))
    rows.append(("one-instruction module: the rest (key, set-up)",
                 total - sum(phases[k] for k in ("ir_gen", "llvm", "load"))))
    rows.append(("one-instruction module: compile_module in all", total))
    from hloc.syntax import parser

    def grammar():
        parser._lark.cache_clear()
        return parser._lark("start")

    def digest():
        jit._sources_digest = None
        return jit.sources_digest()
    rows += [("per process: HLO grammar tables (Lark)", best(grammar, max(3, r // 4))[0]),
             ("per process: sources digest (cache key)", best(digest, max(3, r // 4))[0])]
    print(f"ms, best of {r}")
    print("| what | ms |\n|---|---|")
    for name, s in rows:
        print(f"| {name} | {s * 1e3:.2f} |")


if __name__ == "__main__":
    main()
