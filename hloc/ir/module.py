"""The in-memory module: HloModule -> computations -> instructions.

Instructions keep their operands and users, and their control predecessors and
successors, in both directions; a users list names each user once. Mutation goes through
the methods here (`replace_all_uses_with`, `add_control_dependency_to`,
`Computation.add_instruction`, `remove_instruction`) and the graph edits in
hloc.ir.graph, so users, control edges, roots and order stay consistent; passes use
these, never raw list surgery. `check_invariants` states what they keep.

Every edit made here is recorded for the verifier (hloc.ir.changes); control edges
live in hloc.ir.control.
"""
from __future__ import annotations

from typing import Any, Iterator

from .changes import touch as _touch, touch_around as _touch_around
from .control import ControlEdges
from .hooks import hook as _hook
from .shape import Shape


def _uses(user: "Instruction", op: "Instruction") -> bool:
    """Whether `op` is among `user`'s operands, i.e. `user` among `op`'s users (the two
    are kept symmetric): asked of the shorter list, since `in` on a list compares
    element by element and a shared constant can have thousands of users."""
    if len(user.operands) <= len(op.users):
        return op in user.operands
    return user in op.users


class Instruction(ControlEdges):
    __slots__ = ("name", "opdef", "opcode", "shape", "operands", "attrs", "users", "parent",
                 "loc", "literal", "_parameter_number", "control_predecessors",
                 "control_successors", "is_root_marked")

    def __init__(self, name: str, opdef, shape: Shape, operands=(), attrs=None, loc=None):
        self.name = name
        self.opdef = opdef              # fixed for the instruction's life, as XLA's opcode
        self.opcode: str = opdef.name   # (read millions of times by the passes)
        self.shape = shape
        self.operands: list[Instruction] = list(operands)
        self.attrs: dict[str, Any] = attrs if attrs is not None else {}
        self.users: list[Instruction] = []
        self.parent: Computation | None = None
        self.loc = loc
        self.literal = None            # constant: hloc.ir.literal.Literal
        self._parameter_number = -1    # parameter: its index
        # Lists once there is an edge; the shared empty tuple until then (memory: most
        # instructions never have one).
        self.control_predecessors: list[Instruction] | tuple = ()
        self.control_successors: list[Instruction] | tuple = ()
        self.is_root_marked = False
        ops = self.operands
        if len(ops) == 1:
            ops[0].users.append(self)
            _touch(ops[0])
        elif ops:
            for op in dict.fromkeys(ops):   # a user is listed once, however often it uses op
                op.users.append(self)
                _touch(op)

    @property
    def parameter_number(self) -> int:
        return self._parameter_number

    @parameter_number.setter
    def parameter_number(self, number: int) -> None:
        if number != self._parameter_number:
            self._parameter_number = number
            _touch_around(self)

    def set_attr(self, key: str, value) -> None:
        """Set attribute `key` (attributes change only through here and `pop_attr`)."""
        self.attrs[key] = value
        _touch_around(self)

    def pop_attr(self, key: str, default=None):
        """Remove attribute `key`; returns its value (`default` when absent)."""
        if key not in self.attrs:
            return default
        _touch_around(self)
        return self.attrs.pop(key)

    def operand(self, i: int) -> "Instruction":
        return self.operands[i]

    def called_computations(self) -> list["Computation"]:
        if "calls" not in self.opdef.traits:    # the CALLS trait
            return []
        out = []
        for v in self.attrs.values():
            if isinstance(v, Computation):
                out.append(v)
            elif isinstance(v, tuple) and v and isinstance(v[0], Computation):
                out.extend(v)
        return out

    def set_operand(self, i: int, new: "Instruction") -> None:
        old = self.operands[i]
        if old is new:
            return
        ops = self.operands
        known = _uses(self, new)
        ops[i] = new
        if old not in ops:
            old.users.remove(self)
        if not known:
            new.users.append(self)
        _touch(self)
        _touch(old)
        _touch(new)

    def append_operand(self, op: "Instruction") -> None:
        known = _uses(self, op)
        self.operands.append(op)
        if not known:
            op.users.append(self)
        _touch(self)
        _touch(op)

    def remove_operand(self, i: int) -> "Instruction":
        """Drop operand slot i (later slots shift down); returns the old operand."""
        old = self.operands.pop(i)
        if old not in self.operands:
            old.users.remove(self)
        _touch(self)
        _touch(old)
        return old

    def replace_all_uses_with(self, new: "Instruction") -> None:
        """ReplaceAllUsesWith: every use of self (and the root slot) becomes `new`; `new`
        itself keeps using self if it did. Fusion users whose operands become duplicates
        are deduplicated (HloFusionInstruction::DeduplicateFusionOperands)."""
        fusions = []
        kept = []
        _touch(self)
        _touch(new)
        for user in self.users:
            if user is new:
                kept.append(user)
                continue
            _touch(user)
            ops = user.operands
            known = _uses(user, new)
            if len(ops) < 8:
                for i, op in enumerate(ops):
                    if op is self:
                        ops[i] = new
            else:                   # wide (a root tuple): find the slots in C, one scan
                i = ops.index(self)
                while True:
                    ops[i] = new
                    try:
                        i = ops.index(self, i + 1)
                    except ValueError:
                        break
            if not known:
                new.users.append(user)
            if user.opdef.name == "fusion":
                fusions.append(user)
        self.users = kept
        comp = self.parent
        if comp is not None and comp.root is self:
            comp.root = new         # both touched above
        if fusions:
            from .graph import dedupe_fusion_operands
            for fusion in fusions:
                dedupe_fusion_operands(fusion)

    def set_shape(self, shape: Shape) -> None:
        """A new result shape (XLA's mutable_shape), for passes that narrow a result."""
        self.shape = shape
        _touch_around(self)

    def has_control_dependencies(self) -> bool:
        return bool(self.control_predecessors) or bool(self.control_successors)

    def __repr__(self) -> str:
        return f"<{self.opcode} %{self.name}: {self.shape}>"


