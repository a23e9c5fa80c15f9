"""HloVerifier entry points; the checks live in the hloc.verify package.

`verify(module, *, layout_sensitive=False, allow_mixed_precision=True, ...)` raises the
first violation as a located VerifyError; `collect_errors(module, ...)` returns them all.
The keywords are hloc.verify.core.Options' fields (HloVerifierOpts plus the module
config's replica_count / num_partitions / use_spmd_partitioning).
"""
from __future__ import annotations

from .verify import Options, collect_errors, verify

__all__ = ["Options", "collect_errors", "verify"]
