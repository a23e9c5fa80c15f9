"""What to draw: the views of a module and which instructions each shows.

A view is one computation drawn with (`nested`) or without its called computations as
clusters inside it, under a `Filter` that says per instruction whether it is shown and how
(XLA's NodeFilterResult). `--around` is XLA's MakeNodeRadiusAroundFilter: a breadth-first
walk over operands, users (not past a node with more than 16 users, nor from a constant,
nor into a non-root tuple's operands) and called computations' roots. Without a selection
a module over `max_nodes` is drawn one computation per view, callees collapsed to a
`calls:` line, with a note saying so.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..diagnostics import InputError

NORMAL, HIGHLIGHT, SOME_OPERANDS, OMIT_OPERANDS, SOME_USERS = (
    "normal", "highlight", "some_operands_omitted", "omit_operands", "some_users_omitted")
DEEMPHASISED = {SOME_OPERANDS, OMIT_OPERANDS, SOME_USERS}

DEFAULT_MAX_NODES = 1500
DEFAULT_RADIUS = 3
_MAX_USERS_TO_RENDER = 16        # XLA's kMaxUsersToRender
_SMALL_SUBCOMPUTATION = 64       # drawn whole when its caller is in an --around view


class Filter:
    """Per instruction: None (hidden) or one of the states above."""

    def __init__(self, states: dict | None = None, whole=()):
        self.states = states
        self.whole = set(whole)         # id()s of computations drawn whole

    def state(self, inst) -> str | None:
        if self.states is None:
            return NORMAL
        s = self.states.get(id(inst))
        if s is not None:
            return s
        return NORMAL if id(inst.parent) in self.whole else None


@dataclass
class ViewSpec:
    top: object                          # the Computation drawn
    filter: Filter
    nested: bool                         # called computations drawn inside as clusters
    title: str
    notes: list[str] = field(default_factory=list)


def is_trivial(comp) -> bool:
    """XLA's MatchTrivialComputation shape: root = binary op of the two scalar params."""
    if len(comp.instructions) != 3 or comp.root is None:
        return False
    root = comp.root
    return (len(root.operands) == 2 and
            {o.opcode for o in root.operands} == {"parameter"} and
            len({id(o) for o in root.operands}) == 2)


def shown_callees(inst, fusions: str) -> list:
    """Called computations drawn as clusters under `inst` in a nested view."""
    out = []
    for comp in inst.called_computations():
        if inst.opcode == "fusion":
            if fusions == "expanded":
                out.append(comp)
        elif not is_trivial(comp):
            out.append(comp)
    return out


def _count(comp, fusions: str, nested: bool) -> int:
    seen, total, work = {id(comp)}, 0, [comp]
    while work:
        c = work.pop()
        total += len(c.instructions)
        for inst in c.instructions:
            for sub in shown_callees(inst, fusions):
                if (nested or inst.opcode == "fusion") and id(sub) not in seen:
                    seen.add(id(sub))
                    work.append(sub)
    return total


def find_instruction(module, name: str):
    name = name.lstrip("%")
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.name == name:
                return inst
    raise InputError(f"no instruction named '{name}' in module {module.name}")


def find_computation(module, name: str):
    comp = module.computation(name.lstrip("%"))
    if comp is None:
        names = ", ".join(c.name for c in module.computations[:10])
        more = ", ..." if len(module.computations) > 10 else ""
        raise InputError(f"no computation named '{name}' in module {module.name} "
                         f"(it has {names}{more})")
    return comp


def around_filter(center, radius: int) -> Filter:
    """XLA's MakeNodeRadiusAroundFilter, with subcomputations drawn only as reached."""
    states: dict[int, str] = {}
    insts: dict[int, object] = {}
    work = deque([(center, 0)])
    while work:
        inst, depth = work.popleft()
        if id(inst) in states:
            continue
        states[id(inst)] = NORMAL
        insts[id(inst)] = inst
        if depth == radius:
            continue
        if inst is center or inst.opcode != "tuple":
            for op in inst.operands:
                if id(op) not in states:
                    work.append((op, depth + 1))
        for comp in inst.called_computations():
            if comp.root is not None:
                work.append((comp.root, depth + 1))
        if inst.opcode == "constant":
            continue
        if len(inst.users) > _MAX_USERS_TO_RENDER:
            states[id(inst)] = SOME_USERS
            continue
        for user in inst.users:
            if id(user) not in states:
                work.append((user, depth + 1))
    whole = set()
    for inst in insts.values():
        for comp in inst.called_computations():
            if inst.opcode == "fusion" or len(comp.instructions) <= _SMALL_SUBCOMPUTATION:
                whole.add(id(comp))

    def displayed(i) -> bool:
        return id(i) in states or i.opcode == "constant" or id(i.parent) in whole

    for key, inst in insts.items():
        ops = inst.operands
        shown = [displayed(o) for o in ops]
        if any(shown) and not all(shown):
            states[key] = SOME_OPERANDS
        elif ops and not any(shown):
            states[key] = OMIT_OPERANDS
        if states[key] == SOME_USERS and all(displayed(u) for u in inst.users):
            states[key] = NORMAL
    states[id(center)] = HIGHLIGHT
    return Filter(states, whole)


def plan(module, *, computation: str | None = None, around: str | None = None,
         radius: int = DEFAULT_RADIUS, fusions: str = "expanded",
         max_nodes: int = DEFAULT_MAX_NODES) -> list[ViewSpec]:
    if fusions not in ("expanded", "collapsed"):
        raise InputError(f"fusions must be 'expanded' or 'collapsed', not '{fusions}'")
    if around is not None:
        if radius < 0:
            raise InputError("radius must be 0 or more")
        center = find_instruction(module, around)
        return [ViewSpec(center.parent, around_filter(center, radius), True,
                         f"Neighborhood of {radius} nodes around {center.name}")]
    if computation is not None:
        top = find_computation(module, computation)
    else:
        top = module.entry if module.entry is not None else module.computations[-1]
    title = f"{module.name}: computation {top.name}"
    total = _count(top, fusions, nested=True)
    if total <= max_nodes:
        return [ViewSpec(top, Filter(), True, title)]
    tops = [top] if computation is not None else _drawable(module, top, fusions)
    views = []
    for comp in tops:
        n = _count(comp, fusions, nested=False)
        note = (f"{total} instructions with called computations is over the limit of "
                f"{max_nodes}: drawing each computation on its own, called computations "
                f"collapsed to 'calls:' lines; use --around INSTR --radius N for a "
                f"neighbourhood")
        if n > max_nodes:
            note += f" (this computation alone has {n} instructions)"
        views.append(ViewSpec(comp, Filter(), False,
                              f"{module.name}: computation {comp.name}", [note]))
    return views


def _drawable(module, top, fusions: str) -> list:
    """`top` first, then every computation it reaches that is drawn on its own."""
    out, seen, work = [], {id(top)}, deque([top])
    while work:
        comp = work.popleft()
        out.append(comp)
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                continue
            for sub in shown_callees(inst, fusions):
                if id(sub) not in seen:
                    seen.add(id(sub))
                    work.append(sub)
    return out
