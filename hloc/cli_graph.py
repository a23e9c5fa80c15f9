"""`hloc graph`: draw a module as DOT, SVG, PNG or a self-contained HTML page.

Flags map to hloc.graph; the output format comes from -o's extension (DOT on stdout
without -o). Notes (the size limit, skipped optimisation) go to stderr.
"""
from __future__ import annotations

import os
import sys

import click

from .diagnostics import InputError

_FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".html": "html",
            ".htm": "html"}


@click.command("graph")
@click.argument("module", type=click.Path(allow_dash=True))
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="OUT.dot, OUT.svg, OUT.png or OUT.html (SVG/PNG need Graphviz's `dot`; "
                   "DOT on stdout without -o).")
@click.option("--computation", metavar="NAME", help="Draw this computation [default: ENTRY].")
@click.option("--around", metavar="INSTR", help="Draw the neighbourhood of this instruction.")
@click.option("--radius", type=click.IntRange(min=0), default=3, show_default=True,
              help="With --around: how many edges away from INSTR to draw.")
@click.option("--fusions", type=click.Choice(["collapsed", "expanded"]), default="expanded",
              show_default=True, help="Fusions as clusters holding their fused computation, "
                                      "or as single nodes.")
@click.option("--after-opt", is_flag=True,
              help="Run hloc's XLA:CPU pipeline first and draw the optimised module.")
@click.option("--max-nodes", type=click.IntRange(min=1), default=1500, show_default=True,
              help="Above this many instructions draw one computation per view.")
@click.option("--layout", type=click.Choice(["auto", "graphviz", "dagre"]), default="auto",
              show_default=True, help="HTML only: Graphviz's layout (when `dot` is "
                                      "installed) or the page's own dagre layout.")
def graph(module, output, computation, around, radius, fusions, after_opt, max_nodes,
          layout):
    """Draw MODULE (HLO text) coloured as XLA's hlo_graph_dumper draws it."""
    from . import graph as g
    from .cli_common import load_module

    fmt = "dot"
    if output:
        fmt = _FORMATS.get(os.path.splitext(output)[1].lower())
        if fmt is None:
            raise click.BadParameter("the output must end in .dot, .svg, .png or .html",
                                     param_hint="-o")
    if computation and around:
        raise click.UsageError("--computation and --around cannot be used together")
    _, m, _ = load_module(module, command="graph", can_pick=False)
    if after_opt:
        from .passes.driver import optimize
        from .passes.pipelines import default_pipeline
        result = optimize(m, default_pipeline())
        if result.skipped:
            click.echo(f"hloc graph: {m.name}: {result.skipped}; drawn as it is", err=True)
    options = dict(computation=computation, around=around, radius=radius, fusions=fusions,
                   max_nodes=max_nodes)
    views = g.views(m, **options)
    for note in views[0].notes:
        click.echo(f"hloc graph: note: {note}", err=True)
    if fmt == "html":
        data = g.to_html(views, m.name, g.graphviz_svgs(views, layout)).encode("utf-8")
    elif fmt == "dot":
        data = g.to_dot(views[0]).encode("utf-8")
    else:
        data = g.render(g.to_dot(views[0]), fmt)
    if not output:
        sys.stdout.buffer.write(data)
        return
    try:
        with open(output, "wb") as f:
            f.write(data)
    except OSError as e:
        raise InputError(f"{output}: cannot write: {e.strerror or e}") from None
