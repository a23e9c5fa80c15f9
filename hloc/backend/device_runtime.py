"""The device runtime of compiled code: N devices as threads meeting at collectives.

A module with `replica_count` R and `num_partitions` P is compiled once, as the one SPMD
program every device runs; `run_devices` calls it from R*P threads (device d = replica
d // P, partition d % P, as hloc.interp.devices). The computation between collectives is
native code; each collective, replica-id / partition-id, async wrapper of one and
manual-region boundary of a global view (see `DeviceExecutable.run`) is a call of `hloc_collective(index, leaves)` (hloc.backend.collective_calls), whose address
is a ctypes callback registered under that fixed name on the runtime allowlist
(hloc.backend.runtime) — nothing the dump names is ever looked up. The callback finds
its device by a thread-local set before the native call, copies the operand leaves out
of the native buffers, runs the op with the interpreter's semantics for that device
(hloc.interp.collectives: the same participants, rendezvous and group order, so the
values equal the interpreter's multi-device run bit for bit), and writes the result
leaves back in their physical layouts.

Why threads that meet rather than lockstep: the native code of one device runs to its
next collective without any scheduler (while loops and conditionals stay in LLVM); the
ctypes call releases the GIL, so devices compute in parallel, and a device waiting at
a rendezvous holds no core. The kernels' own work-group threads and OpenBLAS's threads
(large dots) are divided among the devices (threads // devices each) for the run, so
devices, kernels and BLAS do not oversubscribe the cores together (OpenBLAS's spinning
workers called from 4 device threads on 2 cores made a 20-step data-parallel loop 30x
slower). A failing device ends the run: its peers stop at their collectives,
every while loop stops (the module's abort flag), and the first real error is raised.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading

import numpy as np

from ..interp.devices import Rendezvous
from ..interp.manual import device_block, gather_blocks
from .collective_calls import ABORT, SYMBOL, device_table, is_manual_boundary
from .executable import Executable
from .loops import minor_to_major

__all__ = ["DeviceExecutable", "needs_devices", "run_devices", "native_entries"]

_tls = threading.local()
_MANUAL = {"xla.sdy.GlobalToLocalShape": device_block,
           "xla.sdy.LocalToGlobalShape": gather_blocks}


def needs_devices(module) -> bool:
    """Whether compiled code of `module` calls the device runtime."""
    return bool(device_table(module))


def _leaf_view(ptr: int | None, shape) -> np.ndarray | None:
    """The native buffer of one leaf as a writable array in physical order."""
    phys = tuple(shape.dims[d] for d in reversed(minor_to_major(shape)))
    dt = shape.dtype.np
    n = int(np.prod(phys, dtype=np.int64)) * dt.itemsize
    if n == 0 or not ptr:
        return None
    return np.frombuffer((ctypes.c_char * n).from_address(ptr), dt).reshape(phys)


def _read(ptr, shape):
    from ..interp.core import TOKEN
    if not shape.dtype.is_array:
        return TOKEN
    v = _leaf_view(ptr, shape)
    if v is None:
        return np.zeros(tuple(shape.dims), shape.dtype.np)
    inv = np.argsort(list(reversed(minor_to_major(shape))))
    return v.transpose(inv).copy()      # a copy: the buffer may be reused once we return


def _build(shape, it):
    if shape.is_tuple:
        return tuple(_build(e, it) for e in shape.elements)
    return next(it)


def _flatten(value, shape, out: list) -> None:
    if shape.is_tuple:
        for v, s in zip(value, shape.elements):
            _flatten(v, s, out)
    else:
        out.append(value)


class _DeviceCall:
    """One device's side of one run: its interpreter context and first error."""

    def __init__(self, exe: "DeviceExecutable", interp):
        self.exe, self.interp = exe, interp
        self.error: BaseException | None = None

    def run(self, index: int, leaves: int) -> None:
        from ..interp.core import EVALUATIONS, unsupported
        from ..ops import facets
        inst = self.exe.table[index]
        shapes = [s for o in inst.operands for s in o.shape.leaves()] + inst.shape.leaves()
        ptrs = (ctypes.c_void_p * max(len(shapes), 1)).from_address(leaves)
        it = iter(_read(ptrs[k], s) for k, s in enumerate(shapes))
        operands = [_build(o.shape, it) for o in inst.operands]
        fn = _MANUAL.get(inst.attrs.get("custom_call_target")) if is_manual_boundary(inst) \
            else EVALUATIONS.get(inst.opdef.name) or facets.get("evaluate", inst.opdef.name)
        if fn is None:
            raise unsupported(inst, f"opcode {inst.opcode} in the device runtime")
        with np.errstate(all="ignore"):
            value = fn(inst, operands, self.interp.ctx)
        out: list = []
        _flatten(value, inst.shape, out)
        first = len(shapes) - len(out)
        for k, (v, s) in enumerate(zip(out, inst.shape.leaves())):
            if not s.dtype.is_array:
                continue
            view = _leaf_view(ptrs[first + k], s)
            if view is not None:
                view[...] = _physical(np.asarray(v, s.dtype.np).reshape(tuple(s.dims)), s)

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self.exe.abort()
        rv = self.interp.device.rendezvous
        if isinstance(rv, Rendezvous):        # in process: peers stop waiting at once
            rv.finish(self.interp.device.id, error)   # (under MPI the job is aborted)


