"""run_hlo_module for one module: a test run and a reference run, compared as XLA does.

`replay_module(module, config, path=...)` follows xla/tools/run_hlo_module.cc's
RunAndCompare: the test side is a copy of the module after the test pipeline
(`config.pipeline()`, hloc's XLA:CPU-shaped default) run on `config.test_backend`
(any hloc.runner back end); the reference side is the module as written, run on the
interpreter (or no reference run; a compiled reference platform gets the pipeline too,
unless `run_reference_passes` is False). The results are compared with hloc.compare.near,
XLA's literal_comparison::Near(expected=reference, actual=test). Console lines go to the
two writers in `out` (stdout's lines) and `err` (stderr's), worded as run_hlo_module
words them. An after-optimizations dump (file name or `is_scheduled=true`) is not
optimised again unless `run_test_passes` is True; the report says so. Fake arguments are
made by hloc.fake_args with one random engine per file that continues across iterations,
as run_hlo_module's does; `--different_random_seeds` gives iteration i the module seed
i + 1 (that affects rng ops, not the arguments).

A partitioned multi-device dump (replica_count x num_partitions = N > 1 and not a global
view; hloc.multidevice.device_plan) runs on N devices on both sides, as XLA's
HloRunner::ExecuteReplicated does; each device gets its own fake arguments from the
file's engine (devices 0..N-1 in turn) or its share of per-device inputs (leading device
axis), and the comparison is per device: device d's test result against device d's
reference result, each reported.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .compare import CompareResult, ErrorSpec, near
from .diagnostics import HlocError

__all__ = ["ReplayConfig", "ReplayOutcome", "replay_module", "clone_module",
           "optimized_copy", "is_after_optimizations", "runner_name", "run_side",
           "reference_skip_reason"]

DEFAULT_SEED = 42           # the module config's default seed in XLA


@dataclass
class ReplayConfig:
    test_backend: str = "interpreter"
    reference_backend: str | None = "interpreter"    # None: no reference run
    run_test_passes: bool | None = None     # None: yes, except for after-optimizations dumps
    run_reference_passes: bool = True       # a compiled reference runs the pipeline too; the
                                            # interpreter runs the module as written
    spec: ErrorSpec = field(default_factory=ErrorSpec)
    iterations: int = 1
    different_random_seeds: bool = False
    print_literals: bool = False
    use_large_float_range: bool = False
    input_seed: int = DEFAULT_SEED          # seeds the fake-argument engine of each file
    pipeline: Callable | None = None        # () -> Pass; None: hloc.passes.default_pipeline


@dataclass
class ReplayOutcome:
    path: str
    module: str = ""
    ok: bool = True
    failed_runs: int = 0
    iterations: int = 0
    mismatches: int = 0            # mismatching elements of the last failing run
    elements: int = 0
    test_s: float = 0.0
    reference_s: float = 0.0
    optimized: bool = False        # whether the test side ran the pipeline
    notes: list[str] = field(default_factory=list)
    message: str = ""              # first line of the first failure
    arguments: list = field(default_factory=list)          # per iteration
    test_values: list = field(default_factory=list)
    reference_values: list = field(default_factory=list)
    devices: int = 1               # > 1: arguments and values hold one entry per device


def runner_name(backend: str) -> str:
    """The platform name run_hlo_module prints for a back end (Host for XLA:CPU)."""
    from .runner import get_backend
    return {"cpu": "Host"}.get(backend) or get_backend(backend).runner_name or backend


def clone_module(module, name: str = "<copy>"):
    """An independent copy, through XLA's text (what any dump reader sees)."""
    from .printer import module_to_text
    from .syntax import parse_module
    return parse_module(module_to_text(module), name)


