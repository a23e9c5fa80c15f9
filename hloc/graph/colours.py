"""Node colours by kind, as XLA's hlo_graph_dumper paints them.

The schemes (fill, stroke, font) are XLA's NodeColorsForScheme (Material colours) and
`scheme_for` follows HloDotDumper::GetInstructionColor: elementwise ops yellow (white
when scalar), data movement green (white when scalar or fused), reductions purple,
dot/convolution/fft dark blue, parameters orange (dark orange when large), control flow
and custom calls dark green, collectives brown, fusion/map grey, bookkeeping white.
What an op *is* comes from its OpDef traits where the registry has the trait
(elementwise, collective); the rest is the dumper's own table, kept here because it is a
drawing choice, not a fact about the op.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.shape import ArrayShape
from ..ops.base import COLLECTIVE, ELEMENTWISE


@dataclass(frozen=True)
class Scheme:
    style: str
    fill: str
    stroke: str
    font: str


SCHEMES = {
    "blue": Scheme("filled", "#bbdefb", "#8aacc8", "black"),
    "brown": Scheme("filled", "#bcaaa4", "#8c7b75", "black"),
    "dark_blue": Scheme("filled", "#1565c0", "#003c8f", "white"),
    "dark_green": Scheme("filled", "#2e7d32", "#005005", "white"),
    "dark_orange": Scheme("filled", "#ffb74d", "#c88719", "black"),
    "dark_red": Scheme("filled", "#b71c1c", "#7f0000", "white"),
    "gray": Scheme("filled", "#cfd8dc", "#9ea7aa", "black"),
    "green": Scheme("filled", "#c8e6c9", "#97b498", "black"),
    "orange": Scheme("filled", "#ffe0b2", "#cbae82", "black"),
    "purple": Scheme("filled", "#e1bee7", "#af8eb5", "black"),
    "red": Scheme("filled", "#ffcdd2", "#cb9ca1", "black"),
    "white": Scheme("filled", "white", "black", "black"),
    "yellow": Scheme("filled", "#fff9c4", "#cbc693", "black"),
    # Some operands or users are not drawn (XLA's kDashedBorder).
    "dashed": Scheme("filled,dashed", "white", "#757575", "#757575"),
}

# Fusion clusters: XLA's light grey (light red when the fusion is the highlighted node).
FUSION_CLUSTER = ("#f5f5f5", "#c2c2c2")
FUSION_CLUSTER_HIGHLIGHT = ("#ffcdd2", "#b71c1c")

# GetInstructionColor's cases for ops the registry does not mark elementwise/collective.
_YELLOW = {"bitcast-convert", "clamp", "convert", "iota", "rng", "rng-get-and-update-state",
           "rng-bit-generator", "select", "slice", "sort", "stochastic-convert"}
_WHITE = {"bitcast", "get-tuple-element", "after-all", "add-dependency", "tuple",
          "opt-barrier", "constant"}
_MOVEMENT = {"concatenate", "dynamic-slice", "gather", "pad", "reshape", "dynamic-reshape",
             "reverse", "transpose"}
_BY_OPCODE = {
    "copy": "green", "copy-start": "green", "copy-done": "green",
    "convolution": "dark_blue", "dot": "dark_blue", "fft": "dark_blue",
    "triangular-solve": "dark_blue", "cholesky": "dark_blue",
    "reduce-precision": "red",
    "batch-norm-grad": "purple", "batch-norm-inference": "purple",
    "batch-norm-training": "purple", "reduce": "purple", "reduce-window": "purple",
    "scatter": "purple", "select-and-scatter": "purple",
    "domain": "gray", "fusion": "gray", "map": "gray", "get-dimension-size": "gray",
    "set-dimension-size": "gray",
    "infeed": "brown", "outfeed": "brown", "partition-id": "brown", "replica-id": "brown",
    "recv": "brown", "recv-done": "brown", "send": "brown", "send-done": "brown",
    "call": "dark_green", "conditional": "dark_green", "custom-call": "dark_green",
    "while": "dark_green",
}


def is_effective_scalar(shape) -> bool:
    return isinstance(shape, ArrayShape) and all(d == 1 for d in shape.dims)


def is_small(shape) -> bool:
    """XLA's IsSmall: fewer than 4096 elements in all leaves (tokens count as small)."""
    total = 0
    for leaf in shape.leaves():
        if not isinstance(leaf, ArrayShape) or not leaf.dtype.is_array:
            return True
        total += leaf.size
    return total < 4096


def scheme_for(inst, fused: bool) -> str:
    """The colour scheme name for `inst`; `fused`: it sits in a fusion computation."""
    op = inst.opcode
    if op.startswith("async-") and "calls" in inst.attrs:
        wrapped = inst.attrs["calls"].root       # async ops take the wrapped op's colour
        if wrapped is not None and wrapped is not inst:
            return scheme_for(wrapped, fused)
    if op == "parameter":
        return "orange" if is_small(inst.shape) else "dark_orange"
    if op in _BY_OPCODE:
        return _BY_OPCODE[op]
    traits = inst.opdef.traits
    if ELEMENTWISE in traits or op in _YELLOW:
        return "white" if is_effective_scalar(inst.shape) else "yellow"
    if op in _WHITE:
        return "white"
    if op == "broadcast":
        scalar_in = inst.operands and is_effective_scalar(inst.operands[0].shape)
        return "white" if fused and scalar_in else "green"
    if op in _MOVEMENT:
        return "white" if fused or is_effective_scalar(inst.shape) else "green"
    if op == "dynamic-update-slice":
        return "white" if is_effective_scalar(inst.shape) else "green"
    return "brown" if COLLECTIVE in traits else "gray"
