"""The package's layers (stated in hloc/__init__.py), read from the imports with `ast`.

Bottom-up: value types (dtypes, shapes, attribute values, literal values) import nothing
above them; the registry (hloc.ops) imports only value types; the graph (hloc.ir's
module/graph/rewriter) imports value types and the registry; text (hloc.syntax, the
printer) sits beside the graph; the interpreter, the verifier and the passes above;
executors and commands on top. Every import counts, function-level ones included.
"""
from __future__ import annotations

import ast
from pathlib import Path

HLOC = Path(__file__).resolve().parent.parent / "hloc"

VALUE_TYPES = {"hloc.ir.dtypes", "hloc.ir.shape", "hloc.ir.attrs", "hloc.ir.literal",
               "hloc.ir.stackframes", "hloc.diagnostics"}
GRAPH = {"hloc.ir.module", "hloc.ir.graph", "hloc.ir.rewriter", "hloc.ir.clone",
         "hloc.ir.call_graph", "hloc.ir.changes", "hloc.ir.control",
         "hloc.ir.hooks", "hloc.ir.invariants", "hloc.ir.fusing"}
REGISTRY_PREFIX = "hloc.ops"
HIGH = ("hloc.passes", "hloc.interp", "hloc.syntax", "hloc.backend", "hloc.aot", "hloc.runner",
        "hloc.cli", "hloc.verify", "hloc.verifier", "hloc.printer", "hloc.inputs",
        "hloc.compare", "hloc.fake_args", "hloc.graph")


def _module_name(path: Path) -> str:
    rel = path.relative_to(HLOC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every hloc module `path` imports (resolved relative imports; `from x import y`
    counts as x.y when that is a module, else x)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("hloc"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if not mod.startswith("hloc"):
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in MODULES else mod)
    return out


FILES = {(_module_name(p)): p for p in HLOC.rglob("*.py")}
MODULES = set(FILES)
IMPORTS = {m: _imports(p) for m, p in FILES.items()}


def _above(target: str, allowed) -> bool:
    return not any(target == a or target.startswith(a + ".") for a in allowed)


def test_value_types_import_nothing_above_them():
    bad = [(m, t) for m in VALUE_TYPES if m in IMPORTS for t in IMPORTS[m]
           if t not in VALUE_TYPES and t != "hloc"]
    assert not bad, bad


def test_registry_imports_only_value_types_and_itself():
    bad = [(m, t) for m in MODULES if m.startswith(REGISTRY_PREFIX) for t in IMPORTS[m]
           if t not in VALUE_TYPES and not t.startswith(REGISTRY_PREFIX)]
    assert not bad, bad


def test_graph_imports_only_value_types_registry_and_graph():
    bad = [(m, t) for m in GRAPH for t in IMPORTS[m]
           if t not in VALUE_TYPES | GRAPH and not t.startswith(REGISTRY_PREFIX)]
    assert not bad, bad


def test_nothing_in_graph_or_registry_imports_passes_interp_syntax_or_executors():
    low = GRAPH | {m for m in MODULES if m.startswith(REGISTRY_PREFIX)} | VALUE_TYPES
    bad = [(m, t) for m in low if m in IMPORTS for t in IMPORTS[m] if not _above(t, HIGH)]
    assert not bad, bad


def test_no_import_cycles_between_layers():
    """No cycle among the modules' top-level imports (function-level imports may reach
    up only where a test above allows it)."""
    graph = {}
    for m, p in FILES.items():
        name = m
        package = name if p.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    deps.add(sub if sub in MODULES else mod)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hloc"):
                deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("hloc"))
        # a package's own __init__ is imported first anyway; not an edge
        graph[m] = {d for d in deps if d in MODULES and not m.startswith(d + ".")
                    and d != "hloc"}
    state: dict = {}
    cycle = []

    def visit(start):
        stack = [(start, iter(sorted(graph[start])))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            for d in it:
                if state.get(d) == 1:
                    cycle.append([n for n, _ in stack] + [d])
                    return
                if d not in state:
                    state[d] = 1
                    stack.append((d, iter(sorted(graph[d]))))
                    break
            else:
                state[node] = 2
                stack.pop()

    for m in sorted(graph):
        if m not in state:
            visit(m)
        if cycle:
            break
    assert not cycle, " -> ".join(cycle[0])
