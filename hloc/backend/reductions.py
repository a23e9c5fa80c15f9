"""Element generators that loop: reduce (variadic), dot, map, and inlined computations.

A reducer or mapped computation is inlined per use: its parameters are bound to
values and its root's generators evaluated at a scalar index, so any elemental
`to_apply` compiles (argmax-style tuple reducers included). Reductions accumulate in
allocas promoted to registers; in xla-cpu numerics the reducer's FP ops carry
`reassoc`, so LLVM vectorises the inner loop (XLA emits reducers with reassociation too).
In ieee numerics a float `add(p0, p1)` reduce (f16/bf16/f32/f64, one type throughout)
keeps HloEvaluator's fast-path order, as the interpreter does: the reduced elements
summed in double, 512 at a time (each partial from 0.0), the partials added to init in
order, rounded once (f16/bf16 through f32, as SetFromDouble).
"""
from __future__ import annotations

from ..interp.core import unsupported
from ..ir.shape import ArrayShape
from .conversions import convert_value
from .loops import Acc, Index, enter_loops, for_range, i64, minor_to_major
from .registry import emits, vectorises
from . import extremum, row_vector
from .types import Cplx, compute_type


def inline_computation(kb, comp, values: list) -> list:
    """The results (flat list of leaves) of scalar computation `comp` on `values`."""
    env = {i: (lambda index, _v=v: _v) for i, v in enumerate(values)}
    root = comp.root
    b = kb.b
    if root.opcode == "tuple":
        outs = []
        for el in root.operands:
            g = kb.generator(el, env)
            outs.append(g(Index(b, el.shape, multi=[])))
        return outs
    if root.shape.is_tuple:
        v = kb.generator(root, env)(Index(b, root.shape.leaves()[0], multi=[]))
        return list(v)
    return [kb.generator(root, env)(Index(b, root.shape, multi=[]))]


@emits("reduce")
def _emit_reduce(kb, inst, ops, index):
    n = len(inst.operands) // 2
    dims = set(inst.attrs["dimensions"])
    in_shapes = [o.shape for o in inst.operands[:n]]
    shape0 = in_shapes[0]
    b = kb.b
    inits = [ops[n + k](Index(b, inst.operands[n + k].shape, multi=[])) for k in range(n)]
    kept = [d for d in range(shape0.rank) if d not in dims]
    split = kb.reduce_split.get(id(inst))       # chunk wg of nwg (hloc.backend.split_reduce)
    minor = row_vector.sums_row(kb, inst) if split is None else None
    if minor is not None:                       # in a vector row group: explicit vectors
        multi = [None] * shape0.rank
        for k, d in enumerate(kept):
            multi[d] = index.multi[k]
        return row_vector.row_sum(kb, inst, ops[0], inits[0], multi, minor)
    minor = extremum.row_extremum(inst) if split is None and kb.lanes is not None else None
    if minor is not None:
        return extremum.emit_row(kb, inst, ops, index, inits[0], kept, minor)
    acc = Acc(kb, inits)
    red = [d for d in reversed(minor_to_major(shape0)) if d in dims]   # major to minor
    comp = inst.attrs["to_apply"]
    ivs = {}
    stack = []
    if split is None and _evaluator_sum(kb, inst):
        return _emit_evaluator_sum(kb, inst, ops, index, inits[0], red, kept)
    greater = extremum.float_extremum(inst)
    if greater is not None:
        return extremum.emit(kb, inst, ops, index, inits[0], red, kept, split, greater)
    nest_sum = _nest_sum(kb, inst, red)
    enter_loops(kb, shape0, red[:-1] if nest_sum else red, split, ivs, stack)
    outer, inner_cm = acc, None
    if nest_sum:        # the innermost loop sums from -0.0 into a fresh accumulator
        acc = Acc(kb, [nest_sum])
        inner_cm = for_range(b, 0, shape0.dims[red[-1]], name=f"r{red[-1]}")
        ivs[red[-1]] = inner_cm.__enter__()
    multi = [None] * shape0.rank
    for k, d in enumerate(kept):
        multi[d] = index.multi[k]
    for d in red:
        multi[d] = ivs[d]
    xs = [ops[k](Index(b, in_shapes[k], multi=list(multi))) for k in range(n)]
    with kb.reassociating():
        new = inline_computation(kb, comp, acc.get() + xs)
    acc.set(new)
    if inner_cm is not None:
        inner_cm.__exit__(None, None, None)
        with kb.reassociating():
            outer.set(inline_computation(kb, comp, outer.get() + acc.get()))
        acc = outer
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    out = acc.get()
    return out if inst.shape.is_tuple else out[0]


def _nest_sum(kb, inst, red):
    """-0.0 (fadd's identity) of the reduce's type when it is a float sum over more than
    one loop in xla-cpu numerics, else None. One accumulator carried through the whole
    nest would seed lane 0 of the vectorised innermost loop with the running total, and
    past 2^24 (f32) every element added in that lane is rounded away; summed per
    innermost run, then added to the total, the lanes hold row sums only, as XLA:CPU's
    accumulators do (a reassociation: xla-cpu numerics only)."""
    from llvmlite import ir
    from ..interp.lanes import binary_root
    if not kb.mcx.options.xla or len(red) < 2 or len(inst.operands) != 2 \
            or inst.shape.is_tuple or binary_root(inst.attrs["to_apply"]) != "add":
        return None
    dt = inst.shape.dtype
    if dt.name not in ("f32", "f64") or inst.operands[0].shape.dtype != dt \
            or inst.attrs["to_apply"].root.shape.dtype != dt:
        return None
    return ir.Constant(compute_type(dt), -0.0)


