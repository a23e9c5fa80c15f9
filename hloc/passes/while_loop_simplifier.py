"""simplify-while-loops (XLA's WhileLoopSimplifier); while-loop-constant-sinking is in
while_loop_constant_sinking.py.

simplify-while-loops visits every while whose body and condition have no other callers
and applies the first of: removing tuple elements the loop never needs (dead
parameters: unused after the loop and not affecting other elements, the condition or a
side effect, singly or as a connected group), removing elements that are the same
constant in the init and the body root; then (no send/recv inside) replacing uses of
scalar loop-invariant elements with their constant init, and removing loops with a trip
count of 0 (replaced by the init) or 1 (the body inlined on the init). Trip counts come
from XLA's induction-variable analysis with brute-force evaluation of at most one
iteration. Not implemented: merging repeated tuple indices, flattening nested tuples,
merging induction variables. A DCE over the module follows any change, as in XLA.
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from ..ir.call_graph import CallGraph
from ..ir.graph import replace_instruction, stable_post_order as post_order
from ..ir.clone import clone_instruction, inline_computation
from ..ir.rewriter import add_instruction, add_parameter, uniquer
from ..ir.shape import ArrayShape, TupleShape
from ..ops import opcodes_with
from ..ops.base import COLLECTIVE, SEND_RECV
from . import PassContext, register
from .base import Pass
from ..ir.rewriter import computation_has_side_effect, has_side_effect
from .dce import run_dce
from .simplify_util import Builder, NotConstant, constant_array, evaluate


_SEND_RECV = opcodes_with(SEND_RECV)


def _body(w):
    return w.attrs["body"]


def _cond(w):
    return w.attrs["condition"]


def _gtes(comp: Computation) -> list[Instruction]:
    p = comp.parameters[0]
    return [u for u in p.users if u.opcode == "get-tuple-element"]


def _all_param_users_gte(w) -> bool:
    return all(u.opcode == "get-tuple-element"
               for c in (_body(w), _cond(w)) for u in c.parameters[0].users)


def _contains(comp: Computation, opcodes, seen=None) -> bool:
    seen = seen if seen is not None else set()
    if id(comp) in seen:
        return False
    seen.add(id(comp))
    for inst in comp.instructions:
        if inst.opcode in opcodes:
            return True
        if any(_contains(c, opcodes, seen) for c in inst.called_computations()):
            return True
    return False


# ---------------------------------------------------------------------------
# Rebuilding a loop with fewer tuple elements

def _rebuild(comp: Computation, module: Module, new_shape: TupleShape, index_map: dict,
             constants: dict, root_indices=None) -> Computation:
    """Clone a loop computation for a narrower state: GTE(param, i) becomes
    GTE(param', index_map[i]), a clone of constants[i], or is dropped (with everything
    depending on it). For the body, the root becomes tuple(root operands in
    root_indices)."""
    names = uniquer(module)
    new = Computation(names.unique(f"{comp.name}.clone"))
    module.add_computation(new)
    param = comp.parameters[0]
    mapping: dict[int, Instruction | None] = {}
    new_param = add_parameter(new, new_shape, 0, param.name, param.attrs)
    mapping[id(param)] = new_param
    for inst in post_order(comp):
        if inst is param:
            continue
        if inst is comp.root and root_indices is not None:
            continue
        if inst.opcode == "get-tuple-element" and inst.operands[0] is param:
            i = inst.attrs["index"]
            if i in index_map:
                attrs = dict(inst.attrs)
                attrs["index"] = index_map[i]
                mapping[id(inst)] = add_instruction(new, "get-tuple-element", inst.shape,
                                                    [new_param], attrs,
                                                    name=f"{inst.name}.clone")
            elif i in constants:
                c = constants[i]
                mapping[id(inst)] = clone_instruction(c, new, [], name=f"{c.name}.clone")
            else:
                mapping[id(inst)] = None
            continue
        ops = [mapping.get(id(o)) for o in inst.operands]
        if any(o is None for o in ops):
            mapping[id(inst)] = None
            continue
        mapping[id(inst)] = clone_instruction(inst, new, ops, name=f"{inst.name}.clone")
    if root_indices is not None:
        root = comp.root
        elems = [mapping[id(root.operands[i])] for i in root_indices]
        new.set_root_instruction(add_instruction(
            new, "tuple", TupleShape(tuple(e.shape for e in elems)), elems,
            name=f"{root.name}.clone"))
    else:
        new.set_root_instruction(mapping[id(comp.root)])
    for inst in comp.instructions:
        clone = mapping.get(id(inst))
        if clone is not None:
            for p in inst.control_predecessors:
                if mapping.get(id(p)) is not None:
                    mapping[id(p)].add_control_dependency_to(clone)
    return new


def _narrow_loop(w: Instruction, keep: list[int], constants: dict) -> Instruction:
    """Replace while `w` by one over the elements in `keep`; elements in `constants`
    become those constants (inside and after the loop), the rest (dead) read the init."""
    comp, module = w.parent, w.parent.parent
    init = w.operands[0]
    old_shape = init.shape
    index_map = {old: new for new, old in enumerate(keep)}
    new_shape = TupleShape(tuple(old_shape.elements[i] for i in keep))
    cond = _rebuild(_cond(w), module, new_shape, index_map, constants)
    body = _rebuild(_body(w), module, new_shape, index_map, constants, root_indices=keep)
    b = Builder(comp, before=w)
    if init.opcode == "tuple":
        elems = [init.operands[i] for i in keep]
    else:
        elems = [b.gte(init, i) for i in keep]
    new_init = b.tuple(elems)
    attrs = dict(w.attrs)
    attrs["condition"], attrs["body"] = cond, body
    new_while = b.add("while", new_shape, [new_init], attrs, name=w.name)
    outs = []
    for i in range(len(old_shape.elements)):
        if i in index_map:
            outs.append(b.gte(new_while, index_map[i]))
        elif i in constants:
            outs.append(init.operands[i])
        else:
            outs.append(b.gte(init, i))
    replace_instruction(w, b.tuple(outs))
    return new_while


# ---------------------------------------------------------------------------
# Dead parameters

def _dead_params(w: Instruction) -> list[int] | None:
    """TryRemoveDeadWhileParams: the indices to keep, or None when all are needed."""
    init = w.operands[0]
    body, cond = _body(w), _cond(w)
    root = body.root
    if not isinstance(init.shape, TupleShape) or root.opcode != "tuple":
        return None
    n = len(init.shape.elements)
    if n == 0 or not _all_param_users_gte(w):
        return None
    comp = w.parent
    used_after = set()
    if comp.root is w or any(u.opcode != "get-tuple-element" for u in w.users):
        used_after = set(range(n))
    else:
        used_after = {u.attrs["index"] for u in w.users}
    bparam, cparam = body.parameters[0], cond.parameters[0]

    def passed_through(i):
        o = root.operands[i]
        return o.opcode == "get-tuple-element" and o.operands[0] is bparam and \
            o.attrs["index"] == i

    candidate = {i for i in range(n) if i not in used_after or passed_through(i)}
    tracked = lambda x: x is not bparam and x is not cparam and x is not root  # noqa: E731
    deps: dict[int, frozenset] = {}
    parent: dict[int, int] = {}

    def find(k):
        while parent.setdefault(k, k) != k:
            parent[k] = parent.setdefault(parent[k], parent[k])
            k = parent[k]
        return k

    def union(a, b):
        parent[find(id(a))] = find(id(b))

    sinks = []
    for c in (body, cond):
        p = c.parameters[0]
        for inst in post_order(c):
            if not tracked(inst):
                continue
            if inst.opcode == "get-tuple-element" and inst.operands[0] is p:
                i = inst.attrs["index"]
                deps[id(inst)] = frozenset({i}) if i in candidate else frozenset()
                out = root.operands[i]
                if out is not inst:
                    union(out, inst)
            else:
                acc = set()
                for o in inst.operands:
                    if tracked(o):
                        acc |= deps.get(id(o), frozenset())
                        union(o, inst)
                deps[id(inst)] = frozenset(acc)
            if has_side_effect(inst) or inst is cond.root:
                sinks.append(inst)
    side = set()
    for s in sinks:
        side |= deps.get(id(s), frozenset())
    others = set()
    for i in range(n):
        d = deps.get(id(root.operands[i]), frozenset())
        others |= (d - {i}) if i in candidate else d
    keep = set(range(n))
    for i in range(n):
        if i not in used_after and i not in others and i not in side:
            keep.discard(i)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(id(root.operands[i])), []).append(i)
    for c in (body, cond):
        for g in _gtes(c):
            groups.setdefault(find(id(g)), []).append(g.attrs["index"])
    for members in groups.values():
        if not any(i not in candidate or i in side for i in members):
            keep -= set(members)
    if len(keep) == n:
        return None
    return sorted(keep)


def _constant_params(w: Instruction):
    """TryRemoveConstantParams: {index: constant} equal in the init and the body root."""
    init, root = w.operands[0], _body(w).root
    if init.opcode != "tuple" or root.opcode != "tuple":
        return {}
    out = {}
    for i, (a, b) in enumerate(zip(init.operands, root.operands)):
        if a.opcode == "constant" and b.opcode == "constant" and a.shape == b.shape:
            va, vb = constant_array(a), constant_array(b)
            if va is not None and vb is not None and \
                    va.tobytes() == vb.tobytes():
                out[i] = a
    return out


# ---------------------------------------------------------------------------
# Trip count (while_loop_analysis.cc)

def _trace(inst: Instruction) -> Instruction:
    """TraceThroughCopyAndGteTupleChain."""
    while True:
        if inst.opcode == "get-tuple-element" and inst.operands[0].opcode == "tuple":
            inst = inst.operands[0].operands[inst.attrs["index"]]
        elif inst.opcode in ("copy", "copy-start", "copy-done"):
            inst = inst.operands[0]
        else:
            return inst


def _is_scalar_op(inst: Instruction) -> bool:
    if inst.opcode in _SEND_RECV or inst.opcode == "custom-call" or \
            COLLECTIVE in inst.opdef.traits:
        return False
    for c in inst.called_computations():
        if not all(_is_scalar_op(i) for i in c.instructions):
            return False
    return isinstance(inst.shape, ArrayShape) and inst.shape.rank == 0


def _gte_dependence(out: Instruction, param: Instruction):
    """GetGTEDependenceIndices (without looking into calls and fusions)."""
    indices, seen, stack = set(), set(), [out]
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst is param or inst.opcode == "parameter":
            return None
        if inst.opcode == "get-tuple-element":
            if not (isinstance(inst.shape, ArrayShape) and inst.shape.rank == 0):
                return None
            src = inst.operands[0]
            while src.opcode == "copy":
                src = src.operands[0]
            if src is param:
                indices.add(inst.attrs["index"])
            elif src.opcode == "tuple":
                stack.extend(src.operands)
            else:
                return None
            continue
        if inst.opcode == "copy":
            stack.append(inst.operands[0])
            continue
        if inst.opcode in ("call", "fusion") or not _is_scalar_op(inst):
            return None
        stack.extend(inst.operands)
    return indices or None


def _indvar_index(w: Instruction):
    cond, body = _cond(w), _body(w)
    idx = _gte_dependence(cond.root, cond.parameters[0])
    if idx is None or len(idx) != 1 or w.operands[0].opcode != "tuple":
        return None
    (i,) = idx
    if body.root.opcode != "tuple":
        return None
    inc = _trace(body.root.operands[i])
    if _gte_dependence(inc, body.parameters[0]) != {i}:
        return None
    return i


def _non_constant_operand(inst: Instruction):
    found = None
    for o in inst.operands:
        if o.opcode != "constant":
            if found is not None and found is not o:
                return None
            found = o
    return found


def _unique_gte(param: Instruction, index: int):
    gtes = [u for u in param.users if u.opcode == "get-tuple-element" and
            u.attrs["index"] == index]
    return gtes[0] if len(gtes) == 1 else None


def trip_count_at_most_one(w: Instruction):
    """0 or 1 when the loop provably runs that many times, else None
    (ComputeWhileLoopTripCount with max_brute_force_iters=1)."""
    i = _indvar_index(w)
    if i is None:
        return None
    cond, body = _cond(w), _body(w)
    try:
        value = evaluate(_trace(w.operands[0].operands[i]))
    except NotConstant:
        return None
    update = body.root.operands[i]
    body_var = _non_constant_operand(update)
    cond_var = _non_constant_operand(cond.root)
    if body_var is None or body_var is not _unique_gte(body.parameters[0], i) or \
            cond_var is None or cond_var is not _unique_gte(cond.parameters[0], i):
        return None
    for count in range(2):
        try:
            keep_going = bool(evaluate(cond.root, {id(cond_var): value}))
        except NotConstant:
            return None
        if not keep_going:
            return count
        if count == 1:
            break
        try:
            value = evaluate(update, {id(body_var): value})
        except NotConstant:
            return None
    return None


def _remove_loop(w: Instruction) -> bool:
    """TryRemoveWhileLoop: trip count 0 => init; 1 => the body inlined."""
    if w.has_control_dependencies() or \
            computation_has_side_effect(_cond(w)):
        return False
    n = trip_count_at_most_one(w)
    if n == 0:
        replace_instruction(w, w.operands[0])
        return True
    fa = w.attrs.get("frontend_attributes")
    if fa is not None and "skip-simplify-while-loops_trip-count-one" in \
            getattr(fa, "text", str(fa)) and '"true"' in getattr(fa, "text", str(fa)):
        return False
    if n == 1 and not computation_has_side_effect(_body(w)):
        root = inline_computation(_body(w), [w.operands[0]], w.parent, w)
        replace_instruction(w, root)
        return True
    return False


def _propagate_constants(w: Instruction) -> bool:
    """TryPropagateConstant: scalar loop-invariant elements with a constant init."""
    init, body = w.operands[0], _body(w)
    root = body.root
    if init.opcode != "tuple" or root.opcode != "tuple":
        return False
    param = body.parameters[0]
    consts = {}
    for i, o in enumerate(root.operands):
        if o.opcode == "get-tuple-element" and o.operands[0] is param and \
                o.attrs["index"] == i and o.shape.rank == 0 and \
                init.operands[i].opcode == "constant":
            consts[i] = init.operands[i]
    if not consts:
        return False
    changed = False
    for comp in (_cond(w), body):
        for g in list(comp.parameters[0].users):
            if g.opcode == "get-tuple-element" and g.attrs["index"] in consts:
                c = consts[g.attrs["index"]]
                new = clone_instruction(c, comp, [], name=f"{c.name}.clone", before=g)
                g.replace_all_uses_with(new)
                changed = True
    return changed


@register
class WhileLoopSimplifier(Pass):
    name = "simplify-while-loops"

    def run(self, module: Module, ctx: PassContext) -> bool:
        changed = False
        whiles = [i for c in module.computations for i in c.instructions
                  if i.opcode == "while"]
        graph = None        # rebuilt only after a change (one per loop was O(loops x module))
        for w in whiles:
            if w.parent is None or w.parent.parent is not module:
                continue
            if graph is None:
                graph = CallGraph(module)
            if len(graph.caller_instructions(_body(w))) > 1 or \
                    len(graph.caller_instructions(_cond(w))) > 1:
                continue
            if self._simplify(w):
                changed = True
                graph = None
        if changed:
            run_dce(module)
        return changed

    @staticmethod
    def _simplify(w) -> bool:
        """One loop's rewrites, as before; True when it changed the module."""
        pinned = w.has_control_dependencies()
        keep = None if pinned else _dead_params(w)
        if keep is not None:
            _narrow_loop(w, keep, {})
            return True
        consts = _constant_params(w)
        if consts and not pinned and _all_param_users_gte(w):
            n = len(w.shape.elements)
            if len(consts) == n:
                replace_instruction(w, w.operands[0])
            else:
                _narrow_loop(w, [i for i in range(n) if i not in consts], consts)
            return True
        if _contains(_body(w), _SEND_RECV) or _contains(_cond(w), _SEND_RECV):
            return False
        changed = _propagate_constants(w)
        if _remove_loop(w):
            changed = True
        return changed
