"""Dev-only: what XLA's own hlo_graph_dumper draws, for tests/test_graph.py to compare with.

Runs a few programs of tools/gen_dumps.py under JAX with `--xla_dump_hlo_as_dot` and writes,
per dumped module and stage, the HLO text XLA dumped (testdata/graph/xla/NAME.hlo) and, for
every instruction node of XLA's DOT (parameters are labelled by number, so they are left
out), its fill colour, stroke colour, shape and tooltip (NAME.json).
Usage: python tools/gen_graph_xla.py   (needs `pip install -e '.[dev]'`)
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "testdata" / "graph" / "xla"
PROGRAMS = ["mlp_train_step", "fori_loop_accumulate", "switch_branches", "cnn_train_step"]
NODE = re.compile(r'^\d+ \[label=<(.*?)>, shape=(\w+), tooltip="((?:[^"\\]|\\.)*)", '
                  r'style="[^"]*", fontcolor="[^"]*", color="([^"]*)", fillcolor="([^"]*)"\];',
                  re.M | re.S)


def nodes(dot: str) -> dict:
    out = {}
    for m in NODE.finditer(dot):
        head = re.sub(r"</?b>", "", m.group(1).split("<br/>")[0])
        if head.startswith("Parameter ") or head == "ROOT":
            continue
        out[head] = {"fill": m.group(5), "stroke": m.group(4), "shape": m.group(2),
                     "tooltip": m.group(3).replace('\\"', '"')}
    return out


def main() -> None:
    dump = tempfile.mkdtemp(prefix="hloc-xla-dot-")
    os.environ["XLA_FLAGS"] = (f"--xla_dump_to={dump} --xla_dump_hlo_as_dot "
                               f"--xla_dump_hlo_as_text")
    sys.path.insert(0, str(ROOT / "tools"))
    import jax
    import numpy as np

    import gen_dumps
    OUT.mkdir(parents=True, exist_ok=True)
    for name in PROGRAMS:
        before = set(os.listdir(dump))
        fn, args = gen_dumps.PROGRAMS[name]["build"](np.random.default_rng(0))
        jax.jit(fn)(*args)
        for dot in sorted(set(glob.glob(f"{dump}/*.dot")) - {f"{dump}/{b}" for b in before}):
            stage = "after" if "after_optimizations" in dot else "before"
            base = f"{name}.{stage}"
            shutil.copy(dot[:-4] + ".txt", OUT / f"{base}.hlo")
            with open(OUT / f"{base}.json", "w") as f:
                json.dump(nodes(Path(dot).read_text()), f, indent=1, sort_keys=True)
            print(f"{base}: {len(nodes(Path(dot).read_text()))} nodes")
    shutil.rmtree(dump, ignore_errors=True)


if __name__ == "__main__":
    main()
