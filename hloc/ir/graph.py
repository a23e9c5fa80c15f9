"""Graph walks and edits with XLA's semantics; every pass changes a module through these.

- Orders: `post_order` is HloComputation::MakeInstructionPostOrder (the order XLA prints
  in), `post_order_from` its DFS from chosen starts, `stable_post_order` a topological
  order that keeps the stored order where it already is one, `visit_order`
  HloComputation::Accept's; `computation_post_order` is HloModule::MakeComputationPostOrder.
  All share one iterative DFS (real dumps have dependency chains thousands long).
- Edits: `replace_instruction` is HloComputation::ReplaceInstruction (metadata, frontend
  attributes and sharding follow the replacement when it has none; a same-opcode
  replacement takes the old name; the old instruction and operands it leaves dead are
  removed), `Instruction.replace_all_uses_with` is ReplaceAllUsesWith, `Removal` batches
  RemoveInstructionAndUnusedOperands so a pass removing thousands of instructions rewrites
  the instruction list once, `relay_control_deps` is RelayControlDependenciesSafely.
- Copies are in clone.py.
- Call graph: `callers` (computation -> calling instructions), `callees`,
  `callee_post_order`, `reachable_computations`, `remove_unreachable_computations`,
  `fusion_computations`; XLA's CallGraph with call contexts is in call_graph.py.
"""
from __future__ import annotations

import re
from collections import deque
from operator import attrgetter

from ..ops.base import CALLS
from .module import Computation, Instruction, Module
from .fusing import param_name
from .rewriter import has_side_effect, uniquer

# Walks over every instruction test the CALLS trait before asking an instruction for its
# called computations (a method call per instruction was a few percent of every pass).


_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')


# ---------------------------------------------------------------------------
# Orders

def xla_deps(inst: Instruction) -> list:
    """What MakeInstructionPostOrder visits before `inst`: control predecessors (last
    first), then operands in order."""
    preds = inst.control_predecessors
    if not preds:
        return inst.operands
    return list(reversed(preds)) + inst.operands


def operands_then_control(inst: Instruction) -> list:
    return inst.operands + inst.control_predecessors if inst.control_predecessors \
        else inst.operands


def post_order_from(starts, comp: Computation | None = None, deps=xla_deps,
                    done: set | None = None) -> list:
    """Depth-first post order from each of `starts` in turn (one visited set): an
    instruction comes after everything `deps(inst)` lists, visited in that order. With
    `comp`, instructions of other computations are not entered. `done` (shared across
    calls) holds the instructions already emitted."""
    done = set() if done is None else done
    out: list = []
    emit, mark = out.append, done.add
    plain = deps is xla_deps    # operands, inline, unless there are control edges
    for start in starts:
        if start in done:
            continue
        mark(start)
        stack = [(start, iter(deps(start)))]
        push, pop = stack.append, stack.pop
        while stack:
            inst, it = stack[-1]
            for d in it:
                if d not in done and (comp is None or d.parent is comp):
                    mark(d)
                    ds = d.operands if plain and not d.control_predecessors else deps(d)
                    if not ds:          # a leaf (parameter, constant): no stack entry
                        emit(d)
                        continue
                    push((d, iter(ds)))
                    break
            else:
                pop()
                emit(inst)
    return out


def post_order(comp: Computation, storage=None) -> list:
    """MakeInstructionPostOrder: a DFS from every instruction without users, in storage
    order (`storage`, default the stored list); instructions reachable only through a
    cycle follow in storage order."""
    storage = comp.instructions if storage is None else storage
    out = post_order_from([i for i in storage if not i.users], comp)
    if len(out) != len(storage):
        seen = set(out)
        out.extend(i for i in storage if i not in seen)
    return out


def stable_post_order(comp: Computation) -> list:
    """Operands (and control predecessors) before users, keeping the stored order where
    it already is one."""
    return post_order_from(comp.instructions, comp, operands_then_control)


