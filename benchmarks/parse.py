"""Parse-speed benchmark: `hloc check` vs a plain `re.findall` tokenizer (CPU seconds).

    python benchmarks/parse.py [FILE.hlo|FILE.hlo.gz] [--repeat N]

Default input: benchmarks/data/transformer24.after_optimizations.hlo.gz (a 24-layer
transformer training step dumped by XLA:CPU; regenerate with tools/gen_dumps.py
--transformer24). Prints the tokenizer time, hloc's parse and parse+verify times
in-process, the ratio, and the wall time and peak RSS of `hloc check` as a subprocess.
Goal (issue 2): parse+verify <= 3x the tokenizer, peak memory <= 1.5 GB.
"""
from __future__ import annotations

import argparse
import gzip
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT = HERE / "data" / "transformer24.after_optimizations.hlo.gz"
# A reasonable fine-grained HLO tokenizer: names, numbers, strings, single punctuation.
TOKEN_RE = re.compile(r'%?[A-Za-z_][\w.-]*|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*"|\S')


def read(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode()


def best(fn, repeat):
    """Best CPU time of `repeat` runs (CPU time, so other load on the machine matters less)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    text = read(Path(args.file))
    import hloc
    from hloc.verifier import verify

    print(f"input: {args.file}: {len(text) / 1e6:.1f} MB, {text.count(chr(10))} lines")
    t_tok = best(lambda: TOKEN_RE.findall(text), args.repeat)
    t_parse = best(lambda: hloc.parse(text), args.repeat)
    module = hloc.parse(text)
    t_verify = best(lambda: verify(module), args.repeat)
    t_check = t_parse + t_verify
    print(f"re.findall tokenizer : {t_tok:.3f} s ({len(TOKEN_RE.findall(text))} tokens)")
    print(f"hloc parse           : {t_parse:.3f} s  ({t_parse / t_tok:.2f}x tokenizer)")
    print(f"hloc verify          : {t_verify:.3f} s")
    print(f"hloc parse + verify  : {t_check:.3f} s  ({t_check / t_tok:.2f}x tokenizer)")

    with tempfile.NamedTemporaryFile("w", suffix=".hlo", delete=False) as f:
        f.write(text)
    try:
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "hloc", "check", f.name],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t
    finally:
        os.unlink(f.name)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"hloc check (process) : {wall:.3f} s wall, peak RSS {peak_mb:.0f} MB, "
          f"exit {proc.returncode}: {proc.stdout.strip()[:200]}")
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
