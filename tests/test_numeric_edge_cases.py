"""Every executor against the shared numeric edge-case table (tests/numeric_edge_cases.py):
the interpreter and the compiled back end ("cpu")."""
from __future__ import annotations

import numpy as np
import pytest

import hloc
from hloc.ir.dtypes import DTYPES

from numeric_edge_cases import EDGE_CASES


def _module(opcode: str, src: str, dst: str, n: int, arity: int) -> str:
    params = "\n".join(f"  p{i} = {src}[{n}] parameter({i})" for i in range(arity))
    args = ", ".join(f"p{i}" for i in range(arity))
    return f"HloModule edge\nENTRY e {{\n{params}\n  ROOT r = {dst}[{n}] {opcode}({args})\n}}\n"


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
@pytest.mark.parametrize("case", EDGE_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[5]}"
                                                   for c in EDGE_CASES])
def test_executor_matches_xla(case, backend):
    opcode, src, dst, operands, expected, _why = case
    n = len(expected)
    module = hloc.parse(_module(opcode, src, dst, n, len(operands)))
    args = [np.array(v, dtype=np.float64 if DTYPES[src].is_float else np.int64)
            .astype(DTYPES[src].np) for v in operands]
    got = np.asarray(module.run(*args, backend=backend))
    want = np.array(expected, dtype=np.float64 if DTYPES[dst].is_float else np.int64) \
        .astype(DTYPES[dst].np)
    assert got.dtype == want.dtype
    if DTYPES[dst].is_float:
        same = (got.astype(np.float64) == want.astype(np.float64)) | \
            (np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)))
        assert same.all(), (got, want)
    else:
        np.testing.assert_array_equal(got, want)
