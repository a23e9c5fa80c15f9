"""Helpers shared by the simplification passes: building, reading constants, evaluating.

`Builder` plays XLA's MakeXxxHlo (hlo_creation_utils.cc): it inserts new instructions
before the one being rewritten, with shapes from the registry's rules (or given, for the
ops whose shape is written in the text). `constant_array`/`is_all` read constants through
broadcasts (XLA's IsAll), `evaluate` runs a constant subgraph on the reference
interpreter (HloEvaluator's role; it steps hloc.interp's Interpreter one instruction at
a time). Replacing, removing, cloning and inlining are the graph's (hloc.ir.graph).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..diagnostics import HlocError
from ..ir.dtypes import DTYPES, PRED, DType
from ..ir.literal import literal_from_array
from ..ir.graph import operand_post_order
from ..ir.module import Computation, Instruction
from ..ir.rewriter import add_instruction
from ..ir.shape import ArrayShape, array
from ..ops import REGISTRY

# Exceptions an evaluation may raise for an instruction it cannot fold (XLA's
# TryEvaluate returning false); anything else is a bug and propagates.
EVAL_ERRORS = (HlocError, ArithmeticError, ValueError, TypeError, IndexError, KeyError)


class NotConstant(Exception):
    """The subgraph being evaluated reaches a parameter or an unfoldable op."""


# ---------------------------------------------------------------------------
# Building

class Builder:
    """Creates instructions in `comp` just before `before` (operands precede it), or,
    with `after` set instead, in order just after `after` (for a rewrite whose new
    instruction uses the one it rewrites)."""

    def __init__(self, comp: Computation, before: Instruction | None = None):
        self.comp = comp
        self.before = before
        self.after: Instruction | None = None
        self.created: list[Instruction] = []

    def add(self, opcode: str, shape, operands=(), attrs=None, *, literal=None,
            name: str | None = None) -> Instruction:
        inst = add_instruction(self.comp, opcode, shape, list(operands), attrs,
                               name=name, before=self.before, after=self.after,
                               literal=literal)
        if self.after is not None:
            self.after = inst
        self.created.append(inst)
        return inst

    def infer(self, opcode: str, operands, attrs=None) -> Instruction:
        attrs = dict(attrs or {})
        shape = REGISTRY[opcode].infer([o.shape for o in operands], attrs, None)
        return self.add(opcode, shape, operands, attrs)

    # constants -------------------------------------------------------------
    def constant(self, dtype: DType, value, dims=()) -> Instruction:
        shape = array(dtype, dims)
        return self.add("constant", shape, literal=literal_from_array(shape, value))

    def scalar_like(self, like: Instruction, value) -> Instruction:
        """MakeScalarLike: a scalar constant of like's type, broadcast to its shape."""
        c = self.constant(like.shape.dtype, np_scalar(like.shape.dtype, value))
        if like.shape.rank == 0:
            return c
        return self.broadcast(c, like.shape.dims, ())

    # elementwise -----------------------------------------------------------
    def unary(self, opcode: str, x: Instruction) -> Instruction:
        return self.infer(opcode, [x])

    def binary(self, opcode: str, a: Instruction, b: Instruction, attrs=None) -> Instruction:
        return self.infer(opcode, [a, b], attrs)

    def compare(self, a, b, direction: str, ctype: str | None = None) -> Instruction:
        attrs = {"direction": direction}
        if ctype is not None:
            attrs["type"] = ctype
        return self.infer("compare", [a, b], attrs)

    def select(self, p, a, b) -> Instruction:
        return self.infer("select", [p, a, b])

    def convert(self, x: Instruction, dtype: DType) -> Instruction:
        return self.add("convert", array(dtype, x.shape.dims), [x])

    # data movement ---------------------------------------------------------
    def broadcast(self, x: Instruction, out_dims, dims) -> Instruction:
        return self.add("broadcast", array(x.shape.dtype, out_dims), [x],
                        {"dimensions": tuple(dims)})

    def reshape(self, x: Instruction, dims) -> Instruction:
        return self.add("reshape", array(x.shape.dtype, dims), [x])

    def transpose(self, x: Instruction, perm) -> Instruction:
        return self.infer("transpose", [x], {"dimensions": tuple(perm)})

    def slice(self, x: Instruction, starts, limits, strides=None) -> Instruction:
        strides = tuple(strides) if strides is not None else (1,) * len(starts)
        dims = [(lim - s + st - 1) // st for s, lim, st in zip(starts, limits, strides)]
        spec = tuple((int(s), int(lim), int(st)) for s, lim, st in zip(starts, limits, strides))
        return self.add("slice", array(x.shape.dtype, dims), [x], {"slice": spec})

    def dynamic_slice(self, x: Instruction, indices, sizes) -> Instruction:
        return self.add("dynamic-slice", array(x.shape.dtype, sizes), [x, *indices],
                        {"dynamic_slice_sizes": tuple(sizes)})

    def iota(self, dtype: DType, dims, dimension: int) -> Instruction:
        return self.add("iota", array(dtype, dims), [], {"iota_dimension": dimension})

    def tuple(self, elements) -> Instruction:
        return self.infer("tuple", list(elements))

    def gte(self, t: Instruction, index: int) -> Instruction:
        return self.infer("get-tuple-element", [t], {"index": index})


def np_scalar(dtype: DType, value):
    """A NumPy scalar of the element type (value cast as C++'s static_cast would)."""
    if dtype is PRED:
        return np.bool_(bool(value))
    if dtype.kind in ("int", "uint"):
        return np.array(int(value)).astype(np.int64).astype(dtype.np)
    return np.array(value).astype(dtype.np)


# ---------------------------------------------------------------------------
# Constants

def constant_array(inst: Instruction):
    """The value of a constant (None otherwise)."""
    if inst.opcode != "constant" or not isinstance(inst.shape, ArrayShape):
        return None
    return np.asarray(inst.literal.value)


def through_broadcasts(inst: Instruction) -> Instruction:
    while inst.opcode == "broadcast":
        inst = inst.operands[0]
    return inst


def is_all(inst: Instruction, value) -> bool:
    """XLA's IsAll: a constant (seen through broadcasts) whose elements all equal value."""
    base = through_broadcasts(inst)
    arr = constant_array(base)
    if arr is None or not isinstance(inst.shape, ArrayShape):
        return False
    dtype = base.shape.dtype
    # One element (a broadcast scalar, the usual case): the same comparison without
    # np.all's reduction machinery, which made this the simplifier's main cost.
    one = arr.size == 1
    if dtype is PRED:
        if value not in (0, 1, True, False):
            return False
        return bool(arr == bool(value)) if one else bool(np.all(arr == bool(value)))
    if dtype.kind == "uint" and value < 0:
        return False
    if dtype.kind in ("int", "uint"):
        same = arr.astype(object) == int(value)
        return bool(same) if one else bool(np.all(same))
    wide_type = np.complex128 if dtype.is_complex else np.float64
    if one:     # widening one float never raises a floating-point error
        return bool(arr.astype(wide_type) == value)
    with np.errstate(all="ignore"):
        wide = arr.astype(wide_type)
    return bool(np.all(wide == value))


def scalar_value(inst: Instruction):
    """The single value of an effective-scalar constant (Python int/float/bool), else None."""
    arr = constant_array(inst)
    if arr is None or arr.size != 1:
        return None
    v = arr.reshape(()).item()
    if isinstance(v, complex):
        return None
    if inst.shape.dtype.kind == "float":
        return float(v)
    return v


def is_effective_scalar(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.size == 1 and shape.dtype.is_array


def is_zero_element(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.is_array and 0 in shape.dims


# ---------------------------------------------------------------------------
# Types

def _float_facts(dt: DType):
    info = ml_dtypes.finfo(dt.np)
    with np.errstate(all="ignore"):
        has_inf = bool(np.isinf(np.array(np.inf).astype(dt.np)))
        has_nan = bool(np.isnan(np.array(np.nan).astype(dt.np)))
        neg_zero = bool(np.signbit(np.array(-0.0).astype(dt.np)))
    return info, has_inf, has_nan, neg_zero


def cast_preserves_values(src: DType, dst: DType) -> bool:
    """primitive_util::CastPreservesValues."""
    if src is dst:
        return True
    if dst.name == "f8e8m0fnu":
        return False
    if src is PRED:
        return True
    if dst is PRED:
        return False
    if dst.is_complex:
        src_c = DTYPES["f32" if src.name == "c64" else "f64"] if src.is_complex else src
        return cast_preserves_values(src_c, DTYPES["f32" if dst.name == "c64" else "f64"])
    if src.is_complex:
        return False
    if src.is_float and dst.is_float:
        a, a_inf, a_nan, a_nz = _float_facts(src)
        b, b_inf, b_nan, b_nz = _float_facts(dst)
        return ((not a_inf or b_inf) and (not a_nan or b_nan) and (not a_nz or b_nz)
                and a.nmant <= b.nmant and a.maxexp <= b.maxexp
                and a.minexp - a.nmant >= b.minexp - b.nmant)
    if not src.is_integral:
        return False
    src_bits = src.bits - 1 if src.kind == "int" else src.bits
    if dst.is_float:
        info = ml_dtypes.finfo(dst.np)
        return src_bits <= info.nmant + 1 and src.bits - 1 < info.maxexp
    if src.kind == "int" and dst.kind == "uint":
        return False
    dst_bits = dst.bits - 1 if dst.kind == "int" else dst.bits
    return src_bits <= dst_bits


def min_value(dt: DType):
    """LiteralUtil::MinValue: -inf for floats with infinities, else the lowest value."""
    if dt.kind in ("int", "uint"):
        return int(ml_dtypes.iinfo(dt.np).min) if dt.bits >= 8 else _narrow_int(dt)[0]
    if dt.is_float:
        info, has_inf, _, _ = _float_facts(dt)
        return -math.inf if has_inf else float(info.min)
    return None


def max_value(dt: DType):
    if dt.kind in ("int", "uint"):
        return int(ml_dtypes.iinfo(dt.np).max) if dt.bits >= 8 else _narrow_int(dt)[1]
    if dt.is_float:
        info, has_inf, _, _ = _float_facts(dt)
        return math.inf if has_inf else float(info.max)
    return None


def _narrow_int(dt: DType):
    if dt.kind == "uint":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


# ---------------------------------------------------------------------------
# Evaluation (HloEvaluator's role)

def evaluate(root: Instruction, bindings: dict | None = None, *, interpreter=None,
             stop=None):
    """Evaluate `root` from constants (and `bindings`: id(inst) -> value).

    Raises NotConstant when the graph reaches a parameter, an instruction `stop(inst)`
    rejects, or one the interpreter cannot evaluate."""
    from ..interp import Interpreter
    bindings = dict(bindings or {})
    comp = root.parent
    if interpreter is None:
        interpreter = Interpreter(comp.parent if comp is not None else None)
    env: dict[int, object] = {}
    order = operand_post_order(root, stop=lambda i: id(i) in bindings)
    for inst in order:
        key = id(inst)
        if key in bindings:
            env[key] = bindings[key]
            continue
        if inst.opcode == "parameter" or (stop is not None and stop(inst)):
            raise NotConstant(inst.name)
        try:
            env[key] = interpreter._eval(inst, env, [], interpreter.ctx)
        except EVAL_ERRORS as e:
            raise NotConstant(f"{inst.name}: {e}") from e
    return env[id(root)]
