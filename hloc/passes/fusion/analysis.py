"""Graph facts XLA's fusion decisions are made of, computed as XLA computes them.

HloInstruction's IsElementwise, IsFusible, HasSideEffect and OperandElementUse (which
follows fused computations, FusionReusesParamElements); HloComputation's
MakeInstructionPostOrder; HloReachabilityMap (as ancestor bitsets); and
FusionNodeIndexingEvaluation, kept up to date as producers are fused in, with its code
duplication limit. Used by decisions.py (the rules) and instruction_fusion.py (the pass).
"""
from __future__ import annotations

from functools import lru_cache

from ...ir.graph import operand_post_order, post_order
from ...ir.rewriter import has_side_effect
from ...ops import REGISTRY
from ...ops.base import CALLS, CONTROL_FLOW, ELEMENTWISE, MAY_SIDE_EFFECT, SIDE_EFFECT

# HloInstruction::UseKind, ordered as XLA orders it (the lattice meet is `min`).
REUSE, PERMUTING, USE, NO_USE = 0, 1, 2, 3

ALLOWED_CODE_DUPLICATION = 15      # FusionNodeIndexingEvaluation::kAllowedCodeDuplication

# ElementalIrEmitter::OpInvalidatesCache: ops that open new basic blocks.
_INVALIDATES_CACHE = frozenset({"concatenate", "dot", "dynamic-update-slice", "pad",
                                "reduce", "reduce-window"})


# ---------------------------------------------------------------------------
# Shapes

def is_array(shape) -> bool:
    return hasattr(shape, "dims") and shape.dtype.is_array


# Shapes are immutable, hashable (hash kept) and shared by many instructions; the
# fusion rules ask these facts of every operand again and again.
@lru_cache(maxsize=4096)
def true_rank(shape) -> int:
    return sum(1 for d in shape.dims if d != 1) if is_array(shape) else 0


def is_effective_scalar(shape) -> bool:
    return is_array(shape) and true_rank(shape) == 0


@lru_cache(maxsize=4096)
def elements(shape) -> int:
    return sum(leaf.size for leaf in shape.leaves() if is_array(leaf))