def _collective(index: int, leaves: int) -> int:
    """`hloc_collective`: 0 when the result leaves were written, 1 when this run failed."""
    call = getattr(_tls, "call", None)
    if call is None or call.error is not None:
        return 1
    try:
        call.run(index, leaves)
        return 0
    except BaseException as e:          # noqa: BLE001 - a callback must not raise into C
        call.fail(e)
        return 1


_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int64, ctypes.c_void_p)(_collective)


def native_entries() -> dict[str, int]:
    """The runtime allowlist's device entries: fixed name -> address."""
    return {SYMBOL: ctypes.cast(_CALLBACK, ctypes.c_void_p).value}


def _physical(arr: np.ndarray, shape) -> np.ndarray:
    """The array's elements in `shape`'s physical order (a view)."""
    perm = tuple(reversed(minor_to_major(shape)))
    return arr if perm == tuple(range(arr.ndim)) else arr.transpose(perm)


class DeviceExecutable(Executable):
    """An Executable whose code calls the device runtime (run alone, or on N devices)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.table = device_table(self.module)
        self._abort_addr = self.code.engine.get_global_value_address(ABORT)
        self._runs = threading.Lock()

    def abort(self) -> None:
        if self._abort_addr:
            ctypes.c_int8.from_address(self._abort_addr).value = 1

    def _reset(self) -> None:
        if self._abort_addr:
            ctypes.c_int8.from_address(self._abort_addr).value = 0

    def run_on(self, interp, args: list):
        """Run on the device of `interp` (an Interpreter whose Device says which)."""
        call = _DeviceCall(self, interp)
        _tls.call = call
        try:
            value = Executable.run(self, args)
        finally:
            _tls.call = None
        if call.error is not None:
            raise call.error
        return value

    def run(self, args: list, *, seed: int = 42):
        """One device alone (replica 0, partition 0): collectives whose groups hold only
        it run; the others are `unsupported`, naming how many devices they need. A global
        view with manual regions runs as an SPMD program on its replica_count x
        num_partitions devices, every device given `args` (the global arguments): outside
        the regions every device computes the global values, a region's body runs on each
        device's block, and LocalToGlobalShape gathers the blocks; device 0's result is
        the global result."""
        from ..interp.core import Interpreter
        if any(is_manual_boundary(i) for i in self.table):
            from ..interp.devices import device_count
            R, P = device_count(self.module)
            return run_devices(self, [list(args)] * (R * P), seed=seed)[0]
        with self._runs:
            self._reset()
            return self.run_on(Interpreter(self.module, seed=seed), args)


@contextlib.contextmanager
def _blas_threads(k: int):
    """OpenBLAS (NumPy's bundled copy, the one compiled dots call) on `k` threads."""
    from . import runtime
    lib = runtime.openblas()
    get = getattr(lib, "scipy_openblas_get_num_threads64_", None)
    put = getattr(lib, "scipy_openblas_set_num_threads64_", None)
    if get is None or put is None:
        yield
        return
    get.restype, put.argtypes = ctypes.c_int, [ctypes.c_int]
    old = get()
    put(k)
    try:
        yield
    finally:
        put(old)


def run_devices(exe: Executable, args_per_device: list[list], *, seed: int = 42) -> list:
    """Run compiled `exe` on every device of its module (one argument list each); the
    results, one per device (hloc.interp.devices.run_devices' contract)."""
    from ..interp.devices import _run_threads, device_count
    R, P = device_count(exe.module)
    if len(args_per_device) != R * P:
        from ..interp.devices import DeviceError
        raise DeviceError(f"{len(args_per_device)} argument lists for {R * P} devices "
                          f"(replica_count={R} x num_partitions={P})")
    threads = exe.threads
    lock = getattr(exe, "_runs", None) or threading.Lock()
    share = max(1, threads // (R * P))
    with lock, _blas_threads(share):
        exe.set_threads(share)
        try:
            if isinstance(exe, DeviceExecutable):
                exe._reset()
                body = exe.run_on
            else:
                def body(interp, args):
                    return exe.run(args)
            return _run_threads(exe.module, args_per_device, R, P, seed, body)
        finally:
            exe.set_threads(threads)
