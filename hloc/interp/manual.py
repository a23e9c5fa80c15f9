"""Global-view (before-optimizations) dumps: sharding annotations and manual regions.

A sharded `jit` is written with global shapes: `sharding=` attributes and the custom-calls
`Sharding`, `xla.sdy.FuncResultSharding`, `SPMDFullToShardShape`/`SPMDShardToFullShape`
only annotate, so they keep their operand's value (custom_calls.py and here). A shard_map
or pmap body is a *manual region*:

    %l = custom-call(%global), custom_call_target="xla.sdy.GlobalToLocalShape",
         frontend_attributes={xla.sdy.in_shardings=..., xla.sdy.manual_axes=...}
    %r = call(%l), to_apply=%xla.sdy.manual_computation_body...
    %g = custom-call(gte(%r, i)...), custom_call_target="xla.sdy.LocalToGlobalShape",
         frontend_attributes={xla.sdy.out_shardings=...}

GlobalToLocalShape splits each global operand along the mesh axes its Shardy sharding
names (the mesh from the module's `xla.sdy.meshes`) into one PerShard value holding every
device's block; the `call` then runs its body once per device, in threads meeting at
collectives (devices.run_per_shard: device d is partition d of a mesh-sized program); a
get-tuple-element of a PerShard value picks the element on every device;
LocalToGlobalShape puts the blocks back together by its out_shardings. In a partly manual
region (`xla.sdy.manual_axes` names some mesh axes) values are split along the manual axes
only and stay whole along the others; the body still runs on every device of the mesh,
since its collectives name devices of the whole mesh (`{{0,2},{1,3}}` for the first axis
of a 2x2 mesh), and the devices that differ only in non-manual axes compute the same
block. Sub-axes, priorities and a per-shard value used outside the region are
`unsupported`, named.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from ..syntax.device_groups import parse_sdy_meshes, parse_sdy_shardings
from ..verify.text_attrs import frontend_attributes
from .custom_calls import CUSTOM_CALLS, _identity
from .devices import PerShard

_REGION_USERS = frozenset({"call", "get-tuple-element", "custom-call"})


def _fe(inst) -> dict:
    v = inst.attrs.get("frontend_attributes")
    return frontend_attributes(getattr(v, "text", v) or "{}") or {}


def _mesh(inst, ctx, name: str):
    comp = inst.parent
    module = comp.parent if comp is not None else None
    text = (getattr(module, "attrs", None) or {}).get("frontend_attributes")
    fe = frontend_attributes(getattr(text, "text", text) or "{}") or {}
    meshes = parse_sdy_meshes(fe.get("xla.sdy.meshes", ""))
    mesh = meshes.get(name)
    if mesh is None:
        raise ctx.unsupported(inst, f"manual region on mesh @{name}, which the module's "
                                    "xla.sdy.meshes does not define")
    return mesh


def _shardings(inst, ctx, key: str, count: int):
    text = _fe(inst).get(key)
    out = parse_sdy_shardings(text) if text else None
    if out is None or len(out) != count:
        raise ctx.unsupported(inst, f"{inst.attrs.get('custom_call_target')} with "
                                    f"{key}={text!r} (a Shardy form hloc does not run yet)")
    return out


def _manual_axes(inst, ctx, mesh) -> set[str]:
    text = _fe(inst).get("xla.sdy.manual_axes", "")
    names = set(re.findall(r'"([^"\\]*)\\?"', text.replace('\\"', '"')))
    unknown = names - {n for n, _ in mesh.axes}
    if not names or unknown:
        raise ctx.unsupported(inst, f"manual region with xla.sdy.manual_axes={text!r}")
    return names


def _coords(mesh):
    """Mesh coordinates of every device id, in device-id order."""
    sizes = [s for _, s in mesh.axes]
    ids = mesh.device_ids or tuple(range(mesh.size))
    pos = {d: c for d, c in zip(ids, itertools.product(*(range(s) for s in sizes)))}
    return [pos[d] for d in range(mesh.size)]


def _blocks(mesh, sharding, shape_dims, coord, manual):
    """This device's block: split along the manual axes the sharding names (a partly
    manual region keeps the other axes' dimensions whole)."""
    names = [n for n, _ in mesh.axes]
    index = []
    for dim, axes in zip(shape_dims, sharding.dims):
        parts, i = 1, 0
        for a in (a for a in axes if a in manual):
            size = mesh.axis_size(a)
            i = i * size + coord[names.index(a)]
            parts *= size
        step = dim // parts
        index.append(slice(i * step, (i + 1) * step))
    return tuple(index)


