"""hloc: parse, print, verify, run, optimise and replay XLA HLO text.

Python API:
    module = hloc.parse(text)              # -> hloc.ir.module.Module (raises HlocError)
    text = hloc.to_text(module)            # XLA dump style
    out = hloc.run(module, x, y)           # run the ENTRY computation (also module.run(x, y))
    out = module.run(x, backend="interpreter")
    args = hloc.fake_arguments(module, seed=42)   # run_hlo_module-style random inputs

`run` takes one value per ENTRY parameter: NumPy arrays of exactly the parameter's
element type (ml_dtypes for bf16, f8, int4 ...) and dimensions, or Python numbers and
lists, which are converted to the parameter's type; tuples for tuple parameters. It
returns NumPy arrays (0-d for scalars) and tuples for tuple results, and raises
hloc.diagnostics.InputError for a wrong argument count, type or shape and
UnsupportedError for an operation the back end cannot execute.
"""
from __future__ import annotations

__version__ = "0.1.0"


def parse(text: str, name: str = "<input>"):
    from .syntax import parse_module
    return parse_module(text, name)


def parse_file(path):
    from .syntax import parse_module, read_text
    return parse_module(read_text(path), str(path))


def to_text(module) -> str:
    from .printer import module_to_text
    return module_to_text(module)


def run(module, *args, backend: str = "interpreter", seed: int = 42):
    """Run `module` on `args` with `backend`; returns the ENTRY root's value."""
    from .inputs import bind_arguments
    from .runner import run_module
    bound = bind_arguments(module, list(args), convert=True)
    return run_module(module, bound, backend=backend, seed=seed).value


def fake_arguments(module, *, seed: int = 42, use_large_float_range: bool = False) -> list:
    """Seeded random arguments honouring index / init-value / sort-key constraints."""
    from .fake_args import make_fake_arguments
    return make_fake_arguments(module, seed=seed, use_large_float_range=use_large_float_range)


def _install() -> None:
    from .ir.module import install_runner
    install_runner(run)


_install()
