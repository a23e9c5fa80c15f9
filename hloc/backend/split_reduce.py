"""Full reductions split into fixed chunks: parallel, and the same bits for any thread count.

A kernel whose result is one scalar computed from a large reduce (`reduce` to rank 0, or
a fusion whose only large part is such a reduce followed by scalar ops, e.g. a mean)
would run on one thread. Here it becomes two kernels: a partial kernel whose work group
`wg` of `nwg` reduces chunk `wg` of the operand's outermost physical dimension (from the
init value) into `partials[wg]`, run through the work-group runtime; and a final kernel
that folds init and partials 0..nwg-1 in that order with the reducer, then evaluates
the scalar ops after the reduce. `nwg` is fixed from the operand's size alone (as
hloc.backend.parallel fixes work groups), so results never depend on the thread count.

Only where this is exactly a reassociation: xla-cpu numerics (reductions reassociate
there anyway), one operand, f32/f64/integer, a reducer that is add/multiply/maximum/
minimum/and/or of its two parameters, and an init value that is that reducer's
identity — a chunk starting from init then adds nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from llvmlite import ir

from .context import KernelBuilder, ptr_arg
from .kernels import KERNEL_TYPE
from .loops import Index, at_entry, i64
from .parallel import CHUNK, MAX_GROUPS, MIN_WORK, kernel_work  # fixed at import: the split
from .registry import emitter as emitter_of
from .structural import reader
from .types import I32, PTR, compute_type, load_elem, opaque, store_elem

_MONOIDS = {"add", "multiply", "maximum", "minimum", "and", "or"}
_TYPES = {"f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"}


@dataclass
class Split:
    reduce: object          # the reduce instruction (inside the fusion, or the op itself)
    nwg: int


def _identity(op: str, dt) -> float | int:
    if op in ("add", "or"):
        return 0
    if op == "multiply":
        return 1
    if dt.kind == "float":
        return -np.inf if op == "maximum" else np.inf
    info = np.iinfo(dt.np)
    if op == "and":
        return -1 if dt.kind == "int" else info.max
    return info.min if op == "maximum" else info.max


def _constant(inst, fusion):
    """The constant instruction `inst` is (inside or, through a fusion parameter, outside)."""
    if inst.opcode == "parameter" and fusion is not None:
        inst = fusion.operands[inst.parameter_number]
    return inst if inst.opcode == "constant" else None


def _operand_closure(inst) -> set:
    seen, stack = set(), [inst]
    while stack:
        i = stack.pop()
        if id(i) in seen:
            continue
        seen.add(id(i))
        stack.extend(i.operands)
    return seen


def plan(inst, options) -> Split | None:
    """How `inst`'s kernel is split, or None to emit it whole."""
    if not options.xla or inst.shape.is_tuple or inst.shape.rank != 0:
        return None
    fusion = inst if inst.opcode == "fusion" else None
    if fusion is not None:
        comp = inst.attrs["calls"]
        reduces = [i for i in comp.instructions if i.opcode == "reduce"]
        if len(reduces) != 1:
            return None
        red = reduces[0]
        inside = _operand_closure(red.operands[0])
        if any(i.shape.is_tuple or i.shape.rank != 0 for i in comp.instructions
               if id(i) not in inside and i is not red):
            return None
    elif inst.opcode == "reduce":
        red = inst
    else:
        return None
    if len(red.operands) != 2 or red.shape.rank != 0 or red.shape.dtype.name not in _TYPES:
        return None
    reducer = red.attrs["to_apply"]
    root = reducer.root
    params = {p.parameter_number for p in root.operands if p.opcode == "parameter"}
    if root.opcode not in _MONOIDS or params != {0, 1} or len(reducer.instructions) != 3:
        return None
    init = _constant(red.operands[1], fusion)
    if init is None:
        return None
    value = np.asarray(init.literal.value).reshape(-1)[0]
    ident = _identity(root.opcode, red.shape.dtype)
    if not (value == ident or (root.opcode == "and" and int(value) == int(np.array(ident).astype(red.shape.dtype.np)))):
        return None
    work = kernel_work(inst)
    if work < MIN_WORK:
        return None
    shape = red.operands[0].shape
    from .loops import minor_to_major
    outer = shape.dims[minor_to_major(shape)[-1]] if shape.rank else 1
    nwg = int(min(MAX_GROUPS, work // CHUNK, outer))
    return Split(red, nwg) if nwg > 1 else None


def _begin(mcx, inst, suffix):
    fn = ir.Function(mcx.module, KERNEL_TYPE, name=mcx.unique(f"{inst.name}.{suffix}"))
    fn.args[0].name, fn.args[1].name, fn.args[2].name = "args", "wg", "nwg"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    kb = KernelBuilder(mcx, fn)
    shapes = [o.shape for o in inst.operands]
    ptrs = [ptr_arg(kb.b, fn.args[0], k, name=f"in{k}") for k in range(len(shapes))]
    readers = [reader(lambda: kb, s, (lambda p=p: p)) for s, p in zip(shapes, ptrs)]
    return fn, kb, readers


def _generator(kb, inst, red, readers):
    """The generator of `red` (and of the whole kernel's root) over `readers`."""
    if inst.opcode == "fusion":
        env = {k: r for k, r in enumerate(readers)}
        comp = inst.attrs["calls"]
        return kb.generator(red, env), kb.generator(comp.root, env), \
            kb.generator(red.operands[1], env)
    emit = emitter_of(red.opdef).fn

    def gen(index):
        return emit(kb, red, readers, index)
    return gen, gen, readers[1]


def emit_partial(mcx, inst, split: Split) -> ir.Function:
    fn, kb, readers = _begin(mcx, inst, "partial")
    b = kb.b
    args, wg, nwg = fn.args
    parts = ptr_arg(b, args, len(inst.operands), name="partials")
    kb.reduce_split[id(split.reduce)] = (wg, nwg)
    gen, _, _ = _generator(kb, inst, split.reduce, readers)
    dt = split.reduce.shape.dtype
    v = gen(Index(b, split.reduce.shape, multi=[], linear=i64(0)))
    store_elem(b, dt, v, b.gep(parts, [wg], source_etype=compute_type(dt), inbounds=True))
    b.ret_void()
    return fn


def emit_final(mcx, inst, split: Split) -> ir.Function:
    fn, kb, readers = _begin(mcx, inst, "final")
    b = kb.b
    args = fn.args[0]
    n_in = len(inst.operands)
    out = ptr_arg(b, args, n_in, name="out0")
    parts = ptr_arg(b, args, n_in + 1, name="partials")
    red = split.reduce
    dt = red.shape.dtype
    scalar = Index(b, red.shape, multi=[], linear=i64(0))
    folded = {}

    def combined(index):
        if "v" not in folded:
            acc = init_gen(Index(b, red.operands[1].shape, multi=[], linear=i64(0)))
            op = red.attrs["to_apply"].root        # a binary monoid of its parameters
            emit_op = emitter_of(op.opdef).fn
            for k in range(split.nwg):
                x = load_elem(b, dt, b.gep(parts, [i64(k)], source_etype=compute_type(dt),
                                           inbounds=True))
                acc = emit_op(kb, op, [lambda _i, v=acc: v, lambda _i, v=x: v],
                              Index(b, op.shape, multi=[], linear=i64(0)))
            folded["v"] = acc
        return folded["v"]
    kb.overrides[id(red)] = combined
    _, root_gen, init_gen = _generator(kb, inst, red, readers)
    v = combined(scalar) if inst is red else root_gen(Index(b, inst.shape, multi=[], linear=i64(0)))
    store_elem(b, inst.shape.dtype, v, out)
    b.ret_void()
    return fn


def emit(em, inst, split: Split) -> None:
    """In computation emitter `em`: the partials on the stack, the partial kernel over
    the work-group runtime, then the final kernel."""
    from . import parallel
    b = em.b
    dt = split.reduce.shape.dtype
    arr_t = ir.ArrayType(compute_type(dt), split.nwg)
    with at_entry(b, em.fn):
        parts = opaque(b, b.alloca(arr_t, name=f"{inst.name}.partials"))
    ins = [x for o in inst.operands for x in em.leaves(o)]
    partial, final = emit_partial(em.mcx, inst, split), emit_final(em.mcx, inst, split)
    p_args = _ptrs(em, [em.ptr(x) for x in ins] + [parts])
    f_args = _ptrs(em, [em.ptr(x) for x in ins + em.leaves(inst)] + [parts])
    with em.timed(inst):
        b.call(parallel.parallel_function(em.mcx), [partial, p_args, i64(split.nwg)])
        b.call(final, [f_args, i64(0), i64(1)])


def _ptrs(em, values) -> ir.Value:
    b = em.b
    arr_t = ir.ArrayType(PTR, len(values))
    with at_entry(b, em.fn):
        slot = opaque(b, b.alloca(arr_t))
    for k, v in enumerate(values):
        b.store(v, b.gep(slot, [i64(0), ir.Constant(I32, k)], source_etype=arr_t, inbounds=True))
    return slot