def operand_post_order(root: Instruction, stop=None) -> list:
    """`root` and its transitive operands, operands first; `stop(inst)` true: its
    operands are not entered."""
    if stop is None:
        return post_order_from([root], deps=_operands)
    return post_order_from([root], deps=lambda i: () if stop(i) else i.operands)


def _operands(inst: Instruction) -> list:
    return inst.operands


def visit_order(comp: Computation) -> list:
    """HloComputation::Accept's order: from each unreachable root (no users, no control
    successors) in instruction order, then from the root."""
    starts = [i for i in comp.instructions
              if not i.users and i is not comp.root and not i.control_successors]
    order = post_order_from(starts + [comp.root], comp)
    if len(order) != len(comp.instructions):    # reached only through control edges
        seen = set(order)
        order.extend(i for i in comp.instructions if i not in seen)
    return order


def sort_post_order(comp: Computation) -> None:
    """Store `comp`'s instructions in MakeInstructionPostOrder order."""
    order = post_order(comp)
    if any(a is not b for a, b in zip(order, comp.instructions)):
        comp.set_instruction_order(order)


def callees(comp: Computation) -> list:
    """The computations `comp`'s instructions call, in instruction order (repeats kept)."""
    return [c for inst in comp.instructions if CALLS in inst.opdef.traits
            for c in inst.called_computations()]


def callee_post_order(starts) -> list:
    """`starts` and every computation they call, transitively: callees first, depth
    first in instruction order."""
    return post_order_from(starts, deps=callees)


def computation_post_order(module: Module, storage=None, *,
                           from_uncalled: bool = True, callers_of: dict | None = None) -> list:
    """HloModule::MakeComputationPostOrder: callees (depth first, in instruction storage
    order) before callers, from each uncalled computation in module order. With
    `from_uncalled=False`, from every computation in module order (keeps the stored
    order where it already is one). `callers_of`: `callers(module)`, when the caller
    has it already."""
    def stored_callees(comp):
        insts = comp.instructions if storage is None else storage(comp)
        return [c for inst in insts if CALLS in inst.opdef.traits
                for c in inst.called_computations()]

    starts = module.computations
    if from_uncalled:
        called = set(callers(module) if callers_of is None else callers_of)
        starts = [c for c in module.computations if c not in called]
    out = post_order_from(starts, deps=callees if storage is None else stored_callees)
    if len(out) != len(module.computations):      # unreachable cycles: be safe
        seen = set(out)
        out.extend(c for c in module.computations if c not in seen)
    return out


# ---------------------------------------------------------------------------
# Call graph

def callers(module: Module) -> dict:
    """computation -> the instructions that call it, in module order."""
    out: dict = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if CALLS in inst.opdef.traits:
                for c in inst.called_computations():
                    out.setdefault(c, []).append(inst)
    return out


def reachable_computations(module: Module) -> set:
    """The computations reachable from the entry."""
    if module.entry is None:
        return set(module.computations)
    return set(callee_post_order([module.entry]))


def remove_unreachable_computations(module: Module) -> bool:
    """Drop computations not reachable from the entry; returns whether any were."""
    if module.entry is None:
        return False
    seen = reachable_computations(module)
    dead = [c for c in module.computations if c not in seen]
    module.remove_computations(dead)
    return bool(dead)


def fusion_computations(module: Module) -> set:
    """Computations called by fusion instructions (XLA's fusion computations)."""
    out = set()
    for comp in module.computations:
        if comp.is_fusion_computation:
            out.add(comp)
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                out.update(inst.called_computations())
    return out


def snapshot(module: Module) -> dict:
    """A cheap structural fingerprint per computation (its instructions and each one's
    operands), to tell which computations a pipeline touched (`touched`)."""
    return {comp: (insts, _operand_tuples(insts))
            for comp in module.computations for insts in (list(comp.instructions),)}


_OPERANDS = attrgetter("operands")


def _operand_tuples(insts: list) -> list:
    return list(map(tuple, map(_OPERANDS, insts)))     # in C: this runs on every instruction


