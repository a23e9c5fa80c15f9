"""XLA:CPU's fusion rules: which producer may be fused into which consumer.

CpuInstructionFusion (xla/service/cpu/cpu_instruction_fusion.cc) on top of the
generic InstructionFusion (xla/service/instruction_fusion.cc), in the version the
testdata dumps come from (jaxlib 0.10.2): `cpu_is_expensive` (IsExpensive),
`can_be_loop_fused`, output fusion of matrix-vector dots into an add, the
concatenate and constant limits, and `CpuFusionRules`: `should_fuse`, the per-edge
decision, which returns the reason an edge must not be fused (None when it may), the
global "do not duplicate" analysis (ComputeGloballyUnfusible: EffectivelyAtMostUnary,
CanFuseOnAllPaths), the reused-operand sets XLA caches, and the in-place rule for
dynamic-update-slice consumers (ShouldFuseInPlaceOp). The graph facts underneath are
in analysis.py.
"""
from __future__ import annotations

from functools import lru_cache

from .analysis import (IndexingEvaluation, Reachability, byte_size,
                       code_duplication_too_high, elements, fused_computation, is_array,
                       is_complex, is_effective_scalar, is_elementwise, is_fusible,
                       reused_operand_ids, true_rank, unique_operands, unique_users)
from ...ir.graph import post_order
from ...ops import opcodes_with
from ...ops.base import DIVISION, ELEMENTAL, ELEMENTWISE, EXPENSIVE, EXPENSIVE_IF_COMPLEX

FUSION_THRESHOLD_BYTES = 16 * 1024  # small matrix-vector dots are fused below this
MAX_CONCATENATE_ARGUMENTS = 8
MAX_REDUCTIONS_IN_FUSION = 5

# Producers CpuInstructionFusion can emit elementally besides elementwise ops: the
# registry's ELEMENTAL ops.
_LOOP_FUSIBLE = opcodes_with(ELEMENTAL) - opcodes_with(ELEMENTWISE)


def cpu_is_expensive(inst) -> bool:
    """CpuInstructionFusion::IsExpensive: the registry's EXPENSIVE and
    EXPENSIVE_IF_COMPLEX traits, except for converts and divisions."""
    op = inst.opcode
    if op == "convert":   # f32 -> bf16 needs NaN checks; everything else is cheap
        return inst.shape.dtype.name == "bf16" and inst.operands[0].shape.dtype.name == "f32"
    traits = inst.opdef.traits
    if DIVISION in traits:
        # Integer division by a constant becomes multiplies and shifts. (XLA:CPU tests
        # the first operand here, unlike the generic rule; kept as XLA has it.)
        if not (is_array(inst.shape) and inst.shape.dtype.is_integral):
            return True
        o = inst.operands[0]
        if o.opcode == "broadcast":
            o = o.operands[0]
        return not (o.opcode == "constant" and is_effective_scalar(o.shape))
    if EXPENSIVE_IF_COMPLEX in traits:
        return is_complex(inst.shape)
    return EXPENSIVE in traits


# Opcodes that are loop-fusible whatever the instruction: the loop-fusible ones and the
# elementwise ones whose elementwiseness is_elementwise does not look into.
_ALWAYS_LOOP_FUSIBLE = _LOOP_FUSIBLE | (opcodes_with(ELEMENTWISE) - {
    "constant", "bitcast-convert", "map", "fusion"})


def can_be_loop_fused(inst) -> bool:
    return inst.opcode in _ALWAYS_LOOP_FUSIBLE or is_elementwise(inst)


def is_always_duplicable(inst) -> bool:
    """Widening converts and broadcasts get cheaper when duplicated into consumers."""
    if inst.opcode == "broadcast":
        return True
    return inst.opcode == "convert" and \
        byte_size(inst.operands[0].shape) < byte_size(inst.shape)


@lru_cache(maxsize=4096)
def _output_rank(shape) -> int:
    return max((true_rank(leaf) for leaf in shape.leaves()), default=0)


