"""The op registry: one OpDef per opcode, holding every fact about it.

Spelling, arity, the typed attribute schema (which drives parsing, printing,
verification and CSE keys), traits, the shape rule and the semantic key of an
elementwise row all live in the OpDef, declared once in a theme module's row and frozen;
executors attach their facets (evaluation, emitters) through hloc.ops.facets, so adding
an op touches one place per executor. Theme
modules (`elementwise.py`, `data_movement.py`, ...) call `register()`; `REGISTRY` maps the
text spelling to the OpDef.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

VARIADIC = None


class ShapeInferenceError(Exception):
    """A shape rule failed; the builder/verifier adds the location."""


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: str                 # a key of hloc.syntax.attr_kinds.KINDS
    required: bool = False
    default: Any = None       # value when absent (never printed when equal)
    # XLA stores the value and always prints it, the default included when the text
    # left it out (topk `largest`, collectives' `replica_groups={}`, dot contracting dims).
    always_print: bool = False
    # False: XLA's parser accepts and checks it, then drops it (never printed back).
    printed: bool = True


@dataclass(frozen=True, eq=False)
class OpDef:
    """Every fact about one opcode, declared once in its theme module's row and frozen.
    What executors attach (the interpreter's evaluation, the back end's emitters) lives
    in hloc.ops.facets, not here."""
    name: str
    # Operand count: an int, VARIADIC (None), or a (min, max) tuple (max None = unbounded).
    arity: int | tuple | None
    attrs: tuple[AttrSpec, ...] = ()
    traits: frozenset = frozenset()
    # infer(operand_shapes, attrs, inst) -> Shape; `attrs` maps attribute name to typed
    # value (absent = not given); `inst` gives access to called computations.
    # Raises ShapeInferenceError. None (or the SHAPE_REQUIRED trait): the result shape
    # must be written in the text.
    infer: Callable | None = None
    # The reason this op cannot run, when it is known not to be executable here.
    unsupported: str | None = None
    # parse_check(inst) -> None | message | (message, attribute name): checks XLA's
    # parser makes once an instruction is complete, beyond the shape rule. A message is
    # reported at the next token (where XLA reports it), or at the named attribute.
    parse_check: Callable | None = None
    # The elementwise row's meaning, shared by every executor (facets attached with
    # hloc.ops.facets.attach_semantic): e.g. "add"; defaults to the name for elementwise rows.
    semantic: str | None = None
    # XLA's parser reads this op's attributes before it checks the operand count (its
    # operand list once had optional extras), so an unknown attribute is reported first.
    arity_after_attrs: bool = False
    attr_index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        put = object.__setattr__
        traits = set(self.traits)
        if self.name not in _STRICT_SHAPE:
            traits.add(MIXED_PRECISION_OK)
        if self.infer is None:
            traits.add(SHAPE_REQUIRED)
        if ELEMENTWISE in traits:
            traits.add(ELEMENTAL)
            if self.semantic is None:
                put(self, "semantic", self.name)
        put(self, "traits", frozenset(traits))
        put(self, "attr_index", {a.name: a for a in self.attrs})
        put(self, "required_attrs", tuple(a.name for a in self.attrs if a.required))
        put(self, "attr_names", tuple(a.name for a in self.attrs))
        put(self, "all_specs", {n: spec for n in {*self.attr_index, *GENERIC_INDEX}
                                if (spec := self._attr_spec(n)) is not None})

    def _attr_spec(self, name: str) -> AttrSpec | None:
        spec = self.attr_index.get(name)
        if spec is not None:
            return spec
        if name == "result_accuracy" and TRANSCENDENTAL not in self.traits:
            return None
        return GENERIC_INDEX.get(name)

    def arity_ok(self, n: int) -> bool:
        a = self.arity
        if a is VARIADIC:
            return True
        if isinstance(a, int):
            return n == a
        lo, hi = a
        return n >= lo and (hi is None or n <= hi)

    def arity_text(self) -> str:
        a = self.arity
        if isinstance(a, int):
            return str(a)
        lo, hi = a
        return f"at least {lo}" if hi is None else f"{lo} to {hi}"


REGISTRY: dict[str, OpDef] = {}

# Traits (strings, so tables stay readable)
ELEMENTWISE = "elementwise"
COMMUTATIVE = "commutative"
SIDE_EFFECT = "side_effect"        # never removed or CSE'd
CALLS = "calls"                    # has called computations
EXPENSIVE = "expensive"            # not duplicated by fusion
TRANSCENDENTAL = "transcendental"  # accepts result_accuracy
COLLECTIVE = "collective"
ASYNC = "async"                    # async-start / -update / -done (share one computation)
CONTROL_FLOW = "control_flow"      # call, while, conditional (FlattenCallGraph's context)
# XLA's parser cannot infer this op's result shape (it must be written in the text);
# `infer` then checks the written shape for the verifier and raises "cannot infer shape
# for opcode: X" when there is none.
SHAPE_REQUIRED = "shape_required"
# The verifier accepts a result whose floating-point types differ from the inferred ones
# (ShapeVerifier::CheckShape's allow_mixed_precision default branch).
MIXED_PRECISION_OK = "mixed_precision_ok"
EXPENSIVE_IF_COMPLEX = "expensive_if_complex"  # IsExpensive only for complex elements
MAY_SIDE_EFFECT = "may_side_effect"            # side effect depends on attributes
# compare's `type` is printed only when it differs from the element type's default.
COMPARE_TYPE_BY_DTYPE = "compare_type_by_dtype"
# A compiled back end can express the op as an element generator (each output element
# from operand elements): every ELEMENTWISE op, and data movement such as broadcast,
# reshape, transpose, slice, concatenate, pad, iota, reverse, dynamic-slice, bitcast,
# dynamic-update-slice, gather, reduce (what CpuInstructionFusion loop-fuses).
ELEMENTAL = "elemental"
# XLA:CPU's FusionWrapper wraps the op, left unfused, in a kLoop fusion of its own.
CPU_WRAPPED = "cpu_wrapped"
# YNNPACK has the op as a unary or binary operator (xla/backends/cpu/ynn_support.cc's
# GetYnnUnaryOpMap / GetYnnBinaryOpMap), so XLA:CPU may put it in a YNN fusion.
YNN_ELEMENTWISE = "ynn_elementwise"
# The interpreter's walker moves the values itself (parameters, constants, tuples, calls
# and control flow); such ops need no evaluation facet.
STRUCTURAL = "structural"
# XLA's GetInstructionCallContext is kEmbedded: the called computation is applied inside
# the op (to elements or as its body) and cannot allocate buffers. CONTROL_FLOW and ASYNC
# ops call theirs in kControlFlow (hloc.ops.call_context).
EMBEDDED_CALLS = "embedded_calls"
# Integer divide/remainder: cheap when the divisor is a scalar constant (IsExpensive).
DIVISION = "division"
# On floating-point elements: the result's sign bit is clear or the result is a NaN,
# whatever the operands (exp, abs) / when every operand's is (add, multiply, divide,
# maximum, minimum: no rounding or flush to zero gives a -0 or a negative from them).
# Emitters drop sign handling with it (hloc.backend.bounds).
SIGN_CLEAR = "sign_clear"
SIGN_CLEAR_OF_OPERANDS = "sign_clear_of_operands"
# send, recv and their -done halves (XLA's HloSendRecvInstruction): point-to-point
# transfers whose loop or branch structure must match on both sides.
SEND_RECV = "send_recv"
# replica-id, partition-id: no operands, the value is the executing device's id (the
# same for every such instruction of one program on one device, so HloCSE merges them).
DEVICE_ID = "device_id"

# Facts the verifier states about opcodes (hloc.verify):
# LayoutAssignment::InstructionCanChangeLayout (custom-call too, unless LayoutConstraint).
CAN_CHANGE_LAYOUT = "can_change_layout"
# The layout-change check lets operand and result differ in element size as well.
LAYOUT_IGNORES_ELEMENT_SIZE = "layout_ignores_element_size"
# Moves data between memory spaces only in the directions host offloading allows.
MEMORY_SPACE_MOVER = "memory_space_mover"
# CheckMixedPrecisionOperands' allow-list: operands may mix floating-point types.
MIXED_OPERANDS_OK = "mixed_operands_ok"
# CheckShape(only_compare_minor_to_major_in_layout=true): layouts compare by
# minor-to-major only.
MINOR_TO_MAJOR_ONLY = "minor_to_major_only"
# ShapeVerifier checks the op in its own handler, not against the shape rule.
OWN_SHAPE_HANDLER = "own_shape_handler"
# The shape rule reads of its called computations only their parameter and root shapes
# (and names none in its messages): the verifier may memoise it by those.
INFER_READS_SIGNATURE = "infer_reads_signature"

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
# may differ from the inferred shape in floating-point precision (MIXED_PRECISION_OK).
_STRICT_SHAPE = frozenset({
    "bitcast", "call", "conditional", "constant", "copy-done", "copy-start", "custom-call",
    "dynamic-update-slice", "get-tuple-element", "infeed", "outfeed", "opt-barrier",
    "parameter", "recv", "recv-done", "send", "send-done", "tuple", "while"})


def register(op: OpDef, *traits: str) -> OpDef:
    """Add `op` (with `traits` besides its own) to the registry."""
    if traits:
        op = replace(op, traits=op.traits | frozenset(traits))
    if op.name in REGISTRY:
        raise ValueError(f"opcode {op.name} registered twice")
    REGISTRY[op.name] = op
    return op


def lookup(name: str) -> OpDef | None:
    return REGISTRY.get(name)
