"""Literal parsing's bulk steps (hlo_parser.cc's CheckParsedValueIsInRange and
SetValueInLiteralHelper): the values of one dense array are range-checked and converted
together, and well-formed dense arrays and scalars of plain numbers take fast paths that
skip the token machinery (anything unusual returns None and the exact parser decides).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..ir.dtypes import DType
from ..ir.literal import _component, _finfo, _FloatInfo, _human, _pt_name
from ..ir.shape import ArrayShape


_QUIET_F64 = 1 << 51


def _six(v: float) -> str:
    """absl::StrCat(double): %g with six significant digits."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    return "%.6g" % v


# ---------------------------------------------------------------------------
# Parser

class _Fatal(Exception):
    def __init__(self, seq, offset, message):
        super().__init__(message)
        self.seq, self.offset, self.message = seq, offset, message


class _Dense:
    """Values seen while parsing one dense array, checked and converted in bulk."""

    __slots__ = ("vals", "offs", "seqs", "nans", "fill", "fill_at")

    def __init__(self):
        self.vals, self.offs, self.seqs = [], [], []
        self.nans = {}          # index -> (sign, payload) of NaN decimals / complex parts
        self.fill = None        # data of the last `...`
        self.fill_at = 0        # writes made before the last `...` (overwritten by it)


# ---------------------------------------------------------------------------
# Bulk range checks and conversion (CheckParsedValueIsInRange, SetValueInLiteralHelper)

def _first(mask: np.ndarray, limit: int):
    idx = np.flatnonzero(mask[:limit])
    return int(idx[0]) if idx.size else None


def _check(d: _Dense, dt: DType, shape: ArrayShape, until=None):
    """The first (seq, offset, message) range/payload error among the recorded values."""
    n = len(d.vals)
    if until is not None:
        while n and d.seqs[n - 1] > until:
            n -= 1
    if n == 0:
        return None
    kind = dt.kind
    name = _pt_name(dt)
    if kind in ("int", "uint"):
        arr = np.array(d.vals[:n], dtype=np.int64)
        if kind == "int":
            lo, hi = -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
            i = _first((arr < lo) | (arr > hi), n)
        else:
            lo, hi = 0, (1 << dt.bits) - 1
            i = _first(arr.view(np.uint64) > np.uint64(hi), n)
        if i is None:
            return None
        return (d.seqs[i], d.offs[i], f"value {int(arr[i])} is out of range for literal's "
                f"primitive type {name} namely [{lo}, {hi}].")
    if kind == "float":
        info = _finfo(dt)
        x = np.array(d.vals[:n], dtype=np.float64)
        with np.errstate(all="ignore"):
            back = _to_float(x, dt).astype(np.float64)
            use = np.where(~np.isfinite(x) | np.isfinite(back), back, x)
            bad = np.isfinite(use) & ((use > info.max) | (use < info.lowest))
        i = _first(bad, n)
        range_err = None
        if i is not None:
            range_err = (d.seqs[i], d.offs[i], f"value {_six(float(use[i]))} is out of range for "
                         f"literal's primitive type {name} namely [{_six(info.lowest)}, "
                         f"{_six(info.max)}].")
        nan_err = _check_nans(d, dt, info, shape, n)
        return min((e for e in (range_err, nan_err) if e is not None), default=None)
    if kind == "complex":
        info = _finfo(_component(dt))
        for i in range(n):
            for part, v in zip(("real", "imaginary"), d.vals[i]):
                if math.isfinite(v) and (v < info.lowest or v > info.max):
                    err = (d.seqs[i], d.offs[i], f"{part} part {_six(v)} is out of range for "
                           f"literal's primitive type {name}, namely [{_six(info.lowest)}, "
                           f"{_six(info.max)}].")
                    nan_err = _check_nans(d, dt, info, shape, i)
                    return min(e for e in (err, nan_err) if e is not None)
        return _check_nans(d, dt, info, shape, n)
    return None


def _check_nans(d: _Dense, dt, info: _FloatInfo, shape, n):
    """NaN payload errors (only the real part of a complex value is checked, as in XLA)."""
    for j in sorted(d.nans):
        if j >= n:
            break
        nan = d.nans[j]
        if dt.kind == "complex":
            if nan[0] is None:
                continue
            payload = nan[0][1]
        else:
            payload = nan[1]
        msg = _payload_error(payload, dt, info, shape, j)
        if msg is not None:
            return (d.seqs[j] + 0.75, d.offs[j], msg)
    return None


def _payload_error(payload, dt, info: _FloatInfo, shape, index):
    head = (f"tries to set NaN payload 0x{payload:x} to a literal in shape {_human(shape)} "
            f"at linear index {index}, but ")
    if info.payload_bits:
        if payload != _QUIET_F64 and payload > info.payload_mask:
            return head + f"the NaN payload is out of range (0x{info.payload_mask:x})"
        return None
    if payload != _QUIET_F64:
        return head + f"{dt.name} does not support payloads"
    return None


