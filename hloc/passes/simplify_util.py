"""Helpers shared by the simplification passes: building, replacing, evaluating, inlining.

`Builder` plays XLA's MakeXxxHlo (hlo_creation_utils.cc): it inserts new instructions
before the one being rewritten, with shapes from the registry's rules (or given, for the
ops whose shape is written in the text). `replace` is HloComputation::ReplaceInstruction:
metadata moves to the replacement when it has none, and the old instruction and any
operands it leaves dead are removed. `constant_array`/`is_all` read constants through
broadcasts (XLA's IsAll), `evaluate` runs a constant subgraph on the reference
interpreter (HloEvaluator's role; it steps hloc.interp's Interpreter one instruction at
a time), `clone_computation`/`inline_computation` are the parts of
HloComputation::Clone and CallInliner the while and conditional simplifiers need, and
`dce` is HloDCE for the passes that end with one.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..diagnostics import HlocError
from ..ir.dtypes import DTYPES, PRED, DType
from ..ir.literal import literal_from_array
from ..ir.module import Computation, Instruction, Module
from ..ir.rewriter import add_instruction, has_side_effect, uniquer
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
    """Creates instructions in `comp` just before `before` (operands precede it)."""

    def __init__(self, comp: Computation, before: Instruction | None = None):
        self.comp = comp
        self.before = before
        self.created: list[Instruction] = []

    def add(self, opcode: str, shape, operands=(), attrs=None, *, literal=None,
            name: str | None = None) -> Instruction:
        inst = add_instruction(self.comp, opcode, shape, list(operands), attrs,
                               name=name, before=self.before, literal=literal)
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
# Replacing and removing

def has_op_name(inst: Instruction) -> bool:
    meta = inst.attrs.get("metadata")
    return meta is not None and "op_name=" in getattr(meta, "text", str(meta))


def replace(old: Instruction, new: Instruction) -> None:
    """HloComputation::ReplaceInstruction: uses of `old` go to `new`, metadata follows
    when `new` has no op_name, and `old` plus operands left dead are removed."""
    if old is new:
        return
    if "metadata" in old.attrs and not has_op_name(new):
        new.attrs["metadata"] = old.attrs["metadata"]
    old.replace_all_uses_with(new)
    remove_if_dead(old)


def is_removable(inst: Instruction) -> bool:
    comp = inst.parent
    return (comp is not None and not inst.users and inst is not comp.root
            and inst.opcode != "parameter" and not inst.control_predecessors
            and not has_side_effect(inst))


def remove_if_dead(inst: Instruction, control_targets: set | None = None) -> None:
    """RemoveInstructionAndUnusedOperands, iteratively."""
    work = [inst]
    while work:
        cur = work.pop()
        if not is_removable(cur) or (control_targets and id(cur) in control_targets):
            continue
        operands = list(dict.fromkeys(cur.operands))
        cur.parent.remove_instruction(cur)
        work.extend(o for o in operands if not o.users)


def control_targets(comp: Computation) -> set:
    """ids of instructions that are some instruction's control predecessor."""
    out = set()
    for inst in comp.instructions:
        for p in inst.control_predecessors:
            out.add(id(p))
    return out


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
    arr = constant_array(through_broadcasts(inst))
    if arr is None or not isinstance(inst.shape, ArrayShape):
        return False
    dtype = through_broadcasts(inst).shape.dtype
    if dtype is PRED:
        if value not in (0, 1, True, False):
            return False
        return bool(np.all(arr == bool(value)))
    if dtype.kind == "uint" and value < 0:
        return False
    if dtype.kind in ("int", "uint"):
        return bool(np.all(arr.astype(object) == int(value)))
    with np.errstate(all="ignore"):
        wide = arr.astype(np.complex128 if dtype.is_complex else np.float64)
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
    order = _operand_post_order(root, bindings)
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


def _operand_post_order(root: Instruction, bindings) -> list[Instruction]:
    seen = {id(root)}
    out = []
    stack = [(root, 0)]
    while stack:
        inst, i = stack[-1]
        if id(inst) in bindings or i >= len(inst.operands):
            stack.pop()
            out.append(inst)
            continue
        stack[-1] = (inst, i + 1)
        op = inst.operands[i]
        if id(op) not in seen:
            seen.add(id(op))
            stack.append((op, 0))
    return out


