"""Structural, control-flow, async, token, RNG and host-transfer opcodes.

parameter, constant, tuple, get-tuple-element, call, while, conditional, fusion,
custom-call, the async-start/update/done wrappers, copy-start/done, after-all,
add-dependency, opt-barrier, domain, rng*, infeed/outfeed and send/recv(-done).
Rules mirror ShapeInference (InferCallShape, InferWhileShape, InferConditionalShape,
InferGetTupleElementShape, InferAfterAllShape) and, for ops XLA's parser cannot infer
(SHAPE_REQUIRED), the checks ShapeVerifier's Handle* methods make on the written shape.
parameter, constant and custom-call take their shape from the text only (infer=None).
"""
from __future__ import annotations

from ..ir.dtypes import PRED, S32, TOKEN, U32
from ..ir.shape import ArrayShape, TupleShape
from .base import (ASYNC, CALLS, CAN_CHANGE_LAYOUT, CONTROL_FLOW, EMBEDDED_CALLS, EXPENSIVE,
                   MAY_SIDE_EFFECT, MINOR_TO_MAJOR_ONLY, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER,
                   SEND_RECV, SHAPE_REQUIRED, SIDE_EFFECT, STRUCTURAL, AttrSpec, OpDef,
                   register)
from .shape_rules import (compatible, fail, human, is_float, is_scalar, make, need_attr,
                          need_declared, params_of, program_text, scalar, tup)

_TOKEN = scalar(TOKEN)


def _is_token(s) -> bool:
    return isinstance(s, ArrayShape) and s.dtype is TOKEN


def _tuple_infer(ops, attrs, inst):
    return tup(ops)


def _gte_infer(ops, attrs, inst):
    (arg,) = ops
    index = attrs.get("index", 0)
    if not isinstance(arg, TupleShape):
        fail(f"Cannot infer shape: attempting to index into non-tuple: {human(arg)}.")
    if index < 0 or index >= len(arg.elements):
        fail(f"Cannot infer shape: attempt to index out of tuple bounds: {index} >= "
             f"{len(arg.elements)} in shape {human(arg)}.")
    return arg.elements[index]


def _call_infer(ops, attrs, inst):
    comp = need_attr(attrs, "to_apply")
    params = params_of(comp)
    if len(ops) != len(params):
        fail(f"Call applied function arity must match number of arguments; got: arity: "
             f"{len(params)}, arguments: {len(ops)}; computation signature: "
             f"{program_text(comp)}; argument shapes: [{', '.join(human(s) for s in ops)}].")
    for i, (arg, param) in enumerate(zip(ops, params)):
        if not compatible(arg, param):
            fail(f"Call parameter must match argument; got parameter {i} shape: "
                 f"{human(param)}, argument shape: {human(arg)}.")
    return comp.root.shape


def _while_infer(ops, attrs, inst):
    (init,) = ops
    cond, body = need_attr(attrs, "condition"), need_attr(attrs, "body")
    cparams, bparams = params_of(cond), params_of(body)
    if len(cparams) != 1:
        fail(f"Condition must take 1 arguments; got {len(cparams)}.")
    if len(bparams) != 1:
        fail(f"Body must take 1 arguments; got {len(bparams)}.")
    text = (f"Condition: {program_text(cond)}; body: {program_text(body)}; init: "
            f"{human(init)}.")   # XLA appends another "." below
    if not compatible(cond.root.shape, scalar(PRED)):
        fail(f"Condition must return a boolean; got {text}.")
    result = body.root.shape
    if not (compatible(result, cparams[0]) and compatible(result, bparams[0])
            and compatible(result, init)):
        fail(f"The parameter of condition and body, the result of the body, and init must "
             f"all have the same shape; got {text}.")
    return init


