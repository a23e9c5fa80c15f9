"""Loops whose memory accesses carry no dependence from one iteration to the next, told
to LLVM (`llvm.loop.parallel_accesses` over an `llvm.access.group`).

LLVM's loop vectoriser cannot see that the buffers a loop reads and the one it writes
never overlap: it checks their distance at run time and keeps a scalar copy of the loop
for when they do, which costs compile time (optimiser and code generation) for a loop
that never runs. A loop LLVM knows to be parallel (every access that remains in it is in
one of its access groups) gets neither.

`parallel_accesses(loop, buffers)` decides from the IR alone, given which pointer values
are distinct buffers: the caller vouches that no two of `buffers` overlap at run time
where one of them is written. Each access of the loop is traced back (through GEPs and
bitcasts) to its base: one of `buffers`, a stack array (an alloca of an array type:
distinct memory of its own), or a constant global (never written). The loop is marked
only where it stores, every base it stores to is stored once and at an address that
moves with the loop's induction variable (so no two iterations write the same element),
and no base it stores to is also read in it (a row read and written in place is left to
LLVM's own analysis, which needs no run-time check for it). Scalar slots (allocas of one
value: a reduction's accumulator) are left unmarked: the optimiser promotes them to
registers before it vectorises; one that stayed in memory would make LLVM treat the loop
as an ordinary one. A call that may touch memory, or a base that is none of the above,
leaves the loop unmarked.
"""
from __future__ import annotations

from llvmlite import ir
from llvmlite.ir import instructions as li
from llvmlite.ir.values import MDValue

GROUP = "llvm.access.group"
PARALLEL = "llvm.loop.parallel_accesses"
# intrinsics that read or write memory (the others a row loop calls are arithmetic)
_MEMORY_INTRINSICS = ("llvm.mem", "llvm.x86.sse.stmxcsr", "llvm.x86.sse.ldmxcsr",
                      "llvm.prefetch", "llvm.lifetime", "llvm.stack", "llvm.masked",
                      "llvm.experimental")


class _AccessGroup(MDValue):
    """`distinct !{}`: an access group (an empty node; llvmlite would unique it with
    every other empty node), compared and hashed by identity."""

    def __init__(self, mod: ir.Module):
        super().__init__(mod, (), name=str(len(mod.metadata)))

    def descr(self, buf):
        buf += ("distinct !{}", "\n")

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def _base(p):
    while True:
        if isinstance(p, li.GEPInstr):
            p = p.pointer
        elif isinstance(p, li.CastInstr) and p.opname == "bitcast":
            p = p.operands[0]
        else:
            return p


_SKIP = object()        # a scalar slot: left unmarked


def _kind(base, buffers: set):
    """A key naming the distinct memory `base` points to, _SKIP, or None (unknown)."""
    if id(base) in buffers:
        return id(base)
    if isinstance(base, li.AllocaInstr):
        return id(base) if isinstance(base.allocated_type, ir.ArrayType) else _SKIP
    if isinstance(base, ir.GlobalVariable) and base.global_constant:
        return id(base)
    return None


def _moves(v, header, inside: set, depth: int = 8) -> bool:
    """Whether value `v` depends on a phi of the loop's header (its induction variable)."""
    if not isinstance(v, ir.Instruction) or id(v.parent) not in inside or depth == 0:
        return False
    if isinstance(v, li.PhiInstr) and v.parent is header:
        return True
    return any(_moves(o, header, inside, depth - 1) for o in v.operands)


def parallel_accesses(loop, buffers: set):
    """The loop property (name, access group) for `loop` (a hloc.backend.loops.Loop)
    with its accesses put in the group, or None where the loop is left as it is.
    `buffers`: ids of the pointer values that are distinct buffers (see above)."""
    if not loop.innermost:
        return None
    inside = {id(b) for b in loop.blocks}
    loads, stores = [], {}
    for i in loop.instructions():
        if isinstance(i, li.CallInstr):
            callee = i.callee
            name = getattr(callee, "name", "")
            if not isinstance(callee, ir.Function) or not name.startswith("llvm.") \
                    or name.startswith(_MEMORY_INTRINSICS):
                return None
            continue
        if isinstance(i, li.LoadInstr):
            k = _kind(_base(i.operands[0]), buffers)
            if k is None:
                return None
            if k is not _SKIP:
                loads.append((k, i))
        elif isinstance(i, li.StoreInstr):
            base = _base(i.operands[1])
            k = _kind(base, buffers)
            if k is None or isinstance(base, ir.GlobalVariable):
                return None
            if k is not _SKIP:
                if k in stores or not _moves(i.operands[1], loop.header, inside):
                    return None
                stores[k] = i
        elif getattr(i, "opname", "") in ("va_arg", "atomicrmw", "cmpxchg", "fence"):
            return None
    if not stores or any(k in stores for k, _ in loads):
        return None
    group = _AccessGroup(loop.header.parent.module)
    for _, i in loads:
        i.set_metadata(GROUP, group)
    for i in stores.values():
        i.set_metadata(GROUP, group)
    return (PARALLEL, group)
