"""Loop emitters and array indexing (numba cgutils' `for_range`/`loop_nest`, XLA's IrArray).

`for_range(b, start, stop)` yields the induction variable of a counted i64 loop;
`loop_nest(b, bounds)` nests them, outermost first. An `Index` is a position in an array
shape: its logical multi-index and/or its linear offset in the buffer's physical layout
(each computed from the other on demand), so same-shape elementwise reads use the loop's
linear counter directly (vectorisable) and layout-changing reads use the multi-index.
`hint_loops(fn, ...)` gives every loop of a function LLVM loop metadata (unrolling,
interleaving). `Acc` holds a loop's carried values; `enter_loops` opens a reduction's
loops.
"""
from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir
from llvmlite.ir.values import MDValue

from .types import Cplx, I32, I64

ONE = ir.Constant(I64, 1)
ZERO = ir.Constant(I64, 0)


# Integer constants are shared values (llvmlite never changes a Constant), so each number
# is built and its text formatted once rather than per use: ~10k uses in a large module.
_CACHED = 1 << 14


def _constants(ty: ir.IntType, table: dict):
    """The constant maker of `ty`: v -> ir.Constant(ty, v), the first _CACHED numbers kept."""
    def const(v: int) -> ir.Constant:
        v = int(v)
        c = table.get(v)
        if c is None:
            c = ir.Constant(ty, v)
            if len(table) < _CACHED:
                table[v] = c
        return c
    return const


i64 = _constants(I64, {0: ZERO, 1: ONE})
i32 = _constants(I32, {})


def clamp_i64(b: ir.IRBuilder, v, lo: int, hi: int):
    """`v` (i64) clamped into [lo, hi] with selects (no branches, nothing undefined)."""
    v = b.select(b.icmp_signed("<", v, i64(lo)), i64(lo), v)
    return b.select(b.icmp_signed(">", v, i64(hi)), i64(hi), v)


@contextmanager
def for_range(b: ir.IRBuilder, start, stop, name: str = "i", step=None):
    """`for (i = start; i < stop; i += step) { body }` (step 1 by default, else a positive
    i64 value or int); yields i (i64)."""
    start = i64(start) if isinstance(start, int) else start
    stop = i64(stop) if isinstance(stop, int) else stop
    pre = b.block
    head = b.append_basic_block(f"{name}.head")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(head)
    b.position_at_end(head)
    iv = b.phi(I64, name=name)
    iv.add_incoming(start, pre)
    b.cbranch(b.icmp_signed("<", iv, stop), body, end)
    b.position_at_end(body)
    yield iv
    step = ONE if step is None else (i64(step) if isinstance(step, int) else step)
    nxt = b.add(iv, step, name=f"{name}.next", flags=("nsw",))
    iv.add_incoming(nxt, b.block)
    b.branch(head)
    b.position_at_end(end)


class at_entry:
    """`with at_entry(b, fn):` `b` at the start of `fn`'s entry block (allocas, hoisted
    pointers), then back at the end of the block it was in: llvmlite's
    `goto_entry_block()` + `position_before(first)` without goto_block's search of the
    entry block for its terminator (O(block) per call, a fifth of IR generation where a
    computation's entry block is thousands long). A class, not a generator context
    manager: entered for every pointer a computation hoists."""

    __slots__ = ("b", "fn", "old")

    def __init__(self, b: ir.IRBuilder, fn: ir.Function):
        self.b, self.fn = b, fn

    def __enter__(self) -> None:
        self.old = self.b.block
        self.b.position_at_start(self.fn.entry_basic_block)

    def __exit__(self, *exc) -> None:
        self.b.position_at_end(self.old)


class _LoopID(MDValue):
    """A loop's own `!llvm.loop` node, `distinct !{!self, hints...}` (LLVM reads a loop's
    hints only from a node whose first operand is itself). llvmlite's nodes are uniqued
    by their operands and compare by them, so each loop gets a node of this class, which
    compares and hashes by identity."""

    def descr(self, buf):
        ops = ", ".join([self.get_reference()] + [op.get_reference() for op in self.operands])
        buf += (f"distinct !{{{ops}}}", "\n")

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


