"""The lane engine: a scalar computation made only of elementwise ops (a reducer,
comparator or combiner) compiled into a `LaneProgram` that evaluates each instruction once
on arrays of "lanes", reusing the registry's own elementwise evaluation, so the numerics
are exactly those of a per-scalar call (HloEvaluator applies them one scalar at a time).
`apply_computation` runs one, falling back to scalar calls when the body is not lane-safe.
"""
from __future__ import annotations

import numpy as np

from ..ir.module import Computation, Instruction
from ..ir.shape import ArrayShape, TupleShape, array as array_shape
from ..ops import facets, opcodes_with
from ..ops.base import ELEMENTWISE


# ---------------------------------------------------------------------------
# Lane engine

# Opcodes whose evaluation on arrays is the same as on each scalar element: the
# elementwise rows, and bitcast-convert (between scalars its widths are equal).
LANE_OPCODES = opcodes_with(ELEMENTWISE) | {"bitcast-convert"}
# Scalar-to-scalar ops that are identities on lanes.
_IDENTITY_OPCODES = frozenset({"broadcast", "reshape", "bitcast", "copy", "transpose"})

_PARAM, _CONST, _TUPLE, _GTE, _IDENT, _OP = range(6)


def _lane_shape(shape, lanes):
    if isinstance(shape, TupleShape):
        return TupleShape(tuple(_lane_shape(e, lanes) for e in shape.elements))
    return array_shape(shape.dtype, lanes)


def _is_scalar_shape(shape) -> bool:
    if isinstance(shape, TupleShape):
        return all(_is_scalar_shape(e) for e in shape.elements)
    return isinstance(shape, ArrayShape) and shape.dtype.is_array and shape.rank == 0


class LaneProgram:
    """A scalar computation compiled to run elementwise over arrays of shape `lanes`."""

    def __init__(self, comp: Computation, lanes: tuple):
        self.comp = comp
        self.lanes = lanes
        self.nparams = len(comp.parameters)
        slot: dict[int, int] = {}
        proxies: dict[int, Instruction] = {}
        steps = []
        for inst in comp.instructions:
            if not _is_scalar_shape(inst.shape):
                raise _NotLaneSafe
            ops = tuple(slot[id(o)] for o in inst.operands)
            proxy = Instruction(inst.name, inst.opdef, _lane_shape(inst.shape, lanes),
                                [proxies[id(o)] for o in inst.operands], inst.attrs, inst.loc)
            proxy.parent = inst.parent
            proxy.literal = inst.literal
            proxy.parameter_number = inst.parameter_number
            proxies[id(inst)] = proxy
            op = inst.opcode
            if op == "parameter":
                step = (_PARAM, inst.parameter_number, ops)
            elif op == "constant":
                step = (_CONST, np.broadcast_to(np.asarray(inst.literal.value), lanes), ops)
            elif op == "tuple":
                step = (_TUPLE, None, ops)
            elif op == "get-tuple-element":
                step = (_GTE, inst.attrs["index"], ops)
            elif op in _IDENTITY_OPCODES and len(ops) == 1 and \
                    isinstance(inst.shape, ArrayShape) and \
                    inst.shape.dtype is getattr(inst.operands[0].shape, "dtype", None):
                step = (_IDENT, None, ops)
            elif op in LANE_OPCODES and facets.get("evaluate", op) is not None:
                step = (_OP, (facets.get("evaluate", op), proxy), ops)
            else:
                raise _NotLaneSafe
            slot[id(inst)] = len(steps)
            steps.append(step)
        self.steps = steps
        self.root = slot[id(comp.root)]

    def run(self, ctx, args):
        vals = []
        append = vals.append
        for kind, payload, ops in self.steps:
            if kind == _OP:
                fn, proxy = payload
                append(fn(proxy, [vals[o] for o in ops], ctx))
            elif kind == _PARAM:
                append(args[payload])
            elif kind == _CONST:
                append(payload)
            elif kind == _IDENT:
                append(vals[ops[0]])
            elif kind == _TUPLE:
                append(tuple(vals[o] for o in ops))
            else:
                append(vals[ops[0]][payload])
        return vals[self.root]


class _NotLaneSafe(Exception):
    pass


def lane_program(ctx, comp: Computation, lanes: tuple) -> LaneProgram | None:
    """The compiled program for `comp` over `lanes`, or None if some op is not elementwise.
    Programs are cached per interpreter run (passes may rewrite computations between runs)."""
    cache = getattr(ctx, "_lane_programs", None)
    if cache is None:
        cache = {}
        setattr(ctx, "_lane_programs", cache)
    key = (id(comp), lanes)
    hit = cache.get(key)
    if hit is not None and hit[0] is comp:
        return hit[1]
    try:
        prog = LaneProgram(comp, lanes)
    except _NotLaneSafe:
        prog = None
    if len(cache) > 256:
        cache.clear()
    cache[key] = (comp, prog)
    return prog


def _leaf_dtypes(shape) -> list:
    return [leaf.dtype.np for leaf in shape.leaves()]


def _flatten(value) -> list:
    if isinstance(value, tuple):
        out = []
        for v in value:
            out.extend(_flatten(v))
        return out
    return [value]


def apply_computation(ctx, comp: Computation, args: list, lanes: tuple, mask=None) -> list:
    """Run scalar computation `comp` on every lane of `args` (arrays of shape `lanes`).

    Returns the result leaves as arrays of shape `lanes`. With `mask`, lanes where it is
    False hold unspecified values (the caller discards them). Elementwise computations
    run as one LaneProgram; anything else falls back to one `ctx.call` per lane.
    """
    lanes = tuple(lanes)
    dtypes = _leaf_dtypes(comp.root.shape)
    prog = lane_program(ctx, comp, lanes)
    if prog is not None:
        with np.errstate(all="ignore"):
            out = _flatten(prog.run(ctx, args))
        return [np.broadcast_to(np.asarray(o, dtype=dt), lanes) for o, dt in zip(out, dtypes)]
    outs = [np.zeros(lanes, dtype=dt) for dt in dtypes]
    it = np.ndindex(*lanes) if mask is None else zip(*np.nonzero(np.broadcast_to(mask, lanes)))
    for idx in it:
        idx = tuple(int(i) for i in idx) + (Ellipsis,)
        res = _flatten(ctx.call(comp, [a[idx].copy() for a in args]))
        for o, r in zip(outs, res):
            o[idx] = r
    return outs


def binary_root(comp: Computation) -> str | None:
    """The opcode if `comp` is exactly `op(p0, p1)` (or `op(p1, p0)`) on two scalars."""
    root = comp.root
    if len(comp.parameters) != 2 or len(comp.instructions) != 3 or len(root.operands) != 2:
        return None
    a, b = root.operands
    if a.opcode != "parameter" or b.opcode != "parameter" or a is b:
        return None
    return root.opcode
