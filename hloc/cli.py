"""The `hloc` command line: maps flags to library calls; no logic of its own.

Errors are HlocError instances rendered as `file:line:col: error: message` plus the
source line and a caret on stderr, with the error's exit code (2 for parse/verify).
`--debug` shows Python tracebacks instead. Any other exception is an internal error: one
line, exit 4; Ctrl-C: one line, exit 130.
"""
from __future__ import annotations

import os
import sys
import traceback

import click

from .diagnostics import HlocError


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HlocError as e:
            if ctx.params.get("debug"):
                raise
            click.echo(e.render(), err=True)
            ctx.exit(e.exit_code)
        except RecursionError:
            if ctx.params.get("debug"):
                raise
            click.echo("error: input nests too deeply", err=True)
            ctx.exit(2)
        except MemoryError:
            if ctx.params.get("debug"):
                raise
            click.echo("error: out of memory (a value in this module is too large for this "
                       "machine)", err=True)
            ctx.exit(4)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            if ctx.params.get("debug"):
                traceback.print_exc()
            click.echo("hloc: interrupted", err=True)
            ctx.exit(130)
        except BrokenPipeError:          # `hloc fmt big.hlo | head`: the reader left
            sys.stdout = open(os.devnull, "w")
            ctx.exit(141)
        except Exception as e:           # the last line of defence: never a bare traceback
            if ctx.params.get("debug"):
                raise
            message = str(e).strip().splitlines()[0] if str(e).strip() else ""
            click.echo(f"hloc: internal error: {type(e).__name__}: {message} (run with --debug "
                       f"for the traceback; please report it)", err=True)
            ctx.exit(4)


