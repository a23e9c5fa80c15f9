"""Asynchronous ops: async-start/update/done shapes and threads, start/done pairing.

ShapeVerifier::HandleAsync{Start,Update,Done}: the async shape is
`((operands), result, context...)` and must match the wrapped computation's parameters
and root; update keeps its operand's shape; done returns element {1}; each op's thread
is its wrapped computation's. VerifyAsynchronousInstructionPairs (run before anything
else, as in XLA): every *-start has exactly one user, of the matching kind, and every
*-done or update takes exactly such a start. VerifyChannels: a send or recv and its
done share a channel id and is_host_transfer. VerifyAsyncComputation: a wrapped
computation holds only parameters and its root (send/recv groups and collectives groups
excepted).
"""
from __future__ import annotations

from ..ir.shape import TupleShape
from .core import ASYNC_OPS, check, module_check
from .shape_checks import shapes_same
from .shapes import describe

# opcode -> (users it must have exactly one of, operands it must take exactly one of)
_PAIRS = {
    "async-start": ({"async-update", "async-done"}, None),
    "async-update": ({"async-update", "async-done"}, ("async-start", "async-update")),
    "async-done": (None, ("async-start", "async-update")),
    "all-reduce-start": ({"all-reduce-done"}, None),
    "all-reduce-done": (None, ("all-reduce-start",)),
    "copy-start": ({"copy-done"}, None),
    "copy-done": (None, ("copy-start",)),
    "collective-permute-start": ({"collective-permute-done"}, None),
    "collective-permute-done": (None, ("collective-permute-start",)),
    "send": ({"send-done", "tuple"}, None),
    "send-done": (None, ("send", "get-tuple-element")),
    "recv": ({"recv-done", "tuple"}, None),
    "recv-done": (None, ("recv", "get-tuple-element")),
}
_SEND_RECV_GROUP = frozenset({"send", "recv", "bitcast", "parameter", "tuple"})


@module_check("pre", opcodes=_PAIRS)
def verify_asynchronous_instruction_pairs(ctx) -> None:
    for comp, inst in ctx.with_opcodes(*_PAIRS):
        rule = _PAIRS[inst.opcode]
        users_ok, operands_ok = rule
        if inst.opcode in ("send", "recv") and comp.root is inst and \
                comp in ctx.async_comps:
            continue                  # wrapped in an async op: no users needed
        if operands_ok is not None:
            _single_operand(inst, operands_ok, ctx)
        if users_ok is not None:
            _single_user(inst, users_ok, ctx)


@module_check("pre", opcodes=("send", "recv"))
def verify_channels(ctx) -> None:
    """VerifyChannels: a send/recv and its done share channel id and host-transfer flag."""
    for _, inst in ctx.with_opcodes("send", "recv"):
        if inst.attrs.get("channel_id") is None:
            continue
        users = ctx.users(inst)
        if len(users) != 1 or users[0].opcode != inst.opcode + "-done":
            continue                  # pairing (above) reports what is wrong here
        done = users[0]
        if done.attrs.get("channel_id") != inst.attrs["channel_id"]:
            ctx.fail(done, f"Expected to have the same channel id, actual channel ids are: "
                           f"{describe(inst)} ({inst.attrs['channel_id']}), "
                           f"{describe(done)} ({done.attrs.get('channel_id', -1)})")
        elif bool(done.attrs.get("is_host_transfer")) != \
                bool(inst.attrs.get("is_host_transfer")):
            ctx.fail(done, f"Expected instructions to have the same is-host-transfer "
                           f"property: {describe(inst)}, {describe(done)}")


@module_check("pre")
def verify_entry_is_not_fused(ctx) -> None:
    entry = ctx.module.entry
    if entry is not None and entry in ctx.fused and entry.root is not None:
        ctx.fail(entry.root, f"Module entry computation cannot be a fusion computation: "
                             f"{describe(entry.root)}")


def _single_user(inst, expected, ctx) -> None:
    users = ctx.users(inst)
    if len(users) != 1:
        ctx.fail(inst, f"The {inst.opcode} instruction requires one consumer, found "
                       f"{len(users)}: {describe(inst)}")
    elif users[0].opcode not in expected:
        ctx.fail(inst, f"The consumer of a {inst.opcode} instruction needs to be one of "
                       f"({', '.join(sorted(expected))}), found {users[0].opcode}: "
                       f"{describe(inst)}")


def _single_operand(inst, expected, ctx) -> None:
    if len(inst.operands) != 1:
        ctx.fail(inst, f"The {inst.opcode} instruction requires one operand, found "
                       f"{len(inst.operands)}: {describe(inst)}")
    elif inst.operands[0].opcode not in expected:
        ctx.fail(inst, f"The operand of a {inst.opcode} instruction needs to be "
                       f"{' or '.join(expected)}, found {inst.operands[0].opcode}: "
                       f"{describe(inst)}")


@module_check("post")
def verify_async_computations(ctx) -> None:
    for comp in ctx.module.computations:
        if comp not in ctx.async_comps:
            continue
        if all(i.opcode in _SEND_RECV_GROUP for i in comp.instructions):
            continue
        starts = [i for i in ctx.callers[comp] if i.opcode == "async-start"]
        if any("_collectives_group" in _frontend_text(s) for s in starts):
            continue
        if any(i is not comp.root and i.opcode != "parameter" for i in comp.instructions):
            ctx.fail(starts[0] if starts else comp.root,
                     f"Asynchronous computation {comp.name} expected to contain only the root "
                     f"and parameter instructions: {describe(starts[0] if starts else comp.root)}")


