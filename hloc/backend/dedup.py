"""Compiling identical kernels once.

A training step has many structurally identical fusions (the same fused computation
modulo names, on the same shapes and layouts): per layer, per scan step, forward and
backward. Their kernels would be the same LLVM function under another name, generated in
Python and optimised by LLVM once per copy. `Kernels.get(mcx, inst)` fingerprints an
instruction before any IR is generated and hands back the function already emitted for an
identical one.

The key holds everything the kernel emitter reads (hloc.backend.kernels.emit_kernel):
the opcode, the result and operand shapes with their layouts, the attributes (called
computations by structure: every instruction in storage order with its opcode, shape,
operand positions, attributes, parameter number and constant bytes; nested calls the same
way) — names excepted, and the attributes codegen never reads (metadata and friends).
Options are the module's, shared by every kernel of one lowering. A kernel whose code
depends on the instruction itself is never shared: the rng ops (their state and key come
from the instruction's name) and anything with a side effect. tests/test_backend_dedup.py
checks on real dumps that every kernel this merges emits the same IR as the one it reuses.
"""
from __future__ import annotations

from ..ir.module import Computation
from ..ops import has_side_effect as own_side_effect
from ..ir.literal import literal_bytes
from ..syntax.literal_printer import literal_text

# Never read by code generation (as HLO's Identical ignores them).
IGNORED_ATTRS = frozenset({"metadata", "frontend_attributes", "statistics", "origin"})
# Kernels whose code names the instruction (hloc.backend.rng: per-instruction state).
PER_INSTRUCTION = frozenset({"rng", "rng-get-and-update-state", "rng-bit-generator"})


class _Unshared(Exception):
    """The kernel must be emitted for its own instruction."""


class Kernels:
    """The kernels of one lowering, by key."""

    def __init__(self):
        self.by_key: dict = {}
        self._comp_keys: dict[int, tuple] = {}
        self.merged = 0                  # kernels reused instead of emitted

    def get(self, mcx, inst, emit):
        """The kernel of `inst`: one emitted before for an identical instruction, or
        `emit(mcx, inst)`'s."""
        key = self.key(inst)
        if key is not None:
            fn = self.by_key.get(key)
            if fn is not None:
                self.merged += 1
                return fn
        fn = emit(mcx, inst)
        if key is not None:
            self.by_key[key] = fn
        return fn

    def key(self, inst) -> tuple | None:
        """The kernel key of `inst`, or None when its kernel is never shared."""
        try:
            return (_row(self, inst, None), tuple(str(o.shape) for o in inst.operands))
        except _Unshared:
            return None

    def computation(self, comp: Computation) -> tuple:
        key = self._comp_keys.get(id(comp))
        if key is None:
            insts = comp.instructions
            position = {id(x): n for n, x in enumerate(insts)}
            rows = tuple(_row(self, x, position) for x in insts)
            key = (comp.execution_thread, position[id(comp.root)], rows)
            self._comp_keys[id(comp)] = key
        return key


def _row(kernels: Kernels, inst, position) -> tuple:
    # Its own side effect; one in a computation it calls raises from that computation's
    # rows (every called computation is an attribute, keyed below).
    if inst.opcode in PER_INSTRUCTION or own_side_effect(inst):
        raise _Unshared
    extra = None
    if inst.opcode == "parameter":
        extra = inst.parameter_number
    elif inst.opcode == "constant":
        extra = _literal_key(inst)
    ops = tuple([position[id(o)] for o in inst.operands]) if position is not None else ()
    attrs = tuple(sorted([(k, _value(kernels, v)) for k, v in inst.attrs.items()
                          if k not in IGNORED_ATTRS])) if inst.attrs else ()
    return (inst.opcode, str(inst.shape), ops, attrs, extra)


def _value(kernels: Kernels, value):
    if isinstance(value, Computation):
        return ("computation", kernels.computation(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_value(kernels, v) for v in value)
    if isinstance(value, float):
        return ("float", value.hex())         # -0.0 is not 0.0 here
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return (type(value).__name__, value)


def _literal_key(inst):
    lit = inst.literal
    if lit is None:
        return None
    return literal_bytes(inst.shape, lit.value) or literal_text(lit, print_large=True)
