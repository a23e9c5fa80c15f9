"""Element-type plumbing for the interpreter's kernels: widening narrow types for
computation and narrowing/wrapping results back (sub-byte ints, f16/bf16/f8/f4), raw bit
views, integer ranges, and `Unsupported` for an element type an op does not take.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import DType

_U64 = np.uint64
_I64 = np.int64
_ERF = np.frompyfunc(math.erf, 1, 1)
_NO_SIGN_BIT = frozenset({"f8e8m0fnu"})     # unsigned float formats


class Unsupported(Exception):
    """The op is not defined for this element type (XLA's shape inference rejects it)."""


# ---------------------------------------------------------------------------
# Type plumbing

def is_narrow_float(dt: DType) -> bool:
    return dt.kind == "float" and dt.name not in ("f32", "f64")


def widen(x, dt: DType) -> np.ndarray:
    """The value in XLA's compute type: int64/uint64, f32 for narrow floats, else itself."""
    x = np.asarray(x)
    if dt.kind == "int":
        return x.astype(_I64)
    if dt.kind == "uint":
        return x.astype(_U64)
    if is_narrow_float(dt):
        return x.astype(np.float32)
    return x


def narrow(y, dt: DType) -> np.ndarray:
    """Back to dt's storage: integers wrap to dt.bits, floats round to nearest even."""
    y = np.asarray(y)
    if dt.kind in ("int", "uint"):
        return wrap(y, dt)
    if dt.kind == "pred":
        return y.astype(np.bool_)
    return y.astype(dt.np)


def bit_mask(bits: int) -> int:
    return (1 << bits) - 1


def wrap(y, dt: DType) -> np.ndarray:
    """Integer values (int64/uint64, any value mod 2**64) wrapped to dt's width."""
    u = np.asarray(y).astype(_U64)
    bits = dt.bits
    if bits < 64:
        u = u & _U64(bit_mask(bits))
    if dt.kind == "uint":
        return u.astype(dt.np)
    s = u.astype(_I64)
    if bits < 64:
        s = np.where(s >= (1 << (bits - 1)), s - (1 << bits), s)
    return s.astype(dt.np)


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def contiguous(x) -> np.ndarray:
    """A C-contiguous array of the same shape (np.ascontiguousarray makes 0-d arrays 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()


def raw_bits(x, dt: DType) -> np.ndarray:
    """The element's bit pattern as uint64 (low dt.bits bits)."""
    x = contiguous(x)
    if dt.kind == "pred":
        return x.astype(_U64)
    u = x.view(_UINT_OF_SIZE[x.dtype.itemsize]).astype(_U64)
    return u & _U64(bit_mask(dt.bits)) if dt.bits < 64 else u


def from_bits(u, dt: DType) -> np.ndarray:
    """Storage array of dt whose bit patterns are the low dt.bits bits of `u`."""
    u = np.asarray(u).astype(_U64)
    if dt.kind in ("int", "uint"):
        return wrap(u, dt)
    if dt.kind == "pred":
        return u != 0
    if dt.bits < 64:
        u = u & _U64(bit_mask(dt.bits))
    return contiguous(u.astype(_UINT_OF_SIZE[dt.np.itemsize])).view(dt.np)


def int_range(dt: DType) -> tuple[int, int]:
    if dt.kind == "uint":
        return 0, bit_mask(dt.bits)
    return -(1 << (dt.bits - 1)), bit_mask(dt.bits - 1)


def require_kind(dt: DType, *kinds: str) -> None:
    if dt.kind not in kinds:
        raise Unsupported(f"element type {dt.name}")


# ---------------------------------------------------------------------------
# libm: f32 transcendentals through f64 with one rounding

def libm(fn):
    """`fn` as a correctly rounded f32 libm function (glibc's sinf, expf ... which XLA:CPU
    and HloEvaluator call): float32 arguments are computed in float64 and rounded once;
    NumPy's own float32 loops are SIMD approximations several ULP off. Other types are
    passed through."""
    def wrapped(*args):
        if any(np.asarray(a).dtype == np.float32 for a in args):
            return fn(*(np.asarray(a, dtype=np.float64) for a in args)).astype(np.float32)
        return fn(*args)
    wrapped.__name__ = getattr(fn, "__name__", "libm")
    return wrapped


def compose(re, im, ctype) -> np.ndarray:
    out = np.empty(np.broadcast(re, im).shape, dtype=ctype)
    out.real = re
    out.imag = im
    return out


_EXP = libm(np.exp)
_EXPM1 = libm(np.expm1)
_LOG = libm(np.log)
_LOG1P = libm(np.log1p)
_CBRT = libm(np.cbrt)
_SIN = libm(np.sin)
_COS = libm(np.cos)
_TAN = libm(np.tan)
_TANH = libm(np.tanh)
_ARCCOS = libm(np.arccos)
_ARCCOSH = libm(np.arccosh)
_ARCSIN = libm(np.arcsin)
_ARCSINH = libm(np.arcsinh)
_ARCTAN = libm(np.arctan)
_ARCTANH = libm(np.arctanh)
_SINH = libm(np.sinh)
_COSH = libm(np.cosh)
_POWER = libm(np.power)
_ARCTAN2 = libm(np.arctan2)
