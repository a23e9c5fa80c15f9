"""Which pass, or which instruction, makes the test side disagree with the reference.

`bisect(module, args, ...)` first replays the module (test = the pipeline's output on the
test back end, reference = the module as written on the interpreter). On a mismatch it
asks whether the optimised module already disagrees on the interpreter: then a pass
broke it, and the module is re-optimised with a recorder that keeps the module's text
after every pass that changed it; a binary search over those snapshots (each run on the
interpreter and compared with the reference) finds the first one that mismatches, and
the result holds that pass's name and the computations it changed, before and after.
Otherwise the optimised module computes the right values on the interpreter and the test
back end's code is wrong: hloc.isolate scores every ENTRY instruction on its own and
names the first that diverges, and inside it (a fusion or call) the innermost instruction
that diverges on its own. Works with any registered back end and any pipeline.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .compare import ErrorSpec, near

__all__ = ["BisectResult", "bisect", "PassRecorder", "changed_computations", "minimal_pair"]


class PassRecorder:
    """A dumper for hloc.passes.driver.optimize: the module text after each change."""

    def __init__(self):
        self.snapshots: list[tuple[str, str, str]] = []   # (pipeline, pass, text)
        self.initial = ""

    def before_optimizations(self, module) -> None:
        from .printer import module_to_text
        self.initial = module_to_text(module)

    def after_optimizations(self, module) -> None:
        pass

    def pipeline_start(self, module, pipeline) -> None:
        pass

    def after_pass(self, module, pipeline: str, name: str, next_name: str, changed: bool):
        if changed:
            from .printer import module_to_text
            self.snapshots.append((pipeline, name, module_to_text(module)))


@dataclass
class BisectResult:
    kind: str                      # "none", "pass", "instruction", "unknown"
    summary: str = ""
    pass_name: str = ""
    pipeline: str = ""
    step: int = -1                 # index among the passes that changed the module
    steps: int = 0
    before: str = ""               # computations the pass changed, before it ran
    after: str = ""
    instruction: str = ""
    inner: list = field(default_factory=list)  # inside a fusion/call: the diverging path
    scores: list = field(default_factory=list)
    evaluations: int = 0
    pair: tuple | None = None      # (before, after, arguments): the smallest module pair


def _blocks(text: str) -> list[str]:
    return [b.strip("\n") for b in text.split("\n\n") if b.strip()]


def changed_computations(before: str, after: str) -> tuple[str, str]:
    """The computation blocks of `before` not in `after`, and those of `after` not in
    `before` (the header lines dropped)."""
    b, a = _blocks(before), _blocks(after)
    a_set, b_set = set(a), set(b)
    keep = lambda x: not x.startswith("HloModule")   # noqa: E731
    return ("\n\n".join(x for x in b if x not in a_set and keep(x)),
            "\n\n".join(x for x in a if x not in b_set and keep(x)))


def bisect(module, args: list, *, test_backend: str = "interpreter", pipeline=None,
           spec: ErrorSpec = ErrorSpec(), run_passes: bool | None = None, path: str = "",
           shrink: bool = True, progress=None) -> BisectResult:
    """Find what breaks `module` on `args`; `pipeline` () -> Pass (default pipeline).
    `run_passes` as replay's run_test_passes: None runs them unless `module` (read from
    `path`) is an after-optimizations dump, which goes straight to the instructions.
    With `shrink`, a pass bug also gets `pair`: see minimal_pair."""
    from .progress import NULL
    from .replay import (DEFAULT_SEED, clone_module, is_after_optimizations, optimized_copy,
                         run_side)
    from .syntax import parse_module
    progress = progress or NULL
    with progress.phase("run", "reference"):
        reference, _, _ = run_side(module, args, "interpreter", DEFAULT_SEED)
    recorder = PassRecorder()
    if run_passes is False or (run_passes is None and is_after_optimizations(module, path)):
        optimized = clone_module(module, f"<test module of {module.name}>")
    else:
        with progress.phase("passes"):
            optimized = optimized_copy(module, pipeline() if pipeline else None,
                                       dumper=recorder)
    result = BisectResult("none", steps=len(recorder.snapshots))

    def mismatches(text_or_module) -> bool:
        m = parse_module(text_or_module, "<snapshot>") if isinstance(text_or_module, str) \
            else text_or_module
        value, _, _ = run_side(m, args, "interpreter", DEFAULT_SEED)
        result.evaluations += 1
        return not near(reference, value, spec).ok

    with progress.phase("run", f"test ({test_backend})"):
        test_value, _, _ = run_side(optimized, args, test_backend, DEFAULT_SEED)
    if near(reference, test_value, spec).ok:
        result.summary = "test and reference agree: nothing to bisect"
        return result
    if recorder.snapshots and mismatches(recorder.snapshots[-1][2]):
        lo, hi = -1, len(recorder.snapshots) - 1      # lo agrees (the input), hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            with progress.phase("bisect", f"step {mid} {recorder.snapshots[mid][1]}"):
                if mismatches(recorder.snapshots[mid][2]):
                    hi = mid
                else:
                    lo = mid
        pipeline_name, name, after = recorder.snapshots[hi]
        before = recorder.snapshots[lo][2] if lo >= 0 else recorder.initial
        result.kind, result.pass_name, result.pipeline, result.step = \
            "pass", name, pipeline_name, hi
        result.before, result.after = changed_computations(before, after)
        result.summary = (f"pass {name} (pipeline {pipeline_name!r}, change {hi + 1} of "
                          f"{len(recorder.snapshots)}) introduces the mismatch: the module "
                          f"agrees with the reference before it and not after it")
        if shrink:
            with progress.phase("reduce", f"before/after {name}"):
                result.pair = minimal_pair(before, args, name, spec)
        return result
    from .isolate import inner_culprit, instruction_scores
    values: dict = {}
    with progress.phase("isolate", test_backend):
        scores = instruction_scores(optimized, args, test_backend, spec, progress=progress,
                                    values=values)
    result.scores = scores
    bad = next((s for s in scores if s.status != "MATCHED"), None)
    if bad is None:
        result.kind = "unknown"
        result.summary = ("the optimised module agrees with the reference on the interpreter "
                          "and every instruction agrees on its own: the difference comes "
                          "from how instructions combine on the test back end")
        return result
    inst = optimized.entry.instruction_by_name(bad.name)
    from .isolate import isolated_text
    result.kind, result.instruction = "instruction", bad.name
    result.after = isolated_text(inst)
    result.summary = (f"instruction %{bad.name} ({bad.opcode}) computes a different value "
                      f"on {test_backend} than on the interpreter from the same operands "
                      f"({bad.status}: max abs error {bad.max_abs:.3g}, max rel error "
                      f"{bad.max_rel:.3g}, {bad.ulps} ULPs)")
    if bad.status == "MISMATCH":
        op_values = [values[o.name] for o in dict.fromkeys(inst.operands)]
        with progress.phase("isolate", f"inside %{bad.name}"):
            path = inner_culprit(inst, op_values, test_backend, spec, progress=progress)
        if path:
            inner, score = path[-1]
            result.inner = [i.name for i, _ in path]
            result.after = isolated_text(inner)
            result.summary += (f"; inside it, %{' > %'.join(result.inner)} "
                               f"({score.opcode}) diverges on its own ({score.status}: max "
                               f"abs error {score.max_abs:.3g}, max rel error "
                               f"{score.max_rel:.3g}, {score.ulps} ULPs)")
    return result


def minimal_pair(before: str, args: list, pass_name: str, spec: ErrorSpec):
    """(before, after, arguments): the smallest module (hloc.reduce, keeping the values
    the module computed) on which running the registered pass `pass_name` alone changes
    the interpreter's result beyond `spec`, the module the pass makes of it, and its
    arguments; None when the pass is not registered or the effect needs more passes."""
    from .passes import PASSES, get_pass
    from .passes.driver import optimize
    from .printer import module_to_text
    from .reduce import reduce_module
    from .replay import DEFAULT_SEED, run_side
    from .syntax import parse_module
    if pass_name not in PASSES:
        return None

    def after_pass(text: str) -> str:
        m = parse_module(text, "<before>")
        optimize(m, get_pass(pass_name), verify_each=False, force=True)
        return module_to_text(m)

    def breaks(text: str, values) -> bool:
        ref, _, _ = run_side(parse_module(text, "<before>"), values, "interpreter",
                             DEFAULT_SEED)
        got, _, _ = run_side(parse_module(after_pass(text), "<after>"), values,
                             "interpreter", DEFAULT_SEED)
        return not near(ref, got, spec).ok
    from .diagnostics import HlocError
    try:
        if not breaks(before, args):
            return None
        r = reduce_module(before, breaks, inputs=args)
    except HlocError:
        return None
    return r.text, after_pass(r.text), r.arguments
