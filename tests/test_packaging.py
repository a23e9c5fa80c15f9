"""pyproject.toml's package list matches the source tree; the grammar ships as data."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for p in (ROOT / "hloc").rglob("__init__.py")}
    assert found - listed == set(), f"packages missing from pyproject.toml: {found - listed}"
    assert "hloc.grammar" in listed


def test_grammar_loads_as_package_data():
    from hloc.syntax.parser import _grammar_text
    assert "instruction" in _grammar_text()


def test_line_budget():
    """Modules stay short (design notes: a few hundred lines, one job each)."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "hloc").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 500}
    assert not long, f"modules over 500 lines: {long}"
