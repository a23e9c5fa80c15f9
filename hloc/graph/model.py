"""The drawing model: nodes, edges and clusters of one view, built from a ViewSpec.

This follows XLA's HloDotDumper: constants are not nodes but lines in their users'
labels (unless one is a root or the --around centre); an expanded fusion is a cluster
holding its fused computation, its operands' edges going to the fused parameters and its
users' edges leaving the fused root; other called computations are clusters linked to
their caller by a dashed edge from their root (trivial reducers such as `add` are a
`Subcomputation: add` line instead); the top computation's root gets a ROOT tag. Every
edge carries the operand's shape. The writers (dot.py, html.py) only format this model.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.shape import ArrayShape
from ..printer import instruction_to_text
from ..syntax.literal_printer import literal_text
from .colours import FUSION_CLUSTER, FUSION_CLUSTER_HIGHLIGHT, is_small, scheme_for
from .metadata import StackIndex, tooltip
from .selection import DEEMPHASISED, HIGHLIGHT, SOME_OPERANDS, OMIT_OPERANDS, \
    ViewSpec, is_trivial, shown_callees

_MAX_SHAPE_LEN = 64               # XLA's kMaxShapeLen


@dataclass
class Node:
    id: str
    name: str                     # instruction name ('' for the ROOT tag)
    title: str                    # first (bold) label line
    lines: list[str]              # further label lines
    scheme: str                   # colours.SCHEMES key
    shape: str                    # rect | ellipse | circle
    tooltip: str
    text: str                     # the instruction's full text line
    cluster: str | None
    computation: str
    opcode: str = ""
    calls: list[str] = field(default_factory=list)   # callees not drawn in this view


@dataclass
class Edge:
    id: str
    src: str
    dst: str
    label: str                    # the value's shape
    kind: str = "data"            # data | control | call
    port: int | None = None       # operand number when the user has several
    small: bool = True
    tooltip: str = ""
    ltail: str | None = None      # call edges leave the callee's cluster


@dataclass
class Cluster:
    id: str
    title: str
    lines: list[str]
    parent: str | None
    kind: str                     # fusion | call
    fill: str
    stroke: str
    computation: str


@dataclass
class View:
    title: str
    notes: list[str]
    computation: str = ""         # the computation drawn
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)


def shape_text(shape, with_layout: bool) -> str:
    text = str(shape) if with_layout else shape.no_layout()
    if len(text) > _MAX_SHAPE_LEN:
        text = text[:_MAX_SHAPE_LEN - 3] + "..."
    return text


def _node_shape_text(inst) -> str:
    """XLA shows the layout only when some leaf has more than one dimension."""
    multidim = any(isinstance(s, ArrayShape) and len(s.dims) > 1 for s in inst.shape.leaves())
    return shape_text(inst.shape, inst.opcode != "tuple" and multidim)


def _constant_text(const) -> str:
    shape = const.shape
    if isinstance(shape, ArrayShape) and shape.size <= 8 and const.literal is not None:
        lit = literal_text(const.literal)
        if len(lit) <= 64:
            return f"{shape} {lit}"
    name = const.name if const.name.startswith("constant") else f"constant {const.name}"
    return f"{name} {shape_text(shape, False)}"


class _Builder:
    def __init__(self, module, spec: ViewSpec, fusions: str):
        self.spec = spec
        self.fusions = fusions
        self.stack = StackIndex(module.stack_frames) if module.stack_frames else None
        self.view = View(spec.title, list(spec.notes), spec.top.name)
        self.node_of: dict[int, str] = {}
        self.cluster_of: dict[int, str] = {}
        self.expanded: set[int] = set()   # fusions drawn as clusters
        self.pending: list[tuple] = []    # (from inst, to node id, edge fields)
        self.fusion_of: dict[int, object] = {}   # fused computation -> its fusion
        self.call_edges: list[tuple] = []        # (callee, caller, attribute name)

    # -- which instruction stands for a value ---------------------------------------------
    def _source(self, inst):
        while id(inst) in self.expanded:
            inst = inst.attrs["calls"].root
        return inst

    def _has_node(self, inst) -> bool:
        return id(inst) in self.node_of

    # -- walking ------------------------------------------------------------------------
    def build(self) -> View:
        top = self.spec.top
        self._computation(top, None)
        for src, dst, kw in self.pending:
            src = self._source(src)
            if not self._has_node(src):
                continue
            self.view.edges.append(Edge(f"e{len(self.view.edges) + 1}", self.node_of[id(src)],
                                        dst, shape_text(src.shape, False),
                                        small=is_small(src.shape),
                                        tooltip=f"{src.name} -> {kw.pop('to_name')}", **kw))
        for comp, caller, role in self.call_edges:
            src = self._source(comp.root)
            if self._has_node(src) and self._has_node(caller):
                self.view.edges.append(Edge(
                    f"e{len(self.view.edges) + 1}", self.node_of[id(src)],
                    self.node_of[id(caller)], role, kind="call", small=is_small(src.shape),
                    tooltip=f"{comp.name} -> {caller.name}", ltail=self.cluster_of[id(comp)]))
        root = self._source(top.root) if top.root is not None else None
        if root is not None and self._has_node(root):
            tag = Node("root", "", "ROOT", [], "brown", "circle", "", "", None, top.name)
            self.view.nodes.append(tag)
            self.view.edges.append(Edge(f"e{len(self.view.edges) + 1}", self.node_of[id(root)],
                                        "root", shape_text(root.shape, False),
                                        small=is_small(root.shape), tooltip=f"{root.name} -> ROOT"))
        return self.view

    def _computation(self, comp, cluster):
        flt = self.spec.filter
        for inst in comp.instructions:
            state = flt.state(inst)
            if state is None:
                continue
            if inst.opcode == "fusion" and self.fusions == "expanded" and \
                    state not in (SOME_OPERANDS, OMIT_OPERANDS):
                self.expanded.add(id(inst))
            if self.spec.nested or id(inst) in self.expanded:
                for sub in shown_callees(inst, self.fusions):
                    if inst.opcode == "fusion" and id(inst) not in self.expanded:
                        continue
                    if any(flt.state(i) is not None for i in sub.instructions):
                        self._callee(inst, sub, cluster, state)
            if id(inst) not in self.expanded:
                self._instruction(inst, cluster, state)

    def _callee(self, caller, comp, cluster, state):
        if caller.opcode == "fusion":
            self.fusion_of[id(comp)] = caller
        else:
            role = next((k for k, v in caller.attrs.items()
                         if v is comp or (isinstance(v, tuple) and comp in v)), "calls")
            self.call_edges.append((comp, caller, role))
        if id(comp) in self.cluster_of:
            return
        cid = f"c{len(self.view.clusters) + 1}"
        self.cluster_of[id(comp)] = cid
        if caller.opcode == "fusion":
            kind = caller.attrs.get("kind", "")
            fill, stroke = FUSION_CLUSTER_HIGHLIGHT if state == HIGHLIGHT else FUSION_CLUSTER
            c = Cluster(cid, f"Fused expression for {caller.name}",
                        [str(kind), _node_shape_text(caller)], cluster, "fusion", fill, stroke,
                        comp.name)
        else:
            c = Cluster(cid, f"Subcomputation for {caller.name}", [comp.name], cluster, "call",
                        "white", "black", comp.name)
        self.view.clusters.append(c)
        self._computation(comp, cid)

    def _instruction(self, inst, cluster, state):
        comp = inst.parent
        is_root = comp.root is inst
        if inst.opcode == "constant" and not is_root and state != HIGHLIGHT:
            return
        nid = f"n{len(self.node_of) + 1}"
        self.node_of[id(inst)] = nid
        fused = comp.is_fusion_computation or id(comp) in self.fusion_of
        scheme = scheme_for(inst, fused)
        if state in DEEMPHASISED:
            scheme = "dashed"
        if state == HIGHLIGHT:
            scheme = "dark_red"
        if inst.opcode == "parameter":
            title, lines = f"Parameter {inst.parameter_number}", [inst.name]
        elif inst.name.startswith(inst.opcode):
            title, lines = inst.name, []
        else:
            op = inst.opcode
            if op == "fusion":
                op += f":{inst.attrs.get('kind', '')}"
            title, lines = inst.name, [op]       # XLA: name in bold, then the opcode
        calls = self._collapsed_callees(inst)
        lines += self._callee_lines(inst, calls)
        lines += self._inlined_operands(inst)
        lines.append(_node_shape_text(inst))
        text = instruction_to_text(inst, is_root=is_root)
        self.view.nodes.append(Node(nid, inst.name, title, lines, scheme,
                                    "ellipse" if inst.opcode == "while" else "rect",
                                    tooltip(inst, self.stack), text, cluster, comp.name,
                                    inst.opcode, [c.name for c in calls]))
        self._incoming(inst, nid, state)

    def _collapsed_callees(self, inst) -> list:
        """Called computations neither drawn here as clusters nor trivial."""
        drawn = set()
        if self.spec.nested or id(inst) in self.expanded:
            drawn = {id(c) for c in shown_callees(inst, self.fusions)}
        return [c for c in inst.called_computations() if id(c) not in drawn and
                (inst.opcode == "fusion" or not is_trivial(c))]

    def _callee_lines(self, inst, collapsed) -> list[str]:
        comps = inst.called_computations()
        lines = []
        for i, comp in enumerate(comps):
            if inst.opcode != "fusion" and is_trivial(comp):
                what = comp.root.opcode
                lines.append(f"Subcomputation: {what}" if len(comps) == 1
                             else f"Subcomputation {i}: {what}")
            elif comp in collapsed:
                lines.append(f"calls: {comp.name}")
        return lines

    def _inlined_operands(self, inst) -> list[str]:
        ops = inst.operands
        lines = []
        fusion = self.fusion_of.get(id(inst.parent)) if inst.opcode == "parameter" else None
        if fusion is not None and inst.parameter_number < len(fusion.operands):
            bound = fusion.operands[inst.parameter_number]     # XLA shows a bound constant
            if bound.opcode == "constant" and not self._has_node(bound):
                lines.append(f"= {_constant_text(bound)}")
        for i, op in enumerate(ops):
            if op.opcode == "constant" and not self._has_node(op):
                head = f"operand {i}" if len(ops) > 1 else "operand"
                lines.append(f"{head} = {_constant_text(op)}")
        return lines

    def _incoming(self, inst, nid, state):
        comp = inst.parent
        if inst.opcode == "parameter" and comp is not self.spec.top:
            caller = self.fusion_of.get(id(comp))
            # An unverified module may have fewer fusion operands than parameters.
            if caller is not None and 0 <= inst.parameter_number < len(caller.operands):
                op = caller.operands[inst.parameter_number]
                self.pending.append((op, nid, {"to_name": inst.name}))
            return
        if state == OMIT_OPERANDS:
            return
        many = len(inst.operands) > 1
        for i, op in enumerate(inst.operands):
            self.pending.append((op, nid, {"to_name": inst.name, "port": i if many else None}))
        for pred in inst.control_predecessors:
            self.pending.append((pred, nid, {"to_name": inst.name, "kind": "control"}))


def build_view(module, spec: ViewSpec, fusions: str = "expanded") -> View:
    return _Builder(module, spec, fusions).build()
