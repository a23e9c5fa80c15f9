"""Elementwise numerics of the interpreter at their edges (XLA's rules, not NumPy's).

Kernels are tested directly on arrays; the registrations and a few tiny modules run
through the interpreter once the op registry and the parser are available.
"""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from hloc.interp import conversions as C
from hloc.interp import numerics as N
from hloc.ir.dtypes import DTYPES
from hloc.ops import facets

D = DTYPES
NAN = float("nan")
INF = float("inf")


@pytest.fixture(autouse=True)
def _no_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def arr(values, name):
    return np.array(values, dtype=D[name].np)


def run(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


def binary(op, name, a, b):
    out = run(N.binary, op, D[name], arr(a, name), arr(b, name))
    assert out.dtype == D[name].np
    return out.tolist()


def unary(op, name, x):
    return run(N.UNARY[op], D[name], arr(x, name))


def same_floats(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    for g, w in zip(got.ravel(), want.ravel()):
        if math.isnan(w):
            assert math.isnan(g)
        else:
            assert g == w and math.copysign(1, g) == math.copysign(1, w), (got, want)


# ---------------------------------------------------------------------------
# Integer arithmetic

S_MIN = {"s8": -128, "s16": -32768, "s32": -2**31, "s64": -2**63}
U_MAX = {"u8": 255, "u16": 65535, "u32": 2**32 - 1, "u64": 2**64 - 1}


@pytest.mark.parametrize("name", sorted(S_MIN))
def test_signed_divide_remainder_edges(name):
    lo = S_MIN[name]
    a = [7, -7, 7, -7, 5, -5, lo, lo, 0]
    b = [2, 2, -2, -2, 0, 0, -1, 1, 0]
    assert binary("divide", name, a, b) == [3, -3, -3, 3, -1, -1, lo, lo, -1]
    assert binary("remainder", name, a, b) == [1, -1, 1, -1, 5, -5, 0, 0, 0]


@pytest.mark.parametrize("name", sorted(U_MAX))
def test_unsigned_divide_remainder_edges(name):
    m = U_MAX[name]
    assert binary("divide", name, [7, 5, m, 0], [2, 0, 1, 0]) == [3, m, m, m]
    assert binary("remainder", name, [7, 5, m, 0], [2, 0, 10, 0]) == [1, 5, m % 10, 0]


@pytest.mark.parametrize("name,bits", [("s8", 8), ("s16", 16), ("s32", 32), ("s64", 64)])
def test_wrapping_add_multiply_negate_abs(name, bits):
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    assert binary("add", name, [hi], [1]) == [lo]
    assert binary("subtract", name, [lo], [1]) == [hi]
    assert binary("multiply", name, [hi], [2]) == [-2]
    assert unary("negate", name, [lo, 5]).tolist() == [lo, -5]
    assert unary("abs", name, [lo, -5, 5]).tolist() == [lo, 5, 5]


def test_sub_byte_ints_wrap():
    assert binary("add", "s4", [7, -8], [1, -1]) == [-8, 7]
    assert binary("multiply", "u4", [15], [15]) == [1]
    assert binary("add", "s2", [1], [1]) == [-2]
    assert binary("subtract", "u2", [0], [1]) == [3]
    assert binary("divide", "s4", [-8, 3], [-1, 0]) == [-8, -1]


@pytest.mark.parametrize("name,bits", [("s8", 8), ("u8", 8), ("s32", 32), ("u32", 32),
                                       ("s64", 64), ("u64", 64), ("s4", 4), ("u4", 4)])
def test_shift_edges(name, bits):
    signed = name[0] == "s"
    neg_one = -1 if signed else (1 << bits) - 1
    top = -(1 << (bits - 1)) if signed else 1 << (bits - 1)
    # shift-left: amount >= width (or "negative", i.e. huge unsigned) gives 0
    assert binary("shift-left", name, [1, 1, 1, 1], [0, bits - 1, bits, neg_one]) == \
        [1, top, 0, 0]
    # logical right of the top bit; out of range -> 0
    assert binary("shift-right-logical", name, [top, top, top], [bits - 1, bits, neg_one]) == \
        [1, 0, 0]
    # arithmetic right fills with the sign bit, also when out of range
    far = bits + 1 if bits < 64 else neg_one
    assert binary("shift-right-arithmetic", name, [top, top, 1], [bits - 1, far, bits]) == \
        [neg_one, neg_one, 0]


def test_integer_power():
    # XLA:CPU (EmitIntegerPow): squaring over the low 6 exponent bits; negative exponents
    # give 1 for base 1, +-1 for base -1, else 0. Values checked against jaxlib 0.10.2.
    five_40 = int(np.int32(np.uint32(pow(5, 40, 1 << 32))))
    assert binary("power", "s32", [2, 3, 0, 1, -1, -1, 2, -2, 5, 7],
                  [10, 0, 0, -7, -1, -2, -1, 3, 40, 2**31 - 1]) == \
        [1024, 1, 1, 1, -1, 1, 0, -8, five_40, 1075496887]
    assert binary("power", "u8", [2, 3, 3, 1, 255], [8, 5, 128, 200, 129]) == [0, 243, 0, 1, 255]
    assert binary("power", "u16", [7], [300]) == [58145]
    assert binary("power", "s64", [3, 2, 0], [41, 64, 64]) == \
        [int(np.int64(np.uint64(pow(3, 41, 1 << 64)))), 1, 1]
    assert binary("power", "u64", [2, 7], [65, 2**64 - 1]) == [2, 0]
    assert binary("power", "s8", [-1, -1, 2], [-2, -7, -128]) == [1, -1, 0]
    assert binary("power", "u4", [3, 2], [8, 3]) == [1, 8]
    assert binary("power", "pred", [True, False, False], [True, True, False]) == [True, False, True]


def test_mulhi():
    assert binary("mulhi", "s32", [-1, 2**30, -2**31], [5, 8, -2**31]) == [-1, 2, 2**30]
    assert binary("mulhi", "u32", [2**32 - 1], [2**32 - 1]) == [2**32 - 2]
    a, b = [-1, 2**62, -2**63, 12345678901234], [5, 4, -2**63, -98765432109]
    assert binary("mulhi", "s64", a, b) == [(x * y) >> 64 for x, y in zip(a, b)]
    assert binary("mulhi", "u64", [2**64 - 1, 2**40], [2**64 - 1, 2**40]) == [2**64 - 2, 2**16]


@pytest.mark.parametrize("name,bits", [("s8", 8), ("u8", 8), ("s16", 16), ("u32", 32),
                                       ("s64", 64), ("u64", 64), ("s4", 4), ("u4", 4),
                                       ("s2", 2), ("u2", 2)])
def test_clz_popcnt(name, bits):
    vals = [0, 1, (1 << (bits - 1)) - 1, -1 if name[0] == "s" else (1 << bits) - 1]

    def typed(v):   # a count that does not fit (s2: 2) wraps, as LLVM's ctlz/ctpop on i2
        return v - (1 << bits) if name[0] == "s" and v >= 1 << (bits - 1) else v
    assert unary("count-leading-zeros", name, vals).tolist() == \
        [typed(bits), typed(bits - 1), 1, 0]
    ones = 8 if name == "s4" else bits      # s4 counts its 8-bit container (XLA:CPU)
    assert unary("popcnt", name, vals).tolist() == [0, 1, typed(bits - 1), typed(ones)]


def test_popcnt_s4_counts_sign_extension():
    # checked against XLA:CPU (jaxlib 0.10.2): popcnt(s4 -8) == popcount(0xF8) == 5
    assert unary("popcnt", "s4", [-8, -2, 7]).tolist() == [5, 7, 3]
    assert unary("popcnt", "s2", [-2, -1]).tolist() == [1, -2]


def test_bitwise_and_not():
    assert binary("and", "u8", [0xF0], [0x3C]) == [0x30]
    assert binary("or", "s8", [-128], [1]) == [-127]
    assert binary("xor", "u64", [2**64 - 1], [1]) == [2**64 - 2]
    assert unary("not", "s8", [0, -1, 5]).tolist() == [-1, 0, -6]
    assert unary("not", "u4", [0, 15]).tolist() == [15, 0]
    assert unary("not", "pred", [True, False]).tolist() == [False, True]


def test_int_sign_max_min():
    assert unary("sign", "s32", [-5, 0, 7]).tolist() == [-1, 0, 1]
    assert unary("sign", "u8", [0, 200]).tolist() == [0, 1]
    assert binary("maximum", "s8", [-1, 3], [2, -128]) == [2, 3]
    assert binary("minimum", "u8", [255, 3], [2, 4]) == [2, 3]


def test_pred_arithmetic():
    t, f = True, False
    a, b = [t, t, f, f], [t, f, t, f]
    assert binary("add", "pred", a, b) == [t, t, t, f]
    assert binary("maximum", "pred", a, b) == [t, t, t, f]
    assert binary("multiply", "pred", a, b) == [t, f, f, f]
    assert binary("minimum", "pred", a, b) == [t, f, f, f]
    assert binary("xor", "pred", a, b) == [f, t, t, f]
    with pytest.raises(N.Unsupported):
        run(N.binary, "subtract", D["pred"], arr(a, "pred"), arr(b, "pred"))


# ---------------------------------------------------------------------------
# Floating point

@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_max_min_propagate_nan_and_order_zeros(name):
    a, b = [NAN, 1, -0.0, 0.0, 1], [1, NAN, 0.0, -0.0, 2]
    same_floats(binary("maximum", name, a, b), [NAN, NAN, 0.0, 0.0, 2])
    same_floats(binary("minimum", name, a, b), [NAN, NAN, -0.0, -0.0, 1])


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_rounding(name):
    x = [0.5, -0.5, 1.5, 2.5, -2.5, -0.25, 3.0, INF, NAN]
    same_floats(unary("round-nearest-afz", name, x), [1, -1, 2, 3, -3, -0.0, 3, INF, NAN])
    same_floats(unary("round-nearest-even", name, x), [0, -0.0, 2, 2, -2, -0.0, 3, INF, NAN])
    same_floats(unary("floor", name, [-0.5, 0.5]), [-1, 0])
    same_floats(unary("ceil", name, [-0.5, 0.5]), [-0.0, 1])


def test_round_afz_just_below_half():
    x = np.nextafter(np.float32(0.5), np.float32(0))
    same_floats(unary("round-nearest-afz", "f32", [x, -x]), [0.0, -0.0])


@pytest.mark.parametrize("name", ["f16", "bf16", "f32", "f64"])
def test_float_sign_abs(name):
    same_floats(unary("sign", name, [-0.0, 0.0, NAN, -3, 2, -INF]), [-0.0, 0.0, NAN, -1, 1, -1])
    same_floats(unary("abs", name, [-0.0, -2, -INF]), [0.0, 2, INF])
    assert unary("is-finite", name, [1, INF, -INF, NAN]).tolist() == [True, False, False, False]


def test_remainder_and_divide_floats():
    same_floats(binary("remainder", "f32", [5.5, -5.5, 5.5, 1, INF], [2, 2, -2, 0, 1]),
                [1.5, -1.5, 1.5, NAN, NAN])
    same_floats(binary("divide", "f32", [1, -1, 0], [0, 0, 0]), [INF, -INF, NAN])


def test_narrow_floats_round_after_each_op():
    # bf16 has 8 significant bits: 256 + 1 is not representable and rounds to even
    same_floats(binary("add", "bf16", [256], [1]), [256])
    same_floats(binary("add", "bf16", [256], [3]), [260])
    same_floats(binary("add", "f16", [2048], [1]), [2048])
    out = binary("multiply", "f8e4m3fn", [448], [2])          # overflow of a fn type -> NaN
    assert math.isnan(out[0])
    same_floats(binary("multiply", "f8e5m2", [57344], [2]), [INF])


def test_float_power_and_transcendentals():
    same_floats(binary("power", "f32", [NAN, 1, 2, 0, -8], [0, NAN, 10, 0, 1 / 3]),
                [1, 1, 1024, 1, NAN])
    same_floats(unary("cbrt", "f64", [-27, 8, -0.0]), [-3, 2, -0.0])
    got = unary("logistic", "f32", [0, 100, -100])
    same_floats(got, [0.5, 1, 0.0])                      # 1 / (1 + inf)
    got = unary("erf", "f64", [0, 1, -INF])
    same_floats(got, [0, math.erf(1), -1])
    same_floats(unary("exponential-minus-one", "f64", [1e-20]), [1e-20])
    same_floats(unary("log-plus-one", "f64", [-1]), [-INF])
    same_floats(unary("rsqrt", "f32", [4, 0]), [0.5, INF])
    same_floats(binary("atan2", "f64", [0.0, -0.0, 1], [-1, -1, 0]), [math.pi, -math.pi, math.pi / 2])
    for op, fn in [("acos", math.acos), ("asin", math.asin), ("asinh", math.asinh),
                   ("atanh", math.atanh), ("sinh", math.sinh), ("cosh", math.cosh),
                   ("tan", math.tan), ("tanh", math.tanh), ("sine", math.sin)]:
        assert np.allclose(unary(op, "f64", [0.5]), [fn(0.5)], rtol=1e-15, atol=0), op
    assert unary("acosh", "f32", [2]).dtype == np.float32


def test_complex_ops():
    c = lambda v: np.array(v, np.complex64)  # noqa: E731
    out = run(N.binary, "divide", D["c64"], c([1 + 2j, 1, 1 + 1j]), c([3 - 4j, 0, INF]))
    assert out.dtype == np.complex64
    assert np.allclose(out[0], (1 + 2j) / (3 - 4j))
    assert out[1].real == INF and math.isnan(out[1].imag)       # XLA's zero-denominator case
    assert out[2] == 0
    p = run(N.binary, "power", D["c64"], c([0, 0, 2, 1j]), c([0, 2, 3, 2]))
    assert np.allclose(p, [1, 0, 8, -1], atol=1e-6)
    assert run(N.compare, D["c64"], c([1 + 1j, 1]), c([1 + 1j, 1j]), "EQ", None).tolist() == [True, False]
    with pytest.raises(N.Unsupported):
        run(N.compare, D["c64"], c([1]), c([1]), "LT", None)
    assert unary("abs", "c64", [3 + 4j]).tolist() == [5.0] and unary("abs", "c64", [1]).dtype == np.float32
    assert np.allclose(unary("sign", "c128", [3 + 4j, 0]), [0.6 + 0.8j, 0])
    assert np.allclose(unary("exponential-minus-one", "c128", [1j]), [np.expm1(0) + np.exp(1j) - 1])
    assert np.allclose(unary("log-plus-one", "c128", [1j]), [np.log(1 + 1j)])
    assert unary("real", "c64", [1 + 2j]).tolist() == [1.0]
    assert unary("imag", "c128", [1 + 2j]).tolist() == [2.0]
    assert unary("imag", "f32", [5]).tolist() == [0.0]
    z = run(N.complex_from_parts, D["c64"], arr([1, 2], "f32"), arr([3, 4], "f32"))
    assert z.dtype == np.complex64 and z.tolist() == [1 + 3j, 2 + 4j]


def test_float_only_ops_reject_other_types():
    for op in ("floor", "round-nearest-afz", "cbrt", "erf", "is-finite"):
        with pytest.raises(N.Unsupported):
            run(N.UNARY[op], D["s32"], arr([1], "s32"))
    with pytest.raises(N.Unsupported):
        run(N.UNARY["floor"], D["c64"], np.array([1], np.complex64))


# ---------------------------------------------------------------------------
# Compare

F32_ORDER = [-NAN, -INF, -1.0, -0.0, 0.0, 1.0, INF, NAN]


def test_total_order_f32():
    x = np.array(F32_ORDER, np.float32)
    x[0] = -np.abs(x[-1])                       # a NaN with the sign bit set
    keys = run(N.total_order_key, x, D["f32"])
    assert np.all(np.diff(keys) > 0)
    lt = run(N.compare, D["f32"], x[:-1], x[1:], "LT", "TOTALORDER")
    assert lt.all()
    eq = run(N.compare, D["f32"], x, x, "EQ", "TOTALORDER")
    assert eq.all()                              # NaN == NaN in total order
    ne = run(N.compare, D["f32"], arr([-0.0], "f32"), arr([0.0], "f32"), "NE", "TOTALORDER")
    assert ne.tolist() == [True]


@pytest.mark.parametrize("name", ["f16", "bf16", "f64", "f8e4m3fn", "f8e5m2"])
def test_total_order_other_floats(name):
    vals = [-INF, -1.0, -0.0, 0.0, 1.0, INF] if name != "f8e4m3fn" else [-448, -1, -0.0, 0.0, 1, 448]
    x = arr(vals, name)
    assert run(N.compare, D[name], x[:-1], x[1:], "LT", "TOTALORDER").all()
    n = run(N.UNARY["negate"], D[name], arr([NAN], name))
    assert run(N.compare, D[name], n, x[:1], "LT", "TOTALORDER").all()


def test_float_compare_with_nan():
    a, b = arr([NAN, 1, NAN], "f32"), arr([1, NAN, NAN], "f32")
    for direction in ("EQ", "LT", "LE", "GT", "GE"):
        assert not run(N.compare, D["f32"], a, b, direction, None).any()
    assert run(N.compare, D["f32"], a, b, "NE", "FLOAT").all()
    assert run(N.compare, D["bf16"], arr([-0.0], "bf16"), arr([0.0], "bf16"), "EQ", None).all()


def test_integer_compare_types():
    a, b = arr([-1, 1], "s32"), arr([1, 1], "s32")
    assert run(N.compare, D["s32"], a, b, "LT", None).tolist() == [True, False]
    assert run(N.compare, D["s32"], a, b, "LT", "UNSIGNED").tolist() == [False, False]
    u = arr([2**32 - 1, 1], "u32")
    assert run(N.compare, D["u32"], u, arr([1, 1], "u32"), "GT", None).tolist() == [True, False]
    assert run(N.compare, D["u32"], u, arr([1, 1], "u32"), "GT", "SIGNED").tolist() == [False, False]
    assert run(N.compare, D["pred"], arr([True, False], "pred"), arr([False, False], "pred"),
               "GT", None).tolist() == [True, False]
    assert run(N.compare, D["s4"], arr([-8], "s4"), arr([7], "s4"), "LT", None).tolist() == [True]


# ---------------------------------------------------------------------------
# Select / clamp

def test_select_and_clamp():
    assert run(N.select, np.array(True), arr([1, 2], "s32"), arr([3, 4], "s32")).tolist() == [1, 2]
    assert run(N.select, arr([True, False], "pred"), arr([1, 2], "s32"),
               arr([3, 4], "s32")).tolist() == [1, 4]
    assert run(N.clamp, D["s32"], arr(0, "s32"), arr([-5, 5, 15], "s32"),
               arr(10, "s32")).tolist() == [0, 5, 10]
    same_floats(run(N.clamp, D["f32"], arr(0, "f32"), arr([NAN, -1, 2], "f32"), arr(1, "f32")),
                [NAN, 0, 1])
    same_floats(run(N.clamp, D["f32"], arr(NAN, "f32"), arr([0.5], "f32"), arr(1, "f32")), [NAN])
    assert run(N.clamp, D["u8"], arr(10, "u8"), arr([0, 255], "u8"), arr(20, "u8")).tolist() == [10, 20]


# ---------------------------------------------------------------------------
# Conversions

@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
def test_convert_float_to_int_saturates(src):
    x = arr([NAN, INF, -INF, 1e4, -1e4, 2.9, -2.9, -0.0], src)
    assert run(C.convert, x, D[src], D["s8"]).tolist() == [0, 127, -128, 127, -128, 2, -2, 0]
    assert run(C.convert, x, D[src], D["u8"]).tolist() == [0, 255, 0, 255, 0, 2, 0, 0]
    assert run(C.convert, x, D[src], D["s4"]).tolist() == [0, 7, -8, 7, -8, 2, -2, 0]
    big = run(C.convert, arr([INF, -INF, 3e38 if src != "f16" else 6e4], src), D[src], D["s64"]).tolist()
    assert big[:2] == [2**63 - 1, -2**63]
    assert run(C.convert, arr([INF, -1, NAN], src), D[src], D["u64"]).tolist() == [2**64 - 1, 0, 0]
    assert run(C.convert, arr([INF], src), D[src], D["s32"]).tolist() == [2**31 - 1]


def test_convert_f32_to_s32_boundaries():
    x = arr([2147483520.0, 2147483648.0, -2147483648.0, -2147483904.0], "f32")
    assert run(C.convert, x, D["f32"], D["s32"]).tolist() == [2147483520, 2**31 - 1, -2**31, -2**31]
    x = arr([2.0**63, 2.0**64, 9.2e18], "f64")
    assert run(C.convert, x, D["f64"], D["u64"]).tolist() == [2**63, 2**64 - 1, 9200000000000000000]


def test_convert_int_to_int_wraps():
    assert run(C.convert, arr([300, -1, 128], "s32"), D["s32"], D["s8"]).tolist() == [44, -1, -128]
    assert run(C.convert, arr([-1], "s8"), D["s8"], D["u32"]).tolist() == [2**32 - 1]
    assert run(C.convert, arr([255], "u8"), D["u8"], D["s32"]).tolist() == [255]
    assert run(C.convert, arr([20, -9], "s32"), D["s32"], D["s4"]).tolist() == [4, 7]
    assert run(C.convert, arr([-1], "s4"), D["s4"], D["u8"]).tolist() == [255]
    assert run(C.convert, arr([15], "u4"), D["u4"], D["s8"]).tolist() == [15]


def test_convert_pred():
    assert run(C.convert, arr([0, 2, -1], "s32"), D["s32"], D["pred"]).tolist() == [False, True, True]
    assert run(C.convert, arr([0.0, -0.0, NAN, 0.5], "f32"), D["f32"], D["pred"]).tolist() == \
        [False, False, True, True]
    assert run(C.convert, arr([True, False], "pred"), D["pred"], D["f32"]).tolist() == [1.0, 0.0]
    assert run(C.convert, arr([True], "pred"), D["pred"], D["s8"]).tolist() == [1]


def test_convert_floats():
    # f64 -> bf16 goes through f32 (double rounding, as XLA)
    x = np.float64(1) + np.float64(2.0 ** -8) + np.float64(2.0 ** -30)
    assert float(run(C.convert, arr([x], "f64"), D["f64"], D["bf16"])[0]) == 1.0
    assert float(run(C.convert, arr([x], "f64"), D["f64"], D["f16"])[0]) == float(np.float16(x))
    assert math.isnan(float(run(C.convert, arr([1e9], "f32"), D["f32"], D["f8e4m3fn"])[0]))
    assert float(run(C.convert, arr([1e9], "f32"), D["f32"], D["f8e5m2"])[0]) == INF
    assert run(C.convert, arr([2**24 + 1], "s32"), D["s32"], D["f32"]).tolist() == [2.0**24]
    assert run(C.convert, arr([2**64 - 1], "u64"), D["u64"], D["f32"]).tolist() == [2.0**64]
    assert run(C.convert, arr([1], "bf16"), D["bf16"], D["f8e4m3fn"]).dtype == ml_dtypes.float8_e4m3fn


def test_convert_complex():
    z = run(C.convert, arr([1.5], "f32"), D["f32"], D["c64"])
    assert z.dtype == np.complex64 and z.tolist() == [1.5 + 0j]
    assert run(C.convert, arr([-3], "s32"), D["s32"], D["c128"]).tolist() == [-3 + 0j]
    assert run(C.convert, np.array([1 + 2j], np.complex128), D["c128"], D["c64"]).dtype == np.complex64
    with pytest.raises(N.Unsupported):
        run(C.convert, np.array([1 + 2j], np.complex64), D["c64"], D["f32"])


def test_bitcast_convert_same_width():
    assert run(C.bitcast_convert, arr([1.0, -0.0], "f32"), D["f32"], D["u32"]).tolist() == \
        [0x3F800000, 0x80000000]
    assert run(C.bitcast_convert, arr([-1], "s8"), D["s8"], D["u8"]).tolist() == [255]
    assert run(C.bitcast_convert, arr([0x3F80], "u16"), D["u16"], D["bf16"]).tolist() == [1.0]
    assert run(C.bitcast_convert, arr([-1], "s4"), D["s4"], D["u4"]).tolist() == [15]
    assert float(run(C.bitcast_convert, arr([0x7], "u4"), D["u4"], D["f4e2m1fn"])[0]) == 6.0
    x = arr([np.nan, 1e-45, -INF], "f32")
    back = run(C.bitcast_convert, run(C.bitcast_convert, x, D["f32"], D["s32"]), D["s32"], D["f32"])
    assert back.view(np.uint32).tolist() == x.view(np.uint32).tolist()


def test_bitcast_convert_changes_width():
    out = run(C.bitcast_convert, arr([1.0, 2.0], "f32"), D["f32"], D["u8"])
    assert out.shape == (2, 4) and out.tolist() == [[0, 0, 128, 63], [0, 0, 0, 64]]
    back = run(C.bitcast_convert, out, D["u8"], D["f32"])
    assert back.shape == (2,) and back.tolist() == [1.0, 2.0]
    wide = run(C.bitcast_convert, arr([[1, 2], [3, 4]], "u32"), D["u32"], D["u64"])
    assert wide.tolist() == [1 | 2 << 32, 3 | 4 << 32]
    nib = run(C.bitcast_convert, arr([0xA5], "u8"), D["u8"], D["u4"])
    assert nib.tolist() == [[5, 10]]
    assert run(C.bitcast_convert, arr(0x3C00, "u16"), D["u16"], D["u8"]).tolist() == [0, 0x3C]
    assert run(C.bitcast_convert, arr([0, 0x3C], "u8"), D["u8"], D["f16"]).shape == ()
    assert run(N.compare, D["f32"], arr(-0.0, "f32"), arr(0.0, "f32"), "LT", "TOTALORDER").shape == ()


def test_reduce_precision_known_values():
    rp = lambda name, x, e, m: run(C.reduce_precision, D[name], arr(x, name), e, m)  # noqa: E731
    # to bf16 (8, 7): round to nearest even on the 16th bit
    x = np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20], np.float32)
    same_floats(rp("f32", x, 8, 7), [1.0, 1 + 2**-6, 1 + 2**-7])
    # to f16 (5, 10): overflow to inf, underflow (incl. f16 denormals) to signed zero
    same_floats(rp("f32", [70000.0, 65504.0, -1e-5, 1e-7, 2.0**-14], 5, 10),
                [INF, 65504.0, -0.0, 0.0, 2.0**-14])
    # NaN comes back unchanged, also without mantissa bits (XLA:CPU, jaxlib 0.10.2)
    nans = np.array([0x7FC00000, 0x7F800001, 0xFFC00001, 0x7FFFFFFF], np.uint32).view(np.float32)
    for e, m in [(8, 0), (5, 0), (3, 1), (8, 7)]:
        assert rp("f32", nans, e, m).view(np.uint32).tolist() == nans.view(np.uint32).tolist()
    nan_bits = np.array([0x7F800001], np.uint32).view(np.float32)   # NaN whose payload rounds away
    assert math.isnan(rp("f32", nan_bits, 8, 7)[0])
    same_floats(rp("f64", [1 + 2**-30], 11, 23), [1.0])
    # identity when nothing is reduced; f16 works on its own bits, so its denormals
    # survive when the exponent is kept (XLA:CPU, jaxlib 0.10.2)
    same_floats(rp("bf16", [1.5, -INF], 8, 7), [1.5, -INF])
    same_floats(rp("f16", [1.0009765625], 5, 8), [1.0])
    assert rp("f16", [1e-6, 3e-5], 5, 7).tolist() == \
        [float(np.float16(9.5367431640625e-07)), float(np.float16(3.0040740966796875e-05))]
    assert rp("f16", [1e-6, 3e-5], 4, 7).tolist() == [0.0, 0.0]
    assert math.isnan(float(rp("f8e4m3fn", [448], 4, 1)[0]))   # overflow: inf -> fn NaN


