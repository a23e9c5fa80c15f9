"""One device per MPI process: `mpirun -n N hloc run after.hlo ...`.

Rank d runs device d (replica d // P, partition d % P) of a module with replica_count R and
num_partitions P, N = R*P, in its own process, so a module too large for one process (or
machine) still runs. Collectives meet through `MpiRendezvous`, which has the interface of
devices.Rendezvous (`exchange(inst, occurrence, group, me, value)`): each member sends its
value to every other member of the group (non-blocking sends, then blocking receives, so
no ordering between ranks can deadlock) with the meeting's key, and checks that what
arrives carries the same key (MPI keeps messages between two ranks in order, and every
device of one SPMD program meets its peers in the same order). Values travel pickled
(mpi4py's lowercase send/recv). The op semantics are hloc.interp.collectives', unchanged,
so results are bit for bit those of the in-process run. A rank that finishes tells the
others (`finish`), so ranks that do not meet fail with an error instead of hanging; a
rank that fails aborts the MPI job (hloc run's MPI path).

mpi4py is an optional extra (`pip install 'hloc[mpi]'` plus the system's MPI); this
module imports it only when a run is under MPI.
"""
from __future__ import annotations

from .devices import Device, DeviceError, device_count

__all__ = ["MpiRendezvous", "run_rank"]

_TAG = 17
_DONE = ("<done>",)


class MpiRendezvous:
    def __init__(self, comm):
        self.comm = comm
        self.count = comm.Get_size()

    def exchange(self, inst, occurrence: int, group: list[int], me: int, value) -> list:
        if any(not 0 <= d < self.count for d in group):
            raise DeviceError(f"{inst.opcode} %{inst.name}: participants {group} name devices "
                              f"beyond the {self.count} MPI processes")
        key = (inst.name, occurrence, tuple(group))
        requests = [self.comm.isend((key, value), dest=d, tag=_TAG) for d in group if d != me]
        values = {me: value}
        for d in group:
            if d == me:
                continue
            their_key, their_value = self.comm.recv(source=d, tag=_TAG)
            if their_key == _DONE:
                raise DeviceError(f"device {d} finished without reaching {inst.opcode} "
                                  f"%{inst.name} (execution {occurrence + 1}) that device "
                                  f"{me} waits at")
            if their_key != key:
                raise DeviceError(f"device {me} is at {inst.opcode} %{inst.name} (execution "
                                  f"{occurrence + 1}) but device {d} sent for %{their_key[0]} "
                                  f"(execution {their_key[1] + 1})")
            values[d] = their_value
        for r in requests:
            r.wait()
        return [values[d] for d in group]

    def finish(self, me: int) -> None:
        """Tell every other rank this one is done and hear that they are: a rank still
        waiting at a collective for this one gets the marker and fails instead of
        hanging; a collective message that arrives here instead fails this rank."""
        requests = [self.comm.isend((_DONE, None), dest=d, tag=_TAG)
                    for d in range(self.count) if d != me]
        for d in range(self.count):
            if d == me:
                continue
            key, _ = self.comm.recv(source=d, tag=_TAG)
            if key != _DONE:
                raise DeviceError(f"device {me} finished while device {d} is at %{key[0]} "
                                  f"(execution {key[1] + 1})")
        for r in requests:
            r.wait()


def run_rank(module, args: list, comm, *, seed: int = 42, body=None):
    """Run this rank's device of `module` on `args`; every rank's result on rank 0 (in
    device order), None on the others. `body(interpreter, args)` runs the device (default:
    the interpreter; compiled code: hloc.backend.device_runtime's `run_on`, whose
    collectives meet through the same MpiRendezvous)."""
    from .core import Interpreter
    R, P = device_count(module)
    rank, size = comm.Get_rank(), comm.Get_size()
    if size != R * P:
        raise DeviceError(f"{size} MPI processes for {R * P} devices (replica_count={R} x "
                          f"num_partitions={P}); run mpirun -n {R * P}")
    rv = MpiRendezvous(comm)
    device = Device(rank // P, rank % P, R, P, rv)
    interp = Interpreter(module, seed=seed, device=device)
    value = body(interp, args) if body is not None else interp.run(args)
    rv.finish(rank)
    return comm.gather(value, root=0)
