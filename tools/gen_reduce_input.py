"""Dev-only: writes testdata/reduce/, the big real dump `hloc reduce` is tested on.

    XLA_FLAGS is set here; run with JAX installed:  python tools/gen_reduce_input.py

A 6-layer BERT-like transformer training step (tools/gen_dumps.py's _bert_parts with the
layers unrolled, as most real dumps have them; tiny dimensions so the interpreter runs it
in well under a second) compiled by jax.jit on CPU. XLA's own
`*.before_optimizations.txt` dump is copied as
`testdata/reduce/bert6_train_step.before_optimizations.hlo`, with the inputs JAX used as
`bert6_train_step.npz` (in0, in1, ... in flattened order).
"""
from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "testdata" / "reduce"


def main() -> None:
    dump = tempfile.mkdtemp(prefix="hloc-reduce-input-")
    os.environ["XLA_FLAGS"] = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
    sys.path.insert(0, str(REPO / "tools"))
    import jax
    from gen_dumps import _bert_parts, _canonical_paths
    _canonical_paths(jax)
    rng = np.random.default_rng(6)
    loss_fn, init = _bert_parts(vocab=40, d=16, heads=2, ff=32, layers=6, seq=8)

    def bert6_train_step(p, tok, mask, tgt):
        loss, g = jax.value_and_grad(loss_fn)(p, tok, mask, tgt)
        return loss, jax.tree.map(lambda a, b: a - 0.01 * b, p, g)
    p = init(rng)
    tok = rng.integers(0, 40, (2, 8)).astype(np.int32)
    mask = np.ones((2, 8), np.float32)
    mask[1, 6:] = 0
    tgt = rng.integers(0, 40, (2, 8)).astype(np.int32)
    args = (p, tok, mask, tgt)
    jax.block_until_ready(jax.jit(bert6_train_step)(*args))
    [before] = glob.glob(os.path.join(dump, "*jit_bert6_train_step.before_optimizations.txt"))
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(before, OUT / "bert6_train_step.before_optimizations.hlo")
    leaves = jax.tree.leaves(args)
    np.savez(OUT / "bert6_train_step.npz", **{f"in{i}": np.asarray(a) for i, a in enumerate(leaves)})
    shutil.rmtree(dump)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
