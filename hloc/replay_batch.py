"""`hloc replay` over many files: which files, in what order, in how many processes.

`expand(paths, stage)` turns the command's arguments (files, dump directories, globs)
into the HLO files to replay: in a directory, hloc.dumpdir's HLO text files of the
chosen stage (`before`: `*before_optimizations*` and plain `.hlo` files, the default;
`after`: `*after_optimizations*`; `all`), never per-pass dumps unless `all`; an HloProto
(`*.hlo.pb`) stands in for a module XLA wrote only as a proto; buffer assignments, memory
reports, `.ll`, snapshots and every other non-HLO file are skipped; a named file that
does not exist is an InputError. Files are
grouped by XLA's module number (`module_0007.` ...), then by name. `replay_files(files,
config, jobs=N)` replays each file (in N worker processes when N > 1) and yields a
FileResult per file in input order: the outcome, the exit code and the file's
run_hlo_module console text. `table(results)` and `json_line(result)` present them.
"""
from __future__ import annotations

import glob
import io
import os
import re
from dataclasses import dataclass

from .diagnostics import HlocError, InputError

__all__ = ["expand", "replay_file", "replay_files", "FileResult", "table", "json_line",
           "STATUS_CODES"]

_MODULE_NUMBER = re.compile(r"module_(\d+)")
_PER_PASS = re.compile(r"\.\d{4}\.[^/]*\.after_[^/]*\.before_")
STATUS_CODES = {"ok": 0, "mismatch": 1, "error": 2, "unsupported": 3, "internal": 4}


def _stage_ok(name: str, stage: str) -> bool:
    if stage == "all":
        return True
    if _PER_PASS.search(name):
        return False
    if stage == "after":
        return "after_optimizations" in name
    return "after_optimizations" not in name


def _order_key(path: str):
    m = _MODULE_NUMBER.search(os.path.basename(path))
    return (int(m.group(1)) if m else -1, path)


def _proto_alone(path: str, texts: set) -> bool:
    """An HloProto dump (`*.hlo.pb`) whose module XLA did not also write as text (dumps
    made with --xla_dump_hlo_as_proto alone): replayed from the proto."""
    if not path.endswith(".hlo.pb"):
        return False
    return path[:-len(".hlo.pb")] + ".txt" not in texts


def expand(paths, stage: str = "before") -> tuple[list[str], list[str]]:
    """(HLO files to replay, lines saying what was skipped) for the arguments."""
    from .dumpdir import scan
    files: list[str] = []
    skipped: list[str] = []
    for arg in paths:
        if os.path.isdir(arg):
            found = []
            entries = scan(arg)
            texts = {e.path for e in entries if e.is_hlo}
            for e in entries:
                if (e.is_hlo or _proto_alone(e.path, texts)) and \
                        _stage_ok(os.path.basename(e.path), stage):
                    found.append(e.path)
                else:
                    skipped.append(f"skipped: {e.path}: "
                                   f"{e.kind if not e.is_hlo else 'not the ' + stage + ' stage'}")
            files.extend(sorted(found, key=_order_key))
        elif not os.path.exists(arg) and any(c in arg for c in "*?["):
            hits = sorted((p for p in glob.glob(arg) if os.path.isfile(p)), key=_order_key)
            if not hits:
                raise InputError(f"{arg}: no file matches")
            files.extend(hits)
        elif arg != "-" and not os.path.lexists(arg):
            raise InputError(f"{arg}: No such file or directory")
        else:
            files.append(arg)
    if not files:
        raise InputError("no HLO files to replay" + (f" ({len(skipped)} other files skipped)"
                                                      if skipped else ""))
    return files, skipped


@dataclass
class FileResult:
    path: str
    status: str                  # ok, mismatch, error, unsupported, internal
    outcome: object = None       # hloc.replay.ReplayOutcome (None after an error)
    stdout: str = ""
    stderr: str = ""
    error: str = ""

    @property
    def code(self) -> int:
        return STATUS_CODES[self.status]


def load_for_replay(path: str, input_format: str | None = None, command: str = "replay"):
    """(module, arguments or None) of a file: HLO text, or XLA's protos (`.pb` /
    `.pbtxt`, or `input_format` pb / pbtxt); an HloSnapshot brings its arguments, which
    run_hlo_module replays with instead of fake ones."""
    from .cli_common import one_module
    from .proto.reader import proto_format, read_proto
    from .syntax import parse_modules, read_text
    fmt = input_format if input_format in ("pb", "pbtxt") else \
        None if input_format else proto_format(path)
    if fmt:
        got = read_proto(path, fmt)
        return got.module, got.arguments
    return one_module(path, parse_modules(read_text(path), path), command), None


