"""hloc.ir.literal: HLO literal text <-> NumPy values, checked against XLA's behaviour.

Expected strings below were produced by XLA itself (jaxlib 0.10.2's parser and printer)
unless a comment says otherwise. The corpus sweep runs when ../shared/corpus exists.
"""
from __future__ import annotations

import csv
import math
import re
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from hloc.ir.dtypes import DTYPES
from hloc.ir.literal import ElidedFiller, Literal, LiteralError, fill_elided, literal_from_array
from hloc.syntax.literal_parser import parse_literal
from hloc.syntax.literal_printer import (format_constant, format_scalar, literal_text,
                                         literal_to_string)
from hloc.ir.shape import array, parse_shape, tuple_shape

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
XLA_CORPUS = SHARED / "corpus" / "xla"
WILD_CORPUS = SHARED / "corpus" / "wild"


def roundtrip(shape_text: str, text: str, large: bool = True) -> str:
    shape = parse_shape(shape_text)
    return format_constant(shape, parse_literal(text, shape).value, print_large=large)


def error_of(shape_text: str, text: str) -> tuple[int, str]:
    with pytest.raises(LiteralError) as info:
        parse_literal(text, parse_shape(shape_text))
    return info.value.offset, str(info.value)


# ---------------------------------------------------------------------------
# Parsing and printing, value by value

@pytest.mark.parametrize("shape,text,printed", [
    ("f32[]", "42", "42"),
    ("f32[]", "-1.5e-3", "-0.0015"),
    ("f32[]", "5.", "5"),
    ("f32[]", "-.5", "-0.5"),
    ("f32[]", "1E+3", "1000"),
    ("f32[]", "00012", "12"),
    ("f32[]", "-0", "0"),            # `-0` is an integer token: int64 0
    ("f32[]", "-0.0", "-0"),
    ("f32[]", "0.1", "0.1"),
    ("f32[]", "0.3", "0.3"),
    ("f32[]", "1e10", "1e+10"),
    ("f32[]", "16777217", "16777216"),
    ("f32[]", "3.4028235e38", "3.40282347e+38"),
    ("f32[]", "1e-50", "0"),
    ("f32[]", "18446744073709551615", "-1"),   # u64 bit-cast to int64, then to double
    ("f64[]", "0.1", "0.1"),
    ("f64[]", "1e100", "1e+100"),
    ("f64[]", "1e-320", "9.99988867182683e-321"),
    ("f64[]", "1.7976931348623157e308", "1.7976931348623157e+308"),
    ("s64[]", "18446744073709551615", "-1"),
    ("s64[]", "9223372036854775808", "-9223372036854775808"),
    ("u64[]", "18446744073709551615", "18446744073709551615"),
    ("u64[]", "-1", "18446744073709551615"),
    ("s8[]", "18446744073709551615", "-1"),
    ("s32[]", "-00012", "-12"),
    ("pred[]", "true", "true"),
    ("pred[]", "false", "false"),
    ("pred[]", "2", "true"),
    ("pred[]", "-1", "true"),
    ("pred[3]", "{true 0 5}", "{1, 0, 1}"),
    ("bf16[4]", "{0.1, 1e10, 3.14159, 100000}", "{0.1001, 9.999e+09, 3.141, 9.984e+04}"),
    ("f16[3]", "{0.1, 3.14159, 65504}", "{0.099976, 3.1406, 65504}"),
    ("f16[]", "65519", "65504"),
    ("f16[]", "1e-8", "0"),
    ("f8e4m3fn[3]", "{0.1,0.3,448}", "{0.102, 0.312, 448}"),
    ("f8e4m3fn[]", "464", "448"),
    ("f8e5m2[3]", "{0.1,0.3,57344}", "{0.094, 0.31, 5.7e+04}"),
    ("f8e8m0fnu[4]", "{3, 1e-40, 1.7e38, 0.3}", "{4, 5.9e-39, 1.7e+38, 0.25}"),
    ("f4e2m1fn[3]", "{7, inf, -0.0}", "{6, 6, -0}"),
    ("f8e4m3b11fnuz[]", "-0", "0"),
    ("f8e4m3fnuz[]", "-0.0", "0"),
    ("s4[2]", "{-8, 7}", "{-8, 7}"),
    ("u4[2]", "{0, 15}", "{0, 15}"),
    ("s2[2]", "{-2, 1}", "{-2, 1}"),
    ("u2[2]", "{0, 3}", "{0, 3}"),
    ("s1[2]", "{-1, 0}", "{-1, 0}"),
    ("u1[2]", "{0, 1}", "{0, 1}"),
])
def test_scalars_and_types(shape, text, printed):
    assert roundtrip(shape, text) == printed


