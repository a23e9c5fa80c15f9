"""Node colours by kind, as XLA's hlo_graph_dumper paints them.

The schemes (fill, stroke, font) are XLA's NodeColorsForScheme (Material colours) and
`scheme_for` follows HloDotDumper::GetInstructionColor as jaxlib 0.10.2's XLA has it
(checked against the DOT that `--xla_dump_hlo_as_dot` writes, tests/test_graph.py):
elementwise ops and bookkeeping white, broadcast and dynamic-update-slice yellow, data
movement green, reductions and gather purple, dot/convolution/fft dark blue, parameters
orange (dark orange when large), control flow and custom calls dark green, collectives
brown, fusion/map grey. What an op *is* comes from its OpDef traits where the registry has
the trait (elementwise, collective); the rest is the dumper's own table, kept here because
it is a drawing choice, not a fact about the op.
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
    "white": Scheme("filled", "white", "#9e9e9e", "black"),
    "yellow": Scheme("filled", "#fff9c4", "#cbc693", "black"),
    # Some operands or users are not drawn (XLA's kDashedBorder).
    "dashed": Scheme("filled,dashed", "white", "#757575", "#757575"),
}

# Fusion clusters: XLA's light grey (light red when the fusion is the highlighted node).
FUSION_CLUSTER = ("#f5f5f5", "#c2c2c2")
FUSION_CLUSTER_HIGHLIGHT = ("#ffcdd2", "#b71c1c")

# GetInstructionColor's cases for ops the registry does not mark elementwise/collective.
_BY_OPCODE = {
    **dict.fromkeys(("iota", "rng", "rng-get-and-update-state", "rng-bit-generator", "slice",
                     "sort", "topk", "get-tuple-element", "after-all", "add-dependency",
                     "tuple", "opt-barrier", "pad", "constant"), "white"),
    **dict.fromkeys(("broadcast", "dynamic-update-slice"), "yellow"),
    **dict.fromkeys(("concatenate", "dynamic-slice", "reshape", "dynamic-reshape", "reverse",
                     "transpose", "copy", "copy-start", "copy-done"), "green"),
    **dict.fromkeys(("convolution", "dot", "fft", "triangular-solve", "cholesky"),
                    "dark_blue"),
    **dict.fromkeys(("batch-norm-grad", "batch-norm-inference", "batch-norm-training",
                     "reduce", "reduce-window", "scatter", "select-and-scatter", "gather"),
                    "purple"),
    **dict.fromkeys(("domain", "fusion", "map", "get-dimension-size", "set-dimension-size"),
                    "gray"),
    **dict.fromkeys(("infeed", "outfeed", "partition-id", "replica-id", "recv", "recv-done",
                     "send", "send-done"), "brown"),
    **dict.fromkeys(("call", "conditional", "custom-call", "while"), "dark_green"),
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
    if op == "bitcast":
        return "green" if fused else "white"
    if op in _BY_OPCODE:
        return _BY_OPCODE[op]
    traits = inst.opdef.traits
    if ELEMENTWISE in traits:
        return "white"
    return "brown" if COLLECTIVE in traits else "gray"
