"""Pass infrastructure: passes, pipelines, fixed points, and the context that runs them.

A pass is a small class with XLA's name and `run(module, ctx) -> bool` that honestly
says whether it changed the module. The PassContext, not the passes, handles what
happens around each run: skipping disabled passes, timing, verifying after a change
(`verify_each`), checking that a pass claiming "no change" left the printed text
identical (`check_no_change`), and writing per-pass dumps.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..diagnostics import HlocError
from ..ir.module import Module

MAX_FIXED_POINT_ROUNDS = 25


class PassError(HlocError):
    exit_code = 4


def module_size(module: Module) -> int:
    """Instructions in the module, all computations."""
    return sum(len(c.instructions) for c in module.computations)


class Pass:
    """Subclasses set `name` (XLA's pass name) and implement `run`."""

    name: str = ""
    # True for passes that only run other passes (pipelines, fixed points): the context
    # times and checks their inner passes, not them.
    is_pipeline: bool = False

    def run(self, module: Module, ctx: "PassContext") -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<pass {self.name}>"


class Pipeline(Pass):
    """Runs passes once, in order; changed if any of them changed the module."""

    is_pipeline = True

    def __init__(self, name: str, passes: list[Pass]):
        self.name = name
        self.passes = list(passes)

    def run(self, module: Module, ctx: "PassContext") -> bool:
        changed = False
        ctx.enter_pipeline(self, module)
        try:
            for i, p in enumerate(self.passes):
                nxt = self.passes[i + 1].name if i + 1 < len(self.passes) else "pipeline-end"
                changed |= ctx.run_pass(p, module, next_name=nxt)
        finally:
            ctx.leave_pipeline()
        return changed


class FixedPoint(Pass):
    """Reruns a pipeline until nothing changes (at most 25 rounds, as HloPassFix)."""

    is_pipeline = True

    def __init__(self, pipeline: Pipeline, max_rounds: int = MAX_FIXED_POINT_ROUNDS):
        self.pipeline = pipeline
        self.name = pipeline.name
        self.max_rounds = max_rounds

    def run(self, module: Module, ctx: "PassContext") -> bool:
        changed = False
        for _ in range(self.max_rounds):
            if not self.pipeline.run(module, ctx):
                break
            changed = True
        return changed


@dataclass
class PassTiming:
    name: str
    seconds: float = 0.0
    cpu_seconds: float = 0.0            # process CPU time (benchmarks on a loaded machine)
    runs: int = 0
    changes: int = 0
    instructions: int = 0               # with count_instructions: the larger of the module's
                                        # instruction count before and after, summed over runs


@dataclass
class PassContext:
    verify_each: bool = False
    check_no_change: bool = False
    disabled: frozenset = frozenset()
    dumper: object = None               # hloc.passes.dump.Dumper or None
    progress: object = None             # hloc.progress.Progress: names the running pass
    count_instructions: bool = False    # fill PassTiming.instructions (benchmarks: cost per
                                        # instruction processed, independent of output size)
    timings: dict = field(default_factory=dict)
    verify_cpu_seconds: float = 0.0     # spent verifying after changing passes
    count_cpu_seconds: float = 0.0      # spent counting for count_instructions (not opt's)
    verifier: object = None             # hloc.verify.incremental.Verifier of the module
    _pipelines: list = field(default_factory=list)

    def enter_pipeline(self, pipeline: Pipeline, module: Module) -> None:
        self._pipelines.append(pipeline.name)
        if self.dumper is not None:
            self.dumper.pipeline_start(module, pipeline)

    def leave_pipeline(self) -> None:
        self._pipelines.pop()

    def run_pass(self, p: Pass, module: Module, next_name: str = "pipeline-end") -> bool:
        """Run `p` (a pass or a nested pipeline) as HloPassPipeline runs its passes:
        skipped when disabled; then timed, checked and verified (leaf passes), and
        offered to the dumper as `after_<p>.before_<next_name>` of the enclosing
        pipeline (nested pipelines too, as XLA dumps after them)."""
        if p.name in self.disabled:
            return False
        leaf = not p.is_pipeline
        before = None
        if self.check_no_change and leaf:
            from ..printer import module_to_text
            before = module_to_text(module)
        size = 0
        if self.count_instructions and leaf:
            c = time.process_time()
            size = module_size(module)
            self.count_cpu_seconds += time.process_time() - c
        t0, c0 = time.perf_counter(), time.process_time()
        if leaf and self.progress is not None and self.progress.enabled:
            with self.progress.step(f"pass {p.name}"):
                changed = bool(p.run(module, self))
        else:
            changed = bool(p.run(module, self))
        elapsed = time.perf_counter() - t0
        if leaf:
            timing = self.timings.setdefault(p.name, PassTiming(p.name))
            timing.seconds += elapsed
            timing.cpu_seconds += time.process_time() - c0
            timing.runs += 1
            timing.changes += changed
            if self.count_instructions:
                c = time.process_time()
                timing.instructions += max(size, module_size(module))
                self.count_cpu_seconds += time.process_time() - c
        if not changed and before is not None:
            from ..printer import module_to_text
            if module_to_text(module) != before:
                raise PassError(f"pass {p.name} changed the module but reported no change")
        if changed and leaf and self.verify_each:
            c1 = time.process_time()
            if self.verifier is None or self.verifier.module is not module:
                from ..verify.incremental import Verifier
                self.verifier = Verifier(module)
            broken, errors = self.verifier.check()
            if broken:
                raise PassError(f"after pass {p.name}: graph invariant broken: {broken[0]}")
            if errors:
                raise PassError(f"after pass {p.name}: {errors[0].message}")
            self.verify_cpu_seconds += time.process_time() - c1
        if self.dumper is not None and self._pipelines:
            self.dumper.after_pass(module, self._pipelines[-1], p.name, next_name, changed)
        return changed