def test_double_rounding_matches_xla():
    # Eigen converts double -> float -> half/bfloat16 (rounds twice) ...
    assert roundtrip("f16[]", "1.00048828125000090949") == "1"
    assert roundtrip("bf16[]", "1.00390625000000090949") == "1"
    # ... while ml_dtypes' float8/float4 round the double directly.
    tie_plus = "1.06250000000090949470177292823791503906"
    assert roundtrip("f8e4m3fn[]", tie_plus) == "1.12"
    assert roundtrip("f8e4m3[]", tie_plus) == "1.12"
    assert roundtrip("f8e8m0fnu[]", "3.0000000000018189894035458564758300781") == "4"
    assert roundtrip("f4e2m1fn[]", "1.25000000000090949470177292823791503906") == "1.5"
    # f8e8m0fnu below 2^-126 follows ml_dtypes: (0, 2^-127] -> 2^-127, else 2^-126.
    assert roundtrip("f8e8m0fnu[3]", "{8.816207622956423e-39, 5.8e-39, 1e-300}") == \
        "{1.2e-38, 5.9e-39, 5.9e-39}"


@pytest.mark.parametrize("shape,text,printed", [
    ("f32[]", "inf", "inf"),
    ("f32[]", "-inf", "-inf"),
    ("f32[]", "nan", "nan"),
    ("f32[]", "-nan", "-nan"),
    ("f32[]", "nan(0x7f)", "nan(0x7f)"),
    ("f32[]", "-nan(0x1)", "-nan(0x1)"),
    ("f32[]", "nan(0x400000)", "nan"),            # the quiet bit is no payload
    ("f32[]", "nan(0x7fffff)", "nan(0x7fffff)"),
    ("f64[]", "nan(0xfffffffffffff)", "nan(0xfffffffffffff)"),
    ("f64[]", "nan(0x8000000000000)", "nan"),
    ("f16[]", "nan(0x1ff)", "nan(0x1ff)"),
    ("f16[]", "nan(0x200)", "nan"),
    ("bf16[]", "nan(0x7f)", "nan(0x7f)"),
    ("f8e5m2[]", "-nan(0x1)", "-nan(0x1)"),
    ("f8e4m3[]", "nan(0x7)", "nan(0x7)"),
    ("f8e3m4[]", "nan(0xf)", "nan(0xf)"),
    ("f8e4m3fn[4]", "{inf, -inf, nan, -nan}", "{nan, -nan, nan, -nan}"),
    ("f8e5m2fnuz[3]", "{nan, -nan, inf}", "{-nan, -nan, -nan}"),   # the single NaN is 0x80
    ("f8e8m0fnu[3]", "{nan, -nan, inf}", "{nan, nan, nan}"),
    ("f4e2m1fn[]", "nan", "-0"),
    ("f32[2]", "{nan(0x1) nan(0x3fffff)}", "{nan(0x1), nan(0x3fffff)}"),
])
def test_special_floats_and_nan_payloads(shape, text, printed):
    assert roundtrip(shape, text) == printed


def test_nan_payload_bits():
    v = parse_literal("{nan(0x1), -nan, nan(0x3fffff)}", parse_shape("f32[3]")).value
    assert v.view(np.uint32).tolist() == [0x7F800001, 0xFFC00000, 0x7FBFFFFF]
    v = parse_literal("nan(0x1)", parse_shape("f64[]")).value
    assert int(v.reshape(1).view(np.uint64)[0]) == 0x7FF0000000000001


