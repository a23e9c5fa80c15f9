"""What is known of a fused value's range, for emitters that then skip work that cannot
change the result: exp's clamp from above (hloc.backend.vmath) and the row divide's sign
handling (hloc.backend.row_divide). The bits are those of the full code.

Two facts, each "or a NaN", on the floating-point values a kernel (hloc.backend.kernels)
or a row group's member (hloc.backend.row_groups) computes: a fusion, whose parameters
are followed to the instructions feeding them, or a plain op. Only in xla-cpu numerics
(in ieee exp is glibc's and there is no row divide):
- `sign_clear`: the sign bit is clear. From the registry (SIGN_CLEAR: exp, abs;
  SIGN_CLEAR_OF_OPERANDS: add, multiply, divide, maximum, minimum of such values), through
  broadcasts, reshapes, transposes and copies.
- `at_most_zero`: the value is <= 0. Softmax's x - max(x): a subtract of the broadcast of
  a max reduction of the same array, broadcast back along the kept dimensions (the
  reduction's value, exact in every numerics (hloc.backend.extremum.Extremum), is at
  least each of its elements, whatever its initial value; x <= m makes x - m <= 0 in
  floating point, a NaN where both are infinities of the same sign).
And one fact relating two values:
- `sums(d, a)`: d is the broadcast of an add-reduction of a (softmax's sum(e)) along the
  dimensions the broadcast adds back, both followed out of the member's computation to
  instructions computed once (so the reduction added the very values the member reads
  as a): where any element of a along those dimensions is an infinity or a NaN, d is an
  infinity or a NaN, whatever the order of the additions and the initial value (a
  floating-point sum with such a term is never finite: inf + finite = inf, inf + -inf =
  NaN, NaN + x = NaN; hloc's f32/f64 sums carry no nnan/ninf flags).
"""
from __future__ import annotations

from ..ops.base import SIGN_CLEAR, SIGN_CLEAR_OF_OPERANDS
from .extremum import extremum_reduce

_MOVES = frozenset({"broadcast", "reshape", "transpose", "copy"})   # same values, moved
_DEPTH = 32
ENABLED = True          # off: nothing known (for A/B measurements)


class Bounds:
    """The facts for the instructions of `member`'s fused computation (or `member` itself
    and what feeds it)."""

    def __init__(self, member):
        self.member = member
        self.comp = member.attrs["calls"] if member.opcode == "fusion" else None

    def _source(self, inst, caller):
        """(inst, its fusion) with parameters followed out of `caller`'s computation."""
        while inst.opcode == "parameter" and caller is not None:
            inst, caller = caller.operands[inst.parameter_number], None
        return inst, caller

    def sign_clear(self, inst) -> bool:
        return ENABLED and self._sign_clear(inst, self.member if self.comp is not None else None, 0)

    def _sign_clear(self, inst, caller, depth) -> bool:
        inst, caller = self._source(inst, caller)
        if depth > _DEPTH or inst.shape.is_tuple or inst.shape.dtype.kind != "float":
            return False
        if inst.opcode == "fusion":
            return self._sign_clear(inst.attrs["calls"].root, inst, depth + 1)
        traits = inst.opdef.traits
        if SIGN_CLEAR in traits:
            return True
        if SIGN_CLEAR_OF_OPERANDS in traits or inst.opcode in _MOVES:
            return all(self._sign_clear(o, caller, depth + 1) for o in inst.operands)
        return False

    def sums(self, d, a) -> bool:
        from ..interp.lanes import binary_root
        if not ENABLED:
            return False
        caller = self.member if self.comp is not None else None
        a, inside = self._source(a, caller)
        back = self._reduced_back(d, a, caller)
        if inside is not None or back is None:
            return False
        s, s_inside = back
        return s_inside is None and not s.shape.is_tuple and binary_root(s.attrs["to_apply"]) == "add"

    def at_most_zero(self, inst) -> bool:
        if not ENABLED:
            return False
        caller = self.member if self.comp is not None else None
        inst, caller = self._source(inst, caller)
        if inst.opcode != "subtract" or inst.shape.dtype.kind != "float":
            return False
        a, _ = self._source(inst.operands[0], caller)
        back = self._reduced_back(inst.operands[1], a, caller)
        ext = extremum_reduce(back[0]) if back is not None else None
        return ext is not None and bool(ext[0])

    def _reduced_back(self, bc, a, caller):
        """(m, its fusion or None) where `bc` is a broadcast of m (followed out of
        `caller`), a two-operand reduce of `a` itself, back to a's dims along the
        dimensions m kept (softmax's max(x) and sum(e)); else None."""
        if bc.opcode != "broadcast":
            return None
        m, m_caller = self._source(bc.operands[0], caller)
        if m.opcode != "reduce" or len(m.operands) != 2 or m.operands[0] is not a:
            return None
        kept = [k for k in range(a.shape.rank) if k not in set(m.attrs["dimensions"])]
        if list(bc.attrs["dimensions"]) != kept or bc.shape.dims != a.shape.dims:
            return None
        return m, m_caller
