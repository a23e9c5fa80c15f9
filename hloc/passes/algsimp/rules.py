"""The algebraic simplifier's rule table and the small predicates its rules share.

A rule is one (pattern, rewrite) pair registered with `@rule(opcode, "A + 0 => A")`;
`RULES[opcode]` lists them in XLA's order (AlgebraicSimplifierVisitor::HandleXxx tries
its rewrites top to bottom and stops at the first that applies). A rule is called as
`fn(inst, ctx)` and returns None when it does not apply, an Instruction to replace
`inst` with (same dimensions and element type), or True when it changed the graph in
place (operand swaps, rewriting a user). `ctx.b` is a Builder inserting before `inst`.
The predicates mirror XLA's: `is_all` (IsAll), `is_nonneg` (IsNonNegative),
dimension bookkeeping (CommonFactors, DimensionsUnmodifiedByReshape,
InsertedOrDeleted1SizedDimensions, ReshapeLeavesDimensionsUnmodified).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ...ir.module import Instruction
from ...ir.shape import ArrayShape
from ..simplify_util import scalar_value


@dataclass(frozen=True)
class Rule:
    opcode: str
    doc: str
    fn: Callable


RULES: dict[str, list[Rule]] = {}


def rule(opcode: str, doc: str):
    """Register `fn` as the next rewrite tried for `opcode`; `doc` is its one-line
    pattern => rewrite."""
    def register(fn):
        RULES.setdefault(opcode, []).append(Rule(opcode, doc, fn))
        return fn
    return register


# ---------------------------------------------------------------------------
# Element-type and shape predicates

def dtype(inst: Instruction):
    return inst.shape.dtype


def is_int(inst: Instruction) -> bool:
    """primitive_util::IsIntegralType (pred excluded)."""
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype.kind in ("int", "uint")


def is_signed_int(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype.kind == "int"


def is_float(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype.kind == "float"


def is_complex(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype.kind == "complex"


def is_pred(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.dtype.kind == "pred"


def same(a: Instruction, b: Instruction) -> bool:
    """SameShape in layout-insensitive mode: ShapeUtil::Compatible."""
    return a.shape.compatible(b.shape)


def is_scalar(inst: Instruction) -> bool:
    return isinstance(inst.shape, ArrayShape) and inst.shape.rank == 0


def is_const(inst: Instruction) -> bool:
    return inst.opcode == "constant"


def is_const_scalar(inst: Instruction) -> bool:
    """m::ConstantScalar(): a rank-0 constant."""
    return inst.opcode == "constant" and is_scalar(inst)


def is_const_effective_scalar(inst: Instruction) -> bool:
    return inst.opcode == "constant" and isinstance(inst.shape, ArrayShape) and \
        inst.shape.size == 1


def bcast_of(inst: Instruction, pred) -> Instruction | None:
    """The operand of `inst` when inst is a broadcast whose operand satisfies pred."""
    if inst.opcode == "broadcast" and pred(inst.operands[0]):
        return inst.operands[0]
    return None


def param_root(comp, opcode: str) -> bool:
    """The computation's root is `opcode(parameter(0), parameter(1))` in either order."""
    root = comp.root
    if root is None or root.opcode != opcode or len(root.operands) != 2:
        return False
    nums = sorted(o.parameter_number if o.opcode == "parameter" else -1
                  for o in root.operands)
    return nums == [0, 1]


def is_power_of_two_fp_constant(inst: Instruction) -> bool:
    """IsAllFpConstantPowerOf2: a scalar float constant (or its broadcast) of +-2^k."""
    c = inst
    if c.opcode == "broadcast":
        c = c.operands[0]
    if not is_const_effective_scalar(c):
        return False
    v = scalar_value(c)
    if v is None or isinstance(v, bool):
        return False
    mantissa, _ = math.frexp(float(v))
    return mantissa in (0.5, -0.5)


_NONNEG_DEPTH = 64


def is_positive(inst: Instruction, depth: int = 0) -> bool:
    """AlgebraicSimplifier's IsPositive."""
    if depth > _NONNEG_DEPTH or any(is_complex(o) for o in inst.operands):
        return False
    op = inst.opcode
    if op == "power":
        return not is_signed_int(inst) and is_positive(inst.operands[0], depth + 1)
    if op in ("abs", "rsqrt", "sqrt"):
        return is_positive(inst.operands[0], depth + 1)
    if op == "multiply":
        return (not is_signed_int(inst) and inst.operands[0] is inst.operands[1]
                and is_positive(inst.operands[0], depth + 1))
    return False