@pytest.mark.parametrize("shape,text,offset,message", [
    ("s8[]", "128", 0,
     "value 128 is out of range for literal's primitive type S8 namely [-128, 127]."),
    ("s8[3]", "{1, 200, 300}", 4,
     "value 200 is out of range for literal's primitive type S8 namely [-128, 127]."),
    ("u8[]", "-1", 0, "value -1 is out of range for literal's primitive type U8 namely [0, 255]."),
    ("u32[]", "-1", 0,
     "value -1 is out of range for literal's primitive type U32 namely [0, 4294967295]."),
    ("s32[]", "2147483648", 0, "value 2147483648 is out of range for literal's primitive type "
     "S32 namely [-2147483648, 2147483647]."),
    ("s4[]", "8", 0, "value 8 is out of range for literal's primitive type S4 namely [-8, 7]."),
    ("u2[]", "4", 0, "value 4 is out of range for literal's primitive type U2 namely [0, 3]."),
    ("s1[]", "1", 0, "value 1 is out of range for literal's primitive type S1 namely [-1, 0]."),
    ("f16[]", "65520", 0,
     "value 65520 is out of range for literal's primitive type F16 namely [-65504, 65504]."),
    ("f32[]", "1e39", 0, "value 1e+39 is out of range for literal's primitive type F32 namely "
     "[-3.40282e+38, 3.40282e+38]."),
    ("f32[]", "3.4028236e38", 0, "value 3.40282e+38 is out of range for literal's primitive "
     "type F32 namely [-3.40282e+38, 3.40282e+38]."),
    ("bf16[]", "1e100", 0, "value 1e+100 is out of range for literal's primitive type BF16 "
     "namely [-3.38953e+38, 3.38953e+38]."),
    ("f8e4m3fn[]", "500", 0,
     "value 500 is out of range for literal's primitive type F8E4M3FN namely [-448, 448]."),
    ("f8e8m0fnu[]", "0", 0, "value 0 is out of range for literal's primitive type F8E8M0FNU "
     "namely [5.87747e-39, 1.70141e+38]."),
    ("c64[]", "(1e100, 1)", 0, "real part 1e+100 is out of range for literal's primitive type "
     "C64, namely [-3.40282e+38, 3.40282e+38]."),
    ("c64[]", "(1, -1e100)", 0, "imaginary part -1e+100 is out of range for literal's "
     "primitive type C64, namely [-3.40282e+38, 3.40282e+38]."),
    ("f32[]", "1e400", 0,
     "Constant is out of range for double (+/-1.79769e+308) and so is unparsable."),
    ("f64[2]", "{1, 1e400}", 4,
     "Constant is out of range for double (+/-1.79769e+308) and so is unparsable."),
    ("f32[]", "nan(0x800000)", 0, "tries to set NaN payload 0x800000 to a literal in shape "
     "f32[] at linear index 0, but the NaN payload is out of range (0x7fffff)"),
    ("bf16[1]", "{nan(0x80)}", 1, "tries to set NaN payload 0x80 to a literal in shape bf16[1] "
     "at linear index 0, but the NaN payload is out of range (0x7f)"),
    ("f8e5m2[]", "nan(0x4)", 0, "tries to set NaN payload 0x4 to a literal in shape f8e5m2[] at "
     "linear index 0, but the NaN payload is out of range (0x3)"),
    ("f8e4m3fn[]", "nan(0x1)", 0, "tries to set NaN payload 0x1 to a literal in shape "
     "f8e4m3fn[] at linear index 0, but f8e4m3fn does not support payloads"),
    ("c64[]", "(nan(0x800000), 1)", 0, "tries to set NaN payload 0x800000 to a literal in shape "
     "c64[] at linear index 0, but the NaN payload is out of range (0x7fffff)"),
])
def test_range_errors(shape, text, offset, message):
    assert error_of(shape, text) == (offset, message)


@pytest.mark.parametrize("shape,text,offset,message", [
    ("f32[]", "+inf", 0, "unexpected token type in a literal"),
    ("f32[]", ".5", 0, "unexpected token type in a literal"),
    ("f32[]", "0x1F", 0, "unexpected token type in a literal"),
    ("f32[]", "1x2", 0, "unexpected token type in a literal"),
    ("f32[]", "nan(0x0)", 0, "unexpected token type in a literal"),
    ("f32[]", "nan(1)", 0, "unexpected token type in a literal"),
    ("f32[]", "nan(0x10000000000000)", 0, "unexpected token type in a literal"),
    ("f32[]", "", 0, "unexpected token type in a literal"),
    ("f32[]", "1 2", 2, "expects ')' after constant literal"),
    ("f32[]", "1e5x", 3, "expects ')' after constant literal"),
    ("f32[]", "nan (0x1)", 4, "expects ')' after constant literal"),
    ("f32[]", "{1}", 0, "expects nested array in rank 0, but sees larger"),
    ("f32[]", "{...}", 0, "expects nested array in rank 0, but sees larger"),
    ("f32[2]", "{{1, 2}}", 1, "expects nested array in rank 1, but sees larger"),
    ("f32[2,2]", "{1, 2, 3, 4}", 1, "expects nested array in rank 2, but sees 1"),
    ("f32[2,2]", "{{1,2},3,4}", 7, "expects nested array in rank 2, but sees 1"),
    ("f32[2]", "{1, 2, 3}", 7, "expects 2 elements on the minor-most dimension, but sees more"),
    ("f32[3]", "{1, 2}", 5, "expects 3 elements in the []th element, but sees 2"),
    ("f32[2,2]", "{{1,2,3},{4}}", 6,
     "expects 2 elements on the minor-most dimension, but sees more"),
    ("f32[2,2]", "{{1, 2}, {3, 4}, {5, 6}}", 17,
     "expects 2 elements in the []th element, but sees more"),
    ("f32[2,3]", "{{1,2,3},{4,5}}", 13, "expects 3 elements in the [1]th element, but sees 2"),
    ("f32[2,0]", "{}", 1, "expects 2 elements in the []th element, but sees 0"),
    ("f32[2]", "{1, 2", 5, "unexpected token type in a literal"),
    ("f32[2]", "{1, 2} }", 7, "expects ')' after constant literal"),
    ("f32[2]", "{1 /* unterminated", 3, "unexpected token type in a literal"),
    ("f32[2,3]", "{{...}, {...}}", 2, "expects `...` at nest level 1, but sees it at nest level 2"),
    ("f32[0]", "5", 0, "expects nested array in rank 1, but sees 0"),
    ("s32[]", "1.5", 0, "expects integer for primitive type: S32"),
    ("pred[2]", "{1, 1.5}", 4, "expects integer for primitive type: PRED"),
    ("s32[]", "inf", 0, "expects integer for primitive type: S32"),
    ("f32[]", "(1, 2)", 0,
     "unexpected '(' in literal. Parens are only valid for complex literals"),
    ("c64[]", "1", 0, "unsupported primitive type C64"),
    ("c64[]", "(1 2)", 3, "expect comma after real part of complex literal"),
    ("c64[]", "(1, 2, 3)", 5, "expect ')' after complex number"),
    ("c64[]", "(true, 1)", 1, "expects decimal or integer"),
    ("c64[1]", "{(1,2), (3,4)}", 8,
     "expects 1 elements on the minor-most dimension, but sees more"),
    ("(f32[], s32[2])", "{...}", 0, "expects '(' in front of tuple elements"),
    ("(f32[], s32[2])", "(1, {2, 3},)", 10, "expects ')' at the end of the tuple with 2elements"),
    ("(f32[], s32[2])", "(1)", 2, "expects ',' to separate tuple elements"),
])
def test_syntax_errors(shape, text, offset, message):
    assert error_of(shape, text) == (offset, message)


