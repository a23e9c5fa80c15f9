"""The op registry: every XLA opcode is registered with its schema, traits and shape rule;
the rules agree with XLA's ShapeInference on the intricate ops; attribute orders agree
with text XLA's printer wrote (the corpus's round-trip files)."""
from __future__ import annotations

import re
from types import SimpleNamespace as NS

import pytest

import hloc.ops as O
from hloc.ir.attrs import ConvDimNumbers, ReplicaGroups, Window, WindowDim
from hloc.syntax.attr_kinds import KINDS
from hloc.ir.shape import parse_shape, parse_shape_prefix
from hloc.ops.base import (CALLS, COLLECTIVE, COMMUTATIVE, ELEMENTWISE, EXPENSIVE,
                           MIXED_PRECISION_OK, SIDE_EFFECT, TRANSCENDENTAL)
from hloc.ops.shape_rules import compatible, compatible_ignoring_fp

from corpus import XLA

CORPUS = XLA

# xla/hlo/ir/hlo_opcode.h (upstream tip): the snapshot's 123 opcodes, the 2026 additions
# jaxlib 0.10.2 knows, and atan / shuffle / collective-reduce from the tip.
OPCODES = """
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start
all-reduce all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start
async-update atan atan2 atanh batch-norm-grad batch-norm-inference batch-norm-training bitcast
bitcast-convert broadcast call cbrt ceil cholesky clamp count-leading-zeros
collective-broadcast collective-permute collective-permute-done collective-permute-start
collective-reduce compare complex concatenate conditional constant convert convolution copy
copy-done copy-start cosine cosh custom-call divide domain dot dynamic-reshape dynamic-slice
dynamic-update-slice erf exponential exponential-minus-one fft floor fusion gather
get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map
maximum minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id
popcnt power ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision
reduce-scatter reduce-window remainder replica-id reshape reverse rng rng-bit-generator
rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan scatter
select select-and-scatter send send-done set-dimension-size shift-left shift-right-arithmetic
shift-right-logical shuffle sign sine sinh slice sort sqrt stochastic-convert subtract tan
tanh topk transpose triangular-solve tuple while xor
""".split()

NEW_2026 = "acos acosh asin asinh atanh cosh sinh mulhi scan scaled-dot".split()


def S(text):
    return parse_shape(text)


def comp(params, root, name="comp"):
    """A stand-in Computation: parameters with shapes, a root with a shape."""
    return NS(name=name, parameters=[NS(name=f"p{i}", shape=S(p)) for i, p in enumerate(params)],
              root=NS(shape=S(root)))


def infer(opcode, operands, declared=None, **attrs):
    inst = NS(shape=S(declared)) if declared else None
    return O.lookup(opcode).infer([S(s) for s in operands], attrs, inst)


def fails(opcode, operands, match, declared=None, **attrs):
    with pytest.raises(O.ShapeInferenceError, match=match):
        infer(opcode, operands, declared, **attrs)


ADD = comp(["f32[]", "f32[]"], "f32[]", "add")
GE = comp(["f32[]", "f32[]"], "pred[]", "ge")


def window(*dims):
    return Window(tuple(WindowDim(*d) for d in dims))


# ---------------------------------------------------------------------------
# Registry contents

def test_every_opcode_is_registered_with_xla_spelling():
    assert len(OPCODES) == 136
    assert sorted(O.REGISTRY) == sorted(OPCODES)
    for name in NEW_2026:
        assert O.lookup(name) is not None
    assert O.lookup("cos") is None and O.lookup("exp") is None   # XLA spells cosine, exponential
    for name, op in O.REGISTRY.items():
        assert op.name == name


def test_attribute_kinds_exist_and_names_are_unique():
    for op in O.REGISTRY.values():
        names = [a.name for a in op.attrs]
        assert len(names) == len(set(names)), op.name
        for a in op.attrs:
            assert a.kind in KINDS, (op.name, a.name, a.kind)
    for a in O.GENERIC_ATTRS:
        assert a.kind in KINDS


