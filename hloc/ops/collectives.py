"""Collective opcodes (all-reduce, all-gather, reduce-scatter, all-to-all, the permutes,
collective-broadcast) and replica-id / partition-id.

XLA's parser cannot infer any collective's shape (SHAPE_REQUIRED), so the rules serve the
verifier: like ShapeVerifier, all-gather and reduce-scatter derive the shard count from
the written result and check it against the replica-group size when the groups are
explicit (an empty `replica_groups={}` means "all devices", which only the module config
knows). Side effects depend on attributes (constrain_layout, channel_id) or are
unconditional for the start/done halves, as in HloInstruction::HasSideEffectNoRecurse.
"""
from __future__ import annotations

from ..ir.attrs import ReplicaGroups
from ..ir.dtypes import U32
from ..ir.shape import TupleShape
from .base import (CALLS, CAN_CHANGE_LAYOUT, COLLECTIVE, DEVICE_ID, EMBEDDED_CALLS, EXPENSIVE,
                   MAY_SIDE_EFFECT, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER, SHAPE_REQUIRED,
                   SIDE_EFFECT, AttrSpec, OpDef, register)
from .shape_rules import (compatible, expect_array, fail, group_size, human,
                          is_integral, need_declared, scalar, tup)


def _single_or_tuple(shapes):
    return shapes[0] if len(shapes) == 1 else tup(shapes)


def _all_reduce_infer(ops, attrs, inst):
    need_declared(inst, "all-reduce")
    for s in ops:
        expect_array(s, "operand of cross replica sum")
    return _single_or_tuple(ops)


def _done_infer(opcode, index=None):
    def infer(ops, attrs, inst):
        need_declared(inst, opcode)
        (start,) = ops
        if index is None:
            return start
        if not (isinstance(start, TupleShape) and len(start.elements) > index):
            fail(f"{opcode} expects a tuple-shaped start operand; got {human(start)}.")
        return start.elements[index]
    return infer


