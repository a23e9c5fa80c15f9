"""Conformance on XLA's own parser/verifier test modules (../shared/corpus/xla)."""
from __future__ import annotations

import pytest

import hloc
from hloc.diagnostics import HlocError, ParseError
from hloc.printer import module_to_text
from hloc.verifier import collect_errors

from corpus import XLA, needs_corpus, xla_files, xla_manifest, xla_parse_error, xla_row

pytestmark = needs_corpus


# Rejected, but located elsewhere than XLA locates it (the reason says why).
KNOWN_LOCATION_DIFFERENCES = {
    "0206_invaliddimlabels.hlo": "the file ends inside the computation: XLA checks the last "
    "instruction's attributes before noticing the missing '}', hloc reports the '}' (next line)",
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


@pytest.mark.parametrize("name", xla_files("parse_error"))
def test_parse_errors_are_located(name):
    row = xla_row(name)
    if ("version-dependent" in row["notes"] or '"sparsity"' in row["notes"]
            or "API_VERSION_UNSPECIFIED" in row["notes"]):
        pytest.skip("old syntax XLA has since dropped; hloc keeps accepting it")
    with pytest.raises(HlocError) as info:
        m = hloc.parse(_read(name), name)
        errors = collect_errors(m)
        if errors:
            raise errors[0]
    err = info.value
    if name in KNOWN_LOCATION_DIFFERENCES:
        pytest.xfail(KNOWN_LOCATION_DIFFERENCES[name])
    assert isinstance(err, ParseError) or err.loc is not None
    expected = xla_parse_error(row)
    if expected and expected[0] is not None:
        assert err.loc is not None and err.loc.line == expected[0], err.render()


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
    for e in errors:               # located, and naming the instruction
        assert e.loc is not None and any(n in e.message for n in names), e.render()


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
