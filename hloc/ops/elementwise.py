"""Elementwise opcodes: one table row each (spelling, type rule, traits).

Shape rules follow ShapeInference::InferUnaryOpShape / InferBinaryOpShape /
InferTernaryOpShape (result keeps the first operand's layout, as ChangeElementType does),
plus the verifier's CheckElementwiseInstruction: HLO has no implicit broadcast, so
operands whose dimensions differ from the result are rejected even where shape
inference alone would broadcast a scalar or a size-1 dimension. Conversions whose
result type is only in the text (convert, bitcast-convert, stochastic-convert,
reduce-precision) are SHAPE_REQUIRED: their rule checks the written type.
"""
from __future__ import annotations

from ..ir.dtypes import PRED
from .base import (CAN_CHANGE_LAYOUT, COMMUTATIVE, COMPARE_TYPE_BY_DTYPE, CPU_WRAPPED, DIVISION,
                   ELEMENTWISE, EXPENSIVE, EXPENSIVE_IF_COMPLEX, LAYOUT_IGNORES_ELEMENT_SIZE,
                   MEMORY_SPACE_MOVER, MIXED_OPERANDS_OK, SHAPE_REQUIRED, SIGN_CLEAR,
                   SIGN_CLEAR_OF_OPERANDS, TRANSCENDENTAL, YNN_ELEMENTWISE,
                   AttrSpec, OpDef, register)
from .shape_rules import (change_type, compatible_ignoring_fp, compatible_ignoring_type,
                          expect_array, fail, higher_precision, human, is_complex, is_float,
                          is_integral, is_scalar, is_signed, make, need_declared,
                          same_type_ignoring_fp, type_name)

E, C, X, T, XC = ELEMENTWISE, COMMUTATIVE, EXPENSIVE, TRANSCENDENTAL, EXPENSIVE_IF_COMPLEX
YNN = YNN_ELEMENTWISE
POS, POS_IF = SIGN_CLEAR, SIGN_CLEAR_OF_OPERANDS


# ---------------------------------------------------------------------------
# Unary

def _float(op, s):
    if not is_float(s):
        fail(f"Expected element type in shape to be floating for {op} operation; "
             f"got {type_name(s.dtype)}.")
    return s


def _float_complex(op, s):
    if not (is_float(s) or is_complex(s)):
        fail(f"Expected element type in shape to be floating or complex for {op} "
             f"operation; got {type_name(s.dtype)}.")
    return s


def _real_imag(op, s):
    if is_complex(s):
        return change_type(s, "f32" if s.dtype.name == "c64" else "f64")
    return _float_complex(op, s)


def _abs(op, s):
    if is_complex(s):
        return change_type(s, "f32" if s.dtype.name == "c64" else "f64")
    if is_signed(s):
        return s
    fail(f"Expected element type in shape to be floating or complex for {op} operation; "
         f"got {type_name(s.dtype)}.")


def _integral(what):
    def rule(op, s):
        if not is_integral(s):
            fail(f"Expected an integral element type in argument to {what} operation; "
                 f"got {type_name(s.dtype)}.")
        return s
    return rule


def _negate(op, s):
    if not (is_integral(s) or is_float(s) or is_complex(s)):
        fail(f"Expected element type in shape to be integral, floating or complex for {op} "
             f"operation; got {type_name(s.dtype)}.")
    return s


def _sign(op, s):
    if not (is_signed(s) or is_complex(s)):
        fail(f"Expected element type in shape to be signed or complex for {op} operation; "
             f"got {type_name(s.dtype)}.")
    return s


def _not(op, s):
    if s.dtype is not PRED and not is_integral(s):
        fail(f"Expected pred or an integral element type in argument to Not operation; "
             f"got {type_name(s.dtype)}.")
    return s


def _is_finite(op, s):
    if not is_float(s):
        fail(f"Expected element type in shape to be floating point for IsFinite operation; "
             f"got {type_name(s.dtype)}.")
    return change_type(s, PRED)


def _any(op, s):
    return s


_FC, _F = _float_complex, _float