def test_generic_attribute_order():
    assert [a.name for a in O.GENERIC_ATTRS] == [
        "sharding", "frontend_attributes", "control-predecessors", "statistics",
        "result_accuracy", "origin", "metadata", "backend_config"]
    assert O.attr_spec(O.lookup("exponential"), "result_accuracy") is not None
    assert O.attr_spec(O.lookup("add"), "result_accuracy") is None
    assert O.attr_spec(O.lookup("add"), "metadata") is not None


@pytest.mark.parametrize("opcode, order", [
    ("scatter", ["update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                 "input_batching_dims", "scatter_indices_batching_dims", "index_vector_dim",
                 "indices_are_sorted", "unique_indices", "to_apply"]),
    ("gather", ["offset_dims", "collapsed_slice_dims", "start_index_map",
                "operand_batching_dims", "start_indices_batching_dims", "index_vector_dim",
                "slice_sizes", "indices_are_sorted"]),
    ("dot", ["lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims",
             "rhs_contracting_dims", "operand_precision", "algorithm"]),
    ("fusion", ["kind", "output_to_operand_aliasing", "calls"]),
    ("sort", ["dimensions", "is_stable", "to_apply"]),
    ("all-reduce", ["channel_id", "replica_groups", "constrain_layout",
                    "use_global_device_ids", "mode", "to_apply"]),
    ("convolution", ["window", "dim_labels", "feature_group_count", "batch_group_count",
                     "convolution_kind", "sparsity_config", "operand_precision"]),
])
def test_printing_order_of_key_ops(opcode, order):
    assert [a.name for a in O.lookup(opcode).attrs] == order


def test_traits():
    transcendental = {n for n, op in O.REGISTRY.items() if TRANSCENDENTAL in op.traits}
    assert transcendental == set(
        "acos acosh asin asinh atan atanh cbrt cosine cosh erf exponential "
        "exponential-minus-one log log-plus-one logistic rsqrt sine sinh sqrt tan tanh".split())
    commutative = {n for n, op in O.REGISTRY.items() if COMMUTATIVE in op.traits}
    assert commutative == set("add multiply mulhi maximum minimum and or xor".split())
    for name in ("add", "compare", "select", "clamp", "convert", "negate", "copy"):
        assert ELEMENTWISE in O.lookup(name).traits
    for name in ("divide", "power", "exponential", "dot", "reduce", "sort", "while"):
        assert EXPENSIVE in O.lookup(name).traits, name
    for name in ("add", "broadcast", "slice", "tuple"):
        assert EXPENSIVE not in O.lookup(name).traits, name
    for name in ("reduce", "map", "while", "call", "fusion", "scatter", "all-reduce"):
        assert CALLS in O.lookup(name).traits, name
    for name in ("rng", "infeed", "outfeed", "send", "recv-done", "all-reduce-start"):
        assert SIDE_EFFECT in O.lookup(name).traits, name
    assert COLLECTIVE in O.lookup("all-gather").traits
    assert MIXED_PRECISION_OK in O.lookup("dot").traits
    assert MIXED_PRECISION_OK not in O.lookup("tuple").traits
    for name in ("slice", "reshape", "convert", "iota", "constant", "parameter", "fusion",
                 "custom-call", "all-reduce", "copy-start", "opt-barrier"):
        assert O.shape_required(O.lookup(name)), name
    for name in ("add", "dot", "gather", "while", "topk", "replica-id", "after-all"):
        assert not O.shape_required(O.lookup(name)), name


def test_async_sugar_and_side_effects():
    assert O.async_sugar("negate-start") == ("negate", "async-start")
    assert O.async_sugar("custom-call-done") == ("custom-call", "async-done")
    assert O.async_sugar("all-reduce-start") is None          # a real opcode
    inst = NS(opdef=O.lookup("custom-call"), attrs={"custom_call_has_side_effect": True})
    assert O.has_side_effect(inst)
    inst = NS(opdef=O.lookup("all-reduce"), attrs={})
    assert not O.has_side_effect(inst)
    assert O.has_side_effect(NS(opdef=O.lookup("all-reduce"), attrs={"channel_id": 1}))


