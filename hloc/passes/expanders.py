"""Op expanders from XLA:CPU's pipeline: logistic-expander, comparison-expander,
batchnorm_expander and dot_decomposer.

- logistic-expander (LogisticExpander): logistic(x) => 1 / (1 + exp(-x)), the 1 a
  scalar constant broadcast to x's shape and used twice.
- comparison-expander (ComparisonExpander): a TOTALORDER compare of floats becomes a
  signed-integer compare of the bit patterns, negative values flipped as
  max_signed - bits (bf16 is converted to f32 first).
- batchnorm_expander (BatchNormExpander): batch-norm-training, -inference and -grad
  become reductions and elementwise ops with XLA's formulas: the training variance is
  E[X^2] - E[X]^2, inference uses scale * rsqrt(var + eps) and offset - mean * that, the
  element count per feature is the product of get-dimension-size results.
- dot_decomposer (DotDecomposer): a dot that is not canonical (one contracting
  dimension, at most one non-contracting dimension per operand, batch dimensions
  leading) becomes transpose + reshape of each operand to [batch, M, K] / [batch, K, N],
  a canonical dot, and a reshape back.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import DTYPES, PRED
from ..ir.module import Computation, Instruction, Module
from ..ir.graph import replace_instruction as replace, stable_post_order as post_order
from ..ir.rewriter import add_instruction, add_parameter, uniquer
from ..ir.shape import ArrayShape, array
from ..ops import REGISTRY
from . import PassContext, register
from .base import Pass
from .simplify_util import Builder, max_value


def _instructions(module: Module, opcodes) -> list[Instruction]:
    """The instructions with one of `opcodes`, in post order per computation (the post
    order only of computations that have one)."""
    return [i for c in module.computations if not c.is_fusion_computation and
            any(i.opcode in opcodes for i in c.instructions)
            for i in post_order(c) if i.opcode in opcodes]


# ---------------------------------------------------------------------------
# logistic-expander

@register
class LogisticExpander(Pass):
    """Expands in the operand's type (in XLA:CPU's pipeline float-normalization has
    made a narrow logistic wide first)."""
    name = "logistic-expander"

    def run(self, module: Module, ctx: PassContext) -> bool:
        insts = _instructions(module, ("logistic",))
        for inst in insts:
            x = inst.operands[0]
            b = Builder(inst.parent, before=inst)
            one = b.scalar_like(x, 1.0)
            e = b.unary("exponential", b.unary("negate", x))
            replace(inst, b.binary("divide", one, b.binary("add", one, e)))
        return bool(insts)


# ---------------------------------------------------------------------------
# comparison-expander

def _int_types(bits: int):
    return DTYPES[f"s{bits}"], DTYPES[f"u{bits}"]


@register
class ComparisonExpander(Pass):
    name = "comparison-expander"

    def run(self, module: Module, ctx: PassContext) -> bool:
        insts = [i for i in _instructions(module, ("compare",))
                 if i.attrs.get("type") == "TOTALORDER" and
                 i.operands[0].shape.dtype.is_float]
        for inst in insts:
            replace(inst, _expand_total_order(inst))
        return bool(insts)


def _expand_total_order(inst: Instruction) -> Instruction:
    b = Builder(inst.parent, before=inst)
    lhs, rhs = inst.operands
    dt = lhs.shape.dtype
    if dt.name == "bf16":
        dt = DTYPES["f32"]
        lhs, rhs = b.convert(lhs, dt), b.convert(rhs, dt)
    sdt, udt = _int_types(dt.bits)
    dims = lhs.shape.dims
    zero = b.broadcast(b.constant(sdt, 0), dims, ())
    max_signed = b.constant(sdt, max_value(sdt))
    max_u = b.add("convert", array(udt, ()), [max_signed])
    max_value_b = b.broadcast(max_u, dims, ())

    def to_int(v):
        signed = b.add("bitcast-convert", array(sdt, dims), [v])
        unsigned = b.add("bitcast-convert", array(udt, dims), [v])
        flipped = b.add("subtract", array(udt, dims), [max_value_b, unsigned])
        flipped = b.add("bitcast-convert", array(sdt, dims), [flipped])
        negative = b.add("compare", array(PRED, dims), [signed, zero], {"direction": "LT"})
        return b.add("select", array(sdt, dims), [negative, flipped, signed])

    a, c = to_int(lhs), to_int(rhs)
    return b.add("compare", inst.shape, [a, c], {"direction": inst.attrs["direction"]})


# ---------------------------------------------------------------------------
# batchnorm_expander

def _scalar_add_computation(module: Module, dtype) -> Computation:
    names = uniquer(module)
    comp = module.add_computation(Computation(names.unique("scalar_add_computation")))
    shape = array(dtype, ())
    lhs = add_parameter(comp, shape, 0, "scalar_lhs")
    rhs = add_parameter(comp, shape, 1, "scalar_rhs")
    comp.set_root_instruction(add_instruction(comp, "add", shape, [lhs, rhs]))
    return comp


class _BN:
    """Instruction factory for one batch-norm expansion (metadata copied, as XLA's
    `add` lambda does)."""

    def __init__(self, bn: Instruction):
        self.bn = bn
        self.b = Builder(bn.parent, before=bn)
        self.meta = {k: bn.attrs[k] for k in ("metadata",) if k in bn.attrs}
        self.fi = bn.attrs["feature_index"]

    def add(self, opcode, shape, operands=(), attrs=None, literal=None):
        attrs = dict(attrs or {})
        attrs.update(self.meta)
        return self.b.add(opcode, shape, operands, attrs, literal=literal)

    def const(self, dtype, value):
        from ..ir.literal import literal_from_array
        shape = array(dtype, ())
        return self.add("constant", shape, literal=literal_from_array(
            shape, np.array(value).astype(dtype.np)))

    def bcast(self, x, shape, dims):
        return self.add("broadcast", array(x.shape.dtype, shape.dims), [x],
                        {"dimensions": tuple(dims)})

    def feature(self, x, shape):
        return self.bcast(x, shape, (self.fi,))

    def binary(self, opcode, shape, a, c):
        return self.add(opcode, array(shape.dtype, shape.dims), [a, c])

    def rsqrt(self, x):
        return self.add("rsqrt", x.shape, [x])

    def mean(self, count, x):
        return self.binary("divide", x.shape, x, self.bcast(count, x.shape, ()))

    def element_count(self, operand):
        s32 = DTYPES["s32"]
        n = self.const(s32, 1)
        for i in range(operand.shape.rank):
            if i == self.fi:
                continue
            size = self.add("get-dimension-size", array(s32, ()), [operand],
                            {"dimensions": (i,)})
            n = self.add("multiply", array(s32, ()), [size, n])
        return self.add("convert", array(operand.shape.dtype, ()), [n])

    def reduce(self, x, init, comp, shape):
        dims = tuple(i for i in range(x.shape.rank) if i != self.fi)
        return self.add("reduce", array(shape.dtype, shape.dims), [x, init],
                        {"dimensions": dims, "to_apply": comp})


def _epsilon(bn: Instruction) -> float:
    return float(bn.attrs["epsilon"])


def _bn_training(module: Module, bn: Instruction) -> Instruction:
    f = _BN(bn)
    x, scale, offset = bn.operands
    xs, fs = x.shape, scale.shape
    dt = xs.dtype
    zero = f.const(dt, 0.0)
    eps = f.bcast(f.const(dt, np.float32(_epsilon(bn))), xs, ())
    count = f.element_count(x)
    scale_b, offset_b = f.feature(scale, xs), f.feature(offset, xs)
    add_comp = _scalar_add_computation(module, dt)
    squared = f.binary("multiply", xs, x, x)
    total = f.reduce(x, zero, add_comp, fs)
    squared_total = f.reduce(squared, zero, add_comp, fs)
    mean = f.mean(count, total)
    mean_b = f.feature(mean, xs)
    square_mean = f.mean(count, squared_total)
    mean_square = f.binary("multiply", fs, mean, mean)
    var = f.binary("subtract", fs, square_mean, mean_square)
    var_b = f.feature(var, xs)
    var_eps = f.binary("add", xs, var_b, eps)
    rsqrt = f.rsqrt(var_eps)
    centered = f.binary("subtract", xs, x, mean_b)
    normalized = f.binary("multiply", xs, centered, rsqrt)
    scaled = f.binary("multiply", xs, normalized, scale_b)
    shifted = f.binary("add", xs, scaled, offset_b)
    return f.b.tuple([shifted, mean, var])


def _bn_inference(module: Module, bn: Instruction) -> Instruction:
    f = _BN(bn)
    x, scale, offset, mean, var = bn.operands
    xs, fs = x.shape, scale.shape
    eps = f.bcast(f.const(xs.dtype, np.float32(_epsilon(bn))), fs, ())
    true_scale = f.binary("multiply", fs, scale, f.rsqrt(f.binary("add", fs, var, eps)))
    true_shift = f.binary("subtract", fs, offset,
                          f.binary("multiply", fs, mean, true_scale))
    scaled = f.binary("multiply", xs, x, f.feature(true_scale, xs))
    return f.binary("add", xs, scaled, f.feature(true_shift, xs))


def _bn_grad(module: Module, bn: Instruction) -> Instruction:
    f = _BN(bn)
    x, scale, mean, var, grad = bn.operands
    xs, fs = x.shape, scale.shape
    dt = xs.dtype
    count = f.element_count(x)
    zero = f.const(dt, 0.0)
    eps = f.const(dt, np.float32(_epsilon(bn)))
    eps_x = f.bcast(eps, xs, ())
    eps_f = f.bcast(eps, fs, ())
    scale_b = f.feature(scale, xs)
    var_b = f.feature(var, xs)
    mean_b = f.feature(mean, xs)
    rsqrt_b = f.rsqrt(f.binary("add", xs, var_b, eps_x))
    rsqrt_f = f.rsqrt(f.binary("add", fs, var, eps_f))
    centered = f.binary("subtract", xs, x, mean_b)
    grad_centered = f.binary("multiply", xs, grad, centered)
    add_comp = _scalar_add_computation(module, dt)
    sum_grad_centered = f.reduce(grad_centered, zero, add_comp, fs)
    grad_beta = f.reduce(grad, zero, add_comp, fs)
    grad_scale = f.binary("multiply", fs, sum_grad_centered, rsqrt_f)
    i2 = f.feature(grad_beta, xs)
    i3 = f.feature(sum_grad_centered, xs)
    i4 = f.binary("multiply", xs, i3, centered)
    i5 = f.binary("divide", xs, i4, f.binary("add", xs, var_b, eps_x))
    scale_rsqrt = f.binary("multiply", xs, scale_b, rsqrt_b)
    scale_rsqrt = f.mean(count, scale_rsqrt)
    i1 = f.binary("multiply", xs, grad, f.bcast(count, xs, ()))
    i6 = f.binary("subtract", xs, f.binary("subtract", xs, i1, i2), i5)
    grad_x = f.binary("multiply", xs, scale_rsqrt, i6)
    return f.b.tuple([grad_x, grad_scale, grad_beta])


_BN_EXPANSIONS = {"batch-norm-training": _bn_training,
                  "batch-norm-inference": _bn_inference,
                  "batch-norm-grad": _bn_grad}


@register
class BatchNormExpander(Pass):
    name = "batchnorm_expander"

    def run(self, module: Module, ctx: PassContext) -> bool:
        insts = _instructions(module, tuple(_BN_EXPANSIONS))
        for inst in insts:
            replace(inst, _BN_EXPANSIONS[inst.opcode](module, inst))
        return bool(insts)


# ---------------------------------------------------------------------------
# dot_decomposer

def _dnums(dot):
    a = dot.attrs
    return (tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ())),
            tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ())))


def _is_canonical(shape: ArrayShape, contracting, batch) -> bool:
    if len(contracting) != 1 or len(batch) + 2 < shape.rank:
        return False
    return list(batch) == list(range(len(batch)))


def _canonical_operand(b: Builder, x: Instruction, batch, contracting,
                       contracting_minor: bool):
    dims = x.shape.dims
    non = [i for i in range(x.shape.rank) if i not in contracting and i not in batch]
    k = int(np.prod([dims[i] for i in contracting], dtype=np.int64))
    m = int(np.prod([dims[i] for i in non], dtype=np.int64))
    perm = list(batch) + (non + list(contracting) if contracting_minor
                          else list(contracting) + non)
    meta = {"metadata": x.attrs["metadata"]} if "metadata" in x.attrs else {}
    t = b.add("transpose", array(x.shape.dtype, [dims[p] for p in perm]), [x],
              {"dimensions": tuple(perm), **meta})
    new_dims = [dims[i] for i in batch]
    if contracting_minor:
        cdim = len(batch) + (1 if m != 1 else 0)
        new_dims += ([m] if m != 1 else []) + [k]
    else:
        cdim = len(batch)
        new_dims += [k] + ([m] if m != 1 else [])
    r = b.add("reshape", array(x.shape.dtype, new_dims), [t], dict(meta))
    return r, cdim


@register
class DotDecomposer(Pass):
    name = "dot_decomposer"

    def run(self, module: Module, ctx: PassContext) -> bool:
        dots = []
        for c in module.computations:
            if c.is_fusion_computation:
                continue
            for d in c.instructions:
                if d.opcode != "dot":
                    continue
                lb, lc, rb, rc = _dnums(d)
                if not (_is_canonical(d.operands[0].shape, lc, lb) and
                        _is_canonical(d.operands[1].shape, rc, rb)):
                    dots.append(d)
        for d in dots:
            _canonicalize(d)
        return bool(dots)


def _canonicalize(dot: Instruction) -> None:
    lb, lc, rb, rc = _dnums(dot)
    lhs, rhs = dot.operands
    b = Builder(dot.parent, before=dot)
    new_l, lcd = _canonical_operand(b, lhs, lb, lc, True)
    new_r, rcd = _canonical_operand(b, rhs, rb, rc, False)
    attrs = {k: v for k, v in dot.attrs.items()
             if k not in ("lhs_batch_dims", "rhs_batch_dims", "lhs_contracting_dims",
                          "rhs_contracting_dims")}
    nb = len(lb)
    if nb:
        attrs["lhs_batch_dims"] = attrs["rhs_batch_dims"] = tuple(range(nb))
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = (lcd,), (rcd,)
    shape = REGISTRY["dot"].infer([new_l.shape, new_r.shape], attrs, None)
    new = b.add("dot", shape.with_dtype(dot.shape.dtype), [new_l, new_r], attrs)
    replace(dot, b.add("reshape", dot.shape, [new]))