# ---------------------------------------------------------------------------
# Cloning and inlining

def _clone_attrs(inst: Instruction) -> dict:
    return dict(inst.attrs)


def clone_instruction(inst: Instruction, comp: Computation, operands, *, name=None,
                      before=None, shape=None) -> Instruction:
    shape = shape if shape is not None else inst.shape
    if inst.opcode == "parameter":
        return add_parameter(comp, shape, inst.parameter_number, name or inst.name,
                             _clone_attrs(inst))
    return add_instruction(comp, inst.opcode, shape, list(operands), _clone_attrs(inst),
                           name=name or inst.name, before=before, literal=inst.literal)


def add_parameter(comp: Computation, shape, number: int, name: str,
                  attrs=None) -> Instruction:
    """A new parameter(number) of comp (kept in its parameters list)."""
    module = comp.parent
    inst = Instruction(uniquer(module).unique(name) if module is not None else name,
                       REGISTRY["parameter"], shape, (), dict(attrs or {}))
    inst.parameter_number = number
    first = next((i for i in comp.instructions if i.opcode != "parameter"), None)
    comp.add_instruction(inst, before=first)
    return inst


def inline_computation(callee: Computation, args, dest: Computation,
                       before: Instruction) -> Instruction:
    """Clone callee's instructions into dest before `before`, its parameters bound to
    args (CallInliner::Inline); returns the clone of callee's root."""
    mapping: dict[int, Instruction] = {}
    for p in callee.parameters:
        mapping[id(p)] = args[p.parameter_number]
    for inst in _computation_post_order(callee):
        if id(inst) in mapping:
            continue
        new = clone_instruction(inst, dest, [mapping[id(o)] for o in inst.operands],
                                before=before)
        new.control_predecessors = [mapping[id(p)] for p in inst.control_predecessors
                                    if id(p) in mapping]
        mapping[id(inst)] = new
    return mapping[id(callee.root)]


def _computation_post_order(comp: Computation) -> list[Instruction]:
    from ..ir.rewriter import post_order
    return post_order(comp)


def clone_computation(comp: Computation, module: Module, suffix: str = "clone",
                      *, param_shapes=None) -> Computation:
    """HloComputation::Clone into `module` (names get `.suffix`, uniquified)."""
    names = uniquer(module)
    new = Computation(names.unique(f"{comp.name}.{suffix}"))
    module.add_computation(new)
    mapping: dict[int, Instruction] = {}
    for inst in _computation_post_order(comp):
        shape = None
        if inst.opcode == "parameter" and param_shapes is not None:
            shape = param_shapes[inst.parameter_number]
        mapping[id(inst)] = clone_instruction(
            inst, new, [mapping[id(o)] for o in inst.operands],
            name=f"{inst.name}.{suffix}", shape=shape)
    for inst in comp.instructions:
        mapping[id(inst)].control_predecessors = [mapping[id(p)]
                                                  for p in inst.control_predecessors]
    new.root = mapping[id(comp.root)]
    return new


# ---------------------------------------------------------------------------
# Module-level helpers

def callers(module: Module) -> dict[int, list[Instruction]]:
    """id(computation) -> the instructions that call it."""
    out: dict[int, list[Instruction]] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            for c in inst.called_computations():
                out.setdefault(id(c), []).append(inst)
    return out


def dce(module: Module) -> bool:
    """HloDCE: remove dead instructions everywhere, then unreachable computations."""
    changed = False
    for comp in module.computations:
        targets = control_targets(comp)
        for inst in reversed(list(comp.instructions)):
            if inst.parent is comp and not inst.users and inst is not comp.root and \
                    id(inst) not in targets and not has_side_effect(inst):
                before = len(comp.instructions)
                remove_if_dead(inst, targets)
                changed |= len(comp.instructions) != before
    n = len(module.computations)
    remove_unreachable_computations(module)
    return changed or len(module.computations) != n


def remove_unreachable_computations(module: Module) -> None:
    """Drop computations not reachable from the entry."""
    if module.entry is None:
        return
    seen = {id(module.entry)}
    stack = [module.entry]
    while stack:
        comp = stack.pop()
        for inst in comp.instructions:
            for c in inst.called_computations():
                if id(c) not in seen:
                    seen.add(id(c))
                    stack.append(c)
    for comp in list(module.computations):
        if id(comp) not in seen:
            module.remove_computation(comp)
