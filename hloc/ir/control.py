"""Control edges of an instruction (XLA's AddControlDependencyTo,
RemoveControlDependencyTo, DropAllControlDeps and friends), kept in both directions; a
mixin of hloc.ir.module.Instruction. Each edit is recorded for the verifier
(hloc.ir.changes)."""
from __future__ import annotations

from .changes import touch as _touch


class ControlEdges:
    __slots__ = ()

    def add_control_dependency_to(self, succ: "ControlEdges") -> None:
        """`succ` runs after self."""
        if succ not in self.control_successors:
            _edges(self, "control_successors").append(succ)
            _edges(succ, "control_predecessors").append(self)
            _touch(self)
            _touch(succ)

    def remove_control_dependency_to(self, succ: "ControlEdges") -> None:
        self.control_successors = [s for s in self.control_successors if s is not succ]
        succ.control_predecessors = [p for p in succ.control_predecessors if p is not self]
        _touch(self)
        _touch(succ)

    def drop_all_control_deps(self) -> None:
        _touch(self)
        for succ in self.control_successors:
            succ.control_predecessors = [p for p in succ.control_predecessors
                                         if p is not self]
            _touch(succ)
        for pred in self.control_predecessors:
            pred.control_successors = [s for s in pred.control_successors if s is not self]
            _touch(pred)
        self.control_successors = ()
        self.control_predecessors = ()

    def safely_drop_all_control_deps(self) -> None:
        """SafelyDropAllControlDependencies: each control predecessor becomes one of each
        control successor's before self's edges are dropped (the order is kept)."""
        for succ in self.control_successors:
            for pred in self.control_predecessors:
                pred.add_control_dependency_to(succ)
        self.drop_all_control_deps()

    def copy_control_deps_from(self, other: "ControlEdges") -> None:
        """CopyAllControlDepsFrom: self gets other's predecessors and successors."""
        for pred in other.control_predecessors:
            pred.add_control_dependency_to(self)
        for succ in other.control_successors:
            self.add_control_dependency_to(succ)

    def move_control_deps_to(self, new: "ControlEdges") -> None:
        """`new` takes self's place in each of its control edges (same positions)."""
        _touch(self)
        _touch(new)
        for pred in self.control_predecessors:
            _touch(pred)
            succs = pred.control_successors
            succs[succs.index(self)] = new
            if new not in new.control_predecessors:
                _edges(new, "control_predecessors").append(pred)
        for succ in self.control_successors:
            _touch(succ)
            preds = succ.control_predecessors
            preds[preds.index(self)] = new
            _edges(new, "control_successors").append(succ)
        self.control_predecessors = ()
        self.control_successors = ()


def _edges(inst: ControlEdges, slot: str) -> list:
    """inst's control edge list `slot`, made a list if it is the empty tuple."""
    edges = getattr(inst, slot)
    if type(edges) is tuple:
        edges = []
        setattr(inst, slot, edges)
    return edges
