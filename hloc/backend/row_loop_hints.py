"""LLVM loop hints of a row kernel's loops (hloc.backend.row_groups, given to
hloc.backend.loops.hint_loops): unrolling, interleaving, vectorising, and the loops told
free of loop-carried dependences (hloc.backend.access_groups)."""
from __future__ import annotations

from llvmlite import ir

from .access_groups import parallel_accesses


def hints(loop, distinct, cold: set) -> list:
    """A row kernel's loop's hints: row_hints, and parallel_accesses over `distinct`
    (None: not); `cold`: ids of the blocks of loops run only where a row is redone."""
    got = row_hints(loop, id(loop.header) in cold)
    par = parallel_accesses(loop, distinct) if distinct is not None else None
    return got if par is None else got + [par]


NO_UNROLL = "llvm.loop.unroll.disable"
# LLVM's vectorisation and interleave count kept; the loops the vectoriser makes of it
# (vector, scalar remainder, scalar copy for overlapping buffers) are not unrolled.
KEEP_INTERLEAVE = [("llvm.loop.vectorize.followup_all",
                    [("llvm.loop.isvectorized", 1), NO_UNROLL])]
SCALAR = [NO_UNROLL, ("llvm.loop.vectorize.width", 1), ("llvm.loop.interleave.count", 1)]
LONG_CHAIN = 8      # floating-point operations per element: a loop that computes, not streams


def row_hints(loop, cold: bool = False) -> list:
    """LLVM's hints for a loop of a row kernel: no partial unrolling. Every loop of a row
    runs a few thousand times at most and LLVM vectorises it, interleaved up to four
    times; unrolling on top, of the vector loop and of the scalar copy kept for when
    buffers overlap, copied each body several more times for LLVM to optimise and emit
    (softmax's kernel: 51 of LLVM's CPU ms, 39 without) for no measured run time.
    An innermost loop with a reassociated reduction (its partial sums, so its bits, are
    the vectoriser's: the same as the separate kernels') or a long chain of operations per
    element (softmax's exp, whose latency interleaving hides) keeps the vectoriser's
    interleave count. Any other loop only streams the row, or reduces it exactly
    (max, integer min/max): it is interleaved once (softmax: 39 -> 36 ms; run time
    unchanged with the row in cache, same bits). An outer loop (the rows) is never
    unrolled either. A `cold` loop (a row divide's exact loop, run only where a row is
    redone) is not vectorised, unless it sums (its bits are the vector loop's)."""
    if not loop.innermost:
        return [NO_UNROLL]
    fp = 0
    for i in loop.instructions():
        if "reassoc" in getattr(i, "flags", ()):
            return KEEP_INTERLEAVE
        fp += _is_fp(i)
    if cold:
        return SCALAR
    return KEEP_INTERLEAVE if fp >= LONG_CHAIN else [NO_UNROLL]


def _is_fp(inst) -> bool:
    t = inst.type
    t = t.element if isinstance(t, ir.VectorType) else t
    return isinstance(t, (ir.HalfType, ir.FloatType, ir.DoubleType)) \
        and not isinstance(inst, (ir.LoadInstr, ir.PhiInstr))
