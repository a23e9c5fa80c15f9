"""Typed attribute kinds (hloc.ir.attrs values, hloc.syntax.attr_kinds parsing/printing):
round trips, XLA canonical printing, values, errors, and sweeps over the XLA corpus
(skipped when ../shared is absent)."""
from __future__ import annotations

import collections
import re
from pathlib import Path

import pytest

from hloc.ir.attrs import (AttrSyntaxError, CompRef, ComputationLayout, ConvDimNumbers,
                           InlineComp, LiteralAttr, ReplicaGroups, Verbatim, Window, WindowDim)
from hloc.syntax.attr_kinds import KINDS, format_value, parse_value
from hloc.ir.shape import parse_shape

# ---------------------------------------------------------------------------
# Exact round trips: parse -> format gives the same text (examples from the corpus).

ROUND_TRIPS = [
    ("bool", "true"), ("bool", "false"),
    ("int", "0"), ("int", "-42"), ("int", "9223372036854775807"),
    ("float", "0.001"), ("float", "1e-05"), ("float", "0"), ("float", "-2.5"),
    ("string", '"foo"'), ("string", '"foo\\"bar"'), ("string", '""'),
    ("string", '"a\\nb\\tc\\\\d\\\'e"'), ("string", '"\\303\\251\\001"'),
    ("ident", "API_VERSION_ORIGINAL"),
    ("int_list", "{}"), ("int_list", "{0}"), ("int_list", "{0,1,2}"), ("int_list", "{-1,5}"),
    ("int_list_list", "{}"), ("int_list_list", "{{0,1},{1,2},{2,3}}"), ("int_list_list", "{{}}"),
    ("int_list_list", "{{1,8,128},{1,8,128}}"),
    ("bool_list", "{}"), ("bool_list", "{false}"), ("bool_list", "{false,true}"),
    ("bool_list_or_bool", "{true,false}"),
    ("computation", "%add_F32.v3"), ("computation", "%fused_computation.1"),
    ("computation", "{ x = f32[] parameter(0) ROOT y = f32[] negate(x) }"),
    ("computation_list", "{%Negate, %Identity, %Floor}"), ("computation_list", "{}"),
    ("instruction_list", "{%copy.1}"), ("instruction_list", "{%a, %b}"),
    ("slice", "{[0:4], [0:8]}"), ("slice", "{[2:3:2], [0:7:4], [0:32:5]}"),
    ("slice", "{[0:5:1], [5:25:4], [5:15:2]}"), ("slice", "{}"),
    ("window", "{size=3x3 pad=1_1x1_1}"), ("window", "{size=1}"), ("window", "{size=28 pad=13_14}"),
    ("window", "{size=3x3 stride=2x2 pad=0_1x0_1}"),
    ("window", "{size=9 pad=2_2 lhs_dilate=3 rhs_dilate=4}"),
    ("window", "{size=3x3x3 pad=-1_-1x1_1x1_1}"),
    ("window", "{size=3x3 pad=1_2x1_2 lhs_dilate=2x2 rhs_reversal=1x1}"),
    ("window", "{size=3x15x6x1x2 stride=2x1x1x1x1 pad=7_5x2_6x7_1x1_7x3_4 lhs_dilate=1x2x2x1x2 "
               "rhs_dilate=3x1x4x2x3}"),
    ("window", "{size=2x2 rhs_reversal=1x0}"), ("window", "{}"),
    ("dim_labels", "b01f_01io->b01f"), ("dim_labels", "bf01_oi01->bf01"),
    ("dim_labels", "fb01_io01->01bf"), ("dim_labels", "bf_io->bf"),
    ("dim_labels", "?b01f_0?1io->b01?f"), ("dim_labels", "f01b2_i01o2->01fb2"),
    ("padding", "0_0x1_1"), ("padding", "0_0_0x1_1_2"), ("padding", "-1_2"), ("padding", "1_1_1"),
    ("direction", "EQ"), ("direction", "GE"), ("comparison_type", "TOTALORDER"),
    ("fusion_kind", "kLoop"), ("fusion_kind", "kCustom"), ("fft_type", "IRFFT"),
    ("distribution", "rng_uniform"), ("rng_algorithm", "rng_three_fry"),
    ("dot_algorithm", "dot_bf16_bf16_f32"), ("dot_algorithm", "dot_tf32_tf32_f32_x3"),
    ("api_version", "API_VERSION_TYPED_FFI"), ("api_version", "API_VERSION_UNSPECIFIED"),
    ("schedule", "SCHEDULE_EARLIEST"), ("padding_type", "PADDING_SAME"),
    ("transpose_a", "NO_TRANSPOSE"), ("conv_kind", "wgrad"),
    ("precision_list", "{default,high}"), ("precision_list", "{highest,highest}"),
    ("shape", "f32[2,3]{1,0}"), ("shape", "(u32[3]{0}, pred[])"), ("shape", "()"),
    ("shape_list", "{f32[2]{0}, f32[3,4]{1,0}}"), ("shape_list", "{}"),
    ("shape_list", "{(f32[2,2]{1,0}, f32[42,2,3]{2,0,1}), f32[123,4]{1,0}}"),
    ("replica_groups", "{}"), ("replica_groups", "{{0,1},{2,3}}"),
    ("replica_groups", "[1,8]<=[8]"), ("replica_groups", "[2,4]<=[4,2]T(1,0)"),
    ("replica_groups", "[3,10]<=[6,5]T(1,0)"),
    ("aliasing", "{{0}: (1, {}), {1}: (0, {0})}"), ("aliasing", "{{}: (0, {})}"),
    ("aliasing", "{{0,1}: (2, {1,0})}"), ("aliasing", "{}"),
    # XLA's printer always spells the kind out (see the TF dump in testdata/dumps).
    ("input_output_alias", "{ {0}: (0, {}, may-alias), {1}: (2, {}, must-alias) }"),
    ("result_accuracy", "{mode=highest}"),
    ("result_accuracy", "{tolerance={atol=0.1,rtol=0,ulps=2}}"),
    ("input_output_alias", "{ {}: (0, {}, must-alias) }"),
    ("buffer_donor", "{ (0, {0}), (0, {1}) }"),
    ("computation_layout", "{(f32[2,3]{1,0}, s32[])->(f32[2]{0}, f32[])}"),
    ("computation_layout", "{()->f32[]}"),
    ("computation_layout", "{(f32[])->(f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[])}"),
    ("computation_layout", "{(s32[1,1,25,1]{3,2,1,0}, s32[1,1,2,1]{3,2,1,0}, s32[], s32[], s32[], "
                           "/*index=5*/s32[])->s32[1,1,25,1]{3,2,1,0}}"),
    ("literal", "s32[2]{0} {1, 2}"), ("literal", "f32[] 0.1"),
    ("literal", "( s32[4]{0} {4, 128, 128, 3}, pred[4]{0} {1, 0, 0, 0} )"),
    ("verbatim", '{op_type="add" op_name="a/b"}'), ("verbatim", '{"k":{"x":[1,2]}}'),
    ("sparsity", "L.1@2:4"),
]


