"""HLO's conversions as pure NumPy kernels: convert, bitcast-convert, bitcast,
stochastic-convert and reduce-precision.

convert follows xla/service/elemental_ir_emitter.cc: integers wrap (sign- or
zero-extended from the source), float->int saturates with NaN -> 0, x->pred is x != 0,
bf16 is reached through f32. reduce-precision is the emitter's EmitReducePrecisionIR
(quiet_nans=false) on the operand's own bits. stochastic-convert is
StochasticConvertDecomposer's expansion. Bit-level
conversions go through `raw_bits`/`from_bits`, so sub-byte types work too.
"""
from __future__ import annotations

import numpy as np

from ..ir.dtypes import DTYPES, DType
from .numerics import (Unsupported, bit_mask, compose, contiguous, from_bits, int_range,
                       narrow, raw_bits, require_kind, widen, wrap)

_U64 = np.uint64
_I64 = np.int64


def convert(x, src: DType, dst: DType) -> np.ndarray:
    """HLO convert: ints wrap (sign- or zero-extended from src), float->int saturates
    with NaN -> 0, anything->pred is `!= 0`, bf16 is reached through f32 as XLA does,
    real->complex gets a zero imaginary part; complex->real is not an HLO conversion."""
    x = np.asarray(x)
    if src is dst:
        return x.copy()
    if src.kind == "complex":
        if dst.kind != "complex":
            raise Unsupported(f"conversion from {src.name} to {dst.name}")
        return x.astype(dst.np)
    if dst.kind == "pred":
        return widen(x, src) != 0
    if dst.kind == "complex":
        comp = DTYPES["f32" if dst.name == "c64" else "f64"]
        re = convert(x, src, comp)
        return compose(re, np.zeros_like(re), dst.np)
    if src.kind == "pred":
        x, src = x.astype(np.uint8), DTYPES["u8"]
    if dst.kind in ("int", "uint"):
        if src.kind == "float":
            return _float_to_int(widen(x, src), dst)
        return wrap(widen(x, src), dst)
    # dst is a float
    if src.kind in ("int", "uint"):
        w = widen(x, src)
        if dst.name == "f16":
            return w.astype(np.float64).astype(np.float16)
        if dst.name in ("f32", "f64"):
            return w.astype(dst.np)
        return w.astype(np.float32).astype(dst.np)   # SIToFP to f32, then round
    w = widen(x, src)
    if dst.name == "bf16" and w.dtype == np.float64:
        w = w.astype(np.float32)                     # XLA: FPCast to f32, then to bf16
    return w.astype(dst.np)


def _float_to_int(w, dst: DType) -> np.ndarray:
    lo, hi = int_range(dst)
    w = w.astype(np.float64)
    bad = np.isnan(w) | (w <= lo) | (w >= hi)
    t = np.trunc(np.where(bad, 0.0, w))
    v = t.astype(_U64 if dst.kind == "uint" else _I64)
    big = _U64(hi) if dst.kind == "uint" else _I64(hi)
    small = _U64(lo) if dst.kind == "uint" else _I64(lo)
    v = np.where(w >= hi, big, np.where(w <= lo, small, v))
    v = np.where(np.isnan(w), v.dtype.type(0), v)
    return wrap(v, dst)


def bitcast_convert(x, src: DType, dst: DType) -> np.ndarray:
    """Reinterpret bits; a wider source gains a minor dimension of narrower pieces
    (least significant first, little endian) and a narrower source loses one."""
    x = np.asarray(x)
    if src is dst:
        return x.copy()
    if "complex" in (src.kind, dst.kind) or "pred" in (src.kind, dst.kind):
        raise Unsupported(f"bitcast-convert from {src.name} to {dst.name}")
    r = raw_bits(x, src)
    if src.bits == dst.bits:
        return from_bits(r, dst)
    if src.bits > dst.bits:
        n = src.bits // dst.bits
        parts = [(r >> _U64(i * dst.bits)) & _U64(bit_mask(dst.bits)) for i in range(n)]
        return from_bits(np.stack(parts, axis=-1), dst)
    n = dst.bits // src.bits
    if x.ndim == 0 or x.shape[-1] != n:
        raise Unsupported(f"bitcast-convert from {src.name}{list(x.shape)} to {dst.name}")
    acc = np.zeros(x.shape[:-1], _U64)
    for i in range(n):
        acc = acc | (r[..., i] << _U64(i * src.bits))
    return from_bits(acc, dst)


