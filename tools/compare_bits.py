"""Compare the bits the compiled back end computes against a stored baseline.

Dev tool for changes to code generation that may change the LLVM IR but must not change
results (issue 12): capture a baseline from the code before the change (a checkout of
it: the tool imports hloc from its own tree), then check the changed code against it.

    python tools/compare_bits.py --write /tmp/bits-baseline    # before
    python tools/compare_bits.py --check /tmp/bits-baseline    # after: exit 1 on any diff

Cases: every testdata/dumps/*.hlo run on its .npz inputs and benchmarks/run.py's modules
(file cases on their inputs, text cases on run.py's seeded inputs), each compiled (default
HLO pipeline) in xla-cpu and ieee numerics. A case records the dtype, shape and SHA-1 of
every output leaf, or the error the module raises.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _runs() -> list[tuple[str, str, object]]:
    """(name, HLO text, inputs function) of every case module, in a fixed order."""
    import numpy as np
    from hloc.inputs import load_npz
    out = []
    for p in sorted((ROOT / "testdata" / "dumps").glob("*.hlo")):
        npz = p.with_name(p.name.split(".")[0] + ".npz")

        def ins(npz=npz):
            d = load_npz(npz) if npz.exists() else {}
            return [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in")
                                                   and k[2:].isdigit()))]
        out.append((p.relative_to(ROOT).as_posix(), p.read_text(), ins))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run as bench
    for name, (text, make, _) in bench.CASES.items():
        out.append((f"run.py:{name}", text, lambda make=make: make(np.random.default_rng(0))))
    for name, stem in bench.FILE_CASES.items():
        text, ins, _ = bench._file_case(stem)
        out.append((f"run.py:{name}", text, lambda ins=ins: ins))
    return out


def output_hashes(text: str, name: str, inputs, numerics: str) -> str:
    import numpy as np
    import hloc
    from hloc.inputs import bind_arguments, flatten_leaves
    try:
        module = hloc.parse(text, name)
        args = bind_arguments(module, inputs())
        got = hloc.compile(module, numerics=numerics).run(args)
        lines = []
        for leaf in flatten_leaves(got, module.entry.root.shape):
            a = np.ascontiguousarray(np.asarray(leaf))
            lines.append(f"{a.dtype} {a.shape} {hashlib.sha1(a.tobytes()).hexdigest()}")
        return "\n".join(lines) + "\n"
    except Exception as e:          # noqa: BLE001  (the error is part of what must not change)
        return f"ERROR {type(e).__name__}: {e}\n"


def _cases():
    return [(f"{m}#{v}", lambda m=m, t=t, i=i, v=v: output_hashes(t, m, i, v))
            for m, t, i in _runs() for v in ("xla-cpu", "ieee")]


def main(argv=None) -> int:
    from baseline import main as baseline_main
    return baseline_main(argv, __doc__.splitlines()[0], _cases, ".txt")


if __name__ == "__main__":
    sys.exit(main())