def _check_users(inst, ctx, value_users) -> None:
    work = list(value_users)
    while work:
        u = work.pop()
        if u.opcode not in _REGION_USERS or (
                u.opcode == "custom-call" and u.attrs.get("custom_call_target")
                != "xla.sdy.LocalToGlobalShape"):
            raise ctx.unsupported(u, f"a per-shard value of a manual region used by {u.opcode} "
                                     "outside the region")
        if u.opcode in ("get-tuple-element", "call"):
            if u.parent is not None and u is u.parent.root:
                raise ctx.unsupported(u, "a per-shard value of a manual region as the "
                                         "computation's result (no LocalToGlobalShape)")
            work.extend(u.users)


def _global_to_local(inst, operands, ctx):
    shardings = _shardings(inst, ctx, "xla.sdy.in_shardings", len(operands))
    mesh = _mesh(inst, ctx, shardings[0].mesh)
    manual = _manual_axes(inst, ctx, mesh)
    _check_users(inst, ctx, inst.users)
    coords = _coords(mesh)
    outs = []
    for x, sh in zip(operands, shardings):
        x = np.asarray(x)
        if len(sh.dims) != x.ndim or any(
                x.shape[d] % np.prod([mesh.axis_size(a) for a in axes if a in manual] or [1])
                for d, axes in enumerate(sh.dims)):
            raise ctx.unsupported(inst, f"splitting {list(x.shape)} by {sh.dims} on mesh "
                                        f"{mesh.axes}")
        outs.append(PerShard([x[_blocks(mesh, sh, x.shape, c, manual)].copy()
                              for c in coords]))
    declared = list(inst.shape.elements) if hasattr(inst.shape, "elements") else [inst.shape]
    for v, leaf in zip(outs, declared):
        if v.shards[0].shape != tuple(leaf.dims):
            raise ctx.unsupported(inst, f"blocks of shape {list(v.shards[0].shape)} for a "
                                        f"declared {leaf}")
    return tuple(outs) if len(outs) > 1 else outs[0]


def _local_to_global(inst, operands, ctx):
    shardings = _shardings(inst, ctx, "xla.sdy.out_shardings", len(operands))
    mesh = _mesh(inst, ctx, shardings[0].mesh)
    manual = _manual_axes(inst, ctx, mesh)
    coords = _coords(mesh)
    leaves = list(inst.shape.elements) if len(operands) > 1 or hasattr(
        inst.shape, "elements") else [inst.shape]
    if len(leaves) != len(operands):
        raise ctx.unsupported(inst, f"LocalToGlobalShape of {len(operands)} values into "
                                    f"{len(leaves)} results")
    outs = []
    for v, sh, leaf in zip(operands, shardings, leaves):
        if not isinstance(v, PerShard) or len(v.shards) != len(coords):
            raise ctx.unsupported(inst, "LocalToGlobalShape of a value that is not per-shard")
        out = np.zeros(leaf.dims, dtype=leaf.dtype.np)
        if len(sh.dims) != out.ndim:
            raise ctx.unsupported(inst, f"out sharding {sh.dims} for a rank-{out.ndim} result")
        for block, c in zip(v.shards, coords):
            index = _blocks(mesh, sh, out.shape, c, manual)
            if out[index].shape != np.shape(block):
                raise ctx.unsupported(inst, f"a block of shape {list(np.shape(block))} where "
                                            f"{sh.dims} leaves {list(out[index].shape)}")
            out[index] = block
        outs.append(out)
    return tuple(outs) if hasattr(inst.shape, "elements") else outs[0]


def device_block(inst, operands, ctx):
    """GlobalToLocalShape on one device of an SPMD run of a global view (compiled code,
    hloc.backend.device_runtime): this device's block of each operand."""
    value = _global_to_local(inst, operands, ctx)
    values = value if isinstance(value, tuple) else (value,)
    d, n = ctx.device.id, ctx.device.replicas * ctx.device.partitions
    if len(values[0].shards) != n:
        raise ctx.unsupported(inst, f"a manual region on a mesh of {len(values[0].shards)} "
                                    f"devices in a module run on {n}")
    blocks = tuple(v.shards[d] for v in values)
    return blocks if isinstance(value, tuple) else blocks[0]


def gather_blocks(inst, operands, ctx):
    """LocalToGlobalShape on one device of such a run: every device's blocks, exchanged,
    put together into the global value(s)."""
    n = ctx.device.replicas * ctx.device.partitions
    values = ctx.exchange(inst, list(range(n)), tuple(operands))
    return _local_to_global(inst, [PerShard([v[i] for v in values])
                                   for i in range(len(operands))], ctx)


CUSTOM_CALLS.update({
    "xla.sdy.FuncResultSharding": _identity,
    "xla.sdy.GlobalToLocalShape": _global_to_local,
    "xla.sdy.LocalToGlobalShape": _local_to_global,
})
