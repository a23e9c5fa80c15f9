"""HloVerifier checks on small modules (hloc.verify), one or two cases per check."""
from __future__ import annotations

import pytest

import hloc
from hloc.diagnostics import VerifyError
from hloc.verifier import collect_errors, verify

STRICT = dict(allow_mixed_precision=False)
LAYOUT = dict(layout_sensitive=True, allow_mixed_precision=False)


def errors(text: str, **opts) -> list[str]:
    return [e.message for e in collect_errors(hloc.parse(text, "t.hlo"), **opts)]


def rejects(text: str, fragment: str, **opts) -> VerifyError:
    module = hloc.parse(text, "t.hlo")
    found = collect_errors(module, **opts)
    assert any(fragment in e.message for e in found), [e.message for e in found]
    err = next(e for e in found if fragment in e.message)
    assert err.loc is not None and err.loc.source.name == "t.hlo"
    return err


def accepts(text: str, **opts) -> None:
    assert errors(text, **opts) == []


ADD = """
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}
"""


def test_verify_raises_the_first_error_with_its_location():
    text = "HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[5] negate(p)\n}\n"
    with pytest.raises(VerifyError) as info:
        verify(hloc.parse(text, "t.hlo"))
    assert info.value.loc.line == 4
    assert "Expected instruction to have shape equal to f32[4]" in info.value.message
    assert "n = f32[5]" in info.value.message


# ---------------------------------------------------------------------------
# shapes and mixed precision

def test_mixed_precision_follows_the_option():
    text = """HloModule m
ENTRY e {
  p0 = pred[32] parameter(0)
  p1 = f32[32] parameter(1)
  p2 = bf16[32] parameter(2)
  ROOT s = f32[32] select(p0, p1, p2)
}"""
    accepts(text)
    rejects(text, "Seen floating point types of different precisions", **STRICT)


def test_dynamic_update_slice_must_keep_its_operand_type_even_with_mixed_precision():
    text = """HloModule m
ENTRY e {
  a = f32[4,8] parameter(0)
  u = bf16[4,2] parameter(1)
  i = s32[] parameter(2)
  ROOT d = bf16[4,8] dynamic-update-slice(a, u, i, i)
}"""
    rejects(text, "Expected instruction to have shape equal to f32[4,8], actual shape is "
                  "bf16[4,8]")


def test_rng_result_type():
    text = """HloModule m
ENTRY e {
  a = f32[] constant(0)
  b = f32[] constant(1)
  ROOT r = f16[10] rng(a, b), distribution=rng_normal
}"""
    accepts(text)
    rejects(text, "Expected compatible element types", **STRICT)


def test_map_parameter_types_without_mixed_precision():
    text = """HloModule m
c {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}
ENTRY e {
  p = f64[] parameter(0)
  ROOT m = f32[] map(p), dimensions={}, to_apply=c
}"""
    accepts(text)
    rejects(text, "Shape mismatch between to_apply computation parameter and operand 0",
            **STRICT)


def test_unbounded_dynamism_is_disabled_by_default():
    text = "HloModule m\nENTRY e {\n  ROOT p = f32[?,784] parameter(0)\n}"
    rejects(text, "Unbounded dynamism is disabled")
    accepts(text, allow_unbounded_dynamism=True)


def test_conditional_branch_index_must_be_scalar():
    text = """HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT c = f32[4] ceil(p)
}
ENTRY e {
  p = f32[4] parameter(0)
  i = s32[2] parameter(1)
  ROOT c = f32[4] conditional(i, p), branch_computations={b0}
}"""
    rejects(text, "The first operand of conditional must be a scalar")


# ---------------------------------------------------------------------------
# async pairs and shapes

def test_copy_start_needs_exactly_one_copy_done():
    text = """HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  cs = (f32[2,3], f32[2,3], u32[]) copy-start(p0)
  d1 = f32[2,3] copy-done(cs)
  d2 = f32[2,3] copy-done(cs)
  ROOT t = (f32[2,3], f32[2,3]) tuple(d1, d2)
}"""
    err = rejects(text, "copy-start instruction requires one consumer, found 2")
    assert err.loc.line == 4