def test_errors_on_values_xla_would_crash_on():
    # XLA CHECK-fails (aborts) on these; we report an error instead.
    assert error_of("s32[]", "true")[1] == "expects integer for primitive type: S32"
    assert error_of("f32[2]", "{1, true}")[1] == \
        "expect floating point value for primitive type: F32"
    assert "token[]" in error_of("token[]", "{}")[1]
    assert "opaque" in error_of("opaque[]", "{}")[1]
    assert error_of("(f32[], token[])", "(1, {})")[0] == 4
    # XLA accepts `()` for a non-empty tuple shape and builds nil elements.
    assert error_of("(f32[], s32[2])", "()") == (1, "expects 2 tuple elements, but sees 0")


def test_first_recorded_error_wins():
    # XLA records "expects ',' ..." without stopping; it is the first error it reports.
    assert error_of("(f32[], s32[2])", "(1)") == (2, "expects ',' to separate tuple elements")
    # A value error comes before a later structural one.
    assert error_of("s8[2]", "{300, 1, 2}")[1].startswith("value 300 is out of range")
    assert error_of("f32[2]", "{1, 2, 3}")[1].startswith("expects 2 elements on the minor-most")


def test_optional_commas_comments_and_whitespace():
    assert roundtrip("f32[2]", "{1 2}") == "{1, 2}"
    assert roundtrip("f32[2]", "{1, 2,}") == "{1, 2}"
    assert roundtrip("f32[2]", "{,1,,2,}") == "{1, 2}"
    assert roundtrip("f32[2]", "{1/*x*/, 2}") == "{1, 2}"
    assert roundtrip("f32[2]", "{1,//c\n2}") == "{1, 2}"
    assert roundtrip("f32[2,2]", "{\n  { 1, 2 },\r\n\t{ 3, 4 }\n}") == "{ { 1, 2 }, { 3, 4 } }"
    assert roundtrip("f32[2]", "{1 /* } */ 2}") == "{1, 2}"


def test_unbraced_value_for_an_array_sets_the_first_element():
    # XLA records "expects nested array in rank 1, but sees 0" but does not stop.
    assert roundtrip("f32[2]", "5") == "{5, 0}"
    assert roundtrip("f32[2,3]", "5") == "{ { 5, 0, 0 }, { 0, 0, 0 } }"


def test_complex():
    assert roundtrip("c64[2]", "{(1, 2), (3.5, -4)}") == "{(1, 2), (3.5, -4)}"
    assert roundtrip("c64[2]", "{(1,2)(3,4)}") == "{(1, 2), (3, 4)}"
    assert roundtrip("c128[]", "(inf, 0)") == "(inf, 0)"
    assert roundtrip("c64[]", "(1, -inf)") == "(1, -inf)"
    assert roundtrip("c64[2,2]", "{{(1,2),(3,4)},{(5,6),(7,8)}}") == \
        "{ { (1, 2), (3, 4) }, { (5, 6), (7, 8) } }"
    # XLA's SetValueInLiteralHelper applies the real part's NaN to the imaginary part too.
    assert roundtrip("c64[]", "(nan, 1)") == "(nan, nan)"
    assert roundtrip("c64[]", "(nan(0x5), 1)") == "(nan(0x5), nan(0x5))"
    assert roundtrip("c64[]", "(1, nan(0x800000))") == "(1, nan)"
    v = parse_literal("{(1, 2), (3.5, -4)}", parse_shape("c64[2]")).value
    assert v.dtype == np.complex64 and v.tolist() == [1 + 2j, 3.5 - 4j]


def test_tuples():
    shape = parse_shape("(f32[], (s32[2], pred[]))")
    lit = parse_literal("(1, ({2, 3}, true))", shape)
    assert isinstance(lit.value, tuple) and lit.value[0] == np.float32(1)
    assert lit.value[1][0].tolist() == [2, 3] and bool(lit.value[1][1]) is True
    assert format_constant(shape, lit.value) == "{...}"
    assert format_constant(shape, lit.value, print_large=True) == "( 1, ( {2, 3}, true ) )"
    assert roundtrip("(f32[], s32[2])", "(1 {2, 3})") == "( 1, {2, 3} )"
    assert roundtrip("()", "()") == "(  )"
    assert roundtrip("(f32[2,1]{1,0}, f32[2]{0})", "( { {1}, {2} }, {2, 42} )") == \
        "( { {1}, {2} }, {2, 42} )"


