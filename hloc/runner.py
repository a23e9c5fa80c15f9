"""Running a module on a back end: arguments in, timed iterations, results out.

`run_module(module, args, backend=..., iterations=...)` prepares the module once on the
chosen back end ("compile"; for the interpreter that is building an Interpreter) and
runs it `iterations` times on the same arguments, timing each run; it returns a
RunResult. Back ends live in BACKENDS by name, so a compiled one slots in beside
"interpreter". The rest turns results into what `hloc run` prints or writes: XLA
literal text, the `--json` object and the `--output` .npz of flattened result leaves.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .diagnostics import InputError
from .inputs import flatten_leaves, save_npz
from .ir.literal import TEXT_ROWS_MAX, TRUNCATE_AT
from .syntax.literal_printer import literal_to_string, text_rows
from .ir.shape import ArrayShape, TupleShape

__all__ = ["BACKENDS", "Backend", "RunResult", "run_module", "result_text", "argument_text",
           "result_json", "save_outputs"]


class Backend:
    """A way to execute modules: `prepare` once, then `execute` per iteration."""
    name = ""
    runner_name = ""     # as run_hlo_module names runners in its messages

    def load(self) -> None:
        """Import what the back end needs (kept out of the compile timing)."""

    def prepare(self, module, *, seed: int):
        raise NotImplementedError

    def execute(self, prepared, args: list):
        raise NotImplementedError

    def execute_devices(self, prepared, args_per_device: list) -> list:
        """One result per device; a back end without multi-device support says so."""
        from .diagnostics import UnsupportedError
        raise UnsupportedError(f"unsupported: back end {self.name!r} runs one device; the "
                               f"module needs {len(args_per_device)} (--backend interpreter "
                               f"runs them)")


class InterpreterBackend(Backend):
    name = "interpreter"
    runner_name = "Interpreter"

    def load(self) -> None:
        from . import interp  # noqa: F401  (registers every evaluation)

    def prepare(self, module, *, seed: int):
        from .interp import Interpreter
        return Interpreter(module, seed=seed)

    def execute(self, prepared, args: list):
        return prepared.run(args)

    def execute_devices(self, prepared, args_per_device: list) -> list:
        from .interp.devices import run_devices
        return run_devices(prepared.module, args_per_device, seed=prepared.seed)


BACKENDS: dict[str, Backend] = {"interpreter": InterpreterBackend()}


def _add_compiled_backend() -> None:
    from .cli_backend import CpuBackend     # the compiled back end (hloc.backend)
    BACKENDS["cpu"] = CpuBackend()


_add_compiled_backend()


def get_backend(name: str) -> Backend:
    backend = BACKENDS.get(name)
    if backend is None:
        raise InputError(f"unknown backend {name!r} (known: {', '.join(sorted(BACKENDS))})")
    return backend


@dataclass
class RunResult:
    module: str
    backend: str
    shape: object            # the ENTRY root shape
    value: object            # the last iteration's result
    compile_s: float = 0.0
    run_s: list[float] = field(default_factory=list)
    devices: int = 1         # > 1: `value` is a list, one result per device


def run_module(module, args: list, *, backend: str = "interpreter", iterations: int = 1,
               seed: int = 42, before_iteration: Callable[[int], None] | None = None,
               after_iteration: Callable[[int, float], None] | None = None,
               progress=None, devices: int = 1) -> RunResult:
    """Prepare `module` on `backend` and run it `iterations` times on `args`;
    `progress` (hloc.progress.Progress) gets the "compile" and "run" phases. With
    `devices` > 1, `args` holds one argument list per device (hloc.multidevice)."""
    from .progress import NULL
    progress = progress or NULL
    impl = get_backend(backend)
    impl.load()
    t0 = time.perf_counter()
    with progress.phase("compile", impl.name):
        prepared = impl.prepare(module, seed=seed)
    result = RunResult(module.name, impl.name, module.entry.root.shape, None,
                       compile_s=time.perf_counter() - t0, devices=devices)
    for i in range(iterations):
        if before_iteration is not None:
            before_iteration(i)
        t0 = time.perf_counter()
        with progress.phase("run", impl.name if iterations == 1 else f"{impl.name} #{i}"):
            result.value = (impl.execute(prepared, list(args)) if devices == 1 else
                            impl.execute_devices(prepared, [list(a) for a in args]))
        dt = time.perf_counter() - t0
        result.run_s.append(dt)
        if after_iteration is not None:
            after_iteration(i, dt)
    return result


# ---------------------------------------------------------------------------
# Presenting results

def result_text(shape, value, *, print_all: bool = False) -> str:
    """Literal::ToString of the result (truncated from 1000 elements unless print_all)."""
    return literal_to_string(shape, value, print_all=print_all)


def argument_text(module, args: list, *, print_all: bool = False) -> str:
    """run_hlo_module's --print_literals blocks: `** Argument i **` and the literal."""
    parts = []
    for i, (p, v) in enumerate(zip(module.entry.parameters, args)):
        parts.append(f"** Argument {i} **\n{literal_to_string(p.shape, v, print_all=print_all)}")
    return "\n".join(parts)


def _leaf_shapes(shape) -> list[ArrayShape]:
    if isinstance(shape, TupleShape):
        out = []
        for e in shape.elements:
            out.extend(_leaf_shapes(e))
        return out
    return [shape] if isinstance(shape, ArrayShape) and shape.dtype.is_array else []


def _json_number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return x


def _json_values(arr: np.ndarray, dt):
    """Nested lists: bools, ints, floats ("nan"/"inf"/"-inf" as strings), [re, im]."""
    if dt.kind == "pred":
        return arr.astype(bool).tolist()
    if dt.is_integral:
        return arr.astype(np.uint64 if dt.kind == "uint" else np.int64).tolist()
    if dt.is_complex:
        pairs = np.stack([arr.real.astype(np.float64), arr.imag.astype(np.float64)], axis=-1)
        return _map_floats(pairs.tolist())
    return _map_floats(arr.astype(np.float64).tolist())


def _map_floats(v):
    if isinstance(v, list):
        return [_map_floats(x) for x in v]
    return _json_number(v)


def result_json(result: RunResult, *, print_values: bool = False) -> dict:
    """The `--json` object: module, backend, outputs (dtype, shape, values), timings.

    "values" is present for leaves under 1000 elements, or always with print_values, unless
    a zero-element leaf has more than TEXT_ROWS_MAX rows (f32[1000000000000,0]).
    """
    outputs = []
    for s, v in zip(_leaf_shapes(result.shape), flatten_leaves(result.value, result.shape)):
        arr = np.asarray(v)
        entry = {"dtype": s.dtype.name, "shape": list(arr.shape)}
        if (print_values or arr.size < TRUNCATE_AT) and text_rows(arr.shape) <= TEXT_ROWS_MAX:
            entry["values"] = _json_values(arr, s.dtype)
        outputs.append(entry)
    return {"module": result.module, "backend": result.backend, "outputs": outputs,
            "compile_s": result.compile_s, "run_s": list(result.run_s)}


def save_outputs(path, shape, value) -> None:
    """`--output`: flattened result leaves as out0, out1, ... (tokens dropped)."""
    leaves = flatten_leaves(value, shape)
    save_npz(path, {f"out{i}": a for i, a in enumerate(leaves)})
