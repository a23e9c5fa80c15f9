"""ShapeVerifier: every instruction's written shape against the registry's shape rule.

`check_shape` runs the opcode's `infer` rule (hloc.ops) and compares the result the way
ShapeVerifier::CheckShape does: opcodes that only move data (tuple, get-tuple-element,
call, while, dynamic-update-slice, ...) must match exactly (layouts too when layout
sensitive); every other opcode may differ in layout and, when mixed precision is
allowed, in floating-point precision; a layout-sensitive copy to or from host memory may
not change type or layout. Without mixed precision, operands of most opcodes may not mix
floating-point types. The Handle* checks with no shape rule behind them live here too:
rng element types, reducer parameter types, bitcast byte sizes, copy-done buffers, the
conditional's branch index, collective-permute-start's context elements, fusion root and
parameters, unbounded dynamism and minor-to-major length.
"""
from __future__ import annotations

from ..ir.shape import ArrayShape, TupleShape
from ..ir.module import Computation
from ..ops.base import (INFER_READS_SIGNATURE, MINOR_TO_MAJOR_ONLY, MIXED_OPERANDS_OK,
                        MIXED_PRECISION_OK, OWN_SHAPE_HANDLER, ShapeInferenceError)
from .core import check
from .shapes import (HOST_MEMORY_SPACE, Eq, byte_size, compatible, compatible_ignoring_fp,
                     describe, equal, is_unbounded, memory_space, shape_text)


def shapes_same(ctx, a, b, eq: Eq = Eq()) -> bool:
    """ShapeVerifier::ShapesSame."""
    return equal(a, b, eq) if ctx.opts.layout_sensitive else compatible(a, b)


def stringify(ctx, shape) -> str:
    return shape_text(shape, ctx.opts.layout_sensitive)


@check()
def check_shape(inst, ctx) -> None:
    op = inst.opdef
    if op.infer is None or OWN_SHAPE_HANDLER in op.traits:
        return
    shapes = [o.shape for o in inst.operands]
    # Big modules repeat the same (op, shapes, attributes) thousands of times.
    attrs = inst.attrs
    values = tuple(map(attrs.get, op.attr_names))
    if INFER_READS_SIGNATURE in op.traits:    # each reduce has its own reducer: key by
        values = tuple(_signature(v) if isinstance(v, Computation) else v for v in values)
    elif "calls" in op.traits:     # the memo outlives a run (hloc.verify.incremental): a
        values = tuple(_called_key(v) for v in values)     # callee's edits change the key
    key = (op.name, inst.shape, tuple(shapes), values)
    memo = ctx.infer_memo
    try:
        hit = memo.get(key)
    except TypeError:          # an unhashable attribute value: no memo
        key, hit = None, None
    if hit is None:
        try:
            # the third item: whether compare_shape passed, outside / inside a fusion
            hit = ("ok", op.infer(shapes, attrs, inst), [False, False])
        except ShapeInferenceError as e:
            hit = ("error", str(e))
        if key is not None:
            memo[key] = hit
    if hit[0] == "error":
        ctx.fail(inst, f"{hit[1]}, for instruction {describe(inst)}")
        return
    if hit[1] is not None:
        # What compare_shape reads is in the key (opcode, shapes) but for whether a
        # fusion calls the computation; the options are fixed for the memo's life.
        fused = inst.parent in ctx.fused
        if hit[2][fused]:
            return
        n = len(ctx.errors)
        compare_shape(inst, hit[1], ctx)
        if len(ctx.errors) == n and key is not None:
            hit[2][fused] = True


def _called_key(value):
    if isinstance(value, Computation):
        return value, value.generation
    if isinstance(value, tuple) and value and isinstance(value[0], Computation):
        return tuple((c, c.generation) for c in value)
    return value


def _signature(comp: Computation) -> tuple:
    """What a rule with INFER_READS_SIGNATURE reads of a called computation."""
    root = comp.root
    return ("computation", tuple(p.shape for p in comp.parameters),
            None if root is None else root.shape)


