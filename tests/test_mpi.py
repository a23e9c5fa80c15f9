"""`mpirun -n 4 hloc run after.hlo`: one device per process, results bit for bit those of
the in-process run. Skipped when mpirun or mpi4py is missing (CI installs both: .ci/run)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hloc
from corpus import ROOT, TESTDATA

MD = TESTDATA / "multidevice"
RUN_INTERP = [sys.executable, "-m", "hloc", "run", "--backend", "interpreter"]
MPIRUN = shutil.which("mpirun")


def _has_mpi4py() -> bool:
    r = subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(MPIRUN is None or not _has_mpi4py(),
                                reason="mpirun or mpi4py missing")


def _mpirun(n: int, args: list[str]):
    version = subprocess.run([MPIRUN, "--version"], capture_output=True, text=True).stdout
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    flags = []
    if "Open MPI" in version or "OpenRTE" in version:
        flags = ["--oversubscribe"]
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run([MPIRUN, *flags, "-n", str(n), sys.executable, "-m", "hloc", "run",
                           "--backend", "interpreter", *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.parametrize("name", ["shard_map_collectives", "dp_mlp_step"])
def test_mpirun_gives_the_in_process_results_bit_for_bit(name, tmp_path):
    f = str(MD / f"{name}.after_optimizations.hlo")
    dev = str(MD / f"{name}.devices.npz")
    r = _mpirun(4, [f, "--inputs", dev, "--expected", dev, "--output", str(tmp_path / "m.npz")])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("** device") == 4 and "outputs match on 4 devices" in r.stdout
    inproc = subprocess.run([*RUN_INTERP, f, "--inputs", dev,
                             "--output", str(tmp_path / "i.npz")], capture_output=True)
    assert inproc.returncode == 0
    for a, b in zip(hloc.load_outputs(tmp_path / "m.npz"), hloc.load_outputs(tmp_path / "i.npz")):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    # fake arguments: device d's are made with seed + d in both runs
    r = _mpirun(4, [f, "--output", str(tmp_path / "mf.npz")])
    inproc = subprocess.run([*RUN_INTERP, f, "--output",
                             str(tmp_path / "if.npz")], capture_output=True)
    assert r.returncode == 0 and inproc.returncode == 0
    for a, b in zip(hloc.load_outputs(tmp_path / "mf.npz"),
                    hloc.load_outputs(tmp_path / "if.npz")):
        np.testing.assert_array_equal(a, b)


def test_mpirun_with_the_wrong_process_count_fails_without_hanging():
    r = _mpirun(2, [str(MD / "fsdp_layer.after_optimizations.hlo")])
    assert r.returncode != 0 and "the module runs on 4 devices" in r.stderr


def test_ranks_that_do_not_meet_fail_without_hanging(tmp_path):
    from test_multidevice import NOT_MEETING as text
    f = tmp_path / "m.hlo"
    f.write_text(text)
    # Both ranks fail; whichever rank's abort prints first is the message mpirun shows:
    # rank 0 waiting at the all-reduce, or rank 1 finishing while rank 0 sent for it.
    either = re.compile(r"device 1 finished without reaching all-reduce %r |"
                        r"device 1 finished while device 0 is at %r ")
    for flags in ([], ["--backend", "cpu"]):
        r = _mpirun(2, [str(f), *flags])
        assert r.returncode != 0 and either.search(r.stderr), r.stderr


def test_mpirun_compiled_gives_the_in_process_compiled_results_bit_for_bit(tmp_path):
    """--backend cpu under mpirun: compiled code per rank, collectives through MPI; the
    same bits as the in-process compiled run (and, in ieee numerics, the interpreter's)."""
    f = str(MD / "dp_mlp_step.after_optimizations.hlo")
    dev = str(MD / "dp_mlp_step.devices.npz")
    outs = {}
    for numerics in ("xla-cpu", "ieee"):
        flags = ["--inputs", dev, "--backend", "cpu", "--numerics", numerics]
        r = _mpirun(4, [f, *flags, "--expected", dev, "--output", str(tmp_path / "m.npz")])
        assert r.returncode == 0, r.stdout + r.stderr
        assert "runner CPU (MPI, 4 processes)" in r.stderr
        assert "outputs match on 4 devices" in r.stdout
        inproc = subprocess.run([sys.executable, "-m", "hloc", "run", f, *flags, "--output",
                                 str(tmp_path / "i.npz")], capture_output=True, text=True)
        assert inproc.returncode == 0, inproc.stderr
        outs[numerics] = hloc.load_outputs(tmp_path / "m.npz")
        for a, b in zip(outs[numerics], hloc.load_outputs(tmp_path / "i.npz")):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    interp = subprocess.run([sys.executable, "-m", "hloc", "run", f, "--inputs", dev,
                             "--backend", "interpreter", "--output", str(tmp_path / "p.npz")],
                            capture_output=True)
    assert interp.returncode == 0
    for a, b in zip(outs["ieee"], hloc.load_outputs(tmp_path / "p.npz")):
        assert a.tobytes() == b.tobytes()
