"""`fusion-wrapper`: XLA:CPU's FusionWrapper, run after `fusion`.

With the fusion emitters on (XLA:CPU's default), every instruction the emitters handle
that instruction fusion left alone is wrapped in a one-instruction kLoop fusion, so
that all of them go through the same kernel emitter: the fusion is named
`wrapped_<opcode>` and calls `wrapped_<opcode>_computation`
(emitters::FusionWrapperBase with cpu::FusionWrapper::MustWrapInstruction). It visits
the entry computation in post order and descends into while, conditional and call
bodies. Wrapped: scatter and the elementwise / data-movement ops in XLA's list; copies
only when they change the layout; never concatenate, dynamic-update-slice, transpose
or dot (XLA's unfused paths are faster for those). hloc keeps reshapes where XLA:CPU
has made bitcasts (it runs no layout assignment): a reshape between row-major layouts
is left unwrapped, as XLA leaves the bitcast.
"""
from __future__ import annotations

from ...ir.module import Module
from .. import register
from ..base import Pass, PassContext
from .build import StorageOrder, create_fusion, replace_with_fusion
from ...ir.graph import post_order
from ...ops import CALL_CONTROL_FLOW, call_context, opcodes_with
from ...ops.base import CPU_WRAPPED

_WRAPPED = opcodes_with(CPU_WRAPPED)


def must_wrap(inst) -> bool:
    if inst.opcode == "copy":
        return str(inst.shape) != str(inst.operands[0].shape)   # a layout change
    if inst.opcode == "reshape" and reshape_is_bitcast(inst):
        return False
    return inst.opcode in _WRAPPED


def _row_major(shape) -> bool:
    """Elements lie in row-major order (size-1 dimensions may sit anywhere)."""
    layout = getattr(shape, "layout", None)
    if layout is None:
        return True
    order = [d for d in reversed(layout.minor_to_major) if shape.dims[d] != 1]
    return order == sorted(order) and not layout.tail


def reshape_is_bitcast(inst) -> bool:
    """A reshape between row-major layouts moves no data: XLA:CPU's ReshapeDecomposer
    makes it a `bitcast` before fusion, so it is never a kernel of its own."""
    src, dst = inst.operands[0].shape, inst.shape
    return src.dtype == dst.dtype and _row_major(src) and _row_major(dst)


@register
class FusionWrapper(Pass):
    name = "fusion-wrapper"

    def run(self, module: Module, ctx: PassContext) -> bool:
        if module.entry is None:
            return False
        order = StorageOrder()
        changed = False
        stack = list(reversed(post_order(module.entry)))
        visited: set = set()
        while stack:
            inst = stack.pop()
            if call_context(inst.opdef) == CALL_CONTROL_FLOW:
                # XLA descends from call, while, conditional and async-start; the
                # async-update/-done of that start call the same computation, and a
                # second visit of a computation wraps nothing (all is wrapped by then).
                for comp in reversed(inst.called_computations()):
                    if comp not in visited:
                        visited.add(comp)
                        stack.extend(reversed(post_order(comp)))
                continue
            if not must_wrap(inst):
                continue
            comp = inst.parent
            order.note(comp)
            fusion = create_fusion(inst, "kLoop", f"wrapped_{inst.opcode}",
                                   f"wrapped_{inst.opcode}_computation")
            order.added(comp, fusion)
            order.fused_changed(fusion.attrs["calls"])
            replace_with_fusion(inst, fusion)
            changed = True
        if changed:
            order.finish(module)
        return changed
