"""The HTML page of `hloc graph` in a real headless Chromium (CI only: `-m browser`).

On the MLP and BERT-like dumps, with the vendored dagre layout and, where Graphviz is
installed, with Graphviz's SVG: the page renders with no console errors and no network
request, a screenshot shows the graph (its pixels hold XLA's node colours), searching an
instruction name highlights it, and clicking it shows its text line and marks its
operands and users. Skipped when Chromium is missing, except under CI=true.
"""
from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path

import pytest

import hloc
from hloc.graph import graph_html, views
from hloc.graph.graphviz import find_dot

from browser import Browser, find_chromium

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
DUMPS = ROOT / "testdata" / "dumps"
CASES = [("mlp_train_step.before_optimizations", "dot_general.10"),
         ("bert_train_step.before_optimizations", "dot_general.10")]
LAYOUTS = ["dagre", "graphviz"]
# XLA's fills for dot (dark blue), elementwise (yellow) and parameter (orange) nodes.
COLOURS = {"dark_blue": (0x15, 0x65, 0xc0), "yellow": (0xff, 0xf9, 0xc4),
           "orange": (0xff, 0xe0, 0xb2)}


@pytest.fixture(scope="module")
def browser():
    program = find_chromium()
    if program is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Chromium is not installed (CI must install it: apt-get install "
                        "chromium)")
        pytest.skip("Chromium is not installed")
    with Browser(program) as b:
        yield b


def _colour_counts(b: Browser, png: bytes) -> dict:
    """Decode the screenshot in the page (a canvas) and count pixels of each colour."""
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    script = """new Promise((ok, bad) => {
      const img = new Image();
      img.onload = () => {
        const c = document.createElement('canvas');
        c.width = img.width; c.height = img.height;
        const g = c.getContext('2d'); g.drawImage(img, 0, 0);
        const d = g.getImageData(0, 0, c.width, c.height).data;
        const want = %s, out = {};
        for (const k in want) out[k] = 0;
        for (let i = 0; i < d.length; i += 4)
          for (const k in want)
            if (Math.abs(d[i] - want[k][0]) < 3 && Math.abs(d[i+1] - want[k][1]) < 3 &&
                Math.abs(d[i+2] - want[k][2]) < 3) out[k]++;
        ok(out);
      };
      img.onerror = () => bad('screenshot did not decode');
      img.src = %s;
    })""" % (json.dumps(COLOURS), json.dumps(url))
    return b.evaluate(script)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dump,target", CASES, ids=[c[0].split(".")[0] for c in CASES])
