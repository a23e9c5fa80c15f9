"""Result comparison with the semantics of XLA's literal_comparison::Near.

`near(expected, actual, spec)` compares two values (NumPy arrays or nested tuples of
them) the way run_hlo_module compares its test and reference runs: shapes (element type
and dimensions) must match; pred and integers compare exactly; floats and complex
(real and imaginary parts separately) pass when bitwise equal, when both are NaN, or
unless both |actual - expected| > abs bound and |actual - expected| / |expected| > rel
bound; a NaN against a non-NaN and an infinity against anything else are infinite
errors. The result carries the mismatch count and XLA's message ("Mismatch count N
(P%) in shape f32[...] (E elements), abs bound 0.001, rel bound 0.001", the top five
mismatches by relative error and, from 64 elements on, the error histograms).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .ir.dtypes import DType, from_numpy

__all__ = ["ErrorSpec", "CompareResult", "near", "equal"]

_TOP = 5
_ABS_VALUE_BOUNDS = (0.0, 0.0001, 0.001, 0.01, 0.1, 1.0, math.inf)
_ERROR_BOUNDS = (0.0001, 0.001, 0.01, 0.1, 1.0)
_FP_WIDTH = {"bf16": "%10.4g", "f16": "%11.5g", "f32": "%15.9g", "f64": "%24.17g"}


@dataclass(frozen=True)
class ErrorSpec:
    abs: float = 1e-3
    rel: float = 1e-3


@dataclass
class CompareResult:
    """Outcome of a comparison: `ok`, the number of mismatching elements, and the text."""
    ok: bool = True
    mismatches: int = 0
    elements: int = 0
    messages: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return "\n".join(self.messages)

    def __bool__(self) -> bool:
        return self.ok

    def _fail(self, text: str, count: int = 0) -> None:
        self.ok = False
        self.mismatches += count
        self.messages.append(text)


def _contig(x) -> np.ndarray:
    x = np.asarray(x)
    return x if x.flags.c_contiguous else x.copy()   # keeps 0-d arrays 0-d


def _dtype_of(arr: np.ndarray) -> DType | None:
    try:
        return from_numpy(arr.dtype)
    except KeyError:
        return None


def _human(dt: DType | None, arr: np.ndarray) -> str:
    name = dt.name if dt is not None else str(arr.dtype)
    return f"{name}[{','.join(str(d) for d in arr.shape)}]"


def _index_text(shape, flat_index: int) -> str:
    if not shape:
        return "{}"
    return "{" + ",".join(str(int(i)) for i in np.unravel_index(flat_index, shape)) + "}"


def _fp_text(name: str, v) -> str:
    return _FP_WIDTH.get(name, "%15.9g") % float(v)


def _percent(a: int, b: int) -> str:
    return "%0.4f%%" % (0.0 if b == 0 else 100.0 * a / b)


def _errors(exp: np.ndarray, act: np.ndarray):
    """Per-element (abs_err, rel_err, nan_mismatch) for real float arrays in f64."""
    with np.errstate(all="ignore"):
        e = exp.astype(np.float64)
        a = act.astype(np.float64)
        abs_err = np.abs(a - e)
        rel_err = np.where(e != 0, abs_err / np.abs(e), np.inf)
    same_bits = exp.view(f"u{exp.dtype.itemsize}") == act.view(f"u{act.dtype.itemsize}")
    with np.errstate(all="ignore"):
        same = same_bits | (e == a)
    e_nan, a_nan = np.isnan(e), np.isnan(a)
    nan_mis = (e_nan != a_nan)
    inf_mis = ~same & ~(e_nan | a_nan) & (np.isinf(e) | np.isinf(a))
    ok_zero = same | (e_nan & a_nan)
    abs_err = np.where(ok_zero, 0.0, np.where(nan_mis | inf_mis, np.inf, abs_err))
    rel_err = np.where(ok_zero, 0.0, np.where(nan_mis | inf_mis, np.inf, rel_err))
    return abs_err, rel_err, nan_mis & ~ok_zero


def _near_array(exp: np.ndarray, act: np.ndarray, dt: DType, spec: ErrorSpec,
                detailed: bool | None) -> tuple[int, str]:
    n = exp.size
    if dt.is_complex:
        parts = []
        for get in (np.real, np.imag):
            parts.append(_errors(_contig(get(exp)), _contig(get(act))))
        abs_err = np.stack([p[0] for p in parts])
        rel_err = np.stack([p[1] for p in parts])
        nan_mis = int(parts[0][2].sum() + parts[1][2].sum())
        part_mis = (abs_err > spec.abs) & (rel_err > spec.rel)
        mis = part_mis.any(axis=0).reshape(-1)
        # The top list holds one entry per mismatching part, as XLA's does.
        cand = [(float(rel_err[p].reshape(-1)[i]), float(abs_err[p].reshape(-1)[i]), i)
                for p in (0, 1) for i in np.flatnonzero(part_mis[p].reshape(-1)).tolist()]
        abs_flat, rel_flat = abs_err.reshape(2, -1), rel_err.reshape(2, -1)
        abs_over = (abs_flat > spec.abs).sum()
        rel_over = (rel_flat > spec.rel).sum()
        rel_for_abs = rel_flat[abs_flat > spec.abs]
        abs_for_rel = abs_flat[rel_flat > spec.rel]
        comp = "f32" if dt.name == "c64" else "f64"

        def value_text(v):
            return f"{_fp_text(comp, v.real)} + {_fp_text(comp, v.imag)}"
    else:
        abs_err, rel_err, nan_arr = _errors(exp, act)
        abs_flat, rel_flat = abs_err.reshape(-1), rel_err.reshape(-1)
        nan_mis = int(nan_arr.sum())
        mis = (abs_flat > spec.abs) & (rel_flat > spec.rel)
        cand = [(float(rel_flat[i]), float(abs_flat[i]), i) for i in np.flatnonzero(mis).tolist()]
        abs_over = int((abs_flat > spec.abs).sum())
        rel_over = int((rel_flat > spec.rel).sum())
        rel_for_abs = rel_flat[abs_flat > spec.abs]
        abs_for_rel = abs_flat[rel_flat > spec.rel]

        def value_text(v):
            return _fp_text(dt.name, v)
    count = int(mis.sum())
    if count == 0:
        return 0, ""
    flat_e, flat_a = exp.reshape(-1), act.reshape(-1)
    out = [f"Mismatch count {count} ({_percent(count, n)}) in shape {_human(dt, act)} "
           f"({n} elements), abs bound {spec.abs:g}, rel bound {spec.rel:g}"]
    if nan_mis:
        out.append(f"nan mismatches {nan_mis}")
    out.append("Top relative error mismatches:")
    cand.sort(key=lambda c: c[0], reverse=True)
    for rel, ab, i in cand[:_TOP]:
        out.append(f"  actual {value_text(flat_a[i])}, expected {value_text(flat_e[i])}, "
                   f"index {_index_text(act.shape, i)}, rel error {rel:8.3g}, abs error {ab:8.3g}")
    if detailed if detailed is not None else n >= 64:
        out.extend(_histograms(act, dt, mis, spec, n, abs_over, rel_over, rel_for_abs,
                               abs_for_rel))
    return count, "\n".join(out)


def _histograms(act, dt, mis, spec, n, abs_over, rel_over, rel_for_abs, abs_for_rel):
    out = ["Absolute magnitude breakdown of actual values:"]
    if dt.is_complex:   # XLA buckets the real and the imaginary part of each element
        mags = np.concatenate([np.abs(np.real(act).astype(np.float64)).reshape(-1),
                               np.abs(np.imag(act).astype(np.float64)).reshape(-1)])
        mis = np.concatenate([mis, mis])
    else:
        mags = np.abs(act.astype(np.float64)).reshape(-1)
    last = len(_ABS_VALUE_BOUNDS) - 2
    bucket = np.full(mags.shape, last)
    for j in range(last - 1, -1, -1):
        bucket[(mags >= _ABS_VALUE_BOUNDS[j]) & (mags < _ABS_VALUE_BOUNDS[j + 1])] = j
    for i in range(last + 1):
        sel = bucket == i
        size, bad = int(sel.sum()), int((sel & mis).sum())
        extra = f", mismatches {bad}" if bad else ""
        out.append("  %-6g <= x < %-6g : %7d (%9s)%s" % (
            _ABS_VALUE_BOUNDS[i], _ABS_VALUE_BOUNDS[i + 1], size, _percent(size, n), extra))

    def accum(header, total, errs):
        lines = [header + ":"]
        buckets = [int((errs >= b).sum()) for b in _ERROR_BOUNDS]
        lines.append("  <  %-6g : %7d (%s)" % (_ERROR_BOUNDS[0], total - buckets[0],
                                              _percent(total - buckets[0], total)))
        for b, c in zip(_ERROR_BOUNDS, buckets):
            lines.append("  >= %-6g : %7d (%s)" % (b, c, _percent(c, total)))
        return lines

    out.append(f"Elements exceeding abs error bound {spec.abs:g}: {abs_over} "
               f"({_percent(abs_over, n)})")
    out.extend(accum("Relative error breakdown of elements exceeding abs error bound",
                     int(abs_over), rel_for_abs))
    out.append(f"Elements exceeding rel error bound {spec.rel:g}: {rel_over} "
               f"({_percent(rel_over, n)})")
    out.extend(accum("Absolute error breakdown of elements exceeding rel error bound",
                     int(rel_over), abs_for_rel))
    return out


def _exact_array(exp: np.ndarray, act: np.ndarray, dt: DType | None) -> tuple[int, str]:
    if dt is not None and (dt.is_float or dt.is_complex):   # bitwise, as Equal<float>
        u = f"u{exp.dtype.itemsize // 2 if dt.is_complex else exp.dtype.itemsize}"
        mis = (_contig(exp).view(u) != _contig(act).view(u))
        mis = mis.reshape(exp.size, -1).any(axis=1)
    else:
        mis = (exp != act).reshape(-1)
    count = int(mis.sum())
    if count == 0:
        return 0, ""
    n = exp.size
    out = [f"Mismatch count {count} ({_percent(count, n)}) in shape {_human(dt, act)} "
           f"({n} elements), exact comparison"]
    flat_e, flat_a = exp.reshape(-1), act.reshape(-1)
    for i in np.flatnonzero(mis)[:_TOP].tolist():
        out.append(f"  actual {_scalar_text(flat_a[i])}, expected {_scalar_text(flat_e[i])}, "
                   f"index {_index_text(act.shape, i)}")
    return count, "\n".join(out)


def _scalar_text(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    return str(int(v)) if np.issubdtype(np.asarray(v).dtype, np.integer) else str(v)


def _shape_problem(exp, act) -> str | None:
    if isinstance(exp, tuple) != isinstance(act, tuple):
        return "tupleness mismatch: expected " + ("a tuple" if isinstance(exp, tuple)
                                                   else "an array") + ", got the other"
    if isinstance(exp, tuple):
        if len(exp) != len(act):
            return f"want tuple element count: {len(exp)} got tuple element count: {len(act)}"
        return None
    e, a = np.asarray(exp), np.asarray(act)
    if e.dtype != a.dtype:
        de, da = _dtype_of(e), _dtype_of(a)
        return (f"element type mismatch, want: {_human(de, e)} got {_human(da, a)}")
    if e.shape != a.shape:
        dt = _dtype_of(e)
        return f"shape mismatch, want: {_human(dt, e)} got {_human(dt, a)}"
    return None


def _compare(exp, act, spec: ErrorSpec | None, detailed, index: tuple, result: CompareResult):
    where = f"Array at shape index {{{','.join(map(str, index))}}}, " if index else ""
    problem = _shape_problem(exp, act)
    if problem is not None:
        result._fail(where + problem, max(1, int(np.size(exp)) if not isinstance(exp, tuple) else 1))
        return
    if isinstance(exp, tuple):
        for i, (e, a) in enumerate(zip(exp, act)):
            _compare(e, a, spec, detailed, index + (i,), result)
        return
    e, a = np.asarray(exp), np.asarray(act)
    dt = _dtype_of(e)
    if dt is None and e.dtype.kind in "OV":
        raise TypeError(f"cannot compare arrays of dtype {e.dtype}")
    result.elements += e.size
    if spec is not None and dt is not None and (dt.is_float or dt.is_complex):
        count, text = _near_array(_contig(e), _contig(a), dt, spec,
                                  detailed)
    else:
        count, text = _exact_array(e, a, dt)
    if count:
        result._fail(where + text.lstrip("\n"), count)


def near(expected, actual, spec: ErrorSpec | None = None, *,
         detailed: bool | None = None) -> CompareResult:
    """literal_comparison::Near(expected, actual, spec); tuples compare element-wise."""
    result = CompareResult()
    _compare(expected, actual, spec or ErrorSpec(), detailed, (), result)
    return result


def equal(expected, actual) -> CompareResult:
    """literal_comparison::Equal: every element compared exactly (floats bitwise)."""
    result = CompareResult()
    _compare(expected, actual, None, None, (), result)
    return result
