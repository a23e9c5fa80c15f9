"""Collectives, replica-id and partition-id, on the devices of hloc.interp.devices.

Each device's interpreter knows its Device (replica, partition, counts; replica 0 of 1,
partition 0 of 1 when run alone). A collective finds its participants as XLA does
(devices.participants: the CollectiveOpGroupMode of channel_id / use_global_device_ids,
replica groups in any form, empty = everyone), swaps values with them through
`ctx.exchange` and applies the op's semantics to the values in group order: all-reduce
folds them with `to_apply` in group order, all-gather concatenates along its dimension,
reduce-scatter reduces then keeps this device's slice, all-to-all sends chunk j (or
operand j) to participant j and concatenates what arrives, collective-broadcast takes the
group's first device's value, collective-permute takes the value of the device whose
source-target pair names this one (zeros when none), ragged-all-to-all copies each
sender's rows to the offsets the sender names. The -start halves compute the result and
the -done halves pass it on. A device alone (no rendezvous) runs only collectives whose
groups hold just itself; others raise `unsupported` naming how many devices they need.
Not implemented (unsupported, named): the in-place (4-operand) collective-permute (a
TPU form: XLA:CPU's CollectivePermuteThunk takes only source and destination buffers, and
jaxlib 0.10.2 cannot run the corpus's six such modules, so there is no XLA:CPU behaviour to
follow for its multi-slice forms) and ragged-all-to-all with 2-D offsets.
"""
from __future__ import annotations

import numpy as np

from ..ir.shape import TupleShape
from .core import evaluates
from .data_movement import zero_value
from .devices import DeviceError, participants as _participants, permute_peers
from .reductions import apply_computation


def _leaves(shape) -> list:
    return list(shape.elements) if isinstance(shape, TupleShape) else [shape]


def _malformed(inst, ctx):
    """What XLA's verifier rejects (shapes that do not fit the operands, pairs that are
    not pairs) never runs."""
    shapes = ", ".join(str(o.shape) for o in inst.operands)
    return ctx.unsupported(inst, f"{inst.opcode} with result shape {inst.shape} for "
                                 f"operands ({shapes}) and these attributes, which XLA's "
                                 f"verifier rejects")


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


def _group(inst, ctx) -> list[int]:
    return _group_call(inst, ctx, _participants)


def _group_call(inst, ctx, fn):
    try:
        return fn(inst, ctx.device)
    except DeviceError as e:       # located at the instruction
        raise DeviceError(f"{e.message} (instruction %{inst.name})",
                          ctx.unsupported(inst, "").loc) from None


def _needs(inst, ctx, group, count: int) -> None:
    """A module run alone whose shapes or pairs imply `count` participants: say so as
    for a group of `count` (the header may just lack replica_count/num_partitions)."""
    if count != len(group):
        if ctx.device.rendezvous is None and len(group) == 1:
            ctx.exchange(inst, list(range(count)), None)      # raises "needs N devices"
        raise _malformed(inst, ctx)


def _fold(inst, ctx, arrays):
    """Reduce `arrays` (one per participant, group order) with to_apply."""
    comp = inst.attrs["to_apply"]
    acc = np.array(arrays[0])
    for x in arrays[1:]:
        acc = np.array(apply_computation(ctx, comp, [acc, np.asarray(x)], acc.shape)[0])
    return acc


def _all_reduce_values(inst, ctx, operands):
    values = ctx.exchange(inst, _group(inst, ctx), tuple(operands))
    return [_fold(inst, ctx, [v[i] for v in values]) for i in range(len(operands))]


@evaluates("replica-id")
def _eval_replica_id(inst, operands, ctx):
    return np.array(ctx.device.replica, dtype=np.uint32)


@evaluates("partition-id")
def _eval_partition_id(inst, operands, ctx):
    return np.array(ctx.device.partition, dtype=np.uint32)


@evaluates("all-reduce", "all-reduce-start")
def _eval_all_reduce(inst, operands, ctx):
    return _same(inst, ctx, _all_reduce_values(inst, ctx, operands), inst.shape)


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
    group = _group(inst, ctx)
    _needs(inst, ctx, group, _shards(inst, ctx, _leaves(out), gather=True))
    (dim,) = tuple(inst.attrs.get("dimensions") or (0,))
    values = ctx.exchange(inst, group, tuple(operands))
    gathered = _same(inst, ctx, [np.concatenate([v[i] for v in values], axis=dim)
                                 for i in range(len(operands))], out)
    if start:
        return (_same(inst, ctx, list(operands), inst.shape.elements[0]), gathered)
    return gathered