def compare_shape(inst, inferred, ctx) -> None:
    """ShapeVerifier::CheckShape(instruction, inferred_shape)."""
    if not ctx.opts.allow_mixed_precision and not _mixed_operands_ok(inst):
        ctx.fail(inst, f"Seen floating point types of different precisions in "
                       f"{describe(inst)}, but mixed precision is disallowed.")
        return
    if not _shape_matches(inst, inferred, ctx):
        ctx.fail(inst, f"Expected instruction to have shape equal to "
                       f"{stringify(ctx, inferred)}, actual shape is "
                       f"{stringify(ctx, inst.shape)}: {describe(inst)}")


def _shape_matches(inst, inferred, ctx) -> bool:
    opcode = inst.opcode
    shape = inst.shape
    if MIXED_PRECISION_OK not in inst.opdef.traits:
        eq = Eq(minor_to_major_only=MINOR_TO_MAJOR_ONLY in inst.opdef.traits)
        if opcode == "dynamic-update-slice" and inst.parent in ctx.fused:
            eq = Eq(memory_space=True, tiles=True)
        return shapes_same(ctx, shape, inferred, eq)
    if opcode == "copy" and ctx.opts.layout_sensitive:
        here, there = memory_space(shape), memory_space(inferred)
        if here != there and HOST_MEMORY_SPACE in (here, there):
            if here == HOST_MEMORY_SPACE:          # maybe host->host before propagation
                return getattr(shape, "dtype", None) is getattr(inferred, "dtype", None)
            return equal(shape, inferred, Eq(memory_space=True))
    if ctx.opts.allow_mixed_precision:
        return compatible_ignoring_fp(shape, inferred)
    return compatible(shape, inferred)


def _mixed_operands_ok(inst) -> bool:
    if MIXED_OPERANDS_OK in inst.opdef.traits:
        return True
    fp = None
    for operand in inst.operands:
        for leaf in operand.shape.leaves():
            if leaf.dtype.kind == "float":
                if fp is None:
                    fp = leaf.dtype
                elif leaf.dtype is not fp:
                    return False
    return True


# ---------------------------------------------------------------------------
# ShapeVerifier::Preprocess

@check()
def check_dynamism_and_layout(inst, ctx) -> None:
    shape = inst.shape
    seen = ctx.shapes_ok
    if shape in seen:      # depends on the shape only; big modules repeat shapes
        return
    n = len(ctx.errors)
    if not ctx.opts.allow_unbounded_dynamism and is_unbounded(shape):
        ctx.fail(inst, f"Unbounded dynamism is disabled for instruction: {describe(inst)}")
    if isinstance(shape, ArrayShape) and shape.layout is not None and \
            len(shape.layout.minor_to_major) != shape.rank:
        ctx.fail(inst, f"Instruction has mismatched minor-to-major size and dimension size: "
                       f"{describe(inst)}")
    if len(ctx.errors) == n:
        seen.add(shape)


# ---------------------------------------------------------------------------
# Handlers with checks of their own

@check("rng")
def check_rng_types(inst, ctx) -> None:
    """HasCompatibleElementTypes: the result has the operands' element type (or, with
    mixed precision allowed, another floating-point type)."""
    if len(inst.operands) != 2 or not isinstance(inst.shape, ArrayShape):
        return
    a, b = (o.shape for o in inst.operands)
    if not (isinstance(a, ArrayShape) and isinstance(b, ArrayShape)) or a.dtype is not b.dtype:
        return                                     # the shape rule reports these
    out = inst.shape.dtype
    if out is a.dtype or (ctx.opts.allow_mixed_precision and out.kind == "float"
                          and a.dtype.kind == "float"):
        return
    ctx.fail(inst, f"Expected compatible element types for the result and the two operands "
                   f"of Rng instruction: {describe(inst)}")


