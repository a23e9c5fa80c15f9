"""Element generators of convert and bitcast-convert (hloc.interp.conversions' rules).

convert: integers wrap (sign- or zero-extended from the source), float->int saturates
with NaN -> 0 (`llvm.fptosi.sat`, no poison), x->pred is x != 0, bf16 is reached through
f32, f64->f16 is rounded once (round-to-odd through f32), real->complex gets a zero
imaginary part. bitcast-convert between types of one width reinterprets the storage bits.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from .registry import emits
from .types import F16, F32, F64, I32, I64, Cplx, from_storage, round_narrow, storage_type, to_storage


def _to_f16_from_f64(kb, x):
    """f64 -> f16 with one rounding: f64 -> f32 rounded to odd, then f32 -> f16."""
    bb = kb.b
    r = bb.fptrunc(x, F32)
    back = bb.fpext(r, F64)
    inexact = bb.fcmp_ordered("!=", back, x)
    bits = bb.bitcast(r, I32)
    # |r| > |x|: step one ulp toward zero (truncation), then force the last bit odd.
    too_big = bb.fcmp_ordered(">", _fabs(kb, back), _fabs(kb, x))
    bits = bb.select(bb.and_(inexact, too_big), bb.sub(bits, ir.Constant(I32, 1)), bits)
    bits = bb.select(inexact, bb.or_(bits, ir.Constant(I32, 1)), bits)
    odd = bb.bitcast(bits, F32)
    finite = bb.fcmp_ordered("<", _fabs(kb, r), ir.Constant(F32, float("inf")))
    return bb.select(finite, odd, r)


def _fabs(kb, x):
    t = x.type
    f = kb.mcx.intrinsic(f"llvm.fabs.{'f32' if t == F32 else 'f64'}", t, [t])
    return kb.b.call(f, [x])


def convert_value(kb, inst, x, src, dst):
    bb = kb.b
    if src is dst:
        return x
    if src.kind == "complex":
        if dst.kind != "complex":
            raise unsupported(inst, f"conversion from {src.name} to {dst.name}")
        t = F32 if dst.name == "c64" else F64
        cv = bb.fptrunc if t == F32 and x.re.type == F64 else (bb.fpext if t == F64 and x.re.type == F32 else None)
        return Cplx(cv(x.re, t), cv(x.im, t)) if cv else x
    if dst.kind == "complex":
        from ..ir.dtypes import DTYPES
        comp = DTYPES["f32" if dst.name == "c64" else "f64"]
        re = convert_value(kb, inst, x, src, comp)
        return Cplx(re, ir.Constant(re.type, 0.0))
    if dst.kind == "pred":
        if src.kind == "float":
            return bb.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
        return bb.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if src.kind == "pred":
        from ..ir.dtypes import DTYPES
        x, src = bb.zext(x, ir.IntType(8)), DTYPES["u8"]
    if dst.kind in ("int", "uint"):
        t = ir.IntType(dst.bits)
        if src.kind == "float":
            name = "fptosi" if dst.kind == "int" else "fptoui"
            ft = "f32" if x.type == F32 else "f64"
            f = kb.mcx.intrinsic(f"llvm.{name}.sat.i{dst.bits}.{ft}", t, [x.type])
            return bb.call(f, [x])
        if src.bits == dst.bits:
            return x
        if src.bits > dst.bits:
            return bb.trunc(x, t)
        return bb.sext(x, t) if src.kind == "int" else bb.zext(x, t)
    # dst is a float
    ct = F64 if dst.name == "f64" else F32
    if src.kind in ("int", "uint"):
        to = bb.sitofp if src.kind == "int" else bb.uitofp
        if dst.name == "f16":
            return _round_f16(kb, to(x, F64))
        return round_narrow(bb, dst, to(x, ct))
    if x.type == F64 and dst.name == "f16":
        return _round_f16(kb, x)
    if x.type == F64 and ct == F32:
        x = bb.fptrunc(x, F32)
    elif x.type == F32 and ct == F64:
        x = bb.fpext(x, F64)
    return round_narrow(bb, dst, x)


def _round_f16(kb, x64):
    bb = kb.b
    return bb.fpext(bb.fptrunc(_to_f16_from_f64(kb, x64), F16), F32)


@emits("convert")
def _emit_convert(kb, inst, ops, index):
    return convert_value(kb, inst, ops[0](index), inst.operands[0].shape.dtype, inst.shape.dtype)


@emits("bitcast-convert")
def _emit_bitcast_convert(kb, inst, ops, index):
    src, dst = inst.operands[0].shape.dtype, inst.shape.dtype
    if src.bits != dst.bits or "complex" in (src.kind, dst.kind) or "pred" in (src.kind, dst.kind):
        raise unsupported(inst, f"bitcast-convert from {src.name} to {dst.name} in the "
                                "compiled back end")
    bb = kb.b
    raw = to_storage(bb, src, ops[0](index))
    raw = bb.bitcast(raw, storage_type(dst)) if raw.type != storage_type(dst) else raw
    return from_storage(bb, dst, raw)


_ = (I64,)