def _nan_bits(info: _FloatInfo, sign: bool, payload: int) -> int:
    """NanWithSignAndPayload<T> for a payload given as a double's NaN payload."""
    if payload == _QUIET_F64:
        payload = info.quiet
    return info.nan_base | (info.sign_bit if sign else 0) | payload


def _to_float(x: np.ndarray, dt: DType) -> np.ndarray:
    """static_cast<T>(double) for every float type, the way XLA's C++ does it."""
    with np.errstate(all="ignore"):
        return _to_float_raw(x, dt)


def _to_float_raw(x: np.ndarray, dt: DType) -> np.ndarray:
    name = dt.name
    if name == "f64":
        return x.copy()
    if name == "f32":
        return x.astype(np.float32)
    if name in ("f16", "bf16"):          # Eigen converts double -> float -> half
        return x.astype(np.float32).astype(dt.np)
    return _round_narrow(x, dt)          # ml_dtypes float8/float4: direct from double


def _round_narrow(x: np.ndarray, dt: DType) -> np.ndarray:
    """Round-to-nearest-even double -> float8/float4 (NumPy's cast goes through float and
    double-rounds). Overflow, NaN and inf keep ml_dtypes' own behaviour."""
    info = _finfo(dt)
    out = x.astype(dt.np)                # right for non-finite values and as a fallback
    a = np.abs(x)
    finite = np.isfinite(x)
    _, e = np.frexp(np.where(finite & (a > 0), a, 1.0))
    e = np.maximum(e - 1, info.minexp)
    r = np.rint(a / np.ldexp(1.0, e - info.nmant)) * np.ldexp(1.0, e - info.nmant)
    ok = finite & (r <= info.max)
    if dt.name == "f8e8m0fnu":
        # ml_dtypes: (0, 2^-127] -> 2^-127 and (2^-127, 2^-126) -> 2^-126 (no zero, no RNE)
        tiny = finite & (x > 0) & (x < 2.0 ** -126)
        r = np.where(tiny, np.where(x > 2.0 ** -127, 2.0 ** -126, 2.0 ** -127), r)
        ok &= r > 0
    out[ok] = np.copysign(r, x)[ok].astype(np.float32).astype(dt.np)
    over = finite & (r > info.max)
    if over.any():                       # NaN, inf or saturation, as ml_dtypes overflows
        out[over] = (np.sign(x[over]) * info.max * 4).astype(np.float32).astype(dt.np)
    return out


def _build(d: _Dense, dt: DType, dims, size) -> np.ndarray:
    """The final array: zeros or the last `...` fill, then the writes made after it."""
    base = d.fill.copy() if d.fill is not None else np.zeros(size, dt.np)
    lo = d.fill_at
    vals = d.vals[lo:]
    if len(vals):
        base[lo:lo + len(vals)] = _convert(vals, d, lo, dt)
    return base.reshape(dims)


def _convert(vals, d: _Dense, lo: int, dt: DType) -> np.ndarray:
    kind = dt.kind
    if kind == "pred":
        return np.array(vals, dtype=np.int64) != 0
    if kind in ("int", "uint"):
        arr = np.array(vals, dtype=np.int64)
        if kind == "uint":
            arr = arr.view(np.uint64)
        return arr.astype(dt.np)
    if kind == "float":
        out = _to_float(np.array(vals, dtype=np.float64), dt)
        info = _finfo(dt)
        bits = out.view(info.ubits)
        for j, (sign, payload) in d.nans.items():
            if j >= lo:
                if info.payload_bits:
                    bits[j - lo] = _nan_bits(info, sign, payload)
                else:
                    with np.errstate(all="ignore"):
                        nan = np.array([-math.nan if sign else math.nan]).astype(dt.np)
                    out[j - lo] = nan[0]
        return out
    # complex
    comp = _component(dt)
    info = _finfo(comp)
    arr = np.array(vals, dtype=np.float64).reshape(-1, 2)
    with np.errstate(all="ignore"):
        parts = arr.astype(comp.np)
    bits = parts.view(info.ubits)
    for j, (re_nan, _im_nan) in d.nans.items():
        if j >= lo and re_nan is not None:
            # XLA's handle_nan(real, &imag) (sic): a NaN real part also sets the imaginary one;
            # a NaN imaginary part alone is a plain static_cast.
            bits[j - lo, :] = _nan_bits(info, re_nan[0], re_nan[1])
    return parts.reshape(-1).view(dt.np)


# A fast path for well-formed dense arrays of plain numbers: braces are walked one by one,
# the numbers between them are split off and converted in bulk. Anything unusual (elision,
# NaN payloads, `//` comments, odd tokens, a count or range error ...) returns None and the
# exact parser above runs instead.
_FAST_CHARS = {
    "int": re.compile(r"[-0-9 \t\n\r,]*"),
    "pred": re.compile(r"[-0-9truefals \t\n\r,]*"),
    "float": re.compile(r"[-+0-9.eEinfa \t\n\r,]*"),
}
_BRACE_RE = re.compile(r"[{}]")
_COMMENT_RE = re.compile(r"/\*[^*]*\*/")


