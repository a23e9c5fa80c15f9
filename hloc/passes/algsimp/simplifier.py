"""algsimp: XLA's AlgebraicSimplifier, as a rule table driven by a worklist.

XLA's pass visits every instruction of every non-fusion computation in post-order and
tries the rewrites of its opcode's handler, repeating until nothing changes. Here each
rewrite is one row of the table in rules.RULES (filled by arith, logic, movement,
reduce and slicing), and a worklist seeded with the post-order
revisits what a rewrite created or touched, until the computation is stable. The
options are XLA:CPU's (cpu_compiler.cc): layout-insensitive, no dot strength reduction,
min/max not NaN-propagating (so no float min/max-with-infinity folds), non-canonical
dots unsupported. Every rule preserves values: rewrites that XLA applies to floats but
that change rounding (reassociating constants, x/c => x*(1/c) for c not a power of two,
pow(x, 3) => x*x*x, pow(x, 0.5) => sqrt(x), dot strength reduction, dot/reduce of
concat splitting) are applied to integers only or left out; the reduction-order changes
XLA makes (reduce of transpose/reshape, merged reduces) are kept, as the brief of this
pass asks. Instructions with control dependencies are left alone.
"""
from __future__ import annotations

from functools import lru_cache

from ...ir.module import Computation, Instruction, Module
from ...ir.graph import (remove_instruction_and_unused_operands, replace_instruction,
                         stable_post_order)
from .. import PassContext, register
from ..base import Pass, PassError
from . import arith, logic, movement, reduce, slicing  # noqa: F401 (rules)
from .rules import RULES
from ..simplify_util import Builder

# A worklist that keeps rewriting is a bug in a rule pair; stop after this many visits
# per instruction rather than loop forever.
VISITS_PER_INSTRUCTION = 64


class RuleContext:
    """What a rule sees besides the instruction: a builder and the computation."""

    def __init__(self, comp: Computation):
        self.comp = comp
        self.module = comp.parent
        self.b: Builder | None = None

    def pinned(self, inst: Instruction) -> bool:
        """Has control dependencies, so rules leave it in place."""
        return inst.has_control_dependencies()


@register
class AlgebraicSimplifier(Pass):
    name = "algsimp"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        for comp in list(module.computations):
            if comp.is_fusion_computation or comp.parent is not module:
                continue
            changed |= simplify_computation(comp)
        return changed


def simplify_computation(comp: Computation) -> bool:
    order = stable_post_order(comp)
    work = list(reversed(order))
    queued = {id(i) for i in work}
    budget = VISITS_PER_INSTRUCTION * (len(work) + 16)
    rctx = RuleContext(comp)
    changed = False
    while work and budget > 0:
        budget -= 1
        inst = work.pop()
        queued.discard(id(inst))
        if inst.parent is not comp or inst.opcode not in RULES or rctx.pinned(inst) or \
                _dynamic(inst):
            continue
        touched = apply_rules(inst, rctx)
        if touched is None:
            continue
        changed = True
        for t in reversed(touched):
            if id(t) not in queued and t.parent is comp:
                queued.add(id(t))
                work.append(t)
    return changed


def _dynamic(inst: Instruction) -> bool:
    """Bounded-dynamic shapes are left alone (the rules build static shapes)."""
    if _dynamic_shape(inst.shape):
        return True
    for o in inst.operands:
        if _dynamic_shape(o.shape):
            return True
    return False


@lru_cache(maxsize=4096)     # shapes are immutable and shared; asked on every visit
def _dynamic_shape(shape) -> bool:
    if shape.is_tuple:
        return any(_dynamic_shape(leaf) for leaf in shape.leaves())
    dynamic = getattr(shape, "dynamic", ())
    return bool(dynamic) and any(dynamic)


def apply_rules(inst: Instruction, rctx: RuleContext):
    """Try inst's rules in order; return the instructions to revisit, or None."""
    b = None
    for r in RULES.get(inst.opcode, ()):
        # Most rules decline without building: reuse the builder while it is untouched.
        if b is None or b.created or b.after is not None or b.before is not inst:
            b = rctx.b = Builder(rctx.comp, before=inst)
        result = r.fn(inst, rctx)
        if result is None or result is False:
            for c in reversed(b.created):       # a rule that gave up mid-way
                remove_instruction_and_unused_operands(c)
            continue
        if result is True:
            touched = list(b.created) + [inst] + list(inst.users)
            return touched
        if not isinstance(result, Instruction):
            raise PassError(f"algsimp rule '{r.doc}' returned {result!r}")
        if not result.shape.compatible(inst.shape):
            raise PassError(f"algsimp rule '{r.doc}' changed the shape of %{inst.name}: "
                            f"{inst.shape} -> {result.shape}")
        users = list(inst.users)
        replace_instruction(inst, result)
        return list(b.created) + [result] + users
    return None


def rule_table() -> list[tuple[str, str]]:
    """(opcode, pattern => rewrite) for every rule, in the order they are tried."""
    return [(op, r.doc) for op, rules in RULES.items() for r in rules]
