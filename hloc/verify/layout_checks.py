"""Layouts: who may change them, host memory, reshape bitcasts, the entry layout, aliasing.

With a layout-change predicate (layout-sensitive runs use LayoutAssignment's), an
instruction without the CAN_CHANGE_LAYOUT trait keeps its operands' layouts (tiles and
memory space aside; element size too for LAYOUT_IGNORES_ELEMENT_SIZE ops and pred
selects), and MEMORY_SPACE_MOVER ops (dynamic-slice, dynamic-update-slice, copy) may move
data between memory spaces only in the directions host offloading allows. Options add: no host memory space at all,
reshapes that are physical bitcasts, sorted broadcast dimensions. After the
per-instruction pass: the entry computation matches entry_computation_layout (must-alias
pairs exactly, memory space included), input_output_alias and buffer_donor name valid
parameters and indices, each once.
"""
from __future__ import annotations

from ..ir.shape import ArrayShape
from ..ops.base import CAN_CHANGE_LAYOUT, LAYOUT_IGNORES_ELEMENT_SIZE, MEMORY_SPACE_MOVER
from .core import check, module_check
from .shape_checks import shapes_same, stringify
from .shapes import (GENERIC_FAST_MEMORY_SPACE, HOST_MEMORY_SPACE, Eq, byte_size, describe,
                     equal, index_text, is_dense_array, layout_equal, memory_space, subshape,
                     subshapes)


def _can_change_layout(inst) -> bool:
    if inst.opcode == "custom-call":
        return inst.attrs.get("custom_call_target") != "LayoutConstraint"
    return CAN_CHANGE_LAYOUT in inst.opdef.traits


@check(option="layout_changes")
def check_layout_change(inst, ctx) -> None:
    if not ctx.opts.layout_changes or _can_change_layout(inst):
        return
    shape = inst.shape
    if not is_dense_array(shape) or shape.layout is None:
        return
    for operand in inst.operands:
        o = operand.shape
        if not is_dense_array(o) or o.rank != shape.rank or o.layout is None:
            continue
        eq = Eq(tiles=True, memory_space=True)
        traits = inst.opdef.traits
        if LAYOUT_IGNORES_ELEMENT_SIZE in traits or \
                (inst.opcode == "select" and o.dtype.kind == "pred"):
            eq = Eq(tiles=True, memory_space=True, element_size=True)
        elif MEMORY_SPACE_MOVER in traits:
            err = _memory_space_change_error(inst, memory_space(o), memory_space(shape))
            if err:
                ctx.fail(inst, err)
                return
        if not layout_equal(shape.layout, o.layout, eq, shape.dtype, o.dtype):
            ctx.fail(inst, f"Instruction shouldn't change layouts {describe(inst)} From {shape} "
                           f"To {o}")
            return


def _memory_space_change_error(inst, src: int, dst: int) -> str | None:
    """HostOffloadInstructionCanChangeMemorySpace."""
    if src == GENERIC_FAST_MEMORY_SPACE and dst != GENERIC_FAST_MEMORY_SPACE:
        return (f"Instruction shouldn't change layout memory space between generic fast memory "
                f"space and others for instruction: {describe(inst)}")
    if inst.opcode == "dynamic-slice" and src == 0 and dst == HOST_MEMORY_SPACE:
        return (f"DynamicSlice instruction shouldn't change layout memory space from device to "
                f"host: {describe(inst)}")
    if inst.opcode == "dynamic-update-slice" and src == HOST_MEMORY_SPACE and dst == 0:
        return (f"DynamicUpdateSlice instruction shouldn't change layout memory space from host "
                f"to device: {describe(inst)}")
    return None


@check(option="verify_no_host_memory_space")
def check_no_host_memory_space(inst, ctx) -> None:
    if not ctx.opts.verify_no_host_memory_space:
        return
    for _, sub in subshapes(inst.shape):
        if isinstance(sub, ArrayShape) and memory_space(sub) == HOST_MEMORY_SPACE:
            ctx.fail(inst, f"Instruction shouldn't have the layout of host memory space: "
                           f"{describe(inst)}")
            return


@check("reshape")
def check_reshape_is_bitcast(inst, ctx) -> None:
    if not ctx.opts.verify_reshape_is_bitcast or inst.parent in ctx.fused:
        return
    a, b = inst.operands[0].shape, inst.shape
    if is_dense_array(a) and is_dense_array(b) and not reshape_is_bitcast(a, b):
        ctx.fail(inst, f"Reshape should be a physical bitcast, got: {describe(inst)}")


@check("broadcast")
def check_broadcast_order(inst, ctx) -> None:
    dims = tuple(inst.attrs.get("dimensions", ()))
    if ctx.opts.verify_broadcast_dimensions_order and list(dims) != sorted(dims):
        ctx.fail(inst, f"Broadcast dimensions should be ordered, got: {describe(inst)}")


def reshape_is_bitcast(a: ArrayShape, b: ArrayShape) -> bool:
    """ShapeUtil::ReshapeIsBitcast: every unit index keeps its physical position."""
    if a.dtype is not b.dtype or a.size != b.size:
        return False
    return a.size == 0 or (_unit_indices_keep_place(a, b) and _unit_indices_keep_place(b, a))


