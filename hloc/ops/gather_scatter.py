"""gather and scatter: shape rules mirroring ShapeInference::InferGatherShape /
InferScatterShape (dimension numbers, batching dims, index vectors, messages included)
and their registry rows.
"""
from __future__ import annotations


from .base import (CALLS, CAN_CHANGE_LAYOUT, CPU_WRAPPED, ELEMENTAL, EMBEDDED_CALLS, EXPENSIVE,
                   LAYOUT_IGNORES_ELEMENT_SIZE, AttrSpec, OpDef, register)
from .data_movement import _dims
from .shape_rules import (dynamic_of, expect_array, fail, human, is_integral, join, make, scalar,
                          tup, verify_reducer)


# ---------------------------------------------------------------------------
# gather / scatter (with explicit batching dimensions)

def _sorted_unique(values, what):
    if list(values) != sorted(values):
        fail(f"{what} must be sorted; got: {join(values)}.")
    if len(set(values)) != len(values):
        fail(f"{what} must not repeat; got: {join(values)}.")


def _in_range(values, bound, what):
    for v in values:
        if v < 0 or v >= bound:
            fail(f"Invalid {what}; valid range is [0, {bound}), got: {v}.")


def _check_batching(op, operand, indices_dims, operand_batch, indices_batch, operand_name,
                    indices_name):
    """The explicit-batching checks XLA's shape inference makes (it does not compare the
    batching dimensions' sizes)."""
    _in_range(operand_batch, operand.rank, f"{operand_name} set in {op} op")
    if list(operand_batch) != sorted(operand_batch):
        fail(f"{operand_name} in {op} op must be sorted; got: {join(operand_batch)}")
    if len(set(operand_batch)) != len(operand_batch):
        fail(f"Repeated dimensions not allowed in {operand_name} in {op} op; got: "
             f"{join(operand_batch)}.")
    if len(operand_batch) != len(indices_batch):
        fail(f"{operand_name} and {indices_name} in {op} op must be of the same size; got: "
             f"{len(operand_batch)} and {len(indices_batch)}.")
    for i, d in enumerate(indices_batch):
        if d < 0 or d >= len(indices_dims):
            fail(f"Invalid {indices_name}; domain is [0, {len(indices_dims)}), got: {i}->{d}.")
    if len(set(indices_batch)) != len(indices_batch):
        fail(f"Repeated dimensions are not allowed in {indices_name}; got: "
             f"{join(indices_batch)}.")


def _index_vector(op, indices, index_vector_dim):
    if not is_integral(indices):
        kind = "Gather indices" if op == "gather" else "Scatter indices"
        fail(f"{kind} parameter must be an integral tensor; got {human(indices)}.")
    if indices.rank < index_vector_dim or index_vector_dim < 0:
        leaf = "Gather index leaf" if op == "gather" else "Scatter index leaf"
        name = "start_indices" if op == "gather" else "scatter_indices"
        fail(f"{leaf} dimension must be within [0, rank({name}) + 1). rank({name}) is "
             f"{indices.rank} and {op} index leaf dimension is {index_vector_dim}.")
    dims = list(indices.dims)
    dyn = list(dynamic_of(indices))
    if len(dims) == index_vector_dim:
        dims.append(1)
        dyn.append(False)
    return dims, dyn


