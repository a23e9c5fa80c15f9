"""Reductions and ops that apply a computation per element or window: reduce,
reduce-window, select-and-scatter, map, sort, topk and scan.

Rules mirror ShapeInference::InferReduceShape, InferReduceWindowShape (the variadic form,
which the verifier uses; XLA's parser only infers the single-input form),
InferSelectAndScatterShape, InferMapShape, InferVariadicOpShape(kSort), InferTopKShape
and, for scan (no public ShapeInference yet), what jaxlib 0.10.2's parser infers: the
first results of the scan computation are stacked along the scan dimension, the last
`num_carries` are the carries.
"""
from __future__ import annotations

from ..ir.dtypes import PRED, S32
from ..ir.shape import ArrayShape, TupleShape
from .base import (CALLS, CAN_CHANGE_LAYOUT, CPU_WRAPPED, ELEMENTAL, EMBEDDED_CALLS, EXPENSIVE,
                   INFER_READS_SIGNATURE,
                   MIXED_OPERANDS_OK, AttrSpec, OpDef, register)
from .shape_rules import (compatible, compatible_ignoring_fp, dynamic_of, expect_array,
                          fail, human, join, make, need_attr, params_of, program_text,
                          same_type_ignoring_fp, scalar, tup, verify_reducer, window_output)


def _split_inputs(op, ops):
    if len(ops) % 2:
        fail(f"{op} must have an even number of arguments, has {len(ops)}")
    n = len(ops) // 2
    inputs, inits = ops[:n], ops[n:]
    for i in range(1, n):
        if inputs[i].dims != inputs[0].dims:
            fail(f"All reduced tensors must have the same dimension. Tensor 0 has shape "
                 f"{human(inputs[0])}, Tensor {i} has shape {human(inputs[i])}")
    return inputs, inits


def _reduce_infer(ops, attrs, inst):
    if not ops:
        fail("Reduce must have at least 2 arguments, has 0")
    if len(ops) > 2:
        for shape in ops:
            expect_array(shape, "operand of reduce")
    inputs, inits = _split_inputs("Reduce", ops)
    dims = tuple(attrs.get("dimensions", ()))
    arg = inputs[0]
    rank = arg.rank if isinstance(arg, ArrayShape) else 0     # XLA: a tuple's rank is 0
    for d in dims:
        if d >= rank or d < 0:
            fail(f"Reducing out-of-bounds dimension {d} in shape {human(arg)}.")
    for shape in ops:
        expect_array(shape, "operand of reduce")
    comp = need_attr(attrs, "to_apply")
    verify_reducer(comp, inits, [s.dtype for s in inputs], len(inputs))
    seen = set()
    for d in dims:
        if d in seen:
            fail(f"Duplicate reduction dimension: {d}")
        seen.add(d)
    keep = [i for i in range(arg.rank) if i not in seen]
    new_dims = [arg.dims[i] for i in keep]
    new_dyn = [arg.is_dynamic_dim(i) for i in keep]
    root = comp.root.shape
    if isinstance(root, TupleShape):
        return tup(make(e.dtype, new_dims, new_dyn) for e in root.elements)
    return make(root.dtype, new_dims, new_dyn)


def _reduce_window_infer(ops, attrs, inst):
    inputs, inits = _split_inputs("ReduceWindow", ops)
    window = attrs.get("window")
    comp = need_attr(attrs, "to_apply")
    verify_reducer(comp, inits, [s.dtype for s in inputs], len(inputs))
    outs = []
    for operand, init in zip(inputs, inits):
        expect_array(operand, "operand of reduce-window")
        outs.append(window_output(operand, window, init.dtype))
    return tup(outs) if isinstance(comp.root.shape, TupleShape) else outs[0]


