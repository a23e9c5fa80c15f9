"""`hloc graph`: draw a module as XLA's hlo_graph_dumper does, offline.

    dot_text = hloc.graph(module)                       # DOT, written by hloc itself
                                                        # (this package is callable)
    dot_text = hloc.graph(module, around="add.5", radius=2)
    page = hloc.graph_html(module)                      # one self-contained HTML file
    png = hloc.graph_image(module, "png")               # needs Graphviz's `dot`

selection.py decides what is drawn (views, --around, the size limit), model.py turns it
into nodes/edges/clusters, colours.py paints them, dot.py and html.py write them, and
graphviz.py runs `dot` for SVG/PNG (and for the HTML page's layout when installed).
"""
from __future__ import annotations

import sys
import types

from .graphviz import GraphvizFailed, find_dot, render
from .html import to_html
from .model import View, build_view
from .selection import DEFAULT_MAX_NODES, DEFAULT_RADIUS, plan
from .dot import to_dot

__all__ = ["graph", "graph_html", "graph_image", "views", "to_dot", "to_html"]


def views(module, *, computation: str | None = None, around: str | None = None,
          radius: int = DEFAULT_RADIUS, fusions: str = "expanded",
          max_nodes: int = DEFAULT_MAX_NODES) -> list[View]:
    """The views to draw: one, or one per computation when the module is over max_nodes."""
    specs = plan(module, computation=computation, around=around, radius=radius,
                 fusions=fusions, max_nodes=max_nodes)
    out = [build_view(module, spec, fusions) for spec in specs]
    if len(out) > 1:
        rest = ", ".join(s.top.name for s in specs[1:])
        out[0].notes.append(f"The other computations are drawn in their own views in the "
                            f"HTML output, or with --computation NAME: {rest}")
    return out


def graph(module, **options) -> str:
    """DOT text of the module (of its first view when it is drawn per computation)."""
    return to_dot(views(module, **options)[0])


def graph_image(module, fmt: str = "svg", *, dot_program: str | None = None,
                **options) -> bytes:
    """SVG or PNG bytes made by Graphviz's `dot` (GraphvizMissing when not installed)."""
    return render(graph(module, **options), fmt, program=dot_program)


def graph_html(module, *, layout: str = "auto", dot_program: str | None = None,
               dot_timeout: float | None = 120, **options) -> str:
    """A self-contained page; layout: auto (Graphviz when installed, else dagre),
    graphviz, or dagre. With auto, a view Graphviz fails on or takes more than
    `dot_timeout` seconds for is laid out by dagre instead, with a note saying so."""
    if layout not in ("auto", "graphviz", "dagre"):
        raise ValueError(f"layout must be auto, graphviz or dagre, not {layout!r}")
    vs = views(module, **options)
    return to_html(vs, module.name, graphviz_svgs(vs, layout, dot_program, dot_timeout))


def graphviz_svgs(vs: list[View], layout: str, dot_program: str | None = None,
                  dot_timeout: float | None = 120) -> list[str | None] | None:
    """Graphviz's SVG of each view for the HTML page (None: lay it out with dagre)."""
    program = dot_program or (find_dot() if layout != "dagre" else None)
    if layout == "dagre" or (layout == "auto" and program is None):
        return None
    out = []
    for v in vs:
        try:
            out.append(render(to_dot(v), "svg", program=program,
                              timeout=dot_timeout).decode("utf-8"))
        except GraphvizFailed as e:
            if layout == "graphviz":
                raise
            v.notes.append(f"Laid out by dagre: {e.message}")
            out.append(None)
    return out


class _CallablePackage(types.ModuleType):
    """`hloc.graph` is both this package and the function `graph`: importing a submodule
    makes the package the parent's `graph` attribute, so the package itself answers calls."""

    def __call__(self, module, **options) -> str:
        return graph(module, **options)


sys.modules[__name__].__class__ = _CallablePackage
