"""Optimisation passes, looked up by XLA's pass names.

`PASSES` maps a name to a zero-argument factory; `default_pipeline()` is the XLA:CPU-
shaped pipeline `hloc opt` runs. Pass modules register themselves with `@register`.
"""
from __future__ import annotations

from .base import FixedPoint, Pass, PassContext, PassError, Pipeline

PASSES: dict[str, type] = {}


def register(cls):
    if cls.name in PASSES:
        raise ValueError(f"pass {cls.name} registered twice")
    PASSES[cls.name] = cls
    return cls


def get_pass(name: str) -> Pass:
    _load()
    if name not in PASSES:
        raise PassError(f"Pass {name} not found. Known passes: {', '.join(list_passes())}")
    return PASSES[name]()


def list_passes() -> list[str]:
    _load()
    return sorted(PASSES)


def _load() -> None:
    """Import the pass modules (they register on import)."""
    from . import pipelines  # noqa: F401


def default_pipeline(multi_output_fusion: bool = False) -> Pass:
    _load()
    from .pipelines import default_pipeline as make
    return make(multi_output_fusion)


__all__ = ["FixedPoint", "Pass", "PassContext", "PassError", "Pipeline", "PASSES",
           "register", "get_pass", "list_passes", "default_pipeline"]