_NO_CHANGES: frozenset = frozenset()


class Computation:
    """Instructions in storage order. Edits are O(1): removals are marked and inserts
    before or after an instruction are queued, and the stored list is settled (in one
    pass) the next time `instructions` is read, so a pass that removes or inserts
    thousands of instructions between reads does not rewrite the list each time."""

    def __init__(self, name: str, loc=None):
        self.name = name
        self.loc = loc
        self._insts: list[Instruction] = []
        self._gone: set = set()            # removed, still in _insts until settled
        self._before: dict = {}            # anchor -> instructions inserted before it
        self._after: dict = {}             # anchor -> instructions inserted after it
        self.parameters: list[Instruction] = []
        self.root: Instruction | None = None
        self.is_entry = False
        self.parent: Module | None = None
        self.is_async_sugar = False        # wrapper made for `op-start` syntax sugar
        # Change tracking (see the module docstring): bumped by every edit; the
        # instructions to re-verify; whether all of them are (a new order, a new
        # thread or fusion flag).
        self.generation = 0
        self._changed: set = set()
        self._changed_all = True
        self._thread: str | None = None
        self._is_fusion = False

    @property
    def execution_thread(self) -> str | None:
        return self._thread

    @execution_thread.setter
    def execution_thread(self, thread: str | None) -> None:
        if thread != self._thread:
            self._thread = thread
            self.mark_all_changed()

    @property
    def is_fusion_computation(self) -> bool:
        return self._is_fusion

    @is_fusion_computation.setter
    def is_fusion_computation(self, value: bool) -> None:
        if value != self._is_fusion:
            self._is_fusion = value
            self.mark_all_changed()

    def mark_all_changed(self) -> None:
        """Every instruction of the computation is to be re-verified."""
        self._changed_all = True
        self.generation += 1

    def take_changes(self) -> tuple[bool, set]:
        """(all changed?, the instructions recorded as changed) since the last call;
        both are reset. The set may name instructions removed since."""
        changed = self._changed
        if changed:
            self._changed = set()
        out = (self._changed_all, changed or _NO_CHANGES)
        self._changed_all = False
        return out

    @property
    def instructions(self) -> list[Instruction]:
        if self._gone or self._before or self._after:
            self._settle()
        return self._insts

    @instructions.setter
    def instructions(self, order: list[Instruction]) -> None:
        self._insts = list(order)
        self._gone = set()
        self._before = {}
        self._after = {}
        self.mark_all_changed()

    def _settle(self) -> None:
        """Apply the queued removals and inserts to the stored list. An insert before
        (after) X lands where list.insert at X's position (X's position + 1) would
        have put it at the time of the call."""
        gone, before, after = self._gone, self._before, self._after
        if not before and not after:
            self._insts = [i for i in self._insts if i not in gone]
        else:
            out = []
            for top in self._insts:
                if top not in before and top not in after:
                    if top not in gone:
                        out.append(top)
                    continue
                stack = [(False, top)]      # (emit, inst); not emit: expand it
                while stack:
                    emit, x = stack.pop()
                    if emit:
                        if x not in gone:
                            out.append(x)
                        continue
                    for a in after.get(x, ()):
                        stack.append((False, a))
                    stack.append((True, x))
                    for b in reversed(before.get(x, ())):
                        stack.append((False, b))
            self._insts = out
        self._gone = set()
        self._before = {}
        self._after = {}

    def add_instruction(self, inst: Instruction, before: Instruction | None = None,
                        after: Instruction | None = None) -> Instruction:
        """Add `inst` at the end, or just before `before`, or just after `after`."""
        if inst in self._gone:              # re-added before its removal was settled
            self._settle()
        anchor = before if before is not None else after
        if anchor is not None and (anchor.parent is not self or anchor in self._gone):
            raise ValueError(f"%{anchor.name} is not an instruction of {self.name}")
        inst.parent = self
        _touch_around(inst)
        if anchor is None:
            self._insts.append(inst)
        elif before is not None:
            self._before.setdefault(before, []).append(inst)
        else:
            self._after.setdefault(after, []).append(inst)
        if inst.opcode == "parameter":
            n = inst.parameter_number
            while len(self.parameters) <= n:
                self.parameters.append(None)
            self.parameters[n] = inst
        return inst

    def set_root_instruction(self, inst: Instruction) -> None:
        """HloComputation::set_root_instruction: `inst` (already in self) is the root."""
        if inst.parent is not self:
            raise ValueError(f"root %{inst.name} is not an instruction of {self.name}")
        if self.root is not None and self.root.parent is self:
            _touch(self.root)
        self.root = inst
        _touch(inst)

    def remove_instruction(self, inst: Instruction) -> None:
        if inst.users:
            raise ValueError(f"cannot remove {inst.name}: it still has users")
        if inst.parent is not self or inst in self._gone:
            raise ValueError(f"{inst.name} is not an instruction of {self.name}")
        ops = inst.operands
        for op in (dict.fromkeys(ops) if len(ops) > 1 else ops):
            try:
                op.users.remove(inst)   # listed once: one scan, not `in` then remove
            except ValueError:
                pass
            _touch(op)
        if inst.control_predecessors or inst.control_successors:
            inst.drop_all_control_deps()
        self._gone.add(inst)
        self._changed.discard(inst)
        self.generation += 1
        inst.parent = None

    def remove_instructions(self, insts) -> None:
        """Remove a set of non-parameter instructions used only by each other, each
        surviving operand's users list filtered once (DCE removes thousands at a time)."""
        gone = set(insts)
        for inst in gone:
            if inst.parent is not self or inst.opcode == "parameter" or \
                    inst in self._gone or any(u not in gone for u in inst.users):
                raise ValueError(f"cannot remove {inst.name} from {self.name}")
        kept: dict = {}                 # surviving operand -> its users that go
        for inst in gone:
            ops = inst.operands
            for op in (dict.fromkeys(ops) if len(ops) > 1 else ops):
                if op not in gone:
                    kept.setdefault(op, []).append(inst)
        changed = self._changed
        changed.update(kept)
        changed.difference_update(gone)
        self.generation += 1
        for op, leaving in kept.items():
            users = op.users
            # A few users out of many (a shared constant or parameter, removals flushed
            # one rewrite at a time): list.remove's C scans instead of rebuilding the
            # list in Python each time, which was O(users) per flush.
            if len(leaving) <= 4:
                for u in leaving:
                    try:
                        users.remove(u)
                    except ValueError:
                        pass
            else:
                users[:] = [u for u in users if u not in gone]
        for inst in gone:
            inst.users = []
            if inst.control_predecessors or inst.control_successors:
                inst.drop_all_control_deps()
            inst.parent = None
        self._gone |= gone

    def remove_parameter(self, number: int, renumber: bool = True) -> None:
        """Remove unused parameter `number`; later parameters move down one slot (and,
        with `renumber`, get their new numbers)."""
        self.remove_instruction(self.parameters[number])
        del self.parameters[number]
        self.generation += 1
        if renumber:
            for n in range(number, len(self.parameters)):
                self.parameters[n].parameter_number = n

    def set_instruction_order(self, order: list[Instruction], check: bool = True) -> None:
        """Reorder the instructions (a permutation; `check=False`: known to be one)."""
        if check and (len(order) != len(self.instructions) or
                      {id(i) for i in order} != {id(i) for i in self.instructions}):
            raise ValueError(f"new order of {self.name} is not a permutation")
        if self._gone or self._before or self._after:
            self._settle()
        # Same instructions, same edges: nothing a check reads changed.
        self._insts = list(order)
        self.generation += 1

    def instruction_by_name(self, name: str) -> Instruction | None:
        for inst in self.instructions:
            if inst.name == name:
                return inst
        return None

    @property
    def result_shape(self) -> Shape:
        return self.root.shape

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    def __repr__(self) -> str:
        return f"<computation {self.name}>"