def test_copy_done_operand_must_be_copy_start():
    text = """HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  p1 = u32[] parameter(1)
  t = (f32[2,3], f32[2,3], u32[]) tuple(p0, p0, p1)
  ROOT d = f32[2,3] copy-done(t)
}"""
    rejects(text, "The operand of a copy-done instruction needs to be copy-start, found tuple")


def test_async_start_without_done():
    text = """HloModule m
ENTRY e {
  p0 = f32[2,3] parameter(0)
  ROOT s = ((f32[2,3]), f32[2,3], u32[]) custom-call-start(p0), custom_call_target="foo"
}"""
    rejects(text, "async-start instruction requires one consumer, found 0")


ASYNC = """HloModule m
wrapped {
  p = f32[2,3] parameter(0)
  ROOT cc = f32[3,2] custom-call(p), custom_call_target="foo"
}
ENTRY e {
  p0 = f32[2,3] parameter(0)
  s = ((f32[2,3]), f32[3,2], u32[]) async-start(p0), calls=wrapped
  ROOT d = DONE_SHAPE async-done(s), calls=wrapped
}"""


def test_async_done_output_shape():
    accepts(ASYNC.replace("DONE_SHAPE", "f32[3,2]"))
    rejects(ASYNC.replace("DONE_SHAPE", "f32[2,3]"),
            "async-done expects the shape of output to match the async shape at index {1}")


def test_async_computation_must_be_trivial():
    text = ASYNC.replace("DONE_SHAPE", "f32[3,2]").replace(
        "ROOT cc = f32[3,2] custom-call(p)", "c = f32[2,3] copy(p)\n  ROOT cc = f32[3,2] "
        "custom-call(c)")
    rejects(text, "Asynchronous computation wrapped expected to contain only the root and "
                  "parameter instructions")


# ---------------------------------------------------------------------------
# execution threads

def test_call_thread_must_match():
    text = """HloModule m
callme {
  ROOT p = f32[4] parameter(0)
}, execution_thread="parallel_thread"
ENTRY e {
  p0 = f32[4] parameter(0)
  ROOT c = f32[4] call(p0), to_apply=callme
}"""
    rejects(text, "expects parent computation thread name same as called computation's")


def test_nested_thread_inside_fusion():
    text = """HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT z = f32[] add(x, y)
}, execution_thread="parallel_thread"
fused {
  p0 = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(p0), replica_groups={}, to_apply=add
}
ENTRY e {
  p0 = f32[8] parameter(0)
  ROOT f = f32[8] fusion(p0), kind=kLoop, calls=fused
}"""
    rejects(text, "Nested computations expects same computation's thread name")


def test_async_op_may_run_on_another_thread_inside_a_while():
    text = """HloModule m
body {
  ROOT p = s32[] parameter(0)
}
cond {
  p = s32[] parameter(0)
  s = ((s32[]), s32[], s32[]) custom-call-start(p),
    async_execution_thread="parallel_thread", custom_call_target="foo"
  d = s32[] custom-call-done(s), async_execution_thread="parallel_thread",
    custom_call_target="foo"
  c = s32[] constant(5)
  ROOT lt = pred[] compare(d, c), direction=LT
}
ENTRY e {
  c = s32[] constant(0)
  ROOT w = s32[] while(c), condition=cond, body=body
}"""
    accepts(text, **STRICT)


# ---------------------------------------------------------------------------
# composite calls

COMPOSITE = ADD + """
ENTRY e {
  c = f32[] constant(42)
  ROOT call = f32[] call(c, c), is_composite=true, to_apply=add FA
}"""


def test_composite_call_attributes():
    ok = ', frontend_attributes={composite.name="foo.bar",composite.version="1"}'
    accepts("HloModule m\n" + COMPOSITE.replace("FA", ok))
    rejects("HloModule m\n" + COMPOSITE.replace("FA", ""),
            "A composite call op must have frontend attributes")
    rejects("HloModule m\n" + COMPOSITE.replace("FA", ', frontend_attributes='
                                                      '{composite.version="1"}'),
            "composite.name whose value is non-empty")
    rejects("HloModule m\n" + COMPOSITE.replace("FA", ', frontend_attributes={composite.name='
                                                      '"f",composite.version="-1"}'),
            "composite.version whose value is a non-negative integer but got: -1")


# ---------------------------------------------------------------------------
# collectives