def _gather_infer(ops, attrs, inst):
    operand, indices = ops
    offset_dims = _dims(attrs, "offset_dims")
    collapsed = _dims(attrs, "collapsed_slice_dims")
    start_index_map = _dims(attrs, "start_index_map")
    operand_batch = _dims(attrs, "operand_batching_dims")
    indices_batch = _dims(attrs, "start_indices_batching_dims")
    ivd = attrs.get("index_vector_dim", 0)
    slice_sizes = _dims(attrs, "slice_sizes")
    expect_array(operand, "input tensor operand of gather op")
    expect_array(indices, "gather indices operand of gather op")
    idims, idyn = _index_vector("gather", indices, ivd)

    if list(offset_dims) != sorted(offset_dims):
        fail(f"Output window dimensions in gather op must be ascending; got: "
             f"{join(offset_dims)}.")
    if len(set(offset_dims)) != len(offset_dims):
        fail(f"Output window dimensions in gather op must not repeat; got: "
             f"{join(offset_dims)}.")
    out_rank = len(offset_dims) + len(idims) - 1
    for i, d in enumerate(offset_dims):
        if d < 0 or d >= out_rank:
            fail(f"Offset dimension {i} in gather op is out of bounds; got {d}, but should "
                 f"have been in [0,{out_rank}).")
    if len(start_index_map) != idims[ivd]:
        fail(f"Gather op has {len(start_index_map)} elements in start_index_map and the bound "
             f"of dimension index_vector_dim={ivd} of start_indices is {idims[ivd]}. These two "
             f"numbers must be equal.")
    for i, d in enumerate(start_index_map):
        if d < 0 or d >= operand.rank:
            fail(f"Invalid start_index_map; domain is [0, {operand.rank}), got: {i}->{d}.")
    if len(set(start_index_map)) != len(start_index_map):
        fail(f"Repeated dimensions are not allowed in start_index_map; got: "
             f"{join(start_index_map)}.")
    for d in collapsed:
        if d < 0 or d >= operand.rank:
            fail(f"Invalid collapsed_slice_dims set in gather op; valid range is [0, "
                 f"{operand.rank}), got: {d}.")
    if list(collapsed) != sorted(collapsed):
        fail(f"collapsed_slice_dims in gather op must be sorted; got: {join(collapsed)}")
    if len(set(collapsed)) != len(collapsed):
        fail(f"Repeated dimensions not allowed in collapsed_slice_dims in gather op; got: "
             f"{join(collapsed)}.")
    _check_batching("gather", operand, idims, operand_batch, indices_batch,
                    "operand_batching_dims", "start_indices_batching_dims")

    if len(slice_sizes) != operand.rank:
        fail(f"Gather op must have one slice size for every input dimension; got: "
             f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.rank}.")
    if len(slice_sizes) != len(offset_dims) + len(collapsed) + len(operand_batch):
        fail(f"All components of the offset index in a gather op must either be a offset "
             f"dimension or explicitly collapsed or explicitly batched; got len(slice_sizes)="
             f"{len(slice_sizes)}, output_slice_sizes={join(offset_dims, ',')}, "
             f"collapsed_slice_dims={join(collapsed, ',')}, operand_batching_dims="
             f"{join(operand_batch, ',')}.")
    for i, size in enumerate(slice_sizes):
        if size < 0 or size > operand.dims[i]:
            fail(f"Slice size at index {i} in gather op is out of range, must be within "
                 f"[0, {operand.dims[i] + 1}), got {size}.")
    for pos, d in enumerate(collapsed):
        if slice_sizes[d] > 1:
            fail(f"Gather op can only collapse slice dims with bound 1 or 0, but bound is "
                 f"{slice_sizes[d]} for index {d} at position {pos}.")
    for pos, d in enumerate(operand_batch):
        if slice_sizes[d] > 1:
            fail(f"Gather op can only have operand_batching_dims with bound 1 or 0, but bound "
                 f"is {slice_sizes[d]} for index {d} at position {pos}.")
    if set(collapsed) & set(operand_batch):
        fail(f"collapsed_slice_dims and operand_batching_dims in gather op must be disjoint; "
             f"got: {join(collapsed)} and {join(operand_batch)}.")

    removed = set(collapsed) | set(operand_batch)
    window = [i for i in range(operand.rank) if i not in removed]
    batch = [i for i in range(len(idims)) if i != ivd]
    dims, dyn = [], []
    wi = bi = 0
    for i in range(out_rank):
        if i in offset_dims:
            d = window[wi]
            wi += 1
            dims.append(slice_sizes[d])
            dyn.append(slice_sizes[d] == operand.dims[d] and operand.is_dynamic_dim(d))
        else:
            d = batch[bi]
            bi += 1
            dims.append(idims[d])
            dyn.append(idyn[d])
    return make(operand.dtype, dims, dyn)


def _scatter_infer(ops, attrs, inst):
    if len(ops) % 2 != 1:
        fail(f"Invalid argument count of scatter op: Expected {len(ops) // 2 * 2 + 1}, saw "
             f"{len(ops)}")
    n = len(ops) // 2
    operands, indices, updates = ops[:n], ops[n], ops[n + 1:]
    window_dims = _dims(attrs, "update_window_dims")
    inserted = _dims(attrs, "inserted_window_dims")
    to_operand = _dims(attrs, "scatter_dims_to_operand_dims")
    input_batch = _dims(attrs, "input_batching_dims")
    indices_batch = _dims(attrs, "scatter_indices_batching_dims")
    ivd = attrs.get("index_vector_dim", 0)
    expect_array(indices, "scatter indices of scatter op")
    idims, _ = _index_vector("scatter", indices, ivd)
    for k, (operand, upd) in enumerate(zip(operands, updates)):
        expect_array(operand, f"operand {k} of scatter op")
        expect_array(upd, f"updates {k} of scatter op")
        removed = set(inserted) | set(input_batch)
        max_window = [operand.dims[i] for i in range(operand.rank) if i not in removed]
        expected_rank = len(idims) - 1 + len(window_dims)
        if upd.rank != expected_rank:
            fail(f"Updates tensor must be of rank {expected_rank}; got {upd.rank}.")
        _validate_scatter_numbers(operand, idims, upd, window_dims, inserted, to_operand,
                                  input_batch, indices_batch, ivd)
        for i, d in enumerate(window_dims):
            if i < len(max_window) and upd.dims[d] > max_window[i]:
                fail(f"Bounds of the window dimensions of updates must not exceed the bounds "
                     f"of the corresponding dimensions of operand. For dimension {d}, updates "
                     f"bound is {upd.dims[d]}, operand bound is {max_window[i]}.")
        seen = 0
        for i in range(upd.rank):
            if i in window_dims:
                continue
            if seen == ivd:
                seen += 1
            if upd.dims[i] != idims[seen]:
                fail(f"Bounds of the scatter dimensions of updates must be same as the bounds "
                     f"of the corresponding dimensions of scatter indices. For scatter "
                     f"dimension {i}, updates bound is {upd.dims[i]}, scatter_indices bound "
                     f"is {idims[seen]}.")
            seen += 1
    comp = attrs.get("to_apply")
    if comp is not None:
        verify_reducer(comp, [scalar(o.dtype) for o in operands], [u.dtype for u in updates],
                       n)
    return operands[0] if n == 1 else tup(operands)


