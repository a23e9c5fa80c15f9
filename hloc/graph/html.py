"""One self-contained, offline HTML page for a list of views.

The page holds the views as JSON, the viewer script and style (viewer.js/.css), and either
Graphviz's SVG of each view (when hloc had `dot` to make it) or the vendored dagre layout
library (dagre.min.js, @dagrejs/dagre 3.1.3, MIT, see dagre.LICENSE) that
lays the view out in the browser. A Content-Security-Policy forbids every network fetch.
Dump text enters the page only as escaped JSON (and inside Graphviz's escaped SVG).
"""
from __future__ import annotations

import json
from importlib import resources

from .colours import SCHEMES
from .dot import html_escape
from .model import View

_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "img-src data:")


def asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _dagre_script() -> str:
    # The file stays byte-identical to the npm tarball's; drop its source-map comment so
    # no tool is tempted to fetch the map.
    lines = [ln for ln in asset("dagre.min.js").splitlines()
             if not ln.startswith("//# sourceMappingURL=")]
    return "\n".join(lines)


def view_json(view: View) -> dict:
    nodes = []
    for n in view.nodes:
        s = SCHEMES[n.scheme]
        nodes.append({"id": n.id, "name": n.name, "title": n.title, "lines": n.lines,
                      "fill": s.fill, "stroke": s.stroke, "font": s.font,
                      "dashed": "dashed" in s.style, "shape": n.shape,
                      "tooltip": n.tooltip, "text": n.text, "cluster": n.cluster,
                      "computation": n.computation, "calls": n.calls})
    edges = [{"id": e.id, "src": e.src, "dst": e.dst, "label": e.label, "kind": e.kind,
              "small": e.small, "tooltip": e.tooltip} for e in view.edges]
    clusters = [{"id": c.id, "parent": c.parent, "title": c.title, "lines": c.lines,
                 "kind": c.kind, "fill": c.fill, "stroke": c.stroke,
                 "computation": c.computation} for c in view.clusters]
    return {"title": view.title, "computation": view.computation, "notes": view.notes,
            "nodes": nodes, "edges": edges,
            "clusters": clusters}


def _script_json(data) -> str:
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _svg_body(svg: str) -> str:
    start = svg.find("<svg")
    if start < 0:
        raise ValueError("Graphviz output holds no <svg> element")
    return svg[start:]


def to_html(views: list[View], title: str, svgs: list[str | None] | None = None) -> str:
    """The page; `svgs[i]`: Graphviz's SVG of views[i], or None to lay it out with dagre."""
    svgs = svgs or [None] * len(views)
    engine = "graphviz" if all(s is not None for s in svgs) else \
        "dagre" if all(s is None for s in svgs) else "graphviz+dagre"
    data = {"engine": engine, "views": [view_json(v) for v in views]}
    # <template>: the SVGs stay out of the document (no duplicate ids) until one is shown.
    pre = "".join(f'<template id="gv-{i}">{_svg_body(s)}</template>\n'
                  for i, s in enumerate(svgs) if s is not None)
    layout = "" if engine == "graphviz" else f"<script>{_dagre_script()}</script>\n"
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="generator" content="hloc graph ({engine} layout)">
<title>{html_escape(title)}</title>
<style>
{asset("viewer.css")}</style>
</head>
<body>
<div id="bar"><h1>{html_escape(title)}</h1>
<select id="view" aria-label="view"></select>
<input id="search" type="search" placeholder="search instruction name (Enter: next)" \
aria-label="search">
<span id="status"></span><button id="fit" type="button">fit</button></div>
<div id="notes"></div>
<div id="main"><div id="canvas"></div><div id="panel" hidden></div></div>
{pre}<script type="application/json" id="hloc-data">{_script_json(data)}</script>
{layout}<script>
{asset("viewer.js")}</script>
</body>
</html>
"""
