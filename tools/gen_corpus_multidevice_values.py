#!/usr/bin/env python3
"""XLA's per-device results for the multi-device modules of ../shared/corpus/xla.

DEV-ONLY (needs jax 0.10.2; the tests never import it).  Usage, from the repository root::

    /work/venv-jax/bin/python tools/gen_corpus_multidevice_values.py
        # rewrites testdata/multidevice/corpus_values.json

For each module listed in MODULES (replica_count R, num_partitions P), XLA:CPU compiles it
for R replicas x P partitions (no SPMD partitioning: every device runs the module as
written; device d = replica d // P, partition d % P) on
`--xla_force_host_platform_device_count` devices and runs it on the inputs `inputs()`
makes (small integers stored in the parameter's type; parameters of rank >= 1, so every sum is exact and the
result does not depend on the order XLA reduces in). Only the SHA-256 of each result
leaf's bytes (C order) per device is kept, so the checked-in file stays tiny;
tests/test_multidevice.py recomputes the inputs, runs hloc on all devices and compares
digests. Each module runs in its own subprocess.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "xla"
OUT = REPO / "testdata" / "multidevice" / "corpus_values.json"
MODULES = ["0127_allreducewithsubgroups.hlo", "0128_allreducewithsubgroupsiotalist.hlo",
           "0143_collectivepermute.hlo", "0150_collectivepermutestartanddone.hlo",
           "0264_checkreplicacount.hlo"]
# Not here: 0265 and 1621 (num_partitions > 1 without SPMD partitioning, which XLA:CPU
# refuses: "num_partitions=3 but SPMD partitioning not enabled"), 0974 and 1348 (global
# views: XLA partitions them itself).


def inputs(shapes_dtypes, device: int) -> list[np.ndarray]:
    """Device `device`'s arguments: exact small integers (shared with the test)."""
    out = []
    for k, (shape, dtype) in enumerate(shapes_dtypes):
        n = int(np.prod(shape))
        v = (np.arange(n, dtype=np.int64) * (k + 3) + device * 7) % 11 - 5
        out.append(v.astype(dtype).reshape(shape))
    return out


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def worker(name: str) -> None:
    import re

    import jax
    import jaxlib._hlo as h
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    text = (CORPUS / name).read_text()
    head = next(ln for ln in text.splitlines() if "HloModule" in ln)
    R = int((re.search(r"replica_count=(\d+)", head) or [0, 1])[1])
    P = int((re.search(r"num_partitions=(\d+)", head) or [0, 1])[1])
    m = h.hlo_module_from_text(text)
    bc = xc._xla.mlir.hlo_to_stablehlo(m.as_serialized_hlo_module_proto())
    with jmlir.make_ir_context():
        code = jmlir.module_to_bytecode(ir.Module.parse(bc))
    opts = xc.CompileOptions()
    opts.num_replicas, opts.num_partitions = R, P
    ebo = opts.executable_build_options
    ebo.num_replicas, ebo.num_partitions = R, P
    ebo.device_assignment = xc.DeviceAssignment.create(np.arange(R * P).reshape(R, P))
    ebo.use_spmd_partitioning = False
    devs = jax.devices("cpu")[:R * P]
    client = devs[0].client
    exe = client.compile_and_load(code, xc.DeviceList(tuple(devs)), opts)
    sys.path.insert(0, str(REPO))
    import hloc                                  # only for the parameter shapes
    params = [(tuple(p.shape.dims), p.shape.dtype.np)
              for p in hloc.parse(text).entry.parameters]
    per_device = [inputs(params, d) for d in range(R * P)]
    sharding = NamedSharding(Mesh(np.array(devs), ("d",)), PartitionSpec("d"))
    args = []
    for k, (pshape, _) in enumerate(params):     # per-device blocks stacked along dim 0
        blocks = [jax.device_put(per_device[d][k], dev) for d, dev in enumerate(devs)]
        args.append(jax.make_array_from_single_device_arrays(
            (R * P * pshape[0],) + pshape[1:], sharding, blocks))
    out = exe.execute_sharded(args)
    leaves = [[np.asarray(a) for a in leaf]
              for leaf in out.disassemble_into_single_device_arrays()]
    result = {"replicas": R, "partitions": P,
              "digests": [[digest(leaf[d]) for leaf in leaves] for d in range(R * P)]}
    print(json.dumps(result))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    values = {}
    for name in MODULES:
        env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=32",
                   JAX_PLATFORMS="cpu")
        r = subprocess.run([sys.executable, __file__, "--worker", name], env=env,
                           capture_output=True, text=True, check=True)
        values[name] = json.loads(r.stdout.strip().splitlines()[-1])
        print("ran", name, file=sys.stderr)
    OUT.write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