def _shard_count(ops, outs, dim, gather: bool, groups) -> int:
    for operand, out in zip(ops, outs):
        expect_array(operand, "operand of all-gather" if gather else "operand of reduce-scatter")
        if dim < 0 or dim >= operand.rank or dim >= getattr(out, "rank", 0):
            fail(f"{'all-gather' if gather else 'reduce-scatter'} dimension {dim} is out of "
                 f"range for operand {human(operand)} and result {human(out)}.")
    a, b = (outs[0].dims[dim], ops[0].dims[dim]) if gather else (ops[0].dims[dim],
                                                                 outs[0].dims[dim])
    shards = -(-a // b) if b else 0
    size = group_size(groups)
    if size is not None and size != 1 and shards != size:
        fail(f"shard_count = {shards}, subgroup_size = {size}: the result does not match "
             f"the replica group size.")
    return shards


def _result_list(out, n, start: bool):
    if start:
        if not (isinstance(out, TupleShape) and len(out.elements) == 2):
            fail(f"all-gather-start's shape must be (operands, results); got {human(out)}.")
        out = out.elements[1]
    if n == 1:
        return [out]
    if not (isinstance(out, TupleShape) and len(out.elements) == n):
        fail(f"Expected a tuple of {n} results; got {human(out)}.")
    return list(out.elements)


def _all_gather_infer(start: bool):
    opcode = "all-gather-start" if start else "all-gather"

    def infer(ops, attrs, inst):
        out = need_declared(inst, opcode)
        (dim,) = tuple(attrs.get("dimensions", ())) or (0,)
        outs = _result_list(out, len(ops), start)
        shards = _shard_count(ops, outs, dim, True, attrs.get("replica_groups"))
        results = []
        for s in ops:
            dims = list(s.dims)
            dims[dim] *= shards
            results.append(s.with_dims(dims, s.dynamic))
        gathered = _single_or_tuple(results)
        return tup((_single_or_tuple(ops), gathered)) if start else gathered
    return infer


def _reduce_scatter_infer(ops, attrs, inst):
    out = need_declared(inst, "reduce-scatter")
    (dim,) = tuple(attrs.get("dimensions", ())) or (0,)
    outs = _result_list(out, len(ops), False)
    shards = _shard_count(ops, outs, dim, False, attrs.get("replica_groups"))
    results = []
    for s in ops:
        if shards == 0 or s.dims[dim] % shards:
            fail(f"ReduceScatter operand scatter dimension size {s.dims[dim]} must be "
                 f"dividable by shard_count {shards}.")
        dims = list(s.dims)
        dims[dim] //= shards
        results.append(s.with_dims(dims, s.dynamic))
    return _single_or_tuple(results)


def _all_to_all_infer(ops, attrs, inst):
    need_declared(inst, "all-to-all")
    dims = tuple(attrs.get("dimensions", ()))
    size = group_size(attrs.get("replica_groups"))
    if dims:
        if len(ops) != 1:
            fail("all-to-all with a split dimension takes exactly one operand.")
        (operand,) = ops
        (split,) = dims
        if split >= operand.rank or split < 0:
            fail(f"AllToAll split_dimension {split} is out-of-bounds in shape "
                 f"{human(operand)}.")
        if size is not None and operand.dims[split] % size:
            fail(f"AllToAll split dimension size {operand.dims[split]} must be dividable by "
                 f"split_count {size}.")
        return operand
    if size is not None and len(ops) != size:
        fail(f"all-to-all has {len(ops)} operands but the replica groups have {size} "
             f"participants (hlo->operand_count() == split_count).")
    for i, s in enumerate(ops):
        if not compatible(s, ops[0]):
            fail(f"HLO all-to-all has operands with different shapes: the 0th operand shape "
                 f"{human(ops[0])}, but the {i}th operand has shape {human(s)}.")
    return tup(ops)


def _ragged_all_to_all_infer(ops, attrs, inst):
    need_declared(inst, "ragged-all-to-all")
    offsets = ops[2:]
    for i, s in enumerate(offsets, 2):
        if not is_integral(s) or s.rank not in (1, 2):
            fail(f"RaggedAllToAll operand {i} must be an integral array of rank 1 or 2; got "
                 f"{human(s)}.")
        if s.dims != offsets[0].dims:
            fail(f"RaggedAllToAll offsets and sizes operands must have the same shape; got "
                 f"{human(offsets[0])} and {human(s)}.")
    return ops[1]


def _collective_broadcast_infer(ops, attrs, inst):
    need_declared(inst, "collective-broadcast")
    return _single_or_tuple(ops)


def _collective_permute_infer(ops, attrs, inst):
    need_declared(inst, "collective-permute")
    if attrs.get("slice_sizes") is not None:         # in-place form
        if len(ops) != 4:
            fail("CollectivePermute and CollectivePermuteStart must have exactly four "
                 "operands for dynamic-slice and in-place update.")
        return ops[1]
    return _single_or_tuple(ops)


def _collective_permute_start_infer(ops, attrs, inst):
    out = need_declared(inst, "collective-permute-start")
    u32 = scalar(U32)
    if len(ops) == 1:
        return tup((ops[0], ops[0], u32, u32))
    if len(ops) == 4:
        return tup((ops[0], ops[1], u32, u32))
    return out


def _id_infer(ops, attrs, inst):
    return scalar(U32)


# ---------------------------------------------------------------------------
# Registration (attributes in XLA's printing order; called computations last)

_CHANNEL = AttrSpec("channel_id", "int")
_GROUPS = AttrSpec("replica_groups", "replica_groups", default=ReplicaGroups(()),
                   always_print=True)
_LAYOUT = AttrSpec("constrain_layout", "bool", default=False)
_GLOBAL = AttrSpec("use_global_device_ids", "bool", default=False)
_MODE = AttrSpec("mode", "ident", printed=False)   # cross_replica, flattened_id, ...
_TO_APPLY = AttrSpec("to_apply", "computation", required=True)
_DIM = AttrSpec("dimensions", "int_list", required=True)
_PAIRS = AttrSpec("source_target_pairs", "int_list_list", required=True, always_print=True)
_PERMUTE = (_CHANNEL, _PAIRS, AttrSpec("slice_sizes", "int_list_list"))

_COLL = frozenset({COLLECTIVE, EXPENSIVE, SHAPE_REQUIRED, MAY_SIDE_EFFECT})
_COLL_CALLS = _COLL | {CALLS}
_ASYNC = frozenset({COLLECTIVE, EXPENSIVE, SHAPE_REQUIRED, SIDE_EFFECT})
_VAR = None

register(OpDef("all-reduce", _VAR, (_CHANNEL, _GROUPS, _LAYOUT, _GLOBAL, _MODE, _TO_APPLY),
               _COLL_CALLS, _all_reduce_infer), EMBEDDED_CALLS, MIXED_OPERANDS_OK)
register(OpDef("all-reduce-start", _VAR,
               (_CHANNEL, _GROUPS, _LAYOUT, _GLOBAL, _MODE, _TO_APPLY),
               _ASYNC | {CALLS}, _all_reduce_infer), EMBEDDED_CALLS, MIXED_OPERANDS_OK)
register(OpDef("all-reduce-done", 1, (), _ASYNC, _done_infer("all-reduce-done")),
         MIXED_OPERANDS_OK)
register(OpDef("reduce-scatter", _VAR,
               (_CHANNEL, _GROUPS, _LAYOUT, _GLOBAL, _DIM, _MODE, _TO_APPLY),
               _COLL_CALLS, _reduce_scatter_infer), EMBEDDED_CALLS)
register(OpDef("all-gather", _VAR, (_CHANNEL, _GROUPS, _LAYOUT, _DIM, _GLOBAL), _COLL,
               _all_gather_infer(False)), MIXED_OPERANDS_OK)
register(OpDef("all-gather-start", _VAR, (_CHANNEL, _GROUPS, _LAYOUT, _DIM, _GLOBAL), _ASYNC,
               _all_gather_infer(True)), MIXED_OPERANDS_OK)
register(OpDef("all-gather-done", 1, (), _ASYNC, _done_infer("all-gather-done", 1)),
         MIXED_OPERANDS_OK)
register(OpDef("all-to-all", _VAR, (_CHANNEL, _GROUPS, _LAYOUT,
                                    AttrSpec("dimensions", "int_list")),
               _COLL, _all_to_all_infer))
# `dimensions` is accepted by jaxlib 0.10.2's parser but dropped.
register(OpDef("ragged-all-to-all", 6, (_CHANNEL, _GROUPS,
                                        AttrSpec("dimensions", "int_list", printed=False)),
               _COLL, _ragged_all_to_all_infer))
register(OpDef("collective-broadcast", _VAR, (_CHANNEL, _GROUPS), _COLL,
               _collective_broadcast_infer))
register(OpDef("collective-permute", None, _PERMUTE, _COLL, _collective_permute_infer))
register(OpDef("collective-permute-start", None, _PERMUTE, _ASYNC,
               _collective_permute_start_infer), CAN_CHANGE_LAYOUT, OWN_SHAPE_HANDLER)
register(OpDef("collective-permute-done", 1, (), _ASYNC,
               _done_infer("collective-permute-done", 1)), CAN_CHANGE_LAYOUT)
register(OpDef("collective-reduce", _VAR, (_CHANNEL, _GROUPS, _TO_APPLY),
               _COLL_CALLS, unsupported="collective-reduce is an upstream-tip opcode that "
               "jaxlib 0.10.2 does not know; its attributes are a guess"), EMBEDDED_CALLS)
register(OpDef("replica-id", 0, (), infer=_id_infer), CAN_CHANGE_LAYOUT, DEVICE_ID)
register(OpDef("partition-id", 0, (), infer=_id_infer), CAN_CHANGE_LAYOUT, DEVICE_ID)
