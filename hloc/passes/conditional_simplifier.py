"""simplify-conditional: XLA's ConditionalSimplifier.

For every conditional (not calling send/recv or other channel ops, without sharding):
merge result tuple elements that every branch computes from the same instruction,
drop result tuple elements nobody reads (branches are cloned with a narrower root),
give a conditional nobody uses an empty-tuple result, and then remove the conditional
when possible: a single branch or a constant predicate/index (out-of-range indices pick
the last branch) becomes that branch inlined on its operand; a two-branch pred
conditional whose branches hold only cheap instructions (elementwise, broadcast,
reshape, slice, pad, concatenate, reduce, dynamic-slice, tuple, get-tuple-element,
parameter) and that is not just forwarding a parameter becomes both branches inlined
and a select on the predicate. Finally branch parameters' unused tuple elements are
removed, adjusting every conditional that calls the branch.
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from ..ir.shape import ArrayShape, TupleShape
from . import PassContext, register
from .base import Pass
from ..ir.graph import remove_unreachable_computations, replace_instruction, stable_post_order
from ..ir.clone import clone_computation, inline_computation
from ..ir.rewriter import has_side_effect
from ..ops import opcodes_with_attr
from ..ops.base import ELEMENTWISE
from .simplify_util import Builder, scalar_value

# XLA's HloChannelInstruction: send/recv(-done) and the collectives with a channel_id
# in their schema (the -start halves included, the -done halves not).
_CHANNEL = opcodes_with_attr("channel_id")
# The pass's own policy (TryRemoveConditional's "cheap" branches), not an op fact:
# besides these, any ELEMENTWISE op.
_CHEAP = ("broadcast", "concatenate", "dynamic-slice", "get-tuple-element", "reduce",
          "reshape", "pad", "parameter", "slice", "tuple")


def branches(cond: Instruction) -> list[Computation]:
    if "branch_computations" in cond.attrs:
        return list(cond.attrs["branch_computations"])
    return [cond.attrs["true_computation"], cond.attrs["false_computation"]]


def _set_branch(cond: Instruction, k: int, comp: Computation) -> None:
    if "branch_computations" in cond.attrs:
        bs = list(cond.attrs["branch_computations"])
        bs[k] = comp
        cond.set_attr("branch_computations", tuple(bs))
    else:
        cond.set_attr("true_computation" if k == 0 else "false_computation", comp)


def _calls_channel(comp: Computation, seen=None) -> bool:
    seen = seen if seen is not None else set()
    if id(comp) in seen:
        return False
    seen.add(id(comp))
    return any(i.opcode in _CHANNEL or any(_calls_channel(c, seen)
                                           for c in i.called_computations())
               for i in comp.instructions)


def _retuple_root(module: Module, cond: Instruction, k: int, make_root) -> None:
    """Clone branch k and give the clone the root make_root(builder, old_root)."""
    new = clone_computation(branches(cond)[k], module)
    b = Builder(new, before=None)
    new.set_root_instruction(make_root(b, new.root))
    _set_branch(cond, k, new)


def _merge_duplicates(cond: Instruction) -> bool:
    """MergeDuplicateTupleElements."""
    comp = cond.parent
    if not cond.users or comp.root is cond or not isinstance(cond.shape, TupleShape):
        return False
    if any(u.opcode != "get-tuple-element" for u in cond.users):
        return False
    bs = branches(cond)
    if any(b.root.opcode != "tuple" for b in bs):
        return False
    seen: dict[tuple, int] = {}
    changed = False
    for i in range(len(cond.shape.elements)):
        key = tuple(id(b.root.operands[i]) for b in bs)
        if key in seen:
            for u in cond.users:
                if u.attrs["index"] == i:
                    u.set_attr("index", seen[key])
                    changed = True
        else:
            seen[key] = i
    return changed


def _remove_unused_elements(module: Module, cond: Instruction) -> bool:
    """RemoveUnusedTupleElements."""
    comp = cond.parent
    if not cond.users or comp.root is cond or not isinstance(cond.shape, TupleShape):
        return False
    if any(u.opcode != "get-tuple-element" for u in cond.users):
        return False
    n = len(cond.shape.elements)
    used = sorted({u.attrs["index"] for u in cond.users})
    if len(used) == n:
        return False
    if any(not b.root.shape.compatible(cond.shape) for b in branches(cond)):
        return False
    old_shape = cond.shape
    for k in range(len(branches(cond))):
        _retuple_root(module, cond, k, lambda b, root: b.tuple([b.gte(root, i) for i in used]))
    cond.set_shape(TupleShape(tuple(old_shape.elements[i] for i in used)))
    new_index = {old: new for new, old in enumerate(used)}
    for u in cond.users:
        u.set_attr("index", new_index[u.attrs["index"]])
    return True


def _empty_result_if_unused(module: Module, cond: Instruction) -> bool:
    """ReplaceRootWithEmptyTupleIfNoUsers."""
    empty = TupleShape(())
    if cond.users or cond.parent.root is cond or cond.shape.compatible(empty):
        return False
    for k in range(len(branches(cond))):
        _retuple_root(module, cond, k, lambda b, root: b.tuple([]))
    cond.set_shape(empty)
    return True


def _cheap(inst: Instruction) -> bool:
    if inst.opcode in _CHEAP:
        return True
    return ELEMENTWISE in inst.opdef.traits


def _empty_with_array_root(comp: Computation) -> bool:
    """ComputationIsEmptyWithArrayRoot."""
    if not all(i.opcode in ("tuple", "get-tuple-element", "parameter")
               for i in comp.instructions):
        return False
    return any(isinstance(leaf, ArrayShape) and leaf.dtype.is_array
               for leaf in comp.root.shape.leaves())


def _try_remove(cond: Instruction) -> bool:
    """TryRemoveConditional."""
    comp = cond.parent
    if cond.has_control_dependencies() or \
            has_side_effect(cond):
        return False
    bs = branches(cond)
    if len(bs) == 1:
        _inline_branch(cond, 0)
        return True
    selector = cond.operands[0]
    if selector.opcode == "constant":
        v = scalar_value(selector)
        if selector.shape.dtype.kind == "pred":
            k = 0 if v else 1
        else:
            k = int(v)
            if k < 0 or k >= len(bs):
                k = len(bs) - 1
        _inline_branch(cond, k)
        return True
    if len(bs) != 2 or selector.shape.dtype.kind != "pred":
        return False
    if not all(_cheap(i) for b in bs for i in b.instructions):
        return False
    if any(_empty_with_array_root(b) for b in bs):
        return False
    t = inline_computation(bs[0], [cond.operands[1]], comp, cond)
    f = inline_computation(bs[1], [cond.operands[2]], comp, cond)
    b = Builder(comp, before=cond)

    def select(x, y):
        shape = y.shape
        if isinstance(shape, ArrayShape) and shape.dtype.name == "token":
            return b.add("after-all", shape, [x, y])
        if isinstance(shape, ArrayShape):
            p = selector if shape.rank == 0 else b.add(
                "broadcast", ArrayShape(selector.shape.dtype, shape.dims, (),
                                        shape.layout), [selector], {"dimensions": ()})
            return b.add("select", shape, [p, x, y])
        return b.tuple([select(b.gte(x, i), b.gte(y, i)) for i in range(len(shape.elements))])

    replace_instruction(cond, select(t, f))
    return True


def _inline_branch(cond: Instruction, k: int) -> None:
    root = inline_computation(branches(cond)[k], [cond.operands[k + 1]], cond.parent,
                              before=cond)
    replace_instruction(cond, root)


def _remove_unused_operands(module: Module, comp: Computation, conds: list) -> bool:
    """TryRemoveUnusedConditionalOperands for one branch computation."""
    param = comp.parameters[0]
    if param is comp.root or not isinstance(param.shape, TupleShape):
        return False
    if any(u.opcode != "get-tuple-element" for u in param.users):
        return False
    keep = sorted({u.attrs["index"] for u in param.users})
    n = len(param.shape.elements)
    if len(keep) == n:
        return False
    new_shape = TupleShape(tuple(param.shape.elements[i] for i in keep))
    new = clone_computation(comp, module, param_shapes=[new_shape])
    remap = {old: i for i, old in enumerate(keep)}
    for u in new.parameters[0].users:
        u.set_attr("index", remap[u.attrs["index"]])
    for cond in conds:
        if "sharding" in cond.attrs:
            continue
        for k, bcomp in enumerate(branches(cond)):
            if bcomp is not comp:
                continue
            _set_branch(cond, k, new)
            operand = cond.operands[k + 1]
            b = Builder(cond.parent, before=cond)
            t = b.tuple([b.gte(operand, i) for i in keep])
            cond.set_operand(k + 1, t)
    return True


@register
class ConditionalSimplifier(Pass):
    name = "simplify-conditional"

    def run(self, module: Module, ctx: PassContext) -> bool:
        # (the post order only of computations with a conditional in them)
        conds = [i for c in module.computations
                 if any(i.opcode == "conditional" for i in c.instructions)
                 for i in stable_post_order(c)
                 if i.opcode == "conditional" and "sharding" not in i.attrs
                 and not any(_calls_channel(b) for b in branches(i))]
        changed = False
        removed = set()
        for cond in conds:
            changed |= _merge_duplicates(cond)
            changed |= _remove_unused_elements(module, cond)
            changed |= _empty_result_if_unused(module, cond)
            if _try_remove(cond):
                removed.add(id(cond))
                changed = True
        calling: dict[int, list] = {}
        order = []
        for cond in conds:
            if id(cond) in removed:
                continue
            for b in branches(cond):
                if id(b) not in calling:
                    order.append(b)
                calling.setdefault(id(b), []).append(cond)
        for b in order:
            changed |= _remove_unused_operands(module, b, calling[id(b)])
        if changed:
            remove_unreachable_computations(module)
        return changed

