"""The op registry: one OpDef per opcode, holding every fact about it.

Spelling, arity, the typed attribute schema (which drives parsing, printing,
verification and CSE keys), traits, the shape rule, the NumPy evaluation and the LLVM
element generator all live in the OpDef, so adding an op touches one place. Theme
modules (`elementwise.py`, `data_movement.py`, ...) call `register()`; `REGISTRY` maps the
text spelling to the OpDef.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

VARIADIC = None


class ShapeInferenceError(Exception):
    """A shape rule failed; the builder/verifier adds the location."""


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: str                 # a key of hloc.ir.attrs.KINDS
    required: bool = False
    default: Any = None       # value when absent (never printed when equal)
    # XLA stores the value and always prints it, the default included when the text
    # left it out (topk `largest`, collectives' `replica_groups={}`, dot contracting dims).
    always_print: bool = False
    # False: XLA's parser accepts and checks it, then drops it (never printed back).
    printed: bool = True


@dataclass
class OpDef:
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
    # evaluate(inst, operand_values, ctx) -> value (filled in by hloc.interp).
    evaluate: Callable | None = None
    # emit: LLVM element generator (filled in by the back end).
    emit: Callable | None = None
    # The reason this op cannot run, when it is known not to be executable here.
    unsupported: str | None = None
    # parse_check(inst) -> None | message | (message, attribute name): checks XLA's
    # parser makes once an instruction is complete, beyond the shape rule. A message is
    # reported at the next token (where XLA reports it), or at the named attribute.
    parse_check: Callable | None = None
    attr_index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.attr_index = {a.name: a for a in self.attrs}
        self.required_attrs = tuple(a.name for a in self.attrs if a.required)
        self.attr_names = tuple(a.name for a in self.attrs)

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


def register(op: OpDef) -> OpDef:
    if op.name in REGISTRY:
        raise ValueError(f"opcode {op.name} registered twice")
    REGISTRY[op.name] = op
    return op


def lookup(name: str) -> OpDef | None:
    return REGISTRY.get(name)