def test_page_in_chromium(browser, tmp_path, dump, target, layout):
    _need_graphviz(layout)
    m = hloc.parse_file(DUMPS / f"{dump}.hlo")
    page = tmp_path / f"{dump}.{layout}.html"
    page.write_text(graph_html(m, layout=layout), encoding="utf-8")
    node = next(n for n in views(m)[0].nodes if n.name == target)
    b = browser
    b.events.clear()
    b.navigate(page.as_uri())
    b.wait_for("!!document.querySelector('#graph g.node')", timeout=240)
    time.sleep(0.2)
    assert b.errors() == []
    assert b.requests() == [page.as_uri()]
    assert b.evaluate("document.querySelectorAll('#graph g.node').length") == \
        len(views(m)[0].nodes)

    shot = b.screenshot()
    (tmp_path / "start.png").write_bytes(shot)
    if os.environ.get("HLOC_SCREENSHOTS"):
        Path(os.environ["HLOC_SCREENSHOTS"], f"{dump}.{layout}.png").write_bytes(shot)
    counts = _colour_counts(b, shot)
    assert sum(counts.values()) > 2000, counts

    b.evaluate("document.getElementById('search').focus()")
    b.type_text(target)
    b.wait_for(f"document.getElementById({json.dumps(node.id)}).classList.contains('found')",
               timeout=10)
    assert b.evaluate("[...document.querySelectorAll('#graph g.node.found')].map(e => e.id)") \
        == [node.id]
    assert b.evaluate("document.getElementById('status').textContent") == "1 of 1"
    shot = b.screenshot()
    if os.environ.get("HLOC_SCREENSHOTS"):
        Path(os.environ["HLOC_SCREENSHOTS"], f"{dump}.{layout}.search.png").write_bytes(shot)
    assert _colour_counts(b, shot)["dark_blue"] > 200       # zoomed onto the dot node

    x, y = b.evaluate(f"""(() => {{
        const r = document.getElementById({json.dumps(node.id)}).getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
    b.click(x, y)
    b.wait_for("!document.getElementById('panel').hidden", timeout=10)
    assert b.evaluate("document.getElementById('node-text').textContent") == node.text
    marked = b.evaluate("""[...document.querySelectorAll('#graph g.node.operand')].length +
                           ',' + document.querySelectorAll('#graph g.node.user').length""")
    assert marked == "2,1"          # dot_general.10's two operands and one user
    assert b.errors() == []


def _need_graphviz(layout):
    if layout == "graphviz" and find_dot() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("Graphviz is not installed (CI must install it: apt-get install "
                        "graphviz)")
        pytest.skip("Graphviz `dot` is not installed")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_views_pan_and_zoom(browser, tmp_path, layout):
    """A module drawn per computation: the view picker switches views; the wheel zooms
    and a drag pans (both move the viewBox)."""
    _need_graphviz(layout)
    m = hloc.parse_file(DUMPS / "mlp_train_step.before_optimizations.hlo")
    vs = views(m, max_nodes=100)
    page = tmp_path / "mlp.views.html"
    page.write_text(graph_html(m, layout=layout, max_nodes=100), encoding="utf-8")
    b = browser
    b.events.clear()
    b.navigate(page.as_uri())
    b.wait_for("!!document.querySelector('#graph g.node')", timeout=120)
    assert b.evaluate("document.getElementById('view').options.length") == len(vs)
    assert "over the limit of 100" in b.evaluate("document.getElementById('notes').textContent")
    b.evaluate("""(() => { const s = document.getElementById('view'); s.value = '2';
                           s.dispatchEvent(new Event('change')); })()""")
    b.wait_for(f"document.querySelectorAll('#graph g.node').length == {len(vs[2].nodes)}")
    box = "document.getElementById('graph').getAttribute('viewBox')"
    before = b.evaluate(box)
    b.call("Input.dispatchMouseEvent", type="mouseWheel", x=500, y=400, deltaX=0, deltaY=-300)
    b.wait_for(f"{box} != {json.dumps(before)}", timeout=10)
    zoomed = [float(v) for v in b.evaluate(box).split()]
    assert zoomed[2] < [float(v) for v in before.split()][2]        # narrower: zoomed in
    for kind, x in (("mousePressed", 600), ("mouseMoved", 700), ("mouseReleased", 700)):
        b.call("Input.dispatchMouseEvent", type=kind, x=x, y=400, button="left")
    panned = [float(v) for v in b.evaluate(box).split()]
    assert panned[0] < zoomed[0] and panned[2] == pytest.approx(zoomed[2])
    # A collapsed call links to the view drawing its callee.
    b.evaluate("(() => { const s = document.getElementById('view'); s.value = '0';"
               " s.dispatchEvent(new Event('change')); })()")
    index = {v.computation: i for i, v in enumerate(vs)}
    caller = next(n for n in vs[0].nodes if n.calls and n.calls[0] in index)
    target = index[caller.calls[0]]
    b.evaluate(f"hlocViewer.select({json.dumps(caller.id)})")
    b.evaluate("document.querySelector('#panel .calls a').click()")
    b.wait_for(f"document.getElementById('view').value == '{target}' && "
               f"document.querySelectorAll('#graph g.node').length == "
               f"{len(vs[target].nodes)}")
    assert b.errors() == [] and b.requests() == [page.as_uri()]