def test_collective_permute_duplicate_source():
    text = """HloModule m
ENTRY e {
  p0 = f32[128] parameter(0)
  ROOT cp = f32[128] collective-permute(p0), source_target_pairs={{0,1}, {0,2}, {1,0}}
}"""
    rejects(text, "Source 0 appears more than once in instruction's source-target pairs")


def test_collective_permute_targets_within_replica_count():
    text = """HloModule m
ENTRY e {
  p0 = f32[128] parameter(0)
  ROOT cp = f32[128] collective-permute(p0), source_target_pairs={{0,1}, {1,2}, {2,7}}
}"""
    accepts(text)
    rejects(text, "Target 7 in the instruction's source-target pair must be < 3",
            replica_count=3)


def test_reduce_scatter_groups_must_be_uniform():
    text = "HloModule m\n" + ADD + """
ENTRY e {
  input = f32[8] parameter(0)
  ROOT rs = f32[4] reduce-scatter(input), replica_groups={{0,1},{2,3,4}}, to_apply=add,
    dimensions={0}
}"""
    rejects(text, "Replica groups expected to be of uniform size")


def test_flattened_id_mode_needs_groups():
    text = "HloModule m\n" + ADD + """
ENTRY e {
  input = f32[8] parameter(0)
  ROOT ar = f32[8] all-reduce(input), replica_groups={}, channel_id=1,
    use_global_device_ids=true, to_apply=add
}"""
    rejects(text, "Replica groups must be specified in flattened-id mode")


def test_all_reduce_layout_constraints_must_not_mix():
    text = "HloModule m\n" + ADD + """
ENTRY e {
  input = f32[8] parameter(0)
  a = f32[8] all-reduce(input), replica_groups={}, to_apply=add
  b = f32[8] all-reduce(input), replica_groups={}, to_apply=add, constrain_layout=true
  ROOT t = (f32[8], f32[8]) tuple(a, b)
}"""
    rejects(text, "mix of layout constrained and unconstrained AllReduce")


def test_all_to_all_operands_share_a_layout():
    text = """HloModule m
ENTRY e {
  p0 = f32[128,4]{0,1} parameter(0)
  p1 = f32[128,4]{1,0} parameter(1)
  ROOT a = (f32[128,4]{0,1}, f32[128,4]{1,0}) all-to-all(p0, p1), replica_groups={{0,1}}
}"""
    rejects(text, "HLO all-to-all has operands with different shapes")


# ---------------------------------------------------------------------------
# sharding

def test_sharding_rank_and_devices():
    text = """HloModule m
ENTRY e {
  p = f32[4,2] parameter(0), sharding={SHARDING}
  ROOT r = f32[4,2] copy(p)
}"""
    accepts(text.replace("SHARDING", "devices=[2,1,2]0,1,2,3 last_tile_dim_replicate"))
    accepts(text.replace("SHARDING", "devices=[2,2]<=[4]"))
    rejects(text.replace("SHARDING", "devices=[1,2,2,1]0,1,2,3"),
            "Number of tile assignment dimensions (excluding subgroups) is different")
    two = text.replace("SHARDING", "devices=[2,2]0,1,2,3")
    accepts(two)
    rejects(two, "device 2 > num_devices (2) in tile assignment", num_partitions=2,
            use_spmd_partitioning=True)


def test_tuple_sharding_leaf_count():
    text = """HloModule m
ENTRY e {
  ROOT p = (f32[2], f32[2]) parameter(0), sharding={SHARDING}
}"""
    accepts(text.replace("SHARDING", "replicated"))
    accepts(text.replace("SHARDING", "{replicated}, {maximal device=0}"))
    rejects(text.replace("SHARDING", "{replicated}"), "has 2 leaf nodes while this sharding")


def test_while_sharding_must_be_consistent():
    text = """HloModule m
body {
  ROOT p = s32[] parameter(0), sharding={replicated}
}
cond {
  p = s32[] parameter(0), sharding={maximal device=0}
  ROOT t = pred[] constant(true)
}
ENTRY e {
  c = s32[] constant(0)
  ROOT w = s32[] while(c), condition=cond, body=body
}"""
    rejects(text, "Inconsistent while sharding among instructions")


# ---------------------------------------------------------------------------
# layouts (layout-sensitive)

