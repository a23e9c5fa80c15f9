"""Global-view (before-SPMD-partitioning) dumps in compiled code: sharding annotations.

A sharded `jit` dumped before partitioning carries `xla.sdy.FuncResultSharding` on its
results; like `Sharding` (hloc.backend.custom_calls) it only annotates, so compiled code
copies its operand, as the interpreter does (hloc.interp.manual). Manual regions
(`xla.sdy.GlobalToLocalShape` ... `LocalToGlobalShape`, the bodies of shard_map and pmap)
run as an SPMD program on the module's devices: their boundaries are device-runtime
calls (hloc.backend.collective_calls, device_runtime.DeviceExecutable.run).
"""
from __future__ import annotations

from .custom_calls import CUSTOM_CALLS, _identity

CUSTOM_CALLS["xla.sdy.FuncResultSharding"] = _identity
