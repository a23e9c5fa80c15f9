"""`hloc graph`: golden DOT for small modules, colours, tooltips, selection, size limit,
Graphviz handling, the HTML page's self-containment and escaping, the Python API."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import hloc
from corpus import WILD, XLA, needs_corpus, xla_files
from hloc.diagnostics import HlocError
from hloc.graph import graph_html, to_dot, to_html, views
from hloc.graph.colours import SCHEMES, scheme_for
from hloc.graph.graphviz import GraphvizMissing, find_dot, render
from hloc.syntax import parse_modules, read_text

ROOT = Path(__file__).resolve().parents[1]
GRAPH = ROOT / "testdata" / "graph"
DUMPS = ROOT / "testdata" / "dumps"

# (module, options, golden): reviewed by hand against the drawings Graphviz makes of them.
GOLDENS = [
    ("fusion.hlo", {}, "fusion.dot"),
    ("fusion.hlo", {"fusions": "collapsed"}, "fusion.collapsed.dot"),
    ("while.hlo", {}, "while.dot"),
    ("while.hlo", {"around": "sin", "radius": 2}, "while.around_sin_r2.dot"),
    ("conditional.hlo", {}, "conditional.dot"),
]


def _parse(path):
    return hloc.parse_file(path)


def _cli(*args, env=None):
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "hloc", "graph", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT)


@pytest.mark.parametrize("hlo,options,golden", GOLDENS, ids=[g for _, _, g in GOLDENS])
def test_golden_dot(hlo, options, golden):
    assert hloc.graph(_parse(GRAPH / hlo), **options) == (GRAPH / golden).read_text()


def test_cli_writes_the_same_dot(tmp_path):
    out = tmp_path / "f.dot"
    r = _cli(str(GRAPH / "fusion.hlo"), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text() == (GRAPH / "fusion.dot").read_text()
    r = _cli(str(GRAPH / "while.hlo"), "--around", "sin", "--radius", "2")
    assert r.stdout == (GRAPH / "while.around_sin_r2.dot").read_text()


def test_drawing_structure():
    """What the goldens must hold, stated directly: a fusion is a cluster with its fused
    computation and no fusion node, while bodies are linked clusters, ROOT is tagged,
    edges carry shapes, constants are folded into their users' labels."""
    fusion = hloc.graph(_parse(GRAPH / "fusion.hlo"))
    assert "Fused expression for bias_relu" in fusion
    assert "fusion:kLoop" not in fusion
    assert 'label="f32[4,16]"' in fusion and "Subcomputation: add" in fusion
    assert "operand 1 = f32[] 0" in fusion and "<b>constant" not in fusion
    assert re.search(r"-> root \[", fusion)
    loop = hloc.graph(_parse(GRAPH / "while.hlo"))
    assert "Subcomputation for loop</b><br/>body" in loop
    assert 'style="dashed", label="condition"' in loop and "shape=ellipse" in loop
    cond = hloc.graph(_parse(GRAPH / "conditional.hlo"))
    assert 'label="true_computation"' in cond and 'label="false_computation"' in cond
    assert 'label="ctrl"' in cond


def _inst(module, name):
    return next(i for c in module.computations for i in c.instructions if i.name == name)


def test_colours_follow_xlas_dumper():
    m = _parse(GRAPH / "fusion.hlo")
    expect = {"dot.1": "dark_blue", "x": "orange", "reduce.1": "purple", "tuple.1": "white",
              "add.1": "white", "sum": "white", "broadcast.2": "yellow", "bias_relu": "gray"}
    for name, scheme in expect.items():
        inst = _inst(m, name)
        assert scheme_for(inst, fused=inst.parent.name == "fused_computation") == scheme, name
    w = _parse(GRAPH / "while.hlo")
    assert scheme_for(_inst(w, "loop"), False) == "dark_green"
    c = _parse(GRAPH / "conditional.hlo")
    assert scheme_for(_inst(c, "copy.1"), False) == "green"
    big = hloc.parse("HloModule m\nENTRY e { ROOT p = f32[64,64] parameter(0) }")
    assert scheme_for(big.entry.root, False) == "dark_orange"


def test_tooltip_resolves_stack_frames():
    m = _parse(DUMPS / "mlp_train_step.before_optimizations.hlo")
    node = next(n for n in views(m)[0].nodes if n.name == "dot_general.10")
    assert node.tooltip.splitlines() == [
        "jit(mlp_train_step)/jvp()/dot_general",
        "tools/gen_dumps.py:mlp_train_step.<locals>.loss_fn:175:16",
        "tools/gen_dumps.py:mlp_train_step.<locals>.f:182:18",
        "tools/gen_dumps.py:_worker:1382:14",
        "tools/gen_dumps.py:main:1744:8",
        "tools/gen_dumps.py:<module>:1774:13"]
    assert node.text.startswith("%dot_general.10 = f32[8,4]{1,0} dot(")


