"""A row group's leading max/min reduction computed one row ahead (hloc.backend.row_groups).

Softmax's row group starts with the row's max, a loop that only streams the row in from
memory (a load and a vmaxps per vector), then computes exp over the row (arithmetic
bound, the row in cache by then) and divides. One row after the other, the core waits on
memory in the first loop and the memory system idles in the others. Here the max of row
r+1 is accumulated inside row r's exp loop (the first later member's over the same
positions), so the next row streams in while the exp's arithmetic runs; row r only takes
the max carried from the row before. The first row of a work group (no row before it
accumulated it) computes its max on its own first: in the vector form (kb.lanes,
hloc.backend.row_vector) in the fast loop (FIRST_FAST; on the exact loop, one
latency-bound chain of llvm.maximum through the row, each group took ~3.7 us more:
softmax 64x8192, 4 groups, 0.172 against 0.157 ms on one thread), in the scalar form on
the exact loop. The last row of a group, having no next row in it, takes its own row
again (in cache). At the start of each row, the row's value is taken from the fast
accumulators, or from the exact loop where the fast result may be wrong. In the divide's
loop instead (arithmetic ~3x lighter) the reads were not hidden: slower than no carrying
at all on a loaded machine (2.14 against 1.93 ms on one thread; the exp loop 1.70).

The accumulation is extremum.Extremum's, the reduce's own: exact in any order (nnan nsz
max beside a NaN-detecting sum, the exact loop where the fast result may be wrong), so the
max's bits are the reduce's in its own loop whatever the thread count or work groups. A
reassociated row sum in the same loop (softmax's sum(e)) may be vectorised with another
interleave count once the loop does more (xla-cpu numerics leave the order of its
additions to LLVM): softmax's exp loop keeps its 4 x 16 partial sums, and so its bits;
every version of the loop (a row redone with true divisions) carries the same work, so a
redone row adds up as the others. Only in xla-cpu numerics (in ieee the exp is a libm
call per element: nothing to overlap), for a first member that is a float max/min reduce
of a group input over all but its rows.

Where the group's input is large (PREFETCH_BYTES), the vector loop that carries the next
row also prefetches (llvm.prefetch, read, into L2: prefetcht1) the lines PREFETCH bytes
ahead of both streams that come from memory there: the next row's input and the output it
stores (e in its host's row, hloc.backend.row_hosts). With e in the stack row instead the
loop has one stream from memory, which the hardware prefetchers keep up with (a sum's input
prefetched so was slower), so nothing is prefetched there. The hardware prefetchers alone
left the hosted loop waiting on memory: softmax 512x8192 took 1.7-1.8 ms per call on one
thread against 1.2-1.3 ms for the same rows in cache; with the prefetches 1.25-1.35.
Measured here (Zen 4, row_ab.py, ABBA), not kept: either stream alone (slower), prefetcht0
or prefetchw (slower: the line into L1 too early; a read prefetch brings an unshared line
exclusive, so the store needs no second request), row r+2 at the same column instead of a
distance, and prefetches in smaller groups (64x8192: 1-3 % slower; 128x8192, 4 MiB: 1-2 %
faster on one thread, 1-5 % slower on two; 192x8192, 6 MiB: 7-9 % faster on one, 3-4 % on
two; `benchmarks/row_ab.py row_ahead.PREFETCH_BYTES=... --softmax-rows 128,192`).
"""
from __future__ import annotations

from llvmlite import ir

from . import row_vector
from .loops import Index, i64, linear_of, minor_to_major
from .extremum import Extremum, exact_extremum, extremum_reduce
from .types import I8, I32, itemsize, storage_type

ENABLED = True          # off: the first member in its own loop (for A/B measurements)
FIRST_FAST = True       # off: a work group's first row on the exact loop (A/B)
PREFETCH = 8192         # bytes ahead prefetched in the loop carrying the next row (None: off)
PREFETCH_BYTES = 6 << 20    # ... where the group's input is at least this large


def plan(group, options, absorbed=frozenset()) -> int | None:
    """The member in whose row loop `group`'s first member is computed a row ahead, or
    None: the first later member over the same positions in the same layout (not one of
    `absorbed`, the row sums row_groups adds up in the previous member's loop)."""
    ms = group.members
    if not ENABLED or not options.xla or len(ms) < 2 or extremum_reduce(ms[0]) is None:
        return None
    m0 = ms[0]
    x = m0.operands[0].shape
    row = minor_to_major(x)[-1]
    if not (x.rank >= 2 and m0.shape.size == group.rows and x.dims[row] == group.rows
            and list(m0.attrs["dimensions"]) == sorted(d for d in range(x.rank) if d != row)):
        return None
    for k in range(1, len(ms)):
        m = ms[k]
        if k not in absorbed and not m.shape.is_tuple and m.shape.dtype.is_array and m.shape.dims == x.dims \
                and minor_to_major(m.shape) == minor_to_major(x):
            return k
    return None


