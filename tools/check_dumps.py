#!/usr/bin/env python3
"""Replay testdata/dumps through XLA itself and compare with the recorded values.

DEV-ONLY (needs ``pip install jax==0.10.2 jaxlib==0.10.2``).  For every
``<program>.npz`` in the dump folder this runs, in a fresh subprocess (a
malformed module can abort the process), the recipe of
shared/reference/xla-hlo-text.md §0::

    hlo_module_from_text(<program>.before_optimizations.hlo)
      -> hlo_to_stablehlo -> client.compile_and_load -> execute_sharded(in0, in1, ...)

and compares the results with ``out0, out1, ...``.  Integers / bools must be
equal; floating point results are reported ``exact`` when bit-identical and
``close`` when within rtol=1e-5/atol=1e-6 (NaN == NaN, same-signed infinities).
Every ``.hlo`` file (also the text-only ones and the after_optimizations
dumps) is also parsed with XLA's parser.  One subprocess per program.

Usage::

    python tools/check_dumps.py [--dir testdata/dumps] [--after] [NAME ...]

``--after`` additionally replays the ``after_optimizations`` dumps (informational).
Exit status is 1 if any program mismatches or fails.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
NATIVE = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
          "uint64", "float16", "float32", "float64", "complex64", "complex128"}


def load_npz(path):
    import ml_dtypes
    d = np.load(path)
    dt = json.loads(str(d["dtypes"]))
    return {k: (d[k] if dt[k] in NATIVE else d[k].view(getattr(ml_dtypes, dt[k])))
            for k in d.files if k != "dtypes"}


def run_hlo(text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    import jax
    from jax._src.lib import lapack
    # The lapack_*_ffi custom-call kernels find LAPACK (scipy's) only after this;
    # JAX normally calls it lazily when it lowers a linalg op (else: segfault).
    lapack._lapack.initialize()
    jax.config.update("jax_enable_x64", True)  # so device_put keeps f64/s64/c128 inputs
    import jaxlib._hlo as h
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib import xla_client as xc
    from jax._src.lib.mlir import ir
    m = h.hlo_module_from_text(text)
    mlir_bc = xc._xla.mlir.hlo_to_stablehlo(m.as_serialized_hlo_module_proto())
    with jmlir.make_ir_context():
        mod = ir.Module.parse(mlir_bc)
        code = jmlir.module_to_bytecode(mod)
    client = jax.devices("cpu")[0].client
    exe = client.compile_and_load(code, xc.DeviceList(tuple(jax.devices("cpu"))), xc.CompileOptions())
    out = exe.execute_sharded([jax.device_put(a) for a in inputs])
    return [np.asarray(a[0]) for a in out.disassemble_into_single_device_arrays()]


def _bits(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        a = np.stack([a.real, a.imag], axis=-1)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else a


def compare(got: np.ndarray, want: np.ndarray) -> tuple[str, str]:
    """-> (status, detail) with status in exact/close/mismatch."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return "mismatch", f"got {got.dtype}{list(got.shape)} want {want.dtype}{list(want.shape)}"
    if got.size == 0:
        return "exact", ""
    if np.array_equal(_bits(got), _bits(want)):
        return "exact", ""
    if got.dtype.kind in "biu":
        n = int(np.sum(got != want))
        return "mismatch", f"{n} of {got.size} elements differ"
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    w = want.astype(np.complex128 if want.dtype.kind == "c" else np.float64)
    if np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True):
        return "close", f"max abs diff {np.nanmax(np.abs(g - w)) if np.isfinite(g - w).any() else 0:.3g}"
    bad = ~np.isclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
    return "mismatch", f"{int(bad.sum())} of {got.size} elements differ, e.g. got {g[bad][:3]} want {w[bad][:3]}"


def check_one(hlo_path: str, npz_path: str) -> dict:
    d = load_npz(npz_path)
    ins = [d[f"in{i}"] for i in range(sum(k.startswith("in") for k in d))]
    outs = [d[f"out{i}"] for i in range(sum(k.startswith("out") for k in d))]
    got = run_hlo(Path(hlo_path).read_text(), ins)
    if len(got) != len(outs):
        return {"status": "mismatch", "detail": f"{len(got)} results, npz has {len(outs)} outputs"}
    worst, details = "exact", []
    for i, (g, w) in enumerate(zip(got, outs)):
        st, det = compare(g, w)
        if st != "exact":
            details.append(f"out{i}: {st} {det}")
        if st == "mismatch" or (st == "close" and worst == "exact"):
            worst = st
    return {"status": worst, "detail": "; ".join(details)}


