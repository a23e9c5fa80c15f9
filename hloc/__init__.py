"""hloc: parse, print, verify, run, optimise and replay XLA HLO text.

Python API:
    module = hloc.parse(text)              # -> hloc.ir.module.Module (raises HlocError)
    text = hloc.to_text(module)            # XLA dump style
    out = hloc.run(module, x, y)           # run the ENTRY computation (also module.run(x, y))
    out = module.run(x, backend="interpreter")     # or backend="cpu": compiled with LLVM
    exe = hloc.compile(module); exe.run([x, y])    # compile once, call many times
    hloc.compile(module, "libm.so", header="m.h")  # a C library (hloc.aot), as `hloc compile`
    args = hloc.fake_arguments(module, seed=42)   # run_hlo_module-style random inputs
    outs = hloc.load_outputs("out.npz")    # `hloc run --output` leaves, real dtypes (bf16 ...)
    dot = hloc.graph(module, around="add.5")      # DOT; hloc.graph.graph_html(...) for a page

`run` takes one value per ENTRY parameter: NumPy arrays of exactly the parameter's
element type (ml_dtypes for bf16, f8, int4 ...) and dimensions, or Python numbers and
lists, which are converted to the parameter's type; tuples for tuple parameters. It
returns NumPy arrays (0-d for scalars) and tuples for tuple results, and raises
hloc.diagnostics.InputError for a wrong argument count, type or shape and
UnsupportedError for an operation the back end cannot execute.

Layers, bottom-up (tests/test_layering.py reads the imports and holds them to this):
1. value types: hloc.ir.dtypes, .shape, .attrs, .literal, .stackframes and
   hloc.diagnostics; they import nothing above them.
2. the registry: hloc.ops (OpDef rows, traits, shape rules; executor facets attach
   through hloc.ops.facets); imports only value types.
3. the graph: hloc.ir.module, .graph, .clone, .rewriter, .call_graph (instructions,
   computations, modules, every edit of them, and XLA's CallGraph); may ask the registry
   (e.g. whether an op has side effects, or the context it calls computations in).
4. text, beside the graph: hloc.syntax (lexing, literal parsing, building) and the printer.
5. the verifier, the interpreter (hloc.interp) and the passes (hloc.passes; constant
   folding runs the interpreter, by design).
6. executors and commands on top: runner, inputs, compare, fake_args, cli, backend.
No import cycles; nothing in the graph or the registry imports passes, interp, syntax or
an executor.
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["parse", "parse_file", "to_text", "run", "compile", "fake_arguments",
           "load_outputs", "graph", "__version__"]


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


def compile(module, path=None, *, numerics: str = "xla-cpu", cache_dir=None,
            optimize: bool | None = None, donate=(), **library):
    """Compile `module` to native code. The default HLO pipeline runs first (in place)
    unless the module is already optimised (`optimize` True/False forces it on/off);
    `cache_dir` enables the on-disk object cache.

    Without `path`: an in-process Executable (hloc.backend) whose `run(args)` takes one
    NumPy array per ENTRY parameter (exact types, as `run`); a cache hit runs neither the
    pipeline nor code generation; `run(args, out=arrays)` writes into the caller's arrays,
    otherwise result buffers are reused once dropped. `donate`: ENTRY parameter numbers
    whose arguments every `run` may overwrite (input_output_alias outputs then live in
    them; hloc.backend.executable).
    With `path` (OUT.so, OUT.a or OUT.o): writes a library with a C interface, as `hloc
    compile` does, and returns its hloc.aot.Library description; `library` takes
    hloc.aot.compile_library's options (header, name, triple, cpu, threads, blas, lapack,
    cpp_class, cc ...)."""
    from .cli_backend import cpu_pipeline, prepare_for_cpu
    if path is not None:
        if donate:
            raise TypeError("compile() with a path takes no donate (in-process executables only)")
        prepare_for_cpu(module, optimize)
        from . import backend  # noqa: F401  (registers every emitter)
        from .aot import compile_library
        return compile_library(module, str(path), numerics=numerics, cache_dir=cache_dir, **library)
    if library:
        raise TypeError(f"compile() without a path takes no {', '.join(sorted(library))}")
    from .backend import compile_module
    return compile_module(module, numerics=numerics, cache_dir=cache_dir,
                          pipeline=cpu_pipeline(optimize), donate=donate)


def fake_arguments(module, *, seed: int = 42, use_large_float_range: bool = False) -> list:
    """Seeded random arguments honouring index / init-value / sort-key constraints."""
    from .fake_args import make_fake_arguments
    return make_fake_arguments(module, seed=seed, use_large_float_range=use_large_float_range)


def load_outputs(path) -> list:
    """The out0, out1, ... arrays of an .npz written by `hloc run --output` (or in the
    testdata convention), in order, as NumPy / ml_dtypes arrays (bf16 is bfloat16)."""
    from .inputs import load_outputs as _load
    return _load(path)


def __getattr__(name: str):
    if name == "graph":                 # the drawing package, callable as hloc.graph(m)
        import importlib
        return importlib.import_module(".graph", __name__)
    raise AttributeError(f"module 'hloc' has no attribute {name!r}")


def _module_repr_svg(module):
    """Jupyter: the module drawn by Graphviz (None, so HTML is used, without `dot`)."""
    from .graph import find_dot, graph_image
    if find_dot() is None:
        return None
    return graph_image(module, "svg").decode("utf-8")


def _module_repr_html(module):
    """Jupyter: the interactive page in a sandboxed iframe (scripts only, no network)."""
    from html import escape

    from .graph import graph_html
    page = graph_html(module)
    return (f'<iframe sandbox="allow-scripts" style="width:100%;height:600px;border:0" '
            f'srcdoc="{escape(page, quote=True)}"></iframe>')


def _install() -> None:
    """What Module.run and the Jupyter reprs (defined on the class) call: this package
    sits above the IR, so it installs them there."""
    from .ir.hooks import install_hooks
    install_hooks(run=run, repr_svg=_module_repr_svg, repr_html=_module_repr_html)


_install()
