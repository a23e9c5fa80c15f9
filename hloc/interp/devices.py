"""N devices in one process: one interpreter thread per device, meeting at collectives.

A module with `replica_count` R and `num_partitions` P runs on R*P devices; device d is
replica d // P, partition d % P (flattened id r*P + p; the device assignment is the
identity, as on XLA:CPU with `--xla_force_host_platform_device_count`). Every device runs
the ENTRY computation on its own arguments in its own thread. A collective names its
participants as XLA's GetParticipatingDevices does (collective_ops_utils.cc, by
CollectiveOpGroupMode: cross-replica, cross-partition, cross-replica-and-partition,
flattened ids) and calls `Rendezvous.exchange`, which blocks until every participant has
put its value for the same (instruction, n-th execution, group) and hands each the
values in group order; the op's semantics then run locally on that list. (XLA keys its
rendezvous by run id and channel/op id; every device of one SPMD program executes the
same instructions, so the instruction and its execution count name the same meeting.)

Why threads rather than lockstep: collectives may sit inside while bodies, conditionals
and called computations, where a lockstep scheduler would have to turn the recursive
walker into coroutines; a thread per device keeps the walker as it is, NumPy releases the
GIL in its kernels, and the compiled back end will need exactly this rendezvous between
native threads. A device that finishes or fails while others wait for it at a collective
ends the run with an error naming the op and the devices that never arrived (no hang).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from ..diagnostics import HlocError
from ..syntax.device_groups import group_list

__all__ = ["Device", "Rendezvous", "participants", "device_count", "run_devices",
           "DeviceError", "PerShard", "run_per_shard"]


class DeviceError(HlocError):
    """Devices that cannot meet (one finished, failed, or the groups do not match)."""
    exit_code = 2


class _Aborted(DeviceError):
    """A device stopped because another failed (never the error reported)."""


@dataclass(frozen=True)
class Device:
    replica: int
    partition: int
    replicas: int
    partitions: int
    rendezvous: "Rendezvous | None" = None

    @property
    def id(self) -> int:
        return self.replica * self.partitions + self.partition


def device_count(module) -> tuple[int, int]:
    """(replica_count, num_partitions) of the module header (1 when absent)."""
    attrs = getattr(module, "attrs", None) or {}
    return int(attrs.get("replica_count") or 1), int(attrs.get("num_partitions") or 1)


def _group_of(groups, me: int, everyone: int, what: str) -> list[int]:
    if not groups:
        return list(range(everyone))
    for g in groups:
        if me in g:
            return list(g)
    raise DeviceError(f"{what} {me} is in none of the replica groups {list(groups)}")


def participants(inst, device: Device) -> list[int]:
    """Device ids taking part with `device` in `inst`, in XLA's participant order."""
    R, P = device.replicas, device.partitions
    r, p = device.replica, device.partition
    groups = group_list(inst.attrs.get("replica_groups"))
    if inst.attrs.get("channel_id") is None:                         # kCrossReplica
        return [x * P + p for x in _group_of(groups, r, R, "replica")]
    if "use_global_device_ids" not in inst.opdef.attr_index:         # kCrossPartition
        return [r * P + x for x in _group_of(groups, p, P, "partition")]
    if inst.attrs.get("use_global_device_ids"):                      # kFlattenedID
        return _group_of(groups, device.id, R * P, "device")
    return [x * P + q for x in _group_of(groups, r, R, "replica")     # kCrossReplicaAndPartition
            for q in range(P)]


def permute_peers(inst, device: Device) -> tuple[list[int], int | None, list[int]]:
    """collective-permute: (all devices of this device's replica/partition line, the
    source sending to this device or None, the targets this device sends to), as ids."""
    R, P = device.replicas, device.partitions
    r, p = device.replica, device.partition
    pairs = [tuple(x) for x in inst.attrs.get("source_target_pairs") or ()]
    if inst.attrs.get("channel_id") is None:          # pairs of replica ids
        line, me, to_id = [x * P + p for x in range(R)], r, (lambda x: x * P + p)
    else:                                             # pairs of partition ids
        line, me, to_id = [r * P + x for x in range(P)], p, (lambda x: r * P + x)
    sources = [s for s, t in pairs if t == me]
    if len(sources) > 1:
        raise DeviceError(f"{inst.opcode} %{inst.name}: several sources send to {me}")
    return line, (to_id(sources[0]) if sources else None), [to_id(t) for s, t in pairs
                                                              if s == me]


