"""The back end's module-level settings that change generated code, in one list.

A process may change such a setting (`row_vector.ENABLED`, `jit.LEAN_ROWS`,
`parallel.MIN_WORK`, ...: the A/B tools' `module.NAME=value`, tests' monkeypatch) and
compile again. The object cache's keys hold the current values (`text`:
hloc.backend.jit.module_key for modules, threadpool_jit for the thread runtime), so an
object compiled under other settings is never loaded. tests/test_backend_settings.py
checks that every upper-case module-level constant of the package is either listed here
or known not to change code (names of symbols, ABI values), so a new switch cannot be
left out of the keys unnoticed.
"""
from __future__ import annotations

import importlib

# (module under hloc.backend, its settings) of the code emitted for a module
MODULE = (
    ("blas", ("BLAS_MIN_WORK",)),
    ("bounds", ("ENABLED",)),
    ("buffers", ("ALIGN",)),
    ("compile_threads", ("BRIEF_OPTIONS", "DEFAULT_OPTIONS", "LEAN", "LEAN_PASSES")),
    ("computation", ("CALLER_ARRAY_BYTES", "OWN_UNIT_INSTRUCTIONS", "BRIEF_LOOPED_WORK",
                     "BRIEF_IM2COL_BYTES")),
    ("conv_gemm", ("CONV_GEMM_MIN_WORK", "EMITTED_MIN_OK", "SCRATCH_BYTES", "MIN_CHUNK")),
    ("gemm", ("KC_BYTES", "MAX_GROUPS", "MIN_PARALLEL")),
    ("jit", ("UNROLL_THRESHOLD", "PART_BYTES", "MAX_PARTS", "SLP_MAX_INSTRUCTIONS",
             "BRIEF_LEVEL", "LEAN_ROWS", "ROW_SLP", "ROW_CODEGEN_LEVEL", "ROW_BRIEF_OPTIONS")),
    ("kernels", ("INLINE_WORK", "KERNEL_ARRAY_BYTES", "CALLER_ARRAY_BYTES")),
    ("parallel", ("MAX_THREADS", "MIN_WORK", "CHUNK", "MAX_GROUPS")),
    ("row_ahead", ("ENABLED", "FIRST_FAST", "PREFETCH", "PREFETCH_BYTES")),
    ("row_divide", ("D_LO", "D_HI", "A_MIN_BITS", "SUM_BOUND")),
    ("row_groups", ("ROW_BYTES", "SCRATCH_BYTES", "MIN_BYTES", "FAST_DIVIDE",
                    "PARALLEL_ACCESSES", "COLD_SCALAR")),
    ("row_hosts", ("HOST_BYTES",)),
    ("row_loop_hints", ("LONG_CHAIN", "KEEP_INTERLEAVE", "SCALAR")),
    ("row_vector", ("SUM_IC", "EPILOGUE_MIN_VF", "ENABLED", "DIVIDE_WAYS", "DIVIDE_BACKWARD")),
    ("split_reduce", ("CHUNK", "MAX_GROUPS", "MIN_WORK")),
    ("vmath", ("SCALEF", "HALVES_FROM_Z")),
    ("xla_math", ("CONTRACT", "TANH_F32", "TANH_F64")),
)
# ... and of the thread runtime (hloc.backend.threadpool, compiled by threadpool_jit)
RUNTIME = (
    ("threadpool", ("MAX_THREADS", "CALLER_SPINS", "WORKER_SPINS", "CALLER_YIELD",
                    "WORKER_YIELD")),
    ("threadpool_jit", ("LEVEL",)),
)


def text(which=MODULE) -> str:
    """`module.NAME=value;...` of the settings `which` (MODULE or RUNTIME), now."""
    out = []
    for mod, names in which:
        m = importlib.import_module(f"{__package__}.{mod}")
        out += [f"{mod}.{n}={_shown(getattr(m, n))}" for n in names]
    return ";".join(out)


def _shown(value) -> str:
    """repr, with functions by their qualified names (a function's repr holds its
    address, which differs from process to process: the key would never hit)."""
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_shown(v) for v in value)
        return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
    if callable(value):
        return getattr(value, "__qualname__", repr(value))
    return repr(value)