def touched(module: Module, before: dict) -> list:
    """The computations of `module` that are new or differ from their `snapshot`
    `before` (compared by identity, in C where it can be)."""
    out = []
    for comp in module.computations:
        old = before.get(comp)
        insts = comp.instructions
        if old is None or old[0] != insts or _operand_tuples(insts) != old[1]:
            out.append(comp)
    return out


# ---------------------------------------------------------------------------
# Removal

def is_dead(inst: Instruction) -> bool:
    """HloInstruction::IsDead: in a computation, no users, not its root."""
    return not inst.users and inst.parent is not None and inst is not inst.parent.root


class Removal:
    """Batched RemoveInstructionAndUnusedOperands for one computation: removed
    instructions leave the instruction list together, at `flush`."""

    def __init__(self, comp: Computation):
        self.comp = comp
        self.gone: set = set()

    def alive(self, inst: Instruction) -> bool:
        return inst.parent is self.comp and inst not in self.gone

    def is_dead(self, inst: Instruction) -> bool:
        """IsDead: no (remaining) users and not the root."""
        return inst is not self.comp.root and all(u in self.gone for u in inst.users)

    @staticmethod
    def safely_removable(inst: Instruction) -> bool:
        """IsSafelyRemovable: no control edges, and not a parameter."""
        return inst.opcode != "parameter" and not inst.has_control_dependencies()

    def remove_with_unused_operands(self, inst: Instruction, memo: dict | None = None) -> int:
        """RemoveInstructionAndUnusedOperands: remove dead `inst` and every operand that
        becomes dead and is removable with it (side-effecting operands stay)."""
        count = 0
        work = deque([inst])
        while work:
            item = work.popleft()
            if not self.alive(item) or not self.is_dead(item) or \
                    not self.safely_removable(item) or \
                    (item is not inst and has_side_effect(item, memo)):
                continue
            self.gone.add(item)
            count += 1
            work.extend(item.operands)
        return count

    def flush(self) -> bool:
        """Take the removed instructions out of the computation."""
        if not self.gone:
            return False
        gone = {i for i in self.gone if i.parent is self.comp}
        self.gone = set()
        if gone:
            self.comp.remove_instructions(gone)
        return True


def remove_instruction_and_unused_operands(inst: Instruction,
                                           memo: dict | None = None) -> bool:
    """RemoveInstructionAndUnusedOperands, at once; False when `inst` is not dead and
    safely removable or has a side effect."""
    comp = inst.parent
    if comp is None or has_side_effect(inst, memo):
        return False
    removal = Removal(comp)
    removal.remove_with_unused_operands(inst, memo)
    return removal.flush()


def relay_control_deps(inst: Instruction, replacement: Instruction,
                       removal: Removal | None = None) -> None:
    """RelayControlDependenciesSafely (tuple_simplifier.cc): `inst` is about to be
    replaced by the earlier `replacement`; its control predecessors go to its users (or
    to its control successors when it has none), its successors follow `replacement`."""
    if not inst.has_control_dependencies():
        return
    gone = removal.gone if removal is not None else ()
    users = [u for u in inst.users if u not in gone]
    successors = list(inst.control_successors)
    for pred in list(inst.control_predecessors):
        for target in (users if users else successors):
            if target is not pred:
                pred.add_control_dependency_to(target)
    for succ in successors:
        if succ is not replacement:
            replacement.add_control_dependency_to(succ)
    inst.drop_all_control_deps()


# ---------------------------------------------------------------------------
# Replacement

def op_name(inst: Instruction) -> str:
    meta = inst.attrs.get("metadata")
    if meta is None:
        return ""
    m = _OP_NAME.search(getattr(meta, "text", str(meta)))
    return m.group(1) if m else ""


def _empty_verbatim(value) -> bool:
    return value is None or getattr(value, "text", str(value)).strip() in ("", "{}")


