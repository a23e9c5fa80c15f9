"""`hloc run --expected` on every testdata/dumps program, against XLA's own outputs.

Each dump (before and after optimizations) runs through the CLI on the default back end
(cpu, compiled) with its recorded inputs and `--expected` set to the same .npz: exit 0 and
"OK: N outputs match", except for the outputs listed in KNOWN (XLA rewrites that are not
the HLO semantics), where exit 1 must name exactly those outputs. Then one
element of one output is changed and the run must exit 1 with run_hlo_module's report
naming that output and index.
"""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from hloc.cli import main
from hloc.inputs import load_npz, save_npz

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
# (program, stage) -> {output index: why XLA's value differs from the HLO semantics}. The
# default back end (cpu) flushes subnormals as XLA:CPU does, so only the rewrite is left;
# the interpreter's DAZ differences are listed in test_differential_dumps.
KNOWN = {
    ("f64_math", "before"): {11: "XLA folds (x * 1e300) * 1e10 into x * inf"},
}


def _cases():
    out = []
    for npz in sorted(DUMPS.glob("*.npz")):
        for stage in ("before", "after"):
            if (DUMPS / f"{npz.stem}.{stage}_optimizations.hlo").exists():
                out.append(pytest.param(npz.stem, stage, id=f"{npz.stem}-{stage}"))
    return out


def test_the_corpus_is_there():
    assert len(_cases()) >= 150
    assert all((prog, stage) in {(c.values[0], c.values[1]) for c in _cases()}
               for prog, stage in KNOWN)


def invoke(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def _miscompared(stdout: str) -> set[int]:
    return {int(m) for m in re.findall(r"^out(\d+): Mismatch", stdout, re.M)}


def _perturb(arr: np.ndarray) -> np.ndarray:
    """`arr` with element 0 changed by far more than the error bounds."""
    a = arr.copy()
    flat = a.reshape(-1)
    v = flat[0]
    if a.dtype == np.bool_:
        flat[0] = not v
    elif a.dtype.kind in "iu" or a.dtype in (ml_dtypes.int4, ml_dtypes.uint4):
        flat[0] = a.dtype.type(int(v) ^ 1)
    elif a.dtype.kind == "c":
        flat[0] = v + 1
    else:
        x = float(v)
        flat[0] = a.dtype.type(0.0 if not np.isfinite(x) else (x + 1 if abs(x) < 1 else -x))
    return a


@pytest.mark.parametrize("prog,stage", _cases())
def test_run_expected_matches_xla(prog, stage, tmp_path):
    hlo = DUMPS / f"{prog}.{stage}_optimizations.hlo"
    npz = DUMPS / f"{prog}.npz"
    r = invoke("run", hlo, "--inputs", npz, "--expected", npz)
    known = KNOWN.get((prog, stage), {})
    if known:
        assert r.exit_code == 1, r.output
        assert _miscompared(r.stdout) == set(known), r.stdout
    else:
        assert r.exit_code == 0, r.output
        assert re.search(r"^OK: \d+ outputs? match(es)?\.$", r.stdout, re.M), r.stdout
    data = load_npz(npz)
    k = next((i for i in range(len(data)) if f"out{i}" in data and data[f"out{i}"].size
              and i not in known), None)
    if k is None:
        return
    data[f"out{k}"] = _perturb(data[f"out{k}"])
    save_npz(tmp_path / "changed.npz", data)
    r = invoke("run", hlo, "--inputs", npz, "--expected", tmp_path / "changed.npz")
    assert r.exit_code == 1, r.output
    assert _miscompared(r.stdout) == set(known) | {k}, r.stdout
    shape = data[f"out{k}"].shape
    index = "{" + ",".join("0" for _ in shape) + "}"
    report = r.stdout[r.stdout.index(f"out{k}: Mismatch count 1 "):]
    assert f"index {index}" in report.split("\nout")[0], report
    assert re.search(r"^\d+ of \d+ outputs miscompared\.$", r.stdout, re.M)
