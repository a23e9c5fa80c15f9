"""Max/min reductions of floats as HLO defines them (llvm.maximum/minimum: NaN if any
element is NaN, +0 > -0), in two loops: a fast one (Extremum: maxnum beside a NaN-detecting
sum, one vmaxps and one vaddps per vector) and the exact one, run only where the fast
result may be wrong. The same bits either way, whatever order the elements come in. In a
vector row group (hloc.backend.row_vector) both loops are explicit vector code. The fast
loop's accumulation also serves a row group's row-ahead max (hloc.backend.row_ahead)."""
from __future__ import annotations

from llvmlite import ir

from . import row_vector
from .loops import Acc, Index, enter_loops, minor_to_major
from .types import I1


def float_extremum(inst):
    """True/False if `inst` reduces one f32/f64 operand with maximum/minimum, else None."""
    from ..interp.lanes import binary_root
    if len(inst.operands) != 2 or inst.shape.is_tuple:
        return None
    op = binary_root(inst.attrs["to_apply"])
    dt = inst.attrs["to_apply"].root.shape.dtype
    if op not in ("maximum", "minimum") or dt.name not in ("f32", "f64") \
            or any(o.shape.dtype != dt for o in inst.operands) or inst.shape.dtype != dt:
        return None
    return op == "maximum"


def row_extremum(inst) -> int | None:
    """The minor dimension of `inst`'s 2-D operand if `inst` is a float max/min along
    it alone (in vector row groups: explicit vectors), else None."""
    if float_extremum(inst) is None or inst.operands[0].shape.rank != 2:
        return None
    minor = minor_to_major(inst.operands[0].shape)[0]
    return minor if list(inst.attrs["dimensions"]) == [minor] else None


def emit_row(kb, inst, ops, index, init, kept, minor):
    """emit's two loops in explicit vectors (hloc.backend.row_vector)."""
    shape0 = inst.operands[0].shape
    greater = float_extremum(inst)
    multi = [None] * shape0.rank
    for k, d in enumerate(kept):
        multi[d] = index.multi[k]
    ext = Extremum(kb, init.type, greater, kb.lanes, shape0.dims[minor])
    row_vector.along_minor(kb, shape0, multi, minor, ops[0], ext, row_vector.SUM_IC)
    return ext.value(init, lambda: _exact_extremum(kb, inst, ops, init, [minor], multi, None, greater))


def emit(kb, inst, ops, index, init, red, kept, split, greater):
    """A max/min reduction as HLO defines it, in two loops (Extremum)."""
    b = kb.b
    shape0 = inst.operands[0].shape
    ext = Extremum(kb, init.type, greater)
    multi = [None] * shape0.rank
    for k, d in enumerate(kept):     # before the loops: the index may compute them lazily
        multi[d] = index.multi[k]
    ivs, stack = {}, []
    enter_loops(kb, shape0, red, split, ivs, stack)
    for d in red:
        multi[d] = ivs[d]
    ext.add(ops[0](Index(b, shape0, multi=list(multi))))
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    return ext.value(init, lambda: _exact_extremum(kb, inst, ops, init, red, multi, split, greater))


