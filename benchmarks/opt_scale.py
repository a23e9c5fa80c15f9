"""How `hloc opt` scales with the module: time, peak memory, growth exponent, top passes.

    python benchmarks/opt_scale.py [FILE.hlo[.gz] ...] [--no-verify-each] [--top 5]

Default inputs: the scaling family benchmarks/data/scale/transformer_L{8,24,48,96}
.before_optimizations.hlo.gz (one JAX transformer training step at four layer counts;
regenerate with `/work/venv-jax/bin/python tools/gen_dumps.py --transformer-layers
benchmarks/data/scale`; missing ones are skipped with a note) and the 28k-line
benchmarks/data/transformer24.before_optimizations.hlo.gz (a different program).

Per file, `hloc check` and `hloc opt -v` run as subprocesses; their CPU seconds and peak RSS
come from wait4. Printed: lines, check and opt CPU seconds, opt/check (opt's own passes over
parse+verify, both in the same process kind), peak RSS of each and their ratio, and then the
growth exponent of the pass time between consecutive family members
(log(t2/t1)/log(n2/n1), n = lines) and the five most expensive passes of each file.
Goals (issue 13): exponent <= 1.15 (8->24, 24->96 layers), opt <= 10x check, RSS <= 3x check.
Timings are CPU seconds: other load on the machine matters less, but not zero.
"""
from __future__ import annotations

import argparse
import gzip
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCALE_DIR = HERE / "data" / "scale"
FAMILY = [SCALE_DIR / f"transformer_L{n}.before_optimizations.hlo.gz" for n in (8, 24, 48, 96)]
OTHER = HERE / "data" / "transformer24.before_optimizations.hlo.gz"
ROW = re.compile(r"^(\S+)\s+([\d.]+)\s+(\d+)\s+(\d+)$")


def run(cmd: list[str]) -> tuple[float, float, float, str]:
    """(cpu seconds, wall seconds, peak RSS MB, stderr) of one subprocess."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{err}")
    return ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss / 1024, err


def passes_from(err: str) -> tuple[float, list[tuple[str, float, int]]]:
    rows, total = [], 0.0
    for line in err.splitlines():
        m = ROW.match(line)
        if m:
            rows.append((m.group(1), float(m.group(2)), int(m.group(3))))
        elif line.startswith("total"):
            total = float(line.split()[1])
    return total, sorted(rows, key=lambda r: -r[1])


def measure(path: Path, extra: list[str]) -> dict:
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    with tempfile.TemporaryDirectory(prefix="opt_scale_") as tmp:
        src = Path(tmp) / "in.hlo"
        src.write_text(text)
        py = [sys.executable, "-m", "hloc"]
        c_cpu, _, c_rss, _ = run(py + ["check", str(src)])
        o_cpu, o_wall, o_rss, err = run(py + ["opt", "-v", "-o", os.devnull, *extra, str(src)])
    total, rows = passes_from(err)
    return dict(name=path.name.split(".")[0], lines=text.count("\n"), check=c_cpu,
                opt=o_cpu, opt_wall=o_wall, passes=total, check_rss=c_rss, opt_rss=o_rss,
                top=rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--no-verify-each", action="store_true",
                    help="pass --no-verify-each to hloc opt")
    ap.add_argument("--top", type=int, default=5)
    args = ap.parse_args()
    files = args.files or [f for f in FAMILY + [OTHER] if f.exists()]
    missing = [f for f in FAMILY if f not in files] if not args.files else []
    for f in missing:
        print(f"(missing {f.relative_to(REPO)}: tools/gen_dumps.py --transformer-layers "
              f"benchmarks/data/scale writes it)")
    extra = ["--no-verify-each"] if args.no_verify_each else []
    results = []
    print(f"{'dump':<18} {'lines':>7} {'check s':>8} {'opt s':>8} {'passes s':>8} "
          f"{'opt/chk':>7} {'chk MB':>7} {'opt MB':>7} {'mem x':>5}")
    for f in files:
        r = measure(f, extra)
        results.append(r)
        print(f"{r['name']:<18} {r['lines']:>7} {r['check']:>8.2f} {r['opt']:>8.2f} "
              f"{r['passes']:>8.2f} {r['opt'] / r['check']:>7.1f} {r['check_rss']:>7.0f} "
              f"{r['opt_rss']:>7.0f} {r['opt_rss'] / r['check_rss']:>5.2f}", flush=True)
    fam = [r for r in results if r["name"].startswith("transformer_L")]
    for a, b in zip(fam, fam[1:]):
        print(f"growth {a['name']} -> {b['name']}: exponent "
              f"{math.log(b['opt'] / a['opt']) / math.log(b['lines'] / a['lines']):.2f} "
              f"(opt process), {math.log(b['passes'] / a['passes']) / math.log(b['lines'] / a['lines']):.2f} (passes)")
    if len(fam) > 2:
        a, b = fam[1], fam[-1]
        print(f"growth {a['name']} -> {b['name']}: exponent "
              f"{math.log(b['opt'] / a['opt']) / math.log(b['lines'] / a['lines']):.2f} "
              f"(opt process), {math.log(b['passes'] / a['passes']) / math.log(b['lines'] / a['lines']):.2f} (passes)")
    for r in results:
        top = ", ".join(f"{n} {s:.2f}s/{k}" for n, s, k in r["top"][:args.top])
        print(f"top passes {r['name']}: {top}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