@evaluates("reduce-scatter")
def _eval_reduce_scatter(inst, operands, ctx):
    group = _group(inst, ctx)
    _needs(inst, ctx, group, _shards(inst, ctx, _leaves(inst.shape), gather=False))
    (dim,) = tuple(inst.attrs.get("dimensions") or (0,))
    k = group.index(ctx.device.id)
    reduced = _all_reduce_values(inst, ctx, operands)
    return _same(inst, ctx, [np.split(r, len(group), axis=dim)[k] for r in reduced],
                 inst.shape)


@evaluates("all-to-all")
def _eval_all_to_all(inst, operands, ctx):
    group = _group(inst, ctx)
    n, k = len(group), group.index(ctx.device.id)
    dims = inst.attrs.get("dimensions")
    if dims:
        (d,) = dims
        if len(operands) != 1 or np.shape(operands[0])[d] % n:
            raise _malformed(inst, ctx)
        values = ctx.exchange(inst, group, tuple(np.split(operands[0], n, axis=d)))
        return _same(inst, ctx, [np.concatenate([v[k] for v in values], axis=d)], inst.shape)
    _needs(inst, ctx, group, len(operands))
    values = ctx.exchange(inst, group, tuple(operands))
    return _same(inst, ctx, [np.array(v[k]) for v in values], inst.shape)


@evaluates("collective-broadcast")
def _eval_collective_broadcast(inst, operands, ctx):
    values = ctx.exchange(inst, _group(inst, ctx), tuple(operands))
    return _same(inst, ctx, [np.array(v) for v in values[0]], inst.shape)


@evaluates("ragged-all-to-all")
def _eval_ragged_all_to_all(inst, operands, ctx):
    """Operands (input, output, input_offsets, send_sizes, output_offsets, recv_sizes):
    with `per` updates per peer, a sender's update u (rows [in_off[u], +size[u]) of its
    input) lands in participant u // per's output at row out_off[u] (XLA's ragged
    all-to-all kernels); the rest of `output` stays."""
    if len(operands) != 6 or np.ndim(operands[0]) == 0:
        raise _malformed(inst, ctx)
    data, output, in_off, sizes, out_off = operands[:5]
    if np.ndim(in_off) != 1:
        raise ctx.unsupported(inst, "ragged-all-to-all with 2-D offsets")
    group = _group(inst, ctx)
    me = group.index(ctx.device.id)
    count = len(np.asarray(in_off))
    if count % len(group):
        raise _malformed(inst, ctx)
    per = count // len(group)          # update i to peer j is entry j * per + i (XLA)
    sent = ctx.exchange(inst, group, (data, in_off, sizes, out_off))
    out = np.array(output)
    for src, i_off, n_rows, o_off in sent:
        for u in range(me * per, (me + 1) * per):
            i, n, o = (int(np.asarray(x).astype(np.int64)[u]) for x in (i_off, n_rows, o_off))
            if n < 0 or i < 0 or o < 0 or i + n > src.shape[0] or o + n > out.shape[0]:
                raise ctx.unsupported(inst, f"ragged-all-to-all update of {n} rows from row "
                                            f"{i} to row {o} is out of bounds")
            out[o:o + n] = src[i:i + n]
    return out


def _permute(inst, ctx, operand, out_shape):
    if inst.attrs.get("slice_sizes") is not None or len(inst.operands) == 4:
        raise ctx.unsupported(inst, f"{inst.opcode} in its in-place (4-operand) form, which "
                                    f"XLA:CPU does not implement either (its collective-permute "
                                    f"thunk has no slice sizes or start indices)")
    pairs = inst.attrs.get("source_target_pairs") or ()
    if any(len(p) != 2 or min(p) < 0 for p in pairs):
        raise _malformed(inst, ctx)
    line, source, _ = _group_call(inst, ctx, permute_peers)
    ids = [i for p in pairs for i in p]
    if ids and max(ids) >= len(line):
        _needs(inst, ctx, line, max(ids) + 1)
    values = ctx.exchange(inst, line, operand)
    if source is None:
        return zero_value(out_shape)
    got = values[line.index(source)]
    got = list(got) if isinstance(got, tuple) else [got]
    return _same(inst, ctx, [np.array(v) for v in got], out_shape)


@evaluates("collective-permute")
def _eval_collective_permute(inst, operands, ctx):
    value = operands[0] if len(operands) == 1 else tuple(operands)
    return _permute(inst, ctx, value, inst.shape)


@evaluates("collective-permute-start")
def _eval_collective_permute_start(inst, operands, ctx):
    elems = _tuple_elements(inst, ctx, 2)
    value = operands[0] if len(operands) == 1 else tuple(operands)   # combined: a tuple
    received = _permute(inst, ctx, value, elems[1])
    rest = tuple(zero_value(e) for e in elems[2:])
    return (value, received) + rest