@pytest.mark.parametrize("shape,text,printed", [
    ("f32[0]", "{}", "{}"),
    ("f32[2,0]", "{ {}, {} }", "{ {}, {} }"),
    ("f32[0,2]", "{}", "{  }"),
    ("f32[1,0]", "{ {} }", "{ {} }"),
    ("f32[2,0,4,3]", "{ { /*i0=0*/ }, { /*i0=1*/ } }", "{ { /*i0=0*/ }, { /*i0=1*/ } }"),
    ("f32[0,0,0,0]", "{}", "{  }"),
    ("f32[1,1,0,1]", "{{{}}}", "{ { /*i0=0*/ { /*i1=0*/ } } }"),
    ("f32[1,2]", "{{1,2}}", "{ { 1, 2 } }"),
    ("f32[2,1]", "{{1},{2}}", "{ {1}, {2} }"),
    ("f32[1,1,1,1]", "{{{{1}}}}", "{ { /*i0=0*/ { /*i1=0*/ {1} } } }"),
    ("f32[1,1,1,2,1]", "{{{{{1},{2}}}}}", "{ { /*i0=0*/ { /*i1=0*/ { /*i2=0*/ {1}, {2} } } } }"),
    ("s32[2,2,2]", "{{{1,2},{3,4}},{{5,6},{7,8}}}",
     "{ { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } }"),
])
def test_nesting_and_empty_arrays(shape, text, printed):
    assert roundtrip(shape, text) == printed


def test_format_constant_inline_limit():
    shape = array("s32", [10])
    assert format_constant(shape, np.arange(10, dtype=np.int32)) == "{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}"
    shape = array("s32", [11])
    assert format_constant(shape, np.arange(11, dtype=np.int32)) == "{...}"
    large = format_constant(shape, np.arange(11, dtype=np.int32), print_large=True)
    assert large.startswith("{0, 1, 2")
    assert format_constant(array("pred", [2, 3]), np.array([[0, 1, 0], [1, 0, 1]], bool)) == \
        "{ { 0, 1, 0 }, { 1, 0, 1 } }"
    assert format_constant(array("pred", []), np.array(True)) == "true"


@pytest.mark.parametrize("name,x,text", [
    ("f32", 0.1, "0.1"), ("f32", 1 / 3, "0.333333343"), ("f32", 1e10, "1e+10"),
    ("f32", -0.0, "-0"), ("f32", 1.4e-45, "1.4013e-45"), ("f32", math.inf, "inf"),
    ("f32", -math.nan, "-nan"), ("f64", 0.1, "0.1"), ("f64", 1 / 3, "0.33333333333333331"),
    ("bf16", 0.1, "0.1001"), ("f16", 0.1, "0.099976"), ("f8e4m3fn", 0.1, "0.102"),
    ("s32", -7, "-7"), ("u64", 2**64 - 1, "18446744073709551615"), ("s4", -8, "-8"),
    ("pred", True, "true"), ("pred", 0, "false"), ("c64", 1 + 2j, "(1, 2)"),
    ("c128", complex(0.1, -1e300), "(0.1, -1e+300)"), ("c128", 1 / 3, "(0.33333333333333331, 0)"),
])
def test_format_scalar(name, x, text):
    dt = DTYPES[name]
    assert format_scalar(dt, np.array(x).astype(dt.np)) == text


@pytest.mark.parametrize("name", ["f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4",
                                  "f8e5m2fnuz", "f8e4m3fnuz", "f4e2m1fn", "f16", "bf16"])
def test_narrow_floats_round_trip_bit_exact(name):
    dt = DTYPES[name]
    n = 16 if dt.bits == 4 else 1 << dt.bits
    raw = np.arange(n, dtype=np.uint16 if dt.bits == 16 else np.uint8)
    if dt.bits == 16:   # every 5th pattern plus all NaN/inf patterns keeps this quick
        top = (raw & 0x7C00) == 0x7C00 if name == "f16" else (raw & 0x7F80) == 0x7F80
        raw = raw[(raw % 5 == 0) | top]
        n = raw.size
    vals = raw.view(dt.np) if dt.bits >= 8 else raw.astype(np.uint8).view(dt.np)
    vals = vals.astype(np.float32).astype(dt.np) if dt.bits < 8 else vals
    shape = array(name, [n])
    text = format_constant(shape, vals, print_large=True)
    back = parse_literal(text, shape).value
    ubits = np.uint16 if dt.bits == 16 else np.uint8
    # `-0` prints as "-0", which XLA lexes as the integer 0: the sign is lost (as in XLA).
    expect = np.where((vals.astype(np.float32) == 0), np.zeros_like(vals), vals)
    assert back.view(ubits).tolist() == expect.view(ubits).tolist()


# ---------------------------------------------------------------------------
# Elided constants `{...}`

