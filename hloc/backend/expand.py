"""Expansions XLA:CPU's compiler always applies, whatever pipeline ran before.

XLA:CPU has no kernel for batch-norm-training / -inference / -grad: its compiler runs
BatchNormExpander on every module. The compiled back end does the same when a module it
is asked to compile as it is still holds one: on a clone (the caller's module is never
changed), with hloc's batchnorm_expander pass (hloc.passes.expanders), whose formulas are
the interpreter's.

YNNPACK library fusions (kind=kCustom, `__ynn_fusion`: XLA:CPU's and hloc's
dot-library-rewriter) are YNNPACK subgraphs in XLA, run op by op by the library. hloc has
no YNNPACK: a library fusion that is one dot or convolution runs through BLAS / im2col
(library_fusion.py); any other (a reduction grown into its elementwise neighbours, as in
softmax or layernorm) is inlined on the clone and its body fused by hloc's own
instruction fusion. Emitted as one elemental kernel instead, each broadcast of a reduced
value would recompute the reduction per element: quadratic work.
"""
from __future__ import annotations

from ..passes.ynn_support import is_ynn_fusion
from .library_fusion import single_op

_BATCH_NORM = frozenset({"batch-norm-training", "batch-norm-inference", "batch-norm-grad"})


def _library_subgraph(inst) -> bool:
    """A YNN library fusion that is more than one dot or convolution of its parameters."""
    return is_ynn_fusion(inst) and not single_op(inst)


def _unwrap_library_fusions(module) -> None:
    from ..ir.clone import inline_computation
    from ..ir.graph import Removal, replace_instruction
    for comp in list(module.computations):
        found = [i for i in comp.instructions if _library_subgraph(i)]
        if not found:
            continue
        editor = Removal(comp)
        for fusion in found:
            root = inline_computation(fusion.attrs["calls"], fusion.operands, comp, fusion)
            replace_instruction(fusion, root, editor)
        editor.flush()


def for_codegen(module):
    """`module`, or an expanded clone of it when it holds ops only an expansion compiles
    (batch-norm) or library fusions to unwrap."""
    instructions = [i for c in module.computations for i in c.instructions]
    batch_norm = any(i.opcode in _BATCH_NORM for i in instructions)
    library = any(_library_subgraph(i) for i in instructions)
    if not (batch_norm or library):
        return module
    from ..passes.driver import optimize
    from ..passes.pipelines import transforms_pipeline
    clone = module.clone(suffix="")
    clone.name = module.name
    if batch_norm:
        optimize(clone, transforms_pipeline(["batchnorm_expander"]), verify_each=False,
                 force=True)
    if library:
        _unwrap_library_fusions(clone)
        optimize(clone, transforms_pipeline(["fusion", "dce"]), verify_each=False, force=True)
    return clone
