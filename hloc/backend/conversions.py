"""Element generators of convert and bitcast-convert (hloc.interp.conversions' rules).

convert: integers wrap (sign- or zero-extended from the source), float->int saturates
with NaN -> 0 (`llvm.fptosi.sat`, no poison), x->pred is x != 0, bf16 is reached through
f32, f64->f16 is rounded once (round-to-odd through f32), real->complex gets a zero
imaginary part. bitcast-convert between types of one width reinterprets the storage bits.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from .loops import Index, i64
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


def _bits(b, dt, v):
    """The element's storage bits as an integer of dt's width."""
    raw = to_storage(b, dt, v)
    ity = ir.IntType(dt.bits)
    if isinstance(raw.type, ir.IntType):
        return raw if raw.type.width == dt.bits else b.trunc(raw, ity)
    return b.bitcast(raw, ity)


def _from_bits(b, dt, bits):
    st = storage_type(dt)
    if isinstance(st, ir.IntType) and st.width != bits.type.width:
        bits = b.sext(bits, st) if dt.kind == "int" else b.zext(bits, st)
    return from_storage(b, dt, bits if bits.type == st else b.bitcast(bits, st))


@emits("stochastic-convert")
def _emit_stochastic_convert(kb, inst, ops, index):
    """StochasticConvertDecomposer, as the interpreter (hloc.interp.conversions): |x| rounds
    up when random < frac(|x|) * 2**bits(random) (unsigned); the sign is put back and
    x <= INT_MIN / x >= INT_MAX saturate. Steps in x's type, f16's fraction scaled in f32."""
    from ..ir.dtypes import DTYPES
    from .types import round_narrow
    b = kb.b
    src, rdt, dst = inst.operands[0].shape.dtype, inst.operands[1].shape.dtype, inst.shape.dtype
    if dst.kind != "int" or src.kind != "float" or rdt.kind != "uint":
        raise unsupported(inst, f"stochastic-convert from {src.name} to {dst.name}")
    w, rnd = ops[0](index), ops[1](index)
    t = w.type
    k = lambda v: ir.Constant(t, v)   # noqa: E731
    neg = b.fcmp_ordered("<", w, k(0.0))
    a = _fabs(kb, w)
    floor = kb.mcx.intrinsic(f"llvm.floor.{'f32' if t == F32 else 'f64'}", t, [t])
    tr = b.call(floor, [a])
    frac = round_narrow(b, src, b.fsub(a, tr))
    scaled = b.fmul(frac, k(float(2 ** rdt.bits)))
    if src.name != "f16":
        scaled = round_narrow(b, src, scaled)
    up = b.icmp_unsigned("<", rnd, convert_value(kb, inst, scaled, DTYPES["f32" if t == F32 else "f64"], rdt))
    ti = convert_value(kb, inst, tr, DTYPES["f32" if t == F32 else "f64"], dst)
    one = ir.Constant(ti.type, 1)
    ti = b.select(up, b.add(ti, one), ti)
    res = b.select(neg, b.neg(ti), ti)
    lo, hi = -(1 << (dst.bits - 1)), (1 << (dst.bits - 1)) - 1
    res = b.select(b.fcmp_ordered("<=", w, k(float(lo))), ir.Constant(ti.type, lo), res)
    return b.select(b.fcmp_ordered(">=", w, k(float(hi))), ir.Constant(ti.type, hi), res)


@emits("bitcast-convert")
def _emit_bitcast_convert(kb, inst, ops, index):
    """Same width: the bits reinterpreted. A wider source splits into a new minor
    dimension of narrower pieces (least significant first); a narrower one joins."""
    src, dst = inst.operands[0].shape.dtype, inst.shape.dtype
    if "complex" in (src.kind, dst.kind) or "pred" in (src.kind, dst.kind) or \
            (src.bits != dst.bits and (src.bits < 8 or dst.bits < 8)):
        raise unsupported(inst, f"bitcast-convert from {src.name} to {dst.name} in the "
                                "compiled back end")
    b = kb.b
    op = inst.operands[0].shape
    if src.bits == dst.bits:
        return _from_bits(b, dst, _bits(b, src, ops[0](index)))
    if src.bits > dst.bits:        # out[..., k] = piece k of op[...]
        whole = _bits(b, src, ops[0](Index(b, op, multi=index.multi[:-1])))
        k = index.multi[-1]
        shift = b.mul(b.zext(b.trunc(k, ir.IntType(32)), whole.type) if whole.type.width > 32
                      else b.trunc(k, whole.type), ir.Constant(whole.type, dst.bits))
        return _from_bits(b, dst, b.trunc(b.lshr(whole, shift), ir.IntType(dst.bits)))
    n = dst.bits // src.bits       # out[...] joins op[..., 0..n-1]
    wide = ir.IntType(dst.bits)
    acc = ir.Constant(wide, 0)
    for k in range(n):
        piece = _bits(b, src, ops[0](Index(b, op, multi=list(index.multi) + [i64(k)])))
        acc = b.or_(acc, b.shl(b.zext(piece, wide), ir.Constant(wide, k * src.bits)))
    return _from_bits(b, dst, acc)


_MANTISSA = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}


@emits("reduce-precision")
def _emit_reduce_precision(kb, inst, ops, index):
    """EmitReducePrecisionIR (quiet_nans=false) on the element's own bits."""
    dt = inst.shape.dtype
    if dt.name not in _MANTISSA:
        raise unsupported(inst, f"reduce-precision on {dt.name} in the compiled back end")
    b = kb.b
    x = ops[0](index)
    v = _bits(b, dt, x)
    t = v.type
    c = lambda n: ir.Constant(t, n)   # noqa: E731
    nbits, src_m = dt.bits, _MANTISSA[dt.name]
    src_e = nbits - 1 - src_m
    eb, mb = inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"]
    if mb < src_m:
        last = 1 << (src_m - mb)
        bias = b.lshr(b.and_(v, c(last)), c(src_m - mb))
        v = b.and_(b.add(b.add(v, bias), c((last >> 1) - 1)), c(~(last - 1) & ((1 << nbits) - 1)))
    if eb < src_e:
        sign_mask, exp_mask = 1 << (nbits - 1), ((1 << src_e) - 1) << src_m
        bias_src, bias_dst = (1 << (src_e - 1)) - 1, (1 << (eb - 1)) - 1
        x_exp = b.and_(v, c(exp_mask))
        signed_zero = b.and_(v, c(sign_mask))
        v = b.select(b.icmp_unsigned(">", x_exp, c((bias_src + bias_dst) << src_m)),
                     b.or_(signed_zero, c(exp_mask)), v)
        v = b.select(b.icmp_unsigned("<=", x_exp, c((bias_src - bias_dst) << src_m)), signed_zero, v)
    y = _from_bits(b, dt, v)
    return b.select(b.fcmp_unordered("uno", x, x), x, y)


@emits("get-dimension-size")
def _emit_get_dimension_size(kb, inst, ops, index):
    n = inst.operands[0].shape.dims[inst.attrs["dimensions"][0]]
    return ir.Constant(ir.IntType(inst.shape.dtype.bits), n)


_ = (I64,)