class Extremum:
    """The fast loop of a max/min reduction as HLO defines it (llvm.maximum/minimum: NaN if
    any element is NaN, +0 > -0), fed one element at a time by `add` from whatever loop
    visits the elements (the reduce's own, or a row group's loop over another row). It is
    llvm.maxnum/minnum with nnan nsz (one vmaxps per vector) beside the elements' sum (a
    vaddps), which is NaN if an element is NaN (maxnum's result is then poison) and
    possibly when +inf and -inf both occur. Its result is exact unless the sum is NaN or
    the result is a zero (nsz: its sign is unknown); only then does `value` run the
    second, exact loop (llvm.maximum/minimum). The same bits either way, whatever order
    the elements come in."""

    def __init__(self, kb, t, greater, lanes=None, n=None):
        self.kb, self.t, self.greater = kb, t, greater
        self.acc = Acc(kb, self._start(t))
        # With `lanes` (hloc.backend.row_vector), on rows of n: width -> accumulators of
        # vectors, one register's (wider vectors are folded into it first: fewer
        # registers live in a loop that computes beside it) and the epilogue's if the
        # row has one (row_vector.along_row)
        self.lanes = lanes
        self.wide = {}
        if lanes is not None:
            for w in row_vector.widths(lanes, n):
                self.wide[w] = Acc(kb, self._start(ir.VectorType(t, w)))

    def _start(self, t):
        c = row_vector.const
        return [c(t, float("-inf") if self.greater else float("inf")), c(t, 0.0)]

    def reset(self):
        self.acc.set(self._start(self.t))
        for w, a in self.wide.items():
            a.set(self._start(ir.VectorType(self.t, w)))

    def _maxnum(self, a, x):
        t = a.type
        name = f"llvm.{'maxnum' if self.greater else 'minnum'}.{row_vector.suffix(t)}"
        return self.kb.b.call(self.kb.mcx.intrinsic(name, t, [t, t]), [a, x], fastmath=_FAST)

    def add(self, x):
        """Element x, or a vector of them."""
        b = self.kb.b
        t = x.type
        y = x
        if isinstance(t, ir.VectorType) and t.count > self.lanes:
            xs = ys = row_vector.split(b, x, self.lanes)
            while len(xs) > 1:
                xs = row_vector.pairwise(xs, self._maxnum)
                ys = row_vector.pairwise(ys, lambda p, q: b.fadd(p, q, flags=("reassoc",)))
            x, y, t = xs[0], ys[0], xs[0].type
        acc = self.wide[t.count] if isinstance(t, ir.VectorType) else self.acc
        m, flag = acc.get()
        acc.set([self._maxnum(m, x), b.fadd(flag, y, flags=("reassoc",))])

    # along_row's reduction protocol: the accumulators carry on from loop to loop
    def after_main(self):
        pass

    def start_epilogue(self, width):
        pass

    def after_epilogue(self):
        pass

    def _fast(self):
        """The fast loops' max (poison where an element was NaN) and element sum over
        every accumulator."""
        b, t = self.kb.b, self.t
        m, flag = self.acc.get()
        for a in self.wide.values():
            vm, vf = a.get()
            vt = vm.type
            red = f"llvm.vector.reduce.{'fmax' if self.greater else 'fmin'}.{row_vector.suffix(vt)}"
            m = self._maxnum(m, b.call(self.kb.mcx.intrinsic(red, t, [vt]), [vm], fastmath=_FAST))
            add = self.kb.mcx.intrinsic(f"llvm.vector.reduce.fadd.{row_vector.suffix(vt)}", t, [t, vt])
            flag = b.fadd(flag, b.call(add, [ir.Constant(t, -0.0), vf], fastmath=("reassoc",)),
                          flags=("reassoc",))
        return m, flag

    def settle(self):
        """After the loop that fed vectors: they folded into the scalar accumulators (so
        no vector stays live past the loop) and started again."""
        if not self.wide:
            return
        m, flag = self._fast()
        self.acc.set([m, flag])
        for w, a in self.wide.items():
            a.set(self._start(ir.VectorType(self.t, w)))

    def value(self, init, exact, also_exact=None, settled=False):
        """After the elements' loop (`settled`: and settle): the reduction from `init`;
        `exact()` emits the exact loop (in a block taken only when the fast result may be
        wrong, or where the i1 `also_exact` is true) and returns its result."""
        from .elementwise import fmax
        kb, t = self.kb, self.t
        b = kb.b
        m, flag = self.acc.get() if settled else self._fast()
        special = b.fcmp_unordered("uno", flag, flag)
        # select, not or: m is poison when an element was NaN, and then `special` is true
        slow = b.select(special, ir.Constant(I1, 1), b.fcmp_ordered("==", m, ir.Constant(t, 0.0)))
        if also_exact is not None:
            slow = b.select(also_exact, ir.Constant(I1, 1), slow)
        with kb.reassociating():
            fast = fmax(kb, init, m, self.greater)
        fast_end = b.block
        exact_bb = b.append_basic_block("extremum.exact")
        join = b.append_basic_block("extremum.join")
        b.cbranch(slow, exact_bb, join)
        b.position_at_end(exact_bb)
        exact_v = exact()
        exact_end = b.block
        b.branch(join)
        b.position_at_end(join)
        out = b.phi(t)
        out.add_incoming(fast, fast_end)
        out.add_incoming(exact_v, exact_end)
        return out