# (name, rule, traits). TRANSCENDENTAL = accepts result_accuracy (jaxlib 0.10.2's parser).
UNARY = [
    ("abs", _abs, {E, XC, CPU_WRAPPED, YNN, POS}),
    ("acos", _FC, {E, T, X}),
    ("acosh", _FC, {E, T, X}),
    ("asin", _FC, {E, T, X}),
    ("asinh", _FC, {E, T, X}),
    ("atan", _FC, {E, T, X}),            # upstream tip only; jaxlib 0.10.2 rejects it
    ("atanh", _FC, {E, T, X}),
    ("cbrt", _F, {E, T, X, CPU_WRAPPED}),
    ("ceil", _F, {E, CPU_WRAPPED, YNN}),
    ("cosine", _FC, {E, T, XC, CPU_WRAPPED, YNN}),
    ("cosh", _FC, {E, T, X}),
    ("count-leading-zeros", _integral("Clz"), {E, CPU_WRAPPED}),
    ("erf", _F, {E, T, X, CPU_WRAPPED, YNN}),
    ("exponential", _FC, {E, T, X, CPU_WRAPPED, YNN, POS}),
    ("exponential-minus-one", _FC, {E, T, X, CPU_WRAPPED, YNN}),
    ("floor", _F, {E, CPU_WRAPPED, YNN}),
    ("imag", _real_imag, {E, CPU_WRAPPED}),
    ("is-finite", _is_finite, {E, CPU_WRAPPED, LAYOUT_IGNORES_ELEMENT_SIZE}),
    ("log", _FC, {E, T, X, CPU_WRAPPED, YNN}),
    ("log-plus-one", _FC, {E, T, X, CPU_WRAPPED, YNN}),
    ("logistic", _FC, {E, T, X, YNN}),
    ("negate", _negate, {E, CPU_WRAPPED, YNN}),
    ("not", _not, {E, CPU_WRAPPED}),
    ("popcnt", _integral("PopulationCount"), {E, CPU_WRAPPED}),
    ("real", _real_imag, {E, CPU_WRAPPED}),
    ("round-nearest-afz", _F, {E, CPU_WRAPPED}),
    ("round-nearest-even", _F, {E, CPU_WRAPPED, YNN}),
    ("rsqrt", _FC, {E, T, X, CPU_WRAPPED, YNN}),
    ("sign", _sign, {E, XC, CPU_WRAPPED, YNN}),
    ("sine", _FC, {E, T, XC, CPU_WRAPPED, YNN}),
    ("sinh", _FC, {E, T, XC}),
    ("sqrt", _FC, {E, T, X, CPU_WRAPPED, YNN}),
    ("tan", _FC, {E, T, XC, CPU_WRAPPED, YNN}),
    ("tanh", _FC, {E, T, X, CPU_WRAPPED, YNN}),
]


def _unary_infer(name, rule):
    def infer(ops, attrs, inst):
        (s,) = ops
        expect_array(s, "operand of unary operation")
        return rule(name, s)
    return infer


def _copy_infer(ops, attrs, inst):
    return ops[0]                         # any shape, tuples included


# ---------------------------------------------------------------------------
# Binary

def _arith(op, lhs, rhs):
    """No element-type restriction beyond matching operands."""


def _no_pred(op, lhs, rhs):
    if lhs.dtype is PRED or rhs.dtype is PRED:
        fail(f"Expected element type in shape to be arithmetic type for operation {op}; "
             f"got PRED.")


def _atan2(op, lhs, rhs):
    _no_pred(op, lhs, rhs)
    if not (is_float(lhs) or is_complex(lhs)):
        fail(f"Expected input element type to be floating or complex for {op} operation; "
             f"got {type_name(lhs.dtype)}.")


def _complex(op, lhs, rhs):
    if not is_float(lhs):
        fail(f"Expected element type in shape to be floating for complex compose operation; "
             f"got {type_name(lhs.dtype)}.")


def _logical(op, lhs, rhs):
    if lhs.dtype is not PRED and not is_integral(lhs):
        fail(f"Expected pred or integral type in argument to and/or operation; "
             f"got {type_name(lhs.dtype)}.")


