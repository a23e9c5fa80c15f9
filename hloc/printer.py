"""Module -> text, in XLA's dump style (HloModule::ToString).

Mirrors the parser: header attributes in XLA's fixed order, the stack-frame tables,
computations in post-order, `%name = shape opcode(operands), attrs` with attributes in
the registry's schema order followed by the generic ones. Attribute values print via
their typed kinds; verbatim kinds and constant literals print exactly as they were read.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .ir.module import Computation, Instruction, Module
from .ir.shape import TupleShape
from .ops import GENERIC_ATTRS
from .syntax import attr_kinds
from .syntax.literal_printer import literal_text

_HEADER_ORDER = ("is_scheduled", "input_output_alias", "buffer_donor",
                 "alias_passthrough_params", "entry_computation_layout",
                 "allow_spmd_sharding_propagation_to_parameters",
                 "allow_spmd_sharding_propagation_to_output", "replica_count",
                 "num_partitions", "frontend_attributes", "origin_recovery_table")
_HEADER_KINDS = {"is_scheduled": "bool", "alias_passthrough_params": "bool",
                 "input_output_alias": "input_output_alias", "buffer_donor": "buffer_donor",
                 "allow_spmd_sharding_propagation_to_parameters": "bool_list_or_bool",
                 "allow_spmd_sharding_propagation_to_output": "bool_list_or_bool",
                 "entry_computation_layout": "computation_layout",
                 "replica_count": "int", "num_partitions": "int"}


@dataclass(frozen=True)
class PrintOptions:
    percent: bool = True           # `%name`
    signatures: bool = True        # `%comp (p: f32[]) -> f32[] {`
    metadata: bool = True
    large_constants: bool = False  # (new constants only; read ones keep their text)
    # `add(f32[2]{0} %a, ...)` as XLA printed until 2024; None = as the module was read.
    operand_shapes: bool | None = None
    # `custom-call-start(...)` for async ops wrapping one instruction; None = as read.
    async_sugar: bool | None = None

    @staticmethod
    def short_parsable() -> "PrintOptions":
        return PrintOptions(percent=False, signatures=False, metadata=False)


def module_to_text(module: Module, options: PrintOptions = PrintOptions()) -> str:
    if options.operand_shapes is None:
        options = replace(options, operand_shapes=module.read_with_operand_shapes)
    if options.async_sugar is None:
        options = replace(options, async_sugar=module.read_with_async_sugar)
    out = [_header(module)]
    out.append("\n\n")
    if module.stack_frames is not None:
        for title, entries in module.stack_frames:
            out.append(title + "\n")
            for ident, text, _ in entries:
                out.append(f"{ident} {text}\n")
            out.append("\n")
        out.append("\n")
    for comp in module.post_order():
        if options.async_sugar and comp.is_async_sugar:
            continue
        out.append(computation_to_text(comp, options))
        out.append("\n\n")
    return "".join(out)


def _header(module: Module) -> str:
    parts = [f"HloModule {module.name}"]
    attrs = dict(module.attrs)
    if "entry_computation_layout" not in attrs and module.entry is not None:
        attrs["entry_computation_layout"] = entry_layout(module.entry)
    for name in _HEADER_ORDER:
        if name not in attrs:
            continue
        value = attrs[name]
        if name == "is_scheduled" and not value:
            continue
        kind = _HEADER_KINDS.get(name, "verbatim")
        parts.append(f"{name}={attr_kinds.KINDS[kind].format(value)}")
    return ", ".join(parts)


def entry_layout(entry: Computation):
    return attr_kinds.KINDS["computation_layout"].parse(
        "{(" + ", ".join(str(p.shape) for p in entry.parameters) + ")->"
        + str(entry.root.shape) + "}")


def computation_to_text(comp: Computation, options: PrintOptions = PrintOptions()) -> str:
    pct = "%" if options.percent else ""
    head = ("ENTRY " if comp.is_entry else "") + pct + comp.name
    if options.signatures:
        params = ", ".join(f"{p.name}: {p.shape.no_layout()}" for p in comp.parameters)
        head += f" ({params}) -> {comp.root.shape.no_layout()}"
    lines = [head + " {"]
    for inst in comp.instructions:
        lines.append("  " + instruction_to_text(inst, options, inst is comp.root))
    text = "\n".join(lines) + "\n}"
    if comp.execution_thread is not None:
        text += f", execution_thread={attr_kinds.KINDS['string'].format(comp.execution_thread)}"
    return text


def _operand_list(names: list[str]) -> str:
    out = []
    for i, n in enumerate(names):
        if i == 0:
            out.append(n)
        elif i % 5 == 0:
            out.append(f", /*index={i}*/{n}")
        else:
            out.append(", " + n)
    return "".join(out)


def instruction_to_text(inst: Instruction, options: PrintOptions = PrintOptions(),
                        is_root: bool = False) -> str:
    pct = "%" if options.percent else ""
    opdef = inst.opdef
    if opdef.name == "parameter":
        args = str(inst.parameter_number)
    elif opdef.name == "constant":
        args = literal_text(inst.literal, print_large=options.large_constants)
    else:
        if options.operand_shapes:
            args = _operand_list([f"{o.shape} {pct}{o.name}" for o in inst.operands])
        else:
            args = _operand_list([pct + o.name for o in inst.operands])
    opname = opdef.name
    attrs = inst.attrs
    parts = []
    specs = opdef.attrs
    if options.async_sugar and opname.startswith("async-") and \
            getattr(attrs.get("calls"), "is_async_sugar", False):
        wrapped = attrs["calls"].root
        opname = wrapped.opcode + opname[5:]
        if "async_execution_thread" in attrs and opname.endswith("-start"):
            parts.append("async_execution_thread=" + format_attr(
                "string", attrs["async_execution_thread"]))
        if opname.endswith("-start"):
            attrs, specs = wrapped.attrs, wrapped.opdef.attrs
        else:
            attrs, specs = {}, ()
    text = f"{'ROOT ' if is_root else ''}{pct}{inst.name} = {inst.shape} {opname}({args})"
    for spec in specs:
        if spec.name in attrs:
            v = attrs[spec.name]
            if spec.default is not None and v == spec.default and not spec.always_print:
                continue
            parts.append(f"{spec.name}={format_attr(spec.kind, v, pct)}")
    for spec in GENERIC_ATTRS:
        if spec.name == "control-predecessors":
            if inst.control_predecessors:
                parts.append("control-predecessors={" + ", ".join(
                    pct + p.name for p in inst.control_predecessors) + "}")
            continue
        if spec.name in attrs:
            if spec.name == "metadata" and not options.metadata:
                continue
            parts.append(f"{spec.name}={format_attr(spec.kind, attrs[spec.name], pct)}")
    if parts:
        text += ", " + ", ".join(parts)
    return text


def format_attr(kind: str, value, pct: str = "%") -> str:
    if kind == "computation":
        return pct + value.name
    if kind == "computation_list":
        return "{" + ", ".join(pct + c.name for c in value) + "}"
    return attr_kinds.KINDS[kind].format(value)


def is_tuple_shape(shape) -> bool:
    return isinstance(shape, TupleShape)
