"""`cpu_multi_output_fusion`: XLA:CPU's sibling multi-output fusion (CpuMultiOutputFusion).

XLA:CPU runs it only with the backend extra option `xla_cpu_use_multi_output_fusion`
(cpu_compiler.cc: CpuInstructionFusion with may_duplicate=false, FusionWrapper, then this
pass and TupleSimplifier; pipelines.py). It is MultiOutputFusion (multi_output_fusion.cc)
with CPU's rules, and, as there, only siblings are fused: XLA:CPU overrides neither
DoProducerConsumerMultiOutputFusion nor InstructionFusion::ShouldFuseIntoMultiOutput, so
a producer and its consumer are never made one multi-output fusion.

Per non-fusion computation, in post order: an instruction is a candidate when it is
fusible (a kLoop fusion whose root is not a dot or scatter, or an emitter-supported
non-dot op; nothing inside a fusion, no constant). A loop fusion and another fusible
user of one of its operands are paired when that operand is profitable (not a scalar
constant, at least two users), they are not connected (reachability), neither has 20
operands or more, their element shapes (a multi-output fusion's first output) are equal
with layout, and they share no in-place operand; the profit is the byte size of the
profitable operands they share. Pairs are fused greediest first (ties: latest added);
after a fusion the reachability map is updated as XLA does (monotone unions) and the
merged node's candidates are re-scored. Fusing makes the fusion's root a tuple
(`%tuple`), its shape the tuple of outputs, and its users read `get-tuple-element`s
(HloFusionInstruction::MergeFusionInstructionIntoMultiOutput /
FuseInstructionIntoMultiOutput, with XLA's `.clone` names and parameter numbering); the
fused sibling and its computation go; dead code is removed as XLA's pass does.
"""
from __future__ import annotations

import heapq

from ...ir.graph import (callee_post_order, computation_post_order, fusion_computations,
                         is_dead, post_order, stable_post_order)
from ...ir.module import Instruction, Module
from ...ir.clone import clone_instruction, clone_name
from ...ir.rewriter import uniquer
from ...ir.shape import tuple_shape
from ...ops import REGISTRY
from .. import register
from ..base import Pass, PassContext
from ..dce import run_dce
from .analysis import Reachability, fused_computation, is_effective_scalar
from .build import StorageOrder, fuse_producer
from .decisions import _in_place_pairs

MAX_OPERANDS = 20          # kMaxOperands: more makes compile time excessive

# emitters::IsSupportedElementalOp is everything but XLA's own list of opcodes
# (xla/codegen/emitters/elemental_hlo_to_mlir.cc), kept here as that list (a policy of
# this pass, like XLA's); CpuMultiOutputFusion also excludes dot.
_NOT_ELEMENTAL = frozenset({
    "add-dependency", "after-all", "all-gather", "all-gather-done", "all-gather-start",
    "all-reduce", "all-reduce-done", "all-reduce-start", "all-to-all", "async-done",
    "async-start", "async-update", "batch-norm-grad", "batch-norm-inference",
    "batch-norm-training", "cholesky", "collective-permute", "collective-permute-done",
    "collective-permute-start", "copy-done", "copy-start", "custom-call", "domain",
    "dynamic-reshape", "fft", "fusion", "get-dimension-size", "opt-barrier", "infeed",
    "outfeed", "parameter", "partition-id", "recv", "recv-done", "reduce-scatter",
    "replica-id", "rng", "rng-bit-generator", "rng-get-and-update-state", "scatter",
    "select-and-scatter", "send", "send-done", "set-dimension-size", "sort", "topk",
    "triangular-solve", "while", "conditional", "stochastic-convert", "call", "dot"})


def is_multi_output(inst) -> bool:
    return inst.opcode == "fusion" and fused_computation(inst).root.opcode == "tuple"


def _element_shape(inst) -> str:
    """CpuMultiOutputFusion::ShapesCompatibleForFusion's element shape, as text (dims,
    element type and layout)."""
    if inst.opcode == "fusion":
        root = fused_computation(inst).root
        inst = root.operands[0] if root.opcode == "tuple" else root
    return str(inst.shape)