def _fast_dense(text: str, pos: int, shape: ArrayShape):
    dt, dims = shape.dtype, shape.dims
    kind = "int" if dt.kind in ("int", "uint") else dt.kind
    chars = _FAST_CHARS.get(kind)
    if chars is None:
        return None
    rank = len(dims)
    seen = [0] * rank
    nest = 0
    toks: list[str] = []
    prev = pos
    end = None
    for m in _BRACE_RE.finditer(text, pos):
        b = m.start()
        if b > prev:
            piece = text[prev:b]
            if "/*" in piece:
                piece = _COMMENT_RE.sub(" ", piece)
            if not chars.fullmatch(piece):
                return None
            got = piece.replace(",", " ").split()
            if got:
                if nest != rank:
                    return None
                seen[-1] += len(got)
                if seen[-1] > dims[-1]:
                    return None
                toks.extend(got)
        if text[b] == "{":
            nest += 1
            if nest > rank:
                return None
            if nest > 1:
                seen[nest - 2] += 1
                if seen[nest - 2] > dims[nest - 2]:
                    return None
        else:
            nest -= 1
            if seen[nest] != dims[nest]:
                return None
            seen[nest] = 0
            if nest == 0:
                end = b + 1
                break
        prev = b + 1
    if end is None or not _plain_tokens(toks, kind):
        return None
    d = _Dense()
    n = len(toks)
    d.offs = d.seqs = range(n)
    try:
        _fast_values(d, kind, toks)
    except ValueError:          # a token Python's float()/int() rejects
        return None
    if _check(d, dt, shape) is not None:
        return None
    return _build(d, dt, dims, math.prod(dims)), end


def _plain_tokens(toks: list[str], kind: str) -> bool:
    """No `.5` or stray `+` (not numbers to XLA) and no 19+ digit integer (wraps via u64)."""
    if not toks or max(map(len, toks)) <= 18:
        long_ints = False
    else:
        long_ints = any(len(t) > 18 and t.lstrip("-").isdigit() for t in toks)
    if long_ints:
        return False
    if kind != "float":
        return True
    joined = " ".join(toks)
    if joined.startswith(".") or " ." in joined:
        return False
    plus = joined.count("+")
    return plus == 0 or plus == joined.count("e+") + joined.count("E+")


def _fast_values(d: _Dense, kind: str, toks: list[str]):
    if kind == "float":
        x = np.array(list(map(float, toks)), dtype=np.float64)
        for i in np.flatnonzero((x == 0) & np.signbit(x)).tolist():
            if not any(c in toks[i] for c in ".eE"):
                x[i] = 0.0              # `-0` is an integer token: int64 0 -> +0.0
        for i in np.flatnonzero(np.isinf(x)).tolist():
            if "inf" not in toks[i]:
                raise ValueError("decimal overflows double")   # XLA: out of range for double
        for i in np.flatnonzero(np.isnan(x)).tolist():
            d.nans[i] = (bool(np.signbit(x[i])), _QUIET_F64)
        d.vals = x
    elif kind == "pred":
        d.vals = [1 if t == "true" else 0 if t == "false" else int(t) for t in toks]
    else:
        d.vals = np.array(list(map(int, toks)), dtype=np.int64)


# Scalars are most constants in a module: plain ones skip the token machinery.
_SCALAR_RE = re.compile(r"[ \t\n\r]*(?:(?P<int>-?\d{1,18})|(?P<dec>-?(?:\d+\.\d*|\d+(?=[eE]))"
                        r"(?:[eE][+-]?\d+)?|-\.\d+(?:[eE][+-]?\d+)?)|(?P<word>true|false|-?inf))"
                        r"[ \t\n\r]*")
_F32_OVERFLOW = 3.4028235677973366e38       # doubles at or above this round to inf in f32


def _fast_scalar(text: str, shape: ArrayShape):
    m = _SCALAR_RE.fullmatch(text)
    if m is None:
        return None
    dt, kind = shape.dtype, shape.dtype.kind
    tok = m.group(m.lastgroup)
    if m.lastgroup == "word":
        if tok in ("true", "false"):
            return np.array(tok == "true") if kind == "pred" else None
        x = -math.inf if tok[0] == "-" else math.inf
    elif m.lastgroup == "int":
        v = int(tok)
        if kind == "pred":
            return np.array(v != 0)
        if kind in ("int", "uint"):
            lo = -(1 << (dt.bits - 1)) if kind == "int" else 0
            hi = (1 << (dt.bits - (kind == "int"))) - 1
            return np.array(v, dtype=dt.np) if lo <= v <= hi else None
        x = float(v)
    else:
        x = float(tok)
        if math.isinf(x):
            return None
    if kind != "float" or dt.name not in ("f32", "f64", "f16", "bf16"):
        return None
    if dt.name == "f64":
        return np.array(x)
    if math.isfinite(x) and abs(x) >= _F32_OVERFLOW:
        return None
    if dt.name != "f32" and math.isfinite(x) and abs(x) > _finfo(dt).max:
        return None                     # may overflow f16/bf16: the exact path decides
    return np.array(np.float32(x), dtype=dt.np)
