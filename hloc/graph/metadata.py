"""Tooltip text for an instruction: metadata's op_name, op_type and source line.

`metadata={...}` is kept verbatim by the parser; the fields are read here with a small
scanner. The source line is `source_file`/`source_line` in older dumps, or the leaf frame
of `stack_frame_id` resolved through the module's StackFrames -> FileLocations ->
FileNames/FunctionNames tables in 2025+ dumps (the innermost frame first, as XLA shows it).
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
        self.frames = {i: _fields(t) for i, t in tables.get("StackFrames", {}).items()}

    def source(self, frame_id: int) -> str | None:
        frame = self.frames.get(frame_id)
        if frame is None:
            return None
        loc = self.locations.get(_int(frame.get("file_location_id")))
        if loc is None:
            return None
        file = self.files.get(_int(loc.get("file_name_id")), "?")
        func = self.functions.get(_int(loc.get("function_name_id")))
        text = f"{file}:{loc.get('line', '?')}"
        return f"{text} ({func})" if func else text


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
    elif stack is not None and _int(f.get("stack_frame_id")) is not None:
        src = stack.source(int(f["stack_frame_id"]))
        if src:
            lines.append(f"source: {src}")
    return "\n".join(lines)
