"""sort as a kernel emitter: the interpreter's (HloEvaluator's) stable merge sort, compiled.

Every row along the sort dimension is read from the operands into a contiguous scratch row, sorted there
by a recursive function `sortrec(bufs, lo, n)` emitted once per sort kernel with the
comparator inlined, and copied back into the outputs (any layout, any sort dimension,
variadic operands permuted together). `sortrec` is HloEvaluator's algorithm exactly —
top-down halves (`n // 2` on the left, the right half sorted first), binary insertion
below 9 elements, merge taking the right element only when it is strictly less — so
the compiled order is the interpreter's bit for bit even for comparators that are no
strict weak order (a FLOAT compare meeting NaN). O(n log n) comparisons, recursion
depth log2(n). Rows are split over the kernel's work groups (wg of nwg: rows
[R*wg/nwg, R*(wg+1)/nwg)), so the runtime may sort them on several threads.

Scratch is one `malloc` per kernel call (two rows of every operand), freed before the
kernel returns. If it cannot be allocated, rows are sorted in place in the outputs by a
stable insertion sort (O(n^2), the same order for every strict weak order).
"""
from __future__ import annotations

from llvmlite import ir

from .loops import Index, for_range, i64
from .registry import emits_kernel
from .types import I64, PTR, VOID, load_elem, storage_type, store_elem

_ALIGN = 16
_SMALL = 9          # HloEvaluator: binary insertion below 9 elements