@pytest.mark.parametrize("kind,text", ROUND_TRIPS)
def test_round_trip(kind, text):
    value = parse_value(kind, text)
    hash(value)
    assert format_value(kind, value) == text
    assert parse_value(kind, format_value(kind, value)) == value


def test_every_kind_has_a_round_trip_example():
    assert set(KINDS) <= {k for k, _ in ROUND_TRIPS}


# ---------------------------------------------------------------------------
# Accepted spellings that XLA prints differently.

CANONICAL = [
    ("int", "18446744073709551615", "-1"),                 # uint64 bit-cast, as XLA's lexer
    ("int", " 7 ", "7"),
    ("float", "1e-3", "0.001"), ("float", "0.0001234567", "0.000123457"), ("float", "3", "3"),
    ("float", "1E+10", "1e+10"), ("float", "5.", "5"), ("float", "-.5", "-0.5"),
    ("float", "-nan", "nan"), ("float", "nan(0x7f)", "nan"),      # XLA's range check passes NaN
    ("string", "'single'", '"single"'), ("string", '"\\x41\\101\\u00e9"', '"AA\\303\\251"'),
    ("int_list", "{ 0 , 1 }", "{0,1}"), ("int_list", "{4, 8}", "{4,8}"),
    ("int_list", "{0, /*c*/ 1}", "{0,1}"),
    ("int_list_list", "{{0,1}, {1,2}}", "{{0,1},{1,2}}"),
    ("bool_list_or_bool", "true", "{true}"),
    ("computation", "add", "%add"), ("computation_list", "{Negate, b}", "{%Negate, %b}"),
    ("instruction_list", "{p0,p1}", "{%p0, %p1}"),
    ("slice", "{[0:3],[1:4]}", "{[0:3], [1:4]}"),
    ("slice", "{[0:3], [0:4:2]}", "{[0:3:1], [0:4:2]}"),  # strides print for all dims or none
    ("slice", "{[2:3:1], [0:7:1]}", "{[2:3], [0:7]}"),
    ("window", "{pad=1_1 size=1}", "{size=1 pad=1_1}"),
    ("window", "{size=1x1 pad=0_0x0_0}", "{size=1x1}"),
    ("window", "{size=2x3 pad=1_1x2_2 lhs_dilate=1x1 rhs_dilate=1x1}", "{size=2x3 pad=1_1x2_2}"),
    ("window", "{ size=3x3  stride= 2x2 /*c*/ }", "{size=3x3 stride=2x2}"),
    ("window", "{size=2 rhs_reversal=2}", "{size=2}"),     # only 1 means reversed
    ("padding", "0_0_0x1_1_0", "0_0x1_1"),
    ("dim_labels", "0f_0io->0f", "0f_0io->0f"),
    ("dim_labels", "f0_0io->f0", "f0_0io->f0"),            # unset batch defaults to 0 ...
    ("dim_labels", "?f0_0io->?f0", "bf0_0io->bf0"),        # ... and shows up when printed
    ("fft_type", "FFT", "FFT"),
    ("rng_algorithm", "RNG_PHILOX", "rng_philox"), ("distribution", "RNG_NORMAL", "rng_normal"),
    ("dot_algorithm", "DOT_BF16_BF16_F32", "dot_bf16_bf16_f32"),
    ("api_version", "api_version_status_returning", "API_VERSION_STATUS_RETURNING"),
    ("schedule", "schedule_latest", "SCHEDULE_LATEST"),
    ("precision_list", "{DEFAULT,High}", "{default,high}"),
    ("replica_groups", "{{0, 1, 2, 3}}", "{{0,1,2,3}}"),
    ("replica_groups", "[2,4]<=[2,4]T(0,1)", "[2,4]<=[8]"),          # canonical iota
    ("replica_groups", "[2,4]<=[1,8,1]T(2,1,0)", "[2,4]<=[8]"),
    ("replica_groups", "[4,6]<=[2,3,4]T(1,2,0)", "[4,6]<=[2,12]T(1,0)"),
    ("aliasing", "{{0, 0}: (0, {})}", "{{0,0}: (0, {})}"),
    ("input_output_alias", "{{}: (0, {}, must-alias)}", "{ {}: (0, {}, must-alias) }"),
    ("input_output_alias", "{ {1}: (0, {1}), {0}: (0, {}, may-alias) }",
     "{ {0}: (0, {}, may-alias), {1}: (0, {1}, may-alias) }"),
    ("buffer_donor", "{ (1, {}), (0, {1}), (0, {0}), (0, {0}) }",
     "{ (0, {0}), (0, {1}), (1, {}) }"),
    ("computation_layout", "{(f32[8,16,256]) -> f32[8,16]}",
     "{(f32[8,16,256]{2,1,0})->f32[8,16]{1,0}}"),
    ("computation_layout", "{(f32[2]{0},s32[])->s32[]}", "{(f32[2]{0}, s32[])->s32[]}"),
    ("shape", "f32[2,3]", "f32[2,3]{1,0}"),
]


