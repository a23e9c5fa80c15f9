"""Differential tests of the compiled back end on the real dumps (testdata/dumps).

Every `<prog>.npz` program, before- and after-optimizations: compiled in xla-cpu numerics
(a before-optimizations module goes through the default pipeline first, as `hloc run
--backend cpu` does) and compared with XLA's values under ErrorSpec(1e-3, 1e-3), pred and
integers exactly. The after-optimizations module is also compiled in ieee numerics and
compared with the interpreter (integers and pred bit-exact, floats within ErrorSpec).
What does not compile yet is listed in KNOWN_UNSUPPORTED with the message it must give:
a listed program that starts compiling, or an unlisted one that stops, fails the test,
and the list may only shrink (MAX_UNSUPPORTED). Tests use a temporary object cache.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module
from hloc.cli_backend import prepare_for_cpu
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.runner import run_module

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
SPEC = ErrorSpec(abs=1e-3, rel=1e-3)

# (program, stage) -> the unsupported message the compiled back end must give today.
KNOWN_UNSUPPORTED: dict[tuple[str, str], str] = {}
MAX_UNSUPPORTED = 0
# (program, stage, output) -> why XLA's value is not the module's semantics.
XLA_DIFFERS = {
    ("f64_math", "before", 11): "XLA folds (x * 1e300) * 1e10 into x * inf, so 0 * ... is NaN",
}


def test_unsupported_list_only_shrinks():
    assert len(KNOWN_UNSUPPORTED) <= MAX_UNSUPPORTED


def _cases():
    progs = sorted(p.stem for p in DUMPS.glob("*.npz"))
    return [pytest.param(p, s, id=f"{p}-{s}") for p in progs for s in ("before", "after")]


def _io(prog):
    d = load_npz(DUMPS / f"{prog}.npz")
    n_in = sum(1 for k in d if k.startswith("in") and k[2:].isdigit())
    n_out = sum(1 for k in d if k.startswith("out") and k[3:].isdigit())
    return [d[f"in{i}"] for i in range(n_in)], [d[f"out{i}"] for i in range(n_out)]


def _compile(module, numerics, tmp_path):
    return compile_module(module, numerics=numerics, cache_dir=tmp_path / "cache")


@pytest.mark.parametrize("prog,stage", _cases())
def test_compiled_matches_xla(prog, stage, tmp_path):
    module = hloc.parse_file(DUMPS / f"{prog}.{stage}_optimizations.hlo")
    prepare_for_cpu(module, None)
    ins, outs = _io(prog)
    known = KNOWN_UNSUPPORTED.get((prog, stage))
    try:
        exe = _compile(module, "xla-cpu", tmp_path)
    except UnsupportedError as e:
        assert known is not None, f"not listed as unsupported: {e.message}"
        assert known in e.message, e.message
        return
    assert known is None, f"{prog}-{stage} compiles now: remove it from KNOWN_UNSUPPORTED"
    got = flatten_leaves(exe.run(bind_arguments(module, ins)), module.entry.root.shape)
    assert len(got) == len(outs)
    bad = [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(outs, got))
           if (prog, stage, i) not in XLA_DIFFERS and not (r := near(e, a, SPEC)).ok]
    assert not bad, "\n".join(bad)


def _exact_ints(expected, actual) -> list[str]:
    out = []
    for i, (e, a) in enumerate(zip(expected, actual)):
        e, a = np.asarray(e), np.asarray(a)
        if e.dtype.kind in "biu" and not np.array_equal(e, a):
            out.append(f"out{i}: integer/pred values differ")
    return out


@pytest.mark.parametrize("prog", sorted(p.stem for p in DUMPS.glob("*.npz")))
def test_compiled_ieee_matches_interpreter(prog, tmp_path):
    if (prog, "after") in KNOWN_UNSUPPORTED:
        pytest.skip("listed in KNOWN_UNSUPPORTED (checked by test_compiled_matches_xla)")
    module = hloc.parse_file(DUMPS / f"{prog}.after_optimizations.hlo")
    args = bind_arguments(module, _io(prog)[0])
    shape = module.entry.root.shape
    ref = flatten_leaves(run_module(module, args).value, shape)
    got = flatten_leaves(_compile(module, "ieee", tmp_path).run(args), shape)
    bad = _exact_ints(ref, got)
    bad += [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(ref, got))
            if not (r := near(e, a, SPEC)).ok]
    assert not bad, "\n".join(bad)
