"""A FileCheck subset for the `.hlo` pass tests (testdata/opt/**).

A test file starts with `// RUN: hloc opt %s <flags>` (an optional `| FileCheck %s`
tail is ignored) and has `// CHECK:`, `// CHECK-NEXT:`, `// CHECK-SAME:`,
`// CHECK-NOT:` and `// CHECK-LABEL:` (= CHECK) lines, matched in order against the
output as LLVM FileCheck does: CHECK finds its pattern at or after the end of the
previous match, CHECK-NEXT on the next line, CHECK-SAME on the same line after it,
CHECK-NOT must not occur between the surrounding positive matches. Patterns are literal
text with runs of whitespace matching any horizontal whitespace, `{{regex}}` blocks,
`[[NAME:regex]]` captures and `[[NAME]]` uses. Any other CHECK-like directive is an
error, so a test cannot silently check less than it says.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_DIRECTIVE = re.compile(r"//\s*CHECK(-[A-Z]+)?:(.*)$")
_UNKNOWN = re.compile(r"//\s*CHECK-?[A-Z-]*\b")
_RUN = re.compile(r"^\s*//\s*RUN:\s*(.*)$")
_KINDS = {None: "CHECK", "-LABEL": "CHECK", "-NEXT": "NEXT", "-SAME": "SAME", "-NOT": "NOT"}


class FileCheckError(AssertionError):
    pass


@dataclass
class Check:
    kind: str          # CHECK | NEXT | SAME | NOT
    pattern: str
    line: int          # in the test file (1-based)


def run_args(text: str, path: str) -> list[str]:
    """The arguments after `hloc opt` on the RUN line, with %s replaced by `path`."""
    for line in text.splitlines():
        m = _RUN.match(line)
        if m:
            cmd = m.group(1).split("|")[0]
            words = shlex.split(cmd)
            if words[:2] != ["hloc", "opt"]:
                raise FileCheckError(f"RUN line must start with 'hloc opt': {line}")
            return [path if w == "%s" else w for w in words[2:]]
    raise FileCheckError("no '// RUN:' line")


def parse_checks(text: str) -> list[Check]:
    checks = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.search(line)
        if m is None:
            if _UNKNOWN.search(line) and "RUN:" not in line:
                raise FileCheckError(f"line {n}: unsupported directive: {line.strip()}")
            continue
        kind = _KINDS.get(m.group(1))
        if kind is None:
            raise FileCheckError(f"line {n}: unsupported directive CHECK{m.group(1)}")
        pattern = m.group(2).strip()
        if not pattern and kind != "NOT":
            raise FileCheckError(f"line {n}: empty CHECK pattern")
        checks.append(Check(kind, pattern, n))
    if not checks:
        raise FileCheckError("no CHECK lines")
    return checks


def _regex(pattern: str, variables: dict) -> re.Pattern:
    out = []
    pos = 0
    token = re.compile(r"\{\{(.*?)\}\}|\[\[([A-Za-z_][A-Za-z0-9_]*)(?::(.*?))?\]\]")
    for m in token.finditer(pattern):
        out.append(_literal(pattern[pos:m.start()]))
        if m.group(1) is not None:
            out.append(f"(?:{m.group(1)})")
        elif m.group(3) is not None:
            out.append(f"(?P<{m.group(2)}>{m.group(3)})")
        else:
            if m.group(2) not in variables:
                raise FileCheckError(f"undefined variable [[{m.group(2)}]]")
            out.append(re.escape(variables[m.group(2)]))
        pos = m.end()
    out.append(_literal(pattern[pos:]))
    return re.compile("".join(out))


def _literal(text: str) -> str:
    return "[ \t]+".join(re.escape(part) for part in re.split(r"[ \t]+", text))


def check(output: str, checks: list[Check], name: str = "<test>") -> None:
    """Raise FileCheckError (an AssertionError) unless `output` satisfies `checks`."""
    lines = output.split("\n")
    variables: dict[str, str] = {}
    line, col = 0, 0               # where the previous match ended
    pending_not: list[Check] = []

    def fail(c: Check, what: str):
        context = "\n".join(f"  {i + 1:4d}| {lines[i]}" for i in
                            range(max(0, line - 2), min(len(lines), line + 6)))
        raise FileCheckError(f"{name}:{c.line}: {what}: {c.kind} {c.pattern!r}\n"
                             f"output near line {line + 1}:\n{context}")

    def not_between(start, end):
        for c in pending_not:
            rx = _regex(c.pattern, variables)
            (l0, c0), (l1, c1) = start, end
            for i in range(l0, min(l1, len(lines) - 1) + 1):
                seg = lines[i][c0 if i == l0 else 0: c1 if i == l1 else None]
                if rx.search(seg):
                    fail(c, f"CHECK-NOT matched on output line {i + 1}")
        pending_not.clear()

    for c in checks:
        if c.kind == "NOT":
            pending_not.append(c)
            continue
        rx = _regex(c.pattern, variables)
        found = None
        if c.kind == "SAME":
            m = rx.search(lines[line], col) if line < len(lines) else None
            if m:
                found = (line, m)
        elif c.kind == "NEXT":
            nxt = line + 1
            m = rx.search(lines[nxt]) if nxt < len(lines) else None
            if m:
                found = (nxt, m)
        else:
            for i in range(line, len(lines)):
                m = rx.search(lines[i], col if i == line else 0)
                if m:
                    found = (i, m)
                    break
        if found is None:
            fail(c, "no match")
        i, m = found
        not_between((line, col), (i, m.start()))
        variables.update({k: v for k, v in m.groupdict().items() if v is not None})
        line, col = i, m.end()
    not_between((line, col), (len(lines) - 1, len(lines[-1]) if lines else 0))