class Rendezvous:
    """Where the device threads of one run meet; `exchange` is the only entry."""

    def __init__(self, count: int):
        self.count = count
        self._cv = threading.Condition()
        self._slots: dict = {}
        self._finished: set[int] = set()
        self._failed: BaseException | None = None

    def exchange(self, inst, occurrence: int, group: list[int], me: int, value) -> list:
        key = (id(inst), occurrence, tuple(group))
        if any(not 0 <= d < self.count for d in group):
            raise DeviceError(f"{inst.opcode} %{inst.name}: participants {group} name devices "
                              f"beyond the {self.count} of the run")
        with self._cv:
            slot = self._slots.setdefault(key, [{}, 0])
            slot[0][me] = value
            self._cv.notify_all()
            while len(slot[0]) < len(group):
                if self._failed is not None:
                    raise _Aborted("another device failed")
                gone = [d for d in group if d in self._finished and d not in slot[0]]
                if gone:
                    raise DeviceError(
                        f"devices {gone} finished without reaching {inst.opcode} %{inst.name} "
                        f"(execution {occurrence + 1}) that devices {sorted(slot[0])} wait at")
                self._cv.wait()
            values = [slot[0][d] for d in group]
            slot[1] += 1
            if slot[1] == len(group):
                del self._slots[key]
        return values

    def finish(self, device: int, error: BaseException | None = None) -> None:
        with self._cv:
            self._finished.add(device)
            if error is not None and self._failed is None:
                self._failed = error
            self._cv.notify_all()


class PerShard:
    """A manual region's value: one block per device of its mesh (hloc.interp.manual)."""
    __slots__ = ("shards",)

    def __init__(self, shards: list):
        self.shards = shards

    def __getitem__(self, index: int) -> "PerShard":     # get-tuple-element on each device
        return PerShard([s[index] for s in self.shards])


def run_per_shard(comp, args: list, *, module, seed: int) -> PerShard:
    """Run computation `comp` once per shard of the PerShard arguments (other arguments
    are given to every shard), as partitions 0..N-1 meeting at collectives."""
    n = max(len(a.shards) for a in args if isinstance(a, PerShard))
    per = [[a.shards[d] if isinstance(a, PerShard) else a for a in args] for d in range(n)]
    return PerShard(_run_threads(module, per, 1, n, seed,
                                 lambda interp, a: interp.call(comp, a)))


def run_devices(module, args_per_device: list[list], *, seed: int = 42,
                replicas: int | None = None, partitions: int | None = None) -> list:
    """Run `module`'s ENTRY on every device (one argument list each); the results, one
    per device. The first device error (by device id) is raised."""
    R, P = device_count(module)
    R, P = replicas or R, partitions or P
    n = R * P
    if len(args_per_device) != n:
        raise DeviceError(f"{len(args_per_device)} argument lists for {n} devices "
                          f"(replica_count={R} x num_partitions={P})")
    return _run_threads(module, args_per_device, R, P, seed, lambda interp, a: interp.run(a))


MAX_DEVICES = 512     # threads in one process; a dump may declare any replica_count


def too_many_devices(R: int, P: int):
    from ..diagnostics import UnsupportedError
    return UnsupportedError(f"unsupported: {R * P} devices (replica_count={R} x "
                            f"num_partitions={P}); at most {MAX_DEVICES} run in one process")


def _run_threads(module, args_per_device, R: int, P: int, seed: int, body) -> list:
    from .core import Interpreter
    n = R * P
    if n > MAX_DEVICES:
        raise too_many_devices(R, P)
    rv = Rendezvous(n)
    results: list = [None] * n
    errors: list = [None] * n

    def work(d: int) -> None:
        device = Device(d // P, d % P, R, P, rv)
        try:
            results[d] = body(Interpreter(module, seed=seed, device=device), args_per_device[d])
        except BaseException as e:         # handed to the caller below, never swallowed
            errors[d] = e
            rv.finish(d, e)
            return
        rv.finish(d)

    if n == 1:
        work(0)
    else:
        threads = [threading.Thread(target=work, args=(d,), name=f"hloc-device-{d}",
                                    daemon=True) for d in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    real = [e for e in errors if e is not None and not isinstance(e, _Aborted)]
    first = real[0] if real else next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results