# What XLA:CPU (jaxlib 0.10.2) prints for these constants, parsed in this order in a fresh
# process: its fill counters are process-wide, so each constant continues the sequence.
FILL_SEQUENCE = [
    ("f32[2,3]", "{...}",
     "{ { 0, 1.4013e-45, 2.8026e-45 }, { 4.2039e-45, 5.60519e-45, 7.00649e-45 } }"),
    ("pred[7]", "{...}", "{0, 0, 1, 0, 0, 0, 0}"),
    ("s4[6]", "{...}", "{7, 3, 4, 0, 0, 0}"),
    ("bf16[5]", "{...}", "{7.347e-40, 2.501e-35, 8.265e-40, 0, 0}"),
    ("c64[3]", "{...}", "{(1.4013e-44, 1.54143e-44), (1.68156e-44, 1.82169e-44), "
                        "(1.96182e-44, 2.10195e-44)}"),
    ("u8[9]", "{...}", "{16, 0, 7, 0, 17, 0, 0, 0, 0}"),
    ("(f32[], s32[5])", "(1, {...})", "( 1, {18, 19, 20, 21, 22} )"),
    ("s2[13]", "{...}", "{-1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}"),
    ("f4e2m1fn[7]", "{...}", "{-1, -0.5, -1, -1.5, 0, 0, 0}"),
    ("f8e4m3fn[11]", "{...}", "{0.0859, 0, 0.0234, 0.0254, 0.0273, 0, 0, 0, 0, 0, 0}"),
]


def test_elided_fill_matches_xla_sequence():
    filler = ElidedFiller()
    for shape_text, text, printed in FILL_SEQUENCE:
        shape = parse_shape(shape_text)
        lit = parse_literal(text, shape, filler=filler)
        assert lit.elided and lit.text == text and literal_text(lit) == text
        assert format_constant(shape, lit.value, print_large=True) == printed, shape_text


def test_elided_fill_is_deterministic():
    shape = parse_shape("f32[4,5]")
    a = parse_literal("{...}", shape).value
    b = parse_literal("{ ... }", shape).value
    assert a.tobytes() == b.tobytes()
    assert a.view(np.uint32).reshape(-1).tolist() == list(range(20))
    assert fill_elided(shape).tobytes() == a.tobytes()
    # 9 bytes: words 0 and 1 masked to 0/1 per byte, then byte counter 0 written at 9 // 4 = 2
    assert fill_elided(array("pred", [9])).tolist() == [False] * 4 + [True] + [False] * 4


def test_elided_quirks():
    # `{1, ...}`: the fill overwrites what came before; `{..., 1}` writes element 0 after it.
    shape = parse_shape("f32[2,3]")
    assert parse_literal("{1, ...}", shape).value.tobytes() == fill_elided(shape).tobytes()
    after = parse_literal("{..., 1}", shape).value.reshape(-1)
    assert after[0] == 1 and after[1:].tobytes() == fill_elided(shape).reshape(-1)[1:].tobytes()
    assert error_of("f32[3]", "{..., 1}") == (6, "expects 3 elements on the minor-most dimension, "
                                              "but sees more")


# ---------------------------------------------------------------------------
# Literal objects

def test_literal_object_and_to_text():
    shape = parse_shape("f32[2,2]{1,0}")
    lit = parse_literal("{ {1, 2}, {3, 4} }", shape)
    assert isinstance(lit, Literal) and lit.shape is shape and not lit.elided
    assert lit.value.dtype == np.float32 and lit.value.shape == (2, 2)
    assert literal_text(lit) == "{ {1, 2}, {3, 4} }"        # original text kept verbatim
    new = literal_from_array(shape, lit.value * 2)
    assert new.text is None and literal_text(new) == "{ { 2, 4 }, { 6, 8 } }"
    big = literal_from_array(array("f32", [20]), np.zeros(20))
    assert big.value.dtype == np.float32 and literal_text(big) == "{...}"
    assert literal_from_array(array("s32", [3]), 7).value.tolist() == [7, 7, 7]
    tup = literal_from_array(tuple_shape([array("f32", []), array("s32", [2])]), (1.5, [1, 2]))
    assert literal_text(tup) == "{...}" and literal_text(tup, print_large=True) == "( 1.5, {1, 2} )"
    with pytest.raises(LiteralError):
        literal_from_array(array("f32", [3]), np.zeros(4))


def test_sub_byte_values_use_ml_dtypes():
    v = parse_literal("{-8, 7, 0}", parse_shape("s4[3]")).value
    assert v.dtype == ml_dtypes.int4 and v.astype(int).tolist() == [-8, 7, 0]
    v = parse_literal("{1, 2, 3}", parse_shape("u2[3]")).value
    assert v.dtype == ml_dtypes.uint2 and v.astype(int).tolist() == [1, 2, 3]
    v = parse_literal("{0.5, -6}", parse_shape("f4e2m1fn[2]")).value
    assert v.dtype == ml_dtypes.float4_e2m1fn and v.astype(float).tolist() == [0.5, -6]