@check("reduce", "map", "reduce-window")
def check_reducer_types(inst, ctx) -> None:
    """SameElementTypesForOperandsAndToApplyParameters (mixed precision disallowed)."""
    if ctx.opts.allow_mixed_precision:
        return
    comp = inst.attrs.get("to_apply")
    if comp is None:
        return
    for i, (param, operand) in enumerate(zip(comp.parameters, inst.operands)):
        p, o = param.shape, operand.shape
        if isinstance(p, ArrayShape) and isinstance(o, ArrayShape) and p.dtype is not o.dtype:
            ctx.fail(inst, f"Shape mismatch between to_apply computation parameter and "
                           f"operand {i} in {describe(inst)}.")
            return


@check("bitcast")
def check_bitcast_size(inst, ctx) -> None:
    if not ctx.opts.layout_sensitive or not inst.operands:
        return
    out, operand = inst.shape, inst.operands[0].shape
    out_size, in_size = byte_size(out), byte_size(operand)
    if out_size != in_size and not ctx.opts.allow_bitcast_to_have_different_size:
        ctx.fail(inst, f"{describe(inst)}: Bitcast cannot have different shape sizes of output "
                       f"({out_size}) and operand ({in_size}) ({out}) ({operand})")


@check("copy-done")
def check_copy_done_buffers(inst, ctx) -> None:
    start = inst.operands[0].shape if inst.operands else None
    if not (isinstance(start, TupleShape) and len(start.elements) >= 2):
        return                                     # the shape rule reports it
    dest, src = start.elements[0], start.elements[1]
    if not shapes_same(ctx, dest, src, Eq(memory_space=True, split_config=True)):
        ctx.fail(inst, f"Source and destination buffers in CopyDone arguments need to be the "
                       f"same shape found {stringify(ctx, dest)} and {stringify(ctx, src)}: "
                       f"{describe(inst)}")


@check("conditional")
def check_branch_index(inst, ctx) -> None:
    index = inst.operands[0].shape
    if not (isinstance(index, ArrayShape) and index.rank == 0):
        ctx.fail(inst, f"The first operand of conditional must be a scalar. Got {index}: "
                       f"{describe(inst)}")
    elif index.dtype.name not in ("pred", "s32"):
        ctx.fail(inst, f"The first operand of indexed conditional must be a scalar of S32. "
                       f"Got type {index.dtype.name.upper()}: {describe(inst)}")


@check("collective-permute-start")
def check_collective_permute_start_shape(inst, ctx) -> None:
    """InferCollectivePermuteStartShape: (operands, results) plus whatever context
    elements the written shape carries after those two."""
    ops = [o.shape for o in inst.operands]
    if inst.attrs.get("slice_sizes") is not None and len(ops) >= 2:
        pair = (ops[0], ops[1])
    elif len(ops) == 1:
        pair = (ops[0], ops[0])
    else:
        pair = (TupleShape(tuple(ops)), TupleShape(tuple(ops)))
    shape = inst.shape
    context = shape.elements[2:] if isinstance(shape, TupleShape) else ()
    compare_shape(inst, TupleShape(pair + tuple(context)), ctx)


@check("fusion")
def check_fusion_shapes(inst, ctx) -> None:
    """ShapeVerifier::HandleFusion: the fused root has the fusion's shape; each fused
    parameter its operand's (a fusion may have more operands than parameters)."""
    comp = inst.attrs.get("calls")
    if comp is None or comp.root is None:
        return
    if not shapes_same(ctx, inst.shape, comp.root.shape):
        ctx.fail(inst, f"Fused computation shape ({comp.root.shape}) is not equal to the fusion "
                       f"shape ({inst.shape}): {describe(inst)}")
        return
    if len(comp.parameters) > len(inst.operands):
        ctx.fail(inst, f"Fused parameter count ({len(comp.parameters)}) is greater than the "
                       f"number of operands ({len(inst.operands)}) passed to the fusion "
                       f"instruction in: {describe(inst)}.")
        return
    for param in comp.parameters:
        if not shapes_same(ctx, param.shape, inst.operands[param.parameter_number].shape):
            ctx.fail(inst, f"Shape mismatch between parameter number {param.parameter_number} "
                           f"and its operand in {describe(inst)}.")
            return
