"""What the graph API keeps true (hloc.ir.module's edits, hloc.ir.graph's walks and
edits), checked: `graph_errors` for a whole module or, for the incremental verifier, the
edges of the instructions a pass changed."""
from __future__ import annotations

from .module import Computation, Module


def graph_errors(module: Module, only: dict | None = None) -> list[str]:
    """What the graph API keeps true, as messages (empty when it holds): each users list
    names each user once; operands and users, control predecessors and successors are
    symmetric; every instruction lives in its computation; the root is one of them.
    `only` (computation -> instructions): check those instructions' edges only."""
    if only is not None:
        return _local_graph_errors(only)
    errors = []
    for comp in module.computations:
        _comp_graph_errors(comp, errors)
    return errors


def _comp_graph_errors(comp: Computation, errors: list) -> None:
    insts = comp.instructions
    members = set(insts)
    if comp.root is not None and comp.root not in members:
        errors.append(f"root %{comp.root.name} of {comp.name} is not in it")
    wide: dict = {}                 # user -> set of its operands, for wide users
    edges = entries = 0
    for inst in insts:
        if inst.parent is not comp:
            errors.append(f"%{inst.name} in {comp.name}: parent is not its computation")
        users = inst.users
        if users:
            if len(users) > 1 and len(set(users)) != len(users):
                errors.append(f"%{inst.name} in {comp.name}: a user is listed twice")
            for u in users:
                ops = u.operands
                if len(ops) > 16:
                    ops = wide.get(u)
                    if ops is None:
                        ops = wide[u] = set(u.operands)
                if inst not in ops:
                    errors.append(f"%{inst.name} in {comp.name}: user %{u.name} does "
                                  f"not use it")
            entries += len(users)
        ops = inst.operands
        if ops:
            for o in ops:
                if o not in members:
                    errors.append(f"%{inst.name} in {comp.name}: operand %{o.name} is "
                                  f"not in {comp.name}")
            edges += len(set(ops)) if len(ops) > 1 else 1
        if inst.control_predecessors or inst.control_successors:
            where = f"%{inst.name} in {comp.name}"
            for p in inst.control_predecessors:
                if p not in members or inst not in p.control_successors:
                    errors.append(f"{where}: control predecessor %{p.name} is not linked")
            for s in inst.control_successors:
                if s not in members or inst not in s.control_predecessors:
                    errors.append(f"{where}: control successor %{s.name} is not linked")
    # Every users entry names a distinct user that uses the instruction, so when
    # the counts agree every (operand, user) edge is listed; else find the missing.
    if edges != entries:
        for inst in insts:
            for o in dict.fromkeys(inst.operands):
                if o in members and inst not in o.users:
                    errors.append(f"%{inst.name} in {comp.name}: missing from the "
                                  f"users of %{o.name}")


def _local_graph_errors(only: dict) -> list[str]:
    """graph_errors' checks of the given instructions' own edges (membership is
    `parent`: the API sets it when an instruction joins or leaves a computation); a
    computation's whole instruction list (`instructions` itself) is checked as
    graph_errors does."""
    errors = []
    wide: dict = {}          # an instruction with many operands or users -> their set

    def has(inst, slot: str, x) -> bool:
        seq = getattr(inst, slot)
        if len(seq) <= 16:
            return x in seq
        key = (inst, slot)
        got = wide.get(key)
        if got is None:
            got = wide[key] = set(seq)
        return x in got

    for comp, insts in only.items():
        if insts is comp.instructions:
            _comp_graph_errors(comp, errors)
            continue
        if comp.root is not None and comp.root.parent is not comp:
            errors.append(f"root %{comp.root.name} of {comp.name} is not in it")
        for inst in insts:
            if inst.parent is not comp:
                errors.append(f"%{inst.name} in {comp.name}: parent is not its computation")
            users = inst.users
            if len(users) > 1 and len(set(users)) != len(users):
                errors.append(f"%{inst.name} in {comp.name}: a user is listed twice")
            for u in users:
                if u.parent is not comp or not has(u, "operands", inst):
                    errors.append(f"%{inst.name} in {comp.name}: user %{u.name} does not "
                                  f"use it")
            for o in inst.operands:
                if o.parent is not comp:
                    errors.append(f"%{inst.name} in {comp.name}: operand %{o.name} is not "
                                  f"in {comp.name}")
                elif not has(o, "users", inst):
                    errors.append(f"%{inst.name} in {comp.name}: missing from the users of "
                                  f"%{o.name}")
            for p in inst.control_predecessors:
                if p.parent is not comp or inst not in p.control_successors:
                    errors.append(f"%{inst.name} in {comp.name}: control predecessor "
                                  f"%{p.name} is not linked")
            for s in inst.control_successors:
                if s.parent is not comp or inst not in s.control_predecessors:
                    errors.append(f"%{inst.name} in {comp.name}: control successor "
                                  f"%{s.name} is not linked")
    return errors