def test_default_compare_type():
    from hloc.ir.dtypes import DTYPES
    assert O.default_compare_type(DTYPES["f32"]) == "FLOAT"
    assert O.default_compare_type(DTYPES["s8"]) == "SIGNED"
    assert O.default_compare_type(DTYPES["u32"]) == "UNSIGNED"
    assert O.default_compare_type(DTYPES["pred"]) == "UNSIGNED"


# ---------------------------------------------------------------------------
# Elementwise

def test_elementwise_rules():
    assert str(infer("add", ["f32[4,6]{0,1}", "bf16[4,6]"])) == "f32[4,6]{0,1}"
    assert str(infer("compare", ["s32[3]", "s32[3]"], direction="LT")) == "pred[3]{0}"
    assert str(infer("abs", ["c64[3]"])) == "f32[3]{0}"
    assert str(infer("complex", ["f64[2]", "f64[2]"])) == "c128[2]{0}"
    assert str(infer("is-finite", ["bf16[2]"])) == "pred[2]{0}"
    fails("add", ["f32[2]", "f32[3]"],
          r"Binary op with incompatible shapes: f32\[2\] and f32\[3\]\.")
    fails("add", ["f32[2]", "s32[2]"], "Binary op add with different element types")
    fails("add", ["f32[4]", "f32[]"], "Implicit broadcast is not allowed in HLO")
    fails("subtract", ["pred[2]", "pred[2]"], "arithmetic type for operation subtract; got PRED")
    fails("and", ["f32[2]", "f32[2]"], "pred or integral type")
    fails("sqrt", ["s32[2]"], "floating or complex for sqrt operation; got S32")
    fails("compare", ["u8[2]", "u8[2]"], "Expected comparison type UNSIGNED", direction="LT",
          type="SIGNED")
    assert str(infer("select", ["pred[4]", "f32[4]", "f32[4]"])) == "f32[4]{0}"
    fails("select", ["s32[4]", "f32[4]", "f32[4]"], "PRED element type")
    fails("clamp", ["f32[4]", "f32[5]", "f32[4]"], "Clamp with incompatible shapes")
    assert str(infer("convert", ["f32[2,3]{0,1}"], "s32[2,3]")) == "s32[2,3]{0,1}"
    fails("convert", ["f32[2]"], "cannot infer shape for opcode: convert")
    assert str(infer("bitcast-convert", ["f32[2]"], "u8[2,4]")) == "u8[2,4]{1,0}"
    assert str(infer("bitcast-convert", ["u8[2,4]"], "f32[2]")) == "f32[2]{0}"


# ---------------------------------------------------------------------------
# Data movement

def test_pad_negative_and_interior():
    assert str(infer("pad", ["f32[4,6]", "f32[]"], padding=((1, -1, 2), (0, 0, 0)))) == \
        "f32[10,6]{1,0}"
    assert str(infer("pad", ["f32[0,6]", "f32[]"], padding=((1, 1, 3), (0, 0, 1)))) == \
        "f32[2,11]{1,0}"
    fails("pad", ["f32[4,6]", "f32[]"], "negative size for dimension 0",
          padding=((-3, -3, 0), (0, 0, 0)))


def test_transpose_permutes_the_layout_and_broadcast_modes():
    assert str(infer("transpose", ["f32[2,3,4]{0,2,1}"], dimensions=(2, 0, 1))) == \
        "f32[4,2,3]{1,0,2}"
    # XLA's parser reads broadcast dimensions as prepended sizes when no shape is written.
    assert str(infer("broadcast", ["f32[3]"], dimensions=(1,))) == "f32[1,3]{1,0}"
    assert str(infer("broadcast", ["f32[3]"], "f32[2,3]", dimensions=(1,))) == "f32[2,3]{1,0}"
    fails("broadcast", ["f32[3]"], "does not match", "f32[2,3]", dimensions=(0,))


