"""What `hloc run` prints for a result: small results in full, large leaves summarised.

A result of under 1000 elements prints as XLA's Literal::ToString, as run_hlo_module
does. A larger one would be `[TRUNCATED, Literal with more than 1000 values]` there;
here it prints one entry per leaf (`outN`, in the flattened order `--output` and
`--expected` use): a leaf of at most SMALL elements as its literal text, a bigger one
as its shape with min / max / mean, NaN and Inf counts and its first FIRST elements
(the statistics are over the values that are not NaN, in float64; pred leaves count
their true elements).
"""
from __future__ import annotations

import numpy as np

from .inputs import flatten_leaves
from .ir.literal import TRUNCATE_AT
from .syntax.literal_printer import format_scalar, literal_to_string
from .ir.shape import ArrayShape, TupleShape

__all__ = ["result_summary", "leaf_shapes", "SMALL", "FIRST"]

SMALL = 64
FIRST = 8


def leaf_shapes(shape) -> list[ArrayShape]:
    """Array leaves of a (tuple) shape in flattened order, tokens dropped."""
    if isinstance(shape, TupleShape):
        out = []
        for e in shape.elements:
            out.extend(leaf_shapes(e))
        return out
    return [shape] if isinstance(shape, ArrayShape) and shape.dtype.is_array else []


def _count(shape) -> int:
    return sum(int(np.prod(s.dims, dtype=np.int64)) for s in leaf_shapes(shape))


def _g(x: float) -> str:
    return f"{x:.6g}"


def _stats(shape: ArrayShape, arr: np.ndarray) -> str:
    dt = shape.dtype
    if arr.size == 0:
        return "(no elements)"
    if dt.kind == "pred":
        return f"true {int(np.count_nonzero(arr))} of {arr.size}"
    if dt.is_integral:
        wide = arr.astype(np.uint64 if dt.kind == "uint" else np.int64)
        return f"min {int(wide.min())}  max {int(wide.max())}  mean {_g(float(wide.mean()))}"
    if dt.is_complex:
        parts = (arr.real.astype(np.float64), arr.imag.astype(np.float64))
        nan = int(np.count_nonzero(np.isnan(parts[0]) | np.isnan(parts[1])))
        inf = int(np.count_nonzero(np.isinf(parts[0]) | np.isinf(parts[1])))
        ok = ~(np.isnan(parts[0]) | np.isnan(parts[1]))
        mag = np.abs(arr.astype(np.complex128))[ok]
        body = (f"|x| min {_g(float(mag.min()))}  max {_g(float(mag.max()))}  "
                f"mean {_g(complex(arr.astype(np.complex128)[ok].mean()).real)}"
                f"{complex(arr.astype(np.complex128)[ok].mean()).imag:+.6g}i"
                if mag.size else "all NaN")
        return f"{body}  NaN {nan}  Inf {inf}"
    x = arr.astype(np.float64)
    nan_mask = np.isnan(x)
    nan, inf = int(np.count_nonzero(nan_mask)), int(np.count_nonzero(np.isinf(x)))
    vals = x[~nan_mask]
    if vals.size == 0:
        return f"all NaN  NaN {nan}  Inf {inf}"
    with np.errstate(all="ignore"):
        mean = float(vals.mean())
    return f"min {_g(float(vals.min()))}  max {_g(float(vals.max()))}  mean {_g(mean)}  " \
           f"NaN {nan}  Inf {inf}"


def _leaf_text(shape: ArrayShape, value) -> str:
    arr = np.asarray(value, dtype=shape.dtype.np)
    if arr.size <= SMALL:
        return literal_to_string(shape, arr, print_all=True)
    flat = arr.reshape(-1)[:FIRST]
    first = ", ".join(format_scalar(shape.dtype, v) for v in flat)
    return (f"{shape.no_layout()}  {_stats(shape, arr)}\n"
            f"  first {len(flat)}: {{{first}, ...}}")


def result_summary(shape, value, *, print_all: bool = False) -> str:
    """The text `hloc run` prints for a result (see the module docstring)."""
    if print_all or _count(shape) < TRUNCATE_AT:
        return literal_to_string(shape, value, print_all=print_all)
    shapes = leaf_shapes(shape)
    leaves = flatten_leaves(value, shape)
    if not isinstance(shape, TupleShape):
        return _leaf_text(shapes[0], leaves[0])
    lines = [f"{shape.no_layout()}: {_count(shape)} elements in {len(shapes)} leaves "
             f"(out0..out{len(shapes) - 1}; --print-all prints every value)"]
    for i, (s, v) in enumerate(zip(shapes, leaves)):
        lines.append(f"out{i} = {_leaf_text(s, v)}")
    return "\n".join(lines)
