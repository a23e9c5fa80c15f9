"""Just enough of the verbatim attributes for the checks that read them.

hloc keeps `sharding`, `frontend_attributes`, `metadata` and `origin` as verbatim text;
the verifier needs a few facts from them: the key/value map of frontend attributes
(composite calls), `scheduling_name` from metadata, whether an original value
(`origin=`) has an empty leaf, and a sharding's structure (HloSharding: replicated,
maximal, manual, tiled with its device assignment and subgroup dimensions, or a tuple of
those). These parsers are deliberately small; text they do not understand yields None
and the dependent check is skipped rather than guessed.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from ..syntax import attr_kinds

_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def _balanced(text: str, i: int) -> int:
    """Index just past the bracket group opening at text[i] (quotes skipped)."""
    close = {"{": "}", "(": ")", "[": "]"}
    stack = []
    while i < len(text):
        ch = text[i]
        if ch == '"':
            m = _QUOTED.match(text, i)
            i = m.end() if m else len(text)
            continue
        if ch in close:
            stack.append(close[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
            if not stack:
                return i + 1
        i += 1
    return len(text)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside quotes and brackets."""
    parts, start, i = [], 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            m = _QUOTED.match(text, i)
            i = m.end() if m else len(text)
            continue
        if ch in "{([":
            i = _balanced(text, i)
            continue
        if ch == sep:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _inner(text: str) -> str | None:
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    return text[1:-1]


@lru_cache(maxsize=1024)
def frontend_attributes(text: str) -> dict[str, str] | None:
    """`{a="x",b={...}}` -> {"a": "x", "b": "{...}"}; None when not understood."""
    body = _inner(text)
    if body is None:
        return None
    out = {}
    for item in split_top(body):
        key, eq, value = item.partition("=")
        if not eq:
            return None
        value = value.strip()
        if value.startswith('"'):
            try:
                value = attr_kinds.parse_value("string", value)
            except attr_kinds.AttrSyntaxError:
                return None
        out[key.strip()] = value
    return out


_SCHEDULING_NAME = re.compile(r'(?:^|[\s{])scheduling_name=("(?:[^"\\]|\\.)*")')


def metadata_field_scheduling_name(text: str) -> str | None:
    m = _SCHEDULING_NAME.search(text)
    return attr_kinds.parse_value("string", m.group(1)) if m else None


def original_value_has_empty_leaf(text: str) -> bool | None:
    """`origin={(({}, {"v2"}), {"v3"})}`: True when some leaf is `{}`."""
    body = _inner(text)
    if body is None:
        return None
    return _node_has_empty_leaf(body.strip())


def _node_has_empty_leaf(node: str) -> bool:
    if node.startswith("("):
        return any(_node_has_empty_leaf(p) for p in split_top(node[1:-1]))
    if node.startswith("{"):
        return not node[1:-1].strip()
    return False


# ---------------------------------------------------------------------------
# Sharding

@dataclass(frozen=True)
class Sharding:
    kind: str                        # replicated | maximal | manual | unknown | tiled | tuple
    dims: tuple[int, ...] = ()       # tile assignment dimensions
    devices: tuple[int, ...] = ()    # device per tile (iota expanded), or (device,) if maximal
    subgroups: int = 0               # trailing dims that are replication/manual subgroups
    elements: tuple["Sharding", ...] = ()

    def tiled_data_rank(self) -> int:
        return len(self.dims) - self.subgroups

    def for_shape(self, shape) -> "Sharding":
        """NormalizeTupleSharding: a non-tuple sharding on a tuple applies to each leaf."""
        if self.kind != "tuple" and getattr(shape, "is_tuple", False):
            return Sharding("tuple", elements=(self,) * len(shape.leaves()))
        return self


_INT_LIST = re.compile(r"-?\d+")
_WORD = re.compile(r"[A-Za-z_]+")


@lru_cache(maxsize=1024)
def parse_sharding(text: str) -> Sharding | None:
    body = _inner(text)
    if body is None:
        return None
    body = body.strip()
    if body.startswith("{") or not body:
        elements = []
        for part in split_top(body):
            e = parse_sharding(part)
            if e is None:
                return None
            elements.append(e)
        return Sharding("tuple", elements=tuple(elements))
    return _parse_single(body)


def _parse_single(body: str) -> Sharding | None:
    kind, dims, devices, subgroups = None, (), (), 0
    i = 0
    while i < len(body):
        if body[i].isspace():
            i += 1
            continue
        m = _WORD.match(body, i)
        if m is None:
            return None
        word = m.group()
        i = m.end()
        if word in ("replicated", "manual", "unknown"):
            kind = word
        elif word == "maximal":
            kind = "maximal"
        elif word == "device" and body.startswith("=", i):
            d = _INT_LIST.match(body, i + 1)
            if d is None:
                return None
            devices = (int(d.group()),)
            i = d.end()
        elif word == "devices" and body.startswith("=[", i):
            end = _balanced(body, i + 1)
            dims = tuple(int(x) for x in _INT_LIST.findall(body[i + 1:end]))
            i, devices = _parse_devices(body, end, dims)
            if devices is None:
                return None
            kind = "tiled"
        elif word == "last_tile_dim_replicate":
            subgroups += 1
        elif word == "last_tile_dims" and body.startswith("={", i):
            end = _balanced(body, i + 1)
            subgroups += len(split_top(body[i + 2:end - 1]))
            i = end
        elif word in ("shard_as", "shard_like"):
            n = _INT_LIST.match(body, i + 1 if body.startswith(" ", i) else i)
            i = n.end() if n is not None else i
        elif body.startswith("={", i) or body.startswith("=(", i):    # metadata={...}
            i = _balanced(body, i + 1)
        elif body.startswith("=", i):
            i = re.compile(r"=\S*").match(body, i).end()
        # other flags (unreduced, ...) do not matter for validation
    if kind is None:
        return None
    return Sharding(kind, dims, devices, subgroups)


def _parse_devices(body: str, i: int, dims: tuple[int, ...]):
    """The device list after `devices=[...]`: explicit ids or `<=[reshape]T(perm)`."""
    if body.startswith("<=[", i):
        end = _balanced(body, i + 2)
        reshape = tuple(int(x) for x in _INT_LIST.findall(body[i + 3:end - 1]))
        i = end
        perm = tuple(range(len(reshape)))
        if body.startswith("T(", i):
            end = _balanced(body, i + 1)
            perm = tuple(int(x) for x in _INT_LIST.findall(body[i + 2:end - 1]))
            i = end
        if sorted(perm) != list(range(len(reshape))) or math.prod(reshape) != math.prod(dims):
            return i, None
        return i, _iota(reshape, perm)
    m = re.compile(r"\s*-?\d+(?:\s*,\s*-?\d+)*").match(body, i)
    if m is None:
        return i, None
    return m.end(), tuple(int(x) for x in _INT_LIST.findall(m.group()))


def _iota(reshape, perm) -> tuple[int, ...]:
    strides = [1] * len(reshape)
    for k in range(len(reshape) - 2, -1, -1):
        strides[k] = strides[k + 1] * reshape[k + 1]
    out = [0]
    for axis in perm:                                      # row-major over permuted dims
        out = [base + j * strides[axis] for base in out for j in range(reshape[axis])]
    return tuple(out)
