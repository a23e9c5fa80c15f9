"""`hloc run` on several devices: how many, per-device inputs, per-device results.

How many devices (`device_plan`): a module whose header says `replica_count` R and
`num_partitions` P is one program per device (R*P of them, hloc.interp.devices) unless it
is a *global view*: a before-SPMD-partitioning module (not scheduled, `num_partitions` > 1,
and Shardy meshes in its frontend attributes or a `sharding=` on some instruction), which
runs once with global shapes (its manual regions run per shard; hloc.interp.manual).
`--devices N` overrides: 1 runs the module once as written, N must be R*P.

Per-device npz layout (inputs, `--output`, `--expected`): the usual keys (in0, in1, ...
or parameter names; out0, out1, ...) with a leading device axis of size N: entry [d]
belongs to device d = replica d // P, partition d % P. Without inputs, device d gets fake
arguments made with seed + d (so replicas differ, as real shards do). Under `mpirun -n N`
(`mpi_comm`) each process binds and runs only its own device (hloc.interp.mpi_devices).
"""
from __future__ import annotations

import numpy as np

from .diagnostics import InputError
from .inputs import InputArray, bind_arguments, flatten_leaves, load_outputs, save_npz

__all__ = ["device_plan", "is_global_view", "bind_per_device", "bind_device", "mpi_comm",
           "fake_per_device",
           "devices_text", "devices_json", "save_device_outputs", "compare_devices"]


def _counts(module) -> tuple[int, int]:
    attrs = module.attrs or {}
    return int(attrs.get("replica_count") or 1), int(attrs.get("num_partitions") or 1)


def is_global_view(module) -> bool:
    """A module before SPMD partitioning (see the module docstring)."""
    attrs = module.attrs or {}
    if _counts(module)[1] <= 1 or attrs.get("is_scheduled"):
        return False
    fe = attrs.get("frontend_attributes")
    if "xla.sdy.meshes" in (getattr(fe, "text", fe) or ""):
        return True
    return any("sharding" in inst.attrs for comp in module.computations
               for inst in comp.instructions)


def device_plan(module, devices: int | None) -> int:
    """How many devices `hloc run` runs `module` on (1 = once, as written)."""
    r, p = _counts(module)
    from .interp.devices import MAX_DEVICES, too_many_devices
    if r * p > MAX_DEVICES and devices != 1:
        raise too_many_devices(r, p)
    if devices is None:
        return 1 if is_global_view(module) else r * p
    if devices not in (1, r * p):
        raise InputError(f"--devices {devices}: the module runs on 1 (as written) or "
                         f"replica_count x num_partitions = {r} x {p} = {r * p} devices")
    return devices


def bind_per_device(module, inputs: list[InputArray], n: int, *, positional: bool) -> list:
    """One argument list per device from arrays with a leading device axis of size n."""
    for inp in inputs:
        shape = np.shape(inp.value)
        if not shape or shape[0] != n:
            raise InputError(f"{inp.label}: shape {list(shape)} has no leading device axis of "
                             f"size {n} (per-device inputs: entry [d] is device d's value)")
    return [bind_arguments(module, [InputArray(np.asarray(i.value)[d],
                                               f"{i.label} [device {d}]", i.name, i.source)
                                    for i in inputs], positional=positional)
            for d in range(n)]


def bind_device(module, inputs: list[InputArray], n: int, d: int, *,
                positional: bool) -> list:
    """Device d's argument list only (an MPI rank's share of bind_per_device)."""
    for inp in inputs:
        shape = np.shape(inp.value)
        if not shape or shape[0] != n:
            raise InputError(f"{inp.label}: shape {list(shape)} has no leading device axis of "
                             f"size {n} (per-device inputs: entry [d] is device d's value)")
    return bind_arguments(module, [InputArray(np.asarray(i.value)[d], f"{i.label} [device {d}]",
                                              i.name, i.source) for i in inputs],
                          positional=positional)


_MPI_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS")


def mpi_comm(env):
    """MPI's world communicator when `env` (the CLI's environment) says this process is
    one of several started by mpirun; else None."""
    size = next((env[k] for k in _MPI_SIZE_VARS if k in env), None)
    if size is None or not size.isdigit() or int(size) <= 1:
        return None
    try:
        from mpi4py import MPI
    except ImportError:
        raise InputError("running under mpirun needs mpi4py (pip install 'hloc[mpi]', with "
                         "the system's MPI)") from None
    return MPI.COMM_WORLD


def fake_per_device(module, n: int, *, seed: int, use_large_float_range: bool) -> list:
    from .fake_args import make_fake_arguments
    return [make_fake_arguments(module, seed=seed + d,
                                use_large_float_range=use_large_float_range)
            for d in range(n)]


def _where(module, d: int) -> str:
    p = _counts(module)[1]
    return f"device {d} (replica {d // p}, partition {d % p})"


def devices_text(module, shape, values: list, summary) -> str:
    """`** device d (replica r, partition p) **` and that device's result, per device."""
    return "\n".join(f"** {_where(module, d)} **\n{summary(shape, v)}"
                     for d, v in enumerate(values))


def devices_json(module, per_device_json: list[dict]) -> dict:
    p = _counts(module)[1]
    first = per_device_json[0]
    return {"module": first["module"], "backend": first["backend"],
            "devices": [{"device": d, "replica": d // p, "partition": d % p,
                         "outputs": j["outputs"]} for d, j in enumerate(per_device_json)],
            "compile_s": first["compile_s"], "run_s": first["run_s"]}


def _stacked(shape, values: list) -> list[np.ndarray]:
    per = [flatten_leaves(v, shape) for v in values]
    return [np.stack([leaves[i] for leaves in per]) for i in range(len(per[0]))]


def save_device_outputs(path, shape, values: list) -> None:
    """out0, out1, ... with a leading device axis."""
    save_npz(path, {f"out{i}": a for i, a in enumerate(_stacked(shape, values))})


def compare_devices(path, shape, values: list, abs_bound: float, rel_bound: float):
    """(ok, report) of every device's result against `path`'s outN[d]."""
    from .compare import ErrorSpec
    from .expect import compare_leaves
    expected = load_outputs(path)
    n = len(values)
    lines = [f"** Comparison with {path} per device (abs error bound {abs_bound:g}, rel "
             f"error bound {rel_bound:g}) **"]
    bad = [e for e in expected if np.ndim(e) == 0 or np.shape(e)[0] != n]
    if bad:
        return False, "\n".join(lines + [f"expected outputs need a leading device axis of "
                                         f"size {n}"])
    ok_all = True
    for d, v in enumerate(values):
        ok, msgs = compare_leaves([e[d] for e in expected], flatten_leaves(v, shape),
                                  ErrorSpec(abs_bound, rel_bound))
        ok_all &= ok
        lines += [f"device {d}: {m}" for m in msgs]
    if ok_all:
        lines.append(f"OK: {len(expected)} outputs match on {n} devices.")
    return ok_all, "\n".join(lines)