def _same_kind(old: Instruction, new: Instruction) -> bool:
    """A replacement of the same kind takes over the removed instruction's name (XLA's
    ReplaceInstruction: same opcode, and for custom-calls the same target)."""
    return old.opcode == new.opcode and (old.opcode != "custom-call" or
                                         old.attrs.get("custom_call_target") ==
                                         new.attrs.get("custom_call_target"))


def replace_uses(old: Instruction, users: list, new: Instruction) -> None:
    """HloInstruction::ReplaceUsesWith: the uses of `old` by `users` (users it had before
    the caller put it behind new instructions, e.g. a convert back to its old type), and
    the root slot, become `new`; its other users keep it."""
    for user in users:
        for i, op in enumerate(user.operands):
            if op is old:
                user.set_operand(i, new)
    if old.parent.root is old:
        old.parent.set_root_instruction(new)

def replace_instruction(old: Instruction, new: Instruction, removal: Removal | None = None,
                        *, preserve_sharding: bool = False, memo: dict | None = None,
                        operands_stay_used: bool = False) -> bool:
    """HloComputation::ReplaceInstruction. With `preserve_sharding`, a replacement whose
    sharding differs from old's is refused (False). Removals go to `removal` (flushed by
    its owner) or happen at once. `operands_stay_used`: the caller knows that `new`
    reads every operand of `old` (a fusion replacing its consumer), so only `old` itself
    can become dead: it is removed without the walk over its operands."""
    if old is new:
        return False
    if preserve_sharding and "sharding" in old.attrs and "sharding" in new.attrs and \
            old.attrs["sharding"] != new.attrs["sharding"]:
        return False
    # (a replacement built from `old`, such as a fusion, often holds old's very values)
    old_attrs, new_attrs = old.attrs, new.attrs
    if "metadata" in old_attrs and new_attrs.get("metadata") is not old_attrs["metadata"] \
            and not op_name(new):
        new.set_attr("metadata", old_attrs["metadata"])
    front = new_attrs.get("frontend_attributes")
    if front is not old_attrs.get("frontend_attributes") and _empty_verbatim(front) and \
            not _empty_verbatim(old_attrs.get("frontend_attributes")):
        new.set_attr("frontend_attributes", old_attrs["frontend_attributes"])
    if "sharding" not in new.attrs and "sharding" in old.attrs:
        new.set_attr("sharding", old.attrs["sharding"])
    old.replace_all_uses_with(new)
    own = removal is None
    if own:
        if old.parent is None:
            return True
        if operands_stay_used and not old.users and old is not old.parent.root and \
                old.opcode != "parameter" and not old.has_control_dependencies():
            if _same_kind(old, new):
                new.name = old.name
            old.parent.remove_instruction(old)
            return True
        removal = Removal(old.parent)
    if removal.is_dead(old) and removal.safely_removable(old):
        if _same_kind(old, new):
            new.name = old.name
        removal.remove_with_unused_operands(old, memo)
    if own:
        removal.flush()
    return True


def dedupe_fusion_operands(fusion: Instruction) -> bool:
    """HloFusionInstruction::DeduplicateFusionOperands: merge the fused parameters of
    operands passed more than once; later parameters are renumbered (and renamed
    `param_N` as XLA does)."""
    callee = fusion.attrs.get("calls")
    if callee is None or len(set(fusion.operands)) == len(fusion.operands):
        return False
    first: dict = {}
    drop = []
    for i, op in enumerate(fusion.operands):
        if op in first:
            if i < len(callee.parameters) and first[op] < len(callee.parameters):
                callee.parameters[i].replace_all_uses_with(callee.parameters[first[op]])
                drop.append(i)
        else:
            first[op] = i
    if not drop:
        return False
    names = uniquer(callee.parent) if callee.parent is not None else None
    for i in reversed(drop):
        callee.remove_parameter(i, renumber=False)
        fusion.remove_operand(i)
    for n, param in enumerate(callee.parameters):
        if param.parameter_number != n:
            param.parameter_number = n
            if names is not None:
                param.name = names.unique(param_name(n))
    return True