def is_after_optimizations(module, path: str = "") -> str | None:
    """Why the module looks like an after-optimizations dump (None when it does not)."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    if "after_optimizations" in base:
        return "its file name says after_optimizations"
    if module.is_scheduled():
        return "it is is_scheduled=true"
    return None


def optimized_copy(module, pipeline=None, *, force: bool = True, dumper=None):
    """A copy of `module` after `pipeline` (default: hloc's default pipeline); error
    locations in it refer to its printed text, named `<test module of NAME>`."""
    from .passes import default_pipeline
    from .passes.driver import optimize
    copy = clone_module(module, f"<test module of {module.name}>")
    optimize(copy, pipeline if pipeline is not None else default_pipeline(),
             verify_each=False, force=force, dumper=dumper)
    return copy


def reference_skip_reason(module) -> str | None:
    root = module.entry.root
    if root.opcode == "custom-call":
        return f"Skipping reference runner for a custom call {root.attrs.get('custom_call_target', '')}"
    return None


def run_side(module, args: list, backend, seed: int, devices: int = 1):
    """(value, compile+run seconds, run seconds) of `module` on `backend` (a name in
    hloc.runner.BACKENDS, or a back-end object); with `devices` > 1, `args` and the
    value hold one entry per device."""
    from .runner import get_backend, run_module
    impl = _as_given(get_backend(backend) if isinstance(backend, str) else backend)
    t0 = time.perf_counter()
    result = _run_prepared(impl, module, args, seed, devices) if impl is not None else \
        run_module(module, args, backend=backend, seed=seed, devices=devices)
    total = time.perf_counter() - t0
    return result.value, total, (result.run_s[-1] if result.run_s else total)


def _as_given(impl):
    """A back end that optimises on its own (`opt` attribute) is told not to: replay
    decides what the test side's module is."""
    if not hasattr(impl, "opt"):
        return None
    import copy
    plain = copy.copy(impl)
    plain.opt = False
    return plain


def _run_prepared(impl, module, args, seed, devices=1):
    from .runner import RunResult
    impl.load()
    prepared = impl.prepare(module, seed=seed)
    t0 = time.perf_counter()
    value = impl.execute(prepared, list(args)) if devices == 1 else \
        impl.execute_devices(prepared, [list(a) for a in args])
    return RunResult(module.name, impl.name, module.entry.root.shape, value,
                     run_s=[time.perf_counter() - t0])


def _literal(shape, value) -> str:
    from .runner import result_text
    return result_text(shape, value)


def replay_module(module, config: ReplayConfig, *, path: str = "", inputs: list | None = None,
                  out: Callable[[str], None] = lambda s: None,
                  err: Callable[[str], None] = lambda s: None, progress=None) -> ReplayOutcome:
    """Run `module` as run_hlo_module runs one file; errors (HlocError) propagate."""
    from .fake_args import make_fake_arguments
    from .multidevice import device_plan
    from .progress import NULL
    from .runner import argument_text
    progress = progress or NULL
    n = device_plan(module, None)
    outcome = ReplayOutcome(path=path, module=module.name, iterations=config.iterations,
                            devices=n)
    out(f"\n ** Running {path or module.name}** ")
    after = is_after_optimizations(module, path)
    optimise = config.run_test_passes if config.run_test_passes is not None else after is None
    if after is not None and config.run_test_passes is None:
        outcome.notes.append(f"note: {path or module.name} is an after-optimizations dump "
                             f"({after}); the test side runs it as it is "
                             f"(--run_test_hlo_passes=true optimises it again)")
    for note in outcome.notes:
        err(note)
    test_module = module
    if optimise:
        with progress.phase("passes"):
            test_module = optimized_copy(module, config.pipeline and config.pipeline(),
                                         force=config.run_test_passes is True)
        outcome.optimized = True
    else:
        test_module = clone_module(module, f"<test module of {module.name}>")
    ref_module = module
    if config.reference_backend not in (None, "interpreter") and config.run_reference_passes \
            and after is None:
        with progress.phase("passes", "reference"):
            ref_module = optimized_copy(module, config.pipeline and config.pipeline())
    skip = reference_skip_reason(module) if config.reference_backend else None
    test_name = runner_name(config.test_backend)
    ref_name = runner_name(config.reference_backend) if config.reference_backend else ""
    rng = np.random.default_rng(config.input_seed)
    for i in range(config.iterations):
        if config.iterations != 1:
            err(f"\n=== Iteration {i + 1}")
        if inputs is not None:
            args = list(inputs)
        else:
            with progress.phase("fake arguments"):
                args = [make_fake_arguments(module, rng=rng,
                                            use_large_float_range=config.use_large_float_range)
                        for _ in range(n)]
                args = args[0] if n == 1 else args
        seed = i + 1 if config.different_random_seeds else DEFAULT_SEED
        if config.print_literals:
            out(_per_device(n, args, lambda a: argument_text(module, a)))
        err(f"Running HLO module with runner {test_name}...")
        with progress.phase("run", f"test ({config.test_backend})"):
            test_value, total, run_s = run_side(test_module, args, config.test_backend, seed, n)
        outcome.test_s += total
        err(f"... compiled and ran in {total:g}s.")
        err(f"execution time for runner {test_name}: {run_s:g}s.")
        if config.print_literals:
            out(f"** Result with test runner {test_name} **\n" + _per_device(
                n, test_value, lambda v: _literal(test_module.entry.root.shape, v)))
        ref_value = None
        if not config.reference_backend:
            err("Skipping reference runner")
        elif skip:
            err(skip)
        else:
            err(f"Running HLO module with runner {ref_name}...")
            with progress.phase("run", f"reference ({config.reference_backend})"):
                ref_value, total, run_s = run_side(ref_module, args, config.reference_backend,
                                                  seed, n)
            outcome.reference_s += total
            err(f"... compiled and ran in {total:g}s.")
            err(f"execution time for runner {ref_name}: {run_s:g}s.")
            if config.print_literals:
                out(f"** Result with reference runner {ref_name} **\n" + _per_device(
                    n, ref_value, lambda v: _literal(module.entry.root.shape, v)))
        outcome.arguments.append(args)
        outcome.test_values.append(test_value)
        outcome.reference_values.append(ref_value)
        if ref_value is not None and n > 1:
            _compare_devices(module, test_module, ref_value, test_value, config.spec, outcome,
                             err, f"{test_name} and {ref_name}")
        elif ref_value is not None:
            result = compare_values(module, test_module, ref_value, test_value, config.spec)
            outcome.elements = result.elements
            if result.ok:
                err(f"\n** Results on {test_name} and {ref_name} are close enough. **")
            else:
                outcome.failed_runs += 1
                outcome.mismatches = result.mismatches
                outcome.message = outcome.message or result.messages[0].split("\n")[0]
                err(f"INVALID_ARGUMENT: {result.message}")
    err(f"{outcome.failed_runs}/{config.iterations} runs failed.")
    outcome.ok = outcome.failed_runs == 0
    return outcome


def _per_device(n: int, values, text) -> str:
    """`text(value)`, or per device under `** device d **` headers."""
    if n == 1:
        return text(values)
    return "\n".join(f"** device {d} **\n{text(v)}" for d, v in enumerate(values))


def _compare_devices(module, test_module, expected: list, actual: list, spec, outcome, err,
                     sides: str) -> None:
    """Near per device (device d's reference against device d's test result)."""
    bad = []
    outcome.elements = 0
    for d, (e, a) in enumerate(zip(expected, actual)):
        result = compare_values(module, test_module, e, a, spec)
        outcome.elements += result.elements
        if not result.ok:
            bad.append(d)
            outcome.mismatches = result.mismatches
            outcome.message = outcome.message or \
                f"device {d}: " + result.messages[0].split("\n")[0]
            err(f"INVALID_ARGUMENT: device {d}: {result.message}")
    if bad:
        outcome.failed_runs += 1
    else:
        err(f"\n** Results on {sides} are close enough on all {len(expected)} devices. **")


def compare_values(module, test_module, expected, actual, spec: ErrorSpec) -> CompareResult:
    """Near(expected=reference, actual=test): shapes first (element type, dimensions,
    tuple structure), then the elements."""
    return near(expected, actual, spec)


def error_outcome(path: str, error: HlocError) -> ReplayOutcome:
    """The outcome of a file that could not be replayed (parse, verify, unsupported)."""
    return ReplayOutcome(path=path, ok=False, failed_runs=0, message=error.render())