def _conditional_infer(ops, attrs, inst):
    index, *operands = ops
    branches = attrs.get("branch_computations")
    if branches is None:
        branches = (attrs.get("true_computation"), attrs.get("false_computation"))
    if not (compatible(index, scalar(PRED)) or compatible(index, scalar(S32))):
        fail(f"branch_index must be bool or int32_t; got {human(index)}.")
    if index.dtype is PRED and len(branches) != 2:
        fail(f"A pred conditional needs exactly 2 branch computations; got {len(branches)}.")
    if not branches or any(b is None for b in branches):
        fail("conditional needs true_computation and false_computation, or "
             "branch_computations.")
    if len(branches) != len(operands):
        fail(f"conditional has {len(branches)} branch computations but {len(operands)} branch "
             f"operands.")
    first = branches[0].root.shape
    for j, (comp, operand) in enumerate(zip(branches, operands)):
        params = params_of(comp)
        if len(params) != 1:
            fail(f"branch computation {j} must take 1 argument; got {len(params)}.")
        if not compatible(params[0], operand):
            fail(f"branch operand {j} must match the shape of the only parameter of branch "
                 f"computation {j}: got operand: {human(operand)}; computation: "
                 f"{program_text(comp)}.")
        if not compatible(first, comp.root.shape):
            fail(f"the result of branch 0 computation and branch {j} computation must have "
                 f"the same shape: got branch 0 computation result: {human(first)}; branch "
                 f"{j} computation result: {human(comp.root.shape)}.")
    return first


def _fusion_infer(ops, attrs, inst):
    need_declared(inst, "fusion")
    comp = need_attr(attrs, "calls")
    params = params_of(comp)
    if len(params) != len(ops):
        fail(f"Fused computation has {len(params)} parameters, but the fusion has "
             f"{len(ops)} operands.")
    for i, (param, operand) in enumerate(zip(params, ops)):
        if not compatible(param, operand):
            fail(f"Shape mismatch between the operand {i} of the fusion ({human(operand)}) "
                 f"and the fused computation's parameter {i} ({human(param)}).")
    return comp.root.shape


# ---------------------------------------------------------------------------
# async wrappers and copy-start/done

def _async_start_infer(ops, attrs, inst):
    out = need_declared(inst, "async-start")
    if not (isinstance(out, TupleShape) and len(out.elements) >= 2):
        fail("AsyncStart expects the op shape to be in the form of ((async-operands), "
             "async-outputs, state).")
    comp = attrs.get("calls")
    result = comp.root.shape if comp is not None else out.elements[1]
    return tup((tup(ops), result) + tuple(out.elements[2:]))


def _async_update_infer(ops, attrs, inst):
    need_declared(inst, "async-update")
    return ops[0]


def _async_done_infer(ops, attrs, inst):
    need_declared(inst, "async-done")
    (start,) = ops
    if not (isinstance(start, TupleShape) and len(start.elements) >= 2):
        fail(f"async-done expects an async-start operand of shape ((operands), outputs, "
             f"state); got {human(start)}.")
    return start.elements[1]


def _copy_start_infer(ops, attrs, inst):
    need_declared(inst, "copy-start")
    (operand,) = ops
    return tup((operand, operand, scalar(U32)))


def _copy_done_infer(ops, attrs, inst):
    need_declared(inst, "copy-done")
    (start,) = ops
    if not isinstance(start, TupleShape) or not start.elements:
        fail(f"copy-done expects a copy-start operand; got {human(start)}.")
    return start.elements[0]


# ---------------------------------------------------------------------------
# tokens, barriers, domains

def _after_all_infer(ops, attrs, inst):
    return _TOKEN             # 2026 XLA accepts non-token operands (used as dependencies)


def _add_dependency_infer(ops, attrs, inst):
    return ops[0]


def _opt_barrier_infer(ops, attrs, inst):
    need_declared(inst, "opt-barrier")
    return ops[0]


def _domain_infer(ops, attrs, inst):
    return ops[0]


# ---------------------------------------------------------------------------
# RNG

