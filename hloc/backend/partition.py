"""One llvmlite module as several LLVM modules that compile independently (in parallel).

LLVM's optimisation and code generation are per module and cost about linear in its
size, so a module of many kernels split N ways compiles on N cores (hloc.backend.jit).
The split keeps the code what it would be in one module:

* *owned* functions — the entry, computation functions and `noinline` kernels, all with
  external linkage — are dealt to the parts by size (largest first, to the lightest
  part: the parts come out about equally heavy), and declared in the parts that call
  them; such calls were never inlined, so code is the same;
* *shared* functions — inlinable kernels (under hloc.backend.kernels.INLINE_WORK) and
  internal helpers (the GEMM micro-kernels, the pthread runtime, sort helpers) — go,
  as internal copies, into every part that references them (transitively), so every
  inlining LLVM did in one module it can still do; a copy left after inlining is
  removed by LLVM as dead;
* read-only private globals (constants) are copied into each part that uses them;
  any other global (thread count, RNG counters, profile table) lives in the first part
  that references it and becomes external there when another part references it too.

A module small enough for one part gets the same treatment (its inlinable kernels
internal: LLVM then drops them once inlined instead of also compiling each on its own).
References are read from each global value's printed text (`@"name"`), which llvmlite
always quotes. Parts are deterministic in the module, so their objects are too.

A *unit* is an owned function whose code is complete while the rest of the module is
still being generated (a large computation such as a scan body: its callees come first):
`unit_part` makes its part then (itself, its shared closure, declarations, copies of the
private constants it reads), so it can compile while Python goes on (hloc.backend.jit);
`split` then puts the units first and deals out the rest. A unit whose closure reads
any other global, or a module that cannot be split, has no unit parts.
"""
from __future__ import annotations

import re

from llvmlite import ir

from . import irtext

_REF = re.compile(r'@"((?:[^"\\]|\\.)*)"')
_PRIVATE = ("private", "internal")


class Split:
    """The printed module (`text`), its parts' texts (`parts`: one when not split) and the
    names of the functions each part defines (`members`)."""

    def __init__(self, text: str, parts: list[str], members: list[set], units: int = 0):
        self.text = text
        self.parts = parts
        self.members = members
        self.units = units           # the first `units` parts are the units' own


def _declaration(fn_text: str) -> str:
    """A definition's prototype as a declaration (owned functions are external)."""
    head = fn_text[:fn_text.index("\n")]
    if not head.startswith("define "):
        raise AssertionError(f"not a definition: {head[:80]}")
    return "declare " + head[len("define "):] + "\n"


def _external_decl(g: ir.GlobalVariable) -> str:
    kind = "constant" if g.global_constant else "global"
    return f"{g.get_reference()} = external {kind} {g.value_type}"


def _with_linkage(g, linkage: str) -> str:
    """`g` printed with another linkage (through `descr`: llvmlite caches `str` of a
    global variable)."""
    old, buf = g.linkage, []
    g.linkage = linkage
    try:
        if isinstance(g, ir.Function):
            buf.append(irtext.text(g))      # = descr, at irtext's speed
        else:
            g.descr(buf)
    finally:
        g.linkage = old
    text = "".join(buf)
    return text if isinstance(g, ir.Function) else f"{g.get_reference()} = {text}"


def _header(module: ir.Module) -> list[str]:
    header = [f'; ModuleID = "{module.name}"', f'target triple = "{module.triple}"',
              f'target datalayout = "{module.data_layout}"', ""]
    return header + [t.get_declaration() for t in module.get_identified_types().values()]


def _metadata(module: ir.Module) -> list[str]:
    """Unnamed metadata (loop hints: hloc.backend.loops.hint_loops), which goes whole into
    every part: a node a part's functions do not reference is allowed and costs nothing."""
    return [str(md).rstrip("\n") for md in module.metadata]


def _shared(fn, roots) -> bool:
    return fn.name not in roots and (fn.linkage in _PRIVATE or "noinline" not in fn.attributes)


def _member_text(fn, text: str, roots) -> str:
    """A function a part defines: a shared one as the part's internal copy."""
    return _with_linkage(fn, "internal") if _shared(fn, roots) and fn.linkage not in _PRIVATE \
        else text


def unit_part(module: ir.Module, fn: ir.Function, printed: dict, roots=()):
    """(text, member names) of a part of its own for `fn`, an owned function whose code
    and callees are complete, or None where it cannot have one (see the module's
    docstring). `printed`: global value name -> text, filled here and read by `split`
    (a function is printed once; what a unit reaches does not change after)."""
    if module.namedmetadata or _shared(fn, roots):
        return None
    by_name = module.globals

    def text(name: str) -> str:
        t = printed.get(name)
        if t is None:
            t = printed[name] = irtext.text(by_name[name])
        return t

    members, stack, reached = {fn.name}, [fn.name], set()
    while stack:
        for r in dict.fromkeys(_REF.findall(text(stack.pop()))):
            g = by_name.get(r)
            if g is None or r in members:
                continue
            if isinstance(g, ir.Function) and not g.is_declaration and _shared(g, roots):
                members.add(r)
                stack.append(r)
            elif isinstance(g, ir.GlobalVariable) and not (
                    g.global_constant and g.linkage in _PRIVATE
                    and set(_REF.findall(text(r))) <= {r}):
                return None              # state other parts share, or a function's address
            else:
                reached.add(r)
    lines = _header(module)
    for v in by_name.values():           # in the module's order
        n = v.name
        if n in members:
            lines.append(_member_text(v, text(n), roots))
        elif n in reached:
            if isinstance(v, ir.Function) and not v.is_declaration:
                lines.append(_declaration(text(n)))
            else:
                lines.append(text(n))
    return "\n".join(lines + _metadata(module)), members   # the nodes made so far