def _byte_size(shape) -> int:
    """ShapeUtil::ByteSizeOf(shape, sizeof(void*)): a tuple is its pointer table."""
    if shape.is_tuple:
        return 8 * len(shape.elements)
    if not hasattr(shape, "dims"):
        return 0
    return shape.size * max(1, shape.dtype.bits // 8)


def is_profitable_operand(inst) -> bool:
    """MultiOutputFusion::IsProfitableOperand: read from memory, by several users."""
    if inst.opcode == "constant" and is_effective_scalar(inst.shape):
        return False
    return len(inst.users) >= 2


def profit(a, b) -> int:
    """CpuMultiOutputFusion::GetProfit: bytes of a's profitable operands b reads too."""
    shared = {id(o) for o in a.operands if is_profitable_operand(o)}
    return sum(_byte_size(o.shape) for o in b.operands if id(o) in shared)


class _Reach(Reachability):
    """HloReachabilityMap with FastSetReachabilityToUnion."""

    def connected(self, a, b) -> bool:
        return self.reaches(a, b) or self.reaches(b, a)

    def union_into(self, target, *others) -> None:
        bits = self.bits.get(id(target), 0)
        for o in others:
            bits |= self.bits.get(id(o), 0)
        self.bits[id(target)] = bits


# ---------------------------------------------------------------------------
# Building multi-output fusions (HloFusionInstruction)

def _get_tuple_element(fusion: Instruction, index: int, shape, order) -> Instruction:
    """A get-tuple-element of `fusion` (with its metadata, as XLA's AddInstruction
    gives it), added last in the computation."""
    attrs = {"index": index}
    if "metadata" in fusion.attrs:
        attrs["metadata"] = fusion.attrs["metadata"]
    gte = Instruction(uniquer(fusion.parent.parent).unique("get-tuple-element"),
                      REGISTRY["get-tuple-element"], shape, [fusion], attrs)
    fusion.parent.add_instruction(gte)
    if order is not None:
        order.added(fusion.parent, gte)
    return gte


def fuse_into_multi_output(fusion: Instruction, inst: Instruction,
                           order: StorageOrder | None = None) -> Instruction:
    """FuseInstructionIntoMultiOutput: clone `inst` into `fusion` as a further output
    (unless `inst` was an operand used by nothing else); its users read it through a
    get-tuple-element of the fusion."""
    was_operand = inst in fusion.operands
    clone = fuse_producer(fusion, inst)
    if was_operand and not inst.users:
        return clone
    comp = fused_computation(fusion)
    root = comp.root
    elements = list(root.operands) if root.opcode == "tuple" else [root]
    elements.append(clone)
    tup = Instruction(uniquer(comp.parent).unique("tuple"), REGISTRY["tuple"],
                      tuple_shape([e.shape for e in elements]), elements)
    comp.add_instruction(tup)
    comp.set_root_instruction(tup)
    old_shape = fusion.shape
    fusion.set_shape(tup.shape)
    fusion.pop_attr("sharding")     # no longer valid for the new shape
    if root.opcode == "tuple":
        comp.remove_instruction(root)
    else:
        first = _get_tuple_element(fusion, 0, old_shape, order)
        fusion.replace_all_uses_with(first)
    inst.replace_all_uses_with(_get_tuple_element(fusion, len(elements) - 1, clone.shape,
                                                  order))
    return clone


def merge_into_multi_output(fusion: Instruction, other: Instruction,
                            order: StorageOrder | None = None) -> None:
    """MergeFusionInstructionIntoMultiOutput: `other`'s fused instructions join
    `fusion`; its outputs used outside become outputs of `fusion`; `other` and its
    computation are removed."""
    comp = fusion.parent
    merged = fused_computation(other)
    old_to_new: dict[int, Instruction] = {}
    unfused: list[Instruction] = []
    roots: set[int] = set()
    outputs: list[tuple[Instruction, int]] = []
    for inst in post_order(merged):
        if inst.opcode == "parameter":
            old_to_new[id(inst)] = other.operands[inst.parameter_number]
            continue
        if inst.opcode == "tuple" and inst is merged.root:
            for gte in other.users:
                outputs.append((inst.operands[gte.attrs["index"]], gte.attrs["index"]))
                if all(u is fusion for u in gte.users) and gte is not comp.root:
                    continue
                roots.add(id(old_to_new[id(outputs[-1][0])]))
            continue
        clone = clone_instruction(inst, comp, [old_to_new[id(o)] for o in inst.operands],
                                  name=clone_name(inst.name, "clone"))
        unfused.append(clone)
        old_to_new[id(inst)] = clone
    if merged.root.opcode == "tuple":
        for old_root, index in outputs:
            for gte in [u for u in other.users if u.attrs["index"] == index]:
                gte.replace_all_uses_with(old_to_new[id(old_root)])
                comp.remove_instruction(gte)
    else:
        root = unfused[-1] if unfused else other.operands[merged.root.parameter_number]
        roots.add(id(root))
        other.replace_all_uses_with(root)
    other.safely_drop_all_control_deps()
    comp.remove_instruction(other)
    comp.parent.remove_computation(merged)
    for inst in reversed(unfused):
        if id(inst) in roots:
            fuse_into_multi_output(fusion, inst, order)
        else:
            fuse_producer(fusion, inst)
        comp.remove_instruction(inst)


# ---------------------------------------------------------------------------
# The pass

def _computations(module: Module) -> list:
    """MakeNonFusionComputations, less what a fusion calls through its fused computation
    (CheckInsideFusion makes nothing there fusible) and async computations."""
    inside = {id(c) for c in callee_post_order(list(fusion_computations(module)))}
    inside.update(id(c) for comp in module.computations for i in comp.instructions
                  if i.opcode.startswith("async-") for c in i.called_computations())
    return [c for c in computation_post_order(module) if id(c) not in inside]


@register
class CpuMultiOutputFusion(Pass):
    name = "cpu_multi_output_fusion"

    def run(self, module: Module, ctx: PassContext) -> bool:
        order = StorageOrder()
        changed = False
        for comp in _computations(module):
            changed |= _Sibling(comp, order).run()
        if changed:
            run_dce(module)
            order.finish(module)
            if module.is_scheduled():
                for comp in order.comps:
                    comp.set_instruction_order(stable_post_order(comp))
        return changed


class _Sibling:
    """MultiOutputFusion's state for one computation (candidates_, worklist_, ...)."""

    def __init__(self, comp, order: StorageOrder):
        self.comp = comp
        self.order = order
        post = post_order(comp)
        self.reach = _Reach(post)
        self.index = {id(i): n for n, i in enumerate(post)}
        self.post = post
        self.fused: set[int] = set()
        self.fusibles: dict[int, list] = {id(i): [] for i in post}
        self.all_candidates: list = []
        self.worklist: list = []
        self.stamp = 0

    # -- MultiOutputFusion's predicates, with CpuMultiOutputFusion's overrides
    @staticmethod
    def fusible(inst) -> bool:
        if inst.opcode == "constant":
            return False
        if inst.opcode == "fusion" and inst.attrs.get("kind") == "kLoop":
            return fused_computation(inst).root.opcode not in ("dot", "scatter")
        return inst.opcode not in _NOT_ELEMENTAL

    def legal(self, a, b) -> bool:
        if len(a.operands) >= MAX_OPERANDS or len(b.operands) >= MAX_OPERANDS:
            return False
        if a.opcode != "fusion" or a is b or is_dead(a) or is_dead(b):
            return False
        for x in (a, b):
            if is_multi_output(x) and any(u.opcode != "get-tuple-element" for u in x.users):
                return False
        if self.reach.connected(a, b) or _element_shape(a) != _element_shape(b):
            return False
        shared = {id(a.operands[n]) for n, _ in _in_place_pairs(a)}
        return not any(id(b.operands[n]) in shared for n, _ in _in_place_pairs(b))

    def push(self, a, b, score: int) -> None:
        heapq.heappush(self.worklist, (-score, -self.stamp, a, b))
        self.stamp += 1

    # -- CreateFusionWorkListForCurrentComputation
    def _worklist(self) -> None:
        for inst in self.post:
            if not self.fusible(inst):
                continue
            self.all_candidates.append(inst)
            mine = self.index[id(inst)]
            found: list = []
            for operand in inst.operands:
                if not is_profitable_operand(operand):
                    continue
                users = operand.users
                start = users.index(inst) // 128 * 128      # one slice of 128 users
                for user in users[start:start + 128]:
                    if user is inst or not self.fusible(user) or \
                            self.reach.connected(inst, user):
                        continue
                    if mine < self.index[id(user)] and user.opcode == "fusion":
                        continue
                    if self.legal(inst, user) and all(u is not user for u in found):
                        found.append(user)
            for user in found:
                score = profit(inst, user)
                if score > 0:
                    self.fusibles[id(inst)].append([user, score])
                    self.fusibles[id(user)].append([inst, score])
                    self.push(inst, user, score)

    # -- Perform
    def run(self) -> bool:
        self._worklist()
        changed = False
        while self.worklist:
            _, _, a, b = heapq.heappop(self.worklist)
            if id(a) in self.fused or id(b) in self.fused or not self.legal(a, b):
                continue
            if not changed:
                self.order.note(self.comp)
                changed = True
            self._update_reachability(a, b)
            new = self._new_fusibles(a, b)
            fusion = self._fuse(a, b)
            for x in (a, b):
                if x is not fusion:
                    self.fused.add(id(x))
            mine = self.fusibles[id(fusion)]
            for inst, old in new:
                score = profit(inst, fusion)
                if score > old:
                    self.push(fusion, inst, score)
                if old == 0:
                    mine.append([inst, score])
        return changed

    def _update_reachability(self, a, b) -> None:
        """UpdateReachability(a, b, all fusion candidates not yet fused)."""
        reach = self.reach
        for inst in self.all_candidates:
            if id(inst) in self.fused:
                continue
            from_b, from_a = reach.reaches(b, inst), reach.reaches(a, inst)
            if from_a and from_b:
                continue
            if from_b:
                reach.union_into(inst, a)
            if reach.reaches(a, inst):
                reach.union_into(inst, b)

    def _new_fusibles(self, a, b) -> list:
        """GetNewFusibles: the merged node's candidates with their old profits."""
        mine, theirs = self.fusibles[id(a)], self.fusibles[id(b)]
        out, seen = [], set()
        for entry in list(mine):
            inst = entry[0]
            if id(inst) in self.fused or self.reach.connected(a, inst):
                mine.remove(entry)
                continue
            seen.add(id(inst))
            out.append((inst, entry[1]))
        for inst, _ in theirs:
            if inst is a or id(inst) in self.fused or self.reach.connected(a, inst) or \
                    id(inst) in seen:
                continue
            out.append((inst, 0))
        theirs.clear()
        return out

    def _fuse(self, a, b) -> Instruction:
        """MultiOutputFusion::Fuse: `b` joins `a`, unless only `b` is a (multi-output)
        fusion. (jaxlib 0.10.2 keeps the first of two single-output fusions: its dumps
        keep the later one in post order.)"""
        remaining, other = a, b
        if other.opcode == "fusion" and remaining.opcode != "fusion":
            remaining, other = other, remaining
        if is_multi_output(other) and not is_multi_output(remaining):
            remaining, other = other, remaining
        if other.opcode == "fusion":
            merge_into_multi_output(remaining, other, self.order)
        else:
            fuse_into_multi_output(remaining, other, self.order)
            other.safely_drop_all_control_deps()
            self.comp.remove_instruction(other)
        self.order.fused_changed(fused_computation(remaining))
        return remaining
