"""Dev-extra check: XLA's own parser (jaxlib) reads what `hloc opt` prints.

Runs where jaxlib is installed (`pip install -e '.[xla-oracle]'` or `.[dev]`); XLA's parser
can abort the process on malformed input, so it runs in a subprocess. `.ci/run` installs the
pinned `xla-oracle` extra and runs this file with HLOC_REQUIRE_XLA_ORACLE=1, which turns the
skip into a failure, so CI cannot pass without XLA having read hloc's output.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

import hloc
from hloc.passes import default_pipeline
from hloc.passes.driver import optimize

from corpus import TESTDATA

_HAVE_JAXLIB = importlib.util.find_spec("jaxlib") is not None
if not _HAVE_JAXLIB and os.environ.get("HLOC_REQUIRE_XLA_ORACLE"):
    raise RuntimeError("HLOC_REQUIRE_XLA_ORACLE is set but jaxlib is not installed "
                       "(pip install -e '.[xla-oracle]')")
pytestmark = pytest.mark.skipif(not _HAVE_JAXLIB, reason="jaxlib (xla-oracle extra) not installed")

_CHECK = """
import json, sys
import jaxlib._hlo as h
results = {}
for path in json.load(sys.stdin):
    try:
        h.hlo_module_from_text(open(path).read())
        results[path] = "ok"
    except Exception as e:  # XLA's parser reports any problem as an exception
        results[path] = str(e)[:300]
print(json.dumps(results))
"""


def test_xla_parses_optimized_dumps(tmp_path):
    paths = []
    for src in sorted((TESTDATA / "dumps").glob("*.before_optimizations.hlo")):
        module = hloc.parse(src.read_text(), str(src))
        optimize(module, default_pipeline(), verify_each=False)
        out = tmp_path / src.name.replace("before", "after_hloc")
        out.write_text(hloc.to_text(module))
        paths.append(str(out))
    proc = subprocess.run([sys.executable, "-c", _CHECK], input=json.dumps(paths),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    bad = {p: r for p, r in results.items() if r != "ok"}
    assert not bad, bad


def test_xla_parses_reduced_modules(tmp_path):
    """`hloc reduce`'s output is HLO that XLA reads: a planted pass bug shrunk from the
    BERT training step, and a planted miscomputing op shrunk from special_functions."""
    from hloc.reduce import mismatch_predicate, reduce_module
    from hloc.replay import ReplayConfig
    from hloc.runner import BACKENDS
    from test_replay import WrongOpBackend, broken_pipeline
    dumps = TESTDATA / "dumps"
    paths = []
    bert = (dumps / "bert_train_step.before_optimizations.hlo").read_text()
    r = reduce_module(bert, mismatch_predicate(ReplayConfig(pipeline=broken_pipeline)))
    paths.append(tmp_path / "bert_reduced.hlo")
    paths[-1].write_text(r.text)
    backend = WrongOpBackend("log")
    BACKENDS[backend.name] = backend
    try:
        special = (dumps / "special_functions.before_optimizations.hlo").read_text()
        r = reduce_module(special, mismatch_predicate(ReplayConfig(test_backend=backend.name)))
    finally:
        del BACKENDS[backend.name]
    paths.append(tmp_path / "special_reduced.hlo")
    paths[-1].write_text(r.text)
    proc = subprocess.run([sys.executable, "-c", _CHECK], input=json.dumps(list(map(str, paths))),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout)
    assert all(v == "ok" for v in results.values()), results
