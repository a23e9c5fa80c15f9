"""`tree_reduction_rewriter`: XLA's TreeReductionRewriter as XLA:CPU (jaxlib 0.10.2) runs it
in the "simplification" fixed point.

A reduce that reduces some dimension longer than 32 becomes a reduce-window over windows
of min(extent, 32) with equal strides ("same" padding with the init value) followed by
the same reduce of the windowed result. jaxlib 0.10.2 leaves whole the reductions that
YNNPACK will take (a reduce that starts a YNN fusion, ynn_support.starts_fusion, judged on
the layouts the module has at this point, before layout assignment; seen in its dumps: a
64x64 row sum stays one reduce, a 2x16x64 or 63x65 one is split, and so is the sum of a
64x64 square whose front-end layout is {0,1}). Variadic
reduces are left alone, as in XLA.
"""
from __future__ import annotations

from ..ir.attrs import Window, WindowDim
from ..ir.graph import post_order, replace_instruction
from ..ir.module import Module
from ..ir.rewriter import add_instruction
from ..ops import REGISTRY
from . import register
from .base import Pass, PassContext
from .ynn_support import starts_fusion

WINDOW = 32


def _window(dims, reduced) -> Window | None:
    if all(dims[d] <= WINDOW for d in reduced):
        return None
    out = []
    for i, n in enumerate(dims):
        if i not in reduced:
            out.append(WindowDim(1))
            continue
        w = min(n, WINDOW)
        count = -(-n // w)
        pad = max(0, (count - 1) * w + w - n)           # MakePadding(kSame)
        out.append(WindowDim(w, w, pad // 2, pad - pad // 2))
    return Window(tuple(out))


@register
class TreeReductionRewriter(Pass):
    name = "tree_reduction_rewriter"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        for comp in module.computations:
            if comp.is_fusion_computation:
                continue
            # Nothing to split (every later round of the fixed point): nothing changes
            # during the walk either, so no post order.
            if not any(i.opcode == "reduce" and _splittable(i) and
                       not starts_fusion(i, assigned=False) for i in comp.instructions):
                continue
            for r in [i for i in post_order(comp) if i.opcode == "reduce"]:
                changed |= _rewrite(r)
        return changed


def _splittable(r) -> bool:
    """What _rewrite needs besides YNNPACK not taking the reduce."""
    return not r.shape.is_tuple and len(r.operands) == 2 and \
        _window(r.operands[0].shape.dims, tuple(r.attrs["dimensions"])) is not None


def _rewrite(r) -> bool:
    if r.shape.is_tuple or len(r.operands) != 2 or starts_fusion(r, assigned=False):
        return False
    src, init = r.operands
    reduced = tuple(r.attrs["dimensions"])
    window = _window(src.shape.dims, reduced)
    if window is None:
        return False
    attrs = {"window": window, "to_apply": r.attrs["to_apply"]}
    shape = REGISTRY["reduce-window"].infer([src.shape, init.shape], attrs, None)
    comp = r.parent
    rw = add_instruction(comp, "reduce-window", shape, [src, init], attrs, before=r)
    new = add_instruction(comp, "reduce", r.shape, [rw, init],
                          {"dimensions": reduced, "to_apply": r.attrs["to_apply"]}, before=r)
    replace_instruction(r, new)
    return True
