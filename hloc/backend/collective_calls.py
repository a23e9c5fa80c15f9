"""Collectives in compiled code: one call into the device runtime per instruction.

Every collective (the ops with the COLLECTIVE trait: all-reduce, all-gather,
reduce-scatter, all-to-all, ragged-all-to-all, collective-permute, collective-broadcast
and their -start/-done halves), `replica-id`, `partition-id`, an async-start / -update /
-done wrapping a computation that holds one, and a global view's manual-region
boundaries (`xla.sdy.GlobalToLocalShape` / `LocalToGlobalShape` custom-calls) is emitted as

    i32 @hloc_collective(i64 index, ptr leaves)

where `index` numbers the instruction in `device_table(module)` (a stable order over
the module's computations, so the object cache stays valid) and `leaves` is the
array of the instruction's operand leaves followed by its result leaves, in their
physical layouts. `hloc_collective` is on the back end's fixed runtime allowlist
(hloc.backend.runtime); its body is hloc.backend.device_runtime, which meets the other
devices' threads and writes the result leaves. When a device fails, the runtime sets
`@hloc_device_abort`, every later collective returns at once and every while loop of
the module stops at its next test (`keep_looping`), so no device thread can spin on
values a failed collective never wrote.
"""
from __future__ import annotations

from llvmlite import ir

from ..ops.base import COLLECTIVE, DEVICE_ID
from . import runtime
from .loops import i64
from .types import I8, I32, I64, PTR

SYMBOL = "hloc_collective"
ABORT = "hloc_device_abort"
# A global view's manual-region boundaries: one device's block in, every device's out.
MANUAL_TARGETS = frozenset({"xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape"})
_ASYNC = frozenset({"async-start", "async-update", "async-done"})


def wrapped(inst):
    """The computation an async-start/-update/-done wraps (None if not found)."""
    seen = 0
    while inst.opcode in _ASYNC and seen < 1000:
        comp = inst.attrs.get("calls")
        if comp is not None:
            return comp
        if not inst.operands:
            return None
        inst, seen = inst.operands[0], seen + 1
    return None


def is_device_op(inst) -> bool:
    """Whether `inst` runs through the device runtime."""
    if inst.opdef.traits & {COLLECTIVE, DEVICE_ID}:
        return True
    if is_manual_boundary(inst):
        return True
    if inst.opcode in _ASYNC:
        comp = wrapped(inst)
        return comp is not None and any(i.opdef.traits & {COLLECTIVE, DEVICE_ID}
                                        for i in comp.instructions)
    return False


def is_manual_boundary(inst) -> bool:
    return inst.opcode == "custom-call" and inst.attrs.get("custom_call_target") in MANUAL_TARGETS


def device_table(module) -> list:
    """The module's device-runtime instructions in a stable order (the call's index)."""
    return [inst for comp in module.computations for inst in comp.instructions
            if is_device_op(inst)]


def _indices(mcx, module) -> dict[int, int]:
    table = getattr(mcx, "hloc_device_indices", None)
    if table is None:
        table = {id(inst): k for k, inst in enumerate(device_table(module))}
        mcx.hloc_device_indices = table
    return table


def _abort_flag(mcx) -> ir.GlobalVariable:
    g = mcx.module.globals.get(ABORT)
    if g is None:
        g = ir.GlobalVariable(mcx.module, I8, name=mcx.fixed(ABORT))
        g.initializer = ir.Constant(I8, 0)
    return g


def emit(em, inst) -> None:
    """The runtime call for `inst` in computation emitter `em` (hloc.backend.computation)."""
    runtime.require(SYMBOL)
    module = em.comp.parent
    index = _indices(em.mcx, module)[id(inst)]
    _abort_flag(em.mcx)
    fn = em.mcx.intrinsic(SYMBOL, I32, [I64, PTR])
    bufs = [x for o in inst.operands for x in em.leaves(o)] + em.leaves(inst)
    em.b.call(fn, [i64(index), em.ptr_array(bufs)])


def keep_looping(em, go: ir.Value) -> ir.Value:
    """A while loop's condition, and-ed with "no device failed" when the module has
    device-runtime calls (unchanged otherwise)."""
    if not _indices(em.mcx, em.comp.parent):
        return go
    flag = em.b.load_atomic(_abort_flag(em.mcx), "monotonic", 1, typ=I8)   # set by another thread
    return em.b.and_(go, em.b.icmp_unsigned("==", flag, ir.Constant(I8, 0)))
