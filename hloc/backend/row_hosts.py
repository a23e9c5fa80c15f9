"""Hosted rows in row groups (hloc.backend.row_groups): a member's row kept in a later
member's output row instead of on the stack.

Where the output is at least HOST_BYTES, an internal member read only element for element
by a later member of the same shape and layout that writes memory (softmax's e, read by
e / sum(e)) is stored into that member's output row (the "host"); the host then updates
its row in place. The output's lines are then first written, and so fetched, in the
compute-heavy loop (exp) rather than in the short last one, where the stores' misses
stalled it. The values stored and read are the same, so are the results.

HOST_BYTES was the size of the L3 (16 MiB, input and output outgrowing its 32 MiB) until
outputs in between were measured (ABBA, same bits; the hosted executable also prefetching
from 8 MiB on, row_ahead.PREFETCH): softmax 256x8192 (8 MiB) hosted takes 0.60x the time
on one thread, 0.70x on two; 384x8192 0.47x / 0.51x; 192x8192 0.86x / 0.90x; 128x8192
0.95x / 0.99x; 2048x1000 0.57x / 0.67x; 1024x1024 0.99x (`benchmarks/row_ab.py
row_hosts.HOST_BYTES=16777216,row_ahead.PREFETCH_BYTES=16777216 --softmax-rows ...`).
Smaller outputs gain 5-7 % on one thread at 8192 columns and nothing on two, but softmax
4096x100 (1.6 MiB, rows in scalar form) is 2.5 % slower: 4 MiB keeps those as they were.

A host whose row divide (hloc.backend.row_divide) must redo a row has overwritten the
hosted row with quotients: the row goes back to the hosted member's loop (a pass flag
set), computes its row again, and the host then takes its exact loop. Each loop is
emitted once.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import minor_to_major
from .types import I1, itemsize

HOST_BYTES = 4 << 20        # an output this large hosts (module docstring: measured)


def plan(members: list, internal: set) -> dict:
    """id(internal member) -> the later member whose output row holds its row."""
    hosts: dict = {}
    for k, m in enumerate(members):
        if id(m) in internal:
            host = next((h for h in members[k + 1:] if _can_host(h, m, members, internal, hosts)), None)
            if host is not None:
                hosts[id(m)] = host
    return hosts


def _can_host(h, m, members, internal, hosts) -> bool:
    """Member `h` (written to memory) can keep internal member `m`'s row in its own: same
    shape and layout, large, reads m only at the element it computes, hosts no other, and
    no member after h reads m (h overwrites it)."""
    if id(h) in internal or h in hosts.values() or not any(o is m for o in h.operands) \
            or not (h.shape.compatible(m.shape) and minor_to_major(h.shape) == minor_to_major(m.shape)) \
            or h.shape.size * itemsize(h.shape.dtype) < HOST_BYTES:
        return False
    after = members[members.index(h) + 1:]
    return not any(o is m for u in after for o in u.operands) and reads_at_index(h, m)


def reads_at_index(inst, m) -> bool:
    """Every read by `inst` of its operand `m` is at the index of the element computed:
    through elementwise ops on operands of the result's dimensions only."""
    from ..ops.base import ELEMENTWISE
    if inst.opcode != "fusion":
        return ELEMENTWISE in inst.opdef.traits and m.shape.same_dims(inst.shape)
    comp = inst.attrs["calls"]
    want = {k for k, o in enumerate(inst.operands) if o is m}
    stack, seen = [(comp.root, True)], set()
    while stack:
        i, same = stack.pop()
        if (id(i), same) in seen:
            continue
        seen.add((id(i), same))
        if i.opcode == "parameter":
            if i.parameter_number in want and not same:
                return False
            continue
        keep = same and ELEMENTWISE in i.opdef.traits
        stack.extend((o, keep and not o.shape.is_tuple and o.shape.same_dims(i.shape))
                     for o in i.operands)
    return comp.root.shape.same_dims(inst.shape)


def second_pass(kb, m):
    """Before hosted member `m`'s loop: a block the row can come back to (pass flag set)
    when its host's row divide must redo the row."""
    b = kb.b
    flag = kb.alloca_entry(I1, name=f"{m.name}.again")
    b.store(ir.Constant(I1, 0), flag)
    start = b.append_basic_block(f"{m.name}.pass")
    b.branch(start)
    b.position_at_end(start)
    return start, flag


def divide_after_second_pass(kb, row_loop, start, flag) -> None:
    """A host's loop with row divides (`row_loop(exact)` emits one, returning the row
    divide when its fast form was used): the fast loop on the first pass; where its row
    must be redone, back to `start`, then the exact loop."""
    b = kb.b
    fast_bb, exact_bb, join = (b.append_basic_block(n) for n in ("host.fast", "host.exact", "host.join"))
    b.cbranch(b.load(flag, typ=I1), exact_bb, fast_bb)
    b.position_at_end(fast_bb)
    rd = row_loop(False)
    if rd is None:
        b.branch(join)
    else:
        back = b.append_basic_block("host.redo")
        b.cbranch(rd.redo(kb), back, join)
        b.position_at_end(back)
        b.store(ir.Constant(I1, 1), flag)
        b.branch(start)
    b.position_at_end(exact_bb)
    if rd is not None:
        row_loop(True)
    b.branch(join)
    b.position_at_end(join)