def test_layout_changes_only_where_allowed():
    text = """HloModule m
ENTRY e {
  a = f32[3,4]{1,0} parameter(0)
  b = f32[3,4]{0,1} parameter(1)
  ROOT s = f32[3,4]{1,0} add(a, b)
}"""
    accepts(text, **STRICT)
    rejects(text, "Instruction shouldn't change layouts", **LAYOUT)
    accepts(text, layout_sensitive=True, check_layout_changes=False)


def test_bitcast_sizes_when_layout_sensitive():
    text = """HloModule m
ENTRY e {
  c = f32[2] constant({0, 0})
  ROOT b = f32[3] bitcast(c)
}"""
    accepts(text)
    rejects(text, "Bitcast cannot have different shape sizes of output (12) and operand (8)",
            **LAYOUT)


def test_host_offloading_copy_cannot_change_layout():
    text = """HloModule m
ENTRY e {
  p = f32[16,16]{1,0:S(5)} parameter(0)
  ROOT c = f32[16,16]{0,1} copy(p)
}"""
    accepts(text)
    rejects(text, "Expected instruction to have shape equal to", **LAYOUT)


def test_dynamic_slice_cannot_move_device_data_to_host():
    text = """HloModule m
ENTRY e {
  p = f32[4,8]{1,0} parameter(0)
  i = s32[] parameter(1)
  ROOT d = f32[2,8]{1,0:S(5)} dynamic-slice(p, i, i), dynamic_slice_sizes={2,8}
}"""
    rejects(text, "shouldn't change layout memory space from device to host", **LAYOUT)


def test_reshape_is_bitcast_option():
    ok = ("HloModule m\nENTRY e {\n  p = f32[8]{0} parameter(0)\n"
          "  ROOT r = f32[4,2]{1,0} reshape(p)\n}")
    bad = """HloModule m
ENTRY e {
  p = f32[8,3]{1,0} parameter(0)
  ROOT r = f32[4,2,3]{0,1,2} reshape(p)
}"""
    opts = dict(layout_sensitive=True, check_layout_changes=False,
                verify_reshape_is_bitcast=True)
    accepts(ok, **opts)
    accepts(bad)
    rejects(bad, "Reshape should be a physical bitcast", **opts)


def test_must_alias_memory_spaces():
    text = """HloModule m, input_output_alias={{}: (0, {}, must-alias)},
  entry_computation_layout={(f32[10]{0:S(5)})->f32[10]{0}}
ENTRY e {
  x = f32[10]{0} parameter(0)
  ROOT a = f32[10]{0} add(x, x)
}"""
    rejects(text, "must be the same as the shape and memory spaceof aliased parameter 0",
            **LAYOUT)


def test_no_host_memory_space_option():
    text = """HloModule m
ENTRY e {
  p = bf16[8,64]{1,0} parameter(0)
  ROOT b = bf16[8,64]{1,0:S(5)} bitcast(p)
}"""
    accepts(text)
    rejects(text, "shouldn't have the layout of host memory space",
            verify_no_host_memory_space=True)


# ---------------------------------------------------------------------------
# options over metadata, original values

def test_instruction_name_unchanged_option():
    text = """HloModule m
ENTRY e {
  p0 = f32[32] parameter(0), metadata={scheduling_name="p0"}
  ROOT a = f32[32] add(p0, p0), metadata={scheduling_name="add"}
}"""
    accepts(text)
    rejects(text, "Expected instruction name to remain the same. Was 'add' is 'a'.",
            verify_instruction_name_unchanged=True)
    accepts(text.replace("ROOT a ", "ROOT add.remat "), verify_instruction_name_unchanged=True)


def test_broadcast_dimension_order_option():
    text = """HloModule m
ENTRY e {
  p = f32[2,3] parameter(0)
  ROOT b = f32[3,2] broadcast(p), dimensions={1,0}
}"""
    accepts(text)
    rejects(text, "Broadcast dimensions should be ordered", verify_broadcast_dimensions_order=True)


def test_original_value_leaves_must_have_values():
    text = """HloModule m
ENTRY e {
  ROOT p = ((f32[], f32[3]), f32[2,3]) parameter(0), origin={ORIGIN}
}"""
    accepts(text.replace("ORIGIN", '(({"a"}, {"v2"}), {"v3"})'))
    rejects(text.replace("ORIGIN", '(({}, {"v2"}), {"v3"})'),
            "Leaf nodes in an original value is expected to contain values")