BINARY = [
    ("add", _arith, {E, C, CPU_WRAPPED, YNN, POS_IF}),
    ("and", _logical, {E, C, CPU_WRAPPED}),
    ("atan2", _atan2, {E, X, CPU_WRAPPED}),
    ("compare", _arith, {E, COMPARE_TYPE_BY_DTYPE, CPU_WRAPPED, LAYOUT_IGNORES_ELEMENT_SIZE}),
    ("complex", _complex, {E, CPU_WRAPPED}),
    ("divide", _no_pred, {E, X, CPU_WRAPPED, DIVISION, YNN, POS_IF}),
    ("maximum", _arith, {E, C, CPU_WRAPPED, YNN, POS_IF}),
    ("minimum", _arith, {E, C, CPU_WRAPPED, YNN, POS_IF}),
    ("mulhi", _arith, {E, C}),
    ("multiply", _arith, {E, C, CPU_WRAPPED, YNN, POS_IF}),
    ("or", _logical, {E, C, CPU_WRAPPED}),
    ("power", _no_pred, {E, X, CPU_WRAPPED, YNN}),
    ("remainder", _no_pred, {E, X, CPU_WRAPPED, DIVISION}),
    ("shift-left", _no_pred, {E, CPU_WRAPPED}),
    ("shift-right-arithmetic", _no_pred, {E, CPU_WRAPPED}),
    ("shift-right-logical", _no_pred, {E, CPU_WRAPPED}),
    ("subtract", _no_pred, {E, CPU_WRAPPED, YNN}),
    ("xor", _logical, {E, C, CPU_WRAPPED}),
]


def no_implicit_broadcast(op: str, result, operands) -> None:
    """The verifier's CheckElementwiseInstruction."""
    for s in operands:
        if not compatible_ignoring_type(s, result):
            fail(f"Implicit broadcast is not allowed in HLO.Found different shapes for "
                 f"instruction {op}.\noutput: {human(result)}\noperand: {human(s)}")


def elementwise_binary_shape(op: str, lhs, rhs):
    """InferElementwiseBinaryOpShape with empty broadcast_dimensions."""
    expect_array(lhs, "lhs of elementwise binary operation")
    expect_array(rhs, "rhs of elementwise binary operation")
    if not same_type_ignoring_fp(lhs, rhs):
        fail(f"Binary op {op} with different element types: {human(lhs)} and {human(rhs)}.")
    dtype = higher_precision(lhs.dtype, rhs.dtype)
    if compatible_ignoring_fp(lhs, rhs):
        result = change_type(lhs, dtype)
        if rhs.dynamic and any(rhs.dynamic):
            dyn = tuple(a or b for a, b in zip(result.dynamic or (False,) * lhs.rank,
                                               rhs.dynamic))
            result = type(result)(result.dtype, result.dims, dyn, result.layout)
        return result
    if lhs.rank != rhs.rank:
        small, large = (rhs, lhs) if lhs.rank > rhs.rank else (lhs, rhs)
        if not is_scalar(small):
            fail(f"Shapes must be equal rank, but are {human(small)} and {human(large)}")
        return make(dtype, large.dims, large.dynamic)
    dims = []
    for a, b in zip(lhs.dims, rhs.dims):
        if a == b or b == 1:
            dims.append(a)
        elif a == 1:
            dims.append(b)
        else:
            fail(f"Binary op with incompatible shapes: {human(lhs)} and {human(rhs)}.")
    return make(dtype, dims)


_DEFAULT_COMPARE = {"float": "FLOAT", "complex": "FLOAT", "int": "SIGNED", "uint": "UNSIGNED",
                    "pred": "UNSIGNED"}


def default_compare_type(dtype) -> str:
    """Comparison::DefaultComparisonType: what compare's `type` is when not printed."""
    return _DEFAULT_COMPARE.get(dtype.kind, "UNSIGNED")


