"""`optimize(module, ...)`: what `hloc opt` does to one module, as a library call.

Runs a pipeline (XLA:CPU's shape by default, or hlo-opt's "transforms_pipeline" of
named passes) under a PassContext that verifies after every change (what the pass
changed: hloc.verify.incremental), times passes and writes dumps. A module that is already optimized (`is_scheduled=true`, or containing
fusion instructions) is left alone unless forced, as XLA's CPU compiler skips the HLO
passes for scheduled modules. Afterwards every computation the passes touched is put
in XLA's post order (MakeInstructionPostOrder), the order HloModule::ToString prints,
so the output reads like an XLA dump; untouched computations keep their text order.
Computations called by fusion instructions are marked as fusion computations first (XLA's
parser does so; passes skip or treat them specially).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..gc_pause import no_gc
from ..ir.module import Module
from .base import Pass, PassContext
from ..ir.graph import fusion_computations, snapshot, sort_post_order, touched


@dataclass
class OptResult:
    changed: bool = False
    skipped: str | None = None          # why no pass ran, when none did
    timings: dict = field(default_factory=dict)
    verify_cpu_seconds: float = 0.0     # verification after changing passes (verify_each)
    count_cpu_seconds: float = 0.0      # count_instructions' counting (benchmarks subtract it)


def already_optimized(module: Module) -> str | None:
    """Why `module` looks like XLA's optimized output (None when it does not)."""
    if module.is_scheduled():
        return "is_scheduled=true"
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                return f"it has fusion instructions (%{inst.name})"
    return None


# Passes allocate millions of small objects while the module (all of it long-lived)
# stays; every cyclic collection then walks the young objects, and a full one the whole
# module (0.1-0.3 s each on the 28k-line and 96-layer dumps). What the passes drop is
# freed by reference counting: the cyclic garbage they leave is small (10k objects after
# opt of the 28k-line dump, 29k after the 96-layer one), so the collector is off while
# the pipeline runs (hloc.gc_pause.no_gc, as in the verifier): opt took 3-4 % less
# CPU and peak RSS measured the same (166 and 294 MB). What the passes built and kept
# (the new instructions and fused computations: 350k objects on the 28k-line dump) is
# long-lived, so it goes to the oldest generation at the end (no_gc(long_lived=True))
# instead of being traversed by the young collection that re-enabling the collector
# set off (0.13 s, 3 % of opt); the next full collection takes what cycles there are.


def optimize(module: Module, pipeline: Pass | None, *, verify_each: bool = True,
             check_no_change: bool = False, disabled=(), dumper=None,
             force: bool = False, progress=None,
             count_instructions: bool = False) -> OptResult:
    """Run `pipeline` (None: no passes) on `module` in place; `progress`
    (hloc.progress.Progress) is told which pass runs; `count_instructions` fills each
    PassTiming's `instructions` (benchmarks)."""
    result = OptResult()
    if dumper is not None:
        dumper.before_optimizations(module)
    reason = None if force else already_optimized(module)
    if reason is not None:
        result.skipped = f"input is already optimized ({reason})"
    elif pipeline is not None:
        for comp in fusion_computations(module):   # as XLA's parser marks them
            comp.is_fusion_computation = True
        verifier = None
        if verify_each:
            # The verifier remembers what it verified: after each changing pass it
            # checks what the pass changed (hloc.verify.incremental).
            from ..verify.incremental import Verifier
            verifier = Verifier(module)
            broken, errors = verifier.check()
            if errors:
                raise errors[0]
        ctx = PassContext(verify_each=verify_each, check_no_change=check_no_change,
                          disabled=frozenset(disabled), dumper=dumper, progress=progress,
                          count_instructions=count_instructions, verifier=verifier)
        with no_gc(long_lived=True):
            before = snapshot(module)
            result.changed = ctx.run_pass(pipeline, module)
            for comp in touched(module, before):
                sort_post_order(comp)
        result.timings = ctx.timings
        result.verify_cpu_seconds = ctx.verify_cpu_seconds
        result.count_cpu_seconds = ctx.count_cpu_seconds
    if dumper is not None:
        dumper.after_optimizations(module)
    return result
