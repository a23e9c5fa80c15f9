"""The object cache's key holds the back end's module-level settings
(hloc.backend.settings): a process that changes one (as the A/B tools and tests do) never
loads an object compiled under another value, and every upper-case module-level constant
of hloc.backend is either such a setting or listed below as one that does not change code."""
from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import hloc
import hloc.backend
from hloc.backend import compile_module, settings, threadpool

# Constants that are not settings: symbol and metadata names, ABI and enum values, tables
# of keys, symbols and opcodes (sources_digest covers an edit to any of them). A new
# upper-case constant must be put here or in settings.MODULE / RUNTIME.
NOT_SETTINGS = {
    "access_groups": {"GROUP", "PARALLEL"},
    "blas": {"NO_TRANS", "ROW_MAJOR", "SYMBOL", "TRANS"},
    "bounds": {"SIGN_CLEAR", "SIGN_CLEAR_OF_OPERANDS"},
    "cache": {"MAGIC"},
    "collective_calls": {"ABORT", "COLLECTIVE", "DEVICE_ID", "MANUAL_TARGETS", "SYMBOL"},
    "context": {"ELEMENTAL", "RESERVED"},
    "conv_gemm": {"NO_TRANS", "ROW_MAJOR", "TRANS"},
    "cplx": {"UNARY"},
    "custom_calls": {"CUSTOM_CALLS"},
    "dedup": {"IGNORED_ATTRS", "PER_INSTRUCTION"},
    "device_runtime": {"ABORT", "SYMBOL"},
    "elementwise": {"BINARY_KEYS", "UNARY_KEYS"},
    "executable": {"ALIGN", "MAX_THREADS", "NTHREADS", "POOL", "PLACE_BYTES", "PAGE"},
    "gemm": {"CBLAS", "COL_MAJOR", "INT_MAX", "NO_TRANS", "ROW_MAJOR"},
    "global_view": {"CUSTOM_CALLS"},
    "inplace": {"DUS"},
    "jit": {"ENTRY"},
    "kernels": {"ELEMENTAL", "KERNEL"},
    "llvm_parts": {"LEAN_NAME"},
    "narrow_floats": {"NARROW"},
    "parallel": {"NTHREADS"},
    "profile": {"CLOCK_MONOTONIC", "GLOBAL"},
    "registry": {"ELEMENTAL", "KERNEL", "REGISTRY"},
    "row_groups": {"ANY", "ELEMENTAL"},
    "row_loop_hints": {"NO_UNROLL"},
    "runtime": {"ALLOWED", "BLAS", "DEVICE", "LAPACK", "RUNTIME_LIBC", "THREAD_RUNTIME"},
    "settings": {"MODULE", "RUNTIME"},
    "threadpool": {"ENTRY", "FPENV_ARCHS", "FUTEX_WAIT", "FUTEX_WAKE", "STOP", "STOPPING",
                   "SYS_FUTEX"},
    "threadpool_jit": {"ENTRY", "FORK_WAIT", "STOP"},
}
PLAIN = (bool, int, float, str, bytes, tuple, list, dict, frozenset, set, type(None))

# rows of a layernorm-like group: row_vector takes it (row_vector.ENABLED) and its part
# compiles the lean way (jit.LEAN_ROWS); either switch changes the object
ROWS = """HloModule rows
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
ENTRY e {
  x = f32[512,1024] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(1024)
  nb = f32[512] broadcast(n), dimensions={}
  s = f32[512] reduce(x, zero), dimensions={1}, to_apply=add_f
  mean = f32[512] divide(s, nb)
  mb = f32[512,1024] broadcast(mean), dimensions={0}
  ROOT d = f32[512,1024] subtract(x, mb)
}
"""


def test_every_constant_is_a_setting_or_known_not_to_change_code():
    listed = {(m, n) for m, names in settings.MODULE + settings.RUNTIME for n in names}
    seen = set()
    for info in pkgutil.iter_modules(hloc.backend.__path__):
        mod = importlib.import_module(f"hloc.backend.{info.name}")
        for name, value in vars(mod).items():
            if name.isupper() and not name.startswith("_") and isinstance(value, PLAIN):
                seen.add((info.name, name))
    known = {(m, n) for m, names in NOT_SETTINGS.items() for n in names}
    assert not seen - listed - known, "unclassified: put them in settings or NOT_SETTINGS"
    assert not listed & known
    assert listed <= seen                     # every listed setting exists
    assert known <= seen


def test_text_is_the_same_in_another_process():
    """No address or other per-process detail in the settings' text (a function's repr
    has one): the cache's keys must hit from one process to the next."""
    code = "from hloc.backend import settings; print(settings.text() + '|' + settings.text(settings.RUNTIME))"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, check=True).stdout for _ in range(2)]
    assert runs[0] == runs[1] == settings.text() + "|" + settings.text(settings.RUNTIME) + "\n"


def test_key_changes_with_each_setting(monkeypatch):
    base = settings.text()
    for mod, names in settings.MODULE:
        m = importlib.import_module(f"hloc.backend.{mod}")
        for name in names:
            old = getattr(m, name)
            monkeypatch.setattr(m, name, (old, "other"))
            assert settings.text() != base, f"{mod}.{name}"
            monkeypatch.setattr(m, name, old)
    assert settings.text() == base
    rt = settings.text(settings.RUNTIME)
    monkeypatch.setattr(threadpool, "WORKER_SPINS", threadpool.WORKER_SPINS + 1)
    assert settings.text(settings.RUNTIME) != rt


def test_cache_never_serves_an_object_of_other_settings(tmp_path, monkeypatch):
    """Rows in explicit vector form (row_vector) or not, and compiled the lean way
    (jit.LEAN_ROWS) or not, from one cache directory in one process: each setting
    compiles its own object, a setting seen before hits its own, and every result is
    right."""
    from hloc.backend import jit, row_vector
    from hloc.cli_backend import prepare_for_cpu
    x = np.random.default_rng(0).standard_normal((512, 1024), np.float32)
    want = x - x.mean(axis=1, keepdims=True)
    objects = {}
    for enabled, lean, hit in [(True, True, False), (False, True, False), (True, False, False),
                               (True, True, True), (False, True, True)]:
        monkeypatch.setattr(row_vector, "ENABLED", enabled)
        monkeypatch.setattr(jit, "LEAN_ROWS", lean)
        exe = compile_module(prepare_for_cpu(hloc.parse(ROWS), None), cache_dir=tmp_path)
        assert exe.cache_hit == hit, (enabled, lean)
        np.testing.assert_allclose(exe.run([x]), want, rtol=1e-5, atol=1e-5)
        objects.setdefault((enabled, lean), exe.code.objects)
        assert exe.code.objects == objects[(enabled, lean)]
    # the settings make different code here, so a key without them would have served
    # the first object to the second compile
    assert objects[(True, True)] != objects[(False, True)]
    assert objects[(True, True)] != objects[(True, False)]
