"""`fusion`: XLA:CPU's producer-consumer loop fusion (CpuInstructionFusion).

XLA's InstructionFusion visits each non-fusion computation (entry, while bodies and
conditions, branches; never the scalar bodies of reduce/sort/map/scatter) in reverse
post order. For each consumer it tries its operands from the latest in post order
down and fuses the first one CpuInstructionFusion::ShouldFuse accepts: the consumer
becomes (or already is) a `fusion` instruction whose fused computation holds a clone
of the producer; the producer is removed once nothing else uses it, otherwise it is
duplicated. Producers that would be duplicated where that raises memory traffic are
excluded up front (ComputeGloballyUnfusible). The rules themselves live in
decisions.py. Fusions print as XLA's do: `<producer>_<consumer>_fusion`,
`kind=kLoop` (or `kOutput` for a matrix-vector dot fused into an add), calls
`%fused_computation.N` with parameters `param_<i>` renamed as XLA renumbers them,
computations and instructions of unscheduled modules in XLA's post order. With
`may_duplicate=False` (XLA:CPU's setting when xla_cpu_use_multi_output_fusion is on, before
the sibling fusion of multi_output.py) no producer with other users is copied (except
broadcasts and widening converts) and the global do-not-duplicate analysis is skipped, as
in InstructionFusion::Run. Fusions already in
the module when the pass starts (kCustom ones; all of them in an optimized module run with
`--force`) are not fused into, so that `hloc opt` of its own output is a fixed point. The mechanics
of building fusions (build.py) are shared with the `fusion-wrapper` pass.
"""
from __future__ import annotations

import bisect

from ...ir.module import Computation, Instruction, Module
from .. import register
from ..base import Pass, PassContext
from ...ir.graph import callers, post_order
from .analysis import Reachability
from .build import (StorageOrder, create_fusion, fuse_producer, fusible_computations,
                           replace_with_fusion)
from .decisions import CpuFusionRules, can_be_output_fused, duplication_candidates


# ---------------------------------------------------------------------------
# The pass

@register
class InstructionFusion(Pass):
    name = "fusion"

    def __init__(self, may_duplicate: bool = True):
        self.may_duplicate = may_duplicate

    def run(self, module: Module, ctx: PassContext) -> bool:
        order = StorageOrder()
        changed = False
        calls = callers(module)
        for comp in fusible_computations(module, calls):
            changed |= self._run_on(comp, order)
        if changed:
            # What is called stays called (a fused instruction's clone calls what it
            # called); the only computations called now and not before are the new
            # fused ones: no walk over every instruction to find the uncalled ones.
            order.finish(module, set(calls).union(order.fused.values()))
        return changed

    def _run_on(self, comp: Computation, order: StorageOrder) -> bool:
        # Fusions there before the pass (custom ones, or an optimized module's under
        # --force) are final: fusing into them again would make opt of opt differ.
        skip = {id(i) for i in comp.instructions if i.opcode == "fusion"}
        rules = CpuFusionRules(skip, self.may_duplicate)
        post = post_order(comp)
        # The do-not-duplicate analysis asks reachability from the producers it
        # examines (not effectively unary, operands larger than the result): bits for
        # them only (any other query walks the graph, so this choice is only a cost).
        if self.may_duplicate:
            sources = duplication_candidates(post)
            do_not_duplicate = rules.globally_unfusible(post, Reachability(post, sources),
                                                        {id(p) for p in sources})
        else:
            do_not_duplicate = set()
        queue: list = list(post)
        index = {id(inst): n for n, inst in enumerate(queue)}
        tries: dict[int, list] = {}    # a fusion's operands still worth trying (sorted)
        keep_alive: list = []          # ids stay unique while the pass runs
        changed = False
        while True:
            while queue and queue[-1] is None:
                queue.pop()
            if not queue:
                break
            inst = queue.pop()
            del index[id(inst)]
            if inst.opcode != "fusion" and not rules.fusible(inst):
                continue
            if inst.opcode == "fusion":     # operands are unique: keep them sorted
                todo = tries.get(id(inst))
                if todo is None:
                    todo = tries[id(inst)] = sorted(
                        (-index[id(o)], id(o), o) for o in inst.operands if id(o) in index)
                candidates = [(None, t) for t in list(todo)]
            else:                           # an operand may appear twice: try both
                candidates = [(i, None) for i, o in enumerate(inst.operands)
                              if id(o) in index]
                candidates.sort(key=lambda c: -index[id(inst.operands[c[0]])])
                todo = None
            for i, entry in candidates:
                if i is None:   # a fusion's operands are unique; index() is a C scan
                    i = inst.operands.index(entry[2])
                producer = inst.operands[i]
                if id(producer) not in index or id(producer) in do_not_duplicate or \
                        not rules.fusible(producer):
                    reason = "never"
                else:
                    reason = rules.decide(inst, i)
                if reason is not None:
                    if todo is not None and rules.permanent(reason):
                        todo.remove(entry)
                    continue
                if not changed:
                    order.note(comp)
                    changed = True
                n_operands = len(inst.operands)
                fusion = self._fuse(producer, inst, order, rules, i)
                keep_alive.append(inst)
                index[id(fusion)] = len(queue)
                queue.append(fusion)
                if not producer.users:
                    queue[index.pop(id(producer))] = None
                    do_not_duplicate.discard(id(producer))
                    producer.safely_drop_all_control_deps()
                    comp.remove_instruction(producer)
                    keep_alive.append(producer)
                if fusion is not inst:
                    do_not_duplicate.discard(id(inst))
                elif todo is not None:
                    todo.remove(entry)
                    for o in fusion.operands[n_operands - 1:]:   # the ones just added
                        if id(o) in index:
                            bisect.insort(todo, (-index[id(o)], id(o), o))
                break
        return changed

    def _fuse(self, producer: Instruction, consumer: Instruction, order: StorageOrder,
              rules: CpuFusionRules, slot: int) -> Instruction:
        kind = "kOutput" if can_be_output_fused(producer, consumer) else "kLoop"
        if consumer.opcode == "fusion":
            fusion = consumer
            if fusion.attrs.get("kind") != kind:    # set_attr records a change around it
                fusion.set_attr("kind", kind)
        else:
            fusion = create_fusion(consumer, kind,
                                   f"{producer.opcode}_{consumer.opcode}_fusion")
            order.added(consumer.parent, fusion)
            replace_with_fusion(consumer, fusion)
        rules.update_reused(producer, fusion)
        rules.fused_reduce(fusion, producer)
        evaluation = rules.evaluation(fusion)
        users = evaluation.remove_operand(producer)
        # A fusion consumer keeps its operand numbers; a new one has unique operands
        # (so slot numbers may shift): fuse_producer checks the slot before using it.
        evaluation.fused(fuse_producer(fusion, producer, slot), users)
        order.fused_changed(fusion.attrs["calls"])
        return fusion