def byte_size(shape) -> int:
    return sum(leaf.size * max(1, leaf.dtype.bits // 8)
               for leaf in shape.leaves() if is_array(leaf))


def is_complex(shape) -> bool:
    return is_array(shape) and shape.dtype.is_complex


def unique_users(inst) -> list:
    # Users lists hold each user once (hloc.ir.module keeps them so on every mutation).
    return list(inst.users)


def unique_operands(inst) -> list:
    seen, out = set(), []
    for o in inst.operands:
        if id(o) not in seen:
            seen.add(id(o))
            out.append(o)
    return out


def fused_computation(inst):
    return inst.attrs.get("calls") if inst.opcode == "fusion" else None


# ---------------------------------------------------------------------------
# Per-instruction facts

def is_elementwise(inst) -> bool:
    """HloInstruction::IsElementwise()."""
    op = inst.opcode
    if op == "constant":      # HloConstantInstruction is elementwise (nullary)
        return True
    if op == "bitcast-convert":
        return inst.shape.dtype.bits == inst.operands[0].shape.dtype.bits
    if op == "map":
        dims = inst.attrs.get("dimensions", ())
        return not dims or tuple(dims) == tuple(range(len(inst.shape.dims)))
    if op == "fusion":
        comp = fused_computation(inst)
        return inst.attrs.get("kind") == "kLoop" and all(
            i.opcode == "parameter" or is_elementwise(i) for i in comp.instructions)
    return ELEMENTWISE in inst.opdef.traits


def is_elementwise_on_operand(inst, i: int) -> bool:
    if inst.opcode == "dynamic-update-slice":
        return i == 0
    return is_elementwise(inst)


def operand_element_use(inst, i: int) -> int:
    """HloInstruction::OperandElementUse: how `inst` reads the elements of operand i."""
    op = inst.opcode
    if op == "bitcast":
        a, b = inst.shape, inst.operands[0].shape
        same = [d for d in a.dims if d != 1] == [d for d in b.dims if d != 1]
        return USE if same else PERMUTING
    if op in ("concatenate", "reshape", "reverse", "slice", "transpose"):
        return PERMUTING
    if op in ("pad", "reduce"):
        n = len(inst.operands) // 2 if op == "reduce" else 1
        return REUSE if i >= n else PERMUTING
    if op == "fusion":
        return _fusion_param_use(inst, i)
    if op == "dot":
        if len(inst.shape.dims) <= 1:
            lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
            if (i == 0 and len(rhs.dims) <= 1) or (i == 1 and len(lhs.dims) <= 1):
                return USE
        return REUSE
    if op == "dynamic-update-slice":
        return USE if i in (0, 1) else REUSE
    if op == "gather":
        return USE if i == 0 else PERMUTING
    return USE if is_elementwise(inst) else REUSE


# Opcodes whose element use operand_element_use (or is_elementwise) decides itself; any
# other op with the ELEMENTWISE trait uses every operand elementwise (USE).
_OWN_ELEMENT_USE = frozenset({
    "bitcast", "concatenate", "reshape", "reverse", "slice", "transpose", "pad", "reduce",
    "fusion", "dot", "dynamic-update-slice", "gather", "constant", "bitcast-convert", "map"})


def reused_operand_ids(inst) -> set:
    """ids of the operands `inst` reads with operand_element_use REUSE."""
    if ELEMENTWISE in inst.opdef.traits and inst.opcode not in _OWN_ELEMENT_USE:
        return set()
    ops = inst.operands
    if inst.opcode == "fusion":
        uses = _fusion_param_uses(inst)
        return {id(o) for i, o in enumerate(ops) if uses.get(i, NO_USE) == REUSE}
    return {id(o) for i, o in enumerate(ops) if operand_element_use(inst, i) == REUSE}


def _fusion_param_uses(fusion) -> dict[int, int]:
    """_fusion_param_use of every parameter at once (parameter number -> use; absent:
    NO_USE), in one walk: each value's use of each parameter below it."""
    comp = fused_computation(fusion)
    below: dict[int, dict] = {}
    for hlo in operand_post_order(comp.root):   # operands before users
        if hlo.opcode == "parameter":
            below[id(hlo)] = {hlo.parameter_number: USE}
            continue
        acc: dict[int, int] = {}
        for j, operand in enumerate(hlo.operands):
            use = operand_element_use(hlo, j)
            if use == NO_USE:
                continue
            for number, b in below[id(operand)].items():
                value = use if use < b else b
                if value < acc.get(number, NO_USE):
                    acc[number] = value
        below[id(hlo)] = acc
    return below[id(comp.root)]


def _fusion_param_use(fusion, number: int) -> int:
    """FusionReusesParamElements: the use of parameter `number` seen from the root."""
    comp = fused_computation(fusion)
    cache: dict[int, int] = {}
    order = operand_post_order(comp.root)
    for hlo in order:                       # operands before users: no recursion
        if hlo.opcode == "parameter":
            cache[id(hlo)] = USE if hlo.parameter_number == number else NO_USE
            continue
        value = NO_USE
        for j, operand in enumerate(hlo.operands):
            use = operand_element_use(hlo, j)
            below = cache[id(operand)]
            if use == NO_USE or below == NO_USE:
                continue
            value = min(value, use, below)
        cache[id(hlo)] = value
    return cache[id(comp.root)]


# Opcodes IsFusible accepts whatever the instruction: no side effect of their own or
# through attributes or called computations, not control flow, domain, parameter or rng.
_ALWAYS_FUSIBLE = frozenset(
    name for name, opdef in REGISTRY.items()
    if not opdef.traits & {SIDE_EFFECT, MAY_SIDE_EFFECT, CALLS, CONTROL_FLOW}
    and name not in ("domain", "parameter", "rng"))


def is_fusible(inst) -> bool:
    """HloInstruction::IsFusible."""
    op = inst.opcode
    if op in _ALWAYS_FUSIBLE:
        return True
    if op in ("domain", "parameter") or CONTROL_FLOW in inst.opdef.traits:
        return False
    if op in ("fusion", "map", "reduce", "reduce-window"):
        return True
    if op == "rng":
        return len(unique_users(inst)) <= 1
    return not has_side_effect(inst)


# ---------------------------------------------------------------------------
# Reachability (HloReachabilityMap) as ancestor bitsets

_BLOCK = 32     # operands per block in Reachability.reachable_operands


class Reachability:
    """reaches(a, b): is `a` `b` or one of its transitive operands (or control
    predecessors)? With `sources`, only those get a bit, so the map takes
    |post_order| x |sources| bits instead of |post_order|^2 (the whole-entry map of a
    96-layer transformer is hundreds of MB); a query from any other instruction walks
    the graph instead, so the answers never depend on which sources were chosen."""

    def __init__(self, post_order: list, sources=None):
        self.position = {id(inst): n for n, inst in enumerate(post_order)}
        if sources is None:
            self.index = self.position
        else:
            chosen = {id(s) for s in sources}
            self.index = {}
            for inst in post_order:
                if id(inst) in chosen:
                    self.index[id(inst)] = len(self.index)
        self.bits: dict[int, int] = {}
        self._blocks: dict[int, list] = {}     # wide instruction -> its operand blocks' bits
        index = self.index
        for inst in post_order:
            n = index.get(id(inst))
            b = 0 if n is None else 1 << n
            for o in (inst.operands + inst.control_predecessors
                      if inst.control_predecessors else inst.operands):
                b |= self.bits.get(id(o), 0)
            self.bits[id(inst)] = b

    def reaches(self, a, b) -> bool:
        """True when `a` is `b` or an (indirect) operand of it."""
        bb = self.bits.get(id(b))
        if bb is None:
            return False
        ia = self.index.get(id(a))
        if ia is not None:
            return bool(bb >> ia & 1)
        pa = self.position.get(id(a))
        if pa is None:
            return False
        return self._walk(a, b, pa)

    def reachable_operands(self, a, inst) -> list[int]:
        """The operand numbers i of `inst`, in order, with reaches(a, operand i). For
        a wide instruction (a root tuple of hundreds of results, asked about by every
        producer among them) operands are tested a block at a time through the union
        of the block's bits, so a producer costs a few tests, not one per operand."""
        ops = inst.operands
        ia = self.index.get(id(a))
        if ia is None:
            return [i for i, o in enumerate(ops) if self.reaches(a, o)]
        if len(ops) < 2 * _BLOCK:       # reaches(a, o), a having a bit
            bits, out = self.bits, []
            for i, o in enumerate(ops):
                b = bits.get(id(o))
                if b is not None and b >> ia & 1:
                    out.append(i)
            return out
        blocks = self._blocks.get(id(inst))
        if blocks is None:
            bits = self.bits
            blocks = self._blocks[id(inst)] = []
            for start in range(0, len(ops), _BLOCK):
                b = 0
                for o in ops[start:start + _BLOCK]:
                    b |= bits.get(id(o), 0)
                blocks.append(b)
        bits, out = self.bits, []
        for n, b in enumerate(blocks):
            if b >> ia & 1:
                start = n * _BLOCK
                out.extend(i for i in range(start, min(start + _BLOCK, len(ops)))
                           if bits.get(id(ops[i]), 0) >> ia & 1)
        return out

    def _walk(self, a, b, pa: int) -> bool:
        # Operands come before users in the post order: skip anything earlier than a.
        position, seen, stack = self.position, set(), [b]
        while stack:
            x = stack.pop()
            if x is a:
                return True
            for o in (x.operands + x.control_predecessors
                      if x.control_predecessors else x.operands):
                p = position.get(id(o))
                if p is not None and p >= pa and id(o) not in seen:
                    seen.add(id(o))
                    stack.append(o)
        return False


# ---------------------------------------------------------------------------
# FusionNodeIndexingEvaluation: how often each fused value would be recomputed

class IndexingEvaluation:
    """FusionNodeIndexingEvaluation for one fusion node, kept up to date as producers
    are fused in: how many distinct indices each fused value is computed for, where the
    values a fusion operand feeds are keyed by that operand (as XLA keys them)."""

    def __init__(self, fusion):
        self.fusion = fusion
        comp = fused_computation(fusion)
        self.usage: dict[int, int] = {id(fusion): 1}
        self.users: dict[int, set] = {id(comp.root): {id(fusion)}}
        for inst in reversed(post_order(comp)):
            if inst.opcode != "parameter":
                self._add(inst)

    def _add(self, inst) -> None:
        all_users, usage = self.users, self.usage
        users = all_users.setdefault(id(inst), set())
        n = 0
        for u in users:
            n += usage[u]
        usage[id(inst)] = n
        shape = inst.shape
        reuse = inst.opcode == "transpose"
        fusion_operands = self.fusion.operands
        for operand in inst.operands:
            key = operand
            if operand.opcode == "parameter":
                key = fusion_operands[operand.parameter_number]
            target = all_users.get(id(key))
            if target is None:
                target = all_users[id(key)] = set()
            if reuse or operand.shape is shape or _same_dims_layout(operand.shape, shape):
                target |= users          # the index is reused as it is
            else:
                target.add(id(inst))     # a new index is computed from it

    def emitted(self, producer) -> int:
        usage, n = self.usage, 0
        for u in self.users.get(id(producer), ()):
            n += usage[u]
        return n

    def remove_operand(self, producer) -> set:
        return self.users.pop(id(producer), set())

    def fused(self, clone, users: set) -> None:
        """`clone` replaced the fusion operand whose indexing users were `users`."""
        self.users[id(clone)] = users
        self._add(clone)


def _same_dims_layout(a, b) -> bool:
    if not (is_array(a) and is_array(b)):
        return a == b
    return a.dims == b.dims and (a.layout or None) == (b.layout or None)


def real_user_count(inst, enough: int | None = None) -> int:
    """Users of `inst`, counting the users of the fused parameter for fusion users;
    with `enough`, counting stops once the count exceeds it (the caller only asks
    whether it does: a producer can have thousands of fusion users)."""
    n = 0
    for u in inst.users:
        if u.opcode == "fusion":
            i = u.operands.index(inst)
            n += len(fused_computation(u).parameters[i].users)
        else:
            n += 1
        if enough is not None and n > enough:
            break
    return n


def code_duplication_too_high(evaluation: IndexingEvaluation, producer) -> bool:
    if producer.opcode == "broadcast":
        return False
    emitted = evaluation.emitted(producer)
    if emitted > ALLOWED_CODE_DUPLICATION:
        return True
    return producer.opcode in _INVALIDATES_CACHE and \
        (emitted > 1 or real_user_count(producer, enough=1) > 1)