def _check_compare_type(ctype, operand) -> None:
    if ctype is None:
        return
    if is_float(operand):
        if ctype not in ("FLOAT", "TOTALORDER"):
            fail(f"Expected comparison type FLOAT or TOTALORDER.\nactual: {ctype}\n"
                 f"operand: {human(operand)}")
    elif ctype != default_compare_type(operand.dtype):
        fail(f"Expected comparison type {default_compare_type(operand.dtype)}.\n"
             f"actual: {ctype}\noperand: {human(operand)}")


def _binary_infer(name, check):
    def infer(ops, attrs, inst):
        lhs, rhs = ops
        expect_array(lhs, f"lhs of binary operation {name}")
        expect_array(rhs, f"rhs of binary operation {name}")
        check(name, lhs, rhs)
        result = elementwise_binary_shape(name, lhs, rhs)
        if name == "complex":
            pair = (lhs.dtype.name, rhs.dtype.name)
            if pair not in (("f32", "f32"), ("f64", "f64")):
                fail("Complex component type is not implemented.")
            result = change_type(result, "c64" if pair[0] == "f32" else "c128")
        elif name == "compare":
            result = change_type(result, PRED)
            _check_compare_type(attrs.get("type"), rhs)
        no_implicit_broadcast(name, result, (lhs, rhs))
        return result
    return infer


# ---------------------------------------------------------------------------
# Ternary

def _select_infer(ops, attrs, inst):
    pred, on_true, on_false = ops
    expect_array(pred, "select pred")
    expect_array(on_true, "select on-true")
    expect_array(on_false, "select on-false")
    if not compatible_ignoring_fp(on_true, on_false):
        fail(f"Operands to select must be the same shape; got {human(on_true)} and "
             f"{human(on_false)}.")
    if pred.dtype is not PRED:
        fail(f"Select's pred operand must have PRED element type; got {human(pred)}.")
    if pred.dims != on_true.dims and not is_scalar(pred):
        fail(f"Operands to select and predicate must be the same shape; got "
             f"{human(on_true)} and {human(pred)}.")
    result = change_type(on_true if is_scalar(pred) else pred,
                         higher_precision(on_true.dtype, on_false.dtype))
    no_implicit_broadcast("select", result, ops)
    return result


def _clamp_infer(ops, attrs, inst):
    lo, operand, hi = ops
    expect_array(lo, "clamp min")
    expect_array(operand, "clamp operand")
    expect_array(hi, "clamp max")
    if not (same_type_ignoring_fp(lo, operand) and same_type_ignoring_fp(hi, operand)):
        fail(f"Clamp with incompatible element types: {human(lo)}, {human(operand)}, "
             f"{human(hi)}.")
    for bound in (lo, hi):
        if not is_scalar(bound) and bound.dims != operand.dims:
            fail(f"Clamp with incompatible shapes: {human(lo)}, {human(operand)}, "
                 f"{human(hi)}.")
    no_implicit_broadcast("clamp", operand, ops)
    return operand


# ---------------------------------------------------------------------------
# Conversions: the result element type is written in the text

def _convert_infer(ops, attrs, inst):
    (s,) = ops
    out = need_declared(inst, "convert")
    if not (getattr(s, "dtype", None) is not None and s.dtype.is_array
            and getattr(out, "dtype", None) is not None and out.dtype.is_array):
        fail(f"Convert does not allow non-arrays, so cannot convert from {human(s)} to "
             f"{type_name(out.dtype) if getattr(out, 'dtype', None) else human(out)}.")
    return change_type(s, out.dtype)


def _bitcast_convert_infer(ops, attrs, inst):
    (s,) = ops
    out = need_declared(inst, "bitcast-convert")
    new = getattr(out, "dtype", None)
    old = getattr(s, "dtype", None)
    if new is not None and old is not None and (old.kind == "complex") != (new.kind == "complex"):
        fail(f"Conversion between complex and real type {human(s)} => {type_name(new)}.")
    if old is None or not old.is_array or new is None or not new.is_array:
        fail(f"Cannot convert from or to tuple type; requested conversion: {human(s)} => "
             f"{human(out)}.")
    a, b = s.dtype.bits, new.bits
    if max(a, b) % min(a, b):
        fail(f"Cannot bitcast types with undivisible bit-widths: {type_name(s.dtype)} => "
             f"{type_name(new)}.")
    ratio = max(a, b) // min(a, b)
    if a > b:
        return make(new, s.dims + (ratio,))
    if a < b:
        if s.rank < 1 or s.dims[-1] != ratio:
            last = s.dims[-1] if s.rank else 0
            fail(f"Last dimension of input shape={last} is not equal to ratio of "
                 f"bit-widths={ratio} for bitcast-convert from {human(s)} to {type_name(new)}")
        return make(new, s.dims[:-1])
    return change_type(s, new)


