"""How long `hloc compile MODULE -o OUT` takes, per case: the command's wall time, and the
library's own (hloc.aot.compile_library in a process of its own: HLO passes excluded, the
link included) as wall and process-CPU time (every thread's; a .so's link by `cc` runs in a
child process, outside it).

    python benchmarks/aot_compile_time.py [CASE ...] [--tree TREE] [--repeat N] [--out .so|.a|.o]

Cases: benchmarks/run.py's (the one-kernel texts and the training-step / scan files),
written to a temporary directory; every compile runs in a fresh process with
PYTHONPATH=TREE (default: this tree) from that directory, so `--tree` measures another
tree (e.g. `git archive` of a base commit) for before/after tables; uncached (a fresh
XDG_CACHE_HOME, cache_dir=None); best of --repeat, in ms. Not a test: timings on a
shared machine vary.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

_LIB = """
import json, os, sys, time, tempfile
import hloc, hloc.backend
from hloc.aot import compile_library
from hloc.cli_backend import prepare_for_cpu
module = prepare_for_cpu(hloc.parse(open(sys.argv[1]).read()), None)
with tempfile.TemporaryDirectory() as tmp:
    t, c = time.perf_counter(), time.process_time()
    compile_library(module, os.path.join(tmp, "lib" + sys.argv[2]))
    print(json.dumps([(time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3,
                      os.path.dirname(hloc.__file__)]))
"""


def _run(cmd, tree: str, cwd: str):
    with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as cache:
        env = dict(os.environ, PYTHONPATH=tree, XDG_CACHE_HOME=cache)
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
        ms = (time.perf_counter() - t) * 1e3
    if r.returncode:
        print(f"  (failed, left out: {r.stderr.strip()[-300:]})", flush=True)
        return None
    return ms, r.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help="substrings of case names (default: all)")
    ap.add_argument("--tree", default=str(HERE.parent), help="the hloc tree to measure")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=".so", choices=[".so", ".a", ".o"])
    args = ap.parse_args(argv)
    from run import CASES, FILE_CASES, _file_case
    cases = {name: text for name, (text, _, _) in CASES.items()}
    cases.update({name: _file_case(stem)[0] for name, stem in FILE_CASES.items()})
    tree = str(Path(args.tree).resolve())
    print(f"tree {tree}")
    print(f"{'case':<30} {'hloc compile ms':>16} {'compile_library ms':>19} {'CPU ms':>7}")
    with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as tmp:
        for name, text in cases.items():
            if args.cases and not any(c in name for c in args.cases):
                continue
            path = os.path.join(tmp, "m.hlo")
            Path(path).write_text(text)
            cli, lib, cpu = [], [], []
            for _ in range(args.repeat):
                got = _run([sys.executable, "-m", "hloc", "--quiet", "compile", path, "-o",
                            os.path.join(tmp, "lib" + args.out)], tree, tmp)
                if got is not None:
                    cli.append(got[0])
                got = _run([sys.executable, "-c", _LIB, path, args.out], tree, tmp)
                if got is not None:
                    wall, c, where = json.loads(got[1])
                    if not where.startswith(tree):
                        raise SystemExit(f"measured {where}, not {tree}")
                    lib.append(wall)
                    cpu.append(c)
            best = [min(x) if x else float("nan") for x in (cli, lib, cpu)]
            print(f"{name:<30} {best[0]:16.0f} {best[1]:19.0f} {best[2]:7.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
