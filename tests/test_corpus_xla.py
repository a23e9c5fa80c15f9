"""Conformance on XLA's own parser/verifier test modules (../shared/corpus/xla)."""
from __future__ import annotations

import re

import pytest

import hloc
from hloc.diagnostics import HlocError, ParseError
from hloc.printer import module_to_text
from hloc.verifier import collect_errors

from corpus import (XLA, error_key_words, needs_corpus, xla_files, xla_manifest,
                    xla_parse_error, xla_row)

pytestmark = needs_corpus


# Where hloc's error differs from the one jaxlib 0.10.2's parser reports (MANIFEST notes):
# name -> (what differs: "line", "column" (checked when the line agrees), "words" (a word
# of XLA's message's first clause missing from hloc's), or "accepted"), why). Checked both
# ways: a listed case must differ in exactly these ways, so a fix fails it until the entry
# goes.
_SPARSE = ("the lexer stops at '@' in the obsolete `sparsity=L.n@2:4` value, before the "
           "builder rejects the attribute name as XLA does (unexpected attribute \"sparsity\")")
_SAME_PLACE = "same place; hloc's message names what it found, XLA's what it expected"
_AT_INSTRUCTION = ("hloc reports the shape rule at the instruction's name with the shape "
                   "inference message; XLA's parser at its position after the operands/"
                   "attributes with its own message")
_HEADER_COLUMN = ("line 1: XLA's columns on a file's first line are one less than the "
                  "character's (jaxlib 0.10.2 reports `HloModule m, bogus=1` at 1:13, the b "
                  "being column 14; on other lines it counts from 1); hloc counts from 1 "
                  "on every line")