def _select_and_scatter_infer(ops, attrs, inst):
    operand, source, init = ops
    expect_array(operand, "operand of select-and-scatter")
    select, scatter = need_attr(attrs, "select"), need_attr(attrs, "scatter")
    params = params_of(select)
    if len(params) != 2:
        fail(f"Select function must take 2 parameters, but takes {len(params)} "
             f"parameter(s).")
    if not compatible(select.root.shape, scalar(PRED)):
        fail("Select function must have rank-0 PRED result.")
    elem = scalar(operand.dtype)
    for which, p in (("first", params[0]), ("second", params[1])):
        if not compatible_ignoring_fp(elem, p):
            fail(f"Select function's {which} parameter shape currently must match the "
                 f"operand element shape, but got {human(p)} vs {human(elem)}.")
    verify_reducer(scatter, [init], [source.dtype], 1)
    reduced = window_output(operand, attrs.get("window"), operand.dtype)
    if not compatible_ignoring_fp(source, reduced):
        fail(f"Source shape does not match the shape of window-reduced operand: "
             f"source({human(source)}), window-reduced operand({human(reduced)}).")
    return operand


def _map_infer(ops, attrs, inst):
    if not ops:
        fail("Map expects at least one argument.")
    arg = ops[0]
    for s in ops[1:]:
        expect_array(s, "operand of map")
        if s.dims == arg.dims:
            continue
        if same_type_ignoring_fp(s, arg):
            if s.rank == 0:
                continue
            if arg.rank == 0:
                arg = s
                continue
        fail(f"Map operation requires all operands to have the same shape; got: "
             f"{join(human(x) for x in ops)}.")
    dims = attrs.get("dimensions")
    dims = tuple(range(arg.rank)) if dims is None else tuple(dims)
    if len(dims) != arg.rank:
        fail(f"Map applied to a subset of dimensions currently not supported: "
             f"arg_dimension_size: {arg.rank}, requested_map_dimensions_size: {len(dims)}.")
    if any(d != i for i, d in enumerate(dims)):
        fail(f"Map requires monotonically increasing dimension numbers; got: {join(dims)}.")
    comp = need_attr(attrs, "to_apply")
    params = params_of(comp)
    if len(ops) != len(params):
        fail(f"Map applied function arity must match number of arguments; got: arity: "
             f"{len(params)}, arguments: {len(ops)}.")
    out = comp.root.shape
    if not (isinstance(out, ArrayShape) and out.rank == 0):
        fail(f"Mapped computation's result has to be a scalar; got: {human(out)}.")
    for i, p in enumerate(params):
        if not (isinstance(p, ArrayShape) and p.rank == 0):
            fail(f"Mapped computation's parameter has to be a scalar; got parameter {i} "
                 f"shape: {human(p)}.")
        if not same_type_ignoring_fp(p, ops[i]):
            fail(f"Mapped computation's parameter type has to match argument element type; "
                 f"got parameter {i} shape: {human(p)}, argument shape: {human(arg)}.")
    return make(out.dtype, arg.dims)


def _sort_infer(ops, attrs, inst):
    if not ops:
        fail("Expected at least 1 operand for sort")
    for s in ops:
        expect_array(s, "sort")
    keys = ops[0]
    for i, s in enumerate(ops[1:], 1):
        if s.dims != keys.dims:
            fail(f"Sort keys and values dimensions must match. Keys shape is: {human(keys)}\n, "
                 f"Values shape (operand index {i}) is: {human(s)}")
    dims = tuple(attrs.get("dimensions", ())) or (0,)
    if len(dims) != 1:          # XLA's parser takes exactly one
        fail(f"Sort expects exactly one dimension, got {len(dims)}.")
    (dim,) = dims
    if dim < 0 or dim >= max(keys.rank, 1):
        fail(f"dimension for sort is out of range: {dim} in shape {human(keys)}")
    comp = attrs.get("to_apply")
    if comp is not None:
        if not compatible(comp.root.shape, scalar(PRED)):
            fail(f"The Sort compare computation shape does not lead to a scalar predicate "
                 f"shape: {human(comp.root.shape)}")
        params = params_of(comp)
        if len(params) != 2 * len(ops):
            fail(f"The Sort compare computation must take {2 * len(ops)} parameters, but "
                 f"takes {len(params)} ({program_text(comp)}).")
        for i, s in enumerate(ops):
            for p in (params[2 * i], params[2 * i + 1]):
                if not compatible(p, scalar(s.dtype)):
                    fail(f"Expected the Sort compare computation parameter {human(p)} to "
                         f"match operand {i} element type {human(scalar(s.dtype))}.")
    return ops[0] if len(ops) == 1 else tup(ops)


