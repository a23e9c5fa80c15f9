"""Compare the LLVM IR the compiled back end emits against a stored baseline.

Dev tool for changes to LLVM IR generation that must not change the code (issue 12):
capture a baseline from the code before the change, then check the changed code against
it byte for byte.

    python tools/compare_ir.py --write /tmp/ir-baseline    # before
    python tools/compare_ir.py --check /tmp/ir-baseline    # after: exit 1 on any diff

Cases: every testdata/dumps/*.hlo and benchmarks/run.py's modules (the file cases and the
small text cases), each after the default HLO pipeline (as `hloc run` / `hloc.compile`),
lowered in xla-cpu and ieee numerics, and in xla-cpu with profiling. A case records the
whole module's IR text, every part's text, the parts' SLP flags, the arena size and the
donation / profile-site tables (hloc.backend.jit.Lowered), or the error a module raises.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def modules() -> list[tuple[str, str]]:
    """(name, HLO text) of every case module, in a fixed order."""
    out = [(p.relative_to(ROOT).as_posix(), p.read_text())
           for p in sorted((ROOT / "testdata" / "dumps").glob("*.hlo"))]
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import run as bench
    for name, (text, _, _) in bench.CASES.items():
        out.append((f"run.py:{name}", text))
    for name, stem in bench.FILE_CASES.items():
        out.append((f"run.py:{name}", bench._file_case(stem)[0]))
    return out


def lowered_text(text: str, name: str, options) -> str:
    import hloc
    from hloc.backend import jit
    from hloc.cli_backend import prepare_for_cpu
    try:
        module = prepare_for_cpu(hloc.parse(text, name), None)
        low = jit.lower(module, options)
    except Exception as e:          # noqa: BLE001  (the error is part of what must not change)
        return f"ERROR {type(e).__name__}: {e}\n"
    meta = (f"arena={low.arena} slp={low.slp} donated={getattr(low, 'donated', None)} "
            f"sites={low.sites} merged={getattr(low, 'kernels_merged', None)}")
    return "\n;; PART\n".join([meta, low.ir_text, *low.parts])



def _cases():
    from hloc.backend.context import Options
    variants = {"xla-cpu": Options("xla-cpu"), "ieee": Options("ieee"),
                "xla-cpu+profile": Options("xla-cpu", profile=True)}
    return [(f"{m}#{v}", lambda m=m, t=t, o=o: lowered_text(t, m, o))
            for m, t in modules() for v, o in variants.items()]


def main(argv=None) -> int:
    from baseline import main as baseline_main
    return baseline_main(argv, __doc__.splitlines()[0], _cases, ".ll")


if __name__ == "__main__":
    sys.exit(main())