def _rng_infer(ops, attrs, inst):
    """ShapeVerifier::HandleRng (the parser takes any operand count)."""
    out = need_declared(inst, "rng")
    if len(ops) != 2:
        fail(f"Expected 2 operands for rng instruction, got {len(ops)}.")
    a, b = ops
    if not (is_scalar(a) and is_scalar(b)):
        fail("Expected scalar types for the two operands of Rng instruction.")
    out_type = getattr(out, "dtype", None)
    if a.dtype is not b.dtype or not (out_type is a.dtype or (is_float(a) and is_float(out))):
        fail("Expected compatible element types for the result and the two operands of Rng "
             "instruction.")
    kind = a.dtype.kind
    dist = attrs.get("distribution")
    if dist == "rng_uniform" and kind not in ("float", "int", "uint", "pred"):
        fail("Element type not supported. Expected element to be of floating point type, "
             "integral type or predicate type for RngUniform.")
    if dist == "rng_normal" and kind != "float":
        fail("Element type not supported. Expected element to be FloatingPointType for "
             "RngNormal.")
    return out


def _rng_bit_generator_infer(ops, attrs, inst):
    out = need_declared(inst, "rng-bit-generator")
    if isinstance(out, TupleShape):
        if len(out.elements) != 2:
            fail(f"Expected tuple shape with 2 elements for RngBitGenerator. Got: {out}")
        if not compatible(ops[0], out.elements[0]):
            fail(f"Expected state shape to match between input and output for "
                 f"RngBitGenerator. Got {ops[0]} vs. {out.elements[0]}")
    return out


def _rng_state_infer(ops, attrs, inst):
    need_declared(inst, "rng-get-and-update-state")
    return make("u64", (2,))


# ---------------------------------------------------------------------------
# infeed / outfeed / send / recv

def _infeed_infer(ops, attrs, inst):
    out = need_declared(inst, "infeed")
    if ops and not _is_token(ops[0]):
        fail(f"Infeed operand must be a token; got {human(ops[0])}.")
    if not (isinstance(out, TupleShape) and len(out.elements) == 2
            and _is_token(out.elements[1])):
        fail("Infeed shape should be a tuple of size 2 with the second element being a "
             "token.")
    return out


def _outfeed_infer(ops, attrs, inst):
    need_declared(inst, "outfeed")
    data, token = ops
    if not _is_token(token):
        fail(f"Outfeed's second operand must be a token; got {human(token)}.")
    expected = attrs.get("outfeed_shape")
    if expected is not None and not compatible(expected, data):
        fail(f"Expected outfeed shape to be equal to operand's shape {human(data)}, actual "
             f"shape is {human(expected)}")
    return _TOKEN


def _send_infer(ops, attrs, inst):
    need_declared(inst, "send")
    return tup((ops[0], scalar(U32), _TOKEN))


def _recv_infer(ops, attrs, inst):
    out = need_declared(inst, "recv")
    if not (isinstance(out, TupleShape) and out.elements):
        fail(f"recv shape must be (data, u32[], token[]); got {human(out)}.")
    return tup((out.elements[0], scalar(U32), _TOKEN))


def _send_done_infer(ops, attrs, inst):
    need_declared(inst, "send-done")
    return _TOKEN


def _recv_done_infer(ops, attrs, inst):
    need_declared(inst, "recv-done")
    (recv,) = ops
    if not (isinstance(recv, TupleShape) and recv.elements):
        fail(f"recv-done expects a recv operand; got {human(recv)}.")
    return tup((recv.elements[0], _TOKEN))


# ---------------------------------------------------------------------------
# Registration (attributes in XLA's printing order; called computations last)

_SR = frozenset({SHAPE_REQUIRED})
_SE_SR = frozenset({SIDE_EFFECT, SHAPE_REQUIRED, EXPENSIVE})
_HOST_TRANSFER = ("host transfers (infeed/outfeed/send/recv) need a running XLA client "
                  "with a host on the other end")
_ASYNC_THREAD = AttrSpec("async_execution_thread", "string")
_ALIASING = AttrSpec("output_to_operand_aliasing", "aliasing", default=())
_CHANNEL = (AttrSpec("channel_id", "int"), AttrSpec("is_host_transfer", "bool", default=False))

register(OpDef("parameter", 0, (AttrSpec("parameter_replication", "bool_list"),),
               frozenset({EXPENSIVE})), STRUCTURAL, CAN_CHANGE_LAYOUT,
         MIXED_OPERANDS_OK)                                 # the number is in the parentheses
