"""hloc: parse, print, verify, run, optimise and replay XLA HLO text.

Python API:
    module = hloc.parse(text)              # -> hloc.ir.module.Module (raises HlocError)
    text = hloc.to_text(module)            # XLA dump style
    out = hloc.run(module, x, y)           # run the ENTRY computation (also module.run(x, y))
    out = module.run(x, backend="interpreter")     # or backend="cpu": compiled with LLVM
    exe = hloc.compile(module); exe.run([x, y])    # compile once, call many times
    args = hloc.fake_arguments(module, seed=42)   # run_hlo_module-style random inputs
    outs = hloc.load_outputs("out.npz")    # `hloc run --output` leaves, real dtypes (bf16 ...)
    dot = hloc.graph(module, around="add.5")      # DOT; hloc.graph.graph_html(...) for a page

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


def compile(module, *, numerics: str = "xla-cpu", cache_dir=None, optimize: bool | None = None):
    """Compile `module` to native code (hloc.backend): returns an Executable whose
    `run(args)` takes one NumPy array per ENTRY parameter (exact types, as `run`). The
    default HLO pipeline runs first unless the module is already optimised (`optimize`
    True/False forces it on/off); `cache_dir` enables the on-disk object cache."""
    from .backend import compile_module
    from .cli_backend import prepare_for_cpu
    return compile_module(prepare_for_cpu(module, optimize), numerics=numerics,
                          cache_dir=cache_dir)


def fake_arguments(module, *, seed: int = 42, use_large_float_range: bool = False) -> list:
    """Seeded random arguments honouring index / init-value / sort-key constraints."""
    from .fake_args import make_fake_arguments
    return make_fake_arguments(module, seed=seed, use_large_float_range=use_large_float_range)


def load_outputs(path) -> list:
    """The out0, out1, ... arrays of an .npz written by `hloc run --output` (or in the
    testdata convention), in order, as NumPy / ml_dtypes arrays (bf16 is bfloat16)."""
    from .inputs import load_outputs as _load
    return _load(path)


def _module_run(self, *args, backend: str = "interpreter", seed: int = 42):
    return run(self, *args, backend=backend, seed=seed)


_module_run.__name__ = "run"
_module_run.__doc__ = run.__doc__


def __getattr__(name: str):
    if name == "graph":                 # the drawing package, callable as hloc.graph(m)
        import importlib
        return importlib.import_module(".graph", __name__)
    raise AttributeError(f"module 'hloc' has no attribute {name!r}")


def _module_repr_svg(self):
    """Jupyter: the module drawn by Graphviz (None, so HTML is used, without `dot`)."""
    from .graph import find_dot, graph_image
    if find_dot() is None:
        return None
    return graph_image(self, "svg").decode("utf-8")


def _module_repr_html(self):
    """Jupyter: the interactive page in a sandboxed iframe (scripts only, no network)."""
    from html import escape

    from .graph import graph_html
    page = graph_html(self)
    return (f'<iframe sandbox="allow-scripts" style="width:100%;height:600px;border:0" '
            f'srcdoc="{escape(page, quote=True)}"></iframe>')


def _attach() -> None:
    from .ir.module import Module
    Module.run = _module_run
    Module._repr_svg_ = _module_repr_svg
    Module._repr_html_ = _module_repr_html


_attach()
