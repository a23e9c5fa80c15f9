"""`cse` (HloCSE, xla/service/hlo_cse.cc): common-subexpression elimination.

Per computation, XLA first merges constants with equal shapes (layout ignored unless
layout-sensitive) and bitwise-equal values, keeping the first in instruction order.
Then, walking the instructions in post order, an instruction identical to an earlier
one becomes that one: same opcode, shape, operands (by identity; iotas by dimension and
shape; the two operands of add, multiply, maximum, minimum, and, or and xor in either
order), attributes (metadata, frontend attributes and statistics ignored; sharding,
backend_config and result_accuracy compared) and called computations compared by
structure. Zero-operand instructions (except partition-id and replica-id) and anything
with a side effect, itself or in what it calls (rng, send, side-effecting custom-calls),
are never merged; nor is an instruction with control edges. Identical iota operands of
one instruction are merged too. Fused computations are included. Not implemented: the
`only_fusion_computations` and `only_scalars` modes, and kDomain-aware constant merging
(computations containing domain instructions keep their constants).
"""
from __future__ import annotations

from ..ir.module import Computation, Instruction, Module
from ..ir.literal import literal_bytes
from ..ops import opcodes_with
from ..ops.base import COMMUTATIVE as _COMMUTATIVE, DEVICE_ID
from . import register
from .base import Pass
from ..ir.graph import Removal, operand_post_order, post_order, sort_post_order
from ..ir.rewriter import has_side_effect
from ..syntax.literal_printer import literal_text

# HloOpcodeIsBinaryCommutative: the registry's COMMUTATIVE trait.
COMMUTATIVE = opcodes_with(_COMMUTATIVE)
# Attributes HloInstruction::Identical does not look at.
IGNORED_ATTRS = frozenset({"metadata", "frontend_attributes", "statistics", "origin"})
# The zero-operand ops HloCSE merges (replica-id, partition-id): the device-id ops.
ZERO_OPERAND_CSE = opcodes_with(DEVICE_ID)
MAX_CONSTANT_BYTES = 1 << 26        # larger constants are not compared (memory)
_PLAIN = frozenset({str, int, bool, float})    # attribute values that are their own key




def _first(item):
    return item[0]


@register
class HloCSE(Pass):
    name = "cse"

    def __init__(self, layout_sensitive: bool = False):
        self.layout_sensitive = layout_sensitive

    def run(self, module: Module, ctx) -> bool:
        cse = _Cse(self.layout_sensitive)
        changed = False
        for comp in list(module.computations):
            if cse.computation(comp):
                cse.forget(comp)
                sort_post_order(comp)
                changed = True
        return changed


