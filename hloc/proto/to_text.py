"""HloModuleProto -> HLO text, as HloModule::CreateFromProto followed by ToString.

`module_text(proto)` writes the module an XLA tool would print for the proto, which
hloc's parser then reads like any dump: shapes with their layouts, constants from their
LiteralProto (in full), every attribute the proto's fields carry for the instruction's
opcode, called computations by id, the schedule's instruction order, the module header
(entry_computation_layout from host_program_shape, input_output_alias, buffer_donor)
and the stack-frame tables. A proto that names an id nothing defines, or a field hloc
cannot print, raises ProtoError naming the computation and instruction.
"""
from __future__ import annotations

import numpy as np

from .fields import (default_comparison, device_list_text, dim_labels, enum_name,
                     frontend_text, groups_text, ints, metadata_text, padding_text, quote,
                     sharding_text, window_text)
from .values import ProtoError, constant_text, literal_value, shape_text, type_name

__all__ = ["module_text", "literal_value", "shape_text", "ProtoError"]

# Opcodes whose text always has `dimensions={...}` (even empty).
_ALWAYS_DIMENSIONS = {"broadcast", "transpose", "reduce", "reverse", "concatenate", "sort",
                      "map", "all-gather", "all-gather-start", "reduce-scatter",
                      "get-dimension-size", "set-dimension-size"}
_TO_APPLY = {"reduce", "reduce-window", "map", "scatter", "sort", "all-reduce",
             "all-reduce-start", "reduce-scatter", "call"}


