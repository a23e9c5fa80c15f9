"""Which instructions XLA:CPU hands to YNNPACK: the rules of xla/backends/cpu/ynn_support.cc
and transforms/ynn_matcher.h as jaxlib 0.10.2 applies them (its default
`--xla_cpu_experimental_ynn_fusion_type`), for the `dot-library-rewriter` pass.

Checked against jaxlib 0.10.2's own dumps of small programs (the library rewriter's
after-pass dump): dots, convolutions, reduces and reduce-windows start YNN fusions; only
reductions grow them. An instruction is *preferred* (IsInstructionPreferredByYnn) when it
is a dot or convolution, or when its result or an operand has at least 4096 elements;
dots, reductions, convolutions and elementwise ops must be preferred, constants, iotas,
bitcasts, bitcast reshapes, broadcasts and pads need not. Elementwise ops are the
registry's YNN_ELEMENTWISE ones (YNNPACK's unary and binary operator maps) on f64, f32,
bf16, s8 and u8. Slices, concatenates and transposes are not fused (jaxlib 0.10.2 fuses
no slice or concatenate, and after XLA's layout assignment a transpose is a
layout-changing op plus a copy, neither of which it fuses). Shapes are arrays of rank
at most 8 (YNN_MAX_TENSOR_RANK: rank 9 is refused) in the default descending layout.
"""
from __future__ import annotations

from ..ops.base import YNN_ELEMENTWISE
from .fusion.wrapper import reshape_is_bitcast

YNN_FUSION_KIND = "__ynn_fusion"
MAX_RANK = 8
MIN_ELEMENTS = 4096

# YnnType: the element types YNNPACK has at all.
_YNN_TYPES = frozenset({"f16", "bf16", "f32", "f64", "s8", "u8", "s32"})
_ELEMENTWISE_TYPES = frozenset({"f64", "f32", "bf16", "s8", "u8"})
_DOT_TYPES = frozenset({("f64", "f64", "f64"), ("f32", "f32", "f32"), ("bf16", "bf16", "f32"),
                        ("bf16", "bf16", "bf16"), ("s8", "s8", "s32"), ("u8", "s8", "s32")})
_CONV_TYPES = frozenset({("f64", "f64", "f64"), ("f32", "f32", "f32"), ("s8", "s8", "s32")})
_ADD_REDUCE_TYPES = frozenset({("f64", "f64"), ("f32", "f32"), ("f16", "f32"), ("bf16", "f32"),
                               ("s8", "s32"), ("u8", "s32")})
_MINMAX_REDUCE_TYPES = frozenset({"u8", "s8", "bf16", "f16", "f32", "f64"})

STARTERS = frozenset({"dot", "convolution", "reduce", "reduce-window"})
_GROWERS = frozenset({"reduce", "reduce-window"})


def _dtype(shape) -> str | None:
    dtype = getattr(shape, "dtype", None)
    return dtype.name if dtype is not None and dtype.is_array else None


def _elements(shape) -> int:
    return shape.size if _dtype(shape) is not None else 0


def _ynn_type(shape) -> bool:
    return _dtype(shape) in _YNN_TYPES


def layout_supported(shape, assigned: bool = True) -> bool:
    """IsLayoutSupportedByYnn: an array of rank <= 8 in descending layout. With `assigned`
    (the library rewriter, which XLA runs after layout assignment) the layouts written in
    the module do not count: XLA:CPU's layout assignment gives the values it fuses
    descending layouts (a transpose becomes a layout change plus a copy, neither fused
    here); before it (the tree-reduction predicate) they count as written."""
    if _dtype(shape) is None:
        return False
    rank = len(shape.dims)
    if rank > MAX_RANK:
        return False
    layout = shape.layout
    return assigned or rank == 0 or layout is None or \
        tuple(layout.minor_to_major) == tuple(range(rank - 1, -1, -1))


def _layouts(inst, assigned) -> bool:
    return layout_supported(inst.shape, assigned) and \
        layout_supported(inst.operands[0].shape, assigned)