def _f32(exponent, high, low):
    return (exponent << 23) + (high << 13) + low


# xla/tests/reduce_precision_test.cc f32_test_values: input, then the expected result for
# (5, 10), (5, 23), (8, 10).
F32_REDUCE_PRECISION = [
    (_f32(0b01110000, 0b0000000000, 0b0000000000000), 0, 0, _f32(0b01110000, 0, 0)),
    (_f32(0b01110000, 0b1111111111, 0b0111111111111), 0, 0,
     _f32(0b01110000, 0b1111111111, 0)),
    (_f32(0b01110000, 0b1111111111, 0b1000000000000), _f32(0b01110001, 0, 0), 0,
     _f32(0b01110001, 0, 0)),
    (_f32(0b01111111, 0, 0b1000000000000), _f32(0b01111111, 0, 0),
     _f32(0b01111111, 0, 0b1000000000000), _f32(0b01111111, 0, 0)),
    (_f32(0b01111111, 0, 0b1000000000001), _f32(0b01111111, 1, 0),
     _f32(0b01111111, 0, 0b1000000000001), _f32(0b01111111, 1, 0)),
    (_f32(0b01111111, 1, 0b1000000000000), _f32(0b01111111, 2, 0),
     _f32(0b01111111, 1, 0b1000000000000), _f32(0b01111111, 2, 0)),
    (_f32(0b10001110, 0b1111111111, 0b0111111111111), _f32(0b10001110, 0b1111111111, 0),
     _f32(0b10001110, 0b1111111111, 0b0111111111111), _f32(0b10001110, 0b1111111111, 0)),
    (_f32(0b10001110, 0b1111111111, 0b1000000000000), _f32(0b11111111, 0, 0),
     _f32(0b10001110, 0b1111111111, 0b1000000000000), _f32(0b10001111, 0, 0)),
    (_f32(0b10001111, 0, 0), _f32(0b11111111, 0, 0), _f32(0b11111111, 0, 0),
     _f32(0b10001111, 0, 0)),
    (_f32(0b11111110, 0b1111111111, 0b1000000000000), _f32(0b11111111, 0, 0),
     _f32(0b11111111, 0, 0), _f32(0b11111111, 0, 0)),
    (_f32(0b11111111, 0b1111111111, 0b1111111111111),) * 4,          # NaN, all ones
]


