"""Kernel count: hloc's default pipeline against XLA:CPU, per program (issue 4).

    python benchmarks/kernel_count.py [PROGRAM ...] [--dumps DIR] [--verbose]

For each testdata/dumps/<prog>.before_optimizations.hlo, runs hloc's default pipeline
(hloc.passes.default_pipeline() with a PassContext(); the `fusion-wrapper` pass is
appended when the pipeline does not run it, which changes no count: a wrapped op is
one kernel either way) and counts kernels; counts the same in XLA's
<prog>.after_optimizations.hlo. Kernels = fusion instructions + every other instruction
that does work, in the entry computation and (recursively) in while bodies and
conditions, conditional branches and called computations. Not kernels: parameter,
constant, tuple, get-tuple-element, bitcast, after-all, add-dependency, opt-barrier,
domain, the control-flow instructions themselves (while, conditional, call), and a
reshape between row-major layouts (XLA:CPU's ReshapeDecomposer turns it into a bitcast;
hloc runs no layout assignment, so it keeps the reshape).
`copy` is a kernel on both sides; XLA's copies mostly come from copy insertion, which
hloc does not run, so the table shows them separately and a second summary line
compares the counts without copies on either side. Prints a table and the fraction of
programs where hloc <= XLA (goal: >= 80%), listing the others with the kernel kinds
that make the difference.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DUMPS = HERE.parent / "testdata" / "dumps"
sys.path.insert(0, str(HERE.parent))

NOT_KERNELS = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
    "add-dependency", "opt-barrier", "domain", "while", "conditional", "call",
    "partition-id", "replica-id"})
CONTROL_FLOW = ("while", "conditional", "call")

from hloc.passes.fusion.wrapper import reshape_is_bitcast  # noqa: E402


def kernels(module) -> collections.Counter:
    """Kernel kinds -> count: 'fusion' (kLoop/kOutput), 'custom fusion' (kCustom, XLA's
    dot library), 'copy', or the opcode of an unfused instruction."""
    out: collections.Counter = collections.Counter()
    stack, seen = [module.entry], set()
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        for inst in comp.instructions:
            op = inst.opcode
            if op in CONTROL_FLOW:
                stack.extend(inst.called_computations())
            if op == "fusion":
                out["custom fusion" if inst.attrs.get("kind") == "kCustom" else "fusion"] += 1
            elif op == "reshape" and reshape_is_bitcast(inst):
                continue      # XLA:CPU makes it a bitcast (ReshapeDecomposer)
            elif op not in NOT_KERNELS:
                out[op] += 1
    return out


def optimise(module) -> None:
    from hloc.passes import PassContext, default_pipeline, get_pass
    from hloc.passes.pipelines import pipeline_names
    pipeline = default_pipeline()
    ctx = PassContext()
    ctx.run_pass(pipeline, module)
    if "fusion-wrapper" not in pipeline_names(pipeline):
        ctx.run_pass(get_pass("fusion-wrapper"), module)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("programs", nargs="*")
    ap.add_argument("--dumps", default=str(DUMPS))
    ap.add_argument("--verbose", "-v", action="store_true",
                    help="show the kernel kinds of the programs where hloc > XLA")
    args = ap.parse_args()
    import hloc

    dumps = Path(args.dumps)
    progs = sorted(p.name.split(".")[0] for p in dumps.glob("*.before_optimizations.hlo"))
    if args.programs:
        progs = [p for p in progs if p in args.programs]
    rows, worse, no_copies = [], [], []
    print(f"{'program':30s} {'hloc':>5s} {'xla':>5s} {'xla copies':>10s} {'secs':>6s}")
    for prog in progs:
        after = dumps / f"{prog}.after_optimizations.hlo"
        if not after.exists():
            continue
        module = hloc.parse_file(dumps / f"{prog}.before_optimizations.hlo")
        t0 = time.perf_counter()
        optimise(module)
        secs = time.perf_counter() - t0
        ours, theirs = kernels(module), kernels(hloc.parse_file(after))
        n_ours, n_theirs = sum(ours.values()), sum(theirs.values())
        rows.append((prog, n_ours, n_theirs))
        no_copies.append((n_ours - ours["copy"], n_theirs - theirs["copy"]))
        mark = "" if n_ours <= n_theirs else "  <-- hloc more"
        print(f"{prog:30s} {n_ours:5d} {n_theirs:5d} {theirs['copy']:10d} {secs:6.2f}{mark}")
        if n_ours > n_theirs:
            worse.append((prog, ours, theirs))
    ok = sum(1 for _, a, b in rows if a <= b)
    total_ours, total_theirs = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"\nhloc <= XLA in {ok}/{len(rows)} programs ({100.0 * ok / max(1, len(rows)):.0f}%, "
          f"goal >= 80%); kernels in all: hloc {total_ours}, XLA {total_theirs}")
    ok2 = sum(1 for a, b in no_copies if a <= b)
    print(f"not counting copies on either side: hloc <= XLA in {ok2}/{len(rows)} programs "
          f"({100.0 * ok2 / max(1, len(rows)):.0f}%); kernels: hloc "
          f"{sum(a for a, _ in no_copies)}, XLA {sum(b for _, b in no_copies)}")
    for prog, ours, theirs in worse:
        diff = {k: ours[k] - theirs[k] for k in set(ours) | set(theirs)
                if ours[k] != theirs[k]}
        print(f"  {prog}: hloc {sum(ours.values())} vs XLA {sum(theirs.values())}; "
              f"hloc - XLA by kind: {dict(sorted(diff.items()))}")
        if args.verbose:
            print(f"    hloc: {dict(sorted(ours.items()))}\n    xla:  {dict(sorted(theirs.items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