class _Writer:
    def __init__(self, module):
        self.module = module
        self.comp_by_id = {c.id: c for c in module.computations}
        self.names: dict[tuple[int, int], str] = {}
        for c in module.computations:
            for i in c.instructions:
                self.names[(c.id, i.id)] = i.name

    def comp_name(self, cid: int, where: str) -> str:
        c = self.comp_by_id.get(cid)
        if c is None:
            raise ProtoError(f"{where}: calls computation id {cid}, which the module lacks")
        return "%" + c.name

    def operand(self, comp, oid: int, where: str) -> str:
        name = self.names.get((comp.id, oid))
        if name is None:
            raise ProtoError(f"{where}: operand id {oid} is no instruction of "
                             f"computation {comp.name}")
        return "%" + name

    def attrs(self, comp, inst, where) -> list[str]:
        op = inst.opcode
        a: list[str] = []
        called = [self.comp_name(c, where) for c in inst.called_computation_ids]
        dims = list(inst.dimensions)
        if op == "iota":
            a.append(f"iota_dimension={dims[0] if dims else 0}")
        elif op in _ALWAYS_DIMENSIONS or (dims and op not in ("parameter", "reshape")):
            a.append(f"dimensions={ints(dims)}")
        if op == "get-tuple-element":
            a.append(f"index={inst.tuple_index}")
        if inst.slice_dimensions:
            a.append("slice={" + ", ".join(
                f"[{s.start}:{s.limit}" + (f":{s.stride}" if s.stride != 1 else "") + "]"
                for s in inst.slice_dimensions) + "}")
        if inst.dynamic_slice_sizes:
            a.append(f"dynamic_slice_sizes={ints(inst.dynamic_slice_sizes)}")
        if inst.HasField("padding_config") and op == "pad":
            a.append(f"padding={padding_text(inst.padding_config)}")
        if inst.HasField("window") and inst.window.dimensions:
            a.append(f"window={window_text(inst.window)}")
        if inst.HasField("convolution_dimension_numbers") and op == "convolution":
            rank = len(comp_shape(self, comp, inst.operand_ids[0], where).dimensions)
            a.append(f"dim_labels={dim_labels(inst.convolution_dimension_numbers, rank)}")
        if op == "convolution":
            if inst.feature_group_count > 1:
                a.append(f"feature_group_count={inst.feature_group_count}")
            if inst.batch_group_count > 1:
                a.append(f"batch_group_count={inst.batch_group_count}")
        if inst.HasField("dot_dimension_numbers") and op == "dot":
            d = inst.dot_dimension_numbers
            for key in ("lhs_batch_dimensions", "lhs_contracting_dimensions",
                        "rhs_batch_dimensions", "rhs_contracting_dimensions"):
                v = list(getattr(d, key))
                if v or "contracting" in key:
                    a.append(f"{key.replace('dimensions', 'dims')}={ints(v)}")
        if op == "compare":
            a.append(f"direction={inst.comparison_direction}")
            t = type_name(comp_shape(self, comp, inst.operand_ids[0], where))
            if inst.comparison_type and inst.comparison_type != default_comparison(t):
                a.append(f"type={inst.comparison_type}")
        if inst.HasField("gather_dimension_numbers") and op == "gather":
            g = inst.gather_dimension_numbers
            a.append(f"offset_dims={ints(g.offset_dims)}")
            a.append(f"collapsed_slice_dims={ints(g.collapsed_slice_dims)}")
            a.append(f"start_index_map={ints(g.start_index_map)}")
            if g.operand_batching_dims:
                a.append(f"operand_batching_dims={ints(g.operand_batching_dims)}")
            if g.start_indices_batching_dims:
                a.append(f"start_indices_batching_dims={ints(g.start_indices_batching_dims)}")
            a.append(f"index_vector_dim={g.index_vector_dim}")
            a.append(f"slice_sizes={ints(inst.gather_slice_sizes)}")
        if inst.HasField("scatter_dimension_numbers") and op == "scatter":
            s = inst.scatter_dimension_numbers
            a.append(f"update_window_dims={ints(s.update_window_dims)}")
            a.append(f"inserted_window_dims={ints(s.inserted_window_dims)}")
            a.append(f"scatter_dims_to_operand_dims={ints(s.scatter_dims_to_operand_dims)}")
            if s.input_batching_dims:
                a.append(f"input_batching_dims={ints(s.input_batching_dims)}")
            if s.scatter_indices_batching_dims:
                a.append(f"scatter_indices_batching_dims="
                         f"{ints(s.scatter_indices_batching_dims)}")
            a.append(f"index_vector_dim={s.index_vector_dim}")
        if op in ("gather", "scatter") and inst.indices_are_sorted:
            a.append("indices_are_sorted=true")
        if op == "scatter" and inst.unique_indices:
            a.append("unique_indices=true")
        # called computations
        if op == "fusion":
            a.append(f"kind={inst.fusion_kind}")
            a.append(f"calls={called[0]}")
        elif op == "while":
            a.append(f"condition={called[1]}")      # HloWhileInstruction: body, condition
            a.append(f"body={called[0]}")
        elif op == "conditional":
            pred = comp_shape(self, comp, inst.operand_ids[0], where)
            if type_name(pred) == "pred" and len(called) == 2:
                a.append(f"true_computation={called[0]}")
                a.append(f"false_computation={called[1]}")
            else:
                a.append("branch_computations={" + ", ".join(called) + "}")
        elif op == "select-and-scatter":
            a.append(f"select={called[0]}")
            a.append(f"scatter={called[1]}")
        elif op in _TO_APPLY and called:
            a.append(f"to_apply={called[0]}")
        elif op.endswith("-start") and op.startswith("async") and called:
            a.append(f"calls={called[0]}")
        elif op == "custom-call" and called:
            a.append(f"to_apply={called[0]}" if len(called) == 1 else
                     "called_computations={" + ", ".join(called) + "}")
        if op == "sort" and inst.is_stable:
            a.append("is_stable=true")
        if op == "reduce-precision":
            a.append(f"exponent_bits={inst.exponent_bits}")
            a.append(f"mantissa_bits={inst.mantissa_bits}")
        if op in ("batch-norm-training", "batch-norm-inference", "batch-norm-grad"):
            a.append(f"epsilon={float(np.float32(inst.epsilon)):g}")     # StrCat: 6 digits
            a.append(f"feature_index={inst.feature_index}")
        if op == "fft":
            a.append(f"fft_type={enum_name(inst, 'fft_type')}")
            a.append(f"fft_length={ints(inst.fft_length)}")
        if op == "rng":
            a.append(f"distribution={enum_name(inst, 'distribution').lower()}")
        if op == "rng-bit-generator":
            a.append(f"algorithm={enum_name(inst, 'rng_algorithm').lower()}")
        if op == "triangular-solve":
            o = inst.triangular_solve_options
            a += [f"left_side={str(o.left_side).lower()}", f"lower={str(o.lower).lower()}",
                  f"unit_diagonal={str(o.unit_diagonal).lower()}",
                  f"transpose_a={enum_name(o, 'transpose_a')}"]
        if op == "cholesky":
            a.append(f"lower={str(inst.cholesky_options.lower).lower()}")
        if op == "topk":
            a.append(f"k={inst.k}")
            a.append(f"largest={str(inst.largest).lower()}")
        if inst.channel_id > 0:
            a.append(f"channel_id={inst.channel_id}")
        groups = device_list_text(inst.collective_device_list) \
            if inst.HasField("collective_device_list") else None
        if groups is None and inst.replica_groups:
            groups = groups_text(inst.replica_groups)
        if groups is not None:
            a.append(f"replica_groups={groups}")
        elif op.startswith(("all-", "reduce-scatter", "collective-broadcast")):
            a.append("replica_groups={}")
        if inst.use_global_device_ids:
            a.append("use_global_device_ids=true")
        if inst.constrain_layout:
            a.append("constrain_layout=true")
        if inst.source_target_pairs:
            a.append("source_target_pairs={" + ",".join(
                f"{{{p.source},{p.target}}}" for p in inst.source_target_pairs) + "}")
        if op in ("send", "recv", "send-done", "recv-done") and inst.is_host_transfer:
            a.append("is_host_transfer=true")
        if op == "custom-call":
            a.append(f"custom_call_target={quote(inst.custom_call_target)}")
            if inst.custom_call_has_side_effect:
                a.append("custom_call_has_side_effect=true")
            if inst.operand_shapes_with_layout:
                a.append("operand_layout_constraints={" + ", ".join(
                    shape_text(s) for s in inst.operand_shapes_with_layout) + "}")
            if inst.custom_call_schedule:
                a.append(f"schedule={enum_name(inst, 'custom_call_schedule')}")
            if inst.custom_call_api_version not in (0, 1):
                a.append(f"api_version={enum_name(inst, 'custom_call_api_version')}")
        if inst.output_operand_aliasing:
            a.append("output_to_operand_aliasing={" + ", ".join(
                f"{ints(x.output_shape_index)}: ({x.operand_index}, "
                f"{ints(x.operand_shape_index)})" for x in inst.output_operand_aliasing) + "}")
        if inst.HasField("precision_config"):
            p = inst.precision_config
            if any(p.operand_precision):
                enum = p.DESCRIPTOR.fields_by_name["operand_precision"].enum_type
                a.append("operand_precision={" + ",".join(
                    enum.values_by_number[x].name.lower() for x in p.operand_precision) + "}")
            if p.algorithm:
                a.append(f"algorithm={enum_name(p, 'algorithm').lower()}")
        if inst.HasField("sharding"):
            a.append(f"sharding={sharding_text(inst.sharding)}")
        if inst.HasField("parameter_replication") and \
                inst.parameter_replication.replicated_at_leaf_buffers:
            a.append("parameter_replication={" + ",".join(
                str(b).lower() for b in inst.parameter_replication.replicated_at_leaf_buffers)
                + "}")
        if inst.infeed_config:
            a.append(f"infeed_config={quote(inst.infeed_config.decode('utf-8', 'replace'))}")
        if inst.outfeed_config:
            a.append(f"outfeed_config={quote(inst.outfeed_config.decode('utf-8', 'replace'))}")
        if inst.control_predecessor_ids:
            a.append("control-predecessors={" + ", ".join(
                self.operand(comp, c, where) for c in inst.control_predecessor_ids) + "}")
        if inst.is_composite:
            a.append("is_composite=true")
        if inst.HasField("metadata"):
            m = metadata_text(inst.metadata)
            if m:
                a.append(f"metadata={m}")
        fa = frontend_text(inst.frontend_attributes)
        if fa:
            a.append(f"frontend_attributes={fa}")
        if inst.backend_config:
            cfg = inst.backend_config.decode("utf-8", "replace")
            a.append(f"backend_config={cfg}" if cfg.startswith("{") else
                     f"backend_config={quote(cfg)}")
        return a

    def instruction(self, comp, inst, root: bool) -> str:
        where = f"computation {comp.name}, instruction {inst.name or inst.id}"
        if not inst.name or not inst.opcode:
            raise ProtoError(f"{where}: has no name or opcode")
        if inst.opcode == "parameter":
            args = str(inst.parameter_number)
        elif inst.opcode == "constant":
            args = constant_text(inst.literal)
        else:
            args = ", ".join(self.operand(comp, o, where) for o in inst.operand_ids)
        text = f"%{inst.name} = {shape_text(inst.shape)} {inst.opcode}({args})"
        attrs = self.attrs(comp, inst, where)
        if attrs:
            text += ", " + ", ".join(attrs)
        return ("ROOT " if root else "") + text

    def computation(self, comp, entry: bool, order) -> str:
        by_id = {i.id: i for i in comp.instructions}
        insts = [by_id[i] for i in order if i in by_id] if order else list(comp.instructions)
        if len(insts) != len(comp.instructions):
            insts = list(comp.instructions)
        params = sorted((i for i in insts if i.opcode == "parameter"),
                        key=lambda i: i.parameter_number)
        root = by_id.get(comp.root_id)
        if root is None:
            raise ProtoError(f"computation {comp.name}: root id {comp.root_id} is none of "
                             f"its instructions")
        sig = ", ".join(f"{p.name}: {shape_text(p.shape, layout=False)}" for p in params)
        head = f"{'ENTRY ' if entry else ''}%{comp.name} ({sig}) -> " \
               f"{shape_text(root.shape, layout=False)} {{"
        lines = [head] + ["  " + self.instruction(comp, i, i is root) for i in insts] + ["}"]
        return "\n".join(lines)