register(OpDef("constant", 0), STRUCTURAL,            # the literal is in the parentheses
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, MINOR_TO_MAJOR_ONLY)
register(OpDef("tuple", None, infer=_tuple_infer), STRUCTURAL,
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("get-tuple-element", 1, (AttrSpec("index", "int", required=True),),
               infer=_gte_infer), STRUCTURAL, CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("call", None, (AttrSpec("to_apply", "computation", required=True),
                              AttrSpec("is_composite", "bool", default=False)),
               frozenset({CALLS, EXPENSIVE, CONTROL_FLOW}), _call_infer), STRUCTURAL,
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("while", 1, (AttrSpec("condition", "computation", required=True),
                            AttrSpec("body", "computation", required=True)),
               frozenset({CALLS, EXPENSIVE, CONTROL_FLOW}), _while_infer), STRUCTURAL,
         MIXED_OPERANDS_OK)
# pred index: true/false_computation; s32 index: branch_computations.
def _conditional_parse_check(inst):
    selector = inst.operands[0].shape if inst.operands else None
    by_pred = getattr(getattr(selector, "dtype", None), "name", None) == "pred"
    if by_pred and "branch_computations" in inst.attrs:
        allowed = ", ".join(sorted(["backend_config", "control-predecessors",
                                    "false_computation", "frontend_attributes", "metadata",
                                    "origin", "sharding", "statistics", "true_computation"]))
        return (f'unexpected attribute "branch_computations". Allowed attributes: {allowed}',
                "branch_computations")
    return None


register(OpDef("conditional", (1, None), (
    AttrSpec("true_computation", "computation"),
    AttrSpec("false_computation", "computation"),
    AttrSpec("branch_computations", "computation_list"),
), frozenset({CALLS, EXPENSIVE, CONTROL_FLOW}), _conditional_infer,
    parse_check=_conditional_parse_check), STRUCTURAL, CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("fusion", None, (
    AttrSpec("kind", "fusion_kind", required=True),
    _ALIASING,
    AttrSpec("calls", "computation", required=True),
), frozenset({CALLS, EXPENSIVE, SHAPE_REQUIRED}), _fusion_infer), STRUCTURAL,
         EMBEDDED_CALLS, CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER)
def _custom_call_parse_check(inst):
    constraints = inst.attrs.get("operand_layout_constraints")
    if constraints is None:
        return None
    if len(constraints) != len(inst.operands):
        return (f"Expected {len(inst.operands)} operand layout constraints, "
                f"{len(constraints)} given")
    for i, (want, op) in enumerate(zip(constraints, inst.operands)):
        if not want.compatible(op.shape):
            return (f"Operand layout constraint shape {want} for operand {i} is not "
                    f"compatible with operand shape {op.shape}")
    return None


# to_apply= is printed back as called_computations={...} (one list of called comps).
register(OpDef("custom-call", None, (
    AttrSpec("window", "window"),
    AttrSpec("dim_labels", "dim_labels"),
    AttrSpec("feature_group_count", "int", default=1),
    AttrSpec("batch_group_count", "int", default=1),
    AttrSpec("operand_precision", "precision_list"),
    AttrSpec("padding_type", "padding_type", default="PADDING_INVALID"),
    AttrSpec("custom_call_target", "string", required=True),
    AttrSpec("operand_layout_constraints", "shape_list"),
    AttrSpec("custom_call_has_side_effect", "bool", default=False),
    AttrSpec("literal", "literal"),
    _ALIASING,
    AttrSpec("schedule", "schedule", default="SCHEDULE_NONE"),
    AttrSpec("api_version", "api_version", default="API_VERSION_ORIGINAL"),
    AttrSpec("to_apply", "computation"),
    AttrSpec("called_computations", "computation_list"),
), frozenset({CALLS, EXPENSIVE, MAY_SIDE_EFFECT}), parse_check=_custom_call_parse_check),
         EMBEDDED_CALLS, MIXED_OPERANDS_OK)
