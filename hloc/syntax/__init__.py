"""HLO text -> Module: `parse_module(text, name)` and `parse_file(path)`."""
from __future__ import annotations

from pathlib import Path

from ..diagnostics import ParseError, Source
from ..gc_pause import no_gc
from .builder import build
from .parser import parse_records, split_modules, strip_glog_prefixes

__all__ = ["parse_modules", "parse_module", "read_text"]


def parse_modules(text: str, name: str = "<input>") -> list:
    """All modules in a text (several are separated by `---` lines)."""
    if "\x00" in text:
        raise ParseError("input is binary, not HLO text", Source(text, name).loc(text.index("\x00")))
    source = Source(strip_glog_prefixes(text), name)
    bounds = split_modules(source.text)
    if not bounds:
        raise ParseError("empty input: expects an HLO module", source.loc(0))
    # Building a big module allocates millions of objects and no garbage cycles; the
    # cyclic GC would rescan the growing heap over and over (a third of the parse time).
    with no_gc():
        return [build(parse_records(source, a, b), source) for a, b in bounds]


def parse_module(text: str, name: str = "<input>"):
    return parse_modules(text, name)[0]


def read_text(path) -> str:
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ParseError(f"input is not UTF-8 text (byte {e.start})", Source("", str(path)).loc(0)) from None