def effectively_at_most_unary(inst) -> bool:
    ops = inst.operands
    if len(ops) < 2:
        return True
    out_rank = _output_rank(inst.shape)
    big = 0
    for o in ops:
        if o.opcode in ("broadcast", "iota"):
            continue
        if o.opcode == "constant" and is_effective_scalar(o.shape):
            continue
        if true_rank(o.shape) >= out_rank:
            big += 1
    return big <= 1


def duplication_candidates(post_order: list) -> list:
    """The producers ComputeGloballyUnfusible examines, in `post_order`'s order: not
    effectively unary, and reading more elements than they produce."""
    return [p for p in post_order if not effectively_at_most_unary(p) and
            sum(elements(o.shape) for o in unique_operands(p)) > elements(p.shape)]


def is_matrix_vector_dot(inst) -> bool:
    """IsNonComplexNonBatchedMatrixVectorDot."""
    return inst.opcode == "dot" and not is_complex(inst.shape) and \
        len(inst.shape.dims) <= 1 and not inst.attrs.get("lhs_batch_dims")


def can_be_output_fused(producer, consumer) -> bool:
    return consumer.opcode == "add" and is_matrix_vector_dot(producer) and \
        len(producer.users) == 1 and \
        sum(1 for o in consumer.operands if o is producer) == 1


def can_be_output_fused_into_some_operand(consumer) -> bool:
    return consumer.opcode == "add" and any(
        can_be_output_fused(o, consumer) for o in consumer.operands[:2])