def is_preferred(inst) -> bool:
    """IsInstructionPreferredByYnn."""
    if inst.opcode in ("dot", "convolution"):
        return True
    return _elements(inst.shape) >= MIN_ELEMENTS or \
        any(_elements(o.shape) >= MIN_ELEMENTS for o in inst.operands)


def _same_type_unary(inst, assigned: bool) -> bool:
    return len(inst.operands) == 1 and _ynn_type(inst.shape) and _layouts(inst, assigned) and \
        _dtype(inst.shape) == _dtype(inst.operands[0].shape)


def _broadcast(inst, assigned: bool) -> bool:
    if not (len(inst.operands) == 1 and _ynn_type(inst.shape) and _layouts(inst, assigned)):
        return False
    dims = list(inst.attrs.get("dimensions", ()))
    return all(a < b for a, b in zip(dims, dims[1:]))


def _reshape(inst, assigned: bool) -> bool:
    return _same_type_unary(inst, assigned) and (assigned or reshape_is_bitcast(inst))


def _pad(inst, assigned: bool) -> bool:
    if len(inst.operands) != 2 or not _ynn_type(inst.shape) or not _layouts(inst, assigned):
        return False
    operand, value = inst.operands
    if not (_dtype(inst.shape) == _dtype(operand.shape) == _dtype(value.shape)):
        return False
    for extent, (lo, hi, interior) in zip(operand.shape.dims, inst.attrs["padding"]):
        if interior or (extent == 1 and (lo or hi)):
            return False
    return True


def _iota(inst, assigned: bool) -> bool:
    return _dtype(inst.shape) in ("f32", "s32") and layout_supported(inst.shape, assigned)


def _constant(inst, assigned: bool) -> bool:
    return _ynn_type(inst.shape)


def _elementwise(inst, assigned: bool) -> bool:
    if YNN_ELEMENTWISE not in inst.opdef.traits:
        return False
    return _dtype(inst.shape) in _ELEMENTWISE_TYPES and \
        all(_dtype(o.shape) in _ELEMENTWISE_TYPES for o in inst.operands)


def _dot(inst, assigned: bool) -> bool:
    """IsDotSupportedByYnn on a DotDecomposer-canonical dot (batch dimensions leading,
    one contracting dimension); any other dot is refused."""
    if len(inst.operands) != 2:
        return False
    lhs, rhs = (o.shape for o in inst.operands)
    if (_dtype(lhs), _dtype(rhs), _dtype(inst.shape)) not in _DOT_TYPES:
        return False
    if not (layout_supported(lhs, assigned) and layout_supported(rhs, assigned)
            and layout_supported(inst.shape, assigned)):
        return False
    a = inst.attrs
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    nb = len(lb)
    if lb != tuple(range(nb)) or rb != tuple(range(nb)) or len(lc) != 1 or len(rc) != 1:
        return False
    lhs_mm, rhs_mm = lhs.dims[nb:], rhs.dims[nb:]
    if len(lhs_mm) > 2 or len(rhs_mm) > 2:
        return False
    lc, rc = lc[0] - nb, rc[0] - nb
    m = lhs_mm[1 - lc] if len(lhs_mm) > 1 else 1
    k = lhs_mm[lc]
    n = rhs_mm[1 - rc] if len(rhs_mm) > 1 else 1
    if m == 1 or n == 1 or max(m, k, n) < 8:
        return False
    # Row-major operands are never column major; the lhs must contract its last dim.
    return len(lhs_mm) <= 1 or lc == 1


def _reducer(comp):
    """The reducer's root opcode when it is exactly op(param 0, param 1), else None."""
    insts = comp.instructions
    root = comp.root
    if len(insts) != 3 or len(root.operands) != 2:
        return None
    nums = sorted(o.parameter_number for o in root.operands if o.opcode == "parameter")
    return root.opcode if nums == [0, 1] else None