# ---------------------------------------------------------------------------
# Literal::ToString

def test_literal_to_string_shapes():
    assert literal_to_string(array("f32", []), np.float32(1)) == "f32[] 1"
    assert literal_to_string(array("pred", []), np.True_) == "pred[] true"
    assert literal_to_string(array("s32", [2]), np.array([1, 2])) == "s32[2] {1, 2}"
    assert literal_to_string(array("pred", [3]), np.array([1, 0, 1], bool)) == "pred[3] {1, 0, 1}"
    assert literal_to_string(array("f32", [0]), np.zeros(0)) == "f32[0] {}"
    assert literal_to_string(array("f32", [2, 2]), np.full((2, 2), 2)) == \
        "f32[2,2] {\n  { 2, 2 },\n  { 2, 2 }\n}"
    assert literal_to_string(array("f32", [2, 0]), np.zeros((2, 0))) == "f32[2,0] {\n  {},\n  {}\n}"
    assert literal_to_string(array("f32", [2, 3, 2]), np.arange(12).reshape(2, 3, 2) * 0.1) == (
        "f32[2,3,2] {\n{\n  { 0, 0.1 },\n  { 0.2, 0.3 },\n  { 0.4, 0.5 }\n},\n"
        "{\n  { 0.6, 0.7 },\n  { 0.8, 0.9 },\n  { 1, 1.1 }\n}\n}")
    assert literal_to_string(array("f32", [2, 0, 3]), np.zeros((2, 0, 3))) == \
        "f32[2,0,3] {\n{\n\n},\n{\n\n}\n}"
    assert literal_to_string(array("f32", [2, 1, 2, 2]), np.arange(8).reshape(2, 1, 2, 2)) == (
        "f32[2,1,2,2] {\n{ /*i0=0*/\n{ /*i1=0*/\n  { 0, 1 },\n  { 2, 3 }\n}\n},\n"
        "{ /*i0=1*/\n{ /*i1=0*/\n  { 4, 5 },\n  { 6, 7 }\n}\n}\n}")
    assert literal_to_string(array("c64", [2]), np.array([1 + 2j, 3.5 - 4j])) == \
        "c64[2] {(1, 2), (3.5, -4)}"
    f32 = np.array([np.nan, -np.nan, np.inf], np.float32)
    assert literal_to_string(array("f32", [3]), f32) == "f32[3] {nan, -nan, inf}"


def test_literal_to_string_tuples_and_truncation():
    shape = tuple_shape([array("f32", []), array("s32", [2])])
    assert literal_to_string(shape, (np.float32(0), np.zeros(2, np.int32))) == \
        "(\nf32[] 0,\ns32[2] {0, 0}\n)"
    nested = tuple_shape([shape, array("pred", [])])
    assert literal_to_string(nested, ((1.0, [1, 2]), True)) == \
        "(\n(\nf32[] 1,\ns32[2] {1, 2}\n),\npred[] true\n)"
    assert literal_to_string(tuple_shape([]), ()) == "(\n\n)"
    big = array("f32", [1000])
    assert literal_to_string(big, np.zeros(1000)) == \
        "[TRUNCATED, Literal with more than 1000 values]"
    assert literal_to_string(big, np.zeros(1000), print_all=True).startswith("f32[1000] {0, 0, ")
    assert literal_to_string(array("f32", [999]), np.zeros(999)).startswith("f32[999] {0, 0")
    assert literal_to_string(tuple_shape([array("f32", [500]), array("f32", [500])]),
                             (np.zeros(500), np.zeros(500))).startswith("[TRUNCATED")


def test_literal_to_string_dynamic_shape():
    shape = parse_shape("f32[<=4]")
    assert literal_to_string(shape, np.array([1, 2], np.float32)) == "f32[<=4](2) {1, 2}"


# ---------------------------------------------------------------------------
# Speed

def test_parsing_1000_elements_is_fast():
    rng = np.random.default_rng(0)
    for name in ("f32", "s32", "bf16"):
        shape = array(name, [10, 100])
        val = (rng.standard_normal((10, 100)) * 1000).astype(shape.dtype.np)
        text = format_constant(shape, val, print_large=True)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            lit = parse_literal(text, shape)
            best = min(best, time.perf_counter() - t0)
        assert format_constant(shape, lit.value, print_large=True) == text
        assert best < 0.010, f"{name}: {best * 1e3:.1f} ms"


def test_fast_and_exact_paths_agree():
    shape = array("f32", [6])
    texts = ["{1, 2, 3, 4, 5, 6}", "{1 2 3 4 5 6}", "{1,2,3,4,5,6,}", "{/*a*/1, 2, 3, 4, 5, 6}",
             "{-0, -0.0, 5., -.5, inf, -nan}", "{1e5, 1E+5, 00012, 1.5e-3, nan, -inf}"]
    for t in texts:
        fast = parse_literal(t, shape).value
        # a `//` comment is not for the fast path: this goes through the exact parser
        slow = parse_literal(t.replace("{", "{ //\n", 1), shape).value
        assert fast.view(np.uint32).tolist() == slow.view(np.uint32).tolist(), t


