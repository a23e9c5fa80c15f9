"""`algsimp` (XLA's AlgebraicSimplifier): the pass and its worklist in simplifier.py, the
rule table and its helpers in rules.py, the rules by theme in arith.py, logic.py,
movement.py, reduce.py and slicing.py."""
from __future__ import annotations

from .simplifier import AlgebraicSimplifier, apply_rules, rule_table, simplify_computation

__all__ = ["AlgebraicSimplifier", "apply_rules", "rule_table", "simplify_computation"]