def _unit_indices_keep_place(a: ArrayShape, b: ArrayShape) -> bool:
    for d in range(a.rank):
        if a.dims[d] <= 1:
            continue
        index = [0] * a.rank
        index[d] = 1
        logical = 1
        for size in a.dims[d + 1:]:
            logical *= size
        if _physical(a, index) != _physical(b, _unravel(b.dims, logical)):
            return False
    return True


def _unravel(dims, linear: int) -> list[int]:
    out = [0] * len(dims)
    for d in range(len(dims) - 1, -1, -1):
        if dims[d]:
            out[d] = linear % dims[d]
            linear //= dims[d]
    return out


def _physical(shape: ArrayShape, index) -> int:
    linear, stride = 0, 1
    for d in shape.layout.minor_to_major:
        linear += index[d] * stride
        stride *= shape.dims[d]
    return linear


# ---------------------------------------------------------------------------
# Module-level: entry computation layout, aliasing, buffer donors

def _entry_layout(module):
    entry = module.entry
    layout = module.attrs.get("entry_computation_layout")
    if layout is not None:
        return list(layout.params), layout.result
    return [p.shape for p in entry.parameters], entry.root.shape


@module_check("post")
def verify_entry_computation_layout(ctx) -> None:
    entry = ctx.module.entry
    if entry is None or entry.root is None:
        return
    params, result = _entry_layout(ctx.module)
    eq = Eq(tiles=True, tail_padding=True, memory_space=True)
    if not shapes_same(ctx, entry.root.shape, result, eq):
        ctx.fail(entry.root, f"Shape of the root instruction of entry computation "
                             f"({stringify(ctx, entry.root.shape)}) should be compatible to one "
                             f"specified in module's entry computation layout "
                             f"({stringify(ctx, result)}): {describe(entry.root)}")
    if len(params) != len(entry.parameters):
        ctx.fail(entry.root, f"Number of parameters in entry computation layout ({len(params)}) "
                             f"must be same as number of parameters of entry computation "
                             f"({len(entry.parameters)}): {describe(entry.root)}")
        return
    for i, (param, want) in enumerate(zip(entry.parameters, params)):
        if not shapes_same(ctx, param.shape, want, eq):
            ctx.fail(param, f"Shape of the entry computation parameter {i} is "
                            f"{stringify(ctx, param.shape)} should be compatible to the one "
                            f"specified in module's entry computation layout "
                            f"{stringify(ctx, want)}: {describe(param)}")
    for out_index, param_no, param_index, kind in ctx.module.attrs.get("input_output_alias", ()):
        if kind != "must-alias" or not 0 <= param_no < len(params):
            continue
        r, p = subshape(result, out_index), subshape(params[param_no], param_index)
        if r is not None and p is not None and not equal(r, p):
            ctx.fail(entry.root, f"Shape and memory space of the result at index "
                                 f"{index_text(out_index)} ({r}) must be the same as the shape "
                                 f"and memory spaceof aliased parameter {param_no} at index "
                                 f"{index_text(param_index)} ({p}): {describe(entry.root)}")


@module_check("post")
def verify_alias_and_donor_config(ctx) -> None:
    entry = ctx.module.entry
    if entry is None or entry.root is None:
        return
    params, result = _entry_layout(ctx.module)
    seen = set()
    for out_index, param_no, param_index, _ in ctx.module.attrs.get("input_output_alias", ()):
        err = _param_index_error(param_no, param_index, params, "aliased input")
        out = subshape(result, out_index)
        if err is None and not is_dense_array(out):
            err = f"Invalid aliased output index {index_text(out_index)}"
        if err is None and ctx.opts.layout_sensitive:
            p = subshape(params[param_no], param_index)
            if byte_size(p) != byte_size(out):
                err = (f"Expected aliased input {param_no} at index {index_text(param_index)} "
                       f"and output at index {index_text(out_index)} to have the same size. "
                       f"Input sub-shape is {p} with size {byte_size(p)}, output sub-shape is "
                       f"{out} with size {byte_size(out)}")
        if err is None and (param_no, param_index) in seen:
            err = f"Input {param_no} at index {index_text(param_index)} is aliased twice"
        seen.add((param_no, param_index))
        if err:
            ctx.fail(entry.root, f"{err}: {describe(entry.root)}")
    for param_no, param_index in ctx.module.attrs.get("buffer_donor", ()):
        err = _param_index_error(param_no, param_index, params, "buffer donor")
        if err is None and (param_no, param_index) in seen:
            err = (f"Input {param_no} at index {index_text(param_index)} is registered as a "
                   f"buffer donor. However, it is also in the input output alias config.")
        if err:
            ctx.fail(entry.root, f"{err}: {describe(entry.root)}")


def _param_index_error(param_no, param_index, params, what) -> str | None:
    if not 0 <= param_no < len(params):
        return f"Expected {what} {param_no} to be in range [0, {len(params)})"
    if not is_dense_array(subshape(params[param_no], param_index)):
        return (f"Invalid {what} index {index_text(param_index)} for parameter {param_no} of "
                f"shape {params[param_no]}")
    return None