@pytest.mark.parametrize("column,bits", [(1, (5, 10)), (2, (5, 23)), (3, (8, 10))])
def test_reduce_precision_xla_table(column, bits):
    for sign in (0, 1 << 31):
        x = np.array([row[0] ^ sign for row in F32_REDUCE_PRECISION], np.uint32)
        want = [row[column] ^ sign for row in F32_REDUCE_PRECISION]
        got = run(C.reduce_precision, D["f32"], x.view(np.float32), *bits)
        assert got.view(np.uint32).tolist() == want


def test_stochastic_convert():
    # checked against XLA:CPU (StochasticConvertDecomposer), jaxlib 0.10.2
    x = arr([1.25, -1.25, 1.75, 1e10, -1e10, NAN, 0.5, -127.6, 300.5, -0.0, 448.1, 0.0097], "f32")
    r = arr([0, 0, 2**31, 5, 5, 0, 2**31, 2**31, 2**32 - 1, 7, 1, 2**30], "u32")
    assert run(C.stochastic_convert, x, r, D["f32"], D["u32"], D["s32"]).tolist() == \
        [2, -2, 2, 2**31 - 1, -2**31, 0, 0, -128, 300, 0, 449, 0]
    assert run(C.stochastic_convert, x, r, D["f32"], D["u32"], D["s8"]).tolist() == \
        [2, -2, 2, 127, -128, 0, 0, -128, 127, 0, 127, 0]
    h = run(C.convert, x, D["f32"], D["f16"])
    hr = run(C.convert, r, D["u32"], D["u16"])
    assert run(C.stochastic_convert, h, hr, D["f16"], D["u16"], D["s16"]).tolist() == \
        [2, -2, 2, 32767, -32768, 0, 1, -128, 300, 0, 448, 1]
    x = arr([2.5, 2.5, -2.5], "f16")
    r = arr([0x7FFF, 0x8000, 0x7FFF], "u16")
    assert run(C.stochastic_convert, x, r, D["f16"], D["u16"], D["s8"]).tolist() == [3, 2, -3]
    with pytest.raises(N.Unsupported):
        run(C.stochastic_convert, x, r, D["f16"], D["u16"], D["f32"])