def _reduce_like(inst, assigned: bool) -> bool:
    """IsReduceLikeOpSupportedByYnn."""
    if len(inst.operands) != 2 or not _ynn_type(inst.shape) or not _layouts(inst, assigned):
        return False
    source, init = inst.operands
    if inst.opcode == "reduce":
        if not inst.attrs.get("dimensions"):
            return False
    else:
        new_axes = 0
        for d in inst.attrs["window"].dims:
            if d.size > 1 or d.stride > 1:
                if d.size > 1 and d.stride != d.size:
                    return False
                if d.lhs_dilate != 1 or d.rhs_dilate != 1 or d.reversal:
                    return False
                new_axes += 1
        if new_axes == 0 or len(inst.shape.dims) + new_axes > MAX_RANK:
            return False
    out = _dtype(inst.shape)
    if _dtype(init.shape) != out:
        return False
    op = _reducer(inst.attrs["to_apply"])
    if op == "add":
        return (_dtype(source.shape), out) in _ADD_REDUCE_TYPES
    if op in ("maximum", "minimum"):
        return _dtype(source.shape) == out and out in _MINMAX_REDUCE_TYPES
    return False


def _convolution(inst, assigned: bool) -> bool:
    """IsConvolutionOpSupportedByYnn: 2-D NHWC x HWIO convolutions with more than 16
    input or output features, no base dilation, no window reversal."""
    if len(inst.operands) != 2 or inst.attrs.get("batch_group_count", 1) != 1:
        return False
    window = inst.attrs.get("window")
    dn = inst.attrs.get("dim_labels")
    if window is None or dn is None or len(window.dims) != 2:
        return False
    lhs, rhs = (o.shape for o in inst.operands)
    out = inst.shape
    if not (layout_supported(lhs, assigned) and layout_supported(rhs, assigned)
            and layout_supported(out, assigned)):
        return False
    if (_dtype(lhs), _dtype(rhs), _dtype(out)) not in _CONV_TYPES:
        return False
    if (dn.input_feature, dn.output_feature, dn.kernel_input_feature,
            dn.kernel_output_feature) != (3, 3, 2, 3):
        return False
    if tuple(dn.input_spatial) != (1, 2) or tuple(dn.kernel_spatial) != (0, 1) or \
            tuple(dn.output_spatial) != (1, 2):
        return False
    if max(lhs.dims[3], out.dims[3]) <= 16:
        return False
    for i in (1, 2):
        if out.dims[i] > lhs.dims[i] or rhs.dims[i - 1] > lhs.dims[i]:
            return False
    return all(d.lhs_dilate == 1 and not d.reversal for d in window.dims)


# Checked before the preference test (YnnMatcher::IsOpSupported's order).
_ANY_SIZE = {"constant": _constant, "iota": _iota, "reshape": _reshape,
             "bitcast": _same_type_unary, "broadcast": _broadcast, "pad": _pad}
_PREFERRED_ONLY = {"dot": _dot, "reduce": _reduce_like, "reduce-window": _reduce_like,
                   "convolution": _convolution}


def is_op_supported(inst, assigned: bool = True) -> bool:
    """YnnMatcher::IsOpSupported: YNNPACK can compute `inst` inside a YNN fusion."""
    rule = _ANY_SIZE.get(inst.opcode)
    if rule is not None:
        return rule(inst, assigned)
    if not is_preferred(inst):
        return False
    rule = _PREFERRED_ONLY.get(inst.opcode)
    if rule is not None:
        return rule(inst, assigned)
    return _elementwise(inst, assigned)


def starts_fusion(inst, assigned: bool = True) -> bool:
    """ShouldCreateFusion with jaxlib 0.10.2's default fusion types."""
    return inst.opcode in STARTERS and is_preferred(inst) and is_op_supported(inst, assigned)


def grows_fusion(inst) -> bool:
    """Dot and convolution fusions stay one instruction; reductions grow."""
    return inst.opcode in _GROWERS


def library_output_dtype(inst) -> str:
    """LibraryOpOutputType: YNNPACK's bf16 dots produce f32 (a convert follows)."""
    out = _dtype(inst.shape)
    return "f32" if inst.opcode == "dot" and out == "bf16" else out


def is_ynn_fusion(inst) -> bool:
    if inst.opcode != "fusion" or inst.attrs.get("kind") != "kCustom":
        return False
    config = inst.attrs.get("backend_config")
    return config is not None and f'"kind":"{YNN_FUSION_KIND}"' in getattr(config, "text", "")
