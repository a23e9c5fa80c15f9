"""Collectives: replica groups, collective-permute pairs and buffers, all-to-all layouts.

CheckReplicaGroups: in the group mode the channel id and use_global_device_ids select
(GetCollectiveOpGroupMode), groups are non-empty, name every id 0..n-1 once, have one
size except for all-reduce, and n matches the replica/partition count when the module
config sets one. CheckDuplicatedSourceOrTarget and CheckInplaceCollectivePermute for
collective-permute(-start). All-to-all tuple operands must share a layout (memory space
aside); all-reduce channel ids are positive; all all-reduces of a module are either all
layout-constrained or none.
"""
from __future__ import annotations

from ..ir.shape import ArrayShape, TupleShape
from ..ops import opcodes_with_attr
from .core import check, module_check
from .shapes import Eq, describe, equal

_CROSS_REPLICA = "kCrossReplica"
_CROSS_PARTITION = "kCrossPartition"
_REPLICA_AND_PARTITION = "kCrossReplicaAndPartition"
_FLATTENED = "kFlattenedID"
# GetCollectiveOpGroupMode reads use_global_device_ids where the op has one.
_USE_GLOBAL = tuple(sorted(opcodes_with_attr("use_global_device_ids")))


def group_mode(inst) -> str | None:
    """GetCollectiveOpGroupMode; None for the invalid combination."""
    has_channel = inst.attrs.get("channel_id") is not None
    use_global = bool(inst.attrs.get("use_global_device_ids")) \
        if "use_global_device_ids" in inst.opdef.attr_index else None
    if not has_channel:
        return None if use_global else _CROSS_REPLICA
    if use_global is None:
        return _CROSS_PARTITION
    return _FLATTENED if use_global else _REPLICA_AND_PARTITION


def _groups(inst) -> tuple:
    rg = inst.attrs.get("replica_groups")
    return rg.groups if rg is not None else ()


@check(*_USE_GLOBAL, "all-to-all", "ragged-all-to-all")
def check_replica_groups(inst, ctx) -> None:
    mode = group_mode(inst)
    if mode is None:
        ctx.fail(inst, f"Invalid combination of has_channel_id and use_global_device_ids: "
                       f"{describe(inst)}")
        return
    groups = _groups(inst)
    if not groups:
        if mode == _FLATTENED:
            ctx.fail(inst, f"Replica groups must be specified in flattened-id mode: "
                           f"{describe(inst)}")
        return
    seen: set[int] = set()
    for g in groups:
        if not g:
            ctx.fail(inst, f"Instruction cannot have an empty replica group: {describe(inst)}")
            return
        for i in g:
            if i in seen:
                ctx.fail(inst, f"Replica {i} is repeated in instruction's replica-groups: "
                               f"{describe(inst)}")
                return
            seen.add(i)
    n = len(seen)
    for i in range(n):
        if i not in seen:
            ctx.fail(inst, f"Replica {i} is not named in instruction's replica-groups: "
                           f"{describe(inst)}")
            return
    replicas, partitions = ctx.replica_count, ctx.num_partitions
    expected, what = {
        _CROSS_REPLICA: (replicas, "replicas"), _REPLICA_AND_PARTITION: (replicas, "replicas"),
        _CROSS_PARTITION: (partitions, "partitions"),
        _FLATTENED: (replicas * partitions, "flattened IDs")}[mode]
    if expected != 1 and n != expected:
        ctx.fail(inst, f"In {mode} mode, replica groups should contain {expected} {what}, but "
                       f"found {n}: {describe(inst)}")
        return
    if inst.opcode not in ("all-reduce", "all-reduce-start") and \
            any(len(g) != len(groups[0]) for g in groups):
        ctx.fail(inst, f"Replica groups expected to be of uniform size: {describe(inst)}")


def subgroup_size(inst, ctx) -> int:
    """GetSubgroupSize."""
    mode, groups = group_mode(inst), _groups(inst)
    if mode == _CROSS_PARTITION:
        return len(groups[0]) if groups else ctx.num_partitions
    if mode == _FLATTENED:
        return len(groups[0]) if groups else 1
    size = len(groups[0]) if groups else ctx.replica_count
    return size * ctx.num_partitions if mode == _REPLICA_AND_PARTITION else size


@check("all-to-all")
def check_all_to_all_operands(inst, ctx) -> None:
    if inst.attrs.get("dimensions") or group_mode(inst) is None:
        return
    split = subgroup_size(inst, ctx)
    if not _groups(inst) and len(inst.operands) != split:
        ctx.fail(inst, f"all-to-all has {len(inst.operands)} operands but {split} participants "
                       f"(hlo->operand_count() == split_count): {describe(inst)}")
        return
    first = inst.operands[0].shape
    for i, operand in enumerate(inst.operands[1:], 1):
        if not equal(first, operand.shape, Eq(memory_space=True)):
            ctx.fail(inst, f"HLO all-to-all has operands with different shapes: the 0th operand "
                           f"shape {first}, but the {i}th operand has shape {operand.shape}: "
                           f"{describe(inst)}")
            return