def _topk_infer(ops, attrs, inst):
    (operand,) = ops
    expect_array(operand, "operand of top-k operation")
    k = attrs.get("k", 0)
    if operand.rank < 1:
        fail(f"TopK requires an operand of rank >= 1; got {human(operand)}.")
    if operand.dims[-1] < k:
        fail(f"k={k} is larger than the last dimension of size={operand.dims[-1]}")
    dims = operand.dims[:-1] + (k,)
    dyn = dynamic_of(operand)[:-1] + (False,)
    values = make(operand.dtype, dims, dyn)
    return tup((values, make(S32, dims, dyn)))


def _scan_infer(ops, attrs, inst):
    if not ops:
        fail("Scan expects at least one operand.")
    dims = tuple(attrs.get("dimensions", ())) or (0,)
    if len(dims) != 1:          # XLA's parser takes exactly one
        fail(f"Sort expects exactly one dimension, got {len(dims)}.")
    (dim,) = dims
    if dim < 0 or dim >= ops[0].rank:
        fail(f"Scan dimension {dim} is out of bounds for operand {human(ops[0])}.")
    length = ops[0].dims[dim]
    comp = need_attr(attrs, "to_apply")
    if len(params_of(comp)) != len(ops):
        fail(f"expects {len(ops)} operands to match the number of parameters of to_apply, "
             f"but to_apply has {len(params_of(comp))} parameters")
    root = comp.root.shape
    results = list(root.elements) if isinstance(root, TupleShape) else [root]
    carries = attrs.get("num_carries", 0)
    if carries < 0 or carries > len(results):
        fail(f"num_carries={carries} exceeds the {len(results)} results of the scan "
             f"computation.")
    outs = []
    for i, r in enumerate(results):
        if i < len(results) - carries:
            if not isinstance(r, ArrayShape) or dim > r.rank:
                fail(f"Scan output {i} of shape {human(r)} cannot be stacked along "
                     f"dimension {dim}.")
            r = make(r.dtype, r.dims[:dim] + (length,) + r.dims[dim:])
        outs.append(r)
    return tup(outs) if isinstance(root, TupleShape) else outs[0]


# ---------------------------------------------------------------------------
# Registration (attributes in XLA's printing order; called computations last)

_X = frozenset({EXPENSIVE})
_CX = frozenset({CALLS, EXPENSIVE})
_TO_APPLY = AttrSpec("to_apply", "computation", required=True)

register(OpDef("reduce", None, (AttrSpec("dimensions", "int_list", required=True),
                                     _TO_APPLY), _CX, _reduce_infer), CPU_WRAPPED, ELEMENTAL,
         EMBEDDED_CALLS, CAN_CHANGE_LAYOUT, INFER_READS_SIGNATURE)
register(OpDef("reduce-window", None, (AttrSpec("window", "window"), _TO_APPLY), _CX,
               _reduce_window_infer), CPU_WRAPPED, EMBEDDED_CALLS, MIXED_OPERANDS_OK,
         INFER_READS_SIGNATURE)
register(OpDef("select-and-scatter", 3, (
    AttrSpec("window", "window"),
    AttrSpec("select", "computation", required=True),
    AttrSpec("scatter", "computation", required=True),
), _CX, _select_and_scatter_infer), EMBEDDED_CALLS)
# map: absent `dimensions` means all of them, and XLA then prints {0,...,rank-1}.
register(OpDef("map", None, (AttrSpec("dimensions", "int_list", always_print=True),
                                  _TO_APPLY), _CX, _map_infer), CPU_WRAPPED, EMBEDDED_CALLS)
register(OpDef("sort", None, (
    AttrSpec("dimensions", "int_list", required=True),
    AttrSpec("is_stable", "bool", default=False),
    _TO_APPLY,
), _CX, _sort_infer), EMBEDDED_CALLS, MIXED_OPERANDS_OK)
register(OpDef("topk", 1, (AttrSpec("k", "int", required=True),
                           AttrSpec("largest", "bool", default=True, always_print=True)),
               _X, _topk_infer), EMBEDDED_CALLS)
register(OpDef("scan", None, (
    AttrSpec("dimensions", "int_list", required=True),
    AttrSpec("num_carries", "int", required=True),
    AttrSpec("is_reverse", "bool", default=False),
    AttrSpec("is_associative", "bool", default=False, always_print=True),
    _TO_APPLY,
), _CX, _scan_infer), EMBEDDED_CALLS)