def _stochastic_convert_infer(ops, attrs, inst):
    operand, random = ops
    out = need_declared(inst, "stochastic-convert")
    expect_array(operand, "lhs of stochastic convert operation")
    expect_array(random, "rhs of stochastic convert operation")
    if random.dtype.kind != "uint":
        fail(f"Random numbers for stochastic convert must be unsigned integers, but got: "
             f"{random}")
    if not is_float(operand):
        fail(f"Stochastic convert supports only floating point operand conversion, but got: "
             f"{random}")
    if operand.dtype.bits != random.dtype.bits:
        fail(f"The random number is required to have same bits as the operand. But got "
             f"random bits: {random.dtype.bits}, operand bits: {operand.dtype.bits}")
    if operand.dims != random.dims:
        fail(f"Stochastic convert operand shape does not match random tensor shape: "
             f"{operand} vs {random}.")
    return change_type(operand, out.dtype)


def _reduce_precision_infer(ops, attrs, inst):
    (s,) = ops
    need_declared(inst, "reduce-precision")
    if not is_float(s):
        fail(f"Expected element type in shape to be floating point for ReducePrecision "
             f"operation; got {type_name(s.dtype)}.")
    exponent, mantissa = attrs.get("exponent_bits", 1), attrs.get("mantissa_bits", 0)
    if exponent < 1:
        fail(f"Expected exponent_bits >= 1; got {exponent}.")
    if mantissa < 0:
        fail(f"Expected non-negative mantissa_bits; got {mantissa}.")
    return s


# ---------------------------------------------------------------------------
# Registration

for _name, _rule, _traits in UNARY:
    register(OpDef(_name, 1, traits=frozenset(_traits), infer=_unary_infer(_name, _rule)))

register(OpDef("copy", 1, traits=frozenset({E}), infer=_copy_infer),
         CAN_CHANGE_LAYOUT, MEMORY_SPACE_MOVER)

for _name, _check, _traits in BINARY:
    _attrs = ()
    if _name == "compare":
        _attrs = (AttrSpec("direction", "direction", required=True),
                  AttrSpec("type", "comparison_type"))  # default: default_compare_type()
    register(OpDef(_name, 2, _attrs, frozenset(_traits), _binary_infer(_name, _check)))

register(OpDef("select", 3, traits=frozenset({E, CPU_WRAPPED}), infer=_select_infer))
register(OpDef("clamp", 3, traits=frozenset({E, CPU_WRAPPED}), infer=_clamp_infer))

register(OpDef("convert", 1, traits=frozenset({E, SHAPE_REQUIRED, CPU_WRAPPED, YNN}),
               infer=_convert_infer), LAYOUT_IGNORES_ELEMENT_SIZE)
# Elementwise in XLA only when the bit widths match (IsElementwiseImpl).
register(OpDef("bitcast-convert", 1, traits=frozenset({SHAPE_REQUIRED, CPU_WRAPPED}),
               infer=_bitcast_convert_infer))
register(OpDef("stochastic-convert", 2, traits=frozenset({E, SHAPE_REQUIRED}),
               infer=_stochastic_convert_infer))
register(OpDef("reduce-precision", 1,
               (AttrSpec("exponent_bits", "int", required=True),
                AttrSpec("mantissa_bits", "int", required=True)),
               frozenset({E, SHAPE_REQUIRED}), _reduce_precision_infer), CPU_WRAPPED,
         MIXED_OPERANDS_OK)