def bitcast(x, src_shape, dst_shape) -> np.ndarray:
    """XLA bitcast: the same bytes read under the result's shape and layout."""
    x = np.asarray(x)
    src_m2m = _m2m(src_shape)
    phys = contiguous(np.transpose(x, src_m2m[::-1])).reshape(-1)
    src, dst = src_shape.dtype, dst_shape.dtype
    if src is dst and x.size != dst_shape.size:
        raise Unsupported(f"bitcast from {src_shape} to {dst_shape} (different sizes)")
    if src is not dst:
        if src.np.itemsize * x.size != dst.np.itemsize * dst_shape.size or \
                src.bits != 8 * src.np.itemsize or dst.bits != 8 * dst.np.itemsize:
            raise Unsupported(f"bitcast from {src_shape} to {dst_shape}")
        phys = phys.view(dst.np)
    dst_m2m = _m2m(dst_shape)
    major = dst_m2m[::-1]
    y = phys.reshape([dst_shape.dims[d] for d in major])
    return contiguous(np.transpose(y, np.argsort(major)))


def _m2m(shape) -> tuple[int, ...]:
    if shape.layout is not None and len(shape.layout.minor_to_major) == shape.rank:
        return tuple(shape.layout.minor_to_major)
    return tuple(range(shape.rank - 1, -1, -1))


def stochastic_convert(x, rnd, src: DType, rdt: DType, dst: DType) -> np.ndarray:
    """StochasticConvertDecomposer: |x| rounds up when random < frac(|x|) * 2**bits(random)
    (unsigned compare); the sign is put back, and x <= INT_MIN / x >= INT_MAX saturate.
    The steps run in x's type, except that f16's fraction is scaled in f32 as XLA does."""
    if dst.kind != "int" or src.kind != "float" or rdt.kind != "uint":
        raise Unsupported(f"stochastic-convert from {src.name} to {dst.name}")
    w = widen(x, src)
    neg = np.sign(w) < 0
    a = np.abs(w)
    t = np.floor(a)
    scaled_in = DTYPES["f32"] if src.name == "f16" else src
    fixed = narrow(widen(narrow(a - t, src), src) * 2.0 ** rdt.bits, scaled_in)
    up = widen(rnd, rdt) < widen(convert(fixed, scaled_in, rdt), rdt)
    ti = widen(convert(narrow(t, src), src, dst), dst)
    ti = np.where(up, ti + 1, ti)
    res = np.where(neg, -ti, ti)
    lo, hi = int_range(dst)
    res = np.where(w <= lo, _I64(lo), np.where(w >= hi, _I64(hi), res))
    return wrap(res, dst)


_IEEE_LAYOUT = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52}   # mantissa bits


def reduce_precision(dt: DType, x, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """EmitReducePrecisionIR (quiet_nans=false) on the bits of f16/bf16/f32/f64 as XLA:CPU
    runs it (so f16 keeps its denormals when the exponent is not reduced); other narrow
    floats go through f32 as HloEvaluator does. NaN inputs come back unchanged, also with
    mantissa_bits == 0 (XLA:CPU in jaxlib 0.10.2; the older emitter returned +inf)."""
    require_kind(dt, "float")
    if dt.name in _IEEE_LAYOUT:
        own, w = dt, np.asarray(x)
    else:
        own = DTYPES["f32"]
        w = widen(x, dt)
    nbits = own.bits
    src_m = _IEEE_LAYOUT[own.name]
    src_e = nbits - 1 - src_m
    v = raw_bits(w, own)
    if mantissa_bits < src_m:
        last = 1 << (src_m - mantissa_bits)
        bias = (v & _U64(last)) >> _U64(src_m - mantissa_bits)
        v = (v + bias + _U64((last >> 1) - 1)) & _U64(~(last - 1) & bit_mask(nbits))
    if exponent_bits < src_e:
        sign_mask = 1 << (nbits - 1)
        exp_mask = bit_mask(src_e) << src_m
        bias_src = (1 << (src_e - 1)) - 1
        bias_dst = (1 << (exponent_bits - 1)) - 1
        x_exp = v & _U64(exp_mask)
        signed_zero = v & _U64(sign_mask)
        v = np.where(x_exp > _U64((bias_src + bias_dst) << src_m), signed_zero | _U64(exp_mask), v)
        v = np.where(x_exp <= _U64((bias_src - bias_dst) << src_m), signed_zero, v)
    return narrow(np.where(np.isnan(w.astype(np.float64)), w, from_bits(v, own)), dt)
