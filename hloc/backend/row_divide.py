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
"""
from __future__ import annotations

from llvmlite import ir

from .types import F32, I1, I32

D_LO, D_HI = 1.0, 2.0 ** 32
A_MIN_BITS = 0x12800000              # 2^-90
_NORMAL_BITS, _INF_BITS = 0x00800000, 0x7F800000


class RowDivide:
    """Per row and member: over the row's loop, the least of |a|'s bits less 2^-126's
    (wrapping: zero and subnormals count as large) and the largest of |a|'s bits (two
    integer min/max reductions, one instruction per vector each), whether every d was in
    range, and whether any divide used the fast form (else none of it is read)."""

    def __init__(self, kb, row, members):
        self.row = row
        self.members = members          # ids of group members: read per element, not invariant
        self.used = False
        b = kb.b
        self.lo = kb.alloca_entry(I32, name="rowdiv.lo")
        self.hi = kb.alloca_entry(I32, name="rowdiv.hi")
        self.d_ok = kb.alloca_entry(I1, name="rowdiv.dok")
        b.store(ir.Constant(I32, 0xFFFFFFFF), self.lo)
        b.store(ir.Constant(I32, 0), self.hi)
        b.store(ir.Constant(I1, 1), self.d_ok)

    def applies(self, inst, index) -> bool:
        """`inst` (a divide generated at `index`) is f32 / f32 by a broadcast inside a
        fusion that reads only at this row (so y = 1/d is hoisted out of the row's loop)."""
        div = inst.operands[1]
        if inst.shape.dtype.name != "f32" or any(o.shape.dtype.name != "f32" for o in inst.operands) \
                or div.opcode != "broadcast" or id(div) in self.members:
            return False
        multi = index.multi
        return all(multi[d] is self.row for d in div.attrs["dimensions"])

    def divide(self, kb, inst, a, d):
        """a / d for divide `inst`. Where a's sign bit is known clear (or a is a NaN:
        hloc.backend.bounds, softmax's e) the quotient's sign needs no copysign and |a|
        is a's bits: a NaN of either sign is above the range and sends the row to the
        exact loop, as does any a outside it."""
        self.used = True
        clear = kb.bounds is not None and kb.bounds.sign_clear(inst.operands[0])
        b = kb.b
        c = lambda v: ir.Constant(F32, v)  # noqa: E731
        fma = kb.mcx.intrinsic("llvm.fma.f32", F32, [F32, F32, F32])
        y = b.fdiv(c(1.0), d)
        q = b.fmul(a, y)
        e = b.call(fma, [b.fneg(q), d, a])
        q1 = b.call(fma, [e, y, q])
        out = q1 if clear else b.call(kb.mcx.intrinsic("llvm.copysign.f32", F32, [F32, F32]), [q1, q])
        d_ok = b.and_(b.fcmp_ordered(">=", d, c(D_LO)), b.fcmp_ordered("<=", d, c(D_HI)))
        b.store(b.and_(b.load(self.d_ok, typ=I1), d_ok), self.d_ok)
        u = b.bitcast(a, I32)
        if not clear:
            u = b.and_(u, ir.Constant(I32, 0x7FFFFFFF))
        w = b.sub(u, ir.Constant(I32, _NORMAL_BITS))
        umin = kb.mcx.intrinsic("llvm.umin.i32", I32, [I32, I32])
        umax = kb.mcx.intrinsic("llvm.umax.i32", I32, [I32, I32])
        b.store(b.call(umin, [b.load(self.lo, typ=I32), w]), self.lo)
        b.store(b.call(umax, [b.load(self.hi, typ=I32), u]), self.hi)
        return out

    def redo(self, kb) -> ir.Value:
        """After the row's loop: whether the row must be computed again exactly (a d out
        of range, a normal |a| below 2^-90, an infinity or a NaN)."""
        b = kb.b
        ok = b.and_(b.load(self.d_ok, typ=I1), b.and_(
            b.icmp_unsigned(">=", b.load(self.lo, typ=I32), ir.Constant(I32, A_MIN_BITS - _NORMAL_BITS)),
            b.icmp_unsigned("<", b.load(self.hi, typ=I32), ir.Constant(I32, _INF_BITS))))
        return b.xor(ok, ir.Constant(I1, 1))
