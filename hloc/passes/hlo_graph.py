"""Graph facts and edits the structural passes share, each mirroring one XLA routine.

An `Editor` (using hloc.ir.rewriter.has_side_effect, XLA's recursive HasSideEffect) holds a computation's control successors (the IR does not
store them) and batches removals (`Editor.remove_with_unused_operands` is
HloComputation::RemoveInstructionAndUnusedOperands);
`replace_uses` is ReplaceAllUsesWith (fusion users get their duplicate operands merged,
as HloFusionInstruction::DeduplicateFusionOperands does); `replace_instruction` is
HloComputation::ReplaceInstruction (metadata, frontend attributes and sharding follow
the replacement when it has none; same-opcode replacements take the old name);
`xla_post_order` is HloComputation::MakeInstructionPostOrder, the order XLA prints in;
`clone_computation` is HloComputation::Clone with XLA's `.clone` naming.
"""
from __future__ import annotations

import re
from collections import deque

from ..ir.module import Computation, Instruction, Module
from ..ir.rewriter import has_side_effect, uniquer

_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
ASYNC_OPS = frozenset({"async-start", "async-update", "async-done"})


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


class Editor:
    """Edit state of one computation: the control successors the IR does not store (kept
    in step with edits) and instructions removed but not yet taken out of the list.
    Removals are deferred so that a pass removing thousands of instructions rewrites the
    instruction list once (`flush`) instead of once per removal."""

    def __init__(self, comp: Computation):
        self.comp = comp
        self.gone: set = set()
        self._succ: dict[Instruction, list[Instruction]] = {}
        for inst in comp.instructions:
            for pred in inst.control_predecessors:
                self._succ.setdefault(pred, []).append(inst)

    # -- control edges ---------------------------------------------------------------
    def successors(self, inst: Instruction) -> list[Instruction]:
        return self._succ.get(inst, [])

    def has_deps(self, inst: Instruction) -> bool:
        return bool(inst.control_predecessors) or bool(self._succ.get(inst))

    def add(self, pred: Instruction, succ: Instruction) -> None:
        if pred not in succ.control_predecessors:
            succ.control_predecessors.append(pred)
            self._succ.setdefault(pred, []).append(succ)

    def drop_all(self, inst: Instruction) -> None:
        for succ in self._succ.pop(inst, []):
            succ.control_predecessors[:] = [p for p in succ.control_predecessors
                                            if p is not inst]
        for pred in inst.control_predecessors:
            succs = self._succ.get(pred)
            if succs is not None:
                succs[:] = [s for s in succs if s is not inst]
        inst.control_predecessors = []

    # -- removal ---------------------------------------------------------------------
    def alive(self, inst: Instruction) -> bool:
        return inst.parent is self.comp and inst not in self.gone

    def is_dead(self, inst: Instruction) -> bool:
        """IsDead: no (remaining) users and not the root."""
        return inst is not self.comp.root and all(u in self.gone for u in inst.users)

    def safely_removable(self, inst: Instruction) -> bool:
        """IsSafelyRemovable: no control edges, and not a parameter."""
        return inst.opcode != "parameter" and not self.has_deps(inst)

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


def relay_control_deps(inst: Instruction, replacement: Instruction, editor: Editor) -> None:
    """RelayControlDependenciesSafely (tuple_simplifier.cc): `inst` is about to be
    replaced by the earlier `replacement`; its control predecessors go to its users (or
    to its control successors when it has none), its successors follow `replacement`."""
    if not editor.has_deps(inst):
        return
    users = [u for u in dict.fromkeys(inst.users) if u not in editor.gone]
    successors = list(editor.successors(inst))
    for pred in list(inst.control_predecessors):
        for target in (users if users else successors):
            if target is not pred:
                editor.add(pred, target)
    for succ in successors:
        if succ is not replacement:
            editor.add(replacement, succ)
    editor.drop_all(inst)


def replace_uses(old: Instruction, new: Instruction) -> None:
    """ReplaceAllUsesWith: every use of `old` (and the root slot) becomes `new`; `new`
    itself keeps using `old` if it did. Fusion users whose operands become duplicates
    are deduplicated."""
    fusions = []
    for user in list(dict.fromkeys(old.users)):
        if user is new:
            continue
        for i, op in enumerate(user.operands):
            if op is old:
                user.operands[i] = new
                new.users.append(user)
        if user.opcode == "fusion":
            fusions.append(user)
    old.users = [u for u in old.users if u is new]
    comp = old.parent
    if comp is not None and comp.root is old:
        comp.root = new
    for fusion in fusions:
        dedupe_fusion_operands(fusion)


def dedupe_fusion_operands(fusion: Instruction) -> bool:
    """Merge the fused parameters of operands passed to `fusion` more than once; the
    parameters after a removed one are renumbered (and renamed `param_N` as XLA does)."""
    callee = fusion.attrs.get("calls")
    if callee is None:
        return False
    first: dict[Instruction, int] = {}
    drop = []
    for i, op in enumerate(fusion.operands):
        if op in first:
            if i < len(callee.parameters) and first[op] < len(callee.parameters):
                replace_uses(callee.parameters[i], callee.parameters[first[op]])
                drop.append(i)
        else:
            first[op] = i
    if not drop:
        return False
    names = uniquer(callee.parent) if callee.parent is not None else None
    for i in reversed(drop):
        param = callee.parameters[i]
        callee.remove_instruction(param)
        del callee.parameters[i]
        fusion.remove_operand(i)
    for n, param in enumerate(callee.parameters):
        if param.parameter_number != n:
            param.parameter_number = n
            if names is not None:
                param.name = names.unique(f"param_{n}")
    return True