def test_slices():
    fails("slice", ["f32[8]"], "cannot infer shape for opcode: slice", slice=((0, 4, 1),))
    assert str(infer("slice", ["f32[8,6]"], "f32[2,6]", slice=((0, 4, 2), (0, 6, 1)))) == \
        "f32[2,6]{1,0}"
    assert str(infer("dynamic-slice", ["f32[8,6]", "s32[]", "s32[]"], "f32[2,6]",
                     dynamic_slice_sizes=(2, 6))) == "f32[2,6]{1,0}"
    fails("dynamic-slice", ["f32[8,6]", "s32[]"], "must match rank 2", "f32[2,6]",
          dynamic_slice_sizes=(2, 6))
    assert str(infer("concatenate", ["f32[4,6]{0,1}", "f32[4,2]"], dimensions=(1,))) == \
        "f32[4,8]{1,0}"


GATHER = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,),
              index_vector_dim=1, slice_sizes=(1, 4))


def test_gather():
    assert str(infer("gather", ["f32[8,4]", "s32[3,1]"], **GATHER)) == "f32[3,4]{1,0}"
    assert str(infer("gather", ["f32[8,4]", "s32[3]"], **GATHER)) == "f32[3,4]{1,0}"
    assert str(infer("gather", ["f32[8,4,5]", "s32[2,3,2]"], offset_dims=(0, 3),
                     collapsed_slice_dims=(1,), start_index_map=(0, 1), index_vector_dim=2,
                     slice_sizes=(2, 1, 5))) == "f32[2,2,3,5]{3,2,1,0}"
    batched = dict(offset_dims=(3,), collapsed_slice_dims=(1,), start_index_map=(1,),
                   operand_batching_dims=(0, 2), start_indices_batching_dims=(2, 0),
                   index_vector_dim=3, slice_sizes=(1, 1, 1, 4))
    assert str(infer("gather", ["f32[3,8,2,4]", "s32[2,5,3,1]"], **batched)) == \
        "f32[2,5,3,4]{3,2,1,0}"
    fails("gather", ["f32[8,4]", "s32[3,1]"], "can only collapse slice dims with bound 1",
          **dict(GATHER, slice_sizes=(2, 4)))
    fails("gather", ["f32[8,4]", "f32[3,1]"], "must be an integral tensor", **GATHER)
    fails("gather", ["f32[2,8,4]", "s32[2,3,1]"], "must be of the same size",
          **dict(GATHER, offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,),
                 operand_batching_dims=(0,), index_vector_dim=2, slice_sizes=(1, 1, 4)))


SCATTER = dict(update_window_dims=(1,), inserted_window_dims=(0,),
               scatter_dims_to_operand_dims=(0,), index_vector_dim=1, to_apply=ADD)


def test_scatter():
    assert str(infer("scatter", ["f32[8,4]{0,1}", "s32[3,1]", "f32[3,4]"], **SCATTER)) == \
        "f32[8,4]{0,1}"
    add2 = comp(["f32[]", "s32[]", "f32[]", "s32[]"], "(f32[], s32[])")
    assert str(infer("scatter", ["f32[8,4]", "s32[8,4]", "s32[3,1]", "f32[3,4]", "s32[3,4]"],
                     **dict(SCATTER, to_apply=add2))) == "(f32[8,4]{1,0}, s32[8,4]{1,0})"
    assert str(infer("scatter", ["f32[2,8,4]", "s32[2,3,1]", "f32[2,3,4]"],
                     update_window_dims=(2,), inserted_window_dims=(1,),
                     scatter_dims_to_operand_dims=(1,), input_batching_dims=(0,),
                     scatter_indices_batching_dims=(0,), index_vector_dim=2,
                     to_apply=ADD)) == "f32[2,8,4]{2,1,0}"
    fails("scatter", ["f32[8,4]", "s32[3,1]", "f32[3,5]"], "updates bound is 5", **SCATTER)
    fails("scatter", ["f32[8,4]", "s32[3,1]", "f32[2,4]"], "scatter_indices bound is 3",
          **SCATTER)
    fails("scatter", ["f32[8,4]", "s32[3,1]", "f32[3,4]"], "window of size 1",
          **dict(SCATTER, inserted_window_dims=()))