def test_bitcast_follows_layouts():
    from hloc.ir.shape import parse_shape
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = run(C.bitcast, x, parse_shape("f32[2,3]{1,0}"), parse_shape("f32[3,2]{1,0}"))
    assert y.tolist() == [[0, 1], [2, 3], [4, 5]]
    # {0,1}: the physical order is column-major, so the same bytes read as f32[6]
    y = run(C.bitcast, x, parse_shape("f32[2,3]{0,1}"), parse_shape("f32[6]{0}"))
    assert y.tolist() == [0, 3, 1, 4, 2, 5]
    y = run(C.bitcast, x, parse_shape("f32[2,3]{1,0}"), parse_shape("s32[3,2]{0,1}"))
    assert y.dtype == np.int32 and y.view(np.float32).T.ravel().tolist() == list(range(6))


# ---------------------------------------------------------------------------
# Registrations and end-to-end runs (need the op registry / parser)

def _registry():
    try:
        from hloc.interp import elementwise  # noqa: F401
        from hloc.ops import REGISTRY
    except ImportError as e:
        pytest.skip(f"op registry not available: {e}")
    return REGISTRY


ELEMENTWISE = """abs ceil floor round-nearest-afz round-nearest-even sign negate not
count-leading-zeros popcnt is-finite exponential exponential-minus-one log log-plus-one
logistic sqrt rsqrt cbrt sine cosine tan tanh erf real imag copy convert bitcast-convert
reduce-precision acos acosh asin asinh atanh sinh cosh atan2 add subtract multiply divide
remainder power maximum minimum complex and or xor shift-left shift-right-arithmetic
shift-right-logical compare stochastic-convert mulhi select clamp bitcast""".split()