def check_prog(d: Path, prog: str, after: bool) -> dict:
    """Everything for one program, inside one (disposable) process."""
    import jaxlib._hlo as h
    res: dict = {}
    for stage in ("before_optimizations", "after_optimizations"):
        try:
            h.hlo_module_from_text((d / f"{prog}.{stage}.hlo").read_text())
            res[f"parse_{stage}"] = "ok"
        except Exception as e:  # noqa: BLE001
            res[f"parse_{stage}"] = f"{type(e).__name__}: {e}"[:500]
    npz = d / f"{prog}.npz"
    stages = ["before_optimizations"] + (["after_optimizations"] if after else [])
    for stage in stages:
        if not npz.exists():
            res[f"run_{stage}"] = {"status": "text-only", "detail": ""}
            continue
        print("RESULT " + json.dumps(res), flush=True)  # partial result, in case XLA aborts
        try:
            res[f"run_{stage}"] = check_one(str(d / f"{prog}.{stage}.hlo"), str(npz))
        except Exception as e:  # noqa: BLE001
            res[f"run_{stage}"] = {"status": "error", "detail": f"{type(e).__name__}: {e}"[:1000]}
    return res


def _sub(args: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "TF_XLA_FLAGS")}
    env["JAX_PLATFORMS"] = "cpu"
    p = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
            if p.returncode != 0:  # crashed after a partial result
                crash = {"status": "error", "detail": f"rc={p.returncode} {p.stderr.strip()[-300:]}"}
                for stage in ("before_optimizations", "after_optimizations"):
                    if f"run_{stage}" not in res and ("--after" in args or stage == "before_optimizations"):
                        res[f"run_{stage}"] = crash
                        break
            return res
    return {"error": f"rc={p.returncode} {p.stderr.strip()[-500:]}"}


def main(argv=None):
    ap = argparse.ArgumentParser(description="replay testdata/dumps through XLA")
    ap.add_argument("--dir", type=Path, default=REPO / "testdata" / "dumps")
    ap.add_argument("--after", action="store_true", help="also replay after_optimizations dumps")
    ap.add_argument("--prog", help=argparse.SUPPRESS)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args(argv)
    if a.prog:
        print("RESULT " + json.dumps(check_prog(a.dir, a.prog, a.after)), flush=True)
        return 0
    progs = sorted({p.name.split(".")[0] for p in a.dir.glob("*.hlo")})
    if a.names:
        progs = [p for p in progs if p in a.names]
    counts: dict[str, int] = {}
    failed = []
    for prog in progs:
        r = _sub(["--dir", str(a.dir), "--prog", prog] + (["--after"] if a.after else []))
        if "error" in r:
            print(f"{prog:34s} ERROR {r['error']}", flush=True)
            failed.append(prog)
            continue
        parse = {k[6:]: v for k, v in r.items() if k.startswith("parse_")}
        parse_ok = all(v == "ok" for v in parse.values())
        st = r.get("run_before_optimizations", {"status": "error", "detail": "missing"})
        shown = st["status"].upper() if st["status"] in ("exact", "close") else st["status"]
        line = f"{prog:34s} parse={'ok' if parse_ok else parse}  run(before)={shown}"
        if a.after and "run_after_optimizations" in r:
            st2 = r["run_after_optimizations"]
            line += f"  run(after)={st2['status']}"
            if st2["status"] not in ("exact", "close", "text-only"):
                line += f" [{st2['detail'][:160]}]"
        if st["detail"]:
            line += f"  ({st['detail'][:300]})"
        print(line, flush=True)
        counts[st["status"]] = counts.get(st["status"], 0) + 1
        if not parse_ok or st["status"] not in ("exact", "close", "text-only"):
            failed.append(prog)
    print(f"{len(progs)} programs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    if failed:
        print("FAILED: " + " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
