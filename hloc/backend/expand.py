"""Expansions XLA:CPU's compiler always applies, whatever pipeline ran before.

XLA:CPU has no kernel for batch-norm-training / -inference / -grad: its compiler runs
BatchNormExpander on every module. The compiled back end does the same when a module it
is asked to compile as it is still holds one: on a clone (the caller's module is never
changed), with hloc's batchnorm_expander pass (hloc.passes.expanders), whose formulas are
the interpreter's.
"""
from __future__ import annotations

_BATCH_NORM = frozenset({"batch-norm-training", "batch-norm-inference", "batch-norm-grad"})


def for_codegen(module):
    """`module`, or an expanded clone of it when it holds ops only an expansion compiles."""
    if not any(i.opcode in _BATCH_NORM for c in module.computations for i in c.instructions):
        return module
    from ..passes.driver import optimize
    from ..passes.pipelines import transforms_pipeline
    clone = module.clone(suffix="")
    clone.name = module.name
    optimize(clone, transforms_pipeline(["batchnorm_expander"]), verify_each=False, force=True)
    return clone
