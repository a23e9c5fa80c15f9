"""Global-view (before-SPMD-partitioning) dumps in compiled code: sharding annotations.

A sharded `jit` dumped before partitioning carries `xla.sdy.FuncResultSharding` on its
results; like `Sharding` (hloc.backend.custom_calls) it only annotates, so compiled code
copies its operand, as the interpreter does (hloc.interp.manual). Manual regions
(`xla.sdy.GlobalToLocalShape` ... `LocalToGlobalShape`, the bodies of shard_map and pmap)
are not compiled: their custom-calls stay `unsupported` in the compiled back end, named,
and `--backend interpreter` runs them per shard.
"""
from __future__ import annotations

from .custom_calls import CUSTOM_CALLS, _identity

CUSTOM_CALLS["xla.sdy.FuncResultSharding"] = _identity
