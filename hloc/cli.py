"""The `hloc` command line: maps flags to library calls; no logic of its own.

Errors are HlocError instances rendered as `file:line:col: error: message` plus the
source line and a caret on stderr, with the error's exit code (2 for parse/verify).
`--debug` shows Python tracebacks instead.
"""
from __future__ import annotations

import sys

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
