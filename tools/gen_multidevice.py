#!/usr/bin/env python3
"""Generate multi-device XLA dumps (4 CPU devices) with JAX's global and per-device values.

DEV-ONLY (needs jax 0.10.2; the hloc tests never import it).  Usage, from the repository
root::

    /work/venv-jax/bin/python tools/gen_multidevice.py     # rewrites testdata/multidevice/

Each program runs in its own subprocess with ``XLA_FLAGS=--xla_force_host_platform_device_count=4
--xla_dump_to=<tmp> --xla_dump_hlo_as_text`` and ``jax.jit(..., keep_unused=True)``.  Of the
dump folder only the program's module (the one whose before-optimizations header says
``num_partitions`` or ``replica_count`` > 1) is kept, byte for byte:

- ``<program>.before_optimizations.hlo`` (the global view, with shardings and Shardy
  manual regions) and ``<program>.after_optimizations.hlo`` (one partition's program);
- ``<program>.npz``: the global inputs ``in0, in1, ...`` (ENTRY parameter order) and JAX's
  global outputs ``out0, out1, ...`` (flattened result order);
- ``<program>.devices.npz``: the same keys with a leading device axis of size 4: entry
  ``[d]`` is what device ``d`` (= partition ``d``: the meshes are ``jax.devices()`` in
  order) held as the after-optimizations dump's argument or result.

testdata/multidevice/README.md describes the layout.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "testdata" / "multidevice"
DEVICES = 4
PROGRAMS = ("pmap_collectives", "shard_map_collectives", "dp_mlp_step", "mesh2d_matmul",
            "fsdp_layer", "shard_map_partial", "shard_map_2d")


def _programs():
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import shard_map
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    rng = np.random.default_rng(17)
    devs = jax.devices()

    def pmap_collectives():
        def f(x):
            return jax.lax.psum(x, "i"), jax.lax.pmean(x * 2, "i"), x * jax.lax.axis_index("i")
        x = rng.standard_normal((4, 3), np.float32)
        mesh = Mesh(np.array(devs), ("i",))          # so the shards are known: x[d:d+1]
        return jax.pmap(f, axis_name="i"), (jax.device_put(x, NamedSharding(mesh, P("i"))),)

    def shard_map_collectives():
        mesh = Mesh(np.array(devs), ("x",))

        def g(x):
            ag = jax.lax.all_gather(x, "x", tiled=True)
            pp = jax.lax.ppermute(x, "x", [(i, (i + 1) % 4) for i in range(4)])
            rs = jax.lax.psum_scatter(ag * 3, "x", tiled=True)
            a2a = jax.lax.all_to_all(ag, "x", 0, 0, tiled=True)
            mx = jax.lax.pmax(x, "x")
            return ag, pp, rs, a2a, mx
        spec = P("x")
        fn = jax.jit(shard_map(g, mesh=mesh, in_specs=spec, out_specs=(spec,) * 5),
                     keep_unused=True)
        x = rng.standard_normal((8, 2), np.float32)
        return fn, (jax.device_put(x, NamedSharding(mesh, spec)),)

    def dp_mlp_step():
        mesh = Mesh(np.array(devs), ("data",))
        rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))

        def loss_fn(params, x, y):
            h = jnp.tanh(x @ params["w1"] + params["b1"])
            return jnp.mean((h @ params["w2"] - y) ** 2)

        def step(params, x, y):
            loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
            return loss, jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        params = {"w1": rng.standard_normal((4, 8), np.float32) * 0.5,
                  "b1": rng.standard_normal((8,), np.float32) * 0.1,
                  "w2": rng.standard_normal((8, 2), np.float32) * 0.5}
        x = rng.standard_normal((8, 4), np.float32)
        y = rng.standard_normal((8, 2), np.float32)
        fn = jax.jit(step, keep_unused=True, in_shardings=(rep, batch, batch),
                     out_shardings=(rep, rep))
        return fn, (jax.device_put(params, rep), jax.device_put(x, batch),
                    jax.device_put(y, batch))

    def mesh2d_matmul():
        mesh = Mesh(np.array(devs).reshape(2, 2), ("data", "model"))
        xs, ws = NamedSharding(mesh, P("data", None)), NamedSharding(mesh, P(None, "model"))

        def f(x, w):
            y = jnp.tanh(x @ w)
            return y, y.sum(axis=1)
        fn = jax.jit(f, keep_unused=True, in_shardings=(xs, ws),
                     out_shardings=(NamedSharding(mesh, P("data", "model")),
                                    NamedSharding(mesh, P("data"))))
        x = rng.standard_normal((4, 6), np.float32)
        w = rng.standard_normal((6, 4), np.float32)
        return fn, (jax.device_put(x, xs), jax.device_put(w, ws))

    def fsdp_layer():
        mesh = Mesh(np.array(devs), ("fsdp",))
        sh = NamedSharding(mesh, P("fsdp", None))

        def loss_fn(w, x):
            return jnp.mean(jax.nn.relu(x @ w) ** 2)

        def step(w, x):
            loss, g = jax.value_and_grad(loss_fn)(w, x)
            return loss, w - 0.1 * g
        fn = jax.jit(step, keep_unused=True, in_shardings=(sh, sh),
                     out_shardings=(NamedSharding(mesh, P()), sh))
        w = rng.standard_normal((8, 4), np.float32) * 0.5
        x = rng.standard_normal((8, 8), np.float32)
        return fn, (jax.device_put(w, sh), jax.device_put(x, sh))

    def shard_map_partial():
        """shard_map manual over `data` only of a 2x2 data x model mesh (`model` stays
        automatic inside the body)."""
        mesh = Mesh(np.array(devs).reshape(2, 2), ("data", "model"))

        def body(x, w):
            y = jnp.tanh(x @ w)
            return jax.lax.psum(y.sum(axis=0, keepdims=True), "data"), y
        fn = jax.jit(shard_map(body, mesh=mesh, in_specs=(P("data", None), P(None, None)),
                               out_specs=(P(), P("data", None)), axis_names={"data"}),
                     keep_unused=True)
        x = rng.standard_normal((4, 6), np.float32)
        w = rng.standard_normal((6, 4), np.float32)
        return fn, (jax.device_put(x, NamedSharding(mesh, P("data", None))),
                    jax.device_put(w, NamedSharding(mesh, P(None, "model"))))

    def shard_map_2d():
        """Collectives over one axis, the other, and both of a 2x2 a x b mesh."""
        mesh = Mesh(np.array(devs).reshape(2, 2), ("a", "b"))

        def body(x):
            s = jax.lax.psum(x, "a")
            g = jax.lax.all_gather(x, "b", axis=1, tiled=True)
            p = jax.lax.ppermute(x, "a", [(0, 1), (1, 0)])
            m = jax.lax.pmax(x, ("a", "b"))
            t = jax.lax.all_to_all(x, "b", 1, 0, tiled=True)
            i = (jax.lax.axis_index("a") * 10 + jax.lax.axis_index("b")).astype(x.dtype)
            return s, g, p, m, t, x * 0 + i
        spec = P("a", "b")
        fn = jax.jit(shard_map(body, mesh=mesh, in_specs=spec, out_specs=(spec,) * 6),
                     keep_unused=True)
        x = rng.standard_normal((4, 8), np.float32)
        return fn, (jax.device_put(x, NamedSharding(mesh, spec)),)

    return locals()


def worker(name: str, out_prefix: str) -> None:
    import json

    import jax
    import numpy as np

    jax.config.update("jax_hlo_source_file_canonicalization_regex", r".*/(?=tools/)")
    fn, args = _programs()[name]()
    outs = fn(*args)
    flat_in = jax.tree_util.tree_leaves(args)
    flat_out = jax.tree_util.tree_leaves(outs)

    def per_device(a):
        a = a if isinstance(a, jax.Array) else jax.device_put(a)
        shards = {s.device.id: np.asarray(s.data) for s in a.addressable_shards}
        if len(shards) != DEVICES:
            raise SystemExit(f"{name}: a value on {len(shards)} devices, not {DEVICES}")
        return np.stack([shards[d] for d in range(DEVICES)])

    glob = {f"in{i}": np.asarray(a) for i, a in enumerate(flat_in)}
    glob.update({f"out{i}": np.asarray(a) for i, a in enumerate(flat_out)})
    dev = {f"in{i}": per_device(a) for i, a in enumerate(flat_in)}
    dev.update({f"out{i}": per_device(a) for i, a in enumerate(flat_out)})
    for arrays, path in ((glob, out_prefix + ".npz"), (dev, out_prefix + ".devices.npz")):
        arrays["dtypes"] = np.array(json.dumps({k: v.dtype.name for k, v in arrays.items()},
                                               sort_keys=True))
        np.savez(path, **arrays)


def _pick(dump: Path) -> tuple[Path, Path]:
    import re
    found = []
    for before in sorted(dump.glob("module_*.before_optimizations.txt")):
        head = before.read_text().split("\n", 1)[0]
        if re.search(r"(num_partitions|replica_count)=([2-9]|\d\d)", head):
            after = Path(str(before).replace(".before_optimizations.txt",
                                             ".cpu_after_optimizations.txt"))
            found.append((before, after))
    if len(found) != 1:
        raise SystemExit(f"expected one multi-device module in {dump}, found {found}")
    return found[0]


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    OUT.mkdir(parents=True, exist_ok=True)
    for name in PROGRAMS:
        with tempfile.TemporaryDirectory() as tmp:
            dump = Path(tmp) / "dump"
            env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={DEVICES} "
                       f"--xla_dump_to={dump} --xla_dump_hlo_as_text", JAX_PLATFORMS="cpu")
            subprocess.run([sys.executable, __file__, "--worker", name, str(Path(tmp) / name)],
                           check=True, env=env, cwd=REPO)
            before, after = _pick(dump)
            shutil.copyfile(before, OUT / f"{name}.before_optimizations.hlo")
            shutil.copyfile(after, OUT / f"{name}.after_optimizations.hlo")
            shutil.copyfile(Path(tmp) / f"{name}.npz", OUT / f"{name}.npz")
            shutil.copyfile(Path(tmp) / f"{name}.devices.npz", OUT / f"{name}.devices.npz")
        print("wrote", name)


if __name__ == "__main__":
    main()
