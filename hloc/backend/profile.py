"""Per-kernel profile of compiled code (`hloc run --profile`, like XLA's --xla_hlo_profile).

With `Options(profile=True)` every kernel call, BLAS call and memcpy site the
computation functions emit is bracketed by two `clock_gettime(CLOCK_MONOTONIC)` reads
and adds its elapsed nanoseconds and one call to its row of the counter array the
module's `hloc_profile` global points to (`[sites x 2] i64`, owned by the Executable;
written only by the calling thread: a kernel split over threads is timed as a whole,
joins included). Each site remembers
its HLO instruction, the bytes it must read and write and its multiply-adds, so the
report gives achieved bandwidth and FLOP rate. Profiled code is other code (an option
in the cache key): never a cost for unprofiled runs.
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager
from dataclasses import dataclass

from llvmlite import ir

from . import runtime
from .loops import at_entry
from .types import I32, I64, PTR

GLOBAL = "hloc_profile"
CLOCK_MONOTONIC = 1


@dataclass
class Site:
    name: str           # the HLO instruction
    opcode: str         # "fusion(kind)", an opcode, or "blas" / "copy"
    computation: str
    bytes: int          # bytes it reads and writes (parallel.touched_bytes: a dynamic
                        # slice of an operand as the slice, an in-place DUS as its update)
    flops: int          # 2 x multiply-adds of dots and convolutions inside, else 0


def site_of(inst, computation: str, kind: str | None = None) -> Site:
    from .parallel import _inner_work, touched_bytes
    op = inst.opcode
    if op == "fusion":
        op = f"fusion:{inst.attrs.get('kind', 'kLoop')}"
    moved = touched_bytes(inst) - _inner_work(inst)
    flops = 0
    if inst.opcode in ("fusion", "dot", "convolution"):
        flops = _inner_work(inst) // 2         # _inner_work counts 4 per multiply-add
    return Site(inst.name, kind or op, computation, moved, flops)


class Profiler:
    """Sites of one module being emitted, and the timer calls around them."""

    def __init__(self, mcx):
        self.mcx = mcx
        self.sites: list[Site] = []
        self._counters = None

    def _now(self, b: ir.IRBuilder, slot) -> ir.Value:
        runtime.require("clock_gettime")
        fn = self.mcx.intrinsic("clock_gettime", I32, [I32, PTR])
        b.call(fn, [ir.Constant(I32, CLOCK_MONOTONIC), slot])
        ts_t = ir.ArrayType(I64, 2)
        sec = b.load(b.gep(slot, [ir.Constant(I64, 0), ir.Constant(I32, 0)], source_etype=ts_t), typ=I64)
        nsec = b.load(b.gep(slot, [ir.Constant(I64, 0), ir.Constant(I32, 1)], source_etype=ts_t), typ=I64)
        return b.add(b.mul(sec, ir.Constant(I64, 1_000_000_000)), nsec)

    @contextmanager
    def around(self, em, site: Site):
        """Time the code emitted inside the block with computation emitter `em`."""
        k = len(self.sites)
        self.sites.append(site)
        b = em.b
        with at_entry(b, em.fn):
            slot = b.alloca(ir.ArrayType(I64, 2), name="ts")
        t0 = self._now(b, slot)
        yield
        t1 = self._now(b, slot)
        counters = b.load(self._global(), typ=PTR)
        for j, v in ((0, b.sub(t1, t0)), (1, ir.Constant(I64, 1))):
            p = b.gep(counters, [ir.Constant(I64, 2 * k + j)], source_etype=I64)
            b.store(b.add(b.load(p, typ=I64), v), p)

    def _global(self):
        if self._counters is None:
            g = ir.GlobalVariable(self.mcx.module, PTR, name=self.mcx.fixed(GLOBAL))
            g.initializer = ir.Constant(PTR, None)
            self._counters = g
        return self._counters


class Counters:
    """The counter array of one loaded module (set into its `hloc_profile` global)."""

    def __init__(self, engine, sites: list[Site]):
        import numpy as np
        self.sites = sites
        self.array = np.zeros((max(len(sites), 1), 2), np.int64)
        addr = engine.get_global_value_address(GLOBAL)
        if addr:
            ctypes.c_void_p.from_address(addr).value = self.array.ctypes.data

    def reset(self) -> None:
        self.array[:] = 0

    def rows(self) -> list[dict]:
        """Per-site totals so far, slowest first."""
        rows = []
        for s, (ns, calls) in zip(self.sites, self.array.tolist()):
            if not calls:
                continue
            secs = ns * 1e-9
            rows.append({"name": s.name, "opcode": s.opcode, "computation": s.computation,
                         "calls": calls, "seconds": secs, "bytes": s.bytes * calls,
                         "flops": s.flops * calls,
                         "gb_per_s": (s.bytes * calls / secs / 1e9) if secs else None,
                         "gflop_per_s": (s.flops * calls / secs / 1e9) if secs and s.flops else None})
        rows.sort(key=lambda r: -r["seconds"])
        return rows


def table(rows: list[dict], total_s: float | None = None) -> str:
    """The report text: one line per site, slowest first, with its share of the total."""
    spent = sum(r["seconds"] for r in rows)
    total = total_s if total_s else spent
    lines = [f"{'time':>10} {'%':>6} {'calls':>7} {'bytes/call':>11} {'GB/s':>7} {'GFLOP/s':>8}  "
             f"instruction (opcode, computation)"]
    for r in rows:
        pct = 100.0 * r["seconds"] / total if total else 0.0
        gbs = f"{r['gb_per_s']:7.2f}" if r["gb_per_s"] is not None else f"{'-':>7}"
        gfl = f"{r['gflop_per_s']:8.2f}" if r["gflop_per_s"] is not None else f"{'-':>8}"
        lines.append(f"{_t(r['seconds']):>10} {pct:6.1f} {r['calls']:7d} "
                     f"{r['bytes'] // r['calls']:11d} {gbs} {gfl}  "
                     f"{r['name']} ({r['opcode']}, {r['computation']})")
    lines.append(f"{_t(spent):>10} {100.0 * spent / total if total else 0.0:6.1f}  in profiled sites"
                 + (f" of {_t(total)} total" if total_s else ""))
    return "\n".join(lines)


def _t(secs: float) -> str:
    return f"{secs * 1e3:.3f} ms" if secs >= 1e-3 else f"{secs * 1e6:.1f} us"
