"""The reference interpreter: NumPy evaluation of HLO, one registry entry per opcode.

Importing this package imports every evaluation module, and each attaches its
`@evaluates(...)` functions to the op registry (hloc.ops.REGISTRY) as it loads; the
walker in core.py then only dispatches. `Interpreter(module).run(args)` runs the ENTRY
computation; `run_module(module, args)` is the one-call form. Values are NumPy arrays
with the element type's storage dtype, tuples for tuple shapes and TOKEN for tokens.
"""
from __future__ import annotations

from . import core                                                     # noqa: F401
from . import conversions, numerics                                    # noqa: F401 (kernels)
from . import elementwise, data_movement, reductions, sorting, linalg, rng  # noqa: F401
from . import custom_calls, collectives, manual                        # noqa: F401 (register)
from .core import TOKEN, EvalContext, Interpreter, evaluates, unsupported

__all__ = ["Interpreter", "EvalContext", "TOKEN", "evaluates", "unsupported", "run_module"]


def run_module(module, args, *, seed: int = 42):
    """Run `module`'s ENTRY computation on `args` (one value per parameter)."""
    return Interpreter(module, seed=seed).run(list(args))