class Loop:
    """A loop of an emitted function: its header block, its blocks (inner loops'
    included) and whether it holds no other loop."""

    __slots__ = ("header", "blocks", "innermost")

    def __init__(self, header, blocks, innermost: bool):
        self.header, self.blocks, self.innermost = header, blocks, innermost

    def instructions(self):
        for blk in self.blocks:
            yield from blk.instructions


def hint_loops(fn: ir.Function, hints_of) -> int:
    """Give every loop of `fn` closed by an unconditional branch (for_range's, and the
    emitters' loops built like it) its own `llvm.loop` node with the hints
    `hints_of(Loop)` returns: a list of LLVM loop properties, each a name
    (`"llvm.loop.unroll.disable"`), a (name, i32) pair, or a (name, [properties]) pair for
    a followup loop's node (`"llvm.loop.vectorize.followup_all"`) or a (name, metadata
    node) pair (hloc.backend.access_groups). Returns how many loops
    were marked."""
    mod = fn.module
    n = 0
    loops = _loops(fn)
    headers = {id(br.operands[0]) for br, _ in loops}
    for br, blocks in loops:
        if "llvm.loop" in br.metadata:
            continue
        header = br.operands[0]
        innermost = not any(id(b) in headers for b in blocks if b is not header)
        hints = [_property(mod, h) for h in hints_of(Loop(header, blocks, innermost))]
        if hints:
            br.set_metadata("llvm.loop", _LoopID(mod, hints, name=str(len(mod.metadata))))
            n += 1
    return n


def has_loop(fn: ir.Function) -> bool:
    """Whether `fn`'s code has a loop (a back edge)."""
    return bool(_back_edges(fn))


def _property(mod, h):
    if isinstance(h, str):
        return mod.add_metadata([h])
    name, v = h
    if isinstance(v, MDValue):            # a node of its own (an access group)
        return mod.add_metadata([name, v])
    if isinstance(v, int):
        return mod.add_metadata([name, ir.Constant(I32, v)])
    return mod.add_metadata([name] + [_property(mod, x) for x in v])


def _loops(fn: ir.Function) -> list:
    """(latch terminator, the loop's blocks) for each back edge of `fn`."""
    out = []
    preds: dict = {}
    for blk in fn.blocks:
        for s in _successors(blk):
            preds.setdefault(id(s), []).append(blk)
    for br in _back_edges(fn):
        if type(br) is not ir.Branch:
            continue
        header, latch = br.operands[0], br.parent
        body, stack = {id(header): header, id(latch): latch}, [latch]
        while stack:                    # the natural loop: what reaches the latch
            for p in preds.get(id(stack.pop()), ()):   # without passing the header
                if id(p) not in body:
                    body[id(p)] = p
                    stack.append(p)
        out.append((br, [b for b in fn.blocks if id(b) in body]))
    return out


def _back_edges(fn: ir.Function) -> list:
    """The terminators of `fn` that branch to a block on the depth-first path from the
    entry to them: the latches of its loops (emitted control flow is reducible)."""
    out, state = [], {}                 # id(block) -> 1 on the path, 2 done
    if not fn.blocks:
        return out
    entry = fn.blocks[0]
    stack = [(entry, iter(_successors(entry)))]
    state[id(entry)] = 1
    while stack:
        blk, succ = stack[-1]
        nxt = next(succ, None)
        if nxt is None:
            state[id(blk)] = 2
            stack.pop()
        elif state.get(id(nxt)) == 1:
            out.append(blk.terminator)
        elif id(nxt) not in state:
            state[id(nxt)] = 1
            stack.append((nxt, iter(_successors(nxt))))
    return out


def _successors(blk) -> list:
    term = blk.terminator
    if term is None:
        return []
    succ = [op for op in term.operands if isinstance(op, ir.Block)]
    if isinstance(term, ir.SwitchInstr):
        succ += [blk for _, blk in term.cases] + [term.default]
    return succ


@contextmanager
def loop_nest(b: ir.IRBuilder, bounds, names=None):
    """Nested loops over [0, n) for each bound (outermost first); yields the ivs."""
    ivs = []
    stack = []
    try:
        for k, n in enumerate(bounds):
            cm = for_range(b, 0, n, name=(names[k] if names else f"i{k}"))
            ivs.append(cm.__enter__())
            stack.append(cm)
        yield ivs
    finally:
        for cm in reversed(stack):
            cm.__exit__(None, None, None)


