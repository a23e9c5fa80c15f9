"""Access to ../shared/corpus (beside the checkout); tests skip cleanly without it."""
from __future__ import annotations

import csv
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
XLA = SHARED / "corpus" / "xla"
WILD = SHARED / "corpus" / "wild"
STABLEHLO = SHARED / "corpus" / "stablehlo"
TESTDATA = ROOT / "testdata"

needs_corpus = pytest.mark.skipif(not XLA.exists(), reason="../shared/corpus not present")


@lru_cache(maxsize=None)
def xla_manifest() -> list[dict]:
    if not XLA.exists():
        return []
    with open(XLA / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def xla_files(expect: str | None = None, note: str | None = None) -> list[str]:
    return [r["file"] for r in xla_manifest()
            if (expect is None or r["expect"] == expect) and (note is None or note in r["notes"])]


def xla_row(name: str) -> dict:
    return next(r for r in xla_manifest() if r["file"] == name)


_XLA_ERROR_RE = re.compile(r"jaxlib-0\.10\.2 parser error: (?:(\d+):(\d+): )?([^|]*)")


def xla_parse_error(row: dict):
    """(line, col, message) that XLA's parser reported, line/col None if unknown."""
    m = _XLA_ERROR_RE.search(row["notes"])
    if not m:
        return None
    line = int(m.group(1)) if m.group(1) else None
    col = int(m.group(2)) if m.group(2) else None
    return line, col, m.group(3).strip()


def error_key_words(message: str) -> list[str]:
    """The words of an XLA error message's first clause (before ': ', ', ', '. ' or the
    list of allowed attributes), which hloc's message for the same error must contain."""
    message = re.sub(r"^[A-Z_]+: ", "", message)          # absl status code
    head = re.split(r"[:;,.](?:\s|$)", message, maxsplit=1)[0].split(" Allowed attributes")[0]
    return [w for w in re.findall(r"[A-Za-z_][A-Za-z_\-]*", head) if len(w) > 1]
