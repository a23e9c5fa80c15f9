"""Element-type plumbing for the interpreter's kernels: widening narrow types for
computation and narrowing/wrapping results back (sub-byte ints, f16/bf16/f8/f4), raw bit
views, integer ranges, and `Unsupported` for an element type an op does not take.
"""
from __future__ import annotations

import math

import numpy as np

from ..ir.dtypes import DType
from . import libm as _libm

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

def libm(name: str):
    """libm's scalar `name` (hloc.interp.libm) as HloEvaluator calls it, on every machine
    the same: float64 arguments directly; float32 ones computed in float64 and rounded
    once (glibc's sinf, expf ... are correctly rounded; NumPy's own float32 loops are SIMD
    approximations several ULP off, and its float64 ones differ by CPU). Complex
    arguments go to NumPy's complex ufunc (scalar C loops, the same on every machine)."""
    fn = _libm.function(name)
    complex_fn = getattr(np, _NUMPY_NAMES.get(name, name))

    def wrapped(*args):
        arrays = [np.asarray(a) for a in args]
        if any(a.dtype.kind == "c" for a in arrays):
            return complex_fn(*arrays)
        y = fn(*arrays)
        if any(a.dtype == np.float32 for a in arrays):
            return y.astype(np.float32)
        return y
    wrapped.__name__ = name
    return wrapped


_NUMPY_NAMES = {"pow": "power", "atan2": "arctan2", "asin": "arcsin", "acos": "arccos",
                "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh"}


def compose(re, im, ctype) -> np.ndarray:
    out = np.empty(np.broadcast(re, im).shape, dtype=ctype)
    out.real = re
    out.imag = im
    return out


_EXP = libm("exp")
_EXPM1 = libm("expm1")
_LOG = libm("log")
_LOG1P = libm("log1p")
_LIBM_CBRT = libm("cbrt")
_SIN = libm("sin")
_COS = libm("cos")
_TAN = libm("tan")
_TANH = libm("tanh")
_ARCCOS = libm("acos")
_ARCCOSH = libm("acosh")
_ARCSIN = libm("asin")
_ARCSINH = libm("asinh")
_ARCTAN = libm("atan")
_ARCTANH = libm("atanh")
_SINH = libm("sinh")
_COSH = libm("cosh")
_POWER = libm("pow")
_ARCTAN2 = libm("atan2")