def loop_names(prefix: str, n: int) -> list[str]:
    """Names for loop_nest's n loops: prefix0, prefix1, ..."""
    return [f"{prefix}{d}" for d in range(n)]


def minor_to_major(shape) -> tuple[int, ...]:
    lay = shape.layout
    if lay is None or len(lay.minor_to_major) != shape.rank:
        return tuple(range(shape.rank - 1, -1, -1))
    return lay.minor_to_major


def strides(shape) -> list[int]:
    """Element stride of each logical dimension in the physical layout."""
    st = [0] * shape.rank
    acc = 1
    for d in minor_to_major(shape):
        st[d] = acc
        acc *= shape.dims[d]
    return st


def same_layout(a, b) -> bool:
    return a.dims == b.dims and minor_to_major(a) == minor_to_major(b)


def is_default_layout(shape) -> bool:
    return minor_to_major(shape) == tuple(range(shape.rank - 1, -1, -1))


class Index:
    """A position in `shape`: logical multi-index and/or physical linear offset. With
    `lanes` (hloc.backend.row_vector), the `lanes` positions from it along the physical
    minor dimension: generators then return <lanes x T> values."""

    lanes = None

    def __init__(self, b: ir.IRBuilder, shape, multi=None, linear=None, lanes=None):
        self.b, self.shape = b, shape
        self._multi, self._linear = multi, linear
        if lanes is not None:
            self.lanes = lanes

    @property
    def multi(self) -> list:
        if self._multi is None:
            b, rem = self.b, self._linear
            out = [None] * self.shape.rank
            for d in minor_to_major(self.shape):
                n = self.shape.dims[d]
                out[d] = b.urem(rem, i64(n)) if n != 1 else ZERO
                rem = b.udiv(rem, i64(n)) if n != 1 else rem
            self._multi = out
        return self._multi

    @property
    def linear(self):
        if self._linear is None:
            self._linear = linear_of(self.b, self.shape, self.multi)
        return self._linear

    def offset_in(self, shape):
        """The linear offset of this position in an array of `shape` (same dims)."""
        if self._linear is not None and same_layout(shape, self.shape):
            return self._linear
        return linear_of(self.b, shape, self.multi)


def linear_of(b, shape, multi):
    off = None
    for d, s in enumerate(strides(shape)):
        if shape.dims[d] == 1:
            continue
        term = multi[d] if s == 1 else b.mul(multi[d], i64(s), flags=("nsw", "nuw"))
        off = term if off is None else b.add(off, term, flags=("nsw", "nuw"))
    return ZERO if off is None else off


class Acc:
    """Loop-carried accumulators (allocas, promoted to registers by mem2reg)."""

    def __init__(self, kb, values):
        self.kb = kb
        self.slots = []
        for v in values:
            if isinstance(v, Cplx):
                self.slots.append((self._slot(v.re), self._slot(v.im)))
            else:
                self.slots.append(self._slot(v))
        self.set(values)

    def _slot(self, v):
        return (self.kb.alloca_entry(v.type), v.type)

    def set(self, values):
        b = self.kb.b
        for s, v in zip(self.slots, values):
            if isinstance(v, Cplx):
                b.store(v.re, s[0][0])
                b.store(v.im, s[1][0])
            else:
                b.store(v, s[0])

    def get(self):
        b = self.kb.b
        out = []
        for s in self.slots:
            if isinstance(s[0], tuple):
                out.append(Cplx(b.load(s[0][0], typ=s[0][1]), b.load(s[1][0], typ=s[1][1])))
            else:
                out.append(b.load(s[0], typ=s[1]))
        return out


def enter_loops(kb, shape0, red, split, ivs: dict, stack: list) -> None:
    """Open the loops over the reduced dimensions (major to minor; the first over chunk
    wg of nwg when split)."""
    b = kb.b
    for d in red:
        lo, hi = 0, shape0.dims[d]
        if split is not None and d == red[0]:
            wg, nwg = split
            lo = b.udiv(b.mul(i64(hi), wg), nwg, name="chunk.lo")
            hi = b.udiv(b.mul(i64(hi), b.add(wg, i64(1))), nwg, name="chunk.hi")
        cm = for_range(b, lo, hi, name=f"r{d}")
        ivs[d] = cm.__enter__()
        stack.append(cm)
