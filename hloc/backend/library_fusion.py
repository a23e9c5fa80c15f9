"""Library fusions whose computation is one dot or convolution of its parameters (the
YNN fusions XLA:CPU's and hloc's `dot-library-rewriter` make, kind=kCustom) run as that
instruction would unfused: through the BLAS gemm (blas.py) or im2col + gemm
(conv_gemm.py), not as generated loops. Larger library fusions (a reduction grown into
its neighbours) are ordinary fused kernels.
"""
from __future__ import annotations

from . import blas, conv_gemm


class _View:
    """The fused dot/convolution seen from outside: its attributes, the fusion's operands
    in its operand slots, the fusion's result."""

    def __init__(self, fusion, inner):
        params = {id(p): fusion.operands[p.parameter_number]
                  for p in inner.parent.parameters}
        self.fusion = fusion
        self.opcode = inner.opcode
        self.attrs = inner.attrs
        self.shape = fusion.shape
        self.name = fusion.name
        self.operands = [params[id(o)] for o in inner.operands]


class _Emitter:
    """The computation emitter with the view's result read from the fusion's buffers."""

    def __init__(self, em, view: _View):
        self._em, self._view = em, view

    def leaves(self, inst):
        return self._em.leaves(self._view.fusion if inst is self._view else inst)

    def __getattr__(self, name):
        return getattr(self._em, name)

    def __setattr__(self, name, value):   # caches (conv_gemm's scratch slot) go to em
        if name in ("_em", "_view"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._em, name, value)


def single_op(fusion) -> bool:
    """Is `fusion`'s computation one dot or convolution of its parameters?"""
    comp = fusion.attrs["calls"]
    root = comp.root
    return root.opcode in ("dot", "convolution") and \
        len(comp.instructions) == len(comp.parameters) + 1 and \
        all(o.opcode == "parameter" for o in root.operands)


def plan(inst, options):
    """(view, how) for a fusion computing one dot or convolution that blas/conv_gemm
    take, else None."""
    if inst.opcode != "fusion" or inst.shape.is_tuple or not single_op(inst):
        return None
    root = inst.attrs["calls"].root
    if str(root.shape) != str(inst.shape):
        return None
    view = _View(inst, root)
    how = (blas if root.opcode == "dot" else conv_gemm).plan(view, options)
    return None if how is None else (view, how)


def emit(em, inst, planned) -> None:
    view, how = planned
    wrapped = _Emitter(em, view)
    if view.opcode == "dot":
        with em.timed(inst, "dot:blas"):
            blas.emit_call(wrapped, view, how)
    else:
        with em.timed(inst, "conv:gemm"):
            conv_gemm.emit(wrapped, view, how)