class Module:
    def __init__(self, name: str):
        self.name = name
        self.attrs: dict[str, Any] = {}        # header attributes (typed or verbatim)
        self.stack_frames = None               # hloc.ir.stackframes.StackFrameIndex | None
        self.computations: list[Computation] = []
        self._by_name: dict[str, Computation] = {}
        self.entry: Computation | None = None
        self.source = None                     # hloc.diagnostics.Source it came from
        self.read_with_operand_shapes = False  # old long form: `add(f32[2]{0} %a, ...)`
        self.read_with_async_sugar = False     # `custom-call-start(...)` instead of async-start
        self.generation = 0                    # bumped when computations come, go or move

    def add_computation(self, comp: Computation) -> Computation:
        comp.parent = self
        comp.mark_all_changed()
        self.generation += 1
        self.computations.append(comp)
        self._by_name[comp.name] = comp
        return comp

    def remove_computation(self, comp: Computation) -> None:
        self.remove_computations([comp])

    def remove_computations(self, comps) -> None:
        """Remove computations (of this module), the list rewritten once."""
        gone = set(comps)
        if not gone:
            return
        kept = [c for c in self.computations if c not in gone]
        if len(kept) + len(gone) != len(self.computations):
            raise ValueError("removing a computation that is not in the module")
        self.computations[:] = kept
        self.generation += 1
        for comp in gone:
            if self._by_name.get(comp.name) is comp:
                del self._by_name[comp.name]

    def set_computation_order(self, order: list[Computation]) -> None:
        """Reorder the computations (a permutation of them), e.g. into post order."""
        if len(order) != len(self.computations) or \
                {id(c) for c in order} != {id(c) for c in self.computations}:
            raise ValueError("new computation order is not a permutation")
        self.computations = list(order)
        self.generation += 1

    def computation(self, name: str) -> Computation | None:
        comp = self._by_name.get(name)
        if comp is not None and comp.name != name:   # renamed since it was added
            self._by_name = {c.name: c for c in self.computations}
            comp = self._by_name.get(name)
        return comp

    def post_order(self) -> list[Computation]:
        """Callees before callers, keeping the stored order where it already is one."""
        from .graph import computation_post_order
        return computation_post_order(self, from_uncalled=False)

    def clone(self, suffix: str = "clone") -> "Module":
        """HloModule::Clone: an independent deep copy named `<name>-<suffix>` (names get
        XLA's clone suffix; suffix="" keeps them)."""
        from .clone import clone_module
        return clone_module(self, suffix)

    def run(self, *args, backend: str = "interpreter", seed: int = 42):
        """Run the ENTRY computation on `args` with `backend` (hloc.run)."""
        return _hook("run")(self, *args, backend=backend, seed=seed)

    def _repr_svg_(self):
        """Jupyter: the module drawn by Graphviz (None without `dot`; HTML is used)."""
        return _hook("repr_svg")(self)

    def _repr_html_(self):
        """Jupyter: the interactive graph page."""
        return _hook("repr_html")(self)

    def is_scheduled(self) -> bool:
        return bool(self.attrs.get("is_scheduled"))

    def __repr__(self) -> str:
        return f"<module {self.name}>"