def op_name(inst: Instruction) -> str:
    meta = inst.attrs.get("metadata")
    if meta is None:
        return ""
    m = _OP_NAME.search(getattr(meta, "text", str(meta)))
    return m.group(1) if m else ""


def _empty_verbatim(value) -> bool:
    return value is None or getattr(value, "text", str(value)).strip() in ("", "{}")


def replace_instruction(old: Instruction, new: Instruction, editor: Editor, *,
                        preserve_sharding: bool = False, memo: dict | None = None) -> bool:
    """HloComputation::ReplaceInstruction. With `preserve_sharding`, a replacement whose
    sharding differs from old's is refused (False). `old` must become dead."""
    if old is new:
        return False
    if preserve_sharding and "sharding" in old.attrs and "sharding" in new.attrs and \
            old.attrs["sharding"] != new.attrs["sharding"]:
        return False
    if not op_name(new) and op_name(old):
        new.attrs["metadata"] = old.attrs["metadata"]
    if _empty_verbatim(new.attrs.get("frontend_attributes")) and \
            not _empty_verbatim(old.attrs.get("frontend_attributes")):
        new.attrs["frontend_attributes"] = old.attrs["frontend_attributes"]
    if "sharding" not in new.attrs and "sharding" in old.attrs:
        new.attrs["sharding"] = old.attrs["sharding"]
    replace_uses(old, new)
    if editor.is_dead(old) and editor.safely_removable(old):
        if old.opcode == new.opcode and (old.opcode != "custom-call" or
                                         old.attrs.get("custom_call_target") ==
                                         new.attrs.get("custom_call_target")):
            new.name = old.name
        editor.remove_with_unused_operands(old, memo)
    return True


def xla_post_order(comp: Computation) -> list[Instruction]:
    """MakeInstructionPostOrder: a DFS from every instruction without users, in list
    order, visiting control predecessors (last first) and then operands in order."""
    out = post_order_from(comp, [i for i in comp.instructions if not i.users])
    if len(out) != len(comp.instructions):      # only reachable through a cycle
        seen = set(out)
        out.extend(i for i in comp.instructions if i not in seen)
    return out


def post_order_from(comp: Computation, starts) -> list[Instruction]:
    """ComputeInstructionPostOrder from each of `starts` in turn (shared visited set)."""
    state: dict[Instruction, int] = {}          # 1 visiting, 2 done
    out: list[Instruction] = []
    for start in starts:
        if state.get(start) == 2:
            continue
        stack = [start]
        while stack:
            cur = stack[-1]
            s = state.get(cur)
            if s is None:
                state[cur] = 1
                for op in reversed(cur.operands):
                    if state.get(op) != 2 and op.parent is comp:
                        stack.append(op)
                for pred in cur.control_predecessors:
                    if state.get(pred) != 2 and pred.parent is comp:
                        stack.append(pred)
            else:
                stack.pop()
                if s == 1:
                    state[cur] = 2
                    out.append(cur)
    return out


def sort_post_order(comp: Computation) -> None:
    order = xla_post_order(comp)
    if any(a is not b for a, b in zip(order, comp.instructions)):
        comp.set_instruction_order(order)


def clone_name(name: str, suffix: str) -> str:
    """HloInstruction::Clone's naming: `x` -> `x.clone`, `x.clone` -> `x.clone2`,
    `x.clone2` -> `x.clone3`."""
    i = name.rfind(suffix)
    if i < 0:
        return f"{name}.{suffix}"
    tail = name[i + len(suffix):]
    if not tail:
        return f"{name}2"
    if tail.isdigit():
        return f"{name[:i]}{suffix}{int(tail) + 1}"
    return f"{name}.{suffix}"


def clone_computation(module: Module, comp: Computation, suffix: str = "clone") -> Computation:
    """A copy of `comp` added to `module`; called computations stay shared."""
    names = uniquer(module)
    new = Computation(names.unique(clone_name(comp.name, suffix)))
    new.execution_thread = comp.execution_thread
    new.is_fusion_computation = comp.is_fusion_computation
    mapping: dict[Instruction, Instruction] = {}
    for inst in xla_post_order(comp):
        copy = Instruction(names.unique(clone_name(inst.name, suffix)), inst.opdef,
                           inst.shape, [mapping[o] for o in inst.operands],
                           dict(inst.attrs), loc=inst.loc)
        copy.literal = inst.literal
        copy.parameter_number = inst.parameter_number
        mapping[inst] = copy
        new.add_instruction(copy)
    for inst, copy in mapping.items():
        copy.control_predecessors = [mapping[p] for p in inst.control_predecessors]
    new.root = mapping[comp.root]
    module.add_computation(new)
    return new


def snapshot(module: Module) -> dict:
    """A cheap structural fingerprint per computation (instructions and their operands),
    to tell which computations a pipeline touched."""
    return {comp: tuple((i, tuple(i.operands)) for i in comp.instructions)
            for comp in module.computations}