class Ahead:
    """The carried value and next row's accumulators of reduce `m0` in kernel builder `kb`
    (`x_read`, `init_read`: generators of its two operands)."""

    def __init__(self, kb, m0, x_read, init_read, x_ptr=None):
        self.kb, self.m0 = kb, m0
        self.x_read, self.init_read = x_read, init_read
        self.greater, _ = extremum_reduce(m0)
        self.x_shape = m0.operands[0].shape
        self.row_dim = minor_to_major(self.x_shape)[-1]
        self.t = t = storage_type(m0.shape.dtype)
        self.slot = kb.alloca_entry(t, name=f"{m0.name}.ahead")
        self.ext = Extremum(kb, t, self.greater, kb.lanes,   # before the row loop: no element yet
                            self.x_shape.dims[minor_to_major(self.x_shape)[0]])
        self.next_row = None
        big = self.x_shape.size * itemsize(self.x_shape.dtype) >= PREFETCH_BYTES
        self.x_ptr = x_ptr if PREFETCH and kb.lanes is not None and big else None

    def begin_row(self, r, lo) -> None:
        """At the start of row r of a work group starting at lo: the row's reduction from
        what the row before accumulated; for the first row (which no row before
        accumulated) from its own fast loop in the vector form (FIRST_FAST, ext.lanes),
        from the exact loop in the scalar form; from the exact loop wherever the fast
        result may be wrong."""
        kb = self.kb
        b = kb.b
        init = self.init_read(Index(b, self.m0.operands[1].shape, multi=[]))
        multi = [i64(0)] * self.x_shape.rank
        multi[self.row_dim] = r
        ops = [self.x_read, self.init_read]
        first = b.icmp_unsigned("==", r, lo)
        exact = lambda: exact_extremum(kb, self.m0, ops, init, multi, self.greater)  # noqa: E731
        if FIRST_FAST and self.ext.lanes is not None:
            with b.if_then(first):           # the first row: the fast loop on its own
                self.ext.reset()
                row_vector.along_minor(kb, self.x_shape, multi, minor_to_major(self.x_shape)[0],
                                       self.x_read, self.ext, row_vector.SUM_IC)
                self.ext.settle()
            v = self.ext.value(init, exact, settled=True)
        else:
            v = self.ext.value(init, exact, first, settled=True)
        b.store(v, self.slot)

    def current(self, index=None):
        """The carried value: this row's reduction (a generator for m0 at any index)."""
        return self.kb.b.load(self.slot, typ=self.t)

    def start(self, r, hi) -> None:
        """Before the loop that accumulates the next row (row r's, in a group ending at hi;
        the last row takes itself)."""
        b = self.kb.b
        self.ext.reset()
        nxt = b.add(r, i64(1), flags=("nsw", "nuw"))
        self.next_row = b.select(b.icmp_unsigned("<", nxt, hi), nxt, r, name="row.ahead")

    def end(self) -> None:
        """After that loop: the next row's accumulators settled (Extremum.settle)."""
        self.ext.settle()

    def add(self, index, stored=None) -> None:
        """In that loop, at `index` (its member's position; a vector of them in a vector
        row group): the next row's element(s). `stored`: where the loop's vector at index
        was stored in the member's output (None: in its stack row), prefetched ahead with
        the next row's input in the main vector loop of a large group (module docstring)."""
        multi = list(index.multi)
        multi[self.row_dim] = self.next_row
        if self.x_ptr is not None and stored is not None and index.lanes == self.kb.lanes * row_vector.SUM_IC:
            x_at = self.kb.b.gep(self.x_ptr, [linear_of(self.kb.b, self.x_shape, multi)],
                                 source_etype=self.t, inbounds=True)
            for p in (x_at, stored):
                _prefetch_ahead(self.kb, p, index.lanes * itemsize(self.x_shape.dtype))
        self.ext.add(self.x_read(Index(self.kb.b, self.x_shape, multi=multi, lanes=index.lanes)))


def _prefetch_ahead(kb, p, size: int) -> None:
    """llvm.prefetch (read, locality 2: prefetcht1, into L2) of each 64-byte line of the
    `size` bytes PREFETCH bytes after `p`. The addresses may lie past the buffer's end (at
    the last rows): a prefetch never faults, and no gep here is `inbounds`."""
    b = kb.b
    fn = kb.mcx.intrinsic("llvm.prefetch.p0", ir.VoidType(), [p.type, I32, I32, I32])
    for k in range(0, size, 64):
        at = b.gep(p, [i64(PREFETCH + k)], source_etype=I8)
        b.call(fn, [at, ir.Constant(I32, 0), ir.Constant(I32, 2), ir.Constant(I32, 1)])