def _frontend_text(inst) -> str:
    fa = inst.attrs.get("frontend_attributes")
    return getattr(fa, "text", "") or ""


# ---------------------------------------------------------------------------
# ShapeVerifier::HandleAsync*

def _wrapped(inst):
    comp = inst.attrs.get("calls")
    if comp is None and inst.operands and inst.operands[0].opcode in ASYNC_OPS:
        comp = inst.operands[0].attrs.get("calls")
    return comp


@check("async-start", "async-update", "async-done")
def check_async_op(inst, ctx) -> None:
    comp = _wrapped(inst)
    if comp is None or comp.root is None:
        return
    if not _check_thread(inst, comp, ctx):
        return
    opcode = inst.opcode
    if opcode == "async-start":
        if _check_async_shape(inst, inst.shape, comp, ctx):
            params = inst.shape.elements[0]
            for i, operand in enumerate(inst.operands):
                want = params.elements[i] if isinstance(params, TupleShape) and \
                    i < len(params.elements) else None
                if want is None or not shapes_same(ctx, want, operand.shape):
                    ctx.fail(inst, f"The async-start expects the shape of operand {i} to match "
                                   f"the async shape at index {{0}} ({operand.shape} vs "
                                   f"{want}): {describe(inst)}")
                    return
        return
    operand = inst.operands[0]
    if opcode == "async-update":
        if not shapes_same(ctx, operand.shape, inst.shape):
            ctx.fail(inst, f"The async-update expects the shape of operand and output to match "
                           f"({operand.shape} vs {inst.shape}): {describe(inst)}")
            return
        if not _check_async_shape(inst, inst.shape, comp, ctx):
            return
    else:
        if not _check_async_shape(inst, operand.shape, comp, ctx):
            return
        root_shape = operand.shape.elements[1]
        if not shapes_same(ctx, root_shape, inst.shape):
            ctx.fail(inst, f"The async-done expects the shape of output to match the async shape "
                           f"at index {{1}} ({inst.shape} vs {root_shape}): {describe(inst)}")
            return
    _check_async_operand(inst, comp, ctx)


def _check_thread(inst, comp, ctx) -> bool:
    """CheckAsyncOpComputationThreadName."""
    thread = ctx.async_thread(inst)
    declared = inst.attrs.get("async_execution_thread")
    if declared is not None and declared != thread and inst not in ctx.async_threads:
        ctx.fail(inst, f"{inst.opcode} expects the async thread name of its start "
                       f"({declared} vs {thread}): {describe(inst)}")
        return False
    if thread != ctx.thread(comp):
        ctx.fail(inst, f"{inst.opcode} expects same async thread name as wrapped computation's "
                       f"thread name ({thread} vs {ctx.thread(comp)}): {describe(inst)}")
        return False
    err = ctx.nested_thread_error(comp, skip_async=False)
    if err:
        ctx.fail(inst, f"{err}: {describe(inst)}")
        return False
    return True


def _check_async_shape(inst, async_shape, comp, ctx) -> bool:
    """CheckAsyncOpComputationShapes."""
    opcode = inst.opcode
    if not (isinstance(async_shape, TupleShape) and len(async_shape.elements) >= 2):
        ctx.fail(inst, f"The {opcode} expects the async shape to be a tuple of at least two "
                       f"elements, found {async_shape}: {describe(inst)}")
        return False
    params = TupleShape(tuple(p.shape for p in comp.parameters))
    if not shapes_same(ctx, async_shape.elements[0], params):
        ctx.fail(inst, f"The {opcode} expects the async shape at index {{0}} to match async "
                       f"computation parameter shape ({async_shape.elements[0]} vs {params}): "
                       f"{describe(inst)}")
        return False
    if not shapes_same(ctx, async_shape.elements[1], comp.root.shape):
        ctx.fail(inst, f"The {opcode} expects the async shape at index {{1}} to match the async "
                       f"computation root shape ({async_shape.elements[1]} vs "
                       f"{comp.root.shape}): {describe(inst)}")
        return False
    return True


def _check_async_operand(inst, comp, ctx) -> None:
    """CheckAsyncOpOperand."""
    operand = inst.operands[0]
    if operand.opcode not in ("async-start", "async-update"):
        ctx.fail(inst, f"{inst.opcode} expects operand to be async-update or async-done, found "
                       f"{operand.opcode}: {describe(inst)}")
        return
    other = _wrapped(operand)
    if other is not comp and not _same_computation(other, comp):
        ctx.fail(inst, f"The {inst.opcode} expects its wrapped async computation to be identical "
                       f"to its operand's wrapped async computation ({comp.root.opcode} vs "
                       f"{other.root.opcode if other else None}), thread name "
                       f"({ctx.thread(comp)} vs {ctx.thread(other) if other else None}): "
                       f"{describe(inst)}")


def _same_computation(a, b) -> bool:
    if a is None or b is None or len(a.instructions) != len(b.instructions):
        return False
    return all(x.opcode == y.opcode and x.shape == y.shape
               for x, y in zip(a.instructions, b.instructions))