def comp_shape(writer: _Writer, comp, oid: int, where: str):
    for i in comp.instructions:
        if i.id == oid:
            return i.shape
    raise ProtoError(f"{where}: operand id {oid} is no instruction of computation {comp.name}")


def _header(module, entry) -> str:
    parts = [f"HloModule {module.name}"]
    if module.HasField("schedule") and module.schedule.sequences:
        parts.append("is_scheduled=true")
    ps = module.host_program_shape
    if module.HasField("host_program_shape"):
        parts.append("entry_computation_layout={(" + ", ".join(
            shape_text(p) for p in ps.parameters) + ")->" + shape_text(ps.result) + "}")
    alias = list(module.input_output_alias.entries)
    if alias:
        kinds = {0: "may-alias", 1: "may-alias", 2: "must-alias"}
        parts.append("input_output_alias={ " + ", ".join(
            f"{ints(e.output_shape_index)}: ({e.parameter_number}, "
            f"{ints(e.parameter_shape_index)}, {kinds.get(e.kind, 'may-alias')})"
            for e in alias) + " }")
    donors = list(module.buffer_donor.entries)
    if donors:
        parts.append("buffer_donor={ " + ", ".join(
            f"({e.parameter_number}, {ints(e.parameter_shape_index)})" for e in donors) + " }")
    fa = frontend_text(module.frontend_attributes)
    if fa:
        parts.append(f"frontend_attributes={fa}")
    return ", ".join(parts)


