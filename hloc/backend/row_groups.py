"""Row groups: consecutive kernels over the same rows, run row by row in one kernel.

A reduce-then-broadcast chain (softmax: row max, subtract+exp, row sum, divide;
layernorm: row sum, variance, normalise) is several kernels, each streaming the whole
array through memory. When every kernel of a run computes rows of the same count R (the
outermost physical dimension of its result) and reads the results of earlier kernels of
the run only at its own row (checked through the fused computation: elementwise ops,
broadcasts and reductions that keep that dimension), the run becomes one kernel: for each
row, the members in order, each over that row. A row is then read from memory once and
stays in cache across its reduction and its elementwise consumers. A member result used
only inside the group lives in a per-row scratch on the stack (never written to memory);
the others are written to their buffers as before.

Each element is computed by the same generators as the separate kernels, so the results
are those of the separate kernels (in xla-cpu numerics LLVM may vectorise a reduction's
loop differently: within the reassociation that numerics allows). Rows are split into
work groups fixed from the group's size (hloc.backend.parallel), never from the thread
count, so the bits do not depend on it. Groups need >= 2 members moving >= MIN_BYTES
together (smaller data stays in cache anyway), rows of at most ROW_BYTES, every member
after the first reading an earlier one, no member writing a buffer another member reads
from outside the group, and no in-place dynamic-update-slice or kernel-emitter member.

A large output may keep an internal member's row in its own (hloc.backend.row_hosts).
Where every op allows, the loops are explicit vector code (hloc.backend.row_vector).
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field

from llvmlite import ir

from .context import KernelBuilder, ptr_arg
from .kernels import KERNEL_TYPE, _fusion_env
from .inplace import dus_base
from .loops import Index, at_entry, for_range, hint_loops, i64, minor_to_major
from . import parallel, row_hosts, row_vector
from .parallel import kernel_work
from .registry import ELEMENTAL
from .row_divide import RowDivide, candidate
from .bounds import Bounds
from .registry import emitter as emitter_of
from . import row_ahead, row_loop_hints
from .structural import reader
from .types import I8, itemsize, opaque, storage_type, store_elem

ROW_BYTES = 256 << 10       # a member's row (result or operand) above this: no gain, no group
SCRATCH_BYTES = 128 << 10   # per-row scratch on the stack, all internal members together
MIN_BYTES = 1 << 20         # a smaller group's data stays in cache anyway: kernels as they are
FAST_DIVIDE = True          # f32 divides by a per-row divisor: hloc.backend.row_divide
PARALLEL_ACCESSES = True    # loops told free of loop-carried dependences: hloc.backend.access_groups
COLD_SCALAR = True          # a row divide's exact loop (run only to redo a row) left scalar:
#                             hloc.backend.row_loop_hints
ANY = "any"                 # an operand read at positions the analysis does not follow


@dataclass
class Group:
    members: list
    rows: int
    nwg: int = 1
    internal: set = field(default_factory=set)     # ids of members kept in row scratch
    hosts: dict = field(default_factory=dict)      # id(internal member) -> member whose row holds it
    vector: bool = False                           # its loops in explicit vectors (row_vector)


def _row_dim(shape) -> int:
    return minor_to_major(shape)[-1]


def _row_bytes(shape, rows) -> int:
    return shape.size // rows * itemsize(shape.dtype)


_UNFUSED = frozenset({"reduce", "broadcast"})    # besides elementwise ops
_NOT_INSIDE = frozenset({"dot", "convolution"})  # work of another kind: left alone


def _candidate(inst) -> int | None:
    """R if `inst` can be a member (an ordinary elemental kernel over R rows), else None."""
    from ..ops.base import ELEMENTWISE
    shape = inst.shape
    if shape.is_tuple or shape.rank == 0 or not shape.dtype.is_array or shape.size == 0 \
            or any(o.shape.is_tuple for o in inst.operands):
        return None
    if inst.opcode == "fusion":
        comp = inst.attrs["calls"]
        if comp.root.shape.is_tuple:
            return None
        inside = [i for i in comp.instructions if i.opcode != "parameter"]
    elif inst.opcode in _UNFUSED or ELEMENTWISE in inst.opdef.traits:
        inside = [inst]
    else:
        return None
    for i in inside:
        e = emitter_of(i.opdef)
        if e is None or e.kind != ELEMENTAL or i.opcode in _NOT_INSIDE:
            return None
    if dus_base(inst) is not None:
        return None
    rows = shape.dims[_row_dim(shape)]
    if max([_row_bytes(shape, rows)] + [_row_bytes(o.shape, rows) for o in inst.operands
                                         if o.shape.rank and o.shape.dims[_row_dim(o.shape)] == rows]) > ROW_BYTES:
        return None
    return rows


def _operand_roles(inst, role) -> list:
    """The dimension of each operand that equals the row index when `inst` is read with
    dimension `role` equal to it (None: read independently of the row; ANY: not known)."""
    from ..ops.base import ELEMENTWISE
    ops = inst.operands
    if role is ANY:
        return [ANY] * len(ops)
    if inst.opcode == "broadcast":
        dims = list(inst.attrs["dimensions"])
        return [dims.index(role) if role is not None and role in dims else None]
    if inst.opcode == "reduce":
        n = len(ops) // 2
        red = set(inst.attrs["dimensions"])
        kept = [d for d in range(ops[0].shape.rank) if d not in red]
        return [None if role is None else kept[role]] * n + [None] * n
    if ELEMENTWISE in inst.opdef.traits:
        return [role if not o.shape.is_tuple and o.shape.rank == inst.shape.rank else None
                for o in ops]
    return [ANY] * len(ops)


def _param_roles(comp) -> dict[int, set]:
    """Parameter number -> the roles (above) it is read with, over every path from the
    root of fused computation `comp` (whose result's row is its outermost dimension)."""
    out: dict[int, set] = {}
    seen = set()
    stack = [(comp.root, _row_dim(comp.root.shape))]
    while stack:
        inst, role = stack.pop()
        if (id(inst), role) in seen:
            continue
        seen.add((id(inst), role))
        if inst.opcode == "parameter":
            out.setdefault(inst.parameter_number, set()).add(role)
            continue
        stack.extend(zip(inst.operands, _operand_roles(inst, role)))
    return out


def _reads_rows_of(inst, members: dict) -> bool:
    """Every read by `inst` of a value in `members` is at the row being computed."""
    if inst.opcode == "fusion":
        roles = _param_roles(inst.attrs["calls"])
    else:
        roles = {k: {r} for k, r in enumerate(_operand_roles(inst, _row_dim(inst.shape)))}
    for k, o in enumerate(inst.operands):
        if id(o) in members and roles.get(k, set()) - {_row_dim(o.shape)}:
            return False
    return True


def plan(comp, bplan) -> dict[int, Group]:
    """id(member) -> its group, for every group of `comp` (hloc.backend.buffers plan `bplan`)."""
    runs, cur, rows = [], [], None
    for inst in comp.instructions:
        if bplan.no_code(inst):
            continue
        r = _candidate(inst)
        members = {id(m): m for m in cur}
        if r is not None and r == rows and any(id(o) in members for o in inst.operands) \
                and _fits(inst, members, bplan):
            cur.append(inst)
            continue
        runs.append(cur)
        cur, rows = ([inst], r) if r is not None else ([], None)
    runs.append(cur)
    out = {}
    for run in runs:
        for g in _groups(run, comp, bplan):
            for m in g.members:
                out[id(m)] = g
    return out


def _fits(inst, members: dict, bplan) -> bool:
    """`inst` reads earlier members only directly (no alias) and only at its own row."""
    written = {id(b) for m in members.values() for b in bplan.leaves[id(m)]}
    for o in inst.operands:
        if id(o) in members:
            continue
        if any(id(b) in written for b in bplan.leaves[id(o)]):
            return False              # an alias (bitcast, tuple...) of a member's result
    return _reads_rows_of(inst, members)


def _overlap(a, b) -> bool:
    return (a.kind == b.kind == "temp" and a.offset < b.offset + b.size
            and b.offset < a.offset + a.size)


def _groups(run, comp, bplan) -> list[Group]:
    """Groups of one run of fitting members, cut before a member that would make _hazard
    true (the arena reuses dead buffers)."""
    out, start = [], 0
    for k in range(1, len(run) + 1):
        if k < len(run) and not _hazard(_finish(run[start:k + 1], comp), bplan):
            continue
        g = run[start:k]
        if len(g) >= 2 and sum(kernel_work(m) for m in g) >= MIN_BYTES:
            out.append(_finish(g, comp))
        start = k
    return out


def _hazard(group, bplan) -> bool:
    """A buffer the group writes (members not in row scratch) overlaps one a member reads
    from outside the group, or another written member's (a member whose last use is
    inside the group may hand its region on): rows written by one would clobber rows
    another has yet to read or write."""
    ids = {id(m) for m in group.members}
    written = [b for m in group.members if id(m) not in group.internal for b in bplan.leaves[id(m)]]
    read = [b for m in group.members for o in m.operands if id(o) not in ids
            for b in bplan.leaves[id(o)]]
    return any(_overlap(w, r) for w in written for r in read) or \
        any(_overlap(w, v) for i, w in enumerate(written) for v in written[i + 1:])


def _finish(members, comp) -> Group:
    shape = members[0].shape
    rows = shape.dims[_row_dim(shape)]
    ids = {id(m) for m in members}
    g = Group(list(members), rows)
    scratch = 0
    for m in members:
        inside = m is not comp.root and m.users and all(id(u) in ids for u in m.users)
        size = _row_bytes(m.shape, rows)
        if inside and scratch + size <= SCRATCH_BYTES:
            g.internal.add(id(m))
            scratch += size
    g.hosts = row_hosts.plan(g.members, g.internal)
    work = sum(kernel_work(m) for m in members)
    g.nwg = 1 if work < parallel.MIN_WORK else max(1, min(rows, parallel.MAX_GROUPS, work // parallel.CHUNK))
    return g


# -- emission

def emit(em, group: Group) -> ir.Function:
    """In computation emitter `em`: the group's kernel, over the work-group runtime
    (returned)."""
    from .profile import Site
    ids = {id(m) for m in group.members}
    ins, seen = [], set()
    for m in group.members:
        for o in m.operands:
            if id(o) not in ids:
                for buf in em.leaves(o):
                    if id(buf) not in seen:
                        seen.add(id(buf))
                        ins.append(buf)
    outs = [em.leaves(m)[0] for m in group.members if id(m) not in group.internal]
    fn = _kernel(em.mcx, group, ins, outs, em.leaves)
    args = em.ptr_array(ins + outs)
    names = ",".join(m.name for m in group.members)
    moved = sum(b.size for b in ins + outs)
    site = Site(f"rows({names})", "row-group", em.comp.name, moved, 0)
    prof = em.mcx.profiler
    with prof.around(em, site) if prof is not None else nullcontext():
        if group.nwg > 1:
            em.b.call(parallel.parallel_function(em.mcx), [fn, args, i64(group.nwg)])
        else:
            em.b.call(fn, [args, i64(0), i64(1)])
    return fn


def _kernel(mcx, group: Group, ins, outs, leaves) -> ir.Function:
    first = group.members[0]
    fn = ir.Function(mcx.module, KERNEL_TYPE, name=mcx.unique(f"{first.name}.rows"))
    fn.args[0].name, fn.args[1].name, fn.args[2].name = "args", "wg", "nwg"
    fn.attributes.add("noinline")
    fn.attributes.add("nounwind")
    kb = KernelBuilder(mcx, fn)
    b = kb.b
    args, wg, nwg = fn.args
    ptr_of = {}
    for k, buf in enumerate(ins + outs):
        ptr_of[id(buf)] = ptr_arg(b, args, k, name=f"a{k}")
    rows = group.rows
    members = {id(m) for m in group.members}
    scratch = {}
    for m in group.members:
        if id(m) in group.internal and id(m) not in group.hosts:
            n = max(_row_bytes(m.shape, rows), 1)
            scratch[id(m)] = _alloca(kb, n, f"{m.name}.row")
    lo = b.udiv(b.mul(i64(rows), wg), nwg, name="wg.lo")
    hi = b.udiv(b.mul(i64(rows), b.add(wg, i64(1))), nwg, name="wg.hi")
    envs = []                      # kept alive: generators are memoised by id(env)
    absorbed = {k + 1 for k, m in enumerate(group.members[:-1])
                if mcx.options.xla and _row_sum_of(group.members[k + 1], m, rows)}
    kb.lanes = lanes = row_vector.plan(group, mcx, bool(absorbed))
    group.vector = lanes is not None
    ahead, ahead_k = _ahead(kb, group, ptr_of, leaves, absorbed)
    cold = set()                   # ids of the blocks of the exact loops (redone rows)
    with for_range(b, lo, hi, name="row") as r:
        if ahead:
            ahead.begin_row(r, lo)
        for mid, h in group.hosts.items():       # row r of the host's buffer
            per_row = h.shape.size // rows
            scratch[mid] = b.gep(ptr_of[id(leaves(h)[0])], [b.mul(r, i64(per_row), flags=("nsw", "nuw"))],
                                 source_etype=storage_type(h.shape.dtype), inbounds=True)
        again = {}      # id(host) -> (block where its hosted member's loop starts, pass flag)
        for k, m in enumerate(group.members):
            if k in absorbed:
                continue
            if id(m) in group.hosts:
                again[id(group.hosts[id(m)])] = row_hosts.second_pass(kb, m)
            kb.cache.clear()
            readers = []
            for o in m.operands:
                for s, buf in zip(o.shape.leaves(), leaves(o)):
                    if id(o) in scratch:
                        readers.append(row_vector.row_reader(kb, s, scratch[id(o)], r, rows))
                    else:
                        readers.append(reader(lambda: kb, s, (lambda p=ptr_of[id(buf)]: p)))
            if id(m) in scratch:
                target = (scratch[id(m)], True)
            else:
                target = (ptr_of[id(leaves(m)[0])], False)
            fast = RowDivide(kb, r, members) if mcx.options.xla and FAST_DIVIDE and candidate(m) else None
            total = None
            if k + 1 in absorbed:          # the next member, this row's sum, in the same loop
                s_inst = group.members[k + 1]
                init = reader(lambda: kb, s_inst.operands[1].shape,
                              (lambda p=ptr_of[id(leaves(s_inst.operands[1])[0])]: p))
                total = row_vector.RowSum(kb, init(Index(b, s_inst.operands[1].shape, multi=[])), lanes)

            def row_loop(exact: bool):
                """m's row loop: with the row divide (returned if its fast form was used)
                or, `exact`, with true divisions (the row sum beside it started again)."""
                if exact:
                    kb.cache.clear()
                    if total is not None:
                        total.reset()
                kb.row_divide = None if exact else fast
                kb.bounds = Bounds(m) if mcx.options.xla else None
                gen = ahead.current if ahead and k == 0 else _generator(kb, m, readers, envs)
                beside = ahead.add if ahead and k == ahead_k else None
                if beside and id(m) in scratch and id(m) not in group.hosts:
                    beside = lambda index, stored=None: ahead.add(index)  # noqa: E731  (row on the stack)
                if beside:
                    ahead.start(r, hi)
                start = len(fn.blocks)
                scalar = exact and COLD_SCALAR and total is None
                _row_loop(kb, m.shape, rows, r, gen, target, total, beside, None if scalar else lanes)
                if beside:
                    ahead.end()
                if exact and COLD_SCALAR:
                    cold.update(id(blk) for blk in fn.blocks[start:])
                rd, kb.row_divide = kb.row_divide, None
                kb.bounds = None
                return rd if rd is not None and rd.used else None
            if id(m) in again and fast is not None:
                row_hosts.divide_after_second_pass(kb, row_loop, *again[id(m)])
            else:
                rd = row_loop(False)
                if rd is not None:          # a quotient outside the proven range
                    with b.if_then(rd.redo(kb)):
                        row_loop(True)
            if total is not None:
                s_ptr = scratch[id(s_inst)] if id(s_inst) in scratch else \
                    b.gep(ptr_of[id(leaves(s_inst)[0])], [r], source_etype=storage_type(s_inst.shape.dtype))
                store_elem(b, s_inst.shape.dtype, total.value(), s_ptr)
    b.ret_void()
    kb.lanes = None
    # The group's buffers never overlap where one is written (_hazard; buffers: donation
    # placed only where no member reads the parameter, out= and AOT results checked).
    distinct = {id(p) for p in ptr_of.values()} if PARALLEL_ACCESSES else None
    hint_loops(fn, lambda loop: row_loop_hints.hints(loop, distinct, cold))
    return fn


def _row_sum_of(s, m, rows: int) -> bool:
    """Member `s` is the f32/f64 add-reduction of the whole row of the member `m` just
    before it (softmax's sum(e)): in xla-cpu numerics it is accumulated in m's loop (one
    pass over the row fewer; the order of the additions is then LLVM's, as any
    reassociated reduction's)."""
    from ..interp.lanes import binary_root
    if s.opcode != "reduce" or len(s.operands) != 2 or s.operands[0] is not m \
            or s.shape.is_tuple or s.shape.size != rows or m.shape.rank != 2:
        return False
    dt = s.shape.dtype
    return (binary_root(s.attrs["to_apply"]) == "add" and dt.name in ("f32", "f64")
            and m.shape.dtype == dt and s.operands[1].shape.dtype == dt
            and sorted(s.attrs["dimensions"]) == [d for d in range(2) if d != _row_dim(m.shape)])


def _alloca(kb, n: int, name: str):
    b = kb.b
    with at_entry(b, kb.fn):
        a = b.alloca(ir.ArrayType(I8, n), name=name)
        a.align = 64
        return opaque(b, a)


def _generator(kb, inst, readers, envs):
    if inst.opcode == "fusion":
        comp = inst.attrs["calls"]
        env = _fusion_env(kb, inst, comp, readers)
        envs.append(env)
        return kb.generator(comp.root, env)
    fn = emitter_of(inst.opdef).fn
    return lambda index: fn(kb, inst, readers, index)


def _row_loop(kb, shape, rows, r, gen, target, total=None, beside=None, lanes=None, lo=0):
    """Row r of `shape`: gen at each position (physical order, the minor dimension from
    `lo`), stored into the buffer (row r of it) or the row scratch; each value also added
    to `total` (row_vector.RowSum), each position passed to `beside`. With `lanes` (2-D
    shapes): in vectors, hloc.backend.row_vector."""
    if lanes is not None and shape.rank == 2:
        return row_vector.row_loop(kb, shape, rows, r, gen, target, lambda nv: _row_loop(
            kb, shape, rows, r, gen, target, total, beside, lo=nv), total, beside)
    b = kb.b
    order = list(reversed(minor_to_major(shape)))      # major to minor; order[0]: the rows
    per_row = shape.size // rows
    ptr, in_scratch = target
    base = b.mul(r, i64(per_row), flags=("nsw", "nuw"))
    stack, ivs, inner = [], {order[0]: r}, None
    for d in order[1:]:
        cm = for_range(b, lo if d == order[-1] else 0, shape.dims[d], name=f"c{d}")
        iv = cm.__enter__()
        stack.append(cm)
        ivs[d] = iv
        inner = iv if inner is None else b.add(b.mul(inner, i64(shape.dims[d]), flags=("nsw", "nuw")), iv,
                                               flags=("nsw", "nuw"))
    inner = inner if inner is not None else i64(0)
    lin = b.add(base, inner, flags=("nsw", "nuw"))
    index = Index(b, shape, multi=[ivs[d] for d in range(shape.rank)], linear=lin)
    v = gen(index)
    p = b.gep(ptr, [inner if in_scratch else lin], source_etype=storage_type(shape.dtype), inbounds=True)
    store_elem(b, shape.dtype, v, p)
    if total is not None:
        total.add(v)
    if beside is not None:
        beside(index)
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def _ahead(kb, group, ptr_of, leaves, absorbed):
    """hloc.backend.row_ahead's carried first member and the member whose loop computes
    it for the next row, or (None, None) where the group does not take it."""
    k = row_ahead.plan(group, kb.mcx.options, absorbed)
    if k is None:
        return None, None
    m0 = group.members[0]
    x, init = (reader(lambda: kb, o.shape, (lambda p=ptr_of[id(leaves(o)[0])]: p)) for o in m0.operands)
    return row_ahead.Ahead(kb, m0, x, init, ptr_of[id(leaves(m0.operands[0])[0])]), k
