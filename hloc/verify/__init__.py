"""HloVerifier (xla/service/hlo_verifier.cc) over hloc's IR.

`collect_errors(module, **options)` returns every violation as a located VerifyError;
`verify(module, **options)` raises the first. Options mirror HloVerifierOpts (see
`core.Options`): `hloc check` runs with run_hlo_module's settings, layout-insensitive
with mixed precision allowed. The checks are small functions registered by opcode in
`core`'s tables, one module per theme: shape_checks (ShapeVerifier against the
registry's shape rules), async_checks, collective_checks, call_checks (threads,
composites, fusion, custom-call), layout_checks, sharding_checks, module_checks and
buffers. `incremental.Verifier` verifies a module again and again as passes change it,
checking what changed since its last run (`hloc opt`'s verification after each pass).
"""
from __future__ import annotations

from ..diagnostics import VerifyError
from ..ir.module import Module
from . import (async_checks, buffers, call_checks, collective_checks,  # noqa: F401
               layout_checks, module_checks, shape_checks, sharding_checks)
from .core import Options, run

__all__ = ["Options", "collect_errors", "verify"]


def collect_errors(module: Module, **options) -> list[VerifyError]:
    return run(module, Options(**options))


def verify(module: Module, **options) -> None:
    errors = collect_errors(module, **options)
    if errors:
        raise errors[0]