def _stack_tables(index) -> str:
    from google.protobuf import unknown_fields
    if not index.file_names and not index.stack_frames:
        return ""
    out = ["FileNames"] + [f"{n} {quote(s)}" for n, s in enumerate(index.file_names, 1)]
    out += ["", "FunctionNames"] + [f"{n} {quote(s)}"
                                    for n, s in enumerate(index.function_names, 1)]
    out += ["", "FileLocations"]
    for n, loc in enumerate(index.file_locations, 1):
        # Newer XLA adds end_line (5) and end_column (6), not in the schema hloc carries.
        extra = {u.field_number: u.data for u in unknown_fields.UnknownFieldSet(loc)
                 if u.wire_type == 0}
        fields = [f"file_name_id={loc.file_name_id}",
                  f"function_name_id={loc.function_name_id}", f"line={loc.line}"]
        if 5 in extra:
            fields.append(f"end_line={extra[5]}")
        fields.append(f"column={loc.column}")
        if 6 in extra:
            fields.append(f"end_column={extra[6]}")
        out.append(f"{n} {{" + " ".join(fields) + "}")
    out += ["", "StackFrames"]
    for n, f in enumerate(index.stack_frames, 1):
        # XLA's printer writes the parent's 0-based position + 1 (as it prints it).
        fields = [f"file_location_id={f.file_location_id}",
                  f"parent_frame_id={f.parent_frame_id + 1}"]
        out.append(f"{n} {{" + " ".join(fields) + "}")
    return "\n".join(out) + "\n\n"


def module_text(module) -> str:
    """HLO text of an HloModuleProto."""
    if not module.computations:
        raise ProtoError("the HloModuleProto has no computations")
    entry = next((c for c in module.computations if c.id == module.entry_computation_id),
                 None) or next((c for c in module.computations
                                if c.name == module.entry_computation_name), None)
    if entry is None:
        raise ProtoError(f"the entry computation (id {module.entry_computation_id}, "
                         f"{module.entry_computation_name!r}) is not in the module")
    w = _Writer(module)
    seqs = {k: list(v.instruction_ids) for k, v in module.schedule.sequences.items()}
    body = [w.computation(c, c is entry, seqs.get(c.id)) for c in module.computations]
    tables = _stack_tables(module.stack_frame_index) \
        if module.HasField("stack_frame_index") else ""
    return _header(module, entry) + "\n\n" + tables + "\n" + "\n\n".join(body) + "\n"