# ---------------------------------------------------------------------------
# Reductions

def test_reduce_and_reduce_window():
    add2 = comp(["f32[]", "s32[]", "f32[]", "s32[]"], "(f32[], s32[])")
    assert str(infer("reduce", ["f32[4,6]{0,1}", "s32[4,6]", "f32[]", "s32[]"],
                     dimensions=(0,), to_apply=add2)) == "(f32[6]{0}, s32[6]{0})"
    fails("reduce", ["f32[4,6]", "f32[]"], "Duplicate reduction dimension: 1",
          dimensions=(1, 1), to_apply=ADD)
    fails("reduce", ["f32[4,6]", "f32[]"], "must take 2 parameters, but takes 4",
          dimensions=(1,), to_apply=add2)
    w = window((2, 2, 0, 1), (3, 1, 1, 1))       # size, stride, pad_lo, pad_hi
    assert str(infer("reduce-window", ["f32[4,6]", "f32[]"], window=w, to_apply=ADD)) == \
        "f32[2,6]{1,0}"
    w = window((2, 1, 1, 1, 2, 1), (3, 2, 2, 2, 1, 2))   # + lhs_dilate, rhs_dilate
    assert str(infer("reduce-window", ["f32[4,6]", "f32[]"], window=w, to_apply=ADD)) == \
        "f32[8,3]{1,0}"
    w = window((2, 2), (1, 1))
    assert str(infer("select-and-scatter", ["f32[4,6]{0,1}", "f32[2,6]", "f32[]"], window=w,
                     select=GE, scatter=ADD)) == "f32[4,6]{0,1}"


def test_sort_topk_map_scan():
    ge2 = comp(["f32[]", "f32[]", "s32[]", "s32[]"], "pred[]")
    assert str(infer("sort", ["f32[4,6]", "s32[4,6]"], dimensions=(0,), to_apply=ge2)) == \
        "(f32[4,6]{1,0}, s32[4,6]{1,0})"
    assert str(infer("sort", ["f32[4,6]{0,1}"], dimensions=(1,), to_apply=GE)) == "f32[4,6]{0,1}"
    fails("sort", ["f32[4,6]", "s32[4,5]"], "Sort keys and values dimensions must match",
          dimensions=(0,), to_apply=ge2)
    assert str(infer("topk", ["f32[4,6]{0,1}"], k=3)) == "(f32[4,3]{1,0}, s32[4,3]{1,0})"
    fails("topk", ["f32[4,2]"], "k=3 is larger", k=3)
    assert str(infer("map", ["f32[4,6]", "f32[4,6]"], to_apply=ADD)) == "f32[4,6]{1,0}"
    body = comp(["f32[6]", "f32[2]"], "(f32[5,9], f32[2])")
    assert str(infer("scan", ["f32[4,6]", "f32[2]"], dimensions=(1,), num_carries=1,
                     to_apply=body)) == "(f32[5,6,9]{2,1,0}, f32[2]{0})"


# ---------------------------------------------------------------------------
# Linear algebra

DOT = dict(lhs_batch_dims=(1,), rhs_batch_dims=(2,), lhs_contracting_dims=(2,),
           rhs_contracting_dims=(0,))


