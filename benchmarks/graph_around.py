"""`hloc graph --around` on a 10,000-instruction module: prints the seconds it takes.

The module is made here (a stack of 1,000 ten-instruction layers, each a dot, a while
loop every 100 layers, elementwise ops with cross-layer operands) and written to a
temporary file; the command is timed end to end in a fresh process (parse included) and
the drawing alone in-process. Usage: python benchmarks/graph_around.py [--layers N]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_module(layers: int) -> str:
    out = ["HloModule big_graph", "",
           "%body (s: (s32[], f32[16,16])) -> (s32[], f32[16,16]) {",
           "  %s = (s32[], f32[16,16]{1,0}) parameter(0)",
           "  %i = s32[] get-tuple-element(%s), index=0",
           "  %one = s32[] constant(1)",
           "  %i.next = s32[] add(%i, %one)",
           "  %x = f32[16,16]{1,0} get-tuple-element(%s), index=1",
           "  %y = f32[16,16]{1,0} tanh(%x)",
           "  ROOT %t = (s32[], f32[16,16]{1,0}) tuple(%i.next, %y)", "}", "",
           "%cond (c: (s32[], f32[16,16])) -> pred[] {",
           "  %c = (s32[], f32[16,16]{1,0}) parameter(0)",
           "  %ci = s32[] get-tuple-element(%c), index=0",
           "  %n = s32[] constant(4)",
           "  ROOT %lt = pred[] compare(%ci, %n), direction=LT", "}", "",
           "ENTRY %main (p0: f32[16,16], w: f32[16,16]) -> f32[16,16] {",
           "  %p0 = f32[16,16]{1,0} parameter(0)",
           "  %w = f32[16,16]{1,0} parameter(1)",
           "  %zero = s32[] constant(0)"]
    prev, prev2 = "p0", "p0"
    for k in range(layers):
        a = f"l{k}"
        out += [
            f"  %{a}.dot = f32[16,16]{{1,0}} dot(%{prev}, %w), lhs_contracting_dims={{1}}, "
            f"rhs_contracting_dims={{0}}, metadata={{op_name=\"layer{k}/dot\" "
            f"source_file=\"model.py\" source_line={k + 1}}}",
            f"  %{a}.add = f32[16,16]{{1,0}} add(%{a}.dot, %{prev2})",
            f"  %{a}.neg = f32[16,16]{{1,0}} negate(%{a}.add)",
            f"  %{a}.exp = f32[16,16]{{1,0}} exponential(%{a}.neg)",
            f"  %{a}.mul = f32[16,16]{{1,0}} multiply(%{a}.exp, %{a}.add)",
            f"  %{a}.sub = f32[16,16]{{1,0}} subtract(%{a}.mul, %{prev})",
            f"  %{a}.max = f32[16,16]{{1,0}} maximum(%{a}.sub, %{a}.dot)",
            f"  %{a}.tr = f32[16,16]{{1,0}} transpose(%{a}.max), dimensions={{1,0}}",
        ]
        if k % 100 == 99:
            out += [f"  %{a}.init = (s32[], f32[16,16]{{1,0}}) tuple(%zero, %{a}.tr)",
                    f"  %{a}.loop = (s32[], f32[16,16]{{1,0}}) while(%{a}.init), "
                    f"condition=%cond, body=%body",
                    f"  %{a}.out = f32[16,16]{{1,0}} get-tuple-element(%{a}.loop), index=1"]
            last = f"{a}.out"
        else:
            out += [f"  %{a}.abs = f32[16,16]{{1,0}} abs(%{a}.tr)",
                    f"  %{a}.out = f32[16,16]{{1,0}} sqrt(%{a}.abs)"]
            last = f"{a}.out"
        prev2, prev = prev, last
    out[-1] = out[-1].replace(f"  %{prev} =", f"  ROOT %{prev} =")
    out.append("}")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=1000)
    ap.add_argument("--radius", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, ROOT)
    import hloc
    from hloc.graph import views, to_dot

    text = make_module(args.layers)
    center = f"l{args.layers // 2 - 1}.loop" if args.layers >= 100 else "l0.add"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.hlo")
        with open(path, "w") as f:
            f.write(text)
        m = hloc.parse(text)
        n = sum(len(c.instructions) for c in m.computations)
        t = time.perf_counter()
        view = views(m, around=center, radius=args.radius)[0]
        to_dot(view)
        drawn = time.perf_counter() - t
        env = dict(os.environ, PYTHONPATH=ROOT)
        cmd = [sys.executable, "-m", "hloc", "graph", path, "--around", center,
               "--radius", str(args.radius), "-o", os.path.join(tmp, "out.dot")]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, env=env)
        total = time.perf_counter() - t
    print(f"module: {n} instructions; --around {center} --radius {args.radius}: "
          f"{len(view.nodes)} nodes drawn")
    print(f"drawing (selection + model + DOT, in-process): {drawn:.3f} s")
    print(f"`hloc graph --around` end to end (new process, parse included): {total:.3f} s")


if __name__ == "__main__":
    main()