def test_around_marks_omitted_neighbours():
    m = _parse(GRAPH / "fusion.hlo")
    v = views(m, around="reduce.1", radius=1)[0]
    by = {n.name: n for n in v.nodes}
    assert by["reduce.1"].scheme == "dark_red"
    assert set(by) == {"reduce.1", "bias_relu", "tuple.1", ""}     # "" is the ROOT tag
    assert by["tuple.1"].scheme == "white"             # all its operands are drawn
    assert by["bias_relu"].scheme == "dashed"          # its operands are not: collapsed
    assert not v.clusters


def test_size_limit_draws_per_computation(tmp_path):
    m = _parse(DUMPS / "mlp_train_step.before_optimizations.hlo")
    vs = views(m, max_nodes=100)
    names = [v.title.split("computation ")[1] for v in vs]
    assert names[0] == m.entry.name and len(vs) == 1 + 4
    assert "over the limit of 100" in vs[0].notes[0]
    entry = vs[0]
    assert any(line.startswith("calls: ") for n in entry.nodes for line in n.lines)
    assert not entry.clusters
    r = _cli(str(DUMPS / "mlp_train_step.before_optimizations.hlo"), "--max-nodes", "100",
             "-o", str(tmp_path / "m.html"), "--layout", "dagre")
    assert r.returncode == 0 and "over the limit of 100" in r.stderr
    page = (tmp_path / "m.html").read_text()
    assert page.count('"title":"jit_mlp_train_step: computation ') == 5


def test_bad_selection_is_a_located_error():
    r = _cli(str(GRAPH / "fusion.hlo"), "--around", "nope")
    assert r.returncode == 2
    assert r.stderr.strip() == "error: no instruction named 'nope' in module fusion_example"
    r = _cli(str(GRAPH / "fusion.hlo"), "--computation", "nope")
    assert r.returncode == 2 and "no computation named 'nope'" in r.stderr
    r = _cli(str(GRAPH / "fusion.hlo"), "-o", "x.pdf")
    assert r.returncode == 2 and ".dot, .svg, .png or .html" in r.stderr


def test_missing_graphviz_names_the_package(tmp_path, monkeypatch):
    env = dict(os.environ, PATH=str(tmp_path))          # no `dot` anywhere on PATH
    r = _cli(str(GRAPH / "fusion.hlo"), "-o", str(tmp_path / "f.svg"), env=env)
    assert r.returncode == 2
    assert "Graphviz's `dot` program, which is not installed" in r.stderr
    assert "apt-get install graphviz" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "f.svg").exists()
    monkeypatch.setattr("hloc.graph.graphviz.find_dot", lambda: None)
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz"):
        render("digraph G {}", "png")
    r = _cli(str(GRAPH / "fusion.hlo"), "-o", str(tmp_path / "f.html"), env=env)
    assert r.returncode == 0 and "dagre layout" in (tmp_path / "f.html").read_text()