PARSE_ERROR_DIFFERENCES = {
    "0122_dotsparseoperand.hlo": (("column", "words"), _SPARSE),
    "0123_dotsparseoperands.hlo": (("column", "words"), _SPARSE),
    "0173_wrongopcode.hlo": (("words",), _SAME_PLACE + " (`f32[]{}`: 'expects opcode')"),
    "0175_wrongshape.hlo": (("words",), _SAME_PLACE + " (unknown primitive type 'g32')"),
    "0176_wrongoperandssize.hlo": (("words",), _SAME_PLACE + " (`f32[]{}`: 'expects opcode')"),
    "0177_operandnotfound.hlo": (("words",), _SAME_PLACE + " (`f32[]{}`: 'expects opcode')"),
    "0206_invaliddimlabels.hlo": (("line", "words"), "the file ends inside the computation: "
                                  "XLA checks the last instruction's attributes before "
                                  "noticing the missing '}', hloc reports the '}' (next line)"),
    "0208_predecessorundefined.hlo": (("column",), "hloc points at the instruction, XLA at "
                                      "the undefined name in control-predecessors"),
    "0212_computationshapedoesnotmatchrootshape.hlo": (("column",), "hloc points at the "
                                                       "computation name, XLA at its "
                                                       "result shape"),
    "0222_unterminatedcomment.hlo": (("words",), _SAME_PLACE + " (unterminated comment: "
                                     "'expects name')"),
    "0224_multipleentries.hlo": (("column",), "hloc points at the second entry's name, XLA "
                                 "at ENTRY"),
    "0227_aliasingwrongindex.hlo": (("column", "words"), "hloc reports the unbalanced '{' "
                                    "where the shape index opens, XLA where it expected '}'"),
    "0228_aliasingshapeindexnotnumerical.hlo": (("column",), _HEADER_COLUMN),
    "0229_aliasingwrongformatnocolon.hlo": (("column",), _HEADER_COLUMN),
    "0230_aliasingwrongformattwocolons.hlo": (("column",), _HEADER_COLUMN),
    "0231_aliasingwrongformatalphaparam.hlo": (("column",), _HEADER_COLUMN),
    "0233_bufferdonorshapeindexnotnumerical.hlo": (("column",), _HEADER_COLUMN),
    "0234_bufferdonorwrongformatalphaparam.hlo": (("column",), _HEADER_COLUMN),
    "0235_multipleroots.hlo": (("column",), "hloc points at the second root's name, XLA at "
                               "ROOT"),
    "0237_crosscomputationlookup.hlo": (("words",), _SAME_PLACE + " (instruction does not "
                                        "exist)"),
    "0248_customcallwithunspecifiedversion.hlo": (
        ("accepted",), "hloc deliberately reads api_version=API_VERSION_UNSPECIFIED from old "
        "dumps (../shared/reference/conventions.md, need 2: 'unknown or obsolete attributes "
        "such as API_VERSION_UNSPECIFIED'); XLA's parser rejects it at the next token"),
    "0250_shapemismatchinoperand.hlo": (("column", "words"), "hloc reads the typed operand and "
                                        "rejects its declared shape; XLA fails to read it as "
                                        "a name or nested instruction, one token earlier"),
    "0251_duplicateparameternumberisdetected.hlo": (("column",), "hloc points at the "
                                                    "instruction, XLA at the number"),
    "0252_checkindexedconditionaldimension.hlo": (("column", "words"), _AT_INSTRUCTION),
    "0253_checkindexedconditionalelementtype.hlo": (("column", "words"), _AT_INSTRUCTION),
    "0258_tupletypo.hlo": (("words",), _SAME_PLACE + " (instruction does not exist)"),
    "0260_infersparsedotshape.hlo": (("column", "words"), _SPARSE),
    "0271_nestedbroadcastwithoutdimensionsattribute.hlo": (
        ("column", "words"), "hloc reads the nested broadcast and applies its shape rule; XLA "
        "fails to read the nested instruction at its start"),
    "0273_rejectdensephysicalshape.hlo": (("column",), "hloc points into the layout, XLA after "
                                          "the shape"),
    "0277_asyncstartmissingoperandwrapper.hlo": (("column", "words"), _AT_INSTRUCTION),
    "0278_asyncupdatemissingoperandwrapper.hlo": (("column", "words"), _AT_INSTRUCTION),
    "0279_asyncoptuplewrongtype.hlo": (("column", "words"), _AT_INSTRUCTION),
    "0941_sparsedotkeepoperandstranspose.hlo": (("column", "words"), _SPARSE),
    "0942_sparsedotnoassociativereorderouter.hlo": (("column", "words"), _SPARSE),
    "0943_sparsedotnoassociativereorderinner.hlo": (("column", "words"), _SPARSE),
    "0944_sparsedotnoassociativereorderreduce.hlo": (("column", "words"), _SPARSE),
    "0945_sparsedotnoassociativereorderother.hlo": (("column", "words"), _SPARSE),
    "0946_sparsedotreducebatchdimension.hlo": (("column", "words"), _SPARSE),
    "0947_sparsedotnocontractingreorder.hlo": (("column", "words"), _SPARSE),
    "0948_sparsedotofconcat.hlo": (("column", "words"), _SPARSE),
    "1026_asyncupdatewrongtype.hlo": (("column", "words"), _AT_INSTRUCTION),
    "1077_invalidchannelidanduseglobaldeviceids.hlo": (("column", "words"), _AT_INSTRUCTION),
    "1106_sparsedotmetadatashape.hlo": (("column", "words"), _SPARSE),
    "1255_canonicalizesparselhs.hlo": (("column", "words"), _SPARSE),
    "1256_canonicalizesparserhs.hlo": (("column", "words"), _SPARSE),
    "1451_import.hlo": (("column", "words"), _SPARSE),
    "1524_import_emit_stablehlo_53.hlo": (("column", "words"), _SPARSE),
}


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


def _error_differences(name, row) -> tuple[str, ...]:
    """How hloc's error for this module differs from XLA's (see PARSE_ERROR_DIFFERENCES)."""
    try:
        module = hloc.parse(_read(name), name)
        errors = collect_errors(module)
        if not errors:
            return ("accepted",)
        raise errors[0]
    except HlocError as err:
        assert isinstance(err, ParseError) or err.loc is not None, err.render()
        expected = xla_parse_error(row)
        if expected is None:
            return ()
        line, col, message = expected
        differs = []
        if line is not None and (err.loc is None or err.loc.line != line):
            differs.append("line")
        elif col is not None and err.loc.col != col:
            differs.append("column")
        if any(w.lower() not in err.message.lower() for w in error_key_words(message)):
            differs.append("words")
        return tuple(differs)


