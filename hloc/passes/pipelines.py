"""The pass modules and the XLA:CPU-shaped pipeline `hloc opt` runs by default.

Importing this module imports every pass module so the passes register. `default_pipeline()` mirrors CpuCompiler::RunHloPasses (cpu_compiler.cc)
for the passes hloc has, with XLA's pipeline names so dump file names match: the
top-level pipelines "HLO passes through layout assignment" (expanders, the
"simplification" fixed point, cse, tuple-simplifier, flatten-call-graph) and "HLO
passes after layout assignment" (fusion, the "simplification after layout assignment"
fixed point, dce) run one after the other, as XLA runs them, not nested in a third.
`default_pipeline(multi_output_fusion=True)` is XLA:CPU with its backend option
xla_cpu_use_multi_output_fusion: fusion without duplication, fusion-wrapper,
cpu_multi_output_fusion and tuple-simplifier in place of fusion.
A pipeline naming a pass that is not registered is an error when it is built (XLA's
simplify-sorts and while-loop-invariant-code-motion are not implemented, so they are
not named). The call inliner inlines
every call: cpu_compiler.cc (2025) asks for single-call-site inlining there, but the
XLA:CPU that made testdata/dumps (jaxlib 0.10.2) leaves no call of a computation called
from several sites (its pre-SPMD cleanup inlines them all), and after flattening a
second run would otherwise inline what the first left.
"""
from __future__ import annotations

import importlib

from . import PASSES
from .base import FixedPoint, Pass, Pipeline

PASS_MODULES = (
    "dce", "cse", "tuple_simplifier", "call_inliner", "flatten_call_graph",
    "zero_sized_hlo_elimination", "algsimp", "constant_folding", "reshape_mover",
    "while_loop_simplifier", "while_loop_constant_sinking", "conditional_simplifier",
    "expanders", "fusion", "library_rewriter", "dot_transforms",
    "tree_reduction", "float_normalization",
)


def _import_pass_modules() -> None:
    for name in PASS_MODULES:
        importlib.import_module(f"{__package__}.{name}")


_import_pass_modules()


class Stages(Pass):
    """Top-level pipelines run one after another, each on its own (no enclosing
    pipeline: XLA writes no pipeline-start or after-pipeline dumps around them)."""

    is_pipeline = True

    def __init__(self, name: str, stages: list[Pass]):
        self.name = name
        self.stages = list(stages)

    def run(self, module, ctx) -> bool:
        changed = False
        for stage in self.stages:
            changed |= ctx.run_pass(stage, module)
        return changed


def _passes(*names: str) -> list[Pass]:
    """Instances of the passes `names`, in order; an unknown name is an error."""
    from . import get_pass
    return [get_pass(n) for n in names]


def simplification() -> Pass:
    return FixedPoint(Pipeline("simplification", [
        *_passes("algsimp", "dce", "tree_reduction_rewriter", "zero_sized_hlo_elimination",
                 "tuple-simplifier",
                 "while-loop-constant-sinking", "simplify-while-loops", "dce",
                 "reshape-mover", "constant_folding", "simplify-conditional"),
    ]))


def through_layout_assignment() -> Pipeline:
    from .call_inliner import CallInliner
    return Pipeline("HLO passes through layout assignment", [
        *_passes("zero_sized_hlo_elimination", "comparison-expander"),
        CallInliner(),
        *_passes("dot_decomposer", "float-normalization", "batchnorm_expander",
                 "logistic-expander"),
        simplification(),
        *_passes("transpose-folding", "cse", "cse_barrier_expander", "tuple-simplifier",
                 "flatten-call-graph"),
    ])


def dot_library_passes() -> Pipeline:
    """XLA:CPU's library pipeline between layout assignment and fusion: YNNPACK fusions
    (jaxlib 0.10.2's default `xla_cpu_experimental_ynn_fusion_type`)."""
    return Pipeline("dot-library-passes", _passes("dot_decomposer", "dot-library-rewriter"))


def simplification_after_layout_assignment() -> Pass:
    from .cse import HloCSE
    return FixedPoint(Pipeline("simplification after layout assignment", [
        *_passes("algsimp", "dce"), HloCSE(layout_sensitive=True),
    ]))


def after_layout_assignment(multi_output_fusion: bool = False) -> Pipeline:
    """With `multi_output_fusion` (XLA's xla_cpu_use_multi_output_fusion), as
    cpu_compiler.cc then: fusion may not duplicate, fusion-wrapper, sibling
    multi-output fusion and a tuple simplifier follow."""
    fusion = _passes("fusion")
    if multi_output_fusion:
        from .fusion import InstructionFusion
        fusion = [InstructionFusion(may_duplicate=False),
                  *_passes("fusion-wrapper", "cpu_multi_output_fusion", "tuple-simplifier")]
    return Pipeline("HLO passes after layout assignment", [
        *fusion,
        simplification_after_layout_assignment(),
        *_passes("dce"),
    ])


def default_pipeline(multi_output_fusion: bool = False) -> Pass:
    return Stages("cpu", [through_layout_assignment(), dot_library_passes(),
                          after_layout_assignment(multi_output_fusion)])


def transforms_pipeline(names: list[str]) -> Pipeline:
    """hlo-opt's `--passes=a,b,c`: the named passes once each, in order."""
    from . import get_pass
    return Pipeline("transforms_pipeline", [get_pass(n) for n in names])


def pipeline_names(p: Pass) -> list[str]:
    """Names of `p` and everything nested in it (for --disable-passes checks)."""
    out = [p.name]
    for child in getattr(p, "passes", ()) or getattr(p, "stages", ()):
        out.extend(pipeline_names(child))
    inner = getattr(p, "pipeline", None)
    if inner is not None:
        out.extend(pipeline_names(inner)[1:])
    return out
