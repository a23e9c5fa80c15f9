"""Syntax records -> Module: resolve names, check ops against the registry, fill shapes.

Mirrors the checks XLA's parser makes beyond syntax (hlo_parser.cc): operand counts,
undefined or duplicate names, declared operand shapes, attribute schemas, literal
ranges, parameter numbering, ROOT and ENTRY rules, computations defined before use.
Semantic checks beyond that belong to the verifier.
"""
from __future__ import annotations

import re

from ..diagnostics import ParseError, Source
from . import attr_kinds
from ..ir.literal import ElidedFiller, ElidedLiteral, LiteralError
from .literal_parser import parse_literal
from ..ir.module import Computation, Instruction, Module
from ..ir.shape import ArrayShape, TupleShape
from ..ops import GENERIC_ATTRS, REGISTRY, async_sugar, attr_spec
from ..ops.base import ShapeInferenceError
from .lexer import _SKIP_RE
from .records import CompRec, InstrRec, ModuleRec

MODULE_ATTRS = {
    "is_scheduled": "bool",
    "entry_computation_layout": "computation_layout",
    "input_output_alias": "input_output_alias",
    "buffer_donor": "buffer_donor",
    "replica_count": "int",
    "num_partitions": "int",
    "alias_passthrough_params": "bool",
    "frontend_attributes": "verbatim",
    "allow_spmd_sharding_propagation_to_parameters": "bool_list_or_bool",
    "allow_spmd_sharding_propagation_to_output": "bool_list_or_bool",
    "origin_recovery_table": "verbatim",
}
_GENERIC = {a.name: a for a in GENERIC_ATTRS}
# Small constants (`constant(0)`, `constant(-inf)`) repeat thousands of times in big dumps.
_LITERAL_CACHE: dict = {}
_COMPUTATION_KINDS = ("computation", "computation_list")
_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*")


