"""`hloc check`: parse and verify files, or every HLO text file of a dump directory.

One line per file on stdout (`OK (...)`, `FAILED`, or for a directory's other files
`skipped: <kind>` from hloc.dumpdir); errors on stderr; the worst exit code.
"""
from __future__ import annotations

import sys

import click

from .diagnostics import HlocError


def _check_one(path, no_verify, progress) -> int:
    """`hloc check` on one file: its line on stdout, errors on stderr; the exit code."""
    from .cli_common import load_modules
    from .verifier import verify
    try:
        _, modules = load_modules(path, command="check", progress=progress)
        if not no_verify:
            with progress.phase("verify"):
                for m in modules:
                    verify(m)
    except HlocError as e:
        click.echo(e.render(), err=True)
        click.echo(f"{path}: FAILED", err=False)
        return e.exit_code
    n = sum(len(c.instructions) for m in modules for c in m.computations)
    click.echo(f"{path}: OK ({len(modules)} module{'s' if len(modules) != 1 else ''}, "
               f"{n} instructions)")
    return 0


@click.command("check")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--no-verify", is_flag=True, help="Only parse; skip the HLO verifier.")
def check(files, no_verify):
    """Parse and verify FILES; one line per file; exit 0 only if all are fine.

    A directory (an XLA dump) is checked file by file: the HLO text files
    (*.before_optimizations.txt, *after_optimizations.txt, pass dumps, *.hlo) are
    checked, every other file gets one `skipped: <kind>` line (LLVM IR, object file,
    buffer assignment, debug options, StableHLO (MLIR), textproto, npz ...).
    """
    import os

    from .cli_common import cli_progress
    from .dumpdir import HLO, Entry, scan
    from .progress import NULL
    worst = 0
    work: list[Entry] = []          # in order: files to check and files to skip
    for path in files:
        if path != "-" and os.path.isdir(path):
            entries = scan(path)
            if not any(e.is_hlo for e in entries):
                click.echo(f"error: {path}: a directory with no HLO text files", err=True)
                worst = 2
            work.extend(entries)
        else:
            work.append(Entry(path, HLO))
    to_check = sum(e.is_hlo for e in work)
    progress = cli_progress()
    # One file: its phases. Several: a bar, unless stdout's own lines are on the terminal.
    bar = (progress if to_check > 1 and not sys.stdout.isatty() else NULL).bar(to_check,
                                                                              "check")
    try:
        for e in work:
            if not e.is_hlo:
                click.echo(f"{e.path}: skipped: {e.kind}")
                continue
            bar.step(os.path.basename(e.path))
            worst = max(worst, _check_one(e.path, no_verify,
                                          progress if to_check == 1 else NULL))
        bar.close()
    finally:
        progress.close()
    sys.exit(worst)
