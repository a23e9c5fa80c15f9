"""Kernels: one LLVM function per fusion or unfused op, a loop nest around generators.

Kernel ABI (modelled on XLA's kernel call frame): `void @name(ptr %args, i64 %wg, i64 %nwg)`
where `args` holds one pointer per operand leaf then one per output leaf, and the
outermost physical dimension is split into `nwg` work groups of which this call runs
number `wg` — so a runtime can spread a kernel over threads without recompiling. A kernel
small enough to be inlined (INLINE_WORK, far below parallel.MIN_WORK: called directly as
one work group) takes the pointers as arguments instead, `void @name(ptr %in0, ...,
ptr %out0, ..., i64 %wg, i64 %nwg)` (`fn.direct_args`): no array is stored by the caller
and loaded back by the kernel (half the IR of a scan body of scalar kernels; once inlined
LLVM's objects are the same). The
loop walks the output in physical order (stores are sequential) and hands generators
an Index carrying both the multi-index and the linear offset.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from . import irfast
from .bounds import Bounds
from .context import KernelBuilder, ptr_arg
from .inplace import copy_operand, dus_base, emit_window, same_buffer
from .parallel import touched_bytes, work_groups
from .loops import Index, for_range, i64, minor_to_major
from .registry import ELEMENTAL, KERNEL
from .registry import emitter as emitter_of
from .structural import reader
from .types import I64, PTR, VOID, storage_type, store_elem

KERNEL_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
# Kernels touching fewer bytes than this (parallel.touched_bytes) are inlined into their
# computation's function:
# a scan body of scalar ops then becomes straight-line code instead of ~100 calls. Their
# float results pass llvm.arithmetic.fence, so the bits are those of a call.
INLINE_WORK = 4096
# The text of the array of pointers a direct kernel's call leaves out, in bytes (its GEPs
# and loads in the kernel; the alloca, GEPs and stores in the caller): measured on the
# tools/compare_ir.py modules. hloc.backend.partition still counts it in a function's
# size (`fn.args_array_bytes`), so modules split into the parts they were tuned with.
KERNEL_ARRAY_BYTES = (78, 7)        # per pointer, per kernel
CALLER_ARRAY_BYTES = (99, 75)       # per pointer, per call
_DIRECT: dict[int, ir.FunctionType] = {}


def direct_type(n: int) -> ir.FunctionType:
    """`void (ptr x n, i64 wg, i64 nwg)`: an inlinable kernel's type."""
    t = _DIRECT.get(n)
    if t is None:
        t = _DIRECT[n] = ir.FunctionType(VOID, [PTR] * n + [I64, I64])
    return t


def _array_leaves(shape):
    return [s for s in shape.leaves()]


def _fusion_env(kb, inst, comp, readers) -> dict:
    """Parameter number -> generator. A tuple-shaped parameter's leaves arrive as separate
    buffers (readers, flattened in order); the get-tuple-element chains that reach an
    array leaf read that buffer (kb.overrides). Any other use of a tuple-valued parameter
    or of a partial chain is refused."""
    env, first = {}, 0
    params = sorted(comp.parameters, key=lambda p: p.parameter_number)
    for p in params:
        n = len(p.shape.leaves())
        if not p.shape.is_tuple:
            env[p.parameter_number] = readers[first]
        else:
            def refuse(index, _p=p):
                raise unsupported(_p, "a tuple-shaped fusion parameter used other than "
                                      "through get-tuple-element in the compiled back end")
            env[p.parameter_number] = refuse
            _bind_leaves(kb, p, first, readers)
        first += n
    return env


def _bind_leaves(kb, value, first, readers) -> None:
    """Override each get-tuple-element user of tuple `value` (whose leaves are readers
    first, first + 1, ...) with its leaf's reader, recursively."""
    offset = first
    offsets = []
    for el in value.shape.elements:
        offsets.append(offset)
        offset += len(el.leaves())
    for u in value.users:
        if u.opcode != "get-tuple-element":
            continue
        at = offsets[u.attrs["index"]]
        if u.shape.is_tuple:
            _bind_leaves(kb, u, at, readers)
        else:
            kb.overrides[id(u)] = readers[at]


