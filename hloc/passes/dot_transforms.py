"""Two passes XLA:CPU runs after the simplification fixed point, before layout assignment
(cpu_compiler.cc, in this order around `cse`): `transpose-folding` and
`cse_barrier_expander`.

- transpose-folding (TransposeFolding with XLA:CPU's predicate): a dot operand that is a
  transpose keeping the batch dimensions in place, of a batched matrix (rank = batch + 2),
  is replaced by the transpose's operand, the dot's contracting and batch dimensions
  mapped through the permutation (every dot strategy XLA:CPU picks without
  `xla_force_enable_experimental_llvm_ir_gemm` handles transposed operands:
  DotImplementationCanHandleTranspose). The new dot keeps the old one's name and metadata.
- cse_barrier_expander (OptimizationBarrierExpander): every opt-barrier is replaced by its
  operand (control edges move to the operand). XLA:CPU has no use for the barriers once
  the HLO-level rematerialisation they protect has been kept from being CSE'd by the
  earlier passes; after this, later CSE may merge the recomputed values, as XLA's does.
"""
from __future__ import annotations

from ..ir.graph import post_order, replace_instruction
from ..ir.module import Module
from ..ir.rewriter import add_instruction
from . import register
from .base import Pass, PassContext
from .fusion.build import fusible_computations


def _row_column_transpose(dot, k: int) -> bool:
    """TransposeFolding::IsRowColumnTransposeDotOperand."""
    t = dot.operands[k]
    if t.opcode != "transpose":
        return False
    batch = dot.attrs.get("lhs_batch_dims" if k == 0 else "rhs_batch_dims", ())
    perm = t.attrs["dimensions"]
    return len(t.shape.dims) == len(batch) + 2 and all(perm[d] == d for d in batch)


@register
class TransposeFolding(Pass):
    name = "transpose-folding"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        for comp in fusible_computations(module):
            for dot in [i for i in post_order(comp) if i.opcode == "dot"]:
                folds = [k for k in (0, 1) if _row_column_transpose(dot, k)]
                if folds:
                    _fold(dot, folds)
                    changed = True
        return changed


def _fold(dot, folds) -> None:
    attrs = dict(dot.attrs)
    operands = list(dot.operands)
    for k in folds:
        side = "lhs" if k == 0 else "rhs"
        perm = operands[k].attrs["dimensions"]
        for key in (f"{side}_contracting_dims", f"{side}_batch_dims"):
            if key in attrs:
                attrs[key] = tuple(perm[d] for d in attrs[key])
        operands[k] = operands[k].operands[0]
    new = add_instruction(dot.parent, "dot", dot.shape, operands, attrs, before=dot)
    replace_instruction(dot, new)


@register
class OptimizationBarrierExpander(Pass):
    name = "cse_barrier_expander"

    def run(self, module: Module, ctx: PassContext) -> bool:
        barriers = [i for c in module.computations if not c.is_fusion_computation
                    for i in c.instructions if i.opcode == "opt-barrier"]
        for b in barriers:
            arg = b.operands[0]
            arg.copy_control_deps_from(b)
            b.replace_all_uses_with(arg)
            b.drop_all_control_deps()
            b.parent.remove_instruction(b)
        return bool(barriers)