def test_dot():
    # batch dims first, then lhs free dims, then rhs free dims
    assert str(infer("dot", ["f32[3,2,4]", "f32[4,5,2]"], **DOT)) == "f32[2,3,5]{2,1,0}"
    plain = dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    assert str(infer("dot", ["bf16[2,3]", "f16[3,5]"], **plain)) == "bf16[2,5]{1,0}"
    assert str(infer("dot", ["s8[2,3]", "s32[3,5]"], **plain)) == "s32[2,5]{1,0}"
    # the written result type is XLA's preferred_element_type
    assert str(infer("dot", ["bf16[2,3]", "bf16[3,5]"], "f32[2,5]", **plain)) == "f32[2,5]{1,0}"
    fails("dot", ["f32[2,3]", "f32[4,5]"], "Contracting dimension sizes are not compatible",
          **plain)
    fails("dot", ["f32[2,3,4]", "f32[3,4,5]"], "Batch dimension sizes are not compatible",
          lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=(2,),
          rhs_contracting_dims=(1,))
    assert str(infer("ragged-dot", ["f32[5,6]", "f32[3,6,7]", "s32[3]"],
                     lhs_contracting_dims=(1,), rhs_contracting_dims=(1,), lhs_ragged_dims=(0,),
                     rhs_group_dims=(0,))) == "f32[5,7]{1,0}"
    assert str(infer("ragged-dot", ["f32[5,6]", "f32[6,7]", "s32[3]"],
                     lhs_contracting_dims=(1,), rhs_contracting_dims=(0,),
                     lhs_ragged_dims=(1,))) == "f32[3,5,7]{2,1,0}"
    assert str(infer("scaled-dot", ["f32[3,4]", "f32[3,1]", "f32[4,5]", "f32[1,5]"],
                     **plain)) == "f32[3,5]{1,0}"


def labels(ib, if_, isp, ki, ko, ksp, ob, of, osp):
    return ConvDimNumbers(ib, if_, tuple(isp), ki, ko, tuple(ksp), ob, of, tuple(osp))


B01F = labels(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))     # b01f_01io->b01f


def test_convolution():
    b0f = labels(0, 2, (1,), 1, 2, (0,), 0, 2, (1,))
    assert str(infer("convolution", ["f32[1,10,3]", "f32[3,3,8]"], window=window((3, 1, 1, 1)),
                     dim_labels=b0f)) == "f32[1,10,8]{2,1,0}"
    w = window((3, 2, 1, 1, 1, 2), (3, 1, 0, 2, 2, 1))
    assert str(infer("convolution", ["f32[2,10,12,4]", "f32[3,3,2,8]"], window=w,
                     dim_labels=B01F, feature_group_count=2)) == "f32[2,4,23,8]{3,2,1,0}"
    assert str(infer("convolution", ["f32[4,10,12,4]", "f32[3,3,4,8]"],
                     window=window((3,), (3,)), dim_labels=B01F, batch_group_count=2)) == \
        "f32[2,8,10,8]{3,2,1,0}"
    fails("convolution", ["f32[1,10,4]", "f32[3,2,9]"], "divisible by feature_group_count",
          window=window((3,)), dim_labels=b0f, feature_group_count=2)
    fails("convolution", ["f32[1,10,3]", "f32[3,3,8]"], "Window dimensions do not match",
          window=window((2,)), dim_labels=b0f)


def test_fft_and_solvers():
    assert str(infer("fft", ["f32[4,8]{0,1}"], fft_type="RFFT", fft_length=(4, 8))) == \
        "c64[4,5]{0,1}"
    assert str(infer("fft", ["c128[4,5]"], fft_type="IRFFT", fft_length=(4, 8))) == \
        "f64[4,8]{1,0}"
    fails("fft", ["c64[4,5]"], r"fft_length/2\+1", fft_type="IRFFT", fft_length=(10,))
    fails("fft", ["f32[4,8]"], "FFT requires complex input type, found F32", fft_type="FFT",
          fft_length=(8,))
    assert str(infer("triangular-solve", ["f32[4,4]", "f32[4,6]"], left_side=True,
                     transpose_a="NO_TRANSPOSE")) == "f32[4,6]{1,0}"
    fails("triangular-solve", ["f32[4,4]", "f32[4,4]"], "Invalid transpose option")
    fails("cholesky", ["f32[4,6]"], "must have compatible size")
    assert str(infer("batch-norm-training", ["f32[2,4,6]", "f32[4]", "f32[4]"], epsilon=0.1,
                     feature_index=1)) == "(f32[2,4,6]{2,1,0}, f32[4]{0}, f32[4]{0})"
    fails("batch-norm-inference", ["f32[2,4,6]", "f32[4]", "f32[4]", "f32[4]", "f32[3]"],
          "size of variance", epsilon=0.1, feature_index=1)


