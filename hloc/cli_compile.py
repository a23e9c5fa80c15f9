"""`hloc compile`: a module as a C library (hloc.aot) — the command-line half.

Flags map onto hloc.aot.compile_library; the C compiler comes from --cc, else $CC, else
`cc` (read here, not in the library).
"""
from __future__ import annotations

import os

import click


@click.command("compile")
@click.argument("module", type=click.Path(allow_dash=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="OUT.so (shared library, linked with the C compiler), OUT.a or OUT.o "
                   "(no linker needed).")
@click.option("--header", type=click.Path(dir_okay=False), help="Write the C header here.")
@click.option("--name", help="Prefix of the C symbols (default: from OUT, without `lib`).")
@click.option("--target", "triple", metavar="TRIPLE",
              help="LLVM target triple (default: this machine), e.g. aarch64-unknown-linux-gnu.")
@click.option("--cpu", metavar="NAME",
              help="CPU to generate code for (default: this machine's, whose instruction set the "
                   "library then needs; e.g. x86-64-v3 for any AVX2 machine; other targets: generic).")
@click.option("--features", metavar="LIST", help="LLVM target features, e.g. +neon,+fp-armv8.")
@click.option("--threads", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Threads large kernels use in PREFIX_run (PREFIX_run_with sets it per call).")
@click.option("--blas", type=click.Path(exists=True, dir_okay=False),
              help="Link this BLAS for large dots instead of the emitted GEMM: a standard cblas "
                   "(cblas_?gemm), or NumPy's bundled libscipy_openblas64_ (the JIT's bits).")
@click.option("--lapack", type=click.Path(exists=True, dir_okay=False),
              help="Link this library for the routines LAPACK custom calls need.")
@click.option("--cpp-class", metavar="NS::Name", help="Add a C++ wrapper class to the header.")
@click.option("--numerics", type=click.Choice(["xla-cpu", "ieee"]), default="xla-cpu",
              show_default=True)
@click.option("--hlo-opt/--no-hlo-opt", "hlo_opt", default=None,
              help="Run (or skip) hloc's default HLO pipeline first (default: only for "
                   "before-optimizations modules), as `hloc run --backend cpu` does.")
@click.option("--cc", metavar="PROGRAM", help="C compiler that links a .so (default: $CC or cc).")
def compile_command(module, output, header, name, triple, cpu, features, threads, blas, lapack,
                    cpp_class, numerics, hlo_opt, cc):
    """Compile MODULE ahead of time into a library with a C interface (see its header)."""
    from . import backend  # noqa: F401  (registers every emitter)
    from .aot import compile_library
    from .cli_backend import default_cache_dir, prepare_for_cpu
    from .cli_common import load_module
    _, m, _ = load_module(module, command="compile", can_pick=False)
    prepare_for_cpu(m, hlo_opt)
    lib = compile_library(m, output, header=header, name=name, triple=triple, cpu=cpu,
                          features=features, threads=threads, numerics=numerics, blas=blas,
                          lapack=lapack, cpp_class=cpp_class, cc=cc or os.environ.get("CC"),
                          source=os.path.basename(module), cache_dir=default_cache_dir())
    click.echo(f"wrote {output} ({lib.triple}, cpu {lib.cpu}; {len(lib.args)} arguments, "
               f"{len(lib.results)} results, {lib.scratch_bytes} bytes of scratch)"
               + (f" and {header}" if header else ""), err=True)