def _takes_vectors(inst) -> bool:
    """The lanes facet of reduce: a sum (row_vector.row_sum) or a float max/min
    (hloc.backend.extremum) along the minor dimension of a 2-D operand."""
    return row_vector.reduce_takes_vectors(inst) or extremum.row_extremum(inst) is not None


vectorises(_takes_vectors, "reduce")


_CHUNK = 512            # hloc.interp.reductions' (HloEvaluator's) partial-sum length


def _evaluator_sum(kb, inst) -> bool:
    """The reduce is one where the interpreter sums in double (its fast path)."""
    from ..interp.lanes import binary_root
    if kb.mcx.options.xla or len(inst.operands) != 2 or inst.shape.is_tuple \
            or binary_root(inst.attrs["to_apply"]) != "add":
        return False
    dt = inst.attrs["to_apply"].root.shape.dtype
    return (dt.name in ("f16", "bf16", "f32", "f64")
            and all(o.shape.dtype == dt for o in inst.operands) and inst.shape.dtype == dt)


def _emit_evaluator_sum(kb, inst, ops, index, init, red, kept):
    from llvmlite import ir
    from .types import F64, round_narrow
    b = kb.b
    shape0 = inst.operands[0].shape
    dt = shape0.dtype
    wide = (lambda v: v) if dt.name == "f64" else (lambda v: b.fpext(v, F64))  # noqa: E731
    zero = ir.Constant(F64, 0.0)
    acc = Acc(kb, [wide(init), zero, i64(0)])       # total, partial, elements so far
    stack, multi = [], [None] * shape0.rank
    for k, d in enumerate(kept):
        multi[d] = index.multi[k]
    for d in red:
        cm = for_range(b, 0, shape0.dims[d], name=f"r{d}")
        multi[d] = cm.__enter__()
        stack.append(cm)
    total, partial, count = acc.get()
    partial = b.fadd(partial, wide(ops[0](Index(b, shape0, multi=list(multi)))))
    count = b.add(count, i64(1))
    full = b.icmp_unsigned("==", b.urem(count, i64(_CHUNK)), i64(0))
    acc.set([b.select(full, b.fadd(total, partial), total), b.select(full, zero, partial), count])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    total, partial, count = acc.get()
    rest = b.icmp_unsigned("!=", b.urem(count, i64(_CHUNK)), i64(0))
    total = b.select(rest, b.fadd(total, partial), total)
    return total if dt.name == "f64" else round_narrow(b, dt, b.fptrunc(total, compute_type(dt)))


@emits("map")
def _emit_map(kb, inst, ops, index):
    comp = inst.attrs["to_apply"]
    params = sorted(comp.parameters, key=lambda p: p.parameter_number)
    vals = [g(index) for g in ops]
    for k, (o, p) in enumerate(zip(inst.operands, params)):
        if o.shape.dtype is not p.shape.dtype:     # the verifier lets this through
            raise unsupported(inst, f"map of a {o.shape.dtype.name} operand into a "
                                    f"{p.shape.dtype.name} parameter of {comp.name}")
    return inline_computation(kb, comp, vals)[0]


@emits("dot")
def _emit_dot(kb, inst, ops, index):
    a = inst.attrs
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
    lc, rc = list(a.get("lhs_contracting_dims", ())), list(a.get("rhs_contracting_dims", ()))
    out_dt = inst.shape.dtype
    if inst.operands[0].shape.dtype.kind == "complex" and out_dt.kind != "complex":
        raise unsupported(inst, "dot of complex operands to a real result")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    b = kb.b
    m = index.multi
    lm, rm = [None] * lhs.rank, [None] * rhs.rank
    k = 0
    for dl, dr in zip(lb, rb):
        lm[dl] = rm[dr] = m[k]
        k += 1
    for d in lfree:
        lm[d] = m[k]
        k += 1
    for d in rfree:
        rm[d] = m[k]
        k += 1
    zero = _zero(out_dt)
    acc = Acc(kb, [zero])
    stack = []
    for dl, dr in zip(lc, rc):
        cm = for_range(b, 0, lhs.dims[dl], name="k")
        iv = cm.__enter__()
        stack.append(cm)
        lm[dl] = rm[dr] = iv
    x = ops[0](Index(b, lhs, multi=list(lm)))
    y = ops[1](Index(b, rhs, multi=list(rm)))
    x = convert_value(kb, inst, x, lhs.dtype, out_dt)
    y = convert_value(kb, inst, y, rhs.dtype, out_dt)
    with kb.reassociating():
        s = _mul_add(kb, out_dt, acc.get()[0], x, y)
    acc.set([s])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    from .types import round_narrow
    v = acc.get()[0]
    return round_narrow(b, out_dt, v) if out_dt.kind == "float" else v


def _zero(dt):
    from .types import const
    return const(dt, 0)


def _mul_add(kb, dt, acc, x, y):
    b, f = kb.b, kb.flags
    if dt.kind == "complex":
        re = b.fsub(b.fmul(x.re, y.re, flags=f), b.fmul(x.im, y.im, flags=f), flags=f)
        im = b.fadd(b.fmul(x.re, y.im, flags=f), b.fmul(x.im, y.re, flags=f), flags=f)
        return Cplx(b.fadd(acc.re, re, flags=f), b.fadd(acc.im, im, flags=f))
    if dt.kind == "float":      # f16/bf16 accumulate in f32, rounded once at the end
        return b.fadd(acc, b.fmul(x, y, flags=f), flags=f)
    if dt.kind == "pred":
        return b.or_(acc, b.and_(x, y))
    return b.add(acc, b.mul(x, y))


_ = (ArrayShape, compute_type)