# ---------------------------------------------------------------------------
# Control flow, async and collectives

def test_control_flow():
    body = comp(["f32[4]"], "f32[4]")
    cond = comp(["f32[4]"], "pred[]")
    assert str(infer("while", ["f32[4]{0}"], condition=cond, body=body)) == "f32[4]{0}"
    fails("while", ["f32[5]"], "must all have the same shape", condition=cond, body=body)
    assert str(infer("conditional", ["s32[]", "f32[4]", "f32[4]"],
                     branch_computations=(body, body))) == "f32[4]{0}"
    fails("conditional", ["f32[]", "f32[4]", "f32[4]"], "branch_index must be bool or int32",
          true_computation=body, false_computation=body)
    assert str(infer("call", ["f32[4]"], to_apply=body)) == "f32[4]{0}"
    assert str(infer("get-tuple-element", ["(f32[2], s32[])"], index=1)) == "s32[]"
    assert str(infer("tuple", ["f32[2]", "token[]"])) == "(f32[2]{0}, token[])"
    assert str(infer("after-all", ["token[]", "token[]"])) == "token[]"
    assert str(infer("replica-id", [])) == "u32[]"
    assert str(infer("copy-start", ["f32[2]"], "(f32[2], f32[2], u32[])")) == \
        "(f32[2]{0}, f32[2]{0}, u32[])"
    assert str(infer("async-done", ["((f32[2]), f32[3], s32[])"], "f32[3]")) == "f32[3]{0}"


def test_collectives():
    groups = ReplicaGroups(((0, 1), (2, 3)))
    assert str(infer("all-gather", ["f32[4,6]"], "f32[8,6]", dimensions=(0,),
                     replica_groups=groups)) == "f32[8,6]{1,0}"
    fails("all-gather", ["f32[4,6]"], "shard_count = 3", "f32[12,6]", dimensions=(0,),
          replica_groups=groups)
    fails("reduce-scatter", ["f32[8]"], "shard_count = 1", "f32[8]", dimensions=(0,),
          replica_groups=groups, to_apply=ADD)
    assert str(infer("reduce-scatter", ["f32[8]"], "f32[4]", dimensions=(0,),
                     replica_groups=groups, to_apply=ADD)) == "f32[4]{0}"
    fails("all-to-all", ["f32[128,4]"] * 3, "split_count", "(f32[128,4], f32[128,4], f32[128,4])",
          replica_groups=ReplicaGroups(((0, 1),)))
    assert str(infer("collective-permute", ["f32[4]"], "f32[4]",
                     source_target_pairs=((0, 1),))) == "f32[4]{0}"


# ---------------------------------------------------------------------------
# Against XLA's own printer output (the corpus's round-trip files)

_INST = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_OPCODE = re.compile(r"([a-z][a-z0-9\-]*)\(")
_HEAD = re.compile(r"^\s*(?:ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$")


def _split_top(s: str, i: int, stop: str):
    parts, depth, start, quoted = [], 0, i, False
    while i < len(s):
        c = s[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "({[":
            depth += 1
        elif c in ")}]":
            if depth == 0 and c == stop:
                parts.append(s[start:i])
                return parts, i
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:i])
    return parts, i


def _round_trip_modules():
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip("corpus not available")
    for row in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) > 4 and "round-trip: printer output must equal" in cols[4]:
            yield cols[0], (CORPUS / cols[0]).read_text()


def _instructions(text):
    """(computation name, is_root, name, shape, opcode, operand names, [(attr, value)]);
    a parameter's "operand" is its number."""
    comp_name = None
    for line in text.splitlines():
        head = _HEAD.match(line)
        if head and " = " not in line:
            comp_name = head.group(1)
            continue
        m = _INST.match(line)
        if not m:
            continue
        shape, pos = parse_shape_prefix(line, m.end())
        op = _OPCODE.search(line, pos)
        operands, end = _split_top(line, op.end(), ")")
        names = [re.sub(r"/\*.*?\*/", "", o).split()[-1].lstrip("%")
                 for o in operands if o.strip()]
        attrs = []
        rest = line[end + 1:]
        if rest.lstrip().startswith(","):
            for part in _split_top(rest, rest.index(",") + 1, "\0")[0]:
                key, _, value = part.strip().partition("=")
                attrs.append((key, value))
        yield comp_name, bool(m.group(1)), m.group(2), shape, op.group(1), names, attrs


