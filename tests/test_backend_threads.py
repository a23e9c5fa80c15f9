"""The work-group runtime (hloc.backend.parallel): results bit-identical whatever the
thread count, every split kernel included, FTZ/DAZ in the worker threads, `--threads`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, parallel
from hloc.cli_backend import prepare_for_cpu
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from row_modules import softmax

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / "testdata" / "dumps"
PROGS = ["logsumexp_softmax", "reduce_ops", "mlp_train_step", "cnn_train_step",
         "bert_train_step", "scan_rnn", "while_loop_newton", "scatter_ops", "conv2d_variants",
         "complex64_math", "bf16_arith", "tf_dense_softmax"]


def _bits(values) -> list[bytes]:
    return [np.ascontiguousarray(v).tobytes() for v in values]


@pytest.mark.parametrize("prog", PROGS)
def test_every_kernel_split_gives_the_same_bits(prog, monkeypatch):
    """Split every data-parallel kernel as finely as the runtime allows (no size
    threshold, one work group per 1 byte of work, up to MAX_GROUPS) and run it on 1, 2
    and 3 threads: the bits equal those of the module compiled without splitting."""
    d = load_npz(DUMPS / f"{prog}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    module = prepare_for_cpu(hloc.parse_file(DUMPS / f"{prog}.after_optimizations.hlo"), None)
    args = bind_arguments(module, ins)
    shape = module.entry.root.shape
    whole = _bits(flatten_leaves(compile_module(module, threads=1).run(args), shape))
    monkeypatch.setattr(parallel, "MIN_WORK", 0)
    monkeypatch.setattr(parallel, "CHUNK", 1)
    exe = compile_module(module, threads=1)
    assert exe.splits_kernels       # something is split
    for n in (1, 2, 3):
        exe.set_threads(n)
        assert _bits(flatten_leaves(exe.run(args), shape)) == whole, f"threads={n}"


def test_worker_threads_flush_subnormals():
    """xla-cpu numerics: DAZ holds in the pthreads too (they inherit the caller's MXCSR)."""
    n = 1 << 20
    text = (f"HloModule m\n\nENTRY e {{\n  x = f32[{n}] parameter(0)\n"
            f"  ROOT r = f32[{n}] add(x, x)\n}}\n")
    x = np.full(n, np.float32(1e-40))
    assert parallel.work_groups(hloc.parse(text).entry.root) > 1
    exe = compile_module(hloc.parse(text), threads=2)
    assert exe.threads == 2 and exe.splits_kernels
    assert not np.any(exe.run([x]))
    ieee = compile_module(hloc.parse(text), numerics="ieee", threads=2).run([x])
    assert np.all(ieee == x + x) and np.all(ieee != 0)


def test_small_kernels_run_inline():
    text = "HloModule m\n\nENTRY e {\n  x = f32[1000] parameter(0)\n  ROOT r = f32[1000] add(x, x)\n}\n"
    assert "hloc.parallel" not in emit_llvm(hloc.parse(text), optimized=False)


def test_default_threads_follow_affinity():
    exe = compile_module(hloc.parse("HloModule m\n\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n"))
    assert exe.threads == len(os.sched_getaffinity(0))


_SOFTMAX = softmax(512, 1024)


def test_cli_threads_give_identical_bits(tmp_path):
    src = tmp_path / "softmax.hlo"
    src.write_text(_SOFTMAX)
    assert "hloc.parallel" in emit_llvm(prepare_for_cpu(hloc.parse(_SOFTMAX), None), optimized=False)
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    bits = []
    for n in (1, 2, 3):
        out = tmp_path / f"out{n}.npz"
        r = subprocess.run([sys.executable, "-m", "hloc", "run", str(src), "--backend", "cpu",
                            "--threads", str(n), "--output", str(out), "--json"],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["threads"] == n
        bits.append(np.load(out)["out0"].tobytes())
    assert bits[0] == bits[1] == bits[2]