@pytest.mark.parametrize("name", xla_files("parse_error"))
def test_parse_errors_are_located(name):
    """Line, column and the key words of XLA's message, where the MANIFEST records them."""
    row = xla_row(name)
    differs = _error_differences(name, row)
    listed, why = PARSE_ERROR_DIFFERENCES.get(name, ((), ""))
    assert differs == listed, (f"differs from XLA in {differs or 'nothing'}, listed as "
                               f"{listed or 'nothing'}: {row['notes'][-300:]}")
    if listed:
        pytest.xfail(f"{', '.join(listed)}: {why}")


def test_error_key_words():
    assert error_key_words('unexpected attribute "sparsity". Allowed attributes: a, b') == \
        ["unexpected", "attribute", "sparsity"]
    assert error_key_words("INVALID_ARGUMENT: Computation c is called twice.") == \
        ["Computation", "is", "called", "twice"]
    assert error_key_words("expects integer") == ["expects", "integer"]


# HloVerifier options per XLA test fixture class (xla/service/hlo_verifier_test.cc).
_FIXTURE_OPTIONS = {
    "HloVerifierTest": dict(layout_sensitive=False, allow_mixed_precision=False),
    "HloVerifierTestAllowMixedPrecision": dict(layout_sensitive=False,
                                               allow_mixed_precision=True),
    "HloVerifierTestLayoutSensitive": dict(layout_sensitive=True, allow_mixed_precision=False),
    "HloVerifierTestLayoutSensitiveAndAllowMixedPrecision": dict(layout_sensitive=True,
                                                                 allow_mixed_precision=True),
    # Layout sensitive, but without LayoutAssignment's InstructionCanChangeLayout.
    "HloVerifierTestLayoutFusion": dict(layout_sensitive=True, allow_mixed_precision=False,
                                        check_layout_changes=False),
}
# Tests that build their own HloVerifierOpts or pass an HloModuleConfig.
_TEST_OPTIONS = {
    "VerifyBroadcastDimensionsOrder": dict(verify_broadcast_dimensions_order=True),
    "VerifyBroadcastDimensionsOrderOK": dict(verify_broadcast_dimensions_order=True),
    "ReshapeIsNotBitcast": dict(layout_sensitive=True, check_layout_changes=False,
                                verify_reshape_is_bitcast=True),
    "ReshapeIsBitcast": dict(layout_sensitive=True, check_layout_changes=False,
                             verify_reshape_is_bitcast=True),
    "VerifyInstructionNameChanged": dict(verify_instruction_name_unchanged=True),
    "VerifyInstructionNameUnchanged": dict(verify_instruction_name_unchanged=True),
    "VerifyInstructionNameSchedulingNameNotPresent": dict(
        verify_instruction_name_unchanged=True),
    "VerifyInstructionNameChangedOkWithRematAndClones": dict(
        verify_instruction_name_unchanged=True),
    "NegativeHostMemorySpaceShape": dict(verify_no_host_memory_space=True),
    "NoHostMemorySpaceShape": dict(verify_no_host_memory_space=True),
    "InvalidShardingDevices": dict(num_partitions=2, use_spmd_partitioning=True),
    "AllToAll_LayoutConstrained": dict(replica_count=2),
    "AllToAll_OperandCountMismatchWithReplicaGroupSize": dict(replica_count=2),
    "CollectivePermuteCrossReplicaSourceOOR": dict(replica_count=3),
    "CollectivePermuteCrossReplicaTargetOOR": dict(replica_count=3),
    "CollectivePermuteCrossPartitionSourceOOR": dict(num_partitions=3),
    "CollectivePermuteCrossPartitionTargetOOR": dict(num_partitions=3),
}
# The corpus text is valid; XLA's test breaks the module after parsing it.
_MUTATED_AFTER_PARSING = {
    "0977_checkcalloperandoutputaliasing.hlo": "the test adds output_to_operand_aliasing to "
                                               "the call",
    "0987_checkconditionalbranchindexoperandshape.hlo": "the test rewrites b0's shape",
    "0996_convnegativebasedilationnotallowed.hlo": "the test sets a negative base dilation on "
                                                   "a convolution; the corpus holds the "
                                                   "neighbouring AddWithLayoutChange text",
    "1112_mismatchedminortomajorsizeanddimensionsize.hlo": "the test gives `add` a layout of "
                                                           "the wrong length",
    "1023_asyncoptuplewrongtype.hlo": "the async shape ((f32[2,3]), f32[3,2], s32[]) matches "
                                      "its computation; XLA's test of this name writes "
                                      "((f32[2,3])) instead",
}
# XLA:CPU ran these only through the HLO->StableHLO round trip; XLA's HloVerifier rejects
# them (its own tests, or the rule quoted).
_XLA_VERIFIER_REJECTS = {
    "0988_checkconditionalbranchthread.hlo": "CheckConditionalBranchThread expects the error",
    "1035_allreducestartanddonewrongtype.hlo": "AllReduceStartAndDoneWrongType expects it",
    "1049_collectivepermutecrossreplicatargetoor.hlo": "target 7 with 3 replicas",
    "1455_import_async_4.hlo": "collective-permute-start's shape is a tuple",
    "1462_import_async_11.hlo": "all-reduce-start's shape is its operand's",
    **{f"14{n}_rng_expander_{n - 14}.hlo": "CheckOperandCount(rng, 2)" for n in range(15, 21)},
}
# Expected to pass by XLA's tests, but hloc's send/send-done shape rules (hloc/ops/control.py,
# following ShapeVerifier::HandleSend/HandleSendDone) reject them.
_SEND_SHAPE_RULES = {
    "1060_channelverifierpartiallypipelinedasyncsend.hlo": "send-done returns (f32[16], token[])",
    "1061_channelverifierasyncsend.hlo": "send(token, data): operand order swapped",
}