def test_attribute_order_matches_xla_printer_output():
    checked = 0
    for fname, text in _round_trip_modules():
        for _, _, _, _, opcode, _, attrs in _instructions(text):
            op = O.lookup(opcode)
            if op is None:                      # async sugar such as custom-call-start
                continue
            order = [a.name for a in op.attrs] + [a.name for a in O.GENERIC_ATTRS]
            names = [k for k, _ in attrs]
            for n in names:
                assert n in order, (fname, opcode, n)
            positions = [order.index(n) for n in names]
            assert positions == sorted(positions), (fname, opcode, names)
            checked += len(names)
    assert checked > 150


def _computations(insts):
    """Stand-in computations: parameters in number order and the root (ROOT or last)."""
    comps: dict[str, NS] = {}
    for cname, is_root, name, shape, opcode, operands, attrs in insts:
        c = comps.setdefault(cname, NS(name=cname, params={}, root=None, last=None, shapes={}))
        c.shapes[name] = shape
        node = NS(name=name, shape=shape)
        if opcode == "parameter":
            c.params[int(operands[0])] = node
        if is_root:
            c.root = node
        c.last = node
    for c in comps.values():
        c.parameters = [c.params[i] for i in sorted(c.params)]
        c.root = c.root or c.last
    return comps


def test_rules_agree_with_shapes_xla_printed():
    """Every instruction of the round-trip corpus: the rule's shape is what XLA wrote."""
    checked = 0
    for fname, text in _round_trip_modules():
        insts = list(_instructions(text))
        comps = _computations(insts)
        for cname, is_root, name, shape, opcode, operands, attrs in insts:
            op = O.lookup(opcode)
            if op is None or op.infer is None:
                continue
            values = {}
            for key, text_value in attrs:
                spec = O.attr_spec(op, key)
                if spec is None or spec.kind == "verbatim":
                    continue
                if spec.kind == "computation":
                    values[key] = comps[text_value.lstrip("%")]
                elif spec.kind == "computation_list":
                    values[key] = tuple(comps[v.strip().lstrip("%")]
                                        for v in text_value.strip("{}").split(","))
                else:
                    values[key] = KINDS[spec.kind].parse(text_value)
            operand_shapes = [comps[cname].shapes[o] for o in operands]
            got = op.infer(operand_shapes, values, NS(shape=shape))
            same = compatible_ignoring_fp if MIXED_PRECISION_OK in op.traits else compatible
            assert same(got, shape), (fname, name, str(got), str(shape))
            checked += 1
    assert checked > 50


def test_pass_facts_match_xla_classes():
    """Traits and schemas the passes read their op sets from, against XLA's classes:
    HloSendRecvInstruction (SEND_RECV, the while simplifier's send/recv set), the
    zero-operand ops HloCSE merges (DEVICE_ID), and HloChannelInstruction (the ops with a
    channel_id, which the conditional simplifier refuses to clone)."""
    from hloc.ops.base import DEVICE_ID, SEND_RECV
    assert O.opcodes_with(SEND_RECV) == {"send", "send-done", "recv", "recv-done"}
    assert O.opcodes_with(DEVICE_ID) == {"replica-id", "partition-id"}
    assert O.opcodes_with_attr("channel_id") == {
        "send", "send-done", "recv", "recv-done", "all-gather", "all-gather-start",
        "all-reduce", "all-reduce-start", "reduce-scatter", "all-to-all", "ragged-all-to-all",
        "collective-broadcast", "collective-permute", "collective-permute-start",
        "collective-reduce"}
