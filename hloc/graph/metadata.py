"""Tooltip text for an instruction, as XLA's GetInstructionNodeMetadata writes it.

`metadata={...}` is kept verbatim by the parser; its fields are read here with a small
scanner. The lines are op_name, `op_type: T`, `source: file:line` (older dumps), then for
2025+ dumps the stack of `stack_frame_id`, innermost first, one `file:function:line:column`
per frame, resolved through the module's StackFrames -> FileLocations -> FileNames /
FunctionNames tables. In the text, a frame's parent_frame_id is one more than the
parent's id (0 there, printed as 1, ends the stack).
"""
from __future__ import annotations

import re

_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]+)')


def _fields(text: str) -> dict[str, str]:
    out = {}
    for key, value in _FIELD.findall(text):
        if value.startswith('"'):
            value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        out[key] = value
    return out


class StackIndex:
    """The module's StackFrames tables, indexed by id."""

    def __init__(self, sections):
        tables = {title: {i: text for i, text, _pos in rows} for title, rows in sections or ()}
        self.files = {i: _fields("x=" + t).get("x", t) for i, t in
                      tables.get("FileNames", {}).items()}
        self.functions = {i: _fields("x=" + t).get("x", t) for i, t in
                          tables.get("FunctionNames", {}).items()}
        self.locations = {i: _fields(t) for i, t in tables.get("FileLocations", {}).items()}
        self.frames_by_id = {i: _fields(t) for i, t in tables.get("StackFrames", {}).items()}

    def frames(self, frame_id: int, limit: int = 64) -> list[str]:
        """`file:function:line[:column]` for the frame and its callers (a dump is untrusted:
        stop at a repeat or after `limit` frames)."""
        out, seen = [], set()
        while frame_id and frame_id not in seen and len(out) < limit:
            seen.add(frame_id)
            frame = self.frames_by_id.get(frame_id)
            if frame is None:
                break
            loc = self.locations.get(_int(frame.get("file_location_id")))
            if loc is None:
                break
            file = self.files.get(_int(loc.get("file_name_id")), "?")
            func = self.functions.get(_int(loc.get("function_name_id")), "?")
            col = loc.get("column", "0")
            out.append(f"{file}:{func}:{loc.get('line', '0')}" + (f":{col}" if col != "0" else ""))
            parent = _int(frame.get("parent_frame_id"))
            frame_id = parent - 1 if parent else 0
        return out


def _int(text) -> int | None:
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def tooltip(inst, stack: StackIndex | None) -> str:
    """XLA's GetInstructionNodeMetadata lines, joined by newlines ('' without metadata)."""
    meta = inst.attrs.get("metadata")
    text = getattr(meta, "text", None)
    if not text:
        return ""
    f = _fields(text)
    lines = []
    if f.get("op_name"):
        lines.append(f["op_name"])
    if f.get("op_type"):
        lines.append(f"op_type: {f['op_type']}")
    if f.get("source_file") and f.get("source_line", "0") != "0":
        lines.append(f"source: {f['source_file']}:{f['source_line']}")
    frame = _int(f.get("stack_frame_id"))
    if stack is not None and frame:
        lines += stack.frames(frame)
    return "\n".join(lines)
