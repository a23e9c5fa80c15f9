// hloc graph viewer: pan, zoom, search, select. Works on Graphviz's SVG (embedded by
// hloc when `dot` is installed) or on an SVG drawn here from a dagre layout. Offline:
// everything it needs is in the page. Text from the dump is only ever set as textContent.
(function () {
  'use strict';
  var DATA = JSON.parse(document.getElementById('hloc-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';
  var canvas = document.getElementById('canvas');
  var search = document.getElementById('search');
  var status = document.getElementById('status');
  var notes = document.getElementById('notes');
  var panel = document.getElementById('panel');
  var picker = document.getElementById('view');
  var cur = null;   // {index, view, svg, nodes: id->data, els: id->element, byName}

  function el(name, attrs, parent) {
    var e = document.createElementNS(SVGNS, name);
    for (var k in attrs) { e.setAttribute(k, attrs[k]); }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  // ---- drawing with dagre -------------------------------------------------------------
  var measureCtx = document.createElement('canvas').getContext('2d');
  function textWidth(text, bold) {
    measureCtx.font = (bold ? 'bold ' : '') + '12px Helvetica, Arial, sans-serif';
    return measureCtx.measureText(text).width;
  }

  function nodeSize(n) {
    var w = textWidth(n.title, true);
    n.lines.forEach(function (l) { w = Math.max(w, textWidth(l, false)); });
    var h = 16 * (1 + n.lines.length) + 8;
    if (n.shape === 'circle') { var d = Math.max(w, h) + 10; return [d, d]; }
    if (n.shape === 'ellipse') { return [w * 1.3 + 24, h * 1.3]; }
    return [w + 16, h];
  }

  // network-simplex ranks best; tight-tree is several times faster on big views.
  function drawDagre(view) {
    var big = view.nodes.length > 600;
    var rankers = big ? ['tight-tree', 'network-simplex'] : ['network-simplex', 'tight-tree'];
    for (var i = 0; ; i++) {
      try {
        return layoutDagre(view, rankers[i]);
      } catch (err) {        // dagre throws on some inputs with one ranker and not the other
        if (i + 1 === rankers.length) { throw err; }
      }
    }
  }

  function layoutDagre(view, ranker) {
    var g = new dagre.graphlib.Graph({compound: true, multigraph: true});
    g.setGraph({rankdir: 'TB', nodesep: 24, ranksep: 36, edgesep: 10, marginx: 20, marginy: 20,
                ranker: ranker});
    g.setDefaultEdgeLabel(function () { return {}; });
    view.clusters.forEach(function (c) { g.setNode(c.id, {}); });
    view.clusters.forEach(function (c) { if (c.parent) { g.setParent(c.id, c.parent); } });
    view.nodes.forEach(function (n) {
      var s = nodeSize(n);
      g.setNode(n.id, {width: s[0], height: s[1]});
      if (n.cluster) { g.setParent(n.id, n.cluster); }
    });
    view.edges.forEach(function (e) {
      g.setEdge(e.src, e.dst, {label: e.label, width: textWidth(e.label, false) * 0.8,
                               height: 12, labelpos: 'c'}, e.id);
    });
    dagre.layout(g);
    var gr = g.graph();
    var svg = el('svg', {viewBox: '0 0 ' + gr.width + ' ' + (gr.height + 30), 'class': 'dagre'});
    var defs = el('defs', {}, svg);
    [['arrow', 'black', '#000'], ['arrow-empty', 'white', '#000']].forEach(function (m) {
      var mk = el('marker', {id: m[0], viewBox: '0 0 10 10', refX: 10, refY: 5,
                             markerWidth: 9, markerHeight: 9, markerUnits: 'userSpaceOnUse',
                             orient: 'auto-start-reverse'}, defs);
      el('path', {d: 'M0,0 L10,5 L0,10 z', fill: m[1], stroke: m[2]}, mk);
    });
    var root = el('g', {transform: 'translate(0,30)'}, svg);
    var title = el('text', {x: gr.width / 2, y: -10, 'text-anchor': 'middle',
                            'class': 'graph-title'}, root);
    title.textContent = view.title;
    view.clusters.forEach(function (c) {
      var l = g.node(c.id);
      var grp = el('g', {id: c.id, 'class': 'cluster'}, root);
      el('rect', {x: l.x - l.width / 2, y: l.y - l.height / 2, width: l.width, height: l.height,
                  rx: 8, fill: c.fill, stroke: c.stroke,
                  'stroke-width': c.kind === 'fusion' ? 2 : 1}, grp);
      var t = el('text', {x: l.x - l.width / 2 + 6, y: l.y - l.height / 2 + 12,
                          'class': 'cluster-label'}, grp);
      t.textContent = c.title + ' \u2014 ' + c.lines.join(', ');
      el('title', {}, grp).textContent = c.computation;
    });
    view.edges.forEach(function (e) {
      var l = g.edge({v: e.src, w: e.dst, name: e.id});
      var grp = el('g', {id: e.id, 'class': 'edge ' + e.kind}, root);
      var d = l.points.map(function (p, i) { return (i ? 'L' : 'M') + p.x + ',' + p.y; }).join(' ');
      var path = el('path', {d: d, fill: 'none', stroke: e.kind === 'control' ? 'gray' : 'black',
                             'marker-end': 'url(#' + (e.small ? 'arrow-empty' : 'arrow') + ')'}, grp);
      if (e.kind === 'call') { path.setAttribute('stroke-dasharray', '5,3'); }
      if (e.kind === 'control') { path.setAttribute('stroke-dasharray', '2,2'); }
      if (e.label) {
        var t = el('text', {x: l.x, y: l.y + 3, 'text-anchor': 'middle', 'class': 'edge-label'}, grp);
        t.textContent = e.label;
      }
      el('title', {}, grp).textContent = e.tooltip;
    });
    view.nodes.forEach(function (n) {
      var l = g.node(n.id);
      var grp = el('g', {id: n.id, 'class': 'node'}, root);
      var a = {fill: n.fill, stroke: n.stroke};
      if (n.dashed) { a['stroke-dasharray'] = '4,3'; }
      if (n.shape === 'rect') {
        a.x = l.x - l.width / 2; a.y = l.y - l.height / 2; a.width = l.width; a.height = l.height;
        el('rect', a, grp);
      } else {
        a.cx = l.x; a.cy = l.y; a.rx = l.width / 2; a.ry = l.height / 2;
        el('ellipse', a, grp);
      }
      var lines = [n.title].concat(n.lines), top = l.y - 8 * lines.length;
      lines.forEach(function (line, i) {
        var t = el('text', {x: l.x, y: top + 16 * (i + 1) - 4, 'text-anchor': 'middle',
                            fill: n.font, 'font-weight': i ? 'normal' : 'bold'}, grp);
        t.textContent = line;
      });
      if (n.tooltip) { el('title', {}, grp).textContent = n.tooltip; }
    });
    return svg;
  }

  // ---- pan and zoom (on the viewBox) --------------------------------------------------
  function toSvg(svg, x, y) {
    var p = svg.createSVGPoint(); p.x = x; p.y = y;
    return p.matrixTransform(svg.getScreenCTM().inverse());
  }

  function setBox(svg, b) { svg.setAttribute('viewBox', [b.x, b.y, b.w, b.h].join(' ')); }
  function getBox(svg) {
    var v = svg.viewBox.baseVal; return {x: v.x, y: v.y, w: v.width, h: v.height};
  }

  function enablePanZoom(svg) {
    svg.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var f = Math.pow(1.0015, ev.deltaY);
      var p = toSvg(svg, ev.clientX, ev.clientY), b = getBox(svg);
      setBox(svg, {x: p.x - (p.x - b.x) * f, y: p.y - (p.y - b.y) * f, w: b.w * f, h: b.h * f});
    }, {passive: false});
    var drag = null;
    svg.addEventListener('mousedown', function (ev) {
      drag = {p: toSvg(svg, ev.clientX, ev.clientY), moved: false};
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) { return; }
      var p = toSvg(svg, ev.clientX, ev.clientY), b = getBox(svg);
      var dx = p.x - drag.p.x, dy = p.y - drag.p.y;
      if (Math.abs(dx) + Math.abs(dy) > 0) { drag.moved = true; }
      setBox(svg, {x: b.x - dx, y: b.y - dy, w: b.w, h: b.h});
    });
    window.addEventListener('mouseup', function () {
      if (drag && drag.moved) { svg.dataset.dragged = '1'; }
      drag = null;
    });
  }

  function zoomTo(element) {
    var svg = cur.svg, r = element.getBoundingClientRect();
    var a = toSvg(svg, r.left, r.top), z = toSvg(svg, r.right, r.bottom);
    var w = Math.max((z.x - a.x) * 8, 900), h = Math.max((z.y - a.y) * 8, 600);
    setBox(svg, {x: (a.x + z.x) / 2 - w / 2, y: (a.y + z.y) / 2 - h / 2, w: w, h: h});
  }

  // ---- selection and search -----------------------------------------------------------
  function clearMarks(cls) {
    cur.svg.querySelectorAll('.' + cls).forEach(function (e) { e.classList.remove(cls); });
  }

  function select(id) {
    if (!cur) { return; }
    ['selected', 'operand', 'user', 'in-edge', 'out-edge'].forEach(clearMarks);
    cur.svg.classList.toggle('focus', !!id);
    panel.replaceChildren();
    if (!id || !cur.nodes[id]) { panel.hidden = true; return; }
    var n = cur.nodes[id];
    cur.els[id].classList.add('selected');
    var ops = [], users = [];
    cur.view.edges.forEach(function (e) {
      var ee = cur.svg.querySelector('#' + e.id);
      if (e.dst === id) { ops.push(e.src); if (ee) { ee.classList.add('in-edge'); } }
      if (e.src === id) { users.push(e.dst); if (ee) { ee.classList.add('out-edge'); } }
    });
    ops.forEach(function (o) { if (cur.els[o]) { cur.els[o].classList.add('operand'); } });
    users.forEach(function (u) { if (cur.els[u]) { cur.els[u].classList.add('user'); } });
    var h = document.createElement('h3'); h.textContent = n.name || n.title; panel.appendChild(h);
    var pre = document.createElement('pre'); pre.id = 'node-text';
    pre.textContent = n.text || n.title; panel.appendChild(pre);
    if (n.tooltip) {
      var m = document.createElement('pre'); m.className = 'meta'; m.textContent = n.tooltip;
      panel.appendChild(m);
    }
    [['operands', ops], ['users', users]].forEach(function (part) {
      var p = document.createElement('div'); p.className = part[0];
      p.appendChild(document.createTextNode(part[0] + ': '));
      part[1].forEach(function (o) {
        var a = document.createElement('a'); a.href = '#';
        a.textContent = cur.nodes[o] ? (cur.nodes[o].name || cur.nodes[o].title) : o;
        a.addEventListener('click', function (ev) {
          ev.preventDefault(); select(o); zoomTo(cur.els[o]);
        });
        p.appendChild(a); p.appendChild(document.createTextNode(' '));
      });
      panel.appendChild(p);
    });
    var callees = (n.calls || []).filter(function (c) { return c in viewOf; });
    if (callees.length) {
      var p = document.createElement('div'); p.className = 'calls';
      p.appendChild(document.createTextNode('calls (own view): '));
      callees.forEach(function (c) {
        var a = document.createElement('a'); a.href = '#'; a.textContent = c;
        a.addEventListener('click', function (ev) {
          ev.preventDefault(); picker.value = viewOf[c]; showView(viewOf[c]);
        });
        p.appendChild(a); p.appendChild(document.createTextNode(' '));
      });
      panel.appendChild(p);
    }
    panel.hidden = false;
  }

  var hits = [], hitIndex = 0;
  function runSearch(step) {
    if (!cur) { return; }
    var q = search.value.trim().replace(/^%/, '').toLowerCase();
    clearMarks('found'); clearMarks('current');
    hits = [];
    if (q) {
      cur.view.nodes.forEach(function (n) {
        var name = n.name.toLowerCase();
        if (name === q) { hits.unshift(n.id); } else if (name.indexOf(q) >= 0) { hits.push(n.id); }
      });
    }
    hits.forEach(function (id) { cur.els[id].classList.add('found'); });
    if (!hits.length) { status.textContent = q ? 'no match' : ''; return; }
    hitIndex = step ? (hitIndex + 1) % hits.length : 0;
    var id = hits[hitIndex];
    cur.els[id].classList.add('current');
    status.textContent = (hitIndex + 1) + ' of ' + hits.length;
    zoomTo(cur.els[id]);
  }

  function showView(index) {
    var view = DATA.views[index];
    canvas.replaceChildren();
    var svg;
    var pre = document.getElementById('gv-' + index);
    if (pre) {
      svg = pre.content.querySelector('svg').cloneNode(true);
    } else {
      try {
        svg = drawDagre(view);
      } catch (err) {
        notes.textContent = 'The dagre layout failed on this view (' + err.message +
          '); draw it with Graphviz (hloc graph -o OUT.svg) or draw less (--around).';
        cur = null;
        return;
      }
    }
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    svg.id = 'graph';
    canvas.appendChild(svg);
    cur = {index: index, view: view, svg: svg, nodes: {}, els: {}, full: getBox(svg)};
    view.nodes.forEach(function (n) {
      cur.nodes[n.id] = n;
      cur.els[n.id] = svg.querySelector('#' + n.id);
    });
    notes.textContent = view.notes.join(' ');
    enablePanZoom(svg);
    svg.addEventListener('click', function (ev) {
      if (svg.dataset.dragged) { delete svg.dataset.dragged; return; }
      var g = ev.target.closest('g.node');
      select(g && cur.nodes[g.id] ? g.id : null);
    });
    panel.hidden = true;
    startView();
    if (search.value) { runSearch(false); }
  }

  // The whole graph when it fits legibly; else a readable scale around the ROOT tag.
  function startView() {
    var svg = cur.svg, b = getBox(svg), r = svg.getBoundingClientRect();
    var scale = Math.min(r.width / b.w, r.height / b.h);
    var MIN_SCALE = 0.3, START_SCALE = 0.8;
    if (scale >= MIN_SCALE || !r.width) { return; }
    var target = cur.els.root || cur.els[cur.view.nodes[cur.view.nodes.length - 1].id];
    var t = target.getBoundingClientRect();
    var c = toSvg(svg, t.left + t.width / 2, t.top + t.height / 2);
    var w = r.width / START_SCALE, h = r.height / START_SCALE;
    setBox(svg, {x: c.x - w / 2, y: c.y - h * 0.75, w: w, h: h});
  }

  var viewOf = {};     // computation name -> the view drawing it
  DATA.views.forEach(function (v, i) {
    if (v.computation && !(v.computation in viewOf)) { viewOf[v.computation] = i; }
    var o = document.createElement('option'); o.value = i; o.textContent = v.title;
    picker.appendChild(o);
  });
  picker.hidden = DATA.views.length < 2;
  picker.addEventListener('change', function () { showView(+picker.value); });
  search.addEventListener('input', function () { runSearch(false); });
  search.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter') { ev.preventDefault(); runSearch(true); }
  });
  document.getElementById('fit').addEventListener('click', function () {
    if (cur) { setBox(cur.svg, cur.full); }
  });
  showView(0);
  window.hlocViewer = {select: select, show: showView, current: function () { return cur; }};
})();
