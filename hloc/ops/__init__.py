"""The complete op registry: importing this package registers every opcode XLA knows.

`REGISTRY` maps each text spelling to its OpDef (hloc.ops.base); `lookup(name)` finds one.
`GENERIC_ATTRS` are the attributes every instruction accepts, in XLA's printing order:
they follow the op's own attributes (whose last entries are the called computations).
A rule's contract: `infer(operand_shapes, attrs, inst)` returns the result shape or
raises ShapeInferenceError. The parser may call it only when `shape_required(op)` is
false (XLA's parser infers exactly those); the verifier calls it whenever `infer` is set,
passing the instruction so rules for SHAPE_REQUIRED ops can read the written shape.
The few facts that depend on an instruction's attributes rather than its opcode
(side effects, expense) are answered by `has_side_effect` and `is_expensive` here.
"""
from __future__ import annotations

# Theme modules register their rows on import (this order is the registry's order).
from . import collectives, control, data_movement, gather_scatter  # noqa: F401
from . import elementwise, linalg, reductions  # noqa: F401
from .base import (ASYNC, COLLECTIVE, CONTROL_FLOW, DIVISION, EMBEDDED_CALLS, EXPENSIVE,
                   EXPENSIVE_IF_COMPLEX, GENERIC_ATTRS, MAY_SIDE_EFFECT, REGISTRY,
                   SHAPE_REQUIRED, SIDE_EFFECT, AttrSpec, OpDef, ShapeInferenceError, lookup)
from .elementwise import default_compare_type

__all__ = ["REGISTRY", "GENERIC_ATTRS", "lookup", "attr_spec", "shape_required",
           "has_side_effect", "is_expensive", "opcodes_with", "opcodes_with_attr", "call_context",
           "CALL_CONTROL_FLOW", "CALL_EMBEDDED", "async_sugar", "default_compare_type",
           "OpDef", "AttrSpec", "ShapeInferenceError"]

def opcodes_with(trait: str) -> frozenset:
    """The opcodes whose OpDef has `trait`."""
    return frozenset(name for name, op in REGISTRY.items() if trait in op.traits)


CALL_CONTROL_FLOW = "kControlFlow"
CALL_EMBEDDED = "kEmbedded"


def call_context(op: OpDef) -> str | None:
    """GetInstructionCallContext: kControlFlow for control flow (call, while,
    conditional) and async ops, kEmbedded for EMBEDDED_CALLS ops, else None."""
    traits = op.traits
    if CONTROL_FLOW in traits or ASYNC in traits:
        return CALL_CONTROL_FLOW
    if EMBEDDED_CALLS in traits:
        return CALL_EMBEDDED
    return None


def opcodes_with_attr(name: str) -> frozenset:
    """The opcodes whose own attribute schema has `name`."""
    return frozenset(op.name for op in REGISTRY.values() if name in op.attr_index)


def shape_required(op: OpDef) -> bool:
    """True when the result shape must be written in the text (XLA cannot infer it)."""
    return op.infer is None or SHAPE_REQUIRED in op.traits


def attr_spec(op: OpDef, name: str) -> AttrSpec | None:
    """The schema of attribute `name` on `op` (its own or a generic one), else None."""
    return op.all_specs.get(name)


def async_sugar(name: str) -> tuple[str, str] | None:
    """`negate-start` -> ("negate", "async-start"): the async syntax sugar for opcodes
    without their own start/done pair; None when `name` is not such a spelling."""
    if name in REGISTRY:
        return None
    for suffix in ("start", "update", "done"):
        base = name[:-len(suffix) - 1]
        if name.endswith("-" + suffix) and base in REGISTRY:
            return base, "async-" + suffix
    return None


def has_side_effect(inst) -> bool:
    """HloInstruction::HasSideEffectNoRecurse for one instruction."""
    op = inst.opdef
    if SIDE_EFFECT in op.traits:
        return True
    attrs = inst.attrs
    if MAY_SIDE_EFFECT not in op.traits:
        return False
    if "custom_call_has_side_effect" in op.attr_index:
        return bool(attrs.get("custom_call_has_side_effect", False))
    if COLLECTIVE in op.traits:        # with a channel (non-SPMD) or a constrained layout
        return bool(attrs.get("constrain_layout", False)) or attrs.get("channel_id") is not None
    if ASYNC in op.traits:
        comp = attrs.get("calls")
        root = getattr(comp, "root", None)
        return root is not None and has_side_effect(root)
    return False


def is_expensive(inst) -> bool:
    """InstructionFusion::IsExpensive for one instruction."""
    op = inst.opdef
    if EXPENSIVE_IF_COMPLEX in op.traits:
        return getattr(getattr(inst.shape, "dtype", None), "kind", None) == "complex"
    if DIVISION in op.traits:
        dtype = getattr(inst.shape, "dtype", None)
        if dtype is not None and dtype.kind in ("int", "uint") and len(inst.operands) > 1:
            divisor = inst.operands[1]
            if divisor.opcode == "broadcast":
                divisor = divisor.operands[0]
            return not (divisor.opcode == "constant" and getattr(divisor.shape, "size", 0) == 1)
        return True
    return EXPENSIVE in op.traits