@pytest.mark.parametrize("kind,text,printed", CANONICAL)
def test_canonical_printing(kind, text, printed):
    value = parse_value(kind, text)
    assert format_value(kind, value) == printed
    # XLA's output is stable (floats lose digits to %.6g, so compare text, not values).
    assert format_value(kind, parse_value(kind, printed)) == printed


# ---------------------------------------------------------------------------
# Values

def test_scalar_values():
    assert parse_value("bool", "true") is True
    assert parse_value("int", "-9223372036854775808") == -(1 << 63)
    assert parse_value("float", "0.1") == pytest.approx(0.1) and parse_value("float", "0.1") != 0.1
    assert parse_value("string", '"foo\\"bar"') == 'foo"bar'
    assert parse_value("string", '"\\303\\251"') == "\u00e9"
    assert format_value("string", "tab\there \u00e9") == '"tab\\there \\303\\251"'
    assert format_value("float", float("inf")) == "inf"


def test_window_value():
    w = parse_value("window", "{size=3x1 stride=2x1 pad=0_1x-1_0 lhs_dilate=1x2 rhs_reversal=1x0}")
    assert w == Window((WindowDim(3, 2, 0, 1, 1, 1, True), WindowDim(1, 1, -1, 0, 2, 1, False)))
    assert w.rank == 2
    assert format_value("window", Window((WindowDim(2, stride=2),))) == "{size=2 stride=2}"