class _Cse:
    def __init__(self, layout_sensitive: bool):
        self.layout_sensitive = layout_sensitive
        self.memo: dict = {}
        self.fingerprints: dict[Computation, tuple] = {}

    def forget(self, comp: Computation) -> None:
        """Drop the fingerprints a change to `comp` may have invalidated (its own and
        those of the fused computations whose operands were deduplicated)."""
        self.fingerprints.pop(comp, None)
        for inst in comp.instructions:
            if inst.opcode == "fusion":
                for callee in inst.called_computations():
                    self.fingerprints.pop(callee, None)

    def shape_key(self, shape) -> str:
        return str(shape) if self.layout_sensitive else shape.no_layout()

    # -- constants ---------------------------------------------------------------
    def combine_constants(self, comp: Computation, editor: Removal) -> bool:
        if any(i.opcode == "domain" for i in comp.instructions):
            return False
        seen: dict = {}
        combined = False
        for inst in list(comp.instructions):
            if inst.opcode != "constant":
                continue
            key = self.constant_key(inst)
            if key is None:
                continue
            first = seen.setdefault(key, inst)
            if first is inst or inst.has_control_dependencies():
                continue
            inst.replace_all_uses_with(first)
            editor.gone.add(inst)
            combined = True
        return combined

    def constant_key(self, inst: Instruction):
        lit = inst.literal
        value = None if lit is None else literal_bytes(inst.shape, lit.value, MAX_CONSTANT_BYTES)
        return None if value is None else (self.shape_key(inst.shape), value)

    # -- instructions ----------------------------------------------------------------
    def computation(self, comp: Computation) -> bool:
        editor = Removal(comp)
        changed = self.combine_constants(comp, editor)
        editor.flush()
        memo = self.memo
        iota_key = self.iota_key
        alive = editor.alive
        # Two identical instructions have the same opcode and operands: buckets are keyed
        # by those alone (cheap), and the rest of the key (shape, attributes, called
        # computations by structure) is computed only when a bucket already holds an
        # instruction: [rest without callees, rest, instruction] entries, each rest
        # computed when first compared. Most instructions have a bucket of their own.
        representatives: dict = {}
        for inst in post_order(comp):
            if not alive(inst):
                continue
            operands = inst.operands
            opcode = inst.opcode
            if not operands and opcode not in ZERO_OPERAND_CSE:
                continue
            iotas = 0
            ops = []
            for o in operands:      # iotas by what they compute, the rest by identity
                if o.opcode == "iota":
                    iotas += 1
                    ops.append(iota_key(o))
                else:
                    ops.append(id(o))
            if len(ops) == 2 and opcode in COMMUTATIVE:
                a, b = ops
                if (type(a) is int) is (type(b) is int):
                    if a > b:
                        ops.reverse()
                elif type(b) is int:
                    ops.reverse()
            key = (opcode, tuple(ops))
            bucket = representatives.get(key)
            if bucket is None:
                # A side-effecting instruction may be kept here: one identical to it has
                # side effects too and is skipped before it looks.
                representatives[key] = [[None, None, inst]]
                if iotas > 1 and not has_side_effect(inst, memo):
                    changed |= self.merge_iota_operands(inst, editor)
                continue
            if has_side_effect(inst, memo):
                continue
            shallow = self.rest_key(inst, shallow=True)
            full = None
            rep = None
            for entry in bucket:
                if entry[0] is None:
                    entry[0] = self.rest_key(entry[2], shallow=True)
                if entry[0] != shallow:
                    continue
                if full is None:
                    full = self.rest_key(inst)
                if entry[1] is None:
                    entry[1] = self.rest_key(entry[2])
                if entry[1] == full:
                    rep = entry
                    break
            if rep is None:
                bucket.append([shallow, full, inst])
            elif not alive(rep[2]):                     # (a representative can die)
                rep[2] = inst
                rep = None
            else:
                rep = rep[2]
            if rep is None:
                if iotas > 1:
                    changed |= self.merge_iota_operands(inst, editor)
                continue
            if inst.has_control_dependencies():
                continue
            inst.replace_all_uses_with(rep)
            editor.remove_with_unused_operands(inst, memo)
            changed = True
        editor.flush()
        return changed

    def merge_iota_operands(self, inst: Instruction, editor: Removal) -> bool:
        changed = False
        for i, a in enumerate(inst.operands):
            if a.opcode != "iota":
                continue
            for j in range(i + 1, len(inst.operands)):
                b = inst.operands[j]
                if b is a or b.opcode != "iota" or self.iota_key(a) != self.iota_key(b):
                    continue
                inst.set_operand(j, a)
                changed = True
                if editor.is_dead(b) and editor.safely_removable(b):
                    editor.gone.add(b)
        return changed

    def iota_key(self, inst: Instruction):
        return ("iota", inst.attrs.get("iota_dimension"), self.shape_key(inst.shape))

    def rest_key(self, inst: Instruction, shallow: bool = False):
        """What besides opcode and operands makes an instruction identical to another;
        `shallow`: called computations not compared."""
        return (self.shape_key(inst.shape), self.attrs_key(inst, shallow))

    def attrs_key(self, inst: Instruction, shallow: bool = False) -> tuple:
        items = []
        index = inst.opdef.attr_index
        for name, value in inst.attrs.items():
            if name in IGNORED_ATTRS:
                continue
            spec = index.get(name)
            if spec is not None and spec.default is not None and value == spec.default:
                continue
            items.append((name, value if type(value) in _PLAIN else
                          self.value_key(value, shallow)))
        if len(items) > 1:
            items.sort(key=_first)
        return tuple(items)

    def value_key(self, value, shallow: bool = False):
        if isinstance(value, Computation):
            return ("computation",) if shallow else ("computation", self.fingerprint(value))
        if isinstance(value, (tuple, list)):
            return tuple(self.value_key(v, shallow) for v in value)
        try:
            hash(value)
        except TypeError:
            return repr(value)
        return value

    def fingerprint(self, comp: Computation) -> tuple:
        """HloComputation::operator== as a key: the instructions reachable from the root,
        in post order, with shapes (layouts included), attributes and operand positions."""
        fp = self.fingerprints.get(comp)
        if fp is not None:
            return fp
        order = operand_post_order(comp.root)
        position = {inst: n for n, inst in enumerate(order)}
        saved, self.layout_sensitive = self.layout_sensitive, True
        try:
            rows = []
            for inst in order:
                extra = None
                if inst.opcode == "parameter":
                    extra = inst.parameter_number
                elif inst.opcode == "constant":
                    lit = inst.literal
                    extra = (None if lit is None else literal_bytes(inst.shape, lit.value)) \
                        or literal_text(lit)
                rows.append((inst.opcode, str(inst.shape),
                             tuple(position[o] for o in inst.operands),
                             self.attrs_key(inst), extra))
        finally:
            self.layout_sensitive = saved
        fp = (comp.execution_thread, tuple(rows))
        self.fingerprints[comp] = fp
        return fp
