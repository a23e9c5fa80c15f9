"""Change tracking: what the verifier must look at again after an edit.

Every edit made through the IR API (hloc.ir.module, .control, .graph: operands, users,
control edges, shape, attributes, parameter numbers, root, adding, removing and
reordering instructions, the computation's thread and fusion flag) bumps the
computation's `generation` and records, in its change set, the instructions whose
verification could change: the edited instruction and, where an edit changes what a
neighbour's checks read (a shape, an attribute, a users list), the neighbours.
hloc.verify.incremental re-checks only those after a pass (`Computation.take_changes`
hands them over). Names and source locations are not tracked: no check reads them.
A computation already marked all-changed (new since the last verification, e.g. a fused
computation being built, or its list replaced) only bumps its generation: all of it is
re-checked anyway.
"""
from __future__ import annotations


def touch(inst) -> None:
    """Record an edit of `inst` (or of what its checks read) in its computation."""
    comp = inst.parent
    if comp is not None:
        comp.generation += 1
        if not comp._changed_all:   # else all of it is re-checked (a computation being built)
            comp._changed.add(inst)


def touch_around(inst) -> None:
    """`inst` changed in a way its operands' and users' checks may read (its shape, an
    attribute, its parameter number): all of them are recorded."""
    comp = inst.parent
    if comp is None:
        return
    comp.generation += 1
    if comp._changed_all:
        return
    changed = comp._changed
    changed.add(inst)
    if inst.operands:
        changed.update(inst.operands)
    if inst.users:
        changed.update(inst.users)
