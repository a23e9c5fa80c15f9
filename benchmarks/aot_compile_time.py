"""How long `hloc compile MODULE -o OUT` takes, per case: the command's wall time, and the
library's own (hloc.aot.compile_library in-process: HLO passes excluded, the link included).

    PYTHONPATH=TREE python benchmarks/aot_compile_time.py [CASE ...] [--repeat N] [--out .so|.a|.o]

Cases: benchmarks/run.py's (the one-kernel texts and the training-step / scan files);
compile_library's wall and process CPU time (every thread's; a .so's link by `cc` runs in
a child process, outside it). Every
compile is uncached (a fresh XDG_CACHE_HOME for the command, cache_dir=None in-process);
best of --repeat, in ms. The script drives only `python -m hloc compile` and
hloc.aot.compile_library, so it runs on an older tree too (`git archive` of a base commit,
PYTHONPATH=that tree) for before/after tables. Not a test: timings on a shared machine vary.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import CASES, FILE_CASES, _file_case  # noqa: E402


def _cases() -> dict[str, str]:
    out = {name: text for name, (text, _, _) in CASES.items()}
    out.update({name: _file_case(stem)[0] for name, stem in FILE_CASES.items()})
    return out


def _cli_ms(path: str, out: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as tmp:
            env = dict(os.environ, XDG_CACHE_HOME=tmp)
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "hloc", "--quiet", "compile", path, "-o",
                                os.path.join(tmp, "lib" + out)], capture_output=True, text=True,
                               env=env)
            ms = (time.perf_counter() - t) * 1e3
            if r.returncode:
                print(f"  (failed, left out: {r.stderr.strip()})", flush=True)
                continue
            best = min(best, ms)
    return best


def _lib_ms(text: str, out: str, repeat: int) -> tuple[float, float]:
    """(wall, process CPU) ms of compile_library, best of `repeat` each."""
    import hloc
    from hloc.aot import compile_library
    from hloc.cli_backend import prepare_for_cpu
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        module = prepare_for_cpu(hloc.parse(text), None)
        with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as tmp:
            t, c = time.perf_counter(), time.process_time()
            compile_library(module, os.path.join(tmp, "lib" + out))
            best = min(best, (time.perf_counter() - t) * 1e3)
            cpu = min(cpu, (time.process_time() - c) * 1e3)
    return best, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", help="substrings of case names (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=".so", choices=[".so", ".a", ".o"])
    args = ap.parse_args(argv)
    import hloc.backend  # noqa: F401  (registers the emitters, as the command does)
    print(f"{'case':<30} {'hloc compile ms':>16} {'compile_library ms':>19} {'CPU ms':>7}")
    with tempfile.TemporaryDirectory(prefix="hloc-aot-bench-") as tmp:
        for name, text in _cases().items():
            if args.cases and not any(c in name for c in args.cases):
                continue
            path = os.path.join(tmp, "m.hlo")
            Path(path).write_text(text)
            cli = _cli_ms(path, args.out, args.repeat)
            lib, cpu = _lib_ms(text, args.out, args.repeat)
            print(f"{name:<30} {cli:16.0f} {lib:19.0f} {cpu:7.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
