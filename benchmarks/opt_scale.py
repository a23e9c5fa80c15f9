"""How `hloc opt` scales with the module: time, peak memory, growth exponent, top passes.

    python benchmarks/opt_scale.py [FILE.hlo[.gz] ...] [--family tiny|wide] [--layers 8 24 ..]
                                   [--no-verify-each] [--top 5] [--repeat N]

Default inputs: the scaling family benchmarks/data/scale/transformer_L{8,24,48,96}
.before_optimizations.hlo.gz (one JAX transformer training step at four layer counts; the
8- and 24-layer dumps are checked in, the 48- and 96-layer ones are not (0.3 and 0.6 MB):
write them with `/work/venv-jax/bin/python tools/gen_dumps.py --transformer-layers
benchmarks/data/scale` (a few seconds each; missing ones are skipped with a note) and the
28k-line benchmarks/data/transformer24.before_optimizations.hlo.gz (a different program).
`--family wide`: the same training step with realistic tensor sizes,
transformer_w256s64b2_L{8,24,48,96} (d_model 256, seq 64, batch 2: 32k-element activations,
above XLA:CPU's 4,096-element YNNPACK threshold, as in transformer24; the tiny family's
2,048-element tensors are under it, so XLA itself re-fuses long chains there and its output
grows super-linearly). L8 and L24 are checked in; `tools/gen_dumps.py --transformer-layers
benchmarks/data/scale --width 256 --seq 64 --batch 2 --layers 48 96` writes the others, and
`--after` also XLA:CPU's optimised text, whose line count is then printed in the `xla` column.

Per file, one subprocess does what `hloc opt` does (parse, verify, the default pipeline with
verification after every changing pass unless --no-verify-each) and reports CPU seconds of
each step (opt's without the benchmark's own per-pass instruction counting) and of each pass, the printed output's line count and its peak RSS; another runs
`hloc check` for its peak RSS. Printed: input and output lines, parse+verify and opt CPU
seconds, opt/(parse+verify), peak RSS of opt and of check and their ratio; then the growth
exponents of the opt time between family members, log(t2/t1)/log(n2/n1) with n the input
lines, next to that of the output size (opt's work follows its output: the fusions it
builds); then the five most expensive passes of each file (CPU seconds / runs), the time
spent verifying after changing passes and in the driver; then every pass's CPU
microseconds per instruction processed, per file (a pass whose figure grows along the
family is super-linear in the module it works on, independent of the output's size).
Goals (issue 13): exponent <= 1.15 (8->24, 24->96 layers), opt <= 10x parse+verify,
peak RSS <= 3x check. CPU seconds make other load on the machine matter less, not zero;
`--repeat N` runs each file N times and takes the least of each CPU figure.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCALE_DIR = HERE / "data" / "scale"
FAMILIES = {"tiny": "transformer_L{n}", "wide": "transformer_w256s64b2_L{n}"}


def family(kind: str, layers=(8, 24, 48, 96)) -> list[Path]:
    return [SCALE_DIR / (FAMILIES[kind].format(n=n) + ".before_optimizations.hlo.gz")
            for n in layers]


def xla_lines(path: Path) -> int | None:
    """Line count of XLA:CPU's optimised text beside a before-optimizations dump, if there."""
    after = path.with_name(path.name.replace(".before_optimizations.", ".after_optimizations."))
    return read(after).count("\n") if after != path and after.exists() else None
OTHER = HERE / "data" / "transformer24.before_optimizations.hlo.gz"