@pytest.mark.skipif(find_dot() is None, reason="Graphviz `dot` is not installed")
def test_svg_and_png_through_graphviz(tmp_path):
    r = _cli(str(GRAPH / "while.hlo"), "-o", str(tmp_path / "w.svg"))
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "w.svg").read_text()
    assert '<g id="n5" class="node">' in svg and "Subcomputation for loop" in svg
    r = _cli(str(GRAPH / "while.hlo"), "-o", str(tmp_path / "w.png"))
    assert (tmp_path / "w.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = graph_html(_parse(GRAPH / "while.hlo"), layout="graphviz")
    assert '<template id="gv-0"><svg' in page and "var dagre=" not in page


def test_html_is_self_contained_and_escaped():
    text = (GRAPH / "fusion.hlo").read_text().replace(
        'op_name="jit(f)/relu"', 'op_name="</script><script>alert(1)</script>\\" & <b>"')
    m = hloc.parse(text)
    page = graph_html(m, layout="dagre")
    assert "<script>alert(1)" not in page and "\\u003c/script\\u003e" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "sourceMappingURL" not in page
    assert "var dagre=" in page
    dot = to_dot(views(m)[0])
    assert '\\"' in dot and "</script><script>" in dot     # a quoted DOT string
    assert "<b>" not in dot.split('tooltip="</script>')[0][-5:]


def test_python_api_and_notebook_reprs():
    m = _parse(GRAPH / "conditional.hlo")
    assert hloc.graph(m) == hloc.graph.graph(m) == (GRAPH / "conditional.dot").read_text()
    html = m._repr_html_()
    assert html.startswith('<iframe sandbox="allow-scripts"') and "&lt;!DOCTYPE html&gt;" in html
    svg = m._repr_svg_()
    assert svg is None if find_dot() is None else "<svg" in svg


def test_after_opt_draws_the_optimised_module():
    r = _cli(str(DUMPS / "fori_loop_accumulate.before_optimizations.hlo"), "--after-opt")
    assert r.returncode == 0, r.stderr
    assert "Fused expression for" in r.stdout
    r = _cli(str(DUMPS / "fori_loop_accumulate.before_optimizations.hlo"))
    assert "Fused expression for" not in r.stdout


def test_every_dump_draws():
    """Every checked-in dump gives a DOT with as many nodes as the model says."""
    count = 0
    for path in sorted(DUMPS.glob("*.hlo")):
        m = _parse(path)
        for v in views(m):
            dot = to_dot(v)
            assert dot.count(' [id="n') == len([n for n in v.nodes if n.id != "root"])
            count += 1
    assert count >= 150


def test_vendored_layout_library_is_the_pinned_one():
    assets = ROOT / "hloc" / "graph"
    licence = (assets / "dagre.LICENSE").read_text()
    digest = hashlib.sha256((assets / "dagre.min.js").read_bytes()).hexdigest()
    assert f"dagre.min.js sha256: {digest}" in licence
    assert "@dagrejs/dagre 3.1.3" in licence and "Permission is hereby granted" in licence
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["hloc.graph"]
    for f in assets.iterdir():
        if f.is_file() and f.suffix not in (".py", ".pyc"):
            assert any(f.match(g) for g in globs), f.name


@needs_corpus
def test_every_corpus_module_draws():
    """Every module of XLA's test corpus and the wild dumps that parses also draws (DOT
    and HTML), verified or not: a dump is untrusted input."""
    files = [XLA / f for f in xla_files(expect="parse_ok")] + sorted(WILD.glob("*.txt"))
    drawn = 0
    for path in files:
        try:
            modules = parse_modules(read_text(path), str(path))
        except HlocError:
            continue
        for m in modules:
            vs = views(m)
            for v in vs:
                to_dot(v)
            to_html(vs, m.name)
            drawn += 1
    assert drawn >= 1600, drawn


XLA_DRAWN = GRAPH / "xla"


@pytest.mark.parametrize("name", sorted(p.stem for p in XLA_DRAWN.glob("*.hlo")))
def test_colours_and_tooltips_match_xlas_dot(name):
    """Every instruction node XLA's dumper drew (tools/gen_graph_xla.py, jaxlib 0.10.2) has
    the same fill, stroke, shape and tooltip here; only the nodes XLA folds into their
    users (non-root constants, get-tuple-elements, ...) are absent on its side."""
    xla = json.loads((XLA_DRAWN / f"{name}.json").read_text())
    m = _parse(XLA_DRAWN / f"{name}.hlo")
    ours = {}
    for v in views(m, max_nodes=10**6):
        for n in v.nodes:
            ours.setdefault(n.name, n)
    assert len(xla) >= 20
    for inst, want in xla.items():
        n = ours[inst]
        s = SCHEMES[n.scheme]
        assert (s.fill, s.stroke, n.shape, n.tooltip) == \
            (want["fill"], want["stroke"], want["shape"], want["tooltip"]), inst


def test_stack_frames_of_an_untrusted_dump_end():
    """A StackFrames table whose parents loop (or point nowhere) still ends."""
    from hloc.graph.metadata import StackIndex
    sections = [("FileNames", [(1, '"a.py"', 0)]), ("FunctionNames", [(1, '"f"', 0)]),
                ("FileLocations", [(1, "{file_name_id=1 function_name_id=1 line=3 "
                                       "column=0}", 0)]),
                ("StackFrames", [(1, "{file_location_id=1 parent_frame_id=3}", 0),
                                 (2, "{file_location_id=1 parent_frame_id=2}", 0),
                                 (3, "{file_location_id=9 parent_frame_id=1}", 0)])]
    index = StackIndex(sections)
    assert index.frames(1) == ["a.py:f:3", "a.py:f:3"]       # 1 -> 2 -> 1: stops
    assert index.frames(3) == []                              # unknown location
    assert index.frames(7) == []
