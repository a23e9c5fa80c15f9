"""The compiled back end: HLO modules to native code through llvmlite.

Layout (one job per module):
  registry.py     `@emits` / `@emits_kernel`: attach element generators / kernel emitters
                  to the OpDefs through hloc.ops.facets, twin of the interpreter's `@evaluates`
  types.py        element types in LLVM: storage vs compute types, bf16/f16 by bits
  loops.py        `for_range` / `loop_nest`, Index (multi-index + physical linear offset)
  context.py      ModuleContext (llvm module, options, declarations) and KernelBuilder
                  (one function: builder, fast-math flags, per-kernel value cache)
  elementwise.py  the elementwise table (unary/binary rows), compare, select, clamp
  xla_math.py     XLA:CPU's own tanh (its rational approximation), for xla-cpu numerics
  conversions.py  convert, bitcast-convert
  structural.py   data movement generators (broadcast ... dynamic-update-slice)
  reductions.py   reduce, dot, map (loops inside generators; inlined to_apply)
  indexing.py     gather (generator, clamped) and scatter (kernel, dropped windows)
  windows.py      reduce-window (generator)
  convolution.py  convolution (generator; groups, dilations, padding, reversal)
  sorting.py      sort (kernel; HloEvaluator's merge sort, comparator inlined)
  custom_calls.py topk and the custom-call table (TopK, identity targets, jaxlib's LAPACK)
  lapack.py       jaxlib's LAPACK custom-calls as calls of OpenBLAS's LAPACK (scratch, workspace)
  linalg.py       triangular-solve (kernel, substitution in place)
  fft.py          fft (kernel; radix-2 / Bluestein lines in f64)
  rng.py          rng-bit-generator (Philox / ThreeFry, bit-exact with the interpreter); rng
                  (a Philox stream per instruction and run: random, not the interpreter's)
  kernels.py      one kernel function per fusion / unfused op (work-group ABI)
  buffers.py      buffer plan: aliases, outputs in place, arena reuse by live range
  computation.py  one function per HLO computation; while/conditional/call in LLVM
  blas.py         large dots as cblas_?gemm calls (NumPy's bundled OpenBLAS)
  gemm.py         the emitted tiled GEMM those calls go to with Options(gemm="emitted")
  parallel.py     work groups per kernel and each module's call of the thread runtime
  threadpool.py   the thread runtime: a persistent worker pool, compiled once per process
  profile.py      per-kernel timers of profiled code and the `--profile` report
  runtime.py      the allowlist of native symbols and the object-file check
  collective_calls.py  collectives / replica-id / partition-id as device-runtime calls
  device_runtime.py    N devices as threads meeting at collectives (DeviceExecutable)
  global_view.py  xla.sdy.FuncResultSharding (an annotation) in global-view dumps
  expand.py       expansions XLA:CPU always applies (batch-norm), on a clone, before lowering
  jit.py          lowering, new-PM optimisation, object emission, MCJIT loading
  partition.py    a large LLVM module as parts that compile independently
  llvm_parts.py   those parts printed with their settings (`hloc emit-llvm`, opt's .ll dumps)
  irtext.py       LLVM IR text of llvmlite functions (llvmlite's bytes, faster)
  compile_threads.py  the parts' parse/optimise/emit on threads (unlocked llvmlite calls)
  cache.py        the on-disk object cache
  settings.py     the module-level settings that change code (held by the cache's keys)
  executable.py   Executable: NumPy arguments/results bound to the native entry
"""
from __future__ import annotations

from . import (conversions, convolution, custom_calls, elementwise, fft,  # noqa: F401
               indexing, linalg, reductions, rng, sorting, structural, windows)
from . import global_view  # noqa: F401,E402  (sharding annotations of global-view dumps)
# Modules every compile (or the first f32 exp, narrow float) reaches, imported late where
# they are used (to keep import cycles out): imported here, their import (~4.5 ms from
# source in all) is not paid inside the first compile of a process
from . import device_runtime, expand, narrow_floats, settings, vmath  # noqa: F401,E402
from ..diagnostics import UnsupportedError
from .context import Options
from .executable import Executable
from .jit import lower

__all__ = ["Options", "Executable", "compile_module", "lower", "emit_llvm"]


def compile_module(module, *, numerics: str = "xla-cpu", cache_dir=None,
                   opt_level: int = 3, threads: int | None = None, profile: bool = False,
                   gemm: str = "blas", pipeline=None, donate=()) -> Executable:
    """Compile `module` into an Executable whose large kernels use `threads` threads
    (None: the cores the process may use). `pipeline` (name, fn) runs HLO passes first
    unless the object cache already holds the result (else the module compiles as it
    is); `profile` adds per-kernel timers (hloc.backend.profile); large dots call NumPy's
    OpenBLAS (gemm="blas") or the emitted GEMM ("emitted", as `hloc compile`). `donate`:
    ENTRY parameter numbers whose arguments every `run` may overwrite (the module's
    input_output_alias outputs then live in them; hloc.backend.executable)."""
    from .device_runtime import DeviceExecutable, needs_devices
    options = Options(numerics, opt_level, gemm=gemm, profile=profile, donate=donate)
    if needs_devices(module):
        if donate:
            raise UnsupportedError("unsupported: donated parameters in a multi-device module")
        # The device table numbers the instructions of the module that is compiled, so its
        # passes always run here rather than being skipped on a cache hit.
        if pipeline is not None:
            pipeline[1](module)
        return DeviceExecutable(module, options, cache_dir, threads)
    return Executable(module, options, cache_dir, threads, pipeline)


def emit_llvm(module, *, numerics: str = "xla-cpu", optimized: bool = True,
              opt_level: int = 3) -> str:
    """The LLVM IR of `module` as the JIT compiles it: every part (hloc.backend.jit.part_plan)
    after a header comment naming its settings, after its own passes (what runs) or before
    them (hloc.backend.llvm_parts; `llvm_parts.read` takes the text apart again)."""
    from . import llvm_parts
    return llvm_parts.text(llvm_parts.module_parts(module, Options(numerics, opt_level),
                                                   optimized))