def is_minor_dim_concatenate(inst) -> bool:
    """A concatenate along the minor dimension that is large enough to be faster as a
    plain copy loop than fused."""
    shape = inst.shape
    if len(shape.dims) <= 1:
        return False
    dim = inst.attrs["dimensions"][0]
    layout = shape.layout.minor_to_major if shape.layout else \
        tuple(range(len(shape.dims) - 1, -1, -1))
    dim_bytes = shape.dims[dim] * max(1, shape.dtype.bits // 8)
    return dim == layout[0] and dim_bytes >= 64 and byte_size(shape) >= 2048


# Refusals that cannot turn into acceptances while the pass runs: they depend on the
# producer alone, or on what only grows in a fusion (its reductions; the operands it
# reuses, which lose an entry only when that operand itself is fused).
_PERMANENT = frozenset({
    "Don't fuse instructions from custom fusions/calls", "Don't fuse non-scalar constants.",
    "Producer is not loop-fusible.", "Concatenate fusion is inefficient.",
    "Fusion is not profitable.", "not fusing into the output of the root instruction",
    "Too many reductions inside single fusion.",
    "Not fusing: producer is itself a fusion node."})


# ---------------------------------------------------------------------------
# The per-edge decision

class CpuFusionRules:
    """CpuInstructionFusion::ShouldFuse (with InstructionFusion::ShouldFuse inside),
    plus the global do-not-duplicate analysis, for one computation at a time."""

    def __init__(self, skip: set, may_duplicate: bool = True):
        self.skip = skip                # ids of instructions never fused into
        # InstructionFusion's may_duplicate_: false when multi-output fusion follows
        # (cpu_compiler.cc), so that a producer with other users is never copied.
        self.may_duplicate = may_duplicate
        self._evaluations: dict[int, IndexingEvaluation] = {}
        self._reused: dict[int, set] = {}
        self._never: set[tuple[int, int]] = set()   # (consumer, producer) ids
        self._fusible: dict[int, bool] = {}
        self._reduces: dict[int, int] = {}

    def fusible(self, inst) -> bool:
        """is_fusible, memoised (an instruction's fusibility does not change here)."""
        known = self._fusible.get(id(inst))
        if known is None or inst.opcode == "rng":
            known = self._fusible[id(inst)] = is_fusible(inst)
        return known

    def decide(self, consumer, i: int) -> str | None:
        """should_fuse, remembering the refusals that stay refusals while the pass
        runs (the rest depend on users and fused code that change as it goes)."""
        key = (id(consumer), id(consumer.operands[i]))
        if key in self._never:
            return "(refused before)"
        reason = self.should_fuse(consumer, i)
        if reason in _PERMANENT:
            self._never.add(key)
        return reason

    @staticmethod
    def permanent(reason: str) -> bool:
        """Whether a refusal stays a refusal for the rest of the pass."""
        return reason in _PERMANENT or reason in ("never", "(refused before)")

    def fused_reduce(self, fusion, producer) -> None:
        if producer.opcode == "reduce":
            self._reduces[id(fusion)] = self._reduce_count(fusion) + 1

    def _reduce_count(self, fusion) -> int:
        n = self._reduces.get(id(fusion))
        if n is None:
            n = self._reduces[id(fusion)] = sum(
                1 for x in fused_computation(fusion).instructions if x.opcode == "reduce")
        return n

    def reused_operands(self, inst) -> set:
        """InstructionFusion::ReusedOperandsOf: ids of the operands `inst` reuses,
        computed once and then updated as producers are fused (as XLA caches it)."""
        reused = self._reused.get(id(inst))
        if reused is None:
            reused = self._reused[id(inst)] = reused_operand_ids(inst)
        return reused

    def update_reused(self, producer, fusion) -> None:
        """UpdateReusedOperandsForFusion, before `producer` is fused into `fusion`."""
        reused = self.reused_operands(fusion)
        if id(producer) in reused:
            reused.discard(id(producer))
            reused.update(id(o) for o in producer.operands)
        else:
            reused.update(self.reused_operands(producer))

    def evaluation(self, fusion) -> IndexingEvaluation:
        ev = self._evaluations.get(id(fusion))
        if ev is None:
            ev = self._evaluations[id(fusion)] = IndexingEvaluation(fusion)
        return ev

    def reuses(self, consumer, i: int) -> bool:
        return id(consumer.operands[i]) in self.reused_operands(consumer)

    def should_fuse(self, consumer, i: int) -> str | None:
        """None when operand i of `consumer` may be fused into it, else the reason."""
        if id(consumer) in self.skip:
            return "Don't fuse instructions from custom fusions/calls"
        producer = consumer.operands[i]
        p_op, c_op = producer.opcode, consumer.opcode
        if p_op == "constant" and not is_effective_scalar(producer.shape):
            return "Don't fuse non-scalar constants."
        if c_op == "add" and can_be_output_fused(producer, consumer):
            return None
        if p_op == "add" and can_be_output_fused_into_some_operand(producer):
            return "Bailing because producer can be output-fused into some operand."
        if not can_be_loop_fused(producer):
            return "Producer is not loop-fusible."
        if p_op == "concatenate" or c_op == "concatenate":
            for c in (producer, consumer):
                if c.opcode == "concatenate" and (
                        len(c.operands) > MAX_CONCATENATE_ARGUMENTS or
                        is_minor_dim_concatenate(c)):
                    return "Concatenate fusion is inefficient."
        expensive = cpu_is_expensive(producer)
        if p_op != "fusion" and expensive and self.reuses(consumer, i):
            return "Fusion is not profitable."
        reason = self._generic_should_fuse(producer, consumer, expensive)
        if reason is not None:
            return reason
        if consumer.opcode == "fusion" and producer.opcode == "reduce" and \
                self._reduce_count(consumer) > MAX_REDUCTIONS_IN_FUSION:
            return "Too many reductions inside single fusion."
        if producer.opcode == "constant" and consumer.opcode != "fusion":
            return "Not fusing: insufficient non-constant nodes."
        if producer.opcode == "fusion":
            return "Not fusing: producer is itself a fusion node."
        if consumer.opcode == "fusion" and \
                code_duplication_too_high(self.evaluation(consumer), producer):
            return "Code duplication too high"
        if consumer.opcode == "dot" and len(consumer.shape.dims) <= 1:
            lhs, rhs = consumer.operands[0].shape, consumer.operands[1].shape
            if len(lhs.dims) == 1 and i == 1 and byte_size(lhs) < FUSION_THRESHOLD_BYTES:
                return None
            if len(rhs.dims) == 1 and i == 0 and byte_size(rhs) < FUSION_THRESHOLD_BYTES:
                return None
        if consumer.opcode == "fusion" and consumer.attrs.get("kind") == "kLoop":
            return None
        if can_be_loop_fused(consumer):
            return None
        return "Not fusing: not found a fusible case"

    def _generic_should_fuse(self, producer, consumer, expensive: bool) -> str | None:
        """InstructionFusion::ShouldFuse (`expensive`: cpu_is_expensive(producer))."""
        comp = producer.parent
        if comp is not None and producer is comp.root:
            return "not fusing into the output of the root instruction"
        users = producer.users          # each user once (unique_users)
        duplicates = not (len(users) == 1 and users[0] is consumer)
        if duplicates and (not self.may_duplicate or expensive) and \
                not is_always_duplicable(producer):
            return "expensive producer would be duplicated" if self.may_duplicate else \
                "fusion pass cannot duplicate"
        return in_place_conflict(producer, consumer)

    def globally_unfusible(self, post_order: list, reach: Reachability,
                           examined: set | None = None) -> set:
        """ComputeGloballyUnfusible: ids of producers that must not be duplicated.
        `examined`, when the caller has it, is the set of ids of the producers
        `duplication_candidates` picks (the ones this analysis looks at)."""
        do_not_duplicate: set[int] = set()
        cache: dict[tuple, bool] = {}
        # should_fuse(c, i) while nothing is fused: the same each time it is asked (a
        # consumer is looked at again after each operand it had to wait for).
        fusible_edge: dict[tuple, bool] = {}

        def on_all_paths(producer, consumer) -> bool:
            # CanFuseOnAllPaths, memoised, with an explicit stack instead of recursion.
            pid = id(producer)
            stack = [consumer]
            while stack:
                c = stack[-1]
                key = (pid, id(c))
                if key in cache:
                    stack.pop()
                    continue
                if c is producer or not self.fusible(c):
                    cache[key] = c is producer
                    stack.pop()
                    continue
                result, missing = True, None
                operands = c.operands
                for i in reach.reachable_operands(producer, c):
                    o = operands[i]
                    if id(o) in do_not_duplicate:
                        result = False
                        break
                    edge = fusible_edge.get((id(c), i))
                    if edge is None:
                        edge = fusible_edge[(id(c), i)] = self.should_fuse(c, i) is None
                    if not edge:
                        result = False
                        break
                    known = cache.get((pid, id(o)))
                    if known is None:
                        missing = o
                        break
                    if not known:
                        result = False
                        break
                if missing is not None:
                    stack.append(missing)
                    continue
                cache[key] = result
                stack.pop()
            return cache[(pid, id(consumer))]

        if examined is None:
            examined = {id(p) for p in duplication_candidates(post_order)}
        for producer in reversed(post_order):
            if id(producer) not in examined:
                continue
            if self.fusible(producer) and all(on_all_paths(producer, c)
                                            for c in unique_users(producer)):
                continue
            do_not_duplicate.add(id(producer))
        return do_not_duplicate


# ---------------------------------------------------------------------------
# In-place consumers (InstructionFusion::ShouldFuseInPlaceOp): a consumer whose output
# may reuse an operand's buffer (dynamic-update-slice, scatter, or a fusion rooted at
# one) must not read that buffer through a fused non-elementwise producer, except for
# a slice / dynamic-slice at the very indices the dynamic-update-slice writes.

_IN_PLACE_CONSUMERS = frozenset({"dynamic-update-slice", "scatter", "fusion"})


def _in_place_pairs(consumer) -> list[tuple[int, object]]:
    """(operand number, in-place instruction) pairs (GetInPlaceInputOutputPairs)."""
    if consumer.opcode == "dynamic-update-slice":
        return [(0, consumer)]
    if consumer.opcode == "scatter":
        return [(n, consumer) for n in range(len(consumer.operands) // 2)]
    if consumer.opcode != "fusion":
        return []
    root = fused_computation(consumer).root
    out = []
    for r in (root.operands if root.opcode == "tuple" else [root]):
        if r.opcode not in ("dynamic-update-slice", "scatter"):
            continue
        n = len(r.operands) // 2 if r.opcode == "scatter" else 1
        for base in r.operands[:n]:
            while base.opcode == "bitcast":
                base = base.operands[0]
            if base.opcode == "parameter":
                out.append((base.parameter_number, r))
    return out


def _nonelementwise(inst) -> bool:
    return inst.opcode not in ("fusion", "bitcast", "parameter") and not is_elementwise(inst)


def _extract(inst, pred) -> list:
    if pred(inst):
        return [inst]
    comp = fused_computation(inst)
    return [i for i in comp.instructions if pred(i)] if comp is not None else []


def _real_operand(holder, operand):
    if holder.opcode == "fusion" and operand.opcode == "parameter":
        return holder.operands[operand.parameter_number]
    return operand


def _first_integer(inst):
    if inst.opcode != "constant" or inst.literal is None:
        return None
    value = inst.literal.value
    try:
        return int(value.reshape(-1)[0]) if value.size else None
    except (AttributeError, TypeError, ValueError):
        return None


def _safe_slice_into_dus_fusion(producer, consumer, dus) -> bool:
    """IsSafeToFuseSliceIntoDusFusion: the producer's parameter reaches no
    non-elementwise instruction but the dynamic-update-slice."""
    comp = fused_computation(consumer)
    memo: dict[int, bool] = {}

    def bad(start) -> bool:
        stack = [start]
        while stack:
            inst = stack.pop()
            if id(inst) in memo:
                if memo[id(inst)]:
                    return True
                continue
            memo[id(inst)] = False
            if inst is not dus and not is_elementwise(inst) and inst.opcode != "parameter":
                return True
            stack.extend(unique_users(inst))
        return False

    return not any(o is producer and bad(comp.parameters[i])
                   for i, o in enumerate(consumer.operands))


def in_place_conflict(producer, consumer) -> str | None:
    if consumer.opcode not in _IN_PLACE_CONSUMERS:
        return None
    for n, in_place in _in_place_pairs(consumer):
        buffer = consumer.operands[n]
        if consumer.operands.count(buffer) > 1:     # another slot holds it too
            return ("The consumer is an in-place operation that has an additional "
                    "operand that has the same value as the in-place buffer")
        if not (buffer is producer or buffer in producer.operands):
            continue
        ops = _extract(producer, _nonelementwise)
        if len(ops) > 1:
            return "Producer fusion has multiple non-elementwise ops, bailing."
        if not ops:
            if consumer.opcode != "fusion":
                return None
            comp = fused_computation(consumer)
            others = [i for i in comp.instructions if _nonelementwise(i) and i is not in_place]
            post = post_order(comp)
            reach = Reachability(post)
            param = comp.parameters[consumer.operands.index(producer)]
            if any(reach.reaches(param, i) for i in others):
                return "Non-elementwise ops in consumer lead to inplace conflict after fusion."
            return None
        duses = _extract(consumer, lambda i: i.opcode == "dynamic-update-slice")
        if not duses:
            return None
        if len(duses) > 1:
            return "multiple dus ops, bailing."
        dus, op = duses[0], ops[0]
        if op.opcode not in ("slice", "dynamic-slice"):
            return "unrecognized inplace update non-elementwise output pair"
        if str(op.shape) != str(dus.operands[1].shape):
            return "Slice op has a different shape than the update shape of the dus op."
        for d in range(len(dus.shape.dims)):
            dus_index = _real_operand(consumer, dus.operands[2 + d])
            if op.opcode == "slice":
                start, _, stride = op.attrs["slice"][d]
                if _first_integer(dus_index) != start or stride != 1:
                    return "DUS and slice index mismatch"
            else:
                ds_index = _real_operand(producer, op.operands[1 + d])
                a, b = _first_integer(ds_index), _first_integer(dus_index)
                if a != b or (a is None and ds_index is not dus_index):
                    return "DUS and DS index mismatch"
        if consumer.opcode == "fusion" and not _safe_slice_into_dus_fusion(producer, consumer,
                                                                           dus):
            return "Fusing slice into DUS will also fuse another non-elementwise op."
        return None
    return None
