"""Collectives, replica-id and partition-id on a single device.

The interpreter runs one device: replica 0, partition 0 (flattened id 0), so replica-id
and partition-id are u32 0. A collective is evaluated only when the group that device 0
belongs to has exactly one participant; then XLA's semantics reduce to the identity:
all-reduce (and its -start/-done halves) returns its operand(s) (a reduction over one
participant applies no combiner), all-gather and reduce-scatter gather or split one shard,
all-to-all exchanges one chunk with itself, collective-broadcast returns the operand,
ragged-all-to-all copies each update's rows within the device, and collective-permute
returns the operand when the pairs send device 0 to itself, zeros when none targets it.
Participants are counted as XLA's CollectiveOpGroupMode says
(hlo/ir/collective_op_group_mode.cc): no channel_id = cross-replica (groups of replica
ids, empty = all replica_count replicas); a channel_id without use_global_device_ids
= cross-partition for ops that lack the flag (all-to-all, ragged-all-to-all,
collective-broadcast, collective-permute) and cross-replica-and-partition (replica group
size x num_partitions) for those that have it; use_global_device_ids = flattened ids
(empty = every device). The shapes count too (an all-gather whose result is k times its
operand needs k participants). Anything needing more participants raises
`ctx.unsupported` naming the op and how many devices it needs; so does the in-place
(4-operand) collective-permute form, which is not implemented.
"""
from __future__ import annotations

import numpy as np

from ..ir.shape import TupleShape
from .core import evaluates
from .data_movement import zero_value

_HAS_GLOBAL_FLAG = frozenset({"all-reduce", "all-reduce-start", "all-gather",
                              "all-gather-start", "reduce-scatter"})


def _config(inst) -> tuple[int, int]:
    comp = inst.parent
    module = comp.parent if comp is not None else None
    attrs = getattr(module, "attrs", None) or {}
    return int(attrs.get("replica_count") or 1), int(attrs.get("num_partitions") or 1)


def _group_of_device0(groups, everyone: int) -> int:
    """Size of the replica group holding id 0 (`everyone` for empty groups)."""
    if not groups:
        return everyone
    for g in groups:
        if 0 in g:
            return len(g)
    return 0            # device 0 takes no part: XLA rejects such groups


def participants(inst) -> int:
    """How many devices take part in `inst`'s collective on device 0's group."""
    replicas, partitions = _config(inst)
    groups = getattr(inst.attrs.get("replica_groups"), "groups", ()) or ()
    has_channel = inst.attrs.get("channel_id") is not None
    if not has_channel:
        return _group_of_device0(groups, replicas)
    if inst.opcode not in _HAS_GLOBAL_FLAG:
        return _group_of_device0(groups, partitions)
    if inst.attrs.get("use_global_device_ids"):
        return _group_of_device0(groups, replicas * partitions)
    return _group_of_device0(groups, replicas) * partitions


def _require_single(inst, ctx, needed: int) -> None:
    if needed != 1:
        raise ctx.unsupported(inst, f"{inst.opcode} needs {needed} devices (the interpreter "
                                    "runs one: replica 0, partition 0)")


def _leaves(shape) -> list:
    return list(shape.elements) if isinstance(shape, TupleShape) else [shape]


def _malformed(inst, ctx):
    """What XLA's verifier rejects (shapes that do not fit the operands) never runs."""
    shapes = ", ".join(str(o.shape) for o in inst.operands)
    return ctx.unsupported(inst, f"{inst.opcode} with result shape {inst.shape} for "
                                 f"operands ({shapes}), which XLA's verifier rejects")


def _tuple_elements(inst, ctx, count: int) -> list:
    if not (isinstance(inst.shape, TupleShape) and len(inst.shape.elements) >= count):
        raise _malformed(inst, ctx)
    return list(inst.shape.elements)


def _shards(inst, ctx, out_shapes, gather: bool) -> int:
    """Shard count the written shapes imply along the all-gather/reduce-scatter dim."""
    (dim,) = tuple(inst.attrs.get("dimensions") or (0,))
    operand, out = inst.operands[0].shape, out_shapes[0]
    if not 0 <= dim < min(getattr(operand, "rank", 0), getattr(out, "rank", 0)):
        raise _malformed(inst, ctx)
    a, b = operand.dims[dim], out.dims[dim]
    big, small = (b, a) if gather else (a, b)
    return big // small if small else 1


def _same(inst, ctx, values, shape):
    """`values` (one per operand) as a value of `shape`, checking that the dims fit."""
    leaves = _leaves(shape)
    if len(leaves) != len(values) or any(
            tuple(getattr(s, "dims", ())) != np.shape(v) for s, v in zip(leaves, values)):
        raise _malformed(inst, ctx)
    return tuple(values) if isinstance(shape, TupleShape) else values[0]