def is_nonneg(inst: Instruction, depth: int = 0) -> bool:
    """AlgebraicSimplifierVisitor::IsNonNegative."""
    if depth > _NONNEG_DEPTH or any(is_complex(o) for o in inst.operands):
        return False
    op = inst.opcode
    if op == "multiply":
        return inst.operands[0] is inst.operands[1] and not is_signed_int(inst)
    if op == "exponential":
        return True
    if op == "iota":
        if not is_signed_int(inst):
            return True
        bits = inst.shape.dtype.bits
        size = inst.shape.dims[inst.attrs["iota_dimension"]]
        return bits >= 64 or size <= (1 << (bits - 1))
    if op == "abs":
        return not is_signed_int(inst) or is_nonneg(inst.operands[0], depth + 1)
    if op == "broadcast":
        return is_nonneg(inst.operands[0], depth + 1)
    if op == "constant":
        if not is_const_effective_scalar(inst) or is_complex(inst):
            return False
        v = scalar_value(inst)
        if v is None:
            return False
        v = float(v)
        return not math.isnan(v) and math.copysign(1.0, v) > 0
    if op == "minimum":
        return all(is_nonneg(o, depth + 1) for o in inst.operands)
    if op == "maximum":
        return any(is_nonneg(o, depth + 1) for o in inst.operands)
    if op == "power":
        return not is_signed_int(inst) and is_nonneg(inst.operands[0], depth + 1)
    if op == "select":
        return is_nonneg(inst.operands[1], depth + 1) and is_nonneg(inst.operands[2],
                                                                     depth + 1)
    return is_positive(inst, depth)


# ---------------------------------------------------------------------------
# Dimension bookkeeping (xla/util.cc, xla/shape_util.cc)

def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def common_factors(a, b) -> list[tuple[int, int]]:
    """CommonFactors: the (i, j) bounds where prefixes of a and b have equal products."""
    a, b = list(a), list(b)
    if a == b:
        return [(i, i) for i in range(len(a) + 1)]
    bounds = []
    i = j = 0
    prior_i = prior_j = -1
    while i < len(a) and j < len(b) and a[i] == b[j]:
        prior_i, prior_j = i, j
        bounds.append((i, j))
        i += 1
        j += 1
    if _prod(a[i:]) != _prod(b[j:]):
        return [(0, 0), (len(a), len(b))]
    if _prod(a[i:]) == 0:
        bounds.append((i, j))
        bounds.append((len(a), len(b)))
        return bounds
    pa = pb = 1
    while True:
        if pa == pb and (i > prior_i or j > prior_j):
            prior_i, prior_j = i, j
            bounds.append((i, j))
            continue
        in_i, in_j = i < len(a), j < len(b)
        if not (in_i or in_j):
            break
        next_a = pa < pb or (in_i and (not in_j or (pa == pb and a[i] <= b[j])))
        next_b = pb < pa or (in_j and (not in_i or (pb == pa and b[j] <= a[i])))
        if next_a:
            pa *= a[i]
            i += 1
        if next_b:
            pb *= b[j]
            j += 1
    return bounds


def dims_unmodified_by_reshape(src, dst) -> list[tuple[int, int]]:
    """ShapeUtil::DimensionsUnmodifiedByReshape: common factors of rank 1."""
    cf = common_factors(src, dst)
    out = []
    for k in range(len(cf) - 1):
        if cf[k + 1][0] - cf[k][0] == 1 and cf[k + 1][1] - cf[k][1] == 1:
            out.append(cf[k])
    return out


def inserted_or_deleted_1sized(src, dst):
    """ShapeUtil::InsertedOrDeleted1SizedDimensions -> (deleted, inserted) or None."""
    src, dst = list(src), list(dst)
    if _prod(src) != _prod(dst):
        return None
    unmodified = dims_unmodified_by_reshape(src, dst)
    deleted, inserted = [], []
    pairs = [(-1, -1)] + unmodified + [(len(src), len(dst))]
    for (pi, pj), (ci, cj) in zip(pairs, pairs[1:]):
        for d in range(pi + 1, ci):
            if src[d] > 1:
                return None
            deleted.append(d)
        for d in range(pj + 1, cj):
            if dst[d] > 1:
                return None
            inserted.append(d)
    return deleted, inserted


def reshape_degenerate(inst: Instruction):
    """ReshapeMerelyInsertsOrDeletes1SizedDimensions for a reshape, else None."""
    if inst.opcode != "reshape":
        return None
    return inserted_or_deleted_1sized(inst.operands[0].shape.dims, inst.shape.dims)


def reshape_leaves_dims_unmodified(src, dst, input_dims):
    """ShapeUtil::ReshapeLeavesDimensionsUnmodified -> output dims or None."""
    if list(input_dims) != sorted(input_dims):
        return None
    unmodified = dims_unmodified_by_reshape(src, dst)
    out = []
    i = 0
    for d in input_dims:
        while i < len(unmodified) and unmodified[i][0] < d:
            i += 1
        if i >= len(unmodified) or unmodified[i][0] != d:
            return None
        out.append(unmodified[i][1])
    return out


def inverse_permutation(perm) -> list[int]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def compose_permutations(p1, p2) -> list[int]:
    """ComposePermutations(p1, p2)[i] = p1[p2[i]]."""
    return [p1[i] for i in p2]
