"""Conformance on XLA's own parser/verifier test modules (../shared/corpus/xla)."""
from __future__ import annotations

import pytest

import hloc
from hloc.diagnostics import HlocError, ParseError
from hloc.printer import module_to_text
from hloc.verifier import collect_errors

from corpus import XLA, needs_corpus, xla_files, xla_parse_error, xla_row

pytestmark = needs_corpus


def _read(name):
    return (XLA / name).read_text()


@pytest.mark.parametrize("name", xla_files("parse_ok"))
def test_parse_ok_modules_parse_and_print_idempotently(name):
    module = hloc.parse(_read(name), name)
    text = module_to_text(module)
    again = module_to_text(hloc.parse(text, name + ".fmt"))
    assert again == text


@pytest.mark.parametrize("name", xla_files("parse_ok", "round-trip: printer output must equal"))
def test_round_trip_is_byte_exact(name):
    text = _read(name)
    assert module_to_text(hloc.parse(text, name)).rstrip("\n") == text.rstrip("\n")


@pytest.mark.parametrize("name", xla_files("parse_error"))
def test_parse_errors_are_located(name):
    row = xla_row(name)
    if "version-dependent" in row["notes"] or '"sparsity"' in row["notes"]:
        pytest.skip("old syntax XLA has since dropped; hloc keeps accepting it")
    with pytest.raises(HlocError) as info:
        m = hloc.parse(_read(name), name)
        errors = collect_errors(m)
        if errors:
            raise errors[0]
    err = info.value
    assert isinstance(err, ParseError) or err.loc is not None
    expected = xla_parse_error(row)
    if expected and expected[0] is not None:
        assert err.loc is not None and err.loc.line == expected[0], err.render()


@pytest.mark.parametrize("name", xla_files("parse_ok", "expected to FAIL HloVerifier"))
def test_verifier_failures_are_reported(name):
    module = hloc.parse(_read(name), name)
    assert collect_errors(module), "HloVerifier rejects this module; hloc accepted it"
