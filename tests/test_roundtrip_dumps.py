"""Real dumps print back byte for byte; old wild dumps parse and print idempotently."""
from __future__ import annotations

import pytest

import hloc
from hloc.diagnostics import HlocError
from hloc.printer import module_to_text

from corpus import TESTDATA, WILD

DUMPS = sorted((TESTDATA / "dumps").glob("*.hlo"))
WILD_FILES = sorted(WILD.glob("*.txt")) if WILD.exists() else []
# Deliberately truncated/hand-edited fragment (see the wild corpus README).
MALFORMED_WILD = {"ptxla__mlp__test.hlo.txt"}


def test_there_are_dumps():
    assert len(DUMPS) >= 60


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.name)
def test_dump_prints_back_byte_for_byte(path):
    text = path.read_text()
    assert module_to_text(hloc.parse(text, str(path))) == text


@pytest.mark.parametrize("path", WILD_FILES, ids=lambda p: p.name)
def test_wild_dump_parses_and_prints_idempotently(path):
    text = path.read_text()
    if path.name in MALFORMED_WILD:
        with pytest.raises(HlocError) as info:
            hloc.parse(text, path.name)
        assert info.value.loc is not None
        return
    once = module_to_text(hloc.parse(text, path.name))
    assert module_to_text(hloc.parse(once, path.name)) == once
