#!/usr/bin/env python3
"""Mutation fuzzer over testdata/ dumps: every outcome must be ok or a clean error.

    python tools/fuzz.py --cases N [--deep N] [--seed S] [--budget 10] [--jobs J]

`--cases` mutants go through parse + verify + print (`hloc check`/`fmt`); `--deep`
mutants (mutations that tend to keep the module valid) also through the interpreter on fake
arguments (half of them over the whole float range) and the default `hloc opt` pipeline.
The mutations and the in-process run of one case are hloc.devtools.fuzz (the suite's
tests/test_fuzz.py uses them too). Here each case runs in a worker process under a
watchdog: a case over its time budget is reported with the stack it was stuck in, a worker
killed by a signal is a native crash, and the worker is restarted. Workers limit their
address space (--memory-gib) so a huge allocation is a MemoryError, not the OOM killer.

Prints the counts per class (ok, error, unsupported, over-budget with reasons, crash,
native-crash) and one example per distinct crash; exit 1 if there is any crash.
"""
from __future__ import annotations

import argparse
import collections
import faulthandler
import json
import linecache
import os
import re
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def worker(opts) -> None:
    """Read `check N` / `deep N` lines; answer one JSON line per case."""
    sys.path.insert(0, str(ROOT))
    if opts.memory_gib:
        import resource
        limit = opts.memory_gib << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    from hloc.devtools.fuzz import corpus, make_case, run_case
    files = corpus(Path(opts.corpus), max_bytes=opts.max_bytes)
    texts: dict = {}
    for line in sys.stdin:
        mode, index = line.split()
        index = int(index)
        path, text, names, large = make_case(files, texts, index, opts.seed, mode == "deep")
        faulthandler.dump_traceback_later(opts.budget, exit=True)
        out = run_case(text, deep=mode == "deep", seed=index, large_floats=large)
        faulthandler.cancel_dump_traceback_later()
        print(json.dumps({"kind": out.kind, "stage": out.stage, "detail": out.detail,
                          "file": path.name, "mutations": names}), flush=True)


_FRAME_RE = re.compile(r'File "(.*)", line (\d+) in (\S+)')


def _stuck_at(dump: str) -> str:
    """Why a case ran over budget, from its faulthandler dump: the innermost hloc frame,
    and whether an HLO while loop was still iterating (a mutated trip count)."""
    frames = [m.groups() for m in _FRAME_RE.finditer(dump)]
    frames = [(f, int(n), fn) for f, n, fn in frames if "/hloc/" in f and "/devtools/" not in f]
    if not frames:
        return "no hloc frame on the stack"
    f, n, fn = frames[0]
    where = f"{os.path.relpath(f, ROOT)}:{n} in {fn}"
    loop = any(f.endswith("interp/core.py") and linecache.getline(f, k).strip().startswith(
        ("while bool(self.call(cond", "state = self.call(body")) for f, k, _ in frames)
    return ("HLO while loop still iterating, at " if loop else "") + where


class Worker:
    def __init__(self, opts):
        self.opts = opts
        self.proc = None

    def start(self):
        self.err = tempfile.TemporaryFile(mode="w+")
        cmd = [sys.executable, __file__, "--worker", "--seed", str(self.opts.seed),
               "--budget", str(self.opts.budget), "--corpus", self.opts.corpus,
               "--max-bytes", str(self.opts.max_bytes), "--memory-gib",
               str(self.opts.memory_gib)]
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, env=env)

    def run(self, mode: str, index: int) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(f"{mode} {index}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        rc = self.proc.wait()
        self.err.seek(0)
        dump = self.err.read()
        self.proc = None
        if "Timeout (" in dump:
            return {"kind": "over-budget", "stage": "?", "detail": _stuck_at(dump)}
        if rc < 0:
            return {"kind": "native-crash", "stage": "?", "detail": f"signal {-rc}"}
        return {"kind": "crash", "stage": "?",
                "detail": f"worker exit {rc}: {dump.strip().splitlines()[-1:] or ''}"}

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000, help="check-level cases (parse+verify)")
    ap.add_argument("--deep", type=int, default=0, help="deep cases (also run + opt)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--start", type=int, default=0, help="first case index (to resume)")
    ap.add_argument("--budget", type=float, default=10.0, help="seconds per case")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--corpus", default=str(ROOT / "testdata"))
    ap.add_argument("--max-bytes", type=int, default=60_000,
                    help="skip corpus files larger than this")
    ap.add_argument("--memory-gib", type=int, default=4, help="worker address-space limit")
    ap.add_argument("--progress", type=int, default=0, help="print counts every N cases")
    ap.add_argument("--write-case", metavar="MODE:N",
                    help="write mutant N (check:N or deep:N) to stdout and exit")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.write_case:
        sys.path.insert(0, str(ROOT))
        from hloc.devtools.fuzz import corpus, make_case
        mode, n = opts.write_case.split(":")
        path, text, names, large = make_case(corpus(Path(opts.corpus), max_bytes=opts.max_bytes),
                                             {}, int(n), opts.seed, mode == "deep")
        print(f"// {path.name}: {' '.join(names)}{' (large floats)' if large else ''}\n{text}")
        return 0
    if opts.worker:
        worker(opts)
        return 0
    todo: queue.Queue = queue.Queue()
    for i in range(opts.start, opts.start + opts.cases):
        todo.put(("check", i))
    for i in range(opts.start, opts.start + opts.deep):
        todo.put(("deep", i))
    counts: dict = collections.defaultdict(collections.Counter)
    examples: dict = {}
    lock = threading.Lock()
    t0 = time.time()
    done = [0]

    def loop():
        w = Worker(opts)
        while True:
            try:
                mode, i = todo.get_nowait()
            except queue.Empty:
                break
            r = w.run(mode, i)
            with lock:
                counts[mode][r["kind"]] += 1
                if r["kind"] not in ("ok", "error", "unsupported"):
                    key = (r["kind"], r["detail"])
                    examples.setdefault(key, []).append(f"{mode} {i}")
                done[0] += 1
                if opts.progress and done[0] % opts.progress == 0:
                    print(f"[{time.time() - t0:.0f}s] {done[0]} cases: "
                          + "; ".join(f"{m} {dict(c)}" for m, c in counts.items()), flush=True)
        w.close()

    threads = [threading.Thread(target=loop) for _ in range(max(1, opts.jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    secs = time.time() - t0
    print(f"seed {opts.seed}, cases {opts.start}..: {done[0]} in {secs:.0f}s "
          f"({done[0] / max(secs, 1e-9):.1f}/s), budget {opts.budget:g}s per case")
    for mode in ("check", "deep"):
        if counts[mode]:
            c = counts[mode]
            print(f"{mode}: " + ", ".join(f"{k} {c[k]}" for k in
                                          ("ok", "error", "unsupported", "over-budget", "crash",
                                           "native-crash")))
    for (kind, detail), cases in sorted(examples.items()):
        print(f"{kind}: {detail}  [{len(cases)} cases, e.g. {', '.join(cases[:3])}]")
    bad = sum(c[k] for c in counts.values() for k in ("crash", "native-crash"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