@click.group(cls=_Group)
@click.option("--debug", is_flag=True, help="Show Python tracebacks for errors.")
@click.version_option(package_name="hloc")
def main(debug):
    """Parse, print, verify, run and optimise XLA HLO text dumps."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


def _load(path):
    from .syntax import parse_modules, read_text
    if path == "-":
        return parse_modules(sys.stdin.read(), "<stdin>")
    return parse_modules(read_text(path), path)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option("--no-verify", is_flag=True, help="Only parse; skip the HLO verifier.")
def check(files, no_verify):
    """Parse and verify FILES; one line per file; exit 0 only if all are fine."""
    from .verifier import verify
    worst = 0
    for path in files:
        try:
            modules = _load(path)
            if not no_verify:
                for m in modules:
                    verify(m)
        except HlocError as e:
            click.echo(e.render(), err=True)
            click.echo(f"{path}: FAILED", err=False)
            worst = max(worst, e.exit_code)
            continue
        except OSError as e:
            click.echo(f"error: {path}: {e.strerror}", err=True)
            worst = max(worst, 2)
            continue
        n = sum(len(c.instructions) for m in modules for c in m.computations)
        click.echo(f"{path}: OK ({len(modules)} module{'s' if len(modules) != 1 else ''}, "
                   f"{n} instructions)")
    sys.exit(worst)


@main.command()
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write here instead of stdout.")
@click.option("--short", is_flag=True, help="ShortParsable style: no %, no signatures, no metadata.")
def fmt(file, output, short):
    """Print the module(s) in FILE as XLA prints them."""
    from .printer import PrintOptions, module_to_text
    opts = PrintOptions.short_parsable() if short else PrintOptions()
    try:
        modules = _load(file)
    except OSError as e:
        raise HlocError(f"{file}: {e.strerror}") from None
    text = "---\n".join(module_to_text(m, opts) for m in modules)
    if output:
        with open(output, "w") as f:
            f.write(text)
    else:
        click.echo(text, nl=False)


class _RunCommand(click.Command):
    """`--inputs a.npy b.npy` takes every following non-option word (click options take
    one value each); when that swallows the MODULE argument, the last word is MODULE."""

    def parse_args(self, ctx, args):
        takes_value = {name for p in self.params if isinstance(p, click.Option)
                       and not p.is_flag and p.nargs == 1 for name in p.opts}
        out, groups, positional = [], [], 0
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                rest = args[i + 1:]
                positional += len(rest)
                out.extend(args[i:])
                break
            if a == "--inputs" or a.startswith("--inputs="):
                vals = [a.split("=", 1)[1]] if "=" in a else []
                i += 1
                while i < len(args) and not (args[i].startswith("-") and args[i] != "-"):
                    vals.append(args[i])
                    i += 1
                groups.append((len(out), vals))
                out.append(None)
                continue
            if a.startswith("-") and a != "-":
                out.append(a)
                if a in takes_value and i + 1 < len(args):
                    out.append(args[i + 1])
                    i += 1
            else:
                positional += 1
                out.append(a)
            i += 1
        given_back = None
        if positional == 0 and groups and len(groups[-1][1]) > 1:
            given_back = groups[-1][1].pop()
        final = []
        slots = dict(groups)
        for j, a in enumerate(out):
            if a is None:
                vals = slots[j]
                if not vals:
                    final.append("--inputs")     # let click report the missing value
                for v in vals:
                    final.extend(["--inputs", v])
            else:
                final.append(a)
        if given_back is not None:
            final.append(given_back)
        return super().parse_args(ctx, final)


@main.command(cls=_RunCommand)
@click.argument("module", type=click.Path(allow_dash=True))
@click.option("--inputs", "inputs", multiple=True, metavar="FILE...",
              help="Arguments: one .npz (in0, in1, ... or keys named like the parameters) "
                   "or one .npy/.npz per parameter.")
@click.option("--input-literal", "literals", multiple=True, metavar="TEXT",
              help="An argument as XLA literal text, e.g. 'f32[2] {1, 2}' (repeatable).")
@click.option("--seed", type=int, default=42, show_default=True,
              help="Seed of the fake arguments made when no inputs are given.")
@click.option("--use-large-float-range", is_flag=True,
              help="Fake floats over the whole range instead of [-0.1, 0.2).")
@click.option("--backend", default="interpreter", show_default=True, metavar="NAME",
              help="Where to run the module (hloc.runner.BACKENDS; now: interpreter).")
@click.option("--iterations", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs on the same arguments; each is timed on stderr.")
@click.option("--output", type=click.Path(dir_okay=False),
              help="Write the flattened results as out0, out1, ... to this .npz.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (outputs, timings) instead of literal text.")
@click.option("--print-values", is_flag=True,
              help="With --json: include the values of outputs of any size.")
@click.option("--print-all", is_flag=True, help="Do not truncate literals of 1000+ elements.")
@click.option("--print-literals", is_flag=True,
              help="Also print the arguments as '** Argument i **' blocks.")
@click.option("--no-verify", is_flag=True, help="Skip the HLO verifier.")
def run(module, inputs, literals, seed, use_large_float_range, backend, iterations, output,
        as_json, print_values, print_all, print_literals, no_verify):
    """Run MODULE (HLO text) on inputs or on fake arguments and print the result.

    Without --inputs / --input-literal the arguments are made as run_hlo_module's
    MakeFakeArguments makes them: the same constraints (indices in range, reducer
    identities, unique sort keys), seeded, but not the same random bits.
    Exit status: 0 ok, 2 bad input or parse/verify error, 3 unsupported operation.
    """
    import json

    from .diagnostics import InputError
    from .inputs import bind_arguments, read_inputs
    from .runner import (argument_text, get_backend, result_json, result_text,
                         run_module, save_outputs)
    try:
        modules = _load(module)
    except OSError as e:
        raise InputError(f"{module}: {e.strerror}") from None
    if len(modules) != 1:
        raise InputError(f"{module}: holds {len(modules)} modules; `hloc run` takes one")
    m = modules[0]
    if not no_verify:
        from .verifier import verify
        verify(m)
    if inputs or literals:
        args = bind_arguments(m, read_inputs(inputs, literals))
    else:
        from .fake_args import make_fake_arguments
        args = make_fake_arguments(m, seed=seed, use_large_float_range=use_large_float_range)
    runner = get_backend(backend).runner_name
    if print_literals and not as_json:
        click.echo(argument_text(m, args, print_all=print_all))

    def before(i):
        if iterations != 1:
            click.echo(f"\n=== Iteration {i}", err=True)

    def after(i, secs):
        click.echo(f"execution time for runner {runner}: {secs:g}s.", err=True)

    result = run_module(m, args, backend=backend, iterations=iterations, seed=seed,
                        before_iteration=before, after_iteration=after)
    if output:
        save_outputs(output, result.shape, result.value)
    if as_json:
        click.echo(json.dumps(result_json(result, print_values=print_values or print_all)))
    else:
        if print_literals:
            click.echo(f"** Result with test runner {runner} **")
        click.echo(result_text(result.shape, result.value, print_all=print_all))


def _add_commands() -> None:
    from .cli_opt import opt
    main.add_command(opt)


_add_commands()
