"""Shardings: each one valid for its instruction's shape; while and conditional agree.

HloSharding::Validate: a tuple sharding has one element per leaf of the shape; a tiled
sharding's tile assignment, minus its subgroup dimensions, has the shape's rank, and
names each device once (below num_partitions when the module is SPMD-partitioned, in
which case every device appears). InstructionVerifier::VerifyConsistentSharding: a
while, its body's root and parameter and its condition's parameter, or a conditional
and its branches' roots, carry equal shardings where they carry one.
"""
from __future__ import annotations

from ..ir.shape import ArrayShape, BufferShape
from .core import check
from .shapes import describe, human
from .text_attrs import Sharding, parse_sharding


def _sharding(inst) -> Sharding | None:
    s = inst.attrs.get("sharding") if inst.attrs else None
    return parse_sharding(s.text) if s is not None else None


def _num_devices(ctx) -> int | None:
    if ctx.opts.use_spmd_partitioning and ctx.opts.verify_sharding_device_numbers and \
            ctx.num_partitions > 1:
        return ctx.num_partitions
    return None


@check(attr="sharding")
def check_sharding(inst, ctx) -> None:
    if not inst.attrs or "sharding" not in inst.attrs:
        return
    sharding = _sharding(inst)
    if sharding is None:
        return
    err = validate(sharding.for_shape(inst.shape), inst.shape, _num_devices(ctx))
    if err:
        ctx.fail(inst, f"Invalid sharding for instruction: {describe(inst)}: {err}")


def validate(sharding: Sharding, shape, num_devices: int | None) -> str | None:
    if isinstance(shape, BufferShape):
        shape = shape.inner
    if sharding.kind == "tuple":
        if not getattr(shape, "is_tuple", False):
            return "Sharding is tuple-shaped but validation shape is not."
        leaves = shape.leaves()
        if not (len(leaves) == len(sharding.elements)
                or (not leaves and len(sharding.elements) == 1)):
            return (f"Shape {human(shape)} has {len(leaves)} leaf nodes while this sharding has "
                    f"{len(sharding.elements)} elements.")
        for leaf, element in zip(leaves, sharding.elements):
            err = validate(element, leaf, num_devices)
            if err:
                return err
        return None
    if getattr(shape, "is_tuple", False):
        return "Validation shape is a tuple but sharding is not."
    if isinstance(shape, ArrayShape) and shape.dtype.kind == "token":
        return None
    if sharding.kind in ("replicated", "unknown", "manual") and not sharding.devices:
        return None
    seen = set()
    for d in sharding.devices:
        if num_devices is not None and d >= num_devices:
            return f"device {d} > num_devices ({num_devices}) in tile assignment"
        if d in seen:
            return f"device {d} is not unique in tile assignment"
        seen.add(d)
    if sharding.kind != "tiled":
        return None
    total = 1
    for d in sharding.dims:
        total *= d
    if total != len(sharding.devices):
        return (f"tile assignment dimensions [{','.join(map(str, sharding.dims))}] do not match "
                f"the {len(sharding.devices)} devices listed")
    rank = shape.rank if isinstance(shape, ArrayShape) else 0
    if rank != sharding.tiled_data_rank():
        return (f"Number of tile assignment dimensions (excluding subgroups) is different than "
                f"the input rank. sharding={_tiled_text(sharding)}, input_shape="
                f"{human(shape)}")
    if num_devices is not None and len(seen) != num_devices:
        return "tile_assignment should have all devices"
    return None


def _tiled_text(sharding: Sharding) -> str:
    return "{devices=[" + ",".join(map(str, sharding.dims)) + "]" + \
        ",".join(map(str, sharding.devices)) + "}"


def _consistent(ctx, parent, instructions) -> None:
    common = None
    for inst in instructions:
        if inst is None:
            continue
        s = _sharding(inst)
        if s is None:
            continue
        s = s.for_shape(inst.shape)
        if common is None:
            common = (inst, s)
        elif s != common[1]:
            ctx.fail(parent, f"Inconsistent {parent.opcode} sharding among instructions: "
                             f"{describe(common[0])} vs {describe(inst)}")
            return


@check("while")
def check_while_sharding(inst, ctx) -> None:
    body, cond = inst.attrs.get("body"), inst.attrs.get("condition")
    if body is None or cond is None:
        return
    first = (lambda c: c.parameters[0] if c.parameters else None)
    _consistent(ctx, inst, (inst, body.root, first(body), first(cond)))


@check("conditional")
def check_conditional_sharding(inst, ctx) -> None:
    branches = inst.attrs.get("branch_computations") or tuple(
        c for c in (inst.attrs.get("true_computation"), inst.attrs.get("false_computation"))
        if c is not None)
    _consistent(ctx, inst, (inst,) + tuple(b.root for b in branches))