def emit_kernel(mcx, inst) -> ir.Function:
    """The kernel computing `inst` (a fusion or an op with a generator or kernel emitter)."""
    inlinable = touched_bytes(inst) < INLINE_WORK
    # pointers as arguments when called directly as one work group (always, unless
    # parallel.MIN_WORK is set below INLINE_WORK, as tests do)
    direct = inlinable and (not data_parallel(inst) or work_groups(inst) == 1)
    in_leaves = [s for o in inst.operands for s in o.shape.leaves()]   # the caller's buffers
    out_shapes = _array_leaves(inst.shape)
    n_ptrs = len(in_leaves) + len(out_shapes)
    fn = ir.Function(mcx.module, direct_type(n_ptrs) if direct else KERNEL_TYPE,
                     name=mcx.unique(inst.name))
    if direct:
        for k, a in enumerate(fn.args[:n_ptrs]):
            a.name = f"in{k}" if k < len(in_leaves) else f"out{k - len(in_leaves)}"
        fn.args[-2].name, fn.args[-1].name = "wg", "nwg"
    else:
        fn.args[0].name, fn.args[1].name, fn.args[2].name = "args", "wg", "nwg"
    fn.direct_args = direct
    if direct:
        fn.args_array_bytes = KERNEL_ARRAY_BYTES[0] * n_ptrs + KERNEL_ARRAY_BYTES[1]
    fn.attributes.add("alwaysinline" if inlinable else "noinline")
    if inlinable:       # nothing else calls it: gone once inlined (no code emitted for it)
        fn.linkage = "internal"
    fn.attributes.add("nounwind")
    kb = KernelBuilder(mcx, fn)
    # An inlined kernel's results still round where they are stored, as XLA's fusion
    # boundaries do: no contraction or reassociation across kernels (xla-cpu numerics).
    kb.fence_outputs = inlinable and mcx.options.xla
    kb.bounds = Bounds(inst) if mcx.options.xla else None   # what exp may leave out (softmax's)
    b = kb.b
    wg, nwg = fn.args[-2:]
    if inst.opcode != "fusion" and any(o.shape.is_tuple for o in inst.operands):
        raise unsupported(inst, "a tuple-shaped operand of a kernel in the compiled back end")
    if direct:
        ptrs, outs = list(fn.args[:len(in_leaves)]), list(fn.args[len(in_leaves):n_ptrs])
    else:
        args = fn.args[0]
        ptrs = [ptr_arg(b, args, k, name=f"in{k}") for k in range(len(in_leaves))]
        outs = [ptr_arg(b, args, len(in_leaves) + k, name=f"out{k}") for k in range(len(out_shapes))]
    readers = [reader(lambda: kb, s, (lambda p=p: p)) for s, p in zip(in_leaves, ptrs)]
    if inst.opcode == "fusion":
        comp = inst.attrs["calls"]
        env = _fusion_env(kb, inst, comp, readers)
        root = comp.root
        gen_of = lambda i: kb.generator(i, env)    # noqa: E731
        emitter = emitter_of(root.opdef)
        if emitter is not None and emitter.kind == KERNEL:   # e.g. a fused scatter
            emitter.fn(kb, root, [gen_of(o) for o in root.operands], list(zip(outs, out_shapes)))
            b.ret_void()
            return fn
    else:
        root = inst
        emitter = emitter_of(inst.opdef)
        if emitter is not None and emitter.kind == KERNEL:
            emitter.fn(kb, inst, readers, list(zip(outs, out_shapes)))
            b.ret_void()
            return fn
        if emitter is None or emitter.kind != ELEMENTAL:
            why = inst.opdef.unsupported
            raise unsupported(inst, f"opcode {inst.opcode} in the compiled back end"
                                    + (f" ({why})" if why else ""))
        cache = kb.cache

        def gen_of(i, _readers=readers):
            if i is not inst:
                raise AssertionError("unfused kernel asked for another instruction")

            def g(index):
                k = (id(inst), id(index))
                if k not in cache:
                    cache[k] = (emitter.fn(kb, inst, _readers, index), index)
                return cache[k][0]
            return g
    base = dus_base(inst)
    if base is not None:            # a DUS of its own operand buffer: maybe in place
        ops = [gen_of(o) for o in root.operands] if inst.opcode == "fusion" else readers
        # another buffer: the operand copied as bytes first; then the window, emitted once
        with b.if_then(b.not_(same_buffer(b, outs[0], ptrs[base]))):
            copy_operand(kb, outs[0], ptrs[base], out_shapes[0], wg)
        kb.cache.clear()
        emit_window(kb, root, ops, outs[0], out_shapes[0], wg)
        b.ret_void()
        return fn
    if root.opcode == "tuple" and inst.opcode == "fusion":
        if len({str(s) for s in out_shapes}) == 1:
            # A multi-output (sibling) fusion: one loop stores every output at each
            # index, so operands they share are read once and common values computed
            # once (the per-kernel cache is keyed by the index).
            gens = [gen_of(el) for el in root.operands]
            _loop(kb, lambda index: [g(index) for g in gens],
                  [(outs[k], out_shapes[k], k) for k in range(len(gens))], wg, nwg)
        else:
            for k, el in enumerate(root.operands):
                _loop(kb, gen_of(el), [(outs[k], out_shapes[k], None)], wg, nwg)
    elif inst.shape.is_tuple:
        _loop(kb, gen_of(root), [(p, s, k) for k, (p, s) in enumerate(zip(outs, out_shapes))], wg, nwg)
    else:
        _loop(kb, gen_of(root), [(outs[0], out_shapes[0], None)], wg, nwg)
    b.ret_void()
    return fn


