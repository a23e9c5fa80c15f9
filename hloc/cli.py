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
    def resolve_command(self, ctx, args):
        import os
        name = args[0] if args else None
        if name is not None and self.get_command(ctx, name) is None and (
                os.path.exists(name) or "." in name or os.sep in name):
            raise click.UsageError(
                f"{name!r} is not a command; to check it: hloc check {name}; to run it: "
                f"hloc run {name} (hloc --help lists the commands)")
        return super().resolve_command(ctx, args)

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
@click.option("-q", "--quiet", is_flag=True,
              help="No progress lines (shown on a terminal when work takes over 2 s; "
                   "NO_COLOR only turns their colour off).")
@click.version_option(package_name="hloc")
def main(debug, quiet):
    """Parse, print, verify, run and optimise XLA HLO text dumps."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))


@main.command()
@click.argument("file", type=click.Path(allow_dash=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="Write here instead of stdout.")
@click.option("--short", is_flag=True, help="ShortParsable style: no %, no signatures, no metadata.")
@click.option("--pick", metavar="TEXT",
              help="FILE is a dump directory: take the HLO file whose name contains TEXT.")
def fmt(file, output, short, pick):
    """Print the module(s) in FILE as XLA prints them."""
    from .cli_common import cli_progress, load_modules, write_text
    from .printer import PrintOptions, module_to_text
    opts = PrintOptions.short_parsable() if short else PrintOptions()
    progress = cli_progress()
    try:
        _, modules = load_modules(file, command="fmt", pick=pick, progress=progress)
        with progress.phase("print"):
            text = "---\n".join(module_to_text(m, opts) for m in modules)
    finally:
        progress.close()
    write_text(text, output)


def _add_commands() -> None:
    from .cli_backend import emit_llvm_command
    from .cli_check import check
    from .cli_compile import compile_command
    from .cli_graph import graph
    from .cli_opt import opt
    from .cli_replay import replay
    from .cli_triage import bisect_command, reduce_command
    from .cli_run import run
    main.add_command(check)
    main.add_command(compile_command)
    main.add_command(emit_llvm_command)
    main.add_command(graph)
    main.add_command(opt)
    main.add_command(replay)
    main.add_command(bisect_command)
    main.add_command(reduce_command)
    main.add_command(run)


_add_commands()