def test_dim_labels_value():
    d = parse_value("dim_labels", "b01f_01io->b01f")
    assert d == ConvDimNumbers(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    d = parse_value("dim_labels", "?b01f_0?1io->b01?f")
    assert (d.input_batch, d.input_feature, d.input_spatial) == (1, 4, (2, 3))
    assert (d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial) == (3, 4, (0, 2))
    assert (d.output_batch, d.output_feature, d.output_spatial) == (0, 4, (1, 2))


def test_computation_values():
    assert parse_value("computation", "%add.1") == CompRef("add.1")
    inline = parse_value("computation", "{ x = f32[] parameter(0) }")
    assert inline == InlineComp(" x = f32[] parameter(0) ", 1)
    assert parse_value("computation_list", "{%a, {b = f32[] parameter(0)}}") == (
        CompRef("a"), InlineComp("b = f32[] parameter(0)", 6))
    assert parse_value("instruction_list", "{%a, b.1}") == ("a", "b.1")

    class Resolved:           # a resolved computation or instruction: anything with .name
        name = "fused"
    assert format_value("computation", Resolved()) == "%fused"
    assert format_value("computation_list", (Resolved(), CompRef("x"))) == "{%fused, %x}"
    assert format_value("instruction_list", (Resolved(), "y")) == "{%fused, %y}"


def test_replica_group_values():
    rg = parse_value("replica_groups", "[2,4]<=[4,2]T(1,0)")
    assert rg.groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert rg.iota == (2, 4, (4, 2), (1, 0))
    assert parse_value("replica_groups", "[2,4]<=[8]").groups == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert parse_value("replica_groups", "{{0,2},{1,3}}") == ReplicaGroups(((0, 2), (1, 3)))
    # Same groups, different printed form: different values (the form is remembered).
    assert parse_value("replica_groups", "{{0,1,2,3,4,5,6,7}}") != parse_value(
        "replica_groups", "[1,8]<=[8]")


def test_other_values():
    assert parse_value("slice", "{[0:4], [1:8:2]}") == ((0, 4, 1), (1, 8, 2))
    assert parse_value("padding", "0_1x2_3_4") == ((0, 1, 0), (2, 3, 4))
    assert parse_value("aliasing", "{{0}: (1, {}), {1}: (0, {0})}") == (((0,), 1, ()),
                                                                        ((1,), 0, (0,)))
    layout = parse_value("computation_layout", "{(f32[2]{0}, s32[])->(f32[2]{0})}")
    assert layout == ComputationLayout((parse_shape("f32[2]{0}"), parse_shape("s32[]")),
                                       parse_shape("(f32[2]{0})"))
    lit = parse_value("literal", "s32[2]{0} {1, 2}")
    assert lit == LiteralAttr(parse_shape("s32[2]{0}"), "s32[2]{0} {1, 2}")
    tup = parse_value("literal", "( s32[4]{0} {4, 128, 128, 3}, pred[] 1 )")
    assert str(tup.shape) == "(s32[4]{0}, pred[])"
    assert parse_value("verbatim", "{replicated}") == Verbatim("{replicated}")
    assert parse_value("precision_list", "{HIGHEST,default}") == ("highest", "default")
    assert parse_value("bool_list", "{true,false}") == (True, False)


def test_values_are_cached_and_hashable():
    a = parse_value("window", "{size=3x3 pad=1_1x1_1}")
    assert parse_value("window", "{size=3x3 pad=1_1x1_1}") is a
    keys = {parse_value(k, t) for k, t in ROUND_TRIPS}
    assert len(keys) > 50


def test_cache_is_bounded():
    kind = KINDS["int"]
    for i in range(10000):
        kind.parse(str(i))
    assert len(kind._cache) <= 4096


# ---------------------------------------------------------------------------
# Errors: XLA's messages, offsets into the value text.

ERRORS = [
    ("bool", "yes", "expects true or false", 0),
    ("int", "1.5", "unexpected text after attribute value", 1),
    ("int", "abc", "expects integer", 0),
    ("int", "99999999999999999999", "Failed to parse int literal", 0),
    ("float", "abc", "expects decimal or integer", 0),
    ("float", ".5", "expects decimal or integer", 0),
    ("float", "1e39", "value out of range for float", 0),
    ("float", "inf", "value out of range for float", 0),
    ("float", "1e999", "out of range for double", 0),
    ("string", "foo", "expects string", 0),
    ("string", '"\\q"', "Unknown escape sequence", 1),
    ("string", '"\\400"', "exceeds 0xff", 1),
    ("int_list", "{0,}", "expects integer", 3),
    ("int_list", "{0 1}", "expects '}'", 3),
    ("int_list", "0,1", "expects '{'", 0),
    ("computation", "f32", "expects computation name", 0),
    ("computation", "{ x = f32[] parameter(0)", "unbalanced", 0),
    ("instruction_list", "{}", "expects a instruction name", 1),
    ("slice", "{[0:4:1:2]}",
     "expects [start:limit:step] or [start:limit], but sees 4 elements.", 1),
    ("slice", "{[0]}", "but sees 1 elements", 1),
    ("window", "{size=3x3, pad=1_1x1_1}", "expects sub-attributes in window", 9),
    ("window", "{size =3x3}", "expects sub-attributes in window", 1),
    ("window", "{size=3x3 foo=1}", "unexpected attribute name: foo", 10),
    ("window", "{size=3x3 size=3x3}", "sub-attribute 'size=' already exists", 15),
    ("window", "{size=3x3 stride=2}", "expects 'stride=' has the same size as 'size='", 0),
    ("window", "{stride=2}", "expects 'stride=' has the same size as 'size='", 0),
    ("window", "{size=3x3 pad=1_1_0x1_1}",
     "expects padding_low and padding_high separated by '_'", 14),
    ("window", "{size=1_1}", "expects token type kInt or kDxD", 6),
    ("window", "{size=3 pad=3}", "expects window pad pattern", 12),
    ("window", "{size=3", "expected '}' to end window attribute", 7),
    ("window", "size=3", "expected '{' to start window attribute", 0),
    ("dim_labels", "b01f", "expects dim labels pattern", 0),
    ("dim_labels", "bb0f_01io->b01f", "expects unique lhs dimension numbers, but sees bb0f", 0),
    ("dim_labels", "b01f_0io->b01f",
     "input, kernel, and output must have same number of spatial dimensions, "
     "but got 2, 1, 2, respectively.", 0),
    ("dim_labels", "b2f_0io->b0f", "expects [0-2bf?] in lhs dimension numbers", 0),
    ("padding", "1x1", "expects padding config, e.g., '0_0_0x3_3_1'", 0),
    ("padding", "", "expects padding config", 0),
    ("direction", "eq", "expects comparison direction but sees: eq", 0),
    ("direction", "{", "expects comparison direction", 0),
    ("comparison_type", "PARTIAL", "expects comparison type but sees: PARTIAL", 0),
    ("fusion_kind", "kFoo",
     "expects fusion kind but sees: kFoo, error: Unknown fusion kind: kFoo", 0),
    ("fft_type", "fft", "expects fft type but sees: fft", 0),
    ("distribution", "rng_foo", "expects random distribution but sees: rng_foo", 0),
    ("rng_algorithm", "rng_foo",
     "expects random algorithm but sees: rng_foo, error: Unknown algorithm", 0),
    ("dot_algorithm", "ALG_DOT_BF16_BF16_F32",      # XLA matches names without the ALG_ prefix
     "expects algorithm but sees: ALG_DOT_BF16_BF16_F32, error: Unknown algorithm", 0),
    ("api_version", "API_VERSION_THAT_DOESNT_EXIST",
     "expects custom-call API version but sees: API_VERSION_THAT_DOESNT_EXIST, "
     "error: Unknown API version", 0),
    ("schedule", "SCHEDULE_SOON", "expects custom-call schedule but sees: SCHEDULE_SOON", 0),
    ("padding_type", "padding_same", "expects padding type but sees: padding_same", 0),
    ("precision_list", "{default,fast}", "expects precision but sees: fast", 9),
    ("shape", "f33[2]", "unknown primitive type", 0),
    ("shape_list", "{f32[2]{0} f32[3]}", "expects '}'", 11),
    ("replica_groups", "[2,4]<=[4,2]",
     "expected 'T(' to start sharding devices iota_transpose_perm", 12),
    ("replica_groups", "[2,4]<=[4,2]T(2,0)", "Out of range iota minor_to_major value 2", 14),
    ("replica_groups", "[2,4]0,1,2,3", "Caller expected iota tile assignment", 5),
    ("replica_groups", "[8]<=[8]", "2 dimensions", 0),
    ("replica_groups", "[2,4]<=[6]", "do not match", 0),
    ("replica_groups", "{{0,1},{2,a}}", "expects integer", 10),
    ("aliasing", "{{0}: 1}", "Expected format: <output_shape_index>: (<operand_index>, "
                             "<operand_shape_index>)", 6),
    ("aliasing", "{{0, a}: (0, {})}", "expects integer", 5),
    ("input_output_alias", "{ {0}: (0, {0}): {0, 1} }",
     "Expects '}' at the end of aliasing description", 15),
    ("input_output_alias", "{ {0}: (0, {}, maybe) }", "Unexpected aliasing kind", 15),
    ("buffer_donor", "{ (zero, {0}) }", "expects integer", 3),
    ("computation_layout", "{(f32[2]{0} s32[])->f32[]}", "Expects , between parameter shapes", 12),
    ("computation_layout", "{(f32[2]{0})f32[]}", "Expects -> before result shape", 12),
    ("computation_layout", "{(f32[2]{0})->f32[]",
     "Expects '}' at the end of computation layouts", 19),
    ("literal", "s32[2]{0}", "expects a literal value", 9),
    ("bool_list", "{true,1}", "expects true or false", 6),
]


@pytest.mark.parametrize("kind,text,message,offset", ERRORS)
def test_errors(kind, text, message, offset):
    with pytest.raises(AttrSyntaxError) as info:
        parse_value(kind, text)
    assert message in str(info.value)
    assert info.value.offset == offset


def test_error_is_a_value_error():
    assert issubclass(AttrSyntaxError, ValueError)
    with pytest.raises(KeyError):
        parse_value("no_such_kind", "1")


# ---------------------------------------------------------------------------
# Corpus sweeps

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "xla"

# Attribute name -> kind, as the op registry assigns them (None: decided by the value).
ATTR_KINDS = {
    "entry_computation_layout": "computation_layout", "is_scheduled": "bool",
    "replica_count": "int", "num_partitions": "int", "alias_passthrough_params": "bool",
    "input_output_alias": "input_output_alias", "buffer_donor": "buffer_donor",
    "allow_spmd_sharding_propagation_to_parameters": "bool_list_or_bool",
    "allow_spmd_sharding_propagation_to_output": "bool_list_or_bool",
    **dict.fromkeys((
        "dimensions", "dynamic_slice_sizes", "fft_length", "lhs_contracting_dims",
        "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims", "lhs_ragged_dims",
        "rhs_group_dims", "offset_dims", "collapsed_slice_dims", "start_index_map",
        "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
        "operand_batching_dims", "start_indices_batching_dims", "input_batching_dims",
        "scatter_indices_batching_dims"), "int_list"),
    **dict.fromkeys((
        "index", "iota_dimension", "index_vector_dim", "channel_id", "feature_group_count",
        "batch_group_count", "exponent_bits", "mantissa_bits", "k", "delta", "feature_index",
        "inferred_dimension", "cross_program_prefetch_index"), "int"),
    **dict.fromkeys((
        "is_stable", "indices_are_sorted", "unique_indices", "constrain_layout",
        "use_global_device_ids", "is_host_transfer", "custom_call_has_side_effect", "largest",
        "is_composite", "lower", "left_side", "unit_diagonal"), "bool"),
    **dict.fromkeys(("custom_call_target", "infeed_config", "outfeed_config",
                     "async_execution_thread", "execution_thread"), "string"),
    **dict.fromkeys(("to_apply", "calls", "condition", "body", "select", "scatter",
                     "true_computation", "false_computation"), "computation"),
    **dict.fromkeys(("metadata", "sharding", "frontend_attributes", "backend_config", "origin",
                     "statistics", "domain", "result_accuracy"), "verbatim"),
    "branch_computations": "computation_list", "called_computations": "computation_list",
    "control-predecessors": "instruction_list", "epsilon": "float",
    "source_target_pairs": "int_list_list", "replica_groups": "replica_groups",
    "slice": "slice", "window": "window", "dim_labels": "dim_labels", "padding": "padding",
    "direction": "direction", "type": "comparison_type", "kind": "fusion_kind",
    "fft_type": "fft_type", "distribution": "distribution", "operand_precision": "precision_list",
    "api_version": "api_version", "schedule": "schedule", "padding_type": "padding_type",
    "transpose_a": "transpose_a", "outfeed_shape": "shape",
    "operand_layout_constraints": "shape_list", "output_to_operand_aliasing": "aliasing",
    "literal": "literal", "parameter_replication": "bool_list", "sparsity": "sparsity",
    "slice_sizes": None, "algorithm": None,
}


def kind_for(name: str, value: str) -> str | None:
    kind = ATTR_KINDS.get(name, "")
    if kind is None:
        if name == "slice_sizes":
            return "int_list_list" if value.startswith("{{") else "int_list"
        return "rng_algorithm" if value.lower().startswith("rng") else "dot_algorithm"
    return kind or None


_STR = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ATTR = re.compile(r",\s*([A-Za-z_][A-Za-z0-9_.\-]*)=")


def _value_end(line: str, j: int) -> int | None:
    depth = 0
    while j < len(line):
        ch = line[j]
        if ch == '"':
            m = _STR.match(line, j)
            if not m:
                return None
            j = m.end()
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth -= 1
            if depth < 0:
                break
        elif ch == "," and depth == 0:
            break
        j += 1
    return j if depth == 0 else None


def iter_attrs(line: str):
    """Top-level `, name=value` pairs of one HLO text line (values ending on that line)."""
    depth, i = 0, 0
    while i < len(line):
        ch = line[i]
        if ch == '"':
            m = _STR.match(line, i)
            if not m:
                return
            i = m.end()
            continue
        if line.startswith("/*", i):
            i = line.find("*/", i + 2) + 2
            if i == 1:
                return
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            m = _ATTR.match(line, i)
            if m:
                end = _value_end(line, m.end())
                if end is None:
                    return
                value = line[m.end():end].rstrip()
                if value:
                    yield m.group(1), value
                i = end
                continue
        i += 1


def corpus_attrs(file_name: str):
    for line in (CORPUS / file_name).read_text().splitlines():
        if not line.lstrip().startswith("//"):
            for name, value in iter_attrs(line):
                kind = kind_for(name, value)
                if kind is not None:
                    yield name, kind, value


def manifest():
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("XLA corpus (../shared) not available")
    rows = [line.split("\t") for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]]
    return [(r[0], r[3], r[4]) for r in rows]


