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

from . import collectives, control, data_movement, elementwise, linalg, reductions  # noqa: F401
from .base import (EXPENSIVE, EXPENSIVE_IF_COMPLEX, MIXED_PRECISION_OK, REGISTRY,
                   SHAPE_REQUIRED, SIDE_EFFECT, TRANSCENDENTAL, AttrSpec, OpDef,
                   ShapeInferenceError, lookup)
from .elementwise import default_compare_type

__all__ = ["REGISTRY", "GENERIC_ATTRS", "lookup", "attr_spec", "shape_required",
           "has_side_effect", "is_expensive", "opcodes_with", "async_sugar", "default_compare_type",
           "OpDef", "AttrSpec", "ShapeInferenceError"]

# Printed after the op's attributes, in this order (HloInstruction::PrintWithCanonicalNameMap;
# checked against jaxlib 0.10.2's printer). result_accuracy is accepted only by
# TRANSCENDENTAL ops; parameter_replication belongs to `parameter` (its first attribute).
GENERIC_ATTRS: tuple[AttrSpec, ...] = (
    AttrSpec("sharding", "verbatim"),
    AttrSpec("frontend_attributes", "verbatim"),
    AttrSpec("control-predecessors", "instruction_list"),
    AttrSpec("statistics", "verbatim"),
    AttrSpec("result_accuracy", "result_accuracy"),
    AttrSpec("origin", "verbatim"),
    AttrSpec("metadata", "verbatim"),
    AttrSpec("backend_config", "verbatim"),
)
GENERIC_INDEX = {a.name: a for a in GENERIC_ATTRS}

# ShapeVerifier::CheckShape compares these opcodes' shapes exactly; every other opcode
# may differ from the inferred shape in floating-point precision.
_STRICT_SHAPE = frozenset({
    "bitcast", "call", "conditional", "constant", "copy-done", "copy-start", "custom-call",
    "dynamic-update-slice", "get-tuple-element", "infeed", "outfeed", "opt-barrier",
    "parameter", "recv", "recv-done", "send", "send-done", "tuple", "while"})

for _op in REGISTRY.values():
    _extra = set()
    if _op.name not in _STRICT_SHAPE:
        _extra.add(MIXED_PRECISION_OK)
    if _op.infer is None:
        _extra.add(SHAPE_REQUIRED)
    _op.traits = _op.traits | _extra


def opcodes_with(trait: str) -> frozenset:
    """The opcodes whose OpDef has `trait`."""
    return frozenset(name for name, op in REGISTRY.items() if trait in op.traits)


def shape_required(op: OpDef) -> bool:
    """True when the result shape must be written in the text (XLA cannot infer it)."""
    return op.infer is None or SHAPE_REQUIRED in op.traits


def attr_spec(op: OpDef, name: str) -> AttrSpec | None:
    """The schema of attribute `name` on `op` (its own or a generic one), else None."""
    return op.all_specs.get(name)


def _all_specs(op: OpDef) -> dict:
    return {name: spec for name in {*op.attr_index, *GENERIC_INDEX}
            if (spec := _attr_spec(op, name)) is not None}


def _attr_spec(op: OpDef, name: str) -> AttrSpec | None:
    spec = op.attr_index.get(name)
    if spec is not None:
        return spec
    if name == "result_accuracy" and TRANSCENDENTAL not in op.traits:
        return None
    return GENERIC_INDEX.get(name)


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
    if op.name == "custom-call":
        return bool(attrs.get("custom_call_has_side_effect", False))
    if op.name in ("all-reduce", "all-gather", "all-to-all", "reduce-scatter",
                   "collective-permute", "collective-broadcast", "ragged-all-to-all"):
        return bool(attrs.get("constrain_layout", False)) or attrs.get("channel_id") is not None
    if op.name.startswith("async-"):
        comp = attrs.get("calls")
        root = getattr(comp, "root", None)
        return root is not None and has_side_effect(root)
    return False


def is_expensive(inst) -> bool:
    """InstructionFusion::IsExpensive for one instruction."""
    op = inst.opdef
    if EXPENSIVE_IF_COMPLEX in op.traits:
        return getattr(getattr(inst.shape, "dtype", None), "kind", None) == "complex"
    if op.name in ("divide", "remainder"):
        dtype = getattr(inst.shape, "dtype", None)
        if dtype is not None and dtype.kind in ("int", "uint") and len(inst.operands) > 1:
            divisor = inst.operands[1]
            if divisor.opcode == "broadcast":
                divisor = divisor.operands[0]
            return not (divisor.opcode == "constant" and getattr(divisor.shape, "size", 0) == 1)
        return True
    return EXPENSIVE in op.traits


for _op in REGISTRY.values():
    _op.all_specs = _all_specs(_op)

# Ops hloc cannot execute, with the reason the interpreter reports (one place).
_HOST_TRANSFER = ("host transfers (infeed/outfeed/send/recv) need a running XLA client "
                  "with a host on the other end")
for _name, _why in (
        ("infeed", _HOST_TRANSFER), ("outfeed", _HOST_TRANSFER), ("send", _HOST_TRANSFER),
        ("send-done", _HOST_TRANSFER), ("recv", _HOST_TRANSFER),
        ("recv-done", _HOST_TRANSFER),
        ("ragged-dot", "ragged-dot is not implemented by XLA's evaluator either"),
        ("scaled-dot", "scaled-dot is not implemented by XLA's evaluator either")):
    REGISTRY[_name].unsupported = REGISTRY[_name].unsupported or _why