def _validate_scatter_numbers(operand, idims, upd, window_dims, inserted, to_operand,
                              input_batch, indices_batch, ivd):
    _sorted_unique(window_dims, "update_window_dims in scatter op")
    for d in window_dims:
        if d < 0 or d >= upd.rank:
            fail(f"Invalid update_window_dims set in scatter op; valid range is [0, "
                 f"{upd.rank}). got: {d}.")
    _sorted_unique(inserted, "inserted_window_dims in scatter op")
    for d in inserted:
        if d < 0 or d >= operand.rank:
            fail(f"Invalid inserted_window_dims set in scatter op; valid range is [0, "
                 f"{operand.rank}), got: {d}.")
    _check_batching("scatter", operand, idims, input_batch, indices_batch,
                    "input_batching_dims", "scatter_indices_batching_dims")
    window_size = len(window_dims) + len(inserted) + len(input_batch)
    if window_size != operand.rank:
        fail(f"Scatter op has window of size {window_size}; doesn't match operand of rank "
             f"{operand.rank}.")
    if set(inserted) & set(input_batch):
        fail(f"inserted_window_dims and input_batching_dims in scatter op must be disjoint; "
             f"got: {join(inserted)} and {join(input_batch)}.")
    if len(to_operand) != idims[ivd]:
        fail(f"Scatter op has {len(to_operand)} elements in scatter_dims_to_operand_dims and "
             f"the bound of dimension index_vector_dim={ivd} of scatter_indices is "
             f"{idims[ivd]}. These two numbers must be equal.")
    for i, d in enumerate(to_operand):
        if d < 0 or d >= operand.rank:
            fail(f"Invalid scatter_dims_to_operand_dims mapping; domain is [0, "
                 f"{operand.rank}), got: {i}->{d}.")
    if len(set(to_operand)) != len(to_operand):
        fail(f"Repeated dimensions not allowed in scatter_dims_to_operand_dims; got: "
             f"{join(to_operand)}.")


register(OpDef("gather", 2, (
    AttrSpec("offset_dims", "int_list", required=True, always_print=True),
    AttrSpec("collapsed_slice_dims", "int_list", required=True, always_print=True),
    AttrSpec("start_index_map", "int_list", required=True, always_print=True),
    AttrSpec("operand_batching_dims", "int_list", default=()),
    AttrSpec("start_indices_batching_dims", "int_list", default=()),
    AttrSpec("index_vector_dim", "int", required=True),
    AttrSpec("slice_sizes", "int_list", required=True, always_print=True),
    AttrSpec("indices_are_sorted", "bool", default=False),
), frozenset({EXPENSIVE}), _gather_infer), CPU_WRAPPED, ELEMENTAL, CAN_CHANGE_LAYOUT)
register(OpDef("scatter", None, (  # N inputs, indices, N updates: an odd count
    AttrSpec("update_window_dims", "int_list", required=True, always_print=True),
    AttrSpec("inserted_window_dims", "int_list", required=True, always_print=True),
    AttrSpec("scatter_dims_to_operand_dims", "int_list", required=True, always_print=True),
    AttrSpec("input_batching_dims", "int_list", default=()),
    AttrSpec("scatter_indices_batching_dims", "int_list", default=()),
    AttrSpec("index_vector_dim", "int", required=True),
    AttrSpec("indices_are_sorted", "bool", default=False),
    AttrSpec("unique_indices", "bool", default=False),
    AttrSpec("to_apply", "computation", required=True),
), frozenset({CALLS, EXPENSIVE}), _scatter_infer), CPU_WRAPPED,
         EMBEDDED_CALLS, LAYOUT_IGNORES_ELEMENT_SIZE)