def replay_file(path: str, config, inputs_spec=None, input_format=None) -> FileResult:
    """Load, verify and replay one file; its console text is kept, not printed."""
    from .replay import replay_module
    from .verifier import verify
    out, err = io.StringIO(), io.StringIO()
    try:
        try:
            module, inputs = load_for_replay(path, input_format)
        except OSError as e:        # unreadable when its turn came: this file's error row
            raise InputError(f"{path}: {e.strerror or e}") from None
        verify(module)
        if inputs_spec is not None:
            from .inputs import bind_arguments, read_inputs
            inputs = bind_arguments(module, read_inputs(*inputs_spec))
        outcome = replay_module(module, config, path=path, inputs=inputs,
                                out=lambda s: print(s, file=out),
                                err=lambda s: print(s, file=err))
    except HlocError as e:
        status = {1: "mismatch", 2: "error", 3: "unsupported"}.get(e.exit_code, "internal")
        return FileResult(path, status, None, out.getvalue(),
                          err.getvalue() + e.render() + "\n", e.render())
    except (RecursionError, MemoryError) as e:
        return FileResult(path, "error", None, out.getvalue(), err.getvalue(),
                          f"error: {type(e).__name__}")
    except Exception as e:  # noqa: BLE001 - one file's internal error must not stop the rest
        msg = f"internal error: {type(e).__name__}: {e}"
        return FileResult(path, "internal", None, out.getvalue(), err.getvalue() + msg + "\n",
                          msg)
    return FileResult(path, "ok" if outcome.ok else "mismatch", outcome, out.getvalue(),
                      err.getvalue(), outcome.message)


def _worker(job):
    path, config, inputs_spec, input_format = job
    r = replay_file(path, config, inputs_spec, input_format)
    if r.outcome is not None:      # values stay in the worker: the table needs figures
        r.outcome.arguments, r.outcome.test_values, r.outcome.reference_values = [], [], []
    return r


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _share_cores(jobs: int) -> None:
    """Worker start: the compiled back end's kernels get this worker's share of the
    cores (not every core in each of `jobs` workers, which then contend)."""
    from .runner import BACKENDS
    cpu = BACKENDS.get("cpu")
    if cpu is not None and getattr(cpu, "threads", 0) is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else os.cpu_count() or 1
        cpu.threads = max(1, cores // jobs)


def replay_files(files: list[str], config, *, jobs: int = 1, inputs_spec=None, progress=None,
                 input_format=None):
    """FileResults in the order of `files`; `progress` gets a bar over the files."""
    from .progress import NULL
    progress = progress or NULL
    bar = progress.bar(len(files), "replay")
    try:
        if jobs <= 1 or len(files) <= 1:
            for f in files:
                bar.step(os.path.basename(f))
                yield _worker((f, config, inputs_spec, input_format))
            return
        import concurrent.futures as cf
        import multiprocessing
        # fork where there is one: workers start without importing hloc again
        ctx = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        # Largest files first, so that no long file starts last while the other workers
        # idle; but a file the size of one already queued (most likely a copy of the same
        # module: JAX dumps repeat them) after all first ones, so that copies do not
        # compile side by side but find the first one's object in the cache. Results
        # still come in the order of `files`.
        sizes = [_size(f) for f in files]
        seen: dict[int, int] = {}
        rank = []
        for n in sizes:
            rank.append(seen.get(n, 0))
            seen[n] = rank[-1] + 1
        order = sorted(range(len(files)), key=lambda i: (rank[i], -sizes[i]))
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                    initializer=_share_cores, initargs=(jobs,)) as pool:
            futures = {i: pool.submit(_worker, (files[i], config, inputs_spec, input_format))
                       for i in order}
            for i, f in enumerate(files):
                result = futures[i].result()
                bar.step(os.path.basename(f))
                yield result
    finally:
        bar.close()


def table(results: list[FileResult]) -> str:
    """One line per file (status, mismatching elements, seconds on each side), a total."""
    rows = [f"{'status':<11} {'mismatches':>10} {'test s':>8} {'ref s':>8}  file"]
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
        o = r.outcome
        mis = f"{o.mismatches}" if o is not None else "-"
        ts = f"{o.test_s:.3f}" if o is not None else "-"
        rs = f"{o.reference_s:.3f}" if o is not None else "-"
        rows.append(f"{r.status:<11} {mis:>10} {ts:>8} {rs:>8}  {r.path}")
        if r.status != "ok" and r.error:
            rows.append(f"{'':11} {r.error.splitlines()[0]}")
    rows.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) +
                f" of {len(results)} files")
    return "\n".join(rows)


def json_line(r: FileResult) -> dict:
    o = r.outcome
    obj = {"file": r.path, "status": r.status, "exit_code": r.code}
    if o is not None:
        obj.update(module=o.module, mismatches=o.mismatches, elements=o.elements,
                   failed_runs=o.failed_runs, iterations=o.iterations, optimized=o.optimized,
                   test_s=o.test_s, reference_s=o.reference_s)
    if r.error:
        obj["message"] = r.error
    return obj
