"""f32 division by a divisor that is the same along a row, without a divide per element
(xla-cpu numerics, in row groups: softmax's e / sum(e)).

With d fixed, y = 1/d is one true division per row, and each quotient is Markstein's
correction of a*y:

    q = a*y;  e = fma(-q, d, a) (exact);  q' = copysign(fma(e, y, q), q)

which equals the correctly rounded a/d (the copysign keeps the sign of a zero quotient
whatever sign fma gives an exact zero). That equality is claimed only where it was
checked, in XLA:CPU's FTZ/DAZ mode (hloc.backend.jit): 1 <= d <= 2^32 and |a| either
below 2^-126 (zero, or subnormal and so read as zero) or in [2^-90, inf): the quotient
stays normal, nothing overflows, and a remainder small enough to be flushed to zero
belongs to a quotient that needed no correction.
tools/prove_row_divide.c compares this against true division on ~10^9 pairs (every
divisor significand at exponents across the range, structured and random numerators,
the edges) with 0 differences, and finds differences at once outside the range.

After a row's loop, when a d or an a was outside the range, the row group
(hloc.backend.row_groups) computes the row again with true divisions. So the bits are
always those of fdiv.

The range of a is checked on its bits u (|a|'s where its sign may be set): the least of
u - 2^-126's bits (wrapping: zero and subnormals count as large) must be at least
2^-90's less 2^-126's, and the largest u below inf's bits (a finite; a NaN of either
sign, or a negative a where a's bits are taken whole, fails). Where d is the sum of a
(hloc.backend.bounds `sums`: softmax's e / sum(e)) the second check is left out: any a
that fails it is an infinity or a NaN, which makes d an infinity or a NaN, outside
[1, 2^32], so d's check sends the row to the exact loop all the same. The decisions to
redo a row are the same with and without it (tests/test_backend_rows.py), at one
vector instruction in three fewer per register of quotients. The first check stays as
it is: zero must pass (softmax's masked rows of -inf make e = 0), so the bits that pass,
[0, 2^-126) and [2^-90, inf), are two intervals with failing ones on both sides of each
(also around the circle of i32 values): no single min or max tells them apart, one
wrapping subtract then one min does.
"""
from __future__ import annotations

from llvmlite import ir

from .row_vector import const, hoisted, pairwise, splat, split, suffix
from .types import F32, I1, I32

D_LO, D_HI = 1.0, 2.0 ** 32
A_MIN_BITS = 0x12800000              # 2^-90
_NORMAL_BITS, _INF_BITS = 0x00800000, 0x7F800000
SUM_BOUND = True        # off: a < inf checked also where d is a's sum (A/B, tests)


def candidate(member) -> bool:
    """Whether group member `member` (an op or a fusion, nested ones included) has an f32
    divide by a broadcast, which RowDivide.applies may take: only such a member's loop
    gets a RowDivide, and so the loop shape for it (hloc.backend.row_vector.row_loop)."""
    stack = [member]
    while stack:
        i = stack.pop()
        if i.opcode == "fusion":
            stack.extend(i.attrs["calls"].instructions)
        elif f32_by_broadcast(i):
            return True
    return False


def f32_by_broadcast(inst) -> bool:
    """`inst` is an f32 / f32 divide whose divisor is a broadcast: the form RowDivide
    takes (where the broadcast also reads only at the row: RowDivide.applies)."""
    return inst.opcode == "divide" and inst.shape.dtype.name == "f32" \
        and all(o.shape.dtype.name == "f32" for o in inst.operands) and inst.operands[1].opcode == "broadcast"