class Builder:
    def __init__(self, source: Source):
        self.source = source
        self.module: Module | None = None
        self._inline_count = 0
        self.filler = ElidedFiller()   # XLA fills `{...}` from counters, in text order

    def error(self, message: str, pos: int) -> ParseError:
        return ParseError(message, self.source.loc(pos))

    def after(self, irec: InstrRec) -> int:
        """Where XLA reports errors found once an instruction is complete: the next token."""
        return _SKIP_RE.match(self.source.text, irec.end).end()

    # -- module ------------------------------------------------------------------
    def build_module(self, rec: ModuleRec) -> Module:
        entry_rec = None
        for c in rec.comps:
            if c.is_entry:
                if entry_rec is not None:
                    raise self.error("expects only one ENTRY", c.pos)
                entry_rec = c
        if entry_rec is None:
            entry_rec = rec.comps[-1]
        name = rec.name if rec.name is not None else f"module_{entry_rec.name}"
        module = self.module = Module(name)
        module.source = self.source
        seen = set()
        for name_, text, pos in rec.attrs:
            kind = MODULE_ATTRS.get(name_)
            if kind is None:
                raise self.error(f'unexpected attribute "{name_}"', pos)
            if name_ in seen:
                raise self.error(f"attribute {name_} already exists", pos)
            seen.add(name_)
            module.attrs[name_] = self.parse_attr(kind, text, pos)
        module.stack_frames = rec.stack_index
        for crec in rec.comps:
            comp = self.build_computation(crec)
            if crec is entry_rec:
                comp.is_entry = True
                module.entry = comp
        self._check_async_wrappers(module)
        return module

    def _check_async_wrappers(self, module: Module) -> None:
        callers: dict[int, object] = {}
        for comp in module.computations:
            for inst in comp.instructions:
                if inst.opcode == "async-start":
                    wrapped = inst.attrs["calls"]
                    if id(wrapped) in callers:
                        raise self.error(f"Computation {wrapped.name} is called by more "
                                         f"than one async op.", inst.loc)
                    callers[id(wrapped)] = inst

    def parse_attr(self, kind: str, text: str, pos: int):
        try:
            return attr_kinds.KINDS[kind].parse(text)
        except attr_kinds.AttrSyntaxError as e:
            raise self.error(str(e), pos + e.offset) from None

    # -- computations --------------------------------------------------------------
    def build_computation(self, crec: CompRec, name: str | None = None) -> Computation:
        module = self.module
        name = name or crec.name
        if module.computation(name) is not None:
            raise self.error(f"computation already exists: {name}", crec.pos)
        comp = Computation(name, crec.pos)
        self._fill_computation(comp, crec.instrs, crec.pos)
        for aname, text, pos in crec.attrs:
            if aname != "execution_thread":
                raise self.error(f'unexpected attribute "{aname}"', pos)
            comp.execution_thread = self.parse_attr("string", text, pos)
        if crec.result is not None and not crec.result.compatible(comp.root.shape):
            raise self.error(
                f"Shape of computation {name}, {crec.result}, is not compatible with that of "
                f"its root instruction {comp.root.name}, {comp.root.shape}", crec.pos)
        module.add_computation(comp)
        return comp

    def _fill_computation(self, comp: Computation, instrs: list, pos: int) -> None:
        self._names: dict[str, Instruction] = {}
        self._comp = comp
        root = None
        for irec in instrs:
            inst = self.build_instruction(irec)
            if irec.root:
                if root is not None:
                    raise self.error("one computation should have only one ROOT", irec.pos)
                root = inst
        if not comp.instructions:
            raise self.error("expects at least one instruction", pos)
        comp.root = root if root is not None else comp.instructions[-1]
        if root is not None:
            root.is_root_marked = True
        for i, p in enumerate(comp.parameters):
            if p is None:
                raise self.error(f"parameter number {i} is missing (parameters must be "
                                 f"numbered 0..{len(comp.parameters) - 1})", pos)

    # -- instructions --------------------------------------------------------------
    def _unique_anon(self, opcode: str) -> str:
        base = f"{opcode}.anon"
        name = base
        i = 0
        while name in self._names:
            i += 1
            name = f"{base}.{i}"
        return name

    def build_instruction(self, irec: InstrRec) -> Instruction:
        opdef = REGISTRY.get(irec.opcode)
        if opdef is None:
            sugar = async_sugar(irec.opcode)
            if sugar is None or sugar[0].startswith("async"):
                raise self.error(f"expects opcode but sees: {irec.opcode} (unknown opcode)",
                                 irec.opcode_pos)
            return self.build_async_sugar(irec, sugar[0], sugar[1][len("async-"):])
        name = irec.name or self._unique_anon(irec.opcode)
        if name in self._names:
            raise self.error(f"instruction already exists: {name}", irec.pos)
        operands = []
        param_number = None
        if irec.operand_names is not None:
            get = self._names.get
            operands = [get(n) for n in irec.operand_names]
            if None in operands:
                missing = irec.operand_names[operands.index(None)]
                pos = self.source.text.find(missing, irec.args_pos)
                if not _NAME_RE.fullmatch(missing):
                    raise self.error(f"expects an instruction name but sees: '{missing}'",
                                     pos if missing else irec.args_pos)
                raise self.error(f"instruction does not exist: {missing}", pos)
        for orec in irec.operands:
            if orec.kind == "int":
                if opdef.name != "parameter":
                    raise self.error("expects instruction name", orec.pos)
                param_number = orec.value
                continue
            if orec.kind == "nested":
                operands.append(self.build_instruction(orec.nested))
                continue
            op = self._names.get(orec.name)
            if op is None:
                raise self.error(f"instruction does not exist: {orec.name}", orec.pos)
            if orec.shape is not None:
                self.module.read_with_operand_shapes = True
            if orec.shape is not None and not orec.shape.compatible(op.shape):
                raise self.error(
                    f"The declared operand shape {orec.shape} is not compatible with the "
                    f"shape of the operand instruction {op.shape}.", orec.shape_pos)
            operands.append(op)
        opname = opdef.name
        if param_number is None and opname == "parameter":
            raise self.error("expects integer", irec.opcode_pos + len(irec.opcode) + 1)
        if irec.literal is None and opname == "constant":
            raise self.error("expects literal", irec.opcode_pos + len(irec.opcode) + 1)
        if not opdef.arity_after_attrs:
            self._check_arity(opdef, operands, irec)
        attrs = self.build_attrs(opdef, irec) if irec.attrs or opdef.required_attrs else {}
        if opdef.arity_after_attrs:
            self._check_arity(opdef, operands, irec)
        if opname == "fusion":
            attrs["calls"].is_fusion_computation = True
        inst = Instruction(name, opdef, irec.shape, operands, attrs, irec.pos)
        if param_number is not None:
            self._add_parameter(inst, param_number, irec)
        if irec.literal is not None:
            self._set_literal(inst, irec)
        if inst.shape is None:
            inst.shape = self.infer_shape(inst, irec)
        if opname == "async-update" or opname == "async-done":
            self._check_async_continuation(inst, irec)
        if opdef.parse_check is not None:
            problem = opdef.parse_check(inst)
            if problem is not None:
                if isinstance(problem, tuple):
                    msg, aname = problem
                    pos = next((p - len(n) - 1 for n, _, p in irec.attrs if n == aname),
                               irec.pos)
                    raise self.error(msg, pos)
                raise self.error(problem, self.after(irec))
        preds = attrs.pop("control-predecessors", None) if attrs else None
        if preds:
            for pname in preds:
                p = self._names.get(pname.lstrip("%"))
                if p is None:
                    raise self.error(f"instruction '{pname.lstrip('%')}' is not defined",
                                     irec.pos)
                p.add_control_dependency_to(inst)
        self._names[name] = inst
        self._comp.add_instruction(inst)
        return inst

    def build_async_sugar(self, irec: InstrRec, base: str, phase: str) -> Instruction:
        """`custom-call-start(...)` etc.: XLA's syntax sugar for async-start/update/done
        wrapping one instruction in its own computation."""
        from .records import OperandRec
        self.module.read_with_async_sugar = True
        thread = [a for a in irec.attrs if a[0] == "async_execution_thread"]
        rest = [a for a in irec.attrs if a[0] != "async_execution_thread"]
        if phase != "start":
            rec = InstrRec(irec.root, irec.name, irec.pos, irec.shape, irec.shape_pos,
                           f"async-{phase}", irec.opcode_pos, irec.operands, None, thread,
                           irec.end, irec.operand_names, irec.args_pos)
            inst = self.build_instruction(rec)
            start = inst.operands[0]
            wrapped = start.attrs["calls"]
            if wrapped.root.opcode != base:
                raise self.error(f"Expect async wrapped opcode to be {wrapped.root.opcode}, "
                                 f"but got {base}", self.after(irec))
            inst.attrs["calls"] = wrapped
            return inst
        shape = irec.shape
        if not (isinstance(shape, TupleShape) and len(shape.elements) >= 2
                and isinstance(shape.elements[0], TupleShape)):
            raise self.error("AsyncStart expects the op shape to be in the form of "
                             "((async-operands), async-outputs, state).", irec.shape_pos)
        params = []
        for i, pshape in enumerate(shape.elements[0].elements):
            params.append(InstrRec(False, f"async_param.{i}" if i else "async_param",
                                   irec.pos, pshape, irec.pos, "parameter", irec.opcode_pos,
                                   [OperandRec("int", irec.pos, value=i)], None, []))
        wrapped_ops = [OperandRec("name", irec.pos, name=p.name) for p in params]
        wrapped = InstrRec(True, base, irec.pos, shape.elements[1], irec.shape_pos, base,
                           irec.opcode_pos, wrapped_ops, None, rest, irec.end)
        saved = (self._names, self._comp)
        name = "async_wrapped"
        i = 0
        while self.module.computation(name) is not None:
            i += 1
            name = f"async_wrapped.{i}"
        comp = Computation(name, irec.pos)
        comp.is_async_sugar = True
        self._fill_computation(comp, params + [wrapped], irec.pos)
        self.module.add_computation(comp)
        self._names, self._comp = saved
        rec = InstrRec(irec.root, irec.name, irec.pos, shape, irec.shape_pos, "async-start",
                       irec.opcode_pos, irec.operands, None,
                       thread + [("calls", "%" + name, irec.opcode_pos)], irec.end,
                       irec.operand_names, irec.args_pos)
        return self.build_instruction(rec)

    def _check_async_continuation(self, inst, irec):
        start = inst.operands[0]
        if start.opcode not in ("async-start", "async-update"):
            raise self.error("AsyncUpdate and AsyncDone expect a single async op as their "
                             "operand.", self.after(irec))
        wrapped = start.attrs.get("calls")
        calls = inst.attrs.get("calls")
        if calls is not None and calls is not wrapped:
            raise self.error(f"Expect async_wrapped_computation to be {wrapped.name}, but "
                             f"got {calls.name}", self.after(irec))
        inst.attrs.setdefault("calls", wrapped)
        want = start.attrs.get("async_execution_thread", "main")
        got = inst.attrs.get("async_execution_thread", want)
        if "async_execution_thread" in start.attrs:
            inst.attrs.setdefault("async_execution_thread", want)
        if want != got:
            raise self.error(f"Expect async_execution_thread to be {want}, but got {got}",
                             self.after(irec))

    def _add_parameter(self, inst, number, irec):
        if number < 0:
            raise self.error("parameter number must be >= 0", irec.opcode_pos)
        comp = self._comp
        if number < len(comp.parameters) and comp.parameters[number] is not None:
            raise self.error(f"Duplicate parameter number {number}", irec.pos)
        if number > 100000:
            raise self.error(f"parameter number {number} is too large", irec.opcode_pos)
        inst.parameter_number = number
        if inst.shape is None:
            raise self.error("expects instruction shape", irec.opcode_pos)

    def _set_literal(self, inst, irec):
        text, pos = irec.literal
        if inst.shape is None:
            raise self.error("expects instruction shape", irec.opcode_pos)
        if text.strip() == "{...}" and isinstance(inst.shape, ArrayShape) and inst.shape.dims:
            inst.literal = ElidedLiteral(inst.shape, text, self.filler)
            return
        key = (text, inst.shape)
        lit = _LITERAL_CACHE.get(key) if len(text) <= 64 and "..." not in text else None
        if lit is None:
            try:
                lit = parse_literal(text, inst.shape, filler=self.filler)
            except LiteralError as e:
                raise self.error(str(e), pos + e.offset) from None
            if len(text) <= 64 and isinstance(inst.shape, ArrayShape) and not lit.elided:
                lit.value.flags.writeable = False   # shared between equal constants
                if len(_LITERAL_CACHE) > 4096:
                    _LITERAL_CACHE.clear()
                _LITERAL_CACHE[key] = lit
        inst.literal = lit

    def _check_arity(self, opdef, operands, irec: InstrRec) -> None:
        arity = opdef.arity
        if arity is not None and arity != len(operands) and not opdef.arity_ok(len(operands)):
            raise self.error(
                f"{opdef.name} expects {opdef.arity_text()} operand(s), but has "
                f"{len(operands)}", irec.opcode_pos)

    def build_attrs(self, opdef, irec: InstrRec) -> dict:
        attrs = {}
        for aname, text, pos in irec.attrs:
            spec = attr_spec(opdef, aname)
            if spec is None:
                allowed = sorted(a for a in {x.name for x in opdef.attrs} | set(_GENERIC)
                                 if attr_spec(opdef, a) is not None)
                raise self.error(f'unexpected attribute "{aname}". Allowed attributes: '
                                 f'{", ".join(allowed)}', pos - len(aname) - 1)
            if aname in attrs:
                raise self.error(f"attribute {aname} already exists", pos - len(aname) - 1)
            kind = spec.kind
            value = self.parse_attr(kind, text, pos)
            if kind in _COMPUTATION_KINDS:
                value = self.resolve_computations(value, pos)
            attrs[aname] = value
        for name in opdef.required_attrs:
            if name not in attrs:
                raise self.error(f"attribute {name} is expected but not seen", irec.end)
        return attrs

    def resolve_computations(self, value, pos):
        if isinstance(value, tuple):
            return tuple(self.resolve_computations(v, pos) for v in value)
        if isinstance(value, attr_kinds.InlineComp):
            return self.build_inline(value, pos)
        comp = self.module.computation(value.name.lstrip("%"))
        if comp is None:
            raise self.error(f"computation does not exist: {value.name}", pos)
        return comp

    def build_inline(self, value, pos) -> Computation:
        from .parser import parse_records
        start = pos + value.offset
        instrs = parse_records(self.source, start, start + len(value.text),
                               rule="instruction_list")
        saved = (self._names, self._comp)
        name = "_" if self.module.computation("_") is None else None
        while name is None:
            self._inline_count += 1
            cand = f"_.{self._inline_count}"
            name = cand if self.module.computation(cand) is None else None
        comp = Computation(name, pos)
        self._fill_computation(comp, instrs, pos)
        self.module.add_computation(comp)
        self._names, self._comp = saved
        return comp

    def infer_shape(self, inst, irec):
        opdef = inst.opdef
        if opdef.infer is None:
            raise self.error("expects instruction shape", irec.opcode_pos)
        try:
            shape = opdef.infer([o.shape for o in inst.operands], inst.attrs, inst)
        except ShapeInferenceError as e:
            raise self.error(str(e), irec.opcode_pos) from None
        if shape is None:
            raise self.error("expects instruction shape", irec.opcode_pos)
        return shape


def build(rec, source: Source) -> Module:
    b = Builder(source)
    if isinstance(rec, ModuleRec):
        return b.build_module(rec)
    return build_single_instruction(b, rec)


def build_single_instruction(b: Builder, irec: InstrRec) -> Module:
    """`ROOT r = f32[3] add(f32[3] x, f32[3] y)`: unknown shaped operands become parameters."""
    from .records import CompRec, OperandRec
    params = []
    seen = {}

    def collect(rec):
        for o in rec.operands:
            if o.kind == "name" and o.name not in seen:
                if o.shape is None:
                    raise b.error(f"instruction does not exist: {o.name}", o.pos)
                seen[o.name] = len(params)
                params.append(InstrRec(False, o.name, o.pos, o.shape, o.pos, "parameter",
                                       o.pos, [OperandRec("int", o.pos, value=len(params))],
                                       None, []))
            elif o.kind == "nested":
                collect(o.nested)

    collect(irec)
    name = irec.name or irec.opcode
    crec = CompRec(True, name, irec.pos, None, None, params + [irec], [])
    mrec = ModuleRec(None, 0, [], None, [crec])
    return b.build_module(mrec)