def test_corpus_round_trip_files_print_back_exactly():
    """Files whose printer output must equal their text: every attribute round-trips."""
    counts, failures = collections.Counter(), []
    for name, _, notes in manifest():
        if "round-trip: printer output must equal this text" not in notes:
            continue
        for attr, kind, value in corpus_attrs(name):
            counts[kind] += 1
            try:
                printed = format_value(kind, parse_value(kind, value))
            except AttrSyntaxError as e:
                printed = f"error: {e}"
            if printed != value:
                failures.append((name, attr, value, printed))
    assert not failures, failures[:10]
    assert sum(counts.values()) >= 300 and counts["computation_layout"] >= 100
    assert {"window", "dim_labels", "slice", "padding", "aliasing", "literal", "float",
            "shape_list", "computation_list", "instruction_list"} <= set(counts)


def test_corpus_short_round_trip_files():
    """ShortParsable round trips (names printed without %): all other kinds exact."""
    skip = {"computation", "computation_list", "instruction_list"}
    failures, total = [], 0
    for name, _, notes in manifest():
        if "round-trip (short" not in notes:
            continue
        for attr, kind, value in corpus_attrs(name):
            if kind not in skip:
                total += 1
                printed = format_value(kind, parse_value(kind, value))
                if printed != value:
                    failures.append((name, attr, value, printed))
    assert not failures, failures[:10]
    assert total >= 150