class RowDivide:
    """Per row and member: over the row's loop, the least of u's bits less 2^-126's and
    (where a check of a < inf is needed, module docstring) the largest u (integer
    min/max reductions, one instruction per vector each), whether every d was in range,
    and whether any divide used the fast form (else none of it is read). In a vector row
    group (kb.lanes, hloc.backend.row_vector) the divides take vectors: 1/d and d's
    range once per row, before the loop; the min/max in vectors of kb.lanes (of an
    epilogue's width in its loop), reduced across lanes only after the loop (redo)."""

    def __init__(self, kb, row, members):
        self.row = row
        self.members = members          # ids of group members: read per element, not invariant
        self.used = False
        self.check_hi = False           # some divide's a < inf is checked (not `sums`)
        self.lanes = kb.lanes
        b = kb.b
        self.lo = kb.alloca_entry(I32, name="rowdiv.lo")
        self.hi = kb.alloca_entry(I32, name="rowdiv.hi")
        self.d_ok = kb.alloca_entry(I1, name="rowdiv.dok")
        b.store(ir.Constant(I32, 0xFFFFFFFF), self.lo)
        b.store(ir.Constant(I32, 0), self.hi)
        b.store(ir.Constant(I1, 1), self.d_ok)
        # With lanes: width -> the (lo, hi) accumulators of vectors of that width, one
        # register's and (made where first used, before its loop) an epilogue's narrower
        # one (row_vector.along_row); a wider vector (a loop of several registers) is
        # folded into a register's lane by lane: no horizontal reduction inside a loop
        self.vacc = {}
        if self.lanes is not None:
            self._vacc(kb, self.lanes)

    def _vacc(self, kb, w: int):
        if w not in self.vacc:
            b = kb.b
            it = ir.VectorType(I32, w)
            lo = kb.alloca_entry(it, name="rowdiv.vlo")
            hi = kb.alloca_entry(it, name="rowdiv.vhi")
            hoisted(kb, lambda: (b.store(const(it, 0xFFFFFFFF), lo), b.store(const(it, 0), hi)))
            self.vacc[w] = (lo, hi)
        return self.vacc[w]

    def applies(self, inst, index) -> bool:
        """`inst` (a divide generated at `index`) is f32 / f32 by a broadcast inside a
        fusion that reads only at this row (so y = 1/d is hoisted out of the row's loop)."""
        div = inst.operands[1]
        if not f32_by_broadcast(inst) or id(div) in self.members:
            return False
        multi = index.multi
        return all(multi[d] is self.row for d in div.attrs["dimensions"])

    def divide(self, kb, inst, a, d):
        """a / d for divide `inst`. Where a's sign bit is known clear (or a is a NaN:
        hloc.backend.bounds, softmax's e) the quotient's sign needs no copysign and |a|
        is a's bits. An a outside the range sends the row to the exact loop: a too small
        one through the least u; an infinity or a NaN of either sign through the largest
        u or, where d is a's sum (SUM_BOUND: no such check), through d's range, d then
        being an infinity or a NaN itself (module docstring)."""
        self.used = True
        bounds = kb.bounds
        clear = bounds is not None and bounds.sign_clear(inst.operands[0])
        hi_check = not (SUM_BOUND and bounds is not None and bounds.sums(inst.operands[1], inst.operands[0]))
        self.check_hi |= hi_check
        b = kb.b
        t = a.type
        vec = isinstance(t, ir.VectorType)
        if vec:         # d is the same along the row: 1/d and its range once, before the loop
            d0 = hoisted(kb, lambda: b.extract_element(d, ir.Constant(I32, 0)))
            y = hoisted(kb, lambda: splat(b, b.fdiv(ir.Constant(F32, 1.0), d0), t.count))
            hoisted(kb, lambda: self._check_d(b, d0))
        else:
            y = b.fdiv(ir.Constant(F32, 1.0), d)
            self._check_d(b, d)
        # a's range first: its last use is then the remainder's fma, which code
        # generation can overwrite in place (else it copies d or a every register)
        it = ir.VectorType(I32, t.count) if vec else I32
        u = b.bitcast(a, it)
        if not clear:
            u = b.and_(u, const(it, 0x7FFFFFFF))
        w = b.sub(u, const(it, _NORMAL_BITS))
        if vec and t.count > self.lanes:        # several registers: folded into one's lanes
            w = _fold(kb, "umin", split(b, w, self.lanes))
            u = _fold(kb, "umax", split(b, u, self.lanes)) if hi_check else None
            it = w.type
        lo, hi = self._vacc(kb, it.count) if vec else (self.lo, self.hi)
        b.store(_minmax(kb, "umin", b.load(lo, typ=it), w), lo)
        if hi_check:
            b.store(_minmax(kb, "umax", b.load(hi, typ=it), u), hi)
        fma = kb.mcx.intrinsic(f"llvm.fma.{suffix(t)}", t, [t, t, t])
        q = b.fmul(a, y)
        e = b.call(fma, [b.fneg(q), d, a])
        q1 = b.call(fma, [e, y, q])
        if not clear:
            q1 = b.call(kb.mcx.intrinsic(f"llvm.copysign.{suffix(t)}", t, [t, t]), [q1, q])
        return q1

    def _check_d(self, b, d):
        c = lambda v: ir.Constant(F32, v)  # noqa: E731
        d_ok = b.and_(b.fcmp_ordered(">=", d, c(D_LO)), b.fcmp_ordered("<=", d, c(D_HI)))
        b.store(b.and_(b.load(self.d_ok, typ=I1), d_ok), self.d_ok)

    def redo(self, kb) -> ir.Value:
        """After the row's loop: whether the row must be computed again exactly (a d out
        of range, a normal |a| below 2^-90, an infinity or a NaN)."""
        b = kb.b
        lo, hi = b.load(self.lo, typ=I32), b.load(self.hi, typ=I32)
        for w, (vlo, vhi) in self.vacc.items():     # the vector loops' lanes folded in
            it = ir.VectorType(I32, w)
            lo = _minmax(kb, "umin", lo, _reduce(kb, "umin", b.load(vlo, typ=it)))
            if self.check_hi:
                hi = _minmax(kb, "umax", hi, _reduce(kb, "umax", b.load(vhi, typ=it)))
        d_ok = b.load(self.d_ok, typ=I1)
        a_ok = b.icmp_unsigned(">=", lo, ir.Constant(I32, A_MIN_BITS - _NORMAL_BITS))
        if self.check_hi:
            a_ok = b.and_(a_ok, b.icmp_unsigned("<", hi, ir.Constant(I32, _INF_BITS)))
        ok = b.and_(d_ok, a_ok)
        return b.xor(ok, ir.Constant(I1, 1))


def _minmax(kb, name: str, a, x):
    """llvm.umin/umax of two i32s or i32 vectors."""
    t = a.type
    return kb.b.call(kb.mcx.intrinsic(f"llvm.{name}.{suffix(t)}", t, [t, t]), [a, x])


def _fold(kb, name: str, parts):
    """The vectors `parts` folded lane by lane with umin/umax, pairwise (as Extremum.add)."""
    while len(parts) > 1:
        parts = pairwise(parts, lambda a, x: _minmax(kb, name, a, x))
    return parts[0]


def _reduce(kb, name: str, v):
    """llvm.vector.reduce.umin/umax of the i32 vector v."""
    return kb.b.call(kb.mcx.intrinsic(f"llvm.vector.reduce.{name}.{suffix(v.type)}", I32, [v.type]), [v])