@check("all-reduce")
def check_all_reduce_channel(inst, ctx) -> None:
    channel = inst.attrs.get("channel_id")
    if channel is not None and channel <= 0:
        ctx.fail(inst, f"All reduce channel id must be greater than 0 for {describe(inst)}")


@module_check("post", opcodes=("all-reduce", "all-reduce-start"))
def verify_layout_constrained_all_reduce(ctx) -> None:
    # Module-wide: when the instructions to check include an all-reduce, all of them
    # are compared (a module that passed before has no mix among the others).
    if ctx.subset is not None and not ctx.with_opcodes("all-reduce", "all-reduce-start"):
        return
    reference = None
    for comp in ctx.module.computations:
        for inst in comp.instructions:
            if inst.opcode not in ("all-reduce", "all-reduce-start"):
                continue
            constrained = bool(inst.attrs.get("constrain_layout"))
            if reference is None:
                reference = constrained
            elif constrained != reference:
                ctx.fail(inst, f"HloModule has a mix of layout constrained and unconstrained "
                               f"AllReduce instructions: {describe(inst)}")
                return


# ---------------------------------------------------------------------------
# collective-permute

@check("collective-permute", "collective-permute-start")
def check_collective_permute(inst, ctx) -> None:
    if inst.attrs.get("slice_sizes") is not None:
        err = _inplace_error(inst)
        if err:
            ctx.fail(inst, f"{err}: {describe(inst)}")
            return
    err = _duplicated_source_or_target(inst, ctx)
    if err:
        ctx.fail(inst, f"{err}: {describe(inst)}")


def _inplace_error(inst) -> str | None:
    """CheckInplaceCollectivePermute."""
    if len(inst.operands) != 4:
        return f"Unexpected number of operands: {len(inst.operands)}."
    in_buf, out_buf, in_off, out_off = (o.shape for o in inst.operands)
    if isinstance(in_buf, ArrayShape) and isinstance(out_buf, ArrayShape):
        return _buffer_offset_error(in_buf, in_off) or _buffer_offset_error(out_buf, out_off)
    if isinstance(in_buf, TupleShape) and isinstance(out_buf, TupleShape):
        if len(in_buf.elements) != len(out_buf.elements):
            return "Unmatching input buffers and output buffers."
        for bufs, offs, what in ((in_buf, in_off, "input"), (out_buf, out_off, "output")):
            if not isinstance(offs, TupleShape) or len(offs.elements) != len(bufs.elements):
                return f"Unmatching {what} buffers and {what} offset."
            for buf, off in zip(bufs.elements, offs.elements):
                err = _buffer_offset_error(buf, off)
                if err:
                    return err
        return None
    return "Unmatching input buffers and output buffers."


def _buffer_offset_error(buf, off) -> str | None:
    if not isinstance(off, TupleShape):
        return "Buffer offset is not tuple."
    arrays = all(isinstance(e, ArrayShape) for e in off.elements)
    tuples = all(isinstance(e, TupleShape) for e in off.elements)
    if not arrays and not tuples:
        return "Buffer offset should either be a tuple of arrays or  a tuple of tuples."
    rank = getattr(buf, "rank", -1)
    if tuples and any(len(e.elements) != rank for e in off.elements) or \
            not tuples and len(off.elements) != rank:
        return ("Buffer offset index should have the same number of elements as the "
                "buffer's rank.")
    return None


def _duplicated_source_or_target(inst, ctx) -> str | None:
    """CheckDuplicatedSourceOrTarget."""
    cross_replica = inst.attrs.get("channel_id") is None
    limit = ctx.replica_count if cross_replica else ctx.num_partitions
    allowed = 1
    if len(inst.operands) == 4:
        third = inst.operands[2].shape
        if isinstance(inst.operands[0].shape, ArrayShape):
            allowed = len(third.elements) if isinstance(third, TupleShape) else 0
        else:
            first = third.elements[0] if isinstance(third, TupleShape) and third.elements \
                else None
            allowed = len(first.elements) if isinstance(first, TupleShape) else 0
    sources: dict[int, int] = {}
    targets: dict[int, int] = {}
    for pair in inst.attrs.get("source_target_pairs", ()):
        if len(pair) != 2:
            return f"source_target_pairs entry {{{','.join(map(str, pair))}}} is not a pair"
        source, target = pair
        for kind, v, seen in (("Source", source, sources), ("Target", target, targets)):
            if v < 0:
                return f"{kind} {v} in the instruction's source-target pair must be >= 0"
            if limit != 1 and v >= limit:
                return f"{kind} {v} in the instruction's source-target pair must be < {limit}"
            if v in seen and seen[v] == allowed:
                return (f"{kind} {v} appears more than once in instruction's source-target pairs"
                        if allowed == 1 else
                        f"{kind} {v} appears more than {allowed} times in instruction's "
                        f"source-target pairs")
            seen[v] = seen.get(v, 0) + 1
    return None

