"""`hloc run --expected OUT.npz`: a result against known outputs, reported as run_hlo_module does.

Each result leaf (flattened order, tokens dropped) is compared with the `outN` array of
the file by hloc.compare.near, XLA's literal_comparison::Near: shapes and element types
must match, integers and pred exactly, floats within the abs / rel error bounds (an
element fails only when it exceeds both). The report names each mismatching leaf
followed by XLA's message (mismatch count, the worst elements with their index, and
from 64 elements the error histograms), then a summary line.
"""
from __future__ import annotations

import numpy as np

from .compare import ErrorSpec, near
from .inputs import flatten_leaves, load_outputs

__all__ = ["compare_with_file", "compare_leaves"]


def compare_leaves(expected: list, actual: list, spec: ErrorSpec) -> tuple[bool, list[str]]:
    lines: list[str] = []
    if len(expected) != len(actual):
        return False, [f"Mismatch: want tuple element count: {len(expected)} got tuple "
                       f"element count: {len(actual)} (outputs out0..out{len(expected) - 1} "
                       f"against {len(actual)} result leaves)"]
    bad = 0
    for i, (e, a) in enumerate(zip(expected, actual)):
        result = near(np.asarray(e), np.asarray(a), spec)
        if not result.ok:
            bad += 1
            lines.append(f"out{i}: {result.message}")
    if bad:
        lines.append(f"{bad} of {len(actual)} outputs miscompared.")
    return bad == 0, lines


def compare_with_file(path, shape, value, abs_bound: float, rel_bound: float):
    """(ok, report text) for the result `value` of `shape` against `path`'s outputs."""
    expected = load_outputs(path)
    actual = flatten_leaves(value, shape)
    spec = ErrorSpec(abs_bound, rel_bound)
    ok, lines = compare_leaves(expected, actual, spec)
    head = (f"** Comparison with {path} (abs error bound {abs_bound:g}, rel error bound "
            f"{rel_bound:g}) **")
    if ok:
        lines.append(f"OK: {len(actual)} output{'s' if len(actual) != 1 else ''} "
                     f"match{'' if len(actual) != 1 else 'es'}.")
    return ok, "\n".join([head] + lines)
