"""`hloc run` on several devices: printing per-device results, and the MPI path.

Called by cli_run.run when the module runs on more than one device (hloc.multidevice
decides how many): `report_devices` prints or writes what the one-device path would, per
device; `run_mpi` is the `mpirun -n N hloc run ...` path, one device per process, rank 0
reporting for all.
"""
from __future__ import annotations

import click

from .diagnostics import InputError


def report_devices(m, result, output, as_json, print_values, print_all, print_literals,
                    runner, expected, abs_error_bound, rel_error_bound):
    """run's output for a multi-device result (hloc.multidevice)."""
    import dataclasses
    import json

    from . import multidevice as md
    from .runner import result_json
    from .summary import result_summary
    values = result.value
    if output:
        md.save_device_outputs(output, result.shape, values)
    if as_json:
        per = [result_json(dataclasses.replace(result, value=v, devices=1),
                           print_values=print_values) for v in values]
        click.echo(json.dumps(md.devices_json(m, per)))
    else:
        if print_literals:
            click.echo(f"** Result with test runner {runner} **")
        click.echo(md.devices_text(m, result.shape, values,
                                   lambda s, v: result_summary(s, v, print_all=print_all)))
    if expected:
        ok, report = md.compare_devices(expected, result.shape, values, abs_error_bound,
                                        rel_error_bound)
        click.echo(report, err=as_json)
        if not ok:
            raise SystemExit(1)


def _rank_body(m, backend, seed):
    """(runner name, body(interpreter, args)) of one rank on `backend`: the interpreter,
    or compiled code (configured by the CLI) whose collectives meet through MPI."""
    if backend == "interpreter":
        return "Interpreter", None
    if backend != "cpu":
        from .diagnostics import UnsupportedError
        raise UnsupportedError(f"unsupported: --backend {backend} under mpirun (interpreter "
                               f"and cpu run one device per process)")
    from .backend.device_runtime import DeviceExecutable
    from .runner import get_backend
    impl = get_backend("cpu")
    impl.load()
    exe = impl.prepare(m, seed=seed)
    if isinstance(exe, DeviceExecutable):
        return "CPU", exe.run_on
    return "CPU", lambda interp, args: exe.run(args)


def run_mpi(m, comm, n, inputs, literals, positional, seed, use_large_float_range, output,
             as_json, print_values, print_all, expected, abs_error_bound, rel_error_bound,
             backend="interpreter"):
    """One device per MPI process (hloc.interp.mpi_devices); rank 0 reports for all, as
    the in-process run does. A failing rank prints its error and aborts the MPI job."""
    import time

    from . import multidevice as md
    from .diagnostics import HlocError
    from .inputs import read_inputs
    from .interp.mpi_devices import run_rank
    from .runner import RunResult
    rank = comm.Get_rank()
    try:
        if comm.Get_size() != n:
            raise InputError(f"mpirun -n {comm.Get_size()}: the module runs on {n} devices")
        if inputs or literals:
            args = md.bind_device(m, read_inputs(inputs, literals), n, rank,
                                  positional=positional)
        else:
            from .fake_args import make_fake_arguments
            args = make_fake_arguments(m, seed=seed + rank,
                                       use_large_float_range=use_large_float_range)
        from . import interp  # noqa: F401  (registers every evaluation)
        runner, body = _rank_body(m, backend, seed)
        t0 = time.perf_counter()
        values = run_rank(m, args, comm, seed=seed, body=body)
        dt = time.perf_counter() - t0
    except HlocError as e:
        click.echo(f"[rank {rank}] {e.render()}", err=True)
        comm.Abort(e.exit_code)
        raise SystemExit(e.exit_code)       # not reached: Abort ends the process
    except Exception as e:                  # noqa: BLE001 - peers would wait forever
        click.echo(f"[rank {rank}] internal error: {e!r}", err=True)
        comm.Abort(4)
        raise
    if rank != 0:
        return
    click.echo(f"execution time for runner {runner} (MPI, {n} processes): {dt:g}s.",
               err=True)
    result = RunResult(m.name, f"{backend}-mpi", m.entry.root.shape, values, run_s=[dt],
                       devices=n)
    report_devices(m, result, output, as_json, print_values or print_all, print_all, False,
                    runner, expected, abs_error_bound, rel_error_bound)