register(OpDef("async-start", None, (_ASYNC_THREAD, _ALIASING,
                                     AttrSpec("calls", "computation", required=True)),
               frozenset({CALLS, EXPENSIVE, SHAPE_REQUIRED, MAY_SIDE_EFFECT, ASYNC}),
               _async_start_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER)
register(OpDef("async-update", 1, (_ASYNC_THREAD, AttrSpec("calls", "computation")),
               frozenset({CALLS, EXPENSIVE, SHAPE_REQUIRED, MAY_SIDE_EFFECT, ASYNC}),
               _async_update_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER)
register(OpDef("async-done", 1, (_ASYNC_THREAD, AttrSpec("calls", "computation")),
               frozenset({CALLS, EXPENSIVE, SHAPE_REQUIRED, MAY_SIDE_EFFECT, ASYNC}),
               _async_done_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, OWN_SHAPE_HANDLER)
register(OpDef("copy-start", 1, (AttrSpec("cross_program_prefetch_index", "int"),), _SR,
               _copy_start_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, MINOR_TO_MAJOR_ONLY)
register(OpDef("copy-done", 1, (), _SR, _copy_done_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("after-all", None, (), frozenset({EXPENSIVE}), _after_all_infer), CAN_CHANGE_LAYOUT)
register(OpDef("add-dependency", 2, (), frozenset({EXPENSIVE}), _add_dependency_infer))
register(OpDef("opt-barrier", 1, (), _SR, _opt_barrier_infer), MIXED_OPERANDS_OK)
register(OpDef("domain", 1, (AttrSpec("domain", "verbatim", required=True),),
               frozenset({EXPENSIVE}), _domain_infer), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("rng", None, (AttrSpec("distribution", "distribution", required=True),),
               _SE_SR, _rng_infer), CAN_CHANGE_LAYOUT)
register(OpDef("rng-bit-generator", 1, (AttrSpec("algorithm", "rng_algorithm",
                                                 required=True, always_print=True),),
               frozenset({SHAPE_REQUIRED, EXPENSIVE}), _rng_bit_generator_infer),
         CAN_CHANGE_LAYOUT)
register(OpDef("rng-get-and-update-state", 0, (AttrSpec("delta", "int", required=True),),
               _SE_SR, _rng_state_infer), CAN_CHANGE_LAYOUT)
def _infeed_parse_check(inst):
    if not (isinstance(inst.shape, TupleShape) and inst.shape.elements):
        return "infeed must have a non-empty tuple shape"
    return None


register(OpDef("infeed", 1, (AttrSpec("infeed_config", "string", default=""),),
               frozenset({SIDE_EFFECT, SHAPE_REQUIRED}), _infeed_infer,
               parse_check=_infeed_parse_check, unsupported=_HOST_TRANSFER),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, MINOR_TO_MAJOR_ONLY)
# outfeed_shape: when absent XLA stores operand 0's shape and prints that.
register(OpDef("outfeed", 2, (AttrSpec("outfeed_shape", "shape", always_print=True),
                              AttrSpec("outfeed_config", "string", default="")),
               frozenset({SIDE_EFFECT, SHAPE_REQUIRED}), _outfeed_infer,
               unsupported=_HOST_TRANSFER), CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK)
register(OpDef("send", 2, _CHANNEL, _SE_SR, _send_infer, unsupported=_HOST_TRANSFER),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, SEND_RECV, MINOR_TO_MAJOR_ONLY)
register(OpDef("send-done", 1, _CHANNEL, _SE_SR, _send_done_infer, unsupported=_HOST_TRANSFER),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, SEND_RECV)
register(OpDef("recv", 1, _CHANNEL, _SE_SR, _recv_infer, unsupported=_HOST_TRANSFER),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, SEND_RECV, MINOR_TO_MAJOR_ONLY)
register(OpDef("recv-done", 1, _CHANNEL, _SE_SR, _recv_done_infer, unsupported=_HOST_TRANSFER),
         CAN_CHANGE_LAYOUT, MIXED_OPERANDS_OK, SEND_RECV)
