"""Copies with XLA's semantics: `clone_computation` / `clone_module` are
HloComputation::Clone / HloModule::Clone with XLA's `.clone`, `.clone2` naming,
`clone_instruction` is CloneWithNewOperands, `inline_computation` is CallInliner::Inline's
cloning (in HloComputation::Accept order).
"""
from __future__ import annotations


from .graph import computation_post_order, post_order, stable_post_order, visit_order
from .module import Computation, Instruction, Module
from .rewriter import uniquer


# ---------------------------------------------------------------------------
# Copies

def clone_name(name: str, suffix: str) -> str:
    """HloInstruction::Clone's naming: `x` -> `x.clone`, `x.clone` -> `x.clone2`,
    `x.clone2` -> `x.clone3`."""
    i = name.rfind(suffix)
    if i < 0:
        return f"{name}.{suffix}"
    tail = name[i + len(suffix):]
    if not tail:
        return f"{name}2"
    if tail.isdigit():
        return f"{name[:i]}{suffix}{int(tail) + 1}"
    return f"{name}.{suffix}"


def clone_instruction(inst: Instruction, comp: Computation, operands, *, name=None,
                      before: Instruction | None = None, shape=None) -> Instruction:
    """CloneWithNewOperands into `comp` (before `before`, else at the end; a parameter
    keeps its number), named `name` (default: inst's), made unique."""
    module = comp.parent
    base = name or inst.name
    clone = Instruction(uniquer(module).unique(base) if module is not None else base,
                        inst.opdef, inst.shape if shape is None else shape, list(operands),
                        dict(inst.attrs), loc=inst.loc)
    clone.literal = inst.literal
    clone.parameter_number = inst.parameter_number
    if inst.opcode == "parameter" and before is None:
        before = next((i for i in comp.instructions if i.opcode != "parameter"), None)
    comp.add_instruction(clone, before=before)
    return clone


def clone_computation(comp: Computation, module: Module | None = None,
                      suffix: str = "clone", *, param_shapes=None) -> Computation:
    """HloComputation::Clone, added to `module` (default: comp's); called computations
    stay shared. `param_shapes` gives the parameters new shapes."""
    module = comp.parent if module is None else module
    names = uniquer(module)
    new = Computation(names.unique(clone_name(comp.name, suffix)))
    new.execution_thread = comp.execution_thread
    new.is_fusion_computation = comp.is_fusion_computation
    mapping: dict = {}
    for inst in post_order(comp):
        shape = None
        if param_shapes is not None and inst.opcode == "parameter":
            shape = param_shapes[inst.parameter_number]
        copy = Instruction(names.unique(clone_name(inst.name, suffix)), inst.opdef,
                           inst.shape if shape is None else shape,
                           [mapping[o] for o in inst.operands], dict(inst.attrs), loc=inst.loc)
        copy.literal = inst.literal
        copy.parameter_number = inst.parameter_number
        mapping[inst] = copy
        new.add_instruction(copy)
    for inst, copy in mapping.items():
        for pred in inst.control_predecessors:
            mapping[pred].add_control_dependency_to(copy)
    new.set_root_instruction(mapping[comp.root])
    module.add_computation(new)
    return new


def clone_module(module: Module, suffix: str = "clone") -> Module:
    """HloModule::Clone: a deep copy (attribute values shared, being immutable) named
    `<name>-<suffix>`, its computations and instructions renamed as HloComputation::Clone
    names them (`x` -> `x.<suffix>`, `x.<suffix>` -> `x.<suffix>2`); an empty suffix keeps
    every name."""
    new = Module(f"{module.name}-{suffix}" if suffix else module.name)

    def rename(name: str) -> str:
        return clone_name(name, suffix) if suffix else name

    new.attrs = dict(module.attrs)
    new.stack_frames = module.stack_frames
    new.source = module.source
    new.read_with_operand_shapes = module.read_with_operand_shapes
    new.read_with_async_sugar = module.read_with_async_sugar
    comps: dict = {}
    insts: dict = {}

    def remap(value):
        if isinstance(value, Computation):
            return comps[value]
        if isinstance(value, tuple) and value and isinstance(value[0], Computation):
            return tuple(comps[c] for c in value)
        return value

    for comp in computation_post_order(module, from_uncalled=False):
        c = Computation(rename(comp.name), comp.loc)
        c.is_entry = comp.is_entry
        c.execution_thread = comp.execution_thread
        c.is_fusion_computation = comp.is_fusion_computation
        c.is_async_sugar = comp.is_async_sugar
        comps[comp] = c
        for inst in stable_post_order(comp):
            copy = Instruction(rename(inst.name), inst.opdef, inst.shape,
                               [insts[o] for o in inst.operands],
                               {k: remap(v) for k, v in inst.attrs.items()}, loc=inst.loc)
            copy.literal = inst.literal
            copy.parameter_number = inst.parameter_number
            copy.is_root_marked = inst.is_root_marked
            insts[inst] = copy
        for inst in comp.instructions:          # the stored order, kept
            c.add_instruction(insts[inst])
            for pred in inst.control_predecessors:
                insts[pred].add_control_dependency_to(insts[inst])
        if comp.root is not None:
            c.set_root_instruction(insts[comp.root])
    for comp in module.computations:
        new.add_computation(comps[comp])
    new.entry = comps.get(module.entry) if module.entry is not None else None
    return new


def inline_computation(callee: Computation, args, dest: Computation,
                       before: Instruction) -> Instruction:
    """CallInliner::Inline's cloning: callee's instructions (in HloComputation::Accept
    order, keeping their names, made unique) go into `dest` before `before`, its
    parameters bound to `args`, control edges copied; returns the clone of the root."""
    names = uniquer(dest.parent)
    mapping: dict = {}
    for param in callee.parameters:
        mapping[param] = args[param.parameter_number]
    for inst in visit_order(callee):
        if inst in mapping:
            continue
        clone = Instruction(names.unique(inst.name), inst.opdef, inst.shape,
                            [mapping[o] for o in inst.operands], dict(inst.attrs),
                            loc=inst.loc)
        clone.literal = inst.literal
        dest.add_instruction(clone, before=before)
        for pred in inst.control_predecessors:
            mapping[pred].add_control_dependency_to(clone)
        mapping[inst] = clone
    return mapping[callee.root]