def test_every_elementwise_opcode_has_an_evaluation():
    registry = _registry()
    missing = [op for op in ELEMENTWISE if op in registry and facets.get("evaluate", op) is None]
    assert not missing
    absent = [op for op in ELEMENTWISE if op not in registry]
    assert not [op for op in absent if op != "mulhi"], absent


def _run_module(text, *args):
    _registry()
    import hloc
    from hloc.interp.core import Interpreter
    try:
        module = hloc.parse(text)
    except ImportError as e:
        pytest.skip(f"parser not available: {e}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return Interpreter(module).run(list(args))


def test_end_to_end_integer_edges():
    out = _run_module("""HloModule m
ENTRY e {
  a = s32[3] parameter(0)
  b = s32[3] parameter(1)
  d = s32[3] divide(a, b)
  r = s32[3] remainder(a, b)
  s = s32[3] shift-left(a, b)
  ROOT t = (s32[3], s32[3], s32[3]) tuple(d, r, s)
}""", arr([-2**31, 7, -7], "s32"), arr([-1, 0, 2], "s32"))
    assert [o.tolist() for o in out] == [[-2**31, -1, -3], [0, 7, -1], [0, 7, -28]]
    assert all(o.dtype == np.int32 for o in out)


def test_end_to_end_float_ops():
    out = _run_module("""HloModule m
ENTRY e {
  x = bf16[4] parameter(0)
  y = bf16[4] parameter(1)
  m = bf16[4] maximum(x, y)
  c = pred[4] compare(x, y), direction=LT, type=TOTALORDER
  k = s32[4] convert(x)
  ROOT t = (bf16[4], pred[4], s32[4]) tuple(m, c, k)
}""", arr([NAN, -0.0, 3e9, -1.5], "bf16"), arr([1, 0.0, 1, -1.5], "bf16"))
    m, c, k = out
    assert m.dtype == ml_dtypes.bfloat16
    same_floats(m, [NAN, 0.0, float(arr([3e9], "bf16")[0]), -1.5])
    assert c.tolist() == [False, True, False, False]
    assert k.tolist() == [0, 0, 2**31 - 1, -1]


def test_end_to_end_scalar_select_clamp_and_reduce_precision():
    out = _run_module("""HloModule m
ENTRY e {
  p = pred[] parameter(0)
  x = f32[3] parameter(1)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  c = f32[3] clamp(lo, x, hi)
  n = f32[3] negate(x)
  s = f32[3] select(p, c, n)
  ROOT r = f32[3] reduce-precision(s), exponent_bits=5, mantissa_bits=2
}""", np.array(True), arr([-1, 0.3, 7], "f32"))
    same_floats(out, [0.0, 0.3125, 1.0])


# ---------------------------------------------------------------------------
# Complex maximum/minimum, fma, XLA:CPU's complex and f32 math

def test_complex_max_min_follow_xla_cpu_not_lexicographic_order():
    # mhlo's cmpComplex: (re_l == re_r && im_l >= im_r) || re_l >= re_r, then select:
    # a tie on the real part (0 == -0, 1.5 == 1.5) keeps the left operand.
    a = np.array([1.5 + 2.5j, 1.5 + 7.5j, 0 + 1.5j, 2 + 1j, NAN + 1j], np.complex64)
    b = np.array([7.5 + 1.5j, 1.5 + 2.5j, complex(-0.0, 2.5), 1 + 9j, 1 + 1j], np.complex64)
    mx = run(N.binary, "maximum", D["c64"], a, b)
    mn = run(N.binary, "minimum", D["c128"], a.astype(np.complex128), b.astype(np.complex128))
    assert mx.dtype == np.complex64 and mn.dtype == np.complex128
    assert mx[:4].tolist() == [7.5 + 1.5j, 1.5 + 7.5j, 0 + 1.5j, 2 + 1j]
    assert mn[:4].tolist() == [1.5 + 2.5j, 1.5 + 7.5j, 0 + 1.5j, 1 + 9j]
    assert mx[4] == 1 + 1j and mn[4] == 1 + 1j                  # NaN real part: rhs
    assert not math.copysign(1, mx[2].real) < 0                  # +0 kept, not -0


def _exact_fma(a, b, c, dtype):
    from fractions import Fraction
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if dtype == np.float64:
        return np.float64(float(exact))                          # correctly rounded
    near = np.float32(float(exact))
    cands = [near, np.nextafter(near, np.float32(INF)), np.nextafter(near, np.float32(-INF))]
    return min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                     int(np.float32(v).view(np.int32)) & 1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fma_rounds_once(dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(400) * np.exp(rng.uniform(-15, 15, 400))).astype(dtype)
    b = (rng.standard_normal(400) * np.exp(rng.uniform(-15, 15, 400))).astype(dtype)
    c = (-(a.astype(np.float64) * b) * (1 + rng.standard_normal(400) * 1e-6)).astype(dtype)
    c[::2] = rng.standard_normal(200).astype(dtype)               # plus no cancellation
    got = run(N.fma, a, b, c)
    assert got.dtype == dtype
    want = [_exact_fma(x, y, z, dtype) for x, y, z in zip(a, b, c)]
    assert got.tolist() == [float(w) for w in want]
    one = dtype(1) + dtype(np.finfo(dtype).eps)                  # (1+e)(1-e) - 1 = -e^2
    assert run(N.fma, one, dtype(2) - one, dtype(-1)) == -dtype(np.finfo(dtype).eps) ** 2
    same_floats(run(N.fma, np.array([INF, 1, NAN], dtype), np.array([1, 1, 1], dtype),
                    np.array([1, INF, 0], dtype)), [INF, INF, NAN])


def test_complex_multiply_contracts_like_xla_cpu():
    # re = fma(a, c, -(b*d)), im = fma(b, c, a*d): one rounding instead of two.
    x = np.array([1 + 1e-4j, 3 + 4j], np.complex64)
    y = np.array([1 - 1e-4j, 1j], np.complex64)
    got = run(N.binary, "multiply", D["c64"], x, y)
    a, b = x.real.astype(np.float64), x.imag.astype(np.float64)
    c, d = y.real.astype(np.float64), y.imag.astype(np.float64)
    want_re = [_exact_fma(p, q, -np.float32(r * s), np.float32) for p, q, r, s in zip(a, c, b, d)]
    want_im = [_exact_fma(p, q, np.float32(r * s), np.float32) for p, q, r, s in zip(b, c, a, d)]
    assert got.real.tolist() == [float(v) for v in want_re]
    assert got.imag.tolist() == [float(v) for v in want_im]
    assert got[1] == -4 + 3j
    z = run(N.binary, "multiply", D["c128"], x.astype(np.complex128), y.astype(np.complex128))
    assert z.dtype == np.complex128 and z[1] == -4 + 3j


def test_f32_transcendentals_are_correctly_rounded_like_libm():
    x = np.linspace(-30, 30, 2001).astype(np.float32)
    for op, fn in [("sine", np.sin), ("cosine", np.cos), ("exponential", np.exp),
                   ("tan", np.tan), ("atan", np.arctan)]:
        got = unary(op, "f32", x)
        assert got.dtype == np.float32
        assert got.tolist() == fn(x.astype(np.float64)).astype(np.float32).tolist(), op
    y = np.abs(x) + np.float32(0.5)
    assert unary("log", "f32", y).tolist() == np.log(y.astype(np.float64)).astype(np.float32).tolist()
    got = binary("power", "f32", [2.5, 10], [3.3, -2.2])
    assert got == np.power(np.array([2.5, 10.0]), np.array([3.3, -2.2], np.float32)
                           .astype(np.float64)).astype(np.float32).tolist()


def test_expm1_uses_xla_formula():
    # EmitExpm1: exp(x) - 1 where |x| > 0.5, tanh(x/2) * (exp(x) + 1) below, x where x/2 == 0.
    x = np.array([2.0, -0.75, 0.25, -0.1, 1e-45, 0.0, -INF, INF], np.float32)
    got = unary("exponential-minus-one", "f32", x)
    e = np.exp(x.astype(np.float64)).astype(np.float32)
    t = np.tanh((x * np.float32(0.5)).astype(np.float64)).astype(np.float32)
    with np.errstate(all="ignore"):
        want = np.where(np.abs(x) > 0.5, e - np.float32(1), t * (e + np.float32(1)))
    want[4:6] = x[4:6]
    same_floats(got, want)
    same_floats(got[6:], [-1, INF])


def test_complex_abs_and_power_follow_xla_cpu():
    z = np.array([3 + 4j, 0j, complex(INF, INF), complex(NAN, 1), 1e30 + 1e30j], np.complex64)
    got = unary("abs", "c64", z)
    assert got.dtype == np.float32
    assert got[0] == 5 and got[1] == 0 and got[2] == INF and math.isnan(got[3])
    assert got[4] == np.float32(1e30) * np.sqrt(np.float32(2))    # max * sqrt(1 + 1), no overflow
    c = lambda v: np.array(v, np.complex64)  # noqa: E731
    p = run(N.binary, "power", D["c64"], c([0, 0, 0, 1, 5 + 5j, INF, INF, 1j, 2]),
            c([0, 2, -1, 3 + 7j, 0, 2, -2, 2, 0.5j]))
    assert p[[0, 1, 3, 4, 5, 6]].tolist() == [1, 0, 1, 1, complex(INF, 0), 0]
    assert math.isnan(p[2].real) and math.isnan(p[2].imag)      # 0^-1: no special case
    assert np.allclose(p[7:], [-1, np.exp(0.5j * np.log(2))], atol=1e-6)


def test_copy_of_a_tuple_is_a_deep_copy():
    x = arr([1, 2], "f32")
    out = _run_module("""HloModule m
ENTRY e {
  x = f32[2] parameter(0)
  y = s32[] constant(3)
  a = token[] after-all()
  i = (s32[], token[]) tuple(y, a)
  t = (f32[2], (s32[], token[])) tuple(x, i)
  ROOT c = (f32[2], (s32[], token[])) copy(t)
}""", x)
    from hloc.interp import TOKEN
    assert out[0].tolist() == [1, 2] and out[0] is not x and out[0].dtype == np.float32
    assert out[1][0] == 3 and out[1][0].dtype == np.int32 and out[1][1] is TOKEN


def test_mixed_precision_binary_computes_in_the_result_type():
    out = _run_module("""HloModule m
ENTRY e {
  x = f16[] constant(inf)
  y = f32[] parameter(0)
  a = f32[] minimum(x, y)
  b = f32[] add(y, x)
  ROOT t = (f32[], f32[]) tuple(a, b)
}""", np.float32(0.1))
    assert [o.dtype for o in out] == [np.float32, np.float32]
    assert out[0] == np.float32(0.1) and out[1] == INF