# ---------------------------------------------------------------------------
# buffers

PIN = """HloModule m
ENTRY e {
  p0 = f32[32] parameter(0)
  b = b(f32[32]) custom-call(p0), custom_call_target="Pin",
    output_to_operand_aliasing={{}: (0, {})}
  BODY
}"""


def test_pin_and_unpin():
    unpin = ('ROOT u = f32[32] custom-call(b), custom_call_target="Unpin", '
             'output_to_operand_aliasing={{}: (0, {})}')
    accepts(PIN.replace("BODY", unpin))
    rejects(PIN.replace("BODY", unpin.split(", output")[0]),
            "custom-call to Unpin must have one output-to-operand aliasing")


def test_buffers_only_where_allowed():
    text = PIN.replace("BODY", "ROOT a = b(f32[32]) add(b, b)")
    rejects(text, "Seen buffers while buffers aren't allowed in this context")
    entry = ('HloModule m\nENTRY e {\n  p = b(f32[32]) parameter(0)\n  ROOT u = f32[32] '
             'custom-call(p), custom_call_target="Unpin", output_to_operand_aliasing='
             '{{}: (0, {})}\n}')
    rejects(entry, "Seen buffers while buffers aren't allowed in this context")


def test_buffer_operands_must_alias_results():
    text = PIN.replace("BODY", 'ROOT r = (f32[32], token[]) custom-call(b), '
                               'custom_call_target="reader", custom_call_has_side_effect=true')
    rejects(text, "buffer is used in operands but not in results: operand 0 ShapeIndex {}")


def test_buffer_has_one_writer():
    text = PIN.replace("BODY", """w1 = b(f32[32]) custom-call(b), custom_call_target="w1",
    output_to_operand_aliasing={{}: (0, {})}
  w2 = b(f32[32]) custom-call(b), custom_call_target="w2",
    output_to_operand_aliasing={{}: (0, {})}
  ROOT t = (b(f32[32]), b(f32[32])) tuple(w1, w2)""")
    rejects(text, "an HLO buffer value has more than one writers")


# ---------------------------------------------------------------------------
# fusion and channels

FUSION = """HloModule m
fused {
  ROOT p0 = f32[10] parameter(0)
}
ENTRY e {
  p0 = f32[10] parameter(0)
  p1 = f32[10] parameter(1)
  ROOT f = RESULT fusion(OPERANDS), kind=kLoop, calls=fused
}"""


def test_fusion_parameters_and_root():
    accepts(FUSION.replace("RESULT", "f32[10]").replace("OPERANDS", "p0, p1"), **STRICT)
    rejects(FUSION.replace("RESULT", "f32[11]").replace("OPERANDS", "p0"),
            "Fused computation shape (f32[10]{0}) is not equal to the fusion shape")
    dead = FUSION.replace("ROOT p0 = f32[10] parameter(0)",
                          "p0 = f32[10] parameter(0)\n  n = f32[10] negate(p0)\n  "
                          "ROOT c = f32[10] copy(p0)")
    rejects(dead.replace("RESULT", "f32[10]").replace("OPERANDS", "p0"),
            "Non-root instruction n in f = f32[10]{0} fusion(p0) must have users")


def test_send_and_send_done_share_a_channel():
    text = """HloModule m
ENTRY e {
  x = f32[8] parameter(0)
  t = token[] after-all()
  s = (f32[8], u32[], token[]) send(x, t), channel_id=1
  ROOT d = token[] send-done(s), channel_id=CHANNEL
}"""
    accepts(text.replace("CHANNEL", "1"))
    rejects(text.replace("CHANNEL", "2"), "Expected to have the same channel id")


def test_reduce_of_a_tuple_is_an_error_not_a_crash():
    text = ADD + """
ENTRY e {
  p = (f32[4], f32[4]) parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions=%s, to_apply=add
}
"""
    rejects(text % "{0}", "Reducing out-of-bounds dimension 0 in shape (f32[4], f32[4])")
    rejects(text % "{}", "Expected array argument for operand of reduce")
