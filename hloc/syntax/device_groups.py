"""Device groups and Shardy mesh/sharding text: the `replica_groups` attribute kind.

XLA writes a collective's device groups in three forms: an explicit list
`{{0,1},{2,3}}`, the iota form `[2,2]<=[4]` (both parsed by attr_structs.py into ReplicaGroups), and,
since 2026, mesh axes: `mesh['data'=2,'model'=2] {'model'}`, optionally with
`, device_ids=(3,2,1,0)` after the mesh and sub-axes `'x':(2)2` (pre-size 2, size 2) in
the group (xla/hlo/ir/replica_group.cc MeshAxesReplicaGroupList). `MeshGroups` keeps
the mesh and axes as written, prints them back byte for byte as XLA's ToString does, and
computes `groups` as XLA's flattened_replica_groups: each grouped axis (split into its
sub-axis pieces) is moved after the others in the mesh's device array and the array is
cut into groups of the grouped axes' size. attr_kinds.KINDS registers the `replica_groups`
kind (all three forms) with this module's parser and printer.

It also reads the Shardy text of before-optimizations dumps: a mesh
`#sdy.mesh<["data"=2, "model"=2]>` (module frontend attribute `xla.sdy.meshes`) and a
sharding `<@mesh, [{"data"}, {}]>` (per dimension, the mesh axes that split it, major
first), for the interpreter's manual regions.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import attr_structs as _attrs

__all__ = ["MeshGroups", "SdyMesh", "SdySharding", "parse_sdy_meshes", "parse_sdy_shardings",
           "group_list"]


MAX_MESH = 1 << 20     # devices in one mesh; its groups are materialised on demand


@dataclass(frozen=True)
class MeshGroups:
    """`mesh[...] {...}` replica groups: axis (name, size) pairs, explicit device ids
    (None = iota), and the grouped axes as (axis index, pre_size, size) with pre_size 0
    for a whole axis."""
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None
    grouped: tuple[tuple[int, int, int], ...]

    @cached_property
    def groups(self) -> tuple[tuple[int, ...], ...]:
        return _mesh_groups(self)

    @property
    def iota(self):
        return None


def group_list(value) -> tuple[tuple[int, ...], ...]:
    """The explicit groups of any replica_groups value (empty = all devices)."""
    return tuple(getattr(value, "groups", value) or ())


def _mesh_groups(v: MeshGroups) -> tuple[tuple[int, ...], ...]:
    sizes = [s for _, s in v.axes]
    ids = np.arange(math.prod(sizes)) if v.device_ids is None else np.array(v.device_ids)
    # Split every mesh axis into the pieces its grouped sub-axes need (ComputeReindexedAxes).
    dims, grouped_dims = [], {}
    for a, size in enumerate(sizes):
        parts = sorted((g for g in v.grouped if g[0] == a), key=lambda g: g[1])
        if not parts:
            dims.append(size)
            continue
        if parts[0][1] == 0:                               # the whole axis
            dims.append(size)
            grouped_dims[(a, 0)] = len(dims) - 1
            continue
        prefix = 1
        for _, pre, sub in parts:
            if pre != prefix:
                dims.append(pre // prefix)
                prefix = pre
            dims.append(sub)
            grouped_dims[(a, pre)] = len(dims) - 1
            prefix *= sub
        if prefix != size:
            dims.append(size // prefix)
    order = [grouped_dims[(a, pre)] for a, pre, _ in v.grouped]
    rest = [d for d in range(len(dims)) if d not in order]
    arr = ids.reshape(dims).transpose(rest + order)
    size = math.prod(dims[d] for d in order)
    return tuple(tuple(int(x) for x in row) for row in arr.reshape(-1, size))


# ---------------------------------------------------------------------------
# Parsing and printing mesh-axes groups

_QNAME = re.compile(r"'((?:[^'\\]|\\.)*)'")


def _name(c) -> str:
    m = c.match(_QNAME)
    if not m:
        raise c.err("expects string")
    return m.group(1)


def _p_mesh_groups(c) -> MeshGroups:
    start = c.ws()
    c.need("mesh", "expects 'mesh'")
    c.need("[", "expects '[' to start the mesh axes")
    axes = []
    while True:
        name = _name(c)
        c.need("=", "expects '=' after a mesh axis name")
        p = c.ws()
        size = c.int()
        if size <= 0:
            raise c.err(f"mesh axis size must be positive, but got {size}", p)
        if any(n == name for n, _ in axes):
            raise c.err(f"Mesh has duplicate axis names. Duplicate axis name: {name}", p)
        axes.append((name, size))
        if not c.eat(","):
            break
    c.need("]", "expects ']' to end the mesh axes")
    total = math.prod(s for _, s in axes)
    if total > MAX_MESH:
        raise c.err(f"a mesh of {total} devices (hloc handles at most {MAX_MESH})", start)
    device_ids = None
    if c.eat(","):
        c.need("device_ids", "expects device_ids")
        c.need("=", "expects '=' after device_ids")
        c.need("(", "expects '(' to start the device ids")
        p = c.ws()
        ids = []
        while not c.at(")"):
            ids.append(c.int())
            if not c.eat(","):
                break
        c.need(")", "expects ')' to end the device ids")
        if sorted(ids) != list(range(total)):
            raise c.err(f"Device ids must be a permutation of [0, {total})", p)
        device_ids = tuple(ids)
    c.need("{", "expects '{' to start the mesh axes of the groups")
    grouped = []
    names = [n for n, _ in axes]
    while not c.at("}"):
        p = c.ws()
        name = _name(c)
        if name not in names:
            raise c.err(f"unknown mesh axis '{name}'", p)
        a = names.index(name)
        pre = sub = 0
        if c.eat(":"):
            c.need("(", "expects '(' to start a sub-axis pre-size")
            pre = c.int()
            c.need(")", "expects ')' to end a sub-axis pre-size")
            sub = c.int()
            if pre <= 0 or sub <= 1 or axes[a][1] % (pre * sub) or sub >= axes[a][1]:
                raise c.err(f"invalid sub-axis '{name}':({pre}){sub} of an axis of size "
                            f"{axes[a][1]}", p)
        grouped.append((a, pre, sub))
        if not c.eat(","):
            break
    c.need("}", "expects '}' to end the mesh axes of the groups")
    per_group = math.prod(sub or axes[a][1] for a, _, sub in grouped)
    if per_group <= 1:
        raise c.err("MeshAxesReplicaGroupList must have more than one device per group, but "
                    f"got {per_group}", start)
    for i, (a, pre, sub) in enumerate(grouped):
        for b, pre2, sub2 in grouped[i + 1:]:
            if a == b and (not sub or not sub2 or (pre < pre2 * sub2 and pre2 < pre * sub)):
                raise c.err("Axes cannot coexist or axes overlap.", start)
    return MeshGroups(tuple(axes), device_ids, tuple(grouped))


def _f_mesh_groups(v: MeshGroups) -> str:
    out = "mesh[" + ",".join(f"'{n}'={s}" for n, s in v.axes) + "]"
    if v.device_ids is not None:
        out += ", device_ids=(" + ",".join(map(str, v.device_ids)) + ")"
    parts = []
    for a, pre, sub in v.grouped:
        name = f"'{v.axes[a][0]}'"
        parts.append(name + (f":({pre}){sub}" if sub else ""))
    return out + " {" + ",".join(parts) + "}"


def _p_replica_groups(c):
    if c.at("mesh"):
        return _p_mesh_groups(c)
    return _attrs._p_replica_groups(c)


def _f_replica_groups(v) -> str:
    if isinstance(v, MeshGroups):
        return _f_mesh_groups(v)
    return _attrs._f_replica_groups(v)


# ---------------------------------------------------------------------------
# Shardy meshes and shardings (frontend attributes of before-optimizations dumps)

@dataclass(frozen=True)
class SdyMesh:
    axes: tuple[tuple[str, int], ...]
    device_ids: tuple[int, ...] | None = None

    @property
    def size(self) -> int:
        return math.prod(s for _, s in self.axes)

    def axis_size(self, name: str) -> int:
        return dict(self.axes)[name]


@dataclass(frozen=True)
class SdySharding:
    """One value's sharding: the mesh name and, per dimension, the splitting axes."""
    mesh: str
    dims: tuple[tuple[str, ...], ...]