@evaluates("replica-id", "partition-id")
def _eval_device_id(inst, operands, ctx):
    return np.zeros((), dtype=np.uint32)


@evaluates("all-reduce", "all-reduce-start")
def _eval_all_reduce(inst, operands, ctx):
    _require_single(inst, ctx, participants(inst))
    return _same(inst, ctx, [np.array(v) for v in operands], inst.shape)


@evaluates("all-reduce-done", "all-gather-done", "collective-permute-done")
def _eval_done(inst, operands, ctx):
    value = operands[0]
    if inst.opcode == "all-reduce-done":
        return value
    if not (isinstance(value, tuple) and len(value) > 1):
        raise _malformed(inst, ctx)
    return value[1]


@evaluates("all-gather", "all-gather-start")
def _eval_all_gather(inst, operands, ctx):
    start = inst.opcode == "all-gather-start"
    out = _tuple_elements(inst, ctx, 2)[1] if start else inst.shape
    n = max(participants(inst), _shards(inst, ctx, _leaves(out), gather=True))
    _require_single(inst, ctx, n)
    gathered = _same(inst, ctx, [np.array(v) for v in operands], out)
    if start:
        return (_same(inst, ctx, list(operands), inst.shape.elements[0]), gathered)
    return gathered


@evaluates("reduce-scatter")
def _eval_reduce_scatter(inst, operands, ctx):
    n = max(participants(inst), _shards(inst, ctx, _leaves(inst.shape), gather=False))
    _require_single(inst, ctx, n)
    return _same(inst, ctx, [np.array(v) for v in operands], inst.shape)


@evaluates("all-to-all")
def _eval_all_to_all(inst, operands, ctx):
    split = 1 if inst.attrs.get("dimensions") else len(operands)
    _require_single(inst, ctx, max(participants(inst), split))
    return _same(inst, ctx, [np.array(v) for v in operands], inst.shape)


@evaluates("collective-broadcast")
def _eval_collective_broadcast(inst, operands, ctx):
    _require_single(inst, ctx, participants(inst))
    return _same(inst, ctx, [np.array(v) for v in operands], inst.shape)


@evaluates("ragged-all-to-all")
def _eval_ragged_all_to_all(inst, operands, ctx):
    """Operands (input, output, input_offsets, send_sizes, output_offsets, recv_sizes):
    with one participant every update k copies input rows [in_off[k], +size[k]) to
    output rows [out_off[k], +size[k]) of the same device; the rest of `output` stays."""
    if len(operands) != 6 or np.ndim(operands[0]) == 0:
        raise _malformed(inst, ctx)
    data, output, in_off, sizes, out_off = operands[:5]
    lead = np.shape(in_off)[0] if np.ndim(in_off) == 2 else 1
    _require_single(inst, ctx, max(participants(inst), lead))
    out = np.array(output)
    for i, n, o in zip(*(np.asarray(v).astype(np.int64).reshape(-1)
                         for v in (in_off, sizes, out_off))):
        if n < 0 or i < 0 or o < 0 or i + n > data.shape[0] or o + n > out.shape[0]:
            raise ctx.unsupported(inst, f"ragged-all-to-all update of {n} rows from row {i} "
                                        f"to row {o} is out of bounds")
        out[o:o + n] = data[i:i + n]
    return out


def _permute(inst, ctx, operand, out_shape):
    if inst.attrs.get("slice_sizes") is not None or len(inst.operands) == 4:
        raise ctx.unsupported(inst, f"{inst.opcode} in its in-place (4-operand) form")
    replicas, partitions = _config(inst)
    devices = partitions if inst.attrs.get("channel_id") is not None else replicas
    pairs = [tuple(p) for p in inst.attrs.get("source_target_pairs") or ()]
    ids = [i for p in pairs for i in p]
    _require_single(inst, ctx, max([devices] + [i + 1 for i in ids]))
    values = list(operand) if isinstance(operand, tuple) else [operand]
    received = _same(inst, ctx, [np.array(v) for v in values], out_shape)
    if (0, 0) in pairs:
        return received
    return zero_value(out_shape)          # no source sends to device 0


@evaluates("collective-permute")
def _eval_collective_permute(inst, operands, ctx):
    value = operands[0] if len(operands) == 1 else tuple(operands)
    return _permute(inst, ctx, value, inst.shape)


@evaluates("collective-permute-start")
def _eval_collective_permute_start(inst, operands, ctx):
    elems = _tuple_elements(inst, ctx, 2)
    received = _permute(inst, ctx, operands[0], elems[1])
    rest = tuple(zero_value(e) for e in elems[2:])
    return (operands[0], received) + rest
