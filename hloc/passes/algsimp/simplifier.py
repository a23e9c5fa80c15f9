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
from ...ir.shape import ArrayShape
from ..simplify_util import Builder

# (rule, function) per opcode, in the order they are tried.
RULE_FNS = {op: tuple((r, r.fn) for r in rules) for op, rules in RULES.items()}

# A worklist that keeps rewriting is a bug in a rule pair; stop after this many visits
# per instruction rather than loop forever.
VISITS_PER_INSTRUCTION = 64


class RuleContext:
    """What a rule sees besides the instruction: a builder and the computation. The
    builder (`b`) is made when a rule first asks for it: most rules decline without
    building."""

    __slots__ = ("comp", "module", "inst", "_b")

    def __init__(self, comp: Computation):
        self.comp = comp
        self.module = comp.parent
        self.inst: Instruction | None = None
        self._b: Builder | None = None

    @property
    def b(self) -> Builder:
        b = self._b
        if b is None:
            b = self._b = Builder(self.comp, before=self.inst)
        return b

    @staticmethod
    def pinned(inst: Instruction) -> bool:
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
    rules = RULE_FNS
    changed = False
    while work and budget > 0:
        budget -= 1
        inst = work.pop()
        queued.discard(id(inst))
        fns = rules.get(inst.opcode)
        if fns is None or inst.parent is not comp or inst.control_predecessors or \
                inst.control_successors or _dynamic(inst):
            continue
        touched = apply_rules(inst, rctx, fns)
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
    shape = inst.shape
    if (shape.__class__ is not ArrayShape or shape.dynamic) and _dynamic_shape(shape):
        return True
    for o in inst.operands:
        shape = o.shape
        if (shape.__class__ is not ArrayShape or shape.dynamic) and _dynamic_shape(shape):
            return True
    return False


@lru_cache(maxsize=4096)     # shapes are immutable and shared
def _dynamic_shape(shape) -> bool:
    if shape.is_tuple:
        return any(_dynamic_shape(leaf) for leaf in shape.leaves())
    dynamic = getattr(shape, "dynamic", ())
    return bool(dynamic) and any(dynamic)


def apply_rules(inst: Instruction, rctx: RuleContext, fns=None):
    """Try inst's rules in order; return the instructions to revisit, or None. `fns`:
    RULE_FNS[inst.opcode], (rule, function) pairs."""
    rctx.inst = inst
    rctx._b = None
    for r, fn in (RULE_FNS.get(inst.opcode, ()) if fns is None else fns):
        result = fn(inst, rctx)
        b = rctx._b
        if result is None or result is False:
            if b is not None:
                # A rule that gave up mid-way: undo what it built. The builder is
                # reused while untouched.
                if b.created or b.after is not None or b.before is not inst:
                    for c in reversed(b.created):
                        remove_instruction_and_unused_operands(c)
                    rctx._b = None
            continue
        created = list(b.created) if b is not None else []
        if result is True:
            return created + [inst] + list(inst.users)
        if not isinstance(result, Instruction):
            raise PassError(f"algsimp rule '{r.doc}' returned {result!r}")
        if not result.shape.compatible(inst.shape):
            raise PassError(f"algsimp rule '{r.doc}' changed the shape of %{inst.name}: "
                            f"{inst.shape} -> {result.shape}")
        users = list(inst.users)
        replace_instruction(inst, result)
        return created + [result] + users
    return None


def rule_table() -> list[tuple[str, str]]:
    """(opcode, pattern => rewrite) for every rule, in the order they are tried."""
    return [(op, r.doc) for op, rules in RULES.items() for r in rules]
