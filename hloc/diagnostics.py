"""Source locations and the error family every stage raises.

An error knows where it happened (file, line, column) and renders as
`file:line:col: error: message`, followed by the source line and a caret, the way
compilers and XLA's own parser report problems. The CLI turns any HlocError into
that text and exit code; nothing else should print errors.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLoc:
    line: int            # 1-based
    col: int             # 1-based
    source: "Source | None" = None

    def __str__(self) -> str:
        name = self.source.name if self.source is not None else "<input>"
        return f"{name}:{self.line}:{self.col}"


class Source:
    """A named text with lazy line lookup (for carets and line/col from offsets)."""

    def __init__(self, text: str, name: str = "<input>"):
        self.text = text
        self.name = name
        self._line_starts: list[int] | None = None

    def _starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.text.find
            pos = find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._line_starts = starts
        return self._line_starts

    def loc(self, offset: int) -> SourceLoc:
        import bisect
        starts = self._starts()
        i = bisect.bisect_right(starts, offset) - 1
        return SourceLoc(i + 1, offset - starts[i] + 1, self)

    def line_text(self, line: int) -> str:
        starts = self._starts()
        if not 1 <= line <= len(starts):
            return ""
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return self.text[starts[line - 1]:end].rstrip("\r")


class HlocError(Exception):
    """Base of all user-facing errors. `exit_code` is what the CLI returns."""

    exit_code = 4
    kind = "error"

    def __init__(self, message: str, loc: SourceLoc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    notes: tuple = ()       # extra `note: ...` lines (e.g. what a non-HLO file looks like)

    def render(self) -> str:
        return self._render() + "".join(f"\nnote: {n}" for n in self.notes)

    def _render(self) -> str:
        if self.loc is None:
            return f"{self.kind}: {self.message}"
        head = f"{self.loc}: {self.kind}: {self.message}"
        src = self.loc.source
        if src is None:
            return head
        line = src.line_text(self.loc.line)
        if not line:             # an empty line (or no text at all): a bare caret says nothing
            return head
        if len(line) > 400:  # keep huge one-line inputs readable
            start = max(0, self.loc.col - 200)
            line = line[start:start + 400]
            caret_col = self.loc.col - start
        else:
            caret_col = self.loc.col
        caret = "".join("\t" if ch == "\t" else " " for ch in line[:caret_col - 1]) + "^"
        return f"{head}\n{line}\n{caret}"

    def __str__(self) -> str:
        return self.render()


class ParseError(HlocError):
    exit_code = 2


class VerifyError(HlocError):
    exit_code = 2


class UnsupportedError(HlocError):
    """An op, attribute value or custom-call target hloc cannot execute (yet)."""

    exit_code = 3
    kind = "error"


class InputError(HlocError):
    """Bad user-supplied inputs (npz, literal text, argument count/shape)."""

    exit_code = 2


class CompareError(HlocError):
    exit_code = 1