_FAST = ("nnan", "nsz", "reassoc", "contract")


class _ExactRow:
    """The exact loop of a max/min along a row in vectors (row_vector.along_row's
    reduction): llvm.maximum/minimum lane by lane from `init` in every lane, then
    llvm.vector.reduce.fmaximum/fminimum, then an epilogue's from that value, then the
    positions left one by one, as LLVM's vectoriser makes of the scalar loop (the same
    value in any order; the order is kept for which of several NaNs comes out)."""

    def __init__(self, kb, init, greater):
        self.kb, self.greater, self.t = kb, greater, init.type
        self.slot = kb.alloca_entry(self.t, name="exact")
        self.vslot = kb.alloca_entry(ir.VectorType(self.t, kb.lanes), name="exact.v")
        self.eslot = None
        kb.b.store(init, self.slot)
        kb.b.store(row_vector.splat(kb.b, init, kb.lanes), self.vslot)

    def add(self, x):
        from .elementwise import fmax
        b = self.kb.b
        slot = self.slot
        if isinstance(x.type, ir.VectorType):   # the epilogue's once it has started
            slot = self.vslot if self.eslot is None else self.eslot
        with self.kb.reassociating():
            b.store(fmax(self.kb, b.load(slot, typ=x.type), x, self.greater), slot)

    def _reduce(self, slot, vt):
        kb = self.kb
        name = f"llvm.vector.reduce.{'fmaximum' if self.greater else 'fminimum'}.{row_vector.suffix(vt)}"
        with kb.reassociating():
            v = kb.b.call(kb.mcx.intrinsic(name, self.t, [vt]), [kb.b.load(slot, typ=vt)], fastmath=kb.flags)
        kb.b.store(v, self.slot)

    def after_main(self):
        self._reduce(self.vslot, ir.VectorType(self.t, self.kb.lanes))

    def start_epilogue(self, width):
        b = self.kb.b
        self.et = ir.VectorType(self.t, width)
        self.eslot = self.kb.alloca_entry(self.et, name="exact.e")
        b.store(row_vector.splat(b, self.value(), width), self.eslot)

    def after_epilogue(self):
        self._reduce(self.eslot, self.et)

    def value(self):
        return self.kb.b.load(self.slot, typ=self.t)


def extremum_reduce(inst):
    """(greater, reduced dims major to minor) if `inst` is a reduce that Extremum computes."""
    if inst.opcode != "reduce":
        return None
    greater = float_extremum(inst)
    if greater is None:
        return None
    dims = set(inst.attrs["dimensions"])
    return greater, [d for d in reversed(minor_to_major(inst.operands[0].shape)) if d in dims]


def exact_extremum(kb, inst, ops, init, multi, greater):
    """Reduce `inst`'s exact loop at `multi` (its operand's index with the reduced
    dimensions' entries ignored): the slow path of Extremum.value."""
    _, red = extremum_reduce(inst)
    return _exact_extremum(kb, inst, ops, init, red, list(multi), None, greater)


def _exact_extremum(kb, inst, ops, init, red, multi, split, greater):
    from .elementwise import fmax
    b = kb.b
    shape0 = inst.operands[0].shape
    minor = row_extremum(inst) if split is None and kb.lanes is not None else None
    if minor is not None:       # in vectors: the vectoriser's form of this loop
        acc = _ExactRow(kb, init, greater)
        row_vector.along_minor(kb, shape0, multi, minor, ops[0], acc, 1)
        return acc.value()
    acc2 = Acc(kb, [init])
    ivs, stack = {}, []
    enter_loops(kb, shape0, red, split, ivs, stack)
    for d in red:
        multi[d] = ivs[d]
    x = ops[0](Index(b, shape0, multi=list(multi)))
    with kb.reassociating():
        acc2.set([fmax(kb, acc2.get()[0], x, greater)])
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    return acc2.get()[0]