def data_parallel(inst) -> bool:
    """Whether emit_kernel's kernel for `inst` honours its work-group arguments (the
    loop below); kernel emitters (scatter, ...) write whole buffers themselves, unless
    they split their own work by wg/nwg and say so with `fn.splits_rows` (sort)."""
    root = inst.attrs["calls"].root if inst.opcode == "fusion" else inst
    emitter = emitter_of(root.opdef)
    # a kernel emitter may split its own work (sort: rows) and say so
    return not (emitter is not None and emitter.kind == KERNEL) or getattr(emitter.fn, "splits_rows", False)


def _loop(kb, gen, targets, wg, nwg):
    """for each output position of targets[0]'s shape (this work group's share): store
    gen(index) (or its element k for a tuple value) into every target."""
    b = kb.b
    shape = targets[0][1]
    if shape.size == 0:
        return
    order = list(reversed(minor_to_major(shape)))      # major to minor
    if not order:
        with b.if_then(b.icmp_signed("==", wg, i64(0))):
            _store(kb, gen, targets, Index(b, shape, multi=[], linear=i64(0)))
        return
    n0 = shape.dims[order[0]]
    lo = b.udiv(b.mul(i64(n0), wg), nwg, name="wg.lo")
    hi = b.udiv(b.mul(i64(n0), b.add(wg, i64(1))), nwg, name="wg.hi")
    ivs, stack = {}, []
    lin = None
    for k, d in enumerate(order):
        cm = for_range(b, lo, hi, name=f"o{d}") if k == 0 else for_range(b, 0, shape.dims[d], name=f"o{d}")
        iv = cm.__enter__()
        stack.append(cm)
        ivs[d] = iv
        lin = iv if lin is None else b.add(b.mul(lin, i64(shape.dims[d]), flags=("nsw", "nuw")), iv,
                                           flags=("nsw", "nuw"))
    index = Index(b, shape, multi=[ivs[d] for d in range(shape.rank)], linear=lin)
    _store(kb, gen, targets, index)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _store(kb, gen, targets, index):
    b = kb.b
    v = gen(index)
    for ptr, shape, k in targets:
        val = v[k] if k is not None else v
        val = kb.fenced(val)
        off = index.offset_in(shape)
        p = irfast.gep(b, ptr, [off], storage_type(shape.dtype))
        store_elem(b, shape.dtype, val, p)
