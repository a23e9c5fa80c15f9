"""Compare the bits of a row group's two forms over a range of row lengths (dev tool).

The explicit vector form (hloc.backend.row_vector) must give the bits of the scalar form
(row_vector.ENABLED off), whose loops LLVM's vectoriser turns into partial sums of its
own choosing. For every row length in [LO, HI] this compiles softmax (or layernorm, or
softmax divided by the sum of x; f64 with a 64 suffix) over f32[ROWS, n] in both forms
(row_groups.MIN_BYTES = 0, xla-cpu numerics, 1 thread), runs them on the same random rows
and prints `n  n % 64  elements-differing` for each length that takes the vector form.
`--avx2`: the host's AVX-512 features turned off (as the AVX2 tests do).

    python tools/compare_row_forms.py softmax 128 300
    python tools/compare_row_forms.py layernorm 64 200 --avx2

Exit 1 if any length differs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["softmax", "layernorm", "softmax_x", "layernorm64", "softmax_x64"])
    ap.add_argument("lo", type=int)
    ap.add_argument("hi", type=int)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--avx2", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    from hloc.backend import jit
    if a.avx2:
        target, cpu, feats, triple = jit.host()
        feats = ",".join("-" + f[1:] if f.startswith(("+avx512", "+avx10", "+amx")) else f
                         for f in feats.split(","))
        jit._host = (target, cpu, feats, triple)
    import hloc
    from hloc.backend import compile_module, row_groups, row_vector
    from hloc.backend.expand import for_codegen
    from hloc.cli_backend import prepare_for_cpu
    from row_modules import layernorm, softmax, vector_code
    row_groups.MIN_BYTES = 0
    wide = a.kind.endswith("64")
    base = a.kind[:-2] if wide else a.kind
    make = {"softmax": lambda n: softmax(a.rows, n), "softmax_x": lambda n: softmax(a.rows, n, "x"),
            "layernorm": lambda n: layernorm(a.rows, n)}[base]
    bad = 0
    for n in range(a.lo, a.hi + 1):
        text = make(n).replace("f32", "f64") if wide else make(n)
        module = for_codegen(prepare_for_cpu(hloc.parse(text), None))
        x = np.random.default_rng(n).standard_normal((a.rows, n)) * 4
        x = x.astype(np.float64 if wide else np.float32)
        outs = []
        for vector in (True, False):
            row_vector.ENABLED = vector
            if vector and not vector_code(module):
                break
            outs.append(np.asarray(compile_module(module, threads=1).run([x])))
        row_vector.ENABLED = True
        if len(outs) < 2:
            continue
        u = np.uint64 if wide else np.uint32
        d = int((outs[0].view(u) != outs[1].view(u)).sum())
        bad += d > 0
        print(n, n % 64, d, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
