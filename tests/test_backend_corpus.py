"""The compiled back end against the interpreter on a sample of the StableHLO corpus.

Every SAMPLE_EVERY-th `ok` row of ../shared/corpus/stablehlo/MANIFEST.tsv (a fixed,
deterministic sample) is compiled in ieee numerics and run on its npz inputs; results
must equal the interpreter's (integers and pred exactly, floats within ErrorSpec(1e-3,
1e-3), NaN where NaN). Modules the interpreter itself cannot run are not counted.
`unsupported` outcomes are counted per reason and guarded by MAX_UNSUPPORTED (it may only
go down), never skipped silently; SAMPLE_MIN guards the sample size. Skips when the
corpus is absent.
"""
from __future__ import annotations

import collections
import csv
import tempfile

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import HlocError, UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.runner import run_module

from corpus import STABLEHLO

SAMPLE_EVERY = 16
SAMPLE_MIN = 170
MAX_UNSUPPORTED = 0
SPEC = ErrorSpec(abs=1e-3, rel=1e-3)


def _sample() -> list[dict]:
    path = STABLEHLO / "MANIFEST.tsv"
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["status"] == "ok"]
    return rows[::SAMPLE_EVERY]


@pytest.mark.skipif(not (STABLEHLO / "MANIFEST.tsv").exists(), reason="shared corpus absent")
def test_compiled_matches_interpreter_on_corpus_sample():
    rows = _sample()
    assert len(rows) >= SAMPLE_MIN
    counts, unsupported, failures = collections.Counter(), collections.Counter(), []
    with tempfile.TemporaryDirectory() as cache:
        for row in rows:
            path = STABLEHLO / row["file"]
            module = hloc.parse_file(path)
            data = load_npz(path.with_suffix(".npz"))
            n_in = sum(1 for k in data if k.startswith("in") and k[2:].isdigit())
            try:
                args = bind_arguments(module, [data[f"in{i}"] for i in range(n_in)])
                ref = run_module(module, args).value
            except HlocError:
                counts["interpreter cannot run"] += 1
                continue
            try:
                exe = compile_module(module, numerics="ieee", cache_dir=cache)
            except UnsupportedError as e:
                counts["unsupported"] += 1
                unsupported[e.message.split(" (instruction")[0]] += 1
                continue
            shape = module.entry.root.shape
            got = flatten_leaves(exe.run(args), shape)
            for i, (e, a) in enumerate(zip(flatten_leaves(ref, shape), got)):
                e, a = np.asarray(e), np.asarray(a)
                ok = np.array_equal(e, a) if e.dtype.kind in "biu" else near(e, a, SPEC).ok
                if not ok:
                    failures.append(f"{row['file']} out{i}")
            counts["compared"] += 1
    assert not failures, "\n".join(failures)
    assert counts["compared"] >= 176
    assert counts["unsupported"] <= MAX_UNSUPPORTED, unsupported.most_common()
