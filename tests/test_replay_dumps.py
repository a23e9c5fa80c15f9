"""Every testdata/dumps program, before and after optimizations, replays "close enough":
test = the module after hloc's pipeline (before dumps; after dumps run as they are) on the
default test platform, reference = the module as written on the interpreter, with the
inputs JAX/TF recorded (fake arguments where none were recorded). Known differences are
listed in KNOWN with the status they must give and the reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from hloc.cli_replay import default_test_platform
from hloc.replay import ReplayConfig
from hloc.replay_batch import replay_file

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"
# (program, stage, test platform) -> (the status replay must give, why)
_DAZ = ("mismatch", "XLA:CPU numerics flush subnormal inputs/results to zero (DAZ/FTZ); the "
                    "interpreter reference does not, as run_hlo_module's would not")
KNOWN: dict[tuple[str, str, str], tuple[str, str]] = {
    ("f64_math", "before", "cpu"): _DAZ,
    ("f64_math", "after", "cpu"): _DAZ,
    ("special_floats_arith", "before", "cpu"): _DAZ,
    ("special_floats_arith", "after", "cpu"): _DAZ,
    ("special_floats_compare", "before", "cpu"): _DAZ,
    ("special_floats_compare", "after", "cpu"): _DAZ,
}


def _cases():
    out = []
    for hlo in sorted(DUMPS.glob("*_optimizations.hlo")):
        prog, stage = hlo.name.split(".")[0], hlo.name.split(".")[1].split("_")[0]
        out.append(pytest.param(hlo, prog, stage, id=f"{prog}-{stage}"))
    return out


def test_the_corpus_is_there():
    assert len(_cases()) >= 160


@pytest.mark.parametrize("path,prog,stage", _cases())
def test_dump_replays_close_enough(path, prog, stage):
    platform = default_test_platform()
    npz = DUMPS / f"{prog}.npz"
    spec = ((str(npz),), ()) if npz.exists() else None
    r = replay_file(str(path), ReplayConfig(test_backend=platform), spec)
    known = KNOWN.get((prog, stage, platform))
    if known:
        status, why = known
        assert r.status == status, f"listed as {status} ({why}) but {r.status}: {r.error}"
        return
    assert r.status == "ok", r.stderr[-3000:]
    assert r.outcome.optimized == (stage == "before")