def split(module: ir.Module, part_bytes: int, max_parts: int, roots=(), units=(),
          printed=None) -> Split:
    """`module` printed whole and as about one part per `part_bytes` of function text,
    at most `max_parts` (`roots`: functions that must stay external, e.g. the entry
    looked up by name), after the parts of `units` ((function name, text, members), as
    unit_part made them, in order; `Split.units` is how many were kept: none where the
    module cannot be split; `printed`: unit_part's texts)."""
    header = _header(module)
    values = list(module.globals.values())
    printed = printed or {}
    texts = {v.name: printed.get(v.name) or irtext.text(v) for v in values}   # = str(v)
    metadata = _metadata(module)
    whole = "\n".join(header + [texts[v.name] for v in values] + metadata)
    unit_names = {n for n, _, _ in units}
    defined = [v for v in values if isinstance(v, ir.Function) and not v.is_declaration]
    # sizes count the arrays of pointers that calls of direct kernels leave out
    # (hloc.backend.kernels.KERNEL_ARRAY_BYTES), as when the part sizes were tuned
    size = {v.name: len(texts[v.name]) + getattr(v, "args_array_bytes", 0) for v in values}
    parts = max(1, min(max_parts, -(-sum(size[f.name] for f in defined)
                                    // max(part_bytes, 1))) - len(units))
    every = [{f.name for f in defined}]
    if len(defined) < 2 or module.namedmetadata:
        return Split(whole, [whole], every)
    by_name = {v.name: v for v in values}
    refs = {v.name: [r for r in dict.fromkeys(_REF.findall(texts[v.name]))
                     if r != v.name and r in by_name] for v in values}
    if any(isinstance(by_name[r], ir.Function) for v in values
           if isinstance(v, ir.GlobalVariable) for r in refs[v.name]):
        return Split(whole, [whole], every)  # a function's address in a global: not split

    # Each owned function and the shared functions it reaches (its closure).
    closure = {}
    owned = [f for f in defined if not _shared(f, roots) and f.name not in unit_names]
    for f in owned:
        seen, stack = {f.name}, [f.name]
        while stack:
            for r in refs[stack.pop()]:
                g = by_name[r]
                if r not in seen and isinstance(g, ir.Function) and not g.is_declaration \
                        and _shared(g, roots):
                    seen.add(r)
                    stack.append(r)
        closure[f.name] = seen
    if not owned:
        if units:                         # (the entry is always owned)
            raise AssertionError("units without the rest of the module")
        return Split(whole, [whole], every)
    members: list[set] = [set() for _ in range(max(1, min(parts, len(owned))))]
    weight = [0] * len(members)
    for f in sorted(owned, key=lambda f: (-sum(size[n] for n in closure[f.name]), f.name)):
        k = min(range(len(members)), key=lambda k: (weight[k], k))
        new = closure[f.name] - members[k]
        members[k] |= new
        weight[k] += sum(size[n] for n in new)
    # Where each global value lives, and which parts reference it.
    used: list[set] = []
    for m in members:
        u, stack = set(m), list(m)
        while stack:                       # what m's functions reference, and what those
            for r in refs[stack.pop()]:    # globals' initializers reference in turn
                if r not in u:
                    u.add(r)
                    if isinstance(by_name[r], ir.GlobalVariable):
                        stack.append(r)
        used.append(u)
    gv_home = {}
    for v in values:
        if isinstance(v, ir.GlobalVariable):
            users = [k for k in range(len(members)) if v.name in used[k]]
            gv_home[v.name] = (users[0] if users else 0, users)
    out = []
    for k, m in enumerate(members):
        lines = list(header)
        for v in values:
            n = v.name
            if isinstance(v, ir.GlobalVariable):
                first, users = gv_home[n]
                if k not in users and k != first:
                    continue
                if v.global_constant and v.linkage in _PRIVATE:
                    lines.append(texts[n])                  # a copy per part
                elif k == first:
                    cross = len(users) > 1 and v.linkage in _PRIVATE
                    lines.append(_with_linkage(v, "") if cross else texts[n])
                else:
                    lines.append(_external_decl(v))
            elif v.is_declaration:
                lines.append(texts[n])
            elif n in m:
                lines.append(_member_text(v, texts[n], roots))
            elif n in used[k]:
                lines.append(_declaration(texts[n]))
        out.append("\n".join(lines + metadata))
    return Split(whole, [t for _, t, _ in units] + out, [set(m) for _, _, m in units] + members,
                 len(units))
