"""The reference interpreter's walker: runs computations instruction by instruction.

Values are NumPy arrays (dtype = the element type's storage type from
hloc.ir.dtypes, e.g. ml_dtypes.bfloat16 for bf16; 0-d arrays for scalars), Python
tuples for tuple shapes, and TOKEN for tokens. Per-op semantics live in the registry
(the "evaluate" facet, attached with `@evaluates(...)`, hloc.ops.facets); only the structural kinds that move
values between computations are handled here, in one closed match.
"""
from __future__ import annotations

import re

import numpy as np

from ..diagnostics import UnsupportedError
from ..ir.module import Computation, Instruction, Module
from ..ops import facets
from ..ops.facets import evaluates  # noqa: F401  (re-exported for the kernels)
from .devices import PerShard, run_per_shard


_SIZES: dict = {}


def _nbytes(shape) -> int:
    """Bytes a value of `shape` takes (all tuple leaves), memoised by shape."""
    n = _SIZES.get(shape)
    if n is None:
        n = 0
        for leaf in shape.leaves():
            if leaf.dtype.np is not None:
                n += max(leaf.size, 0) * leaf.dtype.np.itemsize
        if len(_SIZES) < 65536:
            _SIZES[shape] = n
    return n


class _Token:
    def __repr__(self):
        return "token"


TOKEN = _Token()


# `@evaluates(*opcodes)`: `fn(inst, operands, ctx) -> value` becomes the ops' evaluation
# (the registry's "evaluate" facet).
EVALUATIONS = facets.table("evaluate")


class EvalContext:
    """What an op's evaluation may use: calling computations, the RNG, the location."""

    def __init__(self, interpreter: "Interpreter"):
        self.interpreter = interpreter

    def call(self, comp: Computation, args: list):
        return self.interpreter.call(comp, args)

    @property
    def rng(self) -> np.random.Generator:
        return self.interpreter.rng

    def unsupported(self, inst: Instruction, what: str) -> UnsupportedError:
        return unsupported(inst, what)

    @property
    def device(self):
        """This run's hloc.interp.devices.Device (replica 0 of 1, partition 0 of 1 alone)."""
        return self.interpreter.device

    def exchange(self, inst: Instruction, group: list, value) -> list:
        """Put `value` for collective `inst` among device ids `group`; every member's
        value, in group order (devices.Rendezvous)."""
        device = self.interpreter.device
        if group == [device.id]:
            return [value]
        if device.rendezvous is None:
            raise unsupported(inst, f"{inst.opcode} needs {len(group)} devices (the module "
                                    f"declares replica_count={device.replicas}, num_partitions="
                                    f"{device.partitions}; `hloc run` runs them all)")
        n = self.interpreter.occurrences.get(id(inst), 0)
        self.interpreter.occurrences[id(inst)] = n + 1
        return device.rendezvous.exchange(inst, n, group, device.id, value)


def unsupported(inst: Instruction, what: str | None = None) -> UnsupportedError:
    comp = inst.parent
    module = comp.parent if comp is not None else None
    source = module.source if module is not None else None
    loc = source.loc(inst.loc) if source is not None and isinstance(inst.loc, int) else None
    detail = what or f"opcode {inst.opcode}"
    name = f"%{inst.name}"
    written = _name_written_at(loc)
    if written is not None and written != inst.name:     # renamed by a pass (call-inliner)
        name = f"%{written}, %{inst.name} after the HLO passes"
    return UnsupportedError(f"unsupported: {detail} (instruction {name})", loc)


_DEFINITION = re.compile(r"(?:ROOT\s+)?%?([\w.\-]+)\s*=")


def _name_written_at(loc) -> str | None:
    """The instruction name the source line defines at `loc`, if it defines one there."""
    if loc is None or loc.source is None:
        return None
    m = _DEFINITION.match(loc.source.line_text(loc.line), loc.col - 1)
    return m.group(1) if m else None


class Interpreter:
    # One value may not exceed this (a dump can declare any shape; refusing beats being
    # killed by the system for memory).
    MAX_VALUE_BYTES = 4 << 30

    def __init__(self, module: Module, *, seed: int = 42, max_value_bytes: int | None = None,
                 device=None):
        from .devices import Device, device_count
        self.module = module
        self.device = device or Device(0, 0, *device_count(module))
        self.occurrences: dict[int, int] = {}
        self.max_value_bytes = max_value_bytes or self.MAX_VALUE_BYTES
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.ctx = EvalContext(self)

    def run(self, args: list):
        return self.call(self.module.entry, list(args))

    def call(self, comp: Computation, args: list):
        env: dict[int, object] = {}
        ctx = self.ctx
        for inst in comp.instructions:
            if _nbytes(inst.shape) > self.max_value_bytes:
                raise unsupported(inst, f"a result of {_nbytes(inst.shape)} bytes (more than "
                                        f"{self.max_value_bytes} bytes in one value)")
            env[id(inst)] = self._eval(inst, env, args, ctx)
        return env[id(comp.root)]

    def _eval(self, inst: Instruction, env, args, ctx):
        match inst.opcode:
            case "parameter":
                return args[inst.parameter_number]
            case "constant":
                return inst.literal.value
            case "tuple":
                return tuple(env[id(o)] for o in inst.operands)
            case "get-tuple-element":
                return env[id(inst.operands[0])][inst.attrs["index"]]
            case "call" | "fusion":
                comp = inst.attrs.get("to_apply") or inst.attrs.get("calls")
                args = [env[id(o)] for o in inst.operands]
                if any(type(a) is PerShard for a in args):        # a manual region's body
                    return run_per_shard(comp, args, module=self.module, seed=self.seed)
                return self.call(comp, args)
            case "while":
                state = env[id(inst.operands[0])]
                cond, body = inst.attrs["condition"], inst.attrs["body"]
                while bool(self.call(cond, [state])):
                    state = self.call(body, [state])
                return state
            case "conditional":
                selector = env[id(inst.operands[0])]
                if "branch_computations" in inst.attrs:
                    branches = inst.attrs["branch_computations"]
                    i = int(selector)
                    if not 0 <= i < len(branches):
                        i = len(branches) - 1   # out-of-range index runs the last branch
                    comp = branches[i]
                else:
                    comp = inst.attrs["true_computation" if bool(selector)
                                      else "false_computation"]
                    i = 0 if bool(selector) else 1
                return self.call(comp, [env[id(inst.operands[i + 1])]])
        fn = EVALUATIONS.get(inst.opdef.name) or facets.get("evaluate", inst.opdef.name)
        if fn is None:
            why = inst.opdef.unsupported
            raise unsupported(inst, f"opcode {inst.opcode}" + (f": {why}" if why else ""))
        with np.errstate(all="ignore"):     # IEEE semantics: overflow, NaN ... are values
            return fn(inst, [env[id(o)] for o in inst.operands], ctx)
