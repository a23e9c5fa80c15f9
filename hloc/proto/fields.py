"""HLO text of the small messages an HloInstructionProto holds (windows, dimension
numbers, padding, replica groups, shardings, metadata, frontend attributes), worded as
XLA's HloInstruction::ToString words them.
"""
from __future__ import annotations

import json


__all__ = ["ints", "quote", "window_text", "dim_labels", "padding_text", "groups_text",
           "device_list_text", "sharding_text", "metadata_text", "frontend_text",
           "enum_name", "default_comparison"]


def ints(xs) -> str:
    return "{" + ",".join(str(x) for x in xs) + "}"


def quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def window_text(w) -> str:
    dims = list(w.dimensions)
    parts = ["size=" + "x".join(str(d.size) for d in dims)]
    if any(d.stride != 1 for d in dims):
        parts.append("stride=" + "x".join(str(d.stride) for d in dims))
    if any(d.padding_low or d.padding_high for d in dims):
        parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
    if any(d.base_dilation != 1 for d in dims):
        parts.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in dims))
    if any(d.window_dilation != 1 for d in dims):
        parts.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in dims))
    if any(d.window_reversal for d in dims):
        parts.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in dims))
    return "{" + " ".join(parts) + "}"


def dim_labels(c, rank: int) -> str:
    def labels(batch, feature, spatial, bname, fname):
        out = ["?"] * rank
        out[batch], out[feature] = bname, fname
        for i, d in enumerate(spatial):
            out[d] = str(i)
        return "".join(out)
    lhs = labels(c.input_batch_dimension, c.input_feature_dimension,
                 c.input_spatial_dimensions, "b", "f")
    rhs = labels(c.kernel_output_feature_dimension, c.kernel_input_feature_dimension,
                 c.kernel_spatial_dimensions, "o", "i")
    out = labels(c.output_batch_dimension, c.output_feature_dimension,
                 c.output_spatial_dimensions, "b", "f")
    return f"{lhs}_{rhs}->{out}"


def padding_text(cfg) -> str:
    dims = list(cfg.dimensions)
    interior = any(d.interior_padding for d in dims)
    return "x".join(f"{d.edge_padding_low}_{d.edge_padding_high}" +
                    (f"_{d.interior_padding}" if interior else "") for d in dims)


def groups_text(groups) -> str:
    return "{" + ",".join(ints(g.replica_ids) for g in groups) + "}"


def device_list_text(dl) -> str | None:
    if dl.HasField("iota_replica_group_list"):
        g = dl.iota_replica_group_list
        text = f"[{g.num_replica_groups},{g.num_devices_per_group}]<=[" + \
            ",".join(str(d) for d in g.iota_reshape_dims) + "]"
        perm = list(g.iota_transpose_perm)
        if perm and perm != list(range(len(perm))):
            text += "T(" + ",".join(str(p) for p in perm) + ")"
        return text
    if dl.replica_groups:
        return groups_text(dl.replica_groups)
    return None


def sharding_text(s) -> str:
    t = s.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number[s.type].name
    if t == "TUPLE":
        return "{" + ", ".join(sharding_text(e) for e in s.tuple_shardings) + "}"
    if t == "REPLICATED":
        return "{replicated}"
    if t == "MANUAL":
        return "{manual}"
    if t == "UNKNOWN":
        return "{unknown}"
    if t == "MAXIMAL":
        return "{maximal device=" + str(s.tile_assignment_devices[0]) + "}"
    dims = ",".join(str(d) for d in s.tile_assignment_dimensions)
    if s.iota_reshape_dims:
        devices = "<=[" + ",".join(str(d) for d in s.iota_reshape_dims) + "]"
        perm = list(s.iota_transpose_perm)
        if perm and perm != list(range(len(perm))):
            devices += "T(" + ",".join(str(p) for p in perm) + ")"
    else:
        devices = ",".join(str(d) for d in s.tile_assignment_devices)
    text = f"devices=[{dims}]{devices}"
    if s.replicate_on_last_tile_dim:
        text += " last_tile_dim_replicate"
    elif s.last_tile_dims:
        enum = s.DESCRIPTOR.fields_by_name["type"].enum_type.values_by_number
        text += " last_tile_dims={" + ",".join(enum[d].name.lower()
                                                for d in s.last_tile_dims) + "}"
    return "{" + text + "}"


def metadata_text(m) -> str | None:
    parts = []
    if m.op_type:
        parts.append(f"op_type={quote(m.op_type)}")
    if m.op_name:
        parts.append(f"op_name={quote(m.op_name)}")
    if m.source_file:
        parts.append(f"source_file={quote(m.source_file)}")
    if m.source_line:
        parts.append(f"source_line={m.source_line}")
    if m.deduplicated_name:
        parts.append(f"deduplicated_name={quote(m.deduplicated_name)}")
    if m.scheduling_name:
        parts.append(f"scheduling_name={quote(m.scheduling_name)}")
    if m.stack_frame_id:
        parts.append(f"stack_frame_id={m.stack_frame_id}")
    return "{" + " ".join(parts) + "}" if parts else None


def frontend_text(fa) -> str | None:
    if not fa.map:
        return None
    return "{" + ",".join(f"{k}={quote(v)}" for k, v in sorted(fa.map.items())) + "}"


def enum_name(msg, field: str) -> str:
    f = msg.DESCRIPTOR.fields_by_name[field]
    return f.enum_type.values_by_number[getattr(msg, field)].name




def default_comparison(t: str) -> str:
    """Comparison::DefaultComparisonType: what XLA leaves out of the text."""
    if t == "pred" or t.startswith("u"):
        return "UNSIGNED"
    return "SIGNED" if t.startswith("s") else "FLOAT"