_SDY_MESH = re.compile(r"(\w+)\s*=\s*#sdy\.mesh<\[([^\]]*)\](?:\s*,\s*device_ids\s*=\s*\[([^\]]*)\])?>")
_SDY_AXIS = re.compile(r'"([^"]*)"\s*=\s*(\d+)')
_SDY_ONE = re.compile(r"<@(\w+)\s*,\s*\[((?:\{[^}]*\}\s*,?\s*)*)\]")
_SDY_DIM = re.compile(r"\{([^}]*)\}")


def parse_sdy_meshes(text: str) -> dict[str, SdyMesh]:
    """`{mesh = #sdy.mesh<["i"=4]>, m2 = ...}` -> {"mesh": SdyMesh(...)}."""
    out = {}
    for m in _SDY_MESH.finditer(text):
        axes = tuple((n, int(s)) for n, s in _SDY_AXIS.findall(m.group(2)))
        ids = tuple(int(x) for x in m.group(3).split(",")) if m.group(3) else None
        out[m.group(1)] = SdyMesh(axes, ids)
    return out


def parse_sdy_shardings(text: str) -> list[SdySharding] | None:
    """`#sdy.sharding_per_value<[<@mesh, [{"i"}, {}]>, ...]>` or `#sdy.sharding<@mesh,
    [...]>` -> one SdySharding per value (an open dimension `{"i", ?}` counts as its axes);
    None when a form here is not understood (sub-axes, priorities, replicated/unreduced
    axes lists)."""
    text = text.replace('\\"', '"')
    out = []
    for m in _SDY_ONE.finditer(text):
        dims = []
        for d in _SDY_DIM.findall(m.group(2)):
            d = d.strip()
            names = tuple(re.findall(r'"([^"]*)"', d))
            if re.sub(r'"[^"]*"|[\s,?]', "", d):       # sub-axes ':(1)2' ...
                return None
            dims.append(names)
        out.append(SdySharding(m.group(1), tuple(dims)))
    rest = _SDY_ONE.sub("", text)
    if "<@" in rest or "replicated" in rest or "unreduced" in rest:
        return None
    return out