def test_corpus_parse_ok_files_parse_and_reprint_stably():
    counts, failures = collections.Counter(), []
    for name, expect, _ in manifest():
        if expect != "parse_ok":
            continue
        for attr, kind, value in corpus_attrs(name):
            try:
                parsed = parse_value(kind, value)
                if parse_value(kind, format_value(kind, parsed)) != parsed:
                    failures.append((name, attr, value, "not idempotent"))
            except AttrSyntaxError as e:
                failures.append((name, attr, value, str(e)))
            counts[kind] += 1
    assert not failures, failures[:10]
    assert sum(counts.values()) > 10000
    assert {"replica_groups", "int_list_list", "input_output_alias", "dot_algorithm",
            "rng_algorithm", "distribution", "shape"} <= set(counts)


def test_corpus_parse_error_messages():
    """Where an attribute is what XLA rejects, the message contains XLA's text."""
    checked = 0
    for name, expect, notes in manifest():
        if expect != "parse_error":
            continue
        wanted = re.findall(r'error contains: "(.*?)"(?: \||$)', notes)
        messages = []
        for _, kind, value in corpus_attrs(name):
            try:
                parse_value(kind, value)
            except AttrSyntaxError as e:
                messages.append(str(e))
        if messages and wanted:
            checked += 1
            assert any(w in m for w in wanted for m in messages), (name, wanted, messages)
    assert checked >= 7
