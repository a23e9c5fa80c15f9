"""Graphviz DOT text for a View, in the style of XLA's HloDotDumper.

Labels are HTML-like (`<b>` title, `<br/>` lines) with the text escaped; every node, edge
and cluster carries an `id` so the SVG Graphviz makes can be wired up by the HTML viewer.
Nothing from the dump reaches the output unescaped.
"""
from __future__ import annotations

from .colours import SCHEMES
from .model import Cluster, View


def html_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def quote(text: str) -> str:
    """A DOT double-quoted string (escString: newlines become \\n)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{body}"'


def _label(title: str, lines: list[str]) -> str:
    parts = [f"<b>{html_escape(title)}</b>"] + [html_escape(x) for x in lines]
    return "<" + "<br/>".join(parts) + ">"


def _node(n) -> str:
    s = SCHEMES[n.scheme]
    tip = n.tooltip if n.name else " "       # XLA: the metadata, "" when there is none
    return (f'{n.id} [id={quote(n.id)}, label={_label(n.title, n.lines)}, shape={n.shape}, '
            f'tooltip={quote(tip)}, style="{s.style}", fontcolor="{s.font}", '
            f'color="{s.stroke}", fillcolor="{s.fill}"];')


def _edge(e) -> str:
    attrs = [f"id={quote(e.id)}", f"tooltip={quote(e.tooltip)}"]
    if e.kind == "control":
        attrs += ['style="dotted"', 'color="gray"', 'label="ctrl"']
    elif e.kind == "call":
        attrs += [f"ltail={quote('cluster_' + e.ltail)}", 'style="dashed"',
                  f"label={quote(e.label)}"]
    else:
        attrs += [f"arrowhead={'empty' if e.small else 'normal'}", f"label={quote(e.label)}"]
        if e.port is not None:
            attrs += [f'headlabel="{e.port}"', "labeldistance=2"]
    return f"{e.src} -> {e.dst} [{', '.join(attrs)}];"


def _cluster_style(c: Cluster) -> list[str]:
    if c.kind == "fusion":
        return ['style="rounded,filled,bold"', f'fillcolor="{c.fill}"', f'color="{c.stroke}"']
    return ["style=rounded", "color=black"]


def to_dot(view: View) -> str:
    # newrank: Graphviz 2.43's default ranking fails ("trouble in init_rank") on some
    # clustered graphs (BERT's backward while body) and is slower on others.
    out = ["digraph G {", "rankdir = TB;", "compound = true;", "newrank = true;",
           f"label = <<b>{html_escape(view.title)}</b>>;", "labelloc = t;", 'tooltip = " ";',
           'fontname = "Helvetica";', 'node [fontname="Helvetica", fontsize=10];',
           'edge [fontname="Helvetica", fontsize=8];']
    out += [f"// {line}" for note in view.notes for line in note.splitlines()]
    members: dict[str | None, list] = {}
    for n in view.nodes:
        members.setdefault(n.cluster, []).append(n)
    children: dict[str | None, list] = {}
    for c in view.clusters:
        children.setdefault(c.parent, []).append(c)

    def emit(parent: str | None, indent: str) -> None:
        for c in children.get(parent, ()):
            out.append(f"{indent}subgraph cluster_{c.id} {{")
            inner = indent + "  "
            out.append(f"{inner}id={quote(c.id)};")
            out.extend(f"{inner}{a};" for a in _cluster_style(c))
            out.append(f"{inner}label = {_label(c.title, c.lines)};")
            out.append(f'{inner}labelloc = t;\n{inner}tooltip = {quote(c.computation)};')
            emit(c.id, inner)
            out.append(f"{indent}}}  // cluster_{c.id}")
        for n in members.get(parent, ()):
            out.append(indent + _node(n))

    emit(None, "")
    out += [_edge(e) for e in view.edges]
    out.append("}")
    return "\n".join(out) + "\n"
