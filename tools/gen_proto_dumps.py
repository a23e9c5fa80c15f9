#!/usr/bin/env python3
"""Generate XLA's binary dumps (HloProto `.hlo.pb`, HloSnapshot `.snapshot.N.pb`) beside
the text dumps of the same modules, as hloc test data for reading `.pb` files.

DEV-ONLY (needs jax/jaxlib, e.g. /work/venv-jax/bin/python); the tests never import JAX.

    python tools/gen_proto_dumps.py [--out testdata/proto] [--only NAME ...]

Each program of tools/gen_dumps.py named in PROGRAMS runs once in its own process (that
script's `--worker`) with

    XLA_FLAGS=--xla_dump_to=TMP --xla_dump_large_constants=true
              --xla_dump_hlo_as_text --xla_dump_hlo_as_proto --xla_dump_hlo_snapshots

and the exact bytes XLA wrote for the program's jitted module are copied to OUT:

* NAME.before_optimizations.hlo / NAME.before_optimizations.hlo.pb   (text / HloProto)
* NAME.after_optimizations.hlo / NAME.after_optimizations.hlo.pb     (cpu_after_optimizations)
* NAME.hlo_snapshot.pb: the HloSnapshot XLA:CPU recorded when it ran the module (the
  optimised module, its arguments and its result).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "testdata" / "proto"
# Small programs covering shapes, constants, called computations (reduce, while,
# conditional, sort, scatter), dimension numbers (dot, conv, gather) and narrow types.
PROGRAMS = ["dense_relu", "mlp_train_step", "scan_rnn", "cond_pred_input", "gather_indexing",
            "scatter_ops", "sort_ops", "bf16_arith", "complex64_math", "conv2d_variants",
            "pad_negative_interior", "shape_ops", "int4_inputs", "reduce_ops",
            "switch_branches"]
FLAGS = ("--xla_dump_large_constants=true --xla_dump_hlo_as_text --xla_dump_hlo_as_proto "
         "--xla_dump_hlo_snapshots")


def generate(name: str, out: Path) -> list[str]:
    with tempfile.TemporaryDirectory(prefix=f"hlopb_{name}_") as tmp:
        dump = Path(tmp) / "dump"
        env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={dump} {FLAGS}", JAX_PLATFORMS="cpu",
                   TF_CPP_MIN_LOG_LEVEL="2", PYTHONHASHSEED="0")
        subprocess.run([sys.executable, "tools/gen_dumps.py", "--worker", name, "--result",
                        str(Path(tmp) / "r.npz")], cwd=REPO, env=env, check=True)
        rx = re.compile(rf"^module_\d+\.jit_{re.escape(name)}\.(.*)$")
        files = {}
        for p in sorted(dump.iterdir()):
            m = rx.match(p.name)
            if m:
                files[m.group(1)] = p
        wanted = {"before_optimizations.txt": ".before_optimizations.hlo",
                  "before_optimizations.hlo.pb": ".before_optimizations.hlo.pb",
                  "cpu_after_optimizations.txt": ".after_optimizations.hlo",
                  "cpu_after_optimizations.hlo.pb": ".after_optimizations.hlo.pb"}
        written = []
        for src, suffix in wanted.items():
            if src not in files:
                raise SystemExit(f"{name}: XLA wrote no {src} ({sorted(files)})")
            shutil.copyfile(files[src], out / (name + suffix))
            written.append(name + suffix)
        snaps = [k for k in files if k.startswith("snapshot.") and k.endswith(".pb")]
        if len(snaps) != 1:
            raise SystemExit(f"{name}: expected one snapshot, found {snaps}")
        shutil.copyfile(files[snaps[0]], out / (name + ".hlo_snapshot.pb"))
        written.append(name + ".hlo_snapshot.pb")
        return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--only", nargs="+", metavar="NAME")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    for name in a.only or PROGRAMS:
        for f in generate(name, a.out):
            print(f"{f}: {(a.out / f).stat().st_size} bytes")


if __name__ == "__main__":
    main()
