"""Buffers (`b(...)` shapes): where they may appear and who may write them (VerifyBuffers).

Only custom-calls, get-tuple-element, tuple, while and non-entry parameters may touch
buffers. A custom-call "Pin" turns one array into a buffer, "Unpin" back, each through
one output-to-operand alias; "CreateBuffer" makes one from nothing. Any other custom-call
must alias every buffer it takes to exactly one buffer it returns and vice versa. A
buffer value may have at most one writer: a callable user, a while or conditional, or a
while body's root (counted through tuples and get-tuple-elements, without looking inside
called computations).
"""
from __future__ import annotations

from ..ir.shape import ArrayShape, BufferShape, TupleShape
from .core import module_check
from .shapes import describe, index_text, subshapes

_WRITERS = frozenset({"call", "fusion", "custom-call", "while", "conditional"})
_MAY_CARRY = frozenset({"get-tuple-element", "tuple"})


def _has_buffer(shape, cache: dict) -> bool:
    if type(shape) is ArrayShape:
        return False
    key = id(shape)
    hit = cache.get(key)
    if hit is None:
        if isinstance(shape, BufferShape):
            hit = True
        elif isinstance(shape, TupleShape):
            hit = any(_has_buffer(e, cache) for e in shape.elements)
        else:
            hit = False
        cache[key] = hit
    return hit


@module_check("post")
def verify_buffers(ctx) -> None:
    cache: dict = {}
    # Nothing below can fail without a buffer shape. Writers are counted through chains
    # of users, so once there is one every instruction is checked, subset or not. A
    # shape changes only with its instruction in the subset, so a buffer shape not in
    # it was there at the last run, whose answer `found_buffers` carries over.
    any_buffer = ctx.found_buffers
    if not any_buffer:
        for _, insts in ctx.groups():
            if any(_has_buffer(i.shape, cache) for i in insts):
                any_buffer = True
                break
    if not any_buffer:
        return
    ctx.found_buffers = True
    for comp in ctx.module.computations:
        for inst in comp.instructions:
            err = _check(inst, comp, ctx, cache)
            if err:
                ctx.fail(inst, f"{err}: {describe(inst)}")


def _check(inst, comp, ctx, cache) -> str | None:
    opcode = inst.opcode
    if opcode == "custom-call":
        return _custom_call(inst, ctx)
    if opcode == "while":
        return _unique_writers(inst, ctx)
    if opcode == "parameter":
        if comp is ctx.module.entry:
            err = _no_buffers(inst, cache)
            if err:
                return err
        return _unique_writers(inst, ctx)
    if opcode in _MAY_CARRY:
        return None
    return _no_buffers(inst, cache)


def _no_buffers(inst, cache) -> str | None:
    if _has_buffer(inst.shape, cache) or any(_has_buffer(o.shape, cache) for o in inst.operands):
        return "Seen buffers while buffers aren't allowed in this context"
    return None


def _custom_call(inst, ctx) -> str | None:
    target = inst.attrs.get("custom_call_target")
    aliasing = inst.attrs.get("output_to_operand_aliasing", ())
    if target == "Pin":
        operand = inst.operands[0].shape if len(inst.operands) == 1 else None
        if not isinstance(operand, ArrayShape):
            return "custom-call to Pin must have one array non-buffer operand"
        if not isinstance(inst.shape, BufferShape):
            return "custom-call to Pin must have one buffer result"
        if operand != inst.shape.inner:
            return "custom-call to Pin must have the same shape as the operand"
        if len(aliasing) != 1:
            return "custom-call to Pin must have one output-to-operand aliasing"
        return _unique_writer(inst, (), ctx)
    if target == "CreateBuffer":
        if inst.operands:
            return "custom-call to CreateBuffer can't have an operand"
        if not isinstance(inst.shape, BufferShape):
            return "custom-call to CreateBuffer must have one buffer result"
        return _unique_writer(inst, (), ctx)
    if target == "Unpin":
        operand = inst.operands[0].shape if len(inst.operands) == 1 else None
        if not isinstance(operand, BufferShape):
            return "custom-call to Unpin must have one buffer operand"
        if not isinstance(inst.shape, ArrayShape):
            return "custom-call to Unpin must have one array non-buffer result"
        if operand.inner != inst.shape:
            return "custom-call to Unpin must have the same shape as the operand"
        if len(aliasing) != 1:
            return "custom-call to Unpin must have one output-to-operand aliasing"
        return None
    operand_parts: dict = {}
    result_parts: dict = {}
    for out_index, operand_no, operand_index in aliasing:
        key = (operand_no, tuple(operand_index))
        operand_parts[key] = operand_parts.get(key, 0) + 1
        result_parts[tuple(out_index)] = result_parts.get(tuple(out_index), 0) + 1
    for no, operand in enumerate(inst.operands):
        for index, sub in subshapes(operand.shape):
            if isinstance(sub, BufferShape):
                count = operand_parts.get((no, index), 0)
                if count == 0:
                    return (f"buffer is used in operands but not in results: operand {no} "
                            f"ShapeIndex {index_text(index)}")
                if count > 1:
                    return (f"buffer is used in results multiple times: operand {no} "
                            f"ShapeIndex {index_text(index)}")
    results = []
    for index, sub in subshapes(inst.shape):
        if isinstance(sub, BufferShape):
            count = result_parts.get(index, 0)
            if count == 0:
                return f"buffer is used in results but not in operands: {index_text(index)}"
            if count > 1:
                return f"buffer is used in operands multiple times: {index_text(index)}"
            results.append(index)
    for index in results:
        err = _unique_writer(inst, index, ctx)
        if err:
            return err
    return None


def _unique_writers(inst, ctx) -> str | None:
    for index, sub in subshapes(inst.shape):
        if isinstance(sub, BufferShape):
            err = _unique_writer(inst, index, ctx)
            if err:
                return err
    return None


def _unique_writer(inst, index, ctx) -> str | None:
    if _count_writers(inst, tuple(index), ctx) > 1:
        return f"an HLO buffer value has more than one writers (or unpins) at {index_text(index)}"
    return None


def _count_writers(inst, index: tuple, ctx) -> int:
    return sum(_writers_in_user(inst, index, user, ctx) for user in ctx.users(inst))


def _writers_in_user(inst, index: tuple, user, ctx) -> int:
    """CountWritersInUser."""
    if user.opcode in _WRITERS:
        return 1
    if user.opcode == "get-tuple-element":
        if index and user.attrs.get("index") == index[0]:
            return _count_writers(user, index[1:], ctx)
        return 0
    if user.opcode == "tuple":
        comp = inst.parent
        if comp is not None and comp.root is user:
            return 1 if any(c.opcode == "while" for c in ctx.callers.get(comp, ())) else 0
        return _count_writers(user, (user.operands.index(inst),) + index, ctx)
    return 0
