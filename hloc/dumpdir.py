"""XLA dump directories: which files are HLO text, what the others are, which to take.

`scan(dir)` walks a `--xla_dump_to` directory (sorted, recursively) and classifies every
file by its name: HLO text (`*.before_optimizations.txt`, `*after_optimizations.txt`,
per-pass dumps, `*.hlo`) or one of the other things XLA and JAX write there (LLVM IR,
object files, buffer assignment and memory reports, debug options, StableHLO, textprotos,
HLO protos, graphs, npz/npy). A `.txt` file with no known name is sniffed: HLO text when
it starts like a module. `choose(dir, pick)` is the selection `run`/`opt`/`fmt` (and the
replay command) make: the one HLO file whose name contains `pick`, or a DirectoryError
listing the candidates. Content sniffing happens only here, in directory mode; for a
file named explicitly that fails to parse, `hint_for(path)` gives one line saying what
it looks like instead.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .diagnostics import InputError

__all__ = ["Entry", "scan", "choose", "hint_for", "classify", "DirectoryError"]

HLO = "HLO text"

# (name test, kind) in order; the first that matches names the file.
_BY_NAME = (
    (lambda n: n.endswith(".ll"), "LLVM IR"),
    (lambda n: n.endswith((".o", ".obj")), "object file"),
    (lambda n: n.endswith(("-buffer-assignment.txt", "-buffer-assignment-values.txt")),
     "buffer assignment"),
    (lambda n: n.endswith("-memory-usage-report.txt"), "memory usage report"),
    (lambda n: n.endswith("-live-range.txt"), "buffer live ranges"),
    (lambda n: n.endswith(".debug_options"), "debug options"),
    (lambda n: n.endswith(".mlir"), "StableHLO (MLIR)"),
    (lambda n: n.endswith((".textproto", ".pbtxt")), "textproto"),
    (lambda n: n.endswith((".pb", ".hlo.pb", ".hlo_module_proto")), "HLO proto (binary)"),
    (lambda n: n.endswith((".dot", ".html", ".url", ".svg")), "graph"),
    (lambda n: n.endswith(".npz"), "npz"),
    (lambda n: n.endswith(".npy"), "npy"),
    (lambda n: n.endswith(".hlo"), HLO),
    (lambda n: n.endswith(".txt") and ("optimizations" in n or ".after_" in n
                                        or ".before_" in n), HLO),
)

# What a file's first bytes look like, for `.txt` files of unknown name and hints.
_BY_CONTENT = (
    (lambda b: b.startswith(b"\x7fELF") or b[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe")
     or b.startswith(b"MZ"), "object file"),
    (lambda b: b.startswith(b"PK\x03\x04"), "npz"),
    (lambda b: b.startswith(b"\x93NUMPY"), "npy"),
    (lambda b: b.lstrip().startswith((b"; ModuleID", b"target datalayout", b"source_filename")),
     "LLVM IR"),
    (lambda b: b.lstrip().startswith((b"BufferAssignment", b"BufferAssignment:",
                                      b"allocation 0:")), "buffer assignment"),
    (lambda b: b.lstrip().startswith((b"Total bytes used", b"Memory usage")),
     "memory usage report"),
    (lambda b: b.lstrip().startswith(b"xla_"), "debug options"),
    (lambda b: b.lstrip().startswith((b"module @", b"#loc", b"module attributes", b"func.func")),
     "StableHLO (MLIR)"),
    (lambda b: b.lstrip().startswith((b"HloModule", b"ENTRY")), HLO),
)


class DirectoryError(InputError):
    """A directory given where one module is needed (exit 2, never internal)."""


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str

    @property
    def is_hlo(self) -> bool:
        return self.kind == HLO


def _head(path: str, n: int = 256) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(n)
    except OSError:
        return b""


def _by_content(path: str) -> str | None:
    head = _head(path)
    for test, kind in _BY_CONTENT:
        if test(head):
            return kind
    if _looks_textproto(head):
        return "textproto"
    return None


def _looks_textproto(head: bytes) -> bool:
    first = head.lstrip().split(b"\n", 1)[0].strip()
    word = first.split(b":", 1)[0].split(b" ", 1)[0]
    return bool(word) and word.replace(b"_", b"").isalnum() and (
        first.endswith(b"{") or b": " in first)


def classify(path: str) -> str:
    """The kind of a file in a dump directory (name first, then its first bytes)."""
    name = os.path.basename(path)
    for test, kind in _BY_NAME:
        if test(name):
            return kind
    if name.endswith(".txt"):
        return _by_content(path) or "unknown text"
    return _by_content(path) or "unknown"


def scan(directory: str) -> list[Entry]:
    """Every file under `directory`, sorted by path, with its kind."""
    out = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            out.append(Entry(path, classify(path)))
    out.sort(key=lambda e: e.path)
    return out


def choose(directory: str, pick: str | None, command: str, can_pick: bool = True) -> str:
    """The HLO file of `directory` that `command` should take, or DirectoryError
    (`can_pick`: whether `command` has a --pick option to suggest)."""
    candidates = [e.path for e in scan(directory) if e.is_hlo]
    if not candidates:
        raise DirectoryError(f"{directory}: a directory with no HLO text files "
                             f"(*.before_optimizations.txt, *after_optimizations.txt, *.hlo)")
    if pick is not None:
        hits = [p for p in candidates if pick in os.path.relpath(p, directory)]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise DirectoryError(f"{directory}: no HLO file name contains {pick!r}; "
                                 f"candidates:\n" + _listing(candidates))
        candidates = hits
    elif len(candidates) == 1:
        return candidates[0]
    how = ("name a file, or add --pick TEXT to take the file whose name contains TEXT"
           if can_pick else "name one of its files")
    raise DirectoryError(
        f"{directory} is a directory: `hloc {command}` takes one module; {how}. "
        f"HLO files there:\n" + _listing(candidates))


def _listing(paths: list[str]) -> str:
    return "\n".join(f"  {p}" for p in paths)


def hint_for(path: str) -> str | None:
    """For a file that failed to parse: what it looks like, when that is not HLO text."""
    if not os.path.isfile(path):
        return None
    name = os.path.basename(path)
    kind = None
    for test, k in _BY_NAME:
        if test(name):
            kind = k
            break
    if kind in (None, HLO):
        kind = _by_content(path)
    if kind is None or kind == HLO:
        return None
    return (f"this file looks like {_PHRASE.get(kind, kind)}, not HLO text (XLA writes such "
            f"files beside the *.before_optimizations.txt / *after_optimizations.txt dumps)")


_PHRASE = {"object file": "an object file", "buffer assignment": "a buffer assignment",
           "memory usage report": "a memory usage report",
           "buffer live ranges": "a buffer live-range report",
           "debug options": "XLA debug options", "textproto": "a textproto",
           "HLO proto (binary)": "a binary HLO proto", "graph": "a graph",
           "npz": "an npz archive", "npy": "an npy array"}