def _verifier_options(row) -> dict:
    """HloVerifier options for the XLA test this corpus module came from."""
    fixture, _, test = row["test_name"].partition(".")
    if fixture not in _FIXTURE_OPTIONS:
        return {}
    return {**_FIXTURE_OPTIONS[fixture], **_TEST_OPTIONS.get(test, {})}


def _xfail(reasons: dict, names, why: str):
    return [pytest.param(n, marks=pytest.mark.xfail(reason=f"{why}: {reasons[n]}", strict=True))
            if n in reasons else n for n in names]


@pytest.mark.parametrize("name", _xfail(_MUTATED_AFTER_PARSING,
                                        xla_files("parse_ok", "expected to FAIL HloVerifier"),
                                        "valid text"))
def test_verifier_failures_are_reported(name):
    module = hloc.parse(_read(name), name)
    errors = collect_errors(module, **_verifier_options(xla_row(name)))
    assert errors, "HloVerifier rejects this module; hloc accepted it"
    names = {i.name for c in module.computations for i in c.instructions}
    lines = _read(name).splitlines()
    for e in errors:    # located, and naming (as a whole word) an instruction on that line
        assert e.loc is not None, e.render()
        line = lines[e.loc.line - 1]
        assert any(_names_word(n, line) and _names_word(n, e.message) for n in names), \
            e.render()


def _names_word(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.%-])%?{re.escape(name)}(?![\w.-])", text) is not None


def _should_pass() -> list[str]:
    return [r["file"] for r in xla_manifest() if r["expect"] == "parse_ok"
            and "FAIL HloVerifier" not in r["notes"]
            and ("PASS HloVerifier" in r["notes"] or "compiled+ran" in r["notes"])]


@pytest.mark.parametrize("name", _xfail(
    {**_XLA_VERIFIER_REJECTS, **_SEND_SHAPE_RULES}, _should_pass(), "rejected"))
def test_verifier_accepts_valid_modules(name):
    try:
        module = hloc.parse(_read(name), name)
    except ParseError as e:
        pytest.skip(f"parser: {e.message}")     # test_parse_ok_modules_... reports it
    errors = collect_errors(module, **_verifier_options(xla_row(name)))
    assert not errors, errors[0].render()