def read(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode()


def worker(path: str, verify_each: bool) -> None:
    """Parse, verify, optimise one file in this process; print one JSON line."""
    sys.path.insert(0, str(REPO))
    import hloc
    from hloc.passes.driver import optimize
    from hloc.passes.pipelines import default_pipeline
    from hloc.printer import module_to_text
    from hloc.verifier import verify

    text = read(Path(path))
    c = time.process_time()
    module = hloc.parse(text, path)
    parse = time.process_time() - c
    c = time.process_time()
    verify(module)
    ver = time.process_time() - c
    c = time.process_time()
    result = optimize(module, default_pipeline(), verify_each=verify_each,
                      count_instructions=True)
    # Counting instructions per pass (count_instructions) is the benchmark's, not opt's.
    opt = time.process_time() - c - result.count_cpu_seconds
    out = module_to_text(module)
    passes = sorted(((t.name, t.cpu_seconds, t.runs, t.instructions)
                     for t in result.timings.values()), key=lambda r: -r[1])
    print(json.dumps(dict(lines=text.count("\n"), out_lines=out.count("\n"), parse=parse,
                          verify=ver, opt=opt, passes=passes,
                          verify_each=result.verify_cpu_seconds,
                          rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))


def check_rss(text: str) -> float:
    with tempfile.TemporaryDirectory(prefix="opt_scale_") as tmp:
        src = Path(tmp) / "in.hlo"
        src.write_text(text)
        p = subprocess.Popen([sys.executable, "-m", "hloc", "check", str(src)], cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"hloc check {src}: failed")
        return ru.ru_maxrss / 1024


def measure(path: Path, verify_each: bool, repeat: int = 1) -> dict:
    """One worker run per repeat; CPU seconds (parse, verify, opt, each pass, verifying
    after passes) are each the least over the runs."""
    cmd = [sys.executable, __file__, "--worker", str(path)]
    if not verify_each:
        cmd.append("--no-verify-each")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    runs = []
    for _ in range(repeat):
        p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{path}: {p.stderr.strip()}")
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    r = runs[0]
    for key in ("parse", "verify", "opt", "verify_each"):
        r[key] = min(x[key] for x in runs)
    best = {}
    for x in runs:
        for name, sec, n, size in x["passes"]:
            if name not in best or sec < best[name][1]:
                best[name] = [name, sec, n, size]
    r["passes"] = sorted(best.values(), key=lambda q: -q[1])
    r["name"] = path.name.split(".")[0]
    r["check_rss"] = check_rss(read(path))
    return r


def exponent(a: dict, b: dict, key: str) -> float:
    return math.log(b[key] / a[key]) / math.log(b["lines"] / a["lines"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--no-verify-each", action="store_true",
                    help="no verification after each changing pass (hloc opt --no-verify-each)")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="tiny",
                    help="which layer-count family (default: tiny)")
    ap.add_argument("--layers", type=int, nargs="+", default=[8, 24, 48, 96])
    ap.add_argument("--no-other", action="store_true", help="leave out transformer24")
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each file N times; CPU seconds are the least (loaded machines)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, not args.no_verify_each)
        return 0
    fam_files = family(args.family, args.layers)
    other = [] if args.no_other else [OTHER]
    files = args.files or [f for f in fam_files + other if f.exists()]
    if not args.files:
        dims = " --width 256 --seq 64 --batch 2" if args.family == "wide" else ""
        for f in fam_files:
            if not f.exists():
                print(f"(missing {f.relative_to(REPO)}: `tools/gen_dumps.py "
                      f"--transformer-layers benchmarks/data/scale{dims}` writes it)")
    results = []
    print(f"{'dump':<28} {'lines':>6} {'out':>7} {'xla':>7} {'p+v s':>6} {'opt s':>7} "
          f"{'opt/pv':>6} {'opt MB':>7} {'chk MB':>6} {'mem x':>5}")
    for f in files:
        r = measure(f, not args.no_verify_each, args.repeat)
        results.append(r)
        pv = r["parse"] + r["verify"]
        xla = xla_lines(f)
        print(f"{r['name']:<28} {r['lines']:>6} {r['out_lines']:>7} {xla or '-':>7} "
              f"{pv:>6.2f} {r['opt']:>7.2f} "
              f"{r['opt'] / pv:>6.1f} {r['rss']:>7.0f} {r['check_rss']:>6.0f} "
              f"{r['rss'] / r['check_rss']:>5.2f}", flush=True)
    fam = [r for r in results if r["name"].startswith("transformer_") and "_L" in r["name"]]
    pairs = list(zip(fam, fam[1:]))
    if len(fam) > 3:   # 24 -> 96 layers, the second pair
        pairs.append((fam[1], fam[-1]))
    for a, b in pairs:
        print(f"growth {a['name']} -> {b['name']}: opt time exponent {exponent(a, b, 'opt'):.2f}, "
              f"output size exponent {exponent(a, b, 'out_lines'):.2f}")
    for r in results:
        top = ", ".join(f"{n} {s:.2f}/{k}" for n, s, k, _ in r["passes"][:args.top])
        rest = r["opt"] - sum(p[1] for p in r["passes"]) - r["verify_each"]
        print(f"top passes {r['name']}: {top}; verify after passes {r['verify_each']:.2f}, "
              f"driver {rest:.2f}")
    per_instruction(results)
    return 0


def per_instruction(results: list) -> None:
    """Each pass's CPU microseconds per instruction it processed (the larger of the
    module's size before and after it, summed over its runs): a column that grows from
    one family member to the next marks a pass that is super-linear in the module it
    works on, whatever the output's size."""
    names = []
    for r in results:
        for p in r["passes"]:
            if p[0] not in names and p[1] >= 0.01:
                names.append(p[0])
    print("\nCPU us per instruction processed (pass s / sum over runs of module size):")
    print(f"{'pass':<28}" + "".join(f" {r['name'][:14]:>14}" for r in results))
    for name in names:
        row = f"{name:<28}"
        for r in results:
            p = next((p for p in r["passes"] if p[0] == name), None)
            row += f" {1e6 * p[1] / p[3]:>14.2f}" if p and p[3] else f" {'-':>14}"
        print(row)


if __name__ == "__main__":
    sys.exit(main())