# ---------------------------------------------------------------------------
# Corpus sweep (../shared/corpus)

_CONST_RE = re.compile(r"(?:^|[\s(,=])((?:[a-z][a-z0-9]*\[[^\]]*\](?:\{[^}]*\})?)"
                       r"|\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))\s+constant\(")


_LINE_COMMENT_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*')


def corpus_constants(text: str):
    """(shape_text, literal_text, offset) for each `shape constant(...)` in an HLO text
    (`//` comments, e.g. FileCheck lines, are blanked out first)."""
    text = _LINE_COMMENT_RE.sub(
        lambda m: m.group() if m.group()[0] == '"' else " " * len(m.group()), text)
    out = []
    for m in _CONST_RE.finditer(text):
        start = i = m.end()
        depth = 1
        while i < len(text) and depth:
            c = text[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "/" and text.startswith("/*", i):
                j = text.find("*/", i + 2)
                i = j + 1 if j >= 0 else len(text)
            i += 1
        if depth == 0:
            out.append((m.group(1), text[start:i - 1], start))
    return out


def _manifest():
    with open(XLA_CORPUS / "MANIFEST.tsv", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


needs_corpus = pytest.mark.skipif(not XLA_CORPUS.exists(), reason="../shared/corpus not present")


@needs_corpus
def test_corpus_round_trip_constants(capsys):
    """Where XLA's parser test says the printer reproduces the text, so do we."""
    checked = 0
    for row in _manifest():
        if "round-trip: printer output must equal this text" not in row["notes"]:
            continue
        text = (XLA_CORPUS / row["file"]).read_text()
        for shape_text, lit_text, _ in corpus_constants(text):
            shape = parse_shape(shape_text)
            lit = parse_literal(lit_text, shape)
            assert format_constant(shape, lit.value, print_large=True) == lit_text, row["file"]
            checked += 1
    with capsys.disabled():
        print(f"\n[literal] corpus round-trip constants: {checked} reproduced byte for byte")
    assert checked >= 70


@needs_corpus
def test_corpus_constants_parse_and_reprint(capsys):
    """Every constant of every module XLA parses is accepted; printing is idempotent."""
    files = [XLA_CORPUS / r["file"] for r in _manifest() if r["expect"] == "parse_ok"]
    if WILD_CORPUS.exists():
        files += sorted(WILD_CORPUS.glob("*.txt"))
    n = elided = 0
    for path in files:
        filler = ElidedFiller()
        for shape_text, lit_text, _ in corpus_constants(path.read_text(errors="replace")):
            shape = parse_shape(shape_text)
            lit = parse_literal(lit_text, shape, filler=filler)
            elided += lit.elided
            n += 1
            if sum(leaf.size for leaf in shape.leaves()) > 1_500:
                continue                    # keep the sweep fast: printing is O(elements)
            # One reprint may change text XLA cannot read back exactly (`-0` is the integer 0,
            # f8e8m0fnu's 2^-127 prints as 5.9e-39); after that printing is a fixed point.
            once = format_constant(shape, lit.value, print_large=True)
            once = format_constant(shape, parse_literal(once, shape).value, print_large=True)
            again = format_constant(shape, parse_literal(once, shape).value, print_large=True)
            assert again == once, (path.name, lit_text)
    with capsys.disabled():
        print(f"[literal] corpus constants parsed and reprinted: {n} ({elided} elided)")
    assert n > 1000


_LITERAL_ERROR = re.compile(r"out of range for literal|NaN payload|expects nested array"
                            r"|elements in the|minor-most|unexpected '}' token"
                            r"|out of range for double|part .* is out of range")
_XLA_ERROR = re.compile(r"jaxlib-0\.10\.2 parser error: (\d+):(\d+): ([^|]*)")


@needs_corpus
def test_corpus_literal_errors_match_xla(capsys):
    """The literal errors in XLA's parser tests: same message, same line and column."""
    checked = 0
    for row in _manifest():
        m = _XLA_ERROR.search(row["notes"])
        if row["expect"] != "parse_error" or not m or not _LITERAL_ERROR.search(m.group(3)):
            continue
        line, col, message = int(m.group(1)), int(m.group(2)), m.group(3).strip()
        text = (XLA_CORPUS / row["file"]).read_text()
        errors = []
        for shape_text, lit_text, start in corpus_constants(text):
            try:
                parse_literal(lit_text, parse_shape(shape_text))
            except LiteralError as e:
                pos = start + e.offset
                line_no = text.count("\n", 0, pos) + 1
                errors.append((line_no, pos - text.rfind("\n", 0, pos), str(e)))
        assert errors, row["file"]
        got_line, got_col, got = errors[0]
        assert (got_line, got_col) == (line, col), (row["file"], errors[0])
        assert got.startswith(message), (row["file"], got, message)
        checked += 1
    with capsys.disabled():
        print(f"[literal] corpus literal errors matching XLA: {checked}")
    assert checked >= 15
