"""Element generators of the data-movement ops: parameter reads, constant, iota,
broadcast, reshape, bitcast, transpose, reverse, slice, concatenate, pad, copy,
dynamic-slice, dynamic-update-slice, get-tuple-element.

Each maps the output index to an operand index (XLA's elemental IR emitter). No read
is ever out of bounds whatever the data: dynamic starts are clamped into range as
HLO defines, and ops that choose between operands (concatenate, pad, dynamic-update-slice)
read every candidate at a clamped index and select, so the code has no data-dependent
branches and stays vectorisable.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from ..ir.shape import ArrayShape
from . import irfast
from .conversions import convert_value
from .loops import ZERO, Index, clamp_i64, i64, is_default_layout, minor_to_major
from .registry import emits, vectorises
from .row_vector import per_row, splat
from .types import I64, const, load_elem, storage_type, vector_load
from .elementwise import select_value


def scalar_index(b, dtype) -> Index:
    return Index(b, ArrayShape(dtype, ()), multi=[])


def reader(kb_getter, shape, base_ptr_fn):
    """A generator reading elements of a buffer with `shape` at `base_ptr_fn()`."""
    st = storage_type(shape.dtype)

    def read(index):
        kb = kb_getter()
        b = kb.b
        off = index.offset_in(shape) if index.shape.dims == shape.dims else None
        if off is None:
            raise AssertionError("index of another shape")
        ptr = irfast.gep(b, base_ptr_fn(), [off], st)
        if index.lanes is not None:     # contiguous: hloc.backend.row_vector's plan
            return vector_load(b, shape.dtype, ptr, index.lanes)
        return load_elem(b, shape.dtype, ptr)
    return read


def _sub(index, shape, multi) -> Index:
    return Index(index.b, shape, multi=multi)


@emits("constant")
def _emit_constant(kb, inst, ops, index):
    shape = inst.shape
    if shape.size == 1:
        import numpy as np
        v = np.asarray(inst.literal.value).reshape(-1)[0]
        if shape.dtype.kind == "float" and shape.dtype.name in ("f16", "bf16"):
            v = float(np.float32(v))
        c = const(shape.dtype, v.item() if hasattr(v, "item") and shape.dtype.kind != "complex" else v)
        return c if index.lanes is None else splat(index.b, c, index.lanes)
    g = kb.mcx.constant_global(inst)
    return reader(lambda: kb, shape, lambda: g)(index)


def _per_row(inst) -> bool:
    """A scalar constant, or a broadcast that is the same along the physical minor
    dimension of its result: one value for a vector of positions, splat
    (KernelBuilder.generator; hloc.backend.row_vector)."""
    if inst.opcode == "constant":
        return inst.shape.size == 1
    return inst.shape.rank < 2 or minor_to_major(inst.shape)[0] not in inst.attrs.get("dimensions", ())


vectorises(_per_row, "constant", "broadcast")


@emits("iota")
def _emit_iota(kb, inst, ops, index):
    from ..ir.dtypes import DTYPES
    v = index.multi[inst.attrs["iota_dimension"]]
    return convert_value(kb, inst, v, DTYPES["s64"], inst.shape.dtype)


@emits("broadcast")
def _emit_broadcast(kb, inst, ops, index):
    dims = inst.attrs.get("dimensions", ())
    op = inst.operands[0].shape
    sub = _sub(index, op, [index.multi[d] for d in dims])
    if index.lanes is None:
        return ops[0](sub)
    return per_row(kb, lambda: ops[0](sub), index.lanes)    # _per_row: along the row


def _linear_alias(inst) -> bool:
    """Operand and result share the physical element order (row-major on both)."""
    a, r = inst.operands[0].shape, inst.shape
    return is_default_layout(a) and is_default_layout(r)


@emits("reshape")
def _emit_reshape(kb, inst, ops, index):
    op = inst.operands[0].shape
    if _linear_alias(inst):
        return ops[0](Index(index.b, op, linear=index.linear))
    b = index.b
    lin = None
    for d, n in enumerate(inst.shape.dims):     # logical row-major linear index
        lin = index.multi[d] if lin is None else b.add(b.mul(lin, i64(n)), index.multi[d])
    lin = lin if lin is not None else i64(0)
    multi = [None] * op.rank
    for d in range(op.rank - 1, -1, -1):
        n = op.dims[d]
        multi[d] = b.urem(lin, i64(n)) if n != 1 else i64(0)
        lin = b.udiv(lin, i64(n)) if n != 1 else lin
    return ops[0](_sub(index, op, multi))


@emits("dynamic-reshape")
def _emit_dynamic_reshape(kb, inst, ops, index):
    """A reshape when every size operand is a constant equal to the static dimension (what
    the interpreter runs too); sizes only known at run time are unsupported."""
    import numpy as np
    sizes = inst.operands[1:]
    static = not any(inst.shape.dynamic) and not any(inst.operands[0].shape.dynamic) and all(
        o.opcode == "constant" and int(np.asarray(o.literal.value)) == n
        for o, n in zip(sizes, inst.shape.dims))
    if not static:
        raise unsupported(inst, "dynamic-reshape to sizes that are not constants equal to the "
                                "bounds (dynamic dimension sizes are not tracked)")
    return _emit_reshape(kb, inst, ops, index)


@emits("bitcast")
def _emit_bitcast(kb, inst, ops, index):
    op = inst.operands[0].shape
    v = ops[0](Index(index.b, op, linear=index.linear))
    if op.dtype is inst.shape.dtype:
        return v
    if op.dtype.np.itemsize != inst.shape.dtype.np.itemsize or "complex" in (op.dtype.kind, inst.shape.dtype.kind):
        raise unsupported(inst, "bitcast between element types of different sizes in the "
                                "compiled back end")
    from .types import to_storage, from_storage, storage_type
    raw = to_storage(index.b, op.dtype, v)
    st = storage_type(inst.shape.dtype)
    return from_storage(index.b, inst.shape.dtype, raw if raw.type == st else index.b.bitcast(raw, st))


@emits("fusion", "call")
def _emit_fusion(kb, inst, ops, index):
    """A fusion or call inside an inlined computation (a comparator, a reducer)."""
    comp = inst.attrs.get("calls") or inst.attrs.get("to_apply")
    key = ("env", id(inst), tuple(id(g) for g in ops))
    env = kb.cache.get(key)
    if env is None:
        env = ({k: g for k, g in enumerate(ops)}, None)
        kb.cache[key] = env
    root = comp.root
    if root.opcode == "tuple":
        return [kb.generator(o, env[0])(Index(index.b, o.shape, multi=index.multi))
                for o in root.operands]
    return kb.generator(root, env[0])(index)


@emits("copy")
def _emit_copy(kb, inst, ops, index):
    if inst.shape.is_tuple:
        raise unsupported(inst, "copy of a tuple inside a fusion")
    return ops[0](_sub(index, inst.operands[0].shape, index.multi))


@emits("transpose")
def _emit_transpose(kb, inst, ops, index):
    perm = inst.attrs["dimensions"]
    op = inst.operands[0].shape
    multi = [None] * op.rank
    for k, d in enumerate(perm):
        multi[d] = index.multi[k]
    return ops[0](_sub(index, op, multi))


@emits("reverse")
def _emit_reverse(kb, inst, ops, index):
    b = index.b
    dims = set(inst.attrs["dimensions"])
    op = inst.operands[0].shape
    multi = [b.sub(i64(op.dims[d] - 1), m) if d in dims else m for d, m in enumerate(index.multi)]
    return ops[0](_sub(index, op, multi))


@emits("slice")
def _emit_slice(kb, inst, ops, index):
    b = index.b
    op = inst.operands[0].shape
    multi = []
    for m, (start, _limit, stride) in zip(index.multi, inst.attrs["slice"]):
        v = m if stride == 1 else b.mul(m, i64(stride))
        multi.append(v if start == 0 else b.add(v, i64(start)))
    return ops[0](_sub(index, op, multi))


@emits("concatenate")
def _emit_concatenate(kb, inst, ops, index):
    b = index.b
    dim = inst.attrs["dimensions"][0]
    m = index.multi[dim]
    result, offset = None, 0
    for k, operand in enumerate(inst.operands):
        n = operand.shape.dims[dim]
        if n == 0:
            continue
        local = clamp_i64(b, b.sub(m, i64(offset)), 0, n - 1)
        multi = list(index.multi)
        multi[dim] = local
        v = ops[k](_sub(index, operand.shape, multi))
        if result is None:
            result = v
        else:
            result = select_value(kb, b.icmp_signed(">=", m, i64(offset)), v, result)
        offset += n
    return result


@emits("pad")
def _emit_pad(kb, inst, ops, index):
    b = index.b
    op = inst.operands[0].shape
    pad_value = ops[1](scalar_index(b, op.dtype))
    inside = ir.Constant(ir.IntType(1), 1)
    multi = []
    for d, (lo, _hi, interior) in enumerate(inst.attrs["padding"]):
        n = op.dims[d]
        p = b.sub(index.multi[d], i64(lo))
        step = interior + 1
        q = p if step == 1 else b.sdiv(p, i64(step))
        ok = b.and_(b.icmp_signed(">=", p, i64(0)), b.icmp_signed("<", q, i64(n)))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(p, i64(step)), i64(0)))
        inside = b.and_(inside, ok)
        multi.append(clamp_i64(b, q, 0, max(n - 1, 0)))
    if op.size == 0:
        return pad_value
    v = ops[0](_sub(index, op, multi))
    return select_value(kb, inside, v, pad_value)


def _start(kb, inst, ops, k, limit, element=None):
    """Start index operand k (a scalar, or element `element` of a vector of start
    indices, the old form), clamped to [0, limit] as HLO defines. A start has one value
    wherever it is read, so within a basic block it is read and clamped once for all the
    instructions that start at the same operand with the same limit (the dynamic slices
    of one loop counter: a scan body's fusions read dozens), memoised in the kernel
    builder's cache; only while the builder appends at the block's end, so the value
    found is always defined before the use."""
    b = kb.b
    block = b.block
    if b._anchor != len(block.instructions):
        return _clamped_start(kb, inst, ops, k, limit, element)
    key = ("start", id(inst.operands[k]), element, limit, id(block))
    hit = kb.cache.get(key)
    if hit is None:
        hit = kb.cache[key] = (_clamped_start(kb, inst, ops, k, limit, element), block)
    return hit[0]


def _clamped_start(kb, inst, ops, k, limit, element):
    b = kb.b
    shape = inst.operands[k].shape
    sdt = shape.dtype
    if element is None:
        v = ops[k](scalar_index(b, sdt))
    else:
        v = ops[k](Index(b, shape, multi=[i64(element)]))
    if sdt.kind == "int":
        v = b.sext(v, I64) if sdt.bits < 64 else v
    else:
        v = b.zext(v, I64) if sdt.bits < 64 else v
        if sdt.bits == 64:       # u64 above INT64_MAX counts as large, not negative
            v = b.select(b.icmp_signed("<", v, i64(0)), i64(limit), v)
    return clamp_i64(b, v, 0, max(limit, 0))


def _index_vector(inst, first, rank) -> bool:
    """Whether the start indices come as one rank-1 operand (the old form) rather than
    one scalar per dimension."""
    if len(inst.operands) == first + rank and all(o.shape.rank == 0 for o in inst.operands[first:]):
        return False
    if len(inst.operands) == first + 1 and inst.operands[first].shape.rank == 1 \
            and inst.operands[first].shape.dims[0] >= rank:
        return True
    raise unsupported(inst, f"{inst.opcode} with start indices of shapes "
                            f"{', '.join(str(o.shape) for o in inst.operands[first:])}")


@emits("dynamic-slice")
def _emit_dynamic_slice(kb, inst, ops, index):
    b = index.b
    op = inst.operands[0].shape
    vector = _index_vector(inst, 1, op.rank)
    sizes = inst.attrs["dynamic_slice_sizes"]
    multi = []
    for d, m in enumerate(index.multi):
        s = _start(kb, inst, ops, 1 if vector else 1 + d, op.dims[d] - sizes[d],
                   d if vector else None)
        multi.append(s if m is ZERO else b.add(m, s))
    return ops[0](_sub(index, op, multi))


@emits("dynamic-update-slice")
def _emit_dynamic_update_slice(kb, inst, ops, index):
    b = index.b
    op, up = inst.operands[0].shape, inst.operands[1].shape
    vector = _index_vector(inst, 2, op.rank)
    inside = ir.Constant(ir.IntType(1), 1)
    multi = []
    for d, m in enumerate(index.multi):
        s = _start(kb, inst, ops, 2 if vector else 2 + d, op.dims[d] - up.dims[d],
                   d if vector else None)
        local = b.sub(m, s)
        inside = b.and_(inside, b.and_(b.icmp_signed(">=", local, i64(0)),
                                       b.icmp_signed("<", local, i64(up.dims[d]))))
        multi.append(clamp_i64(b, local, 0, max(up.dims[d] - 1, 0)))
    base = ops[0](index if index.shape.dims == op.dims else _sub(index, op, index.multi))
    if up.size == 0:
        return base
    return select_value(kb, inside, ops[1](_sub(index, up, multi)), base)


@emits("replica-id", "partition-id")
def _emit_device_id(kb, inst, ops, index):
    """One device: replica 0, partition 0 (as the interpreter)."""
    return const(inst.shape.dtype, 0)


@emits("get-tuple-element")
def _emit_gte(kb, inst, ops, index):
    v = ops[0](index)
    if not isinstance(v, list):
        raise unsupported(inst, "get-tuple-element of a non-tuple value inside a kernel")
    return v[inst.attrs["index"]]


_ = (minor_to_major,)
