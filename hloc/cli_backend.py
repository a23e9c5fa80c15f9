"""The compiled back end's command-line and runner pieces.

`CpuBackend` is the runner's "cpu" back end (compile once in `prepare`, call per
iteration); `prepare_for_cpu` runs the default pipeline on a before-optimizations module
(run_hlo_module's test side) unless told otherwise; `emit_llvm` is the `hloc emit-llvm`
command. Options come from the CLI; the cache directory is chosen here (XDG_CACHE_HOME,
else ~/.cache/hloc), never inside the library.
"""
from __future__ import annotations

import os
import sys

import click


def default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hloc")


def cpu_pipeline(opt: bool | None):
    """The (name, fn) pipeline argument of compile_module for `prepare_for_cpu(.., opt)`."""
    return (f"default_pipeline(opt={opt})", lambda m: prepare_for_cpu(m, opt))


def prepare_for_cpu(module, opt: bool | None):
    """Run the default pipeline when `opt` is True, or when None and the module does not
    look optimised already (before-optimizations dumps); False compiles it as it is."""
    if opt is False:
        return module
    from .passes.driver import optimize
    from .passes.pipelines import default_pipeline
    optimize(module, default_pipeline(), verify_each=False, force=bool(opt))
    return module


class CpuBackend:
    """hloc.runner's Backend interface (load / prepare / execute) for compiled code."""

    name = "cpu"
    runner_name = "CPU"

    def __init__(self, numerics: str = "xla-cpu", opt: bool | None = None, cache_dir=None,
                 threads: int | None = None, profile: bool = False):
        self.numerics = numerics
        self.profile = profile          # per-kernel timers (`hloc run --profile`)
        self.threads = threads          # None: the cores the process may use
        self.opt = opt
        self.cache_dir = cache_dir      # None: no on-disk cache (the library default)
        self.cache_hit = False
        self.opt_level = 3              # LLVM's (0: a tenth of the compile time)

    def load(self) -> None:
        from . import backend  # noqa: F401  (registers every generator)

    def prepare(self, module, *, seed: int):
        from .backend import compile_module
        from .diagnostics import UnsupportedError
        try:
            exe = compile_module(module, numerics=self.numerics, cache_dir=self.cache_dir,
                                 threads=self.threads, opt_level=self.opt_level,
                                 profile=self.profile,
                                 pipeline=cpu_pipeline(self.opt))
        except UnsupportedError as e:
            e.notes = (*e.notes, "the compiled back end (--backend cpu, the default) cannot run "
                                 "this yet; try --backend interpreter")
            raise
        self.cache_hit = exe.cache_hit
        self.used_threads = exe.threads
        self.executable = exe
        return exe

    def execute(self, prepared, args: list):
        return prepared.run(args)

    def execute_devices(self, prepared, args_per_device: list) -> list:
        from .backend.device_runtime import run_devices
        return run_devices(prepared, args_per_device)

    def json_extra(self) -> dict:
        extra = {"numerics": self.numerics, "cache_hit": self.cache_hit,
                 "threads": getattr(self, "used_threads", self.threads)}
        exe = getattr(self, "executable", None)
        if exe is not None:
            extra["memory"] = exe.memory_bytes | {"peak_rss": peak_rss()}
            if self.profile:
                extra["profile"] = exe.profile()
        return extra


def peak_rss() -> int | None:
    """The process's peak resident set size in bytes (None where not known)."""
    try:
        import resource
    except ImportError:
        return None
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(kib) * (1 if sys.platform == "darwin" else 1024)


def configure_cpu(*, numerics: str, opt: bool | None, threads: int | None = None,
                  profile: bool = False) -> None:
    """The CLI's "cpu" back end: its options and the user's cache directory."""
    from .runner import BACKENDS
    BACKENDS["cpu"] = CpuBackend(numerics=numerics, opt=opt, cache_dir=default_cache_dir(),
                                 threads=threads, profile=profile)


@click.command("emit-llvm")
@click.argument("module", type=click.Path(allow_dash=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the IR here.")
@click.option("--no-opt", "no_llvm_opt", is_flag=True,
              help="The IR before LLVM's passes (default: the optimised IR that runs).")
@click.option("--hlo-opt/--no-hlo-opt", "hlo_opt", default=None,
              help="Run (or skip) hloc's default HLO pipeline first (default: only for "
                   "before-optimizations modules).")
@click.option("--numerics", type=click.Choice(["xla-cpu", "ieee"]), default="xla-cpu",
              show_default=True)
def emit_llvm_command(module, output, no_llvm_opt, hlo_opt, numerics):
    """Print the LLVM IR hloc compiles MODULE to (one function per kernel and computation).

    The module compiles as one or more parts (LLVM modules), each optimised and
    code-generated with its own settings; every part is printed after a comment line
    `; hloc part K of N (part_NN): passes=... slp=... llvm-options=... codegen=...`."""
    from .backend import emit_llvm
    from .cli_common import load_module, write_text
    _, m, _ = load_module(module, command="emit-llvm", can_pick=False)
    prepare_for_cpu(m, hlo_opt)
    write_text(emit_llvm(m, numerics=numerics, optimized=not no_llvm_opt), output)