def _nbytes(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width // 8
    if isinstance(ty, ir.HalfType):
        return 2
    if isinstance(ty, ir.FloatType):
        return 4
    if isinstance(ty, ir.DoubleType):
        return 8
    if isinstance(ty, ir.ArrayType):
        return ty.count * _nbytes(ty.element)
    raise TypeError(f"no byte size for {ty}")


def _less(kb, comp, args: list, keep: list):
    """comp(args) (i1), the comparator inlined at the builder's position. The env dict is
    kept alive in `keep` (the kernel's generator memo is keyed by its id)."""
    env = {i: (lambda index, _v=v: _v) for i, v in enumerate(args)}
    keep.append(env)
    root = comp.root
    return kb.generator(root, env)(Index(kb.b, root.shape, multi=[]))


class _Rows:
    """The k scratch rows A (data) and B (merge target) of `sortrec`, contiguous."""

    def __init__(self, b, bufs, dts):
        self.b, self.dts = b, dts
        k = len(dts)
        self.a = [b.load(b.gep(bufs, [i64(2 * j)], source_etype=PTR, inbounds=True), typ=PTR)
                  for j in range(k)]
        self.bb = [b.load(b.gep(bufs, [i64(2 * j + 1)], source_etype=PTR, inbounds=True), typ=PTR)
                   for j in range(k)]

    def at(self, which, j, pos):
        return self.b.gep(which[j], [pos], source_etype=storage_type(self.dts[j]), inbounds=True)

    def load(self, which, pos):
        return [load_elem(self.b, dt, self.at(which, j, pos)) for j, dt in enumerate(self.dts)]

    def store(self, which, pos, vals):
        for j, (dt, v) in enumerate(zip(self.dts, vals)):
            store_elem(self.b, dt, v, self.at(which, j, pos))


def _keep(kb) -> list:
    """A list living as long as the kernel builder (holds _less's env dicts)."""
    if not hasattr(kb, "_sort_envs"):
        kb._sort_envs = []
    return kb._sort_envs


def _pairs(xs, ys):
    out = []
    for x, y in zip(xs, ys):
        out += [x, y]
    return out


def _var(kb, init, name):
    slot = kb.alloca_entry(I64, name=name)
    kb.b.store(init, slot)
    return slot


def _sortrec(kb_cls, mcx, comp, dts) -> ir.Function:
    """`void sortrec(ptr bufs, i64 lo, i64 n)`: sorts A[lo, lo+n) (bufs = A0, B0, A1, B1...)."""
    fn = ir.Function(mcx.module, ir.FunctionType(VOID, [PTR, I64, I64]), name=mcx.unique("sortrec"))
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    kb = kb_cls(mcx, fn)
    b = kb.b
    bufs, lo, n = fn.args
    keep = _keep(kb)
    rows = _Rows(b, bufs, dts)
    small = b.icmp_signed("<", n, i64(_SMALL))
    with b.if_else(small) as (then, otherwise):
        with then:
            _binary_insertion(kb, comp, rows, lo, n, keep)
        with otherwise:
            half = b.lshr(n, i64(1))
            mid = b.add(lo, half)
            b.call(fn, [bufs, mid, b.sub(n, half)])
            b.call(fn, [bufs, lo, half])
            _merge(kb, comp, rows, lo, mid, b.add(lo, n), keep)
    b.ret_void()
    return fn


def _while(kb, cond_fn, name):
    """`while (cond_fn()) { body }` as a context manager yielding nothing."""
    b = kb.b
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(cond_fn(), body, end)
    b.position_at_end(body)
    return head, end


def _binary_insertion(kb, comp, rows, lo, n, keep):
    b = kb.b
    with for_range(b, 1, n, name="ins") as t:
        pos = b.add(lo, t)
        needle = rows.load(rows.a, pos)
        first = _var(kb, lo, "bs.lo")
        length = _var(kb, t, "bs.len")
        head, end = _while(kb, lambda: b.icmp_signed(">", b.load(length, typ=I64), i64(0)), "bs")
        ln = b.load(length, typ=I64)
        f = b.load(first, typ=I64)
        h = b.lshr(ln, i64(1))
        mid = b.add(f, h)
        less = _less(kb, comp, _pairs(needle, rows.load(rows.a, mid)), keep)
        b.store(b.select(less, h, b.sub(ln, b.add(h, i64(1)))), length)
        b.store(b.select(less, f, b.add(mid, i64(1))), first)
        b.branch(head)
        b.position_at_end(end)
        dest = b.load(first, typ=I64)
        # shift A[dest, pos) right by one, then A[dest] = needle
        with for_range(b, 0, b.sub(pos, dest), name="shift") as s:
            q = b.sub(pos, s)
            rows.store(rows.a, q, rows.load(rows.a, b.sub(q, i64(1))))
        rows.store(rows.a, dest, needle)


def _merge(kb, comp, rows, lo, mid, hi, keep):
    """Merge A[lo, mid) and A[mid, hi) through B (ties: the left element first)."""
    b = kb.b
    i = _var(kb, lo, "m.i")
    j = _var(kb, mid, "m.j")
    o = _var(kb, lo, "m.o")

    def both():
        return b.and_(b.icmp_signed("<", b.load(i, typ=I64), mid),
                      b.icmp_signed("<", b.load(j, typ=I64), hi))
    head, end = _while(kb, both, "merge")
    iv, jv, ov = b.load(i, typ=I64), b.load(j, typ=I64), b.load(o, typ=I64)
    left, right = rows.load(rows.a, iv), rows.load(rows.a, jv)
    take_right = _less(kb, comp, _pairs(right, left), keep)
    rows.store(rows.bb, ov, [b.select(take_right, r, l_) if not hasattr(r, "re") else
                             type(r)(b.select(take_right, r.re, l_.re), b.select(take_right, r.im, l_.im))
                             for r, l_ in zip(right, left)])
    b.store(b.select(take_right, iv, b.add(iv, i64(1))), i)
    b.store(b.select(take_right, b.add(jv, i64(1)), jv), j)
    b.store(b.add(ov, i64(1)), o)
    b.branch(head)
    b.position_at_end(end)
    # the rest of the left run goes to B; the rest of the right run is already in place
    iv, ov = b.load(i, typ=I64), b.load(o, typ=I64)
    with for_range(b, 0, b.sub(mid, iv), name="mrest") as t:
        rows.store(rows.bb, b.add(ov, t), rows.load(rows.a, b.add(iv, t)))
    stop = b.add(ov, b.sub(mid, iv))
    with for_range(b, lo, stop, name="mback") as t:
        rows.store(rows.a, t, rows.load(rows.bb, t))


@emits_kernel("sort")
def _emit_sort(kb, inst, ops, outputs):
    b = kb.b
    shape = outputs[0][1]
    if shape.size == 0:
        return
    dim = inst.attrs["dimensions"][0]
    n = shape.dims[dim]
    comp = inst.attrs["to_apply"]
    dts = [s.dtype for _, s in outputs]
    in_shapes = [o.shape for o in inst.operands]

    def read(ptrs, t):
        """The operands' elements at position t of the row (as compute values)."""
        return [gen(Index(b, s, multi=[t if d == dim else iv for d, iv in enumerate(ptrs.ivs)]))
                for gen, s in zip(ops, in_shapes)]

    def copy_row(ptrs):
        with for_range(b, 0, n, name="rcp") as t:
            for (p, s), v in zip(ptrs(t), read(ptrs, t)):
                store_elem(b, s.dtype, v, p)
    if n < 2:
        _each_row(kb, outputs, dim, copy_row)
        return
    sizes = [(_nbytes(storage_type(dt)) * n + _ALIGN - 1) // _ALIGN * _ALIGN for dt in dts]
    malloc = kb.mcx.libm("malloc", PTR, [I64])
    free = kb.mcx.libm("free", VOID, [PTR])
    base = b.call(malloc, [i64(2 * sum(sizes))], name="sort.scratch")
    failed = b.icmp_unsigned("==", b.ptrtoint(base, I64), i64(0))
    with b.if_else(failed) as (then, otherwise):
        with then:
            def in_place(ptrs):
                copy_row(ptrs)
                _insertion_row(kb, comp, ptrs, n)
            _each_row(kb, outputs, dim, in_place)
        with otherwise:
            bufs = kb.alloca_entry(ir.ArrayType(PTR, 2 * len(dts)), name="sort.bufs")
            off = 0
            for j, sz in enumerate(sizes):
                for w in range(2):
                    p = b.gep(base, [i64(off)], source_etype=ir.IntType(8), inbounds=True)
                    b.store(p, b.gep(bufs, [i64(2 * j + w)], source_etype=PTR, inbounds=True))
                    off += sz
            rec = _sortrec(type(kb), kb.mcx, comp, dts)
            rows = _Rows(b, bufs, dts)

            def one_row(ptrs):
                with for_range(b, 0, n, name="rin") as t:
                    rows.store(rows.a, t, read(ptrs, t))
                b.call(rec, [bufs, i64(0), i64(n)])
                with for_range(b, 0, n, name="rout") as t:
                    for (p, s), v in zip(ptrs(t), rows.load(rows.a, t)):
                        store_elem(b, s.dtype, v, p)
            _each_row(kb, outputs, dim, one_row)
            b.call(free, [base])


# kernels.data_parallel: this kernel honours its work-group arguments (rows split)
_emit_sort.splits_rows = True


def _each_row(kb, outputs, dim, body):
    """body(ptrs) for each row along `dim` of this work group's share of the rows (the
    kernel's wg of nwg); ptrs(pos) -> [(output element pointer, shape)], ptrs.ivs the
    row's multi-index (the sort dimension's entry unused)."""
    b = kb.b
    shape = outputs[0][1]
    others = [d for d in range(shape.rank) if d != dim]
    nrows = 1
    for d in others:
        nrows *= shape.dims[d]
    wg, nwg = kb.fn.args[-2], kb.fn.args[-1]
    lo = b.udiv(b.mul(i64(nrows), wg), nwg, name="rows.lo")
    hi = b.udiv(b.mul(i64(nrows), b.add(wg, i64(1))), nwg, name="rows.hi")
    with for_range(b, lo, hi, name="row") as row:
        ivs, rem = [i64(0)] * shape.rank, row
        for d in reversed(others):
            ivs[d] = b.urem(rem, i64(shape.dims[d]))
            rem = b.udiv(rem, i64(shape.dims[d]))

        def ptrs(pos):
            out = []
            for ptr, s in outputs:
                multi = [pos if d == dim else ivs[d] for d in range(s.rank)]
                out.append((b.gep(ptr, [Index(b, s, multi=multi).linear],
                                  source_etype=storage_type(s.dtype), inbounds=True), s))
            return out
        ptrs.ivs = ivs
        body(ptrs)


def _insertion_row(kb, comp, ptrs, n):
    """Stable in-place insertion sort of one row (the fallback without scratch)."""
    b = kb.b
    keep = _keep(kb)
    with for_range(b, 1, n, name="si") as i:
        jslot = _var(kb, i, "sj")
        head = b.append_basic_block("sort.inner")
        body = b.append_basic_block("sort.swap")
        end = b.append_basic_block("sort.done")
        b.branch(head)
        b.position_at_end(head)
        j = b.load(jslot, typ=I64)
        check = b.append_basic_block("sort.compare")
        b.cbranch(b.icmp_signed(">", j, i64(0)), check, end)
        b.position_at_end(check)
        jm1 = b.sub(j, i64(1))
        pj, pk = ptrs(j), ptrs(jm1)
        vj = [load_elem(b, s.dtype, p) for p, s in pj]
        vk = [load_elem(b, s.dtype, p) for p, s in pk]
        less = _less(kb, comp, _pairs(vj, vk), keep)
        b.cbranch(less, body, end)
        b.position_at_end(body)
        for (p1, s), (p2, _), x, y in zip(pj, pk, vj, vk):
            store_elem(b, s.dtype, y, p1)
            store_elem(b, s.dtype, x, p2)
        b.store(jm1, jslot)
        b.branch(head)
        b.position_at_end(end)
