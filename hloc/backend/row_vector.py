"""Row groups in explicit vector code (hloc.backend.row_groups, xla-cpu numerics).

A row group's loops are otherwise left to LLVM's loop vectoriser, which is most of what a
row kernel costs to compile (O3 on softmax's row part: ~18 ms optimising the vector code
it makes, ~15 ms emitting it). Here every loop along a row is written as `<W x T>` code
(W: the host's vector width, 16 f32 with AVX-512), with a scalar tail, so the kernel
needs no vectoriser and compiles at the brief level (hloc.backend.jit.BRIEF_LEVEL).

A group takes this form only when every instruction of its members that makes or reads
a two-dimensional value can compute on vectors (the "lanes" facet of its emitter,
hloc.backend.registry.takes_vectors; the others are computed once per row), every
two-dimensional value in it has the group's row shape and layout (so a vector of
positions is contiguous along the row, and an operand read at the same positions is one
vector load), and every other value is per row (rank 1 over the rows) or a scalar; any
other group keeps its scalar loops for LLVM to vectorise. Softmax's group takes it with
all its row devices: the row-ahead max (hloc.backend.row_ahead, Extremum on vectors), the
sum carried beside the exp loop (RowSum), e kept in the output's row (row_hosts) and the
row divide (row_divide, on vectors, its loop's shape in row_loop; its exact redo loop
stays scalar).

Sums along the row (f32/f64 add reductions) keep the partial-sum structure LLVM's
vectoriser gives them, so the bits are the same: VF x IC accumulators (IC = SUM_IC, the
interleave count LLVM chooses for these loops; written as one <IC*VF x T> value, which
code generation splits into IC registers operation by operation, as the vectoriser
interleaves), the start value in lane 0 of the first and -0.0 elsewhere, after the loop
acc1+acc0, +acc2, +acc3, then llvm.vector.reduce.fadd (reassoc: code generation's
halving shuffle tree); then LLVM's epilogue loop over the positions left, in vectors of
the full width or a half, quarter ... of it (_epilogue_width; one accumulator starting
from the total in lane 0, reduced the same way); then the positions left after it, one
by one. The bits were checked equal to LLVM's (the scalar form's) on every row of 128 to
420 f32 with AVX-512 and of 64 to 300 with AVX2, and of 64 to 140 f64 with AVX-512 and 33
to 140 with AVX2 (softmax's and layernorm's sums, tools/compare_row_forms.py; shorter rows
keep their scalar loops, plan), and on rows of 8192, 1024, 1001 and 1000
(tests/test_backend_row_vector.py). This order is fixed by the shapes, never
by the thread count.
"""
from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from .loops import Index, for_range, i64, linear_of, minor_to_major
from .types import F32, I32, itemsize

SUM_IC = 4              # LLVM's interleave count for these sums (row_loop_hints.row_hints)
EPILOGUE_MIN_VF = 16    # LLVM's -epilogue-vectorization-minimum-VF: main loop's VF x IC
ENABLED = True          # off: every row group keeps its scalar loops (A/B measurements)
DIVIDE_WAYS = None      # registers an iteration of a loop with row divides (None: SUM_IC)
DIVIDE_BACKWARD = True  # a loop with row divides runs from the row's end (row_loop)


def width(features: str, triple: str, dt) -> int | None:
    """Lanes of one vector register of dt on the target with LLVM `features` (64 bytes
    with AVX-512, 32 with AVX2, as LLVM's vectoriser takes them), or None."""
    if dt.name not in ("f32", "f64") or not triple.startswith("x86_64"):
        return None
    feats = (features or "").split(",")
    size = 64 if "+avx512f" in feats else 32 if "+avx2" in feats else None
    return None if size is None else size // (4 if dt.name == "f32" else 8)


class _Splat(ir.Constant):
    """A vector constant with one value in every lane, printed as LLVM's `splat (T v)`:
    written out, a <16 x float> constant is 16 values to print and for LLVM to parse."""

    def __init__(self, vt, value):
        super().__init__(vt, value)
        self.value = value

    def _get_reference(self):
        el = self.type.element
        return f"splat ({el} {el.format_constant(self.value)})"


class _Zero(ir.Constant):
    """A vector of zeros, printed as `zeroinitializer` (llvmlite writes every lane)."""

    def _get_reference(self):
        return "zeroinitializer"


def const(t, v):
    """The constant `v` of type `t` (in every lane where `t` is a vector type)."""
    return _Splat(t, v) if isinstance(t, ir.VectorType) else ir.Constant(t, v)


def splat(b, v, lanes: int):
    """`v` (a scalar) in every lane."""
    vt = ir.VectorType(v.type, lanes)
    if isinstance(v, ir.Constant):
        return const(vt, v.constant)
    zero = _Zero(vt, None)
    one = b.insert_element(zero, v, ir.Constant(I32, 0))
    return b.shuffle_vector(one, zero, _Zero(ir.VectorType(I32, lanes), None))


def suffix(t) -> str:
    """LLVM's overloaded-intrinsic suffix of a float or integer type or a vector of one."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{suffix(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    return "f32" if t == F32 else "f64"


def plan(group, mcx, carries_sum: bool = False) -> int | None:
    """The lanes of `group`'s vector form, or None (its scalar loops). `carries_sum`: a
    member's loop also adds up the row (row_groups: softmax's sum(e) in e's loop). The
    interleave count LLVM gives such a loop follows its register pressure: SUM_IC for
    softmax's exp loop with AVX-512's 32 vector registers, 2 with AVX2's 16 (4 for a loop
    that only sums); so only 64-byte vectors take such groups, and their sums keep the
    scalar form's bits. Rows shorter than 2 * SUM_IC vectors keep their scalar loops:
    there LLVM's cost of the known trip count may choose narrower vectors (rows of 72 to
    79 f32 with AVX-512: 8 lanes) or a smaller interleave count (96 to 127: 2, so that
    the loop runs twice), and where its loop runs once the optimiser regroups the sums
    of the straight-line code (layernorm's on rows of 64 and 65); from 2 * SUM_IC vectors
    on, its loop is `lanes` wide and SUM_IC interleaved on every row length. Rows of up
    to 32 (f64 with AVX2: 2 * SUM_IC vectors are 32) keep them too: LLVM's full unroller
    makes a sum's loop of 32 iterations straight-line code before the vectoriser sees it
    (its size fits under the threshold), a sequential sum."""
    from .registry import takes_vectors
    if not ENABLED or not mcx.options.xla:
        return None
    rows = group.rows
    shape = None
    values = []
    for m in group.members:
        inside = [i for i in m.attrs["calls"].instructions] if m.opcode == "fusion" else [m]
        for i in inside:       # what makes or reads a row of positions computes on vectors
            wide = i.shape.rank == 2 or any(o.shape.rank == 2 for o in i.operands)
            if i.opcode != "parameter" and wide and not takes_vectors(i):
                return None
            values.append(i.shape)
            values.extend(o.shape for o in i.operands)
        values.extend(o.shape for o in m.operands)
    for s in values:
        if s.is_tuple or s.rank > 2:
            return None
        if s.rank == 2:
            if shape is None:
                shape = s
            if s.dims != shape.dims or minor_to_major(s) != minor_to_major(shape):
                return None
        elif s.rank == 1 and s.dims[0] != rows:
            return None
        if s.dtype != values[0].dtype:
            return None
    if shape is None or shape.dims[minor_to_major(shape)[-1]] != rows:
        return None
    lanes = width(getattr(mcx, "features", None), mcx.module.triple, shape.dtype)
    n = shape.dims[minor_to_major(shape)[0]]
    if lanes is None or n < 2 * lanes * SUM_IC or n <= 32 \
            or carries_sum and lanes * itemsize(shape.dtype) < 64:
        return None
    return lanes


def pairwise(parts: list, combine) -> list:
    """One level of a pairwise fold: `combine(a, b)` of neighbours, an odd one out carried
    to the next level."""
    return [combine(*parts[i:i + 2]) if i + 1 < len(parts) else parts[i]
            for i in range(0, len(parts), 2)]


def split(b, v, lanes: int) -> list:
    """Vector `v` in parts of `lanes` (the registers code generation splits it into)."""
    n = v.type.count
    if n == lanes:
        return [v]
    return [b.shuffle_vector(v, v, ir.Constant(ir.VectorType(I32, lanes), list(range(k, k + lanes))))
            for k in range(0, n, lanes)]


def join(b, parts: list):
    """The parts of `split`, as one vector again (pairwise: a tree of shuffles that code
    generation drops once it has split the value into registers)."""
    while len(parts) > 1:
        parts = pairwise(parts, lambda x, y: b.shuffle_vector(
            x, y, ir.Constant(ir.VectorType(I32, 2 * x.type.count), list(range(2 * x.type.count)))))
    return parts[0]


@contextmanager
def vector_loop(kb, start: int, stop: int, step: int, name: str, backward: bool = False):
    """A loop over [start, stop) by `step` (start < stop: the vector loops run at least
    once; `backward`: from the last position down), rotated (the body, then one test:
    the form LoopRotate leaves a loop in), with a block before it that stays open while
    the body is emitted (kb.hoist): values the same along the row (a per-row broadcast,
    and what it is computed from) are emitted there, once per row, by `per_row` (the
    lean pipeline, hloc.backend.jit.LEAN_ROWS and compile_threads.LEAN_PASSES, has no
    LICM)."""
    assert start < stop and (stop - start) % step == 0
    b = kb.b
    hoist = b.append_basic_block(f"{name}.row")
    body = b.append_basic_block(f"{name}.body")
    end = b.append_basic_block(f"{name}.end")
    b.branch(hoist)
    b.position_at_end(body)
    iv = b.phi(i64(0).type, name=name)
    outer, kb.hoist = kb.hoist, hoist
    try:
        yield iv
        if backward:
            first, nxt = stop - step, b.add(iv, i64(-step), name=f"{name}.next", flags=("nsw",))
            test = b.icmp_unsigned("!=", nxt, i64(start - step))
        else:
            first, nxt = start, b.add(iv, i64(step), name=f"{name}.next", flags=("nsw", "nuw"))
            test = b.icmp_signed("<", nxt, i64(stop))
        iv.add_incoming(nxt, b.block)
        b.cbranch(test, body, end)
        b.position_at_end(kb.hoist)
        b.branch(body)
        iv.add_incoming(i64(first), kb.hoist)
    finally:
        kb.hoist = outer
    b.position_at_end(end)


def per_row(kb, emit, lanes: int):
    """`emit()` (a scalar the same at every position of the row) splat to `lanes`, emitted
    before the current vector loop (vector_loop) where there is one."""
    return hoisted(kb, lambda: splat(kb.b, emit(), lanes))


def hoisted(kb, emit):
    """`emit()` (a value the same at every position of the row) emitted before the
    current vector loop (vector_loop) where there is one."""
    b = kb.b
    if kb.hoist is None:
        return emit()
    here = b.block
    b.position_at_end(kb.hoist)
    v = emit()
    kb.hoist = b.block                  # emit() may have added blocks (a loop)
    b.position_at_end(here)
    return v


class RowSum:
    """A sum along a row (f32/f64) carried through the loops that visit its positions:
    with `lanes`, in the vectoriser's order (module docstring: its SUM_IC accumulators of
    `lanes` are the parts of one <SUM_IC*lanes x T>; along_row moves the sum from them to
    the epilogue's and to the positions one by one), else one reassociating scalar that
    LLVM's vectoriser splits."""

    def __init__(self, kb, init, lanes=None):
        self.kb, self.init, self.t, self.lanes = kb, init, init.type, lanes
        self.slot = kb.alloca_entry(self.t, name="rowsum")     # with lanes: the tail's
        if lanes is not None:
            self.vt = ir.VectorType(self.t, lanes * SUM_IC)
            self.acc = kb.alloca_entry(self.vt, name="vsum")
        self.reset()

    def reset(self) -> None:
        b = self.kb.b
        if self.lanes is None:
            b.store(self.init, self.slot)
            return
        self.epi = None
        b.store(b.insert_element(const(self.vt, -0.0), self.init, ir.Constant(I32, 0)), self.acc)

    def add(self, v) -> None:
        """v (a scalar, or a vector of the main loop's or the epilogue's) added in."""
        b = self.kb.b
        if self.lanes is None:
            flags = ("contract", "reassoc")
        else:
            # The order is written out: no `reassoc` on the adds, which would let the
            # optimiser regroup them (it did where the main loop runs once).
            flags = ("contract",)
        slot = self.slot
        if isinstance(v.type, ir.VectorType):   # the epilogue's once it has started
            slot = self.acc if self.epi is None else self.epi
        b.store(b.fadd(b.load(slot, typ=v.type), v, flags=flags), slot)

    def after_main(self) -> None:
        b = self.kb.b
        parts = split(b, b.load(self.acc, typ=self.vt), self.lanes)
        acc = parts[0]
        for p in parts[1:]:     # no contract: an accumulator that is one product (a loop
            acc = b.fadd(p, acc)    # run once, unrolled) is not fused into this add
        b.store(_reduce(self.kb, acc, ("contract",)), self.slot)

    def start_epilogue(self, width: int) -> None:
        b = self.kb.b
        self.ht = ht = ir.VectorType(self.t, width)
        self.epi = self.kb.alloca_entry(ht, name="vsum.epilogue")
        b.store(b.insert_element(const(ht, -0.0), self.value(), ir.Constant(I32, 0)), self.epi)

    def after_epilogue(self) -> None:
        b = self.kb.b
        b.store(_reduce(self.kb, b.load(self.epi, typ=self.ht), ("contract",)), self.slot)

    def value(self):
        return self.kb.b.load(self.slot, typ=self.t)


def along_row(kb, n: int, body, total=None, ways: int = 1, name: str = "v",
              backward: bool = False) -> int:
    """`body(c, width)` at the positions c of a row of `n`: a loop over vectors of `ways`
    times kb.lanes (code generation splits them into `ways` registers, operation by
    operation, as the vectoriser interleaves), then with a reduction `total` (RowSum, or one
    with its after_main / start_epilogue / after_epilogue) LLVM's epilogue loop
    (_epilogue_width); returns the first position left (for the caller's loop one by
    one, where `total` then carries on)."""
    lanes = kb.lanes
    step = lanes * ways
    nv = n - n % step
    if nv:                      # a sum's row is never shorter than a step (plan)
        with vector_loop(kb, 0, nv, step, name, backward) as c:
            body(c, step)
    if total is None:
        ne = n - n % lanes      # no sum: the whole registers left, one an iteration
        if ne > nv:
            with vector_loop(kb, nv, ne, lanes, f"e{name[1:]}") as c:
                body(c, lanes)
        return ne
    total.after_main()
    half = _epilogue_width(lanes, ways, n - nv)
    if half is not None:
        total.start_epilogue(half)
        ne = n - (n - nv) % half
        with vector_loop(kb, nv, ne, half, f"e{name[1:]}") as c:
            body(c, half)
        total.after_epilogue()
        nv = ne
    return nv


def row_sum(kb, inst, gen, init, multi, minor: int):
    """Reduce `inst` (an add of one f32/f64 operand over its minor dimension, the other
    entries of `multi` fixed) from `init` in the vectoriser's order (module docstring);
    `gen(index)` generates the operand (at vector indexes too)."""
    total = RowSum(kb, init, kb.lanes)
    along_minor(kb, inst.operands[0].shape, multi, minor, gen, total, SUM_IC)
    return total.value()


def along_minor(kb, shape, multi, minor: int, gen, total, ways: int) -> None:
    """`total.add(gen(index))` at every position of `shape`'s minor dimension (the
    other entries of `multi` fixed): along_row's loops, then the positions left one by
    one."""
    b = kb.b
    n = shape.dims[minor]
    at0 = list(multi)
    at0[minor] = i64(0)
    base = linear_of(b, shape, at0)        # the row's start, once per row

    def at(c, width=None):
        m = list(multi)
        m[minor] = c
        index = Index(b, shape, multi=m, linear=b.add(base, c, flags=("nsw", "nuw")), lanes=width)
        total.add(gen(index))
    nv = along_row(kb, n, at, total, ways, f"v{minor}")
    if nv < n:
        with for_range(b, nv, n, name=f"t{minor}") as c:
            at(c)


def _epilogue_width(lanes: int, ways: int, rest: int) -> int | None:
    """The width of LLVM's epilogue vector loop over the `rest` positions the main loop
    leaves (None: none, they are added one by one): with a main loop of at least
    EPILOGUE_MIN_VF elements per iteration, of the widths from 2 up to the main loop's
    (powers of two, at most `rest`) the one with the fewest vector plus scalar
    iterations, the narrower on a tie (LLVM's cost of a known trip count, its candidates
    taken from the narrowest; as it chose on every row of 128 to 300 f32 with AVX-512,
    tests/test_backend_row_vector.py)."""
    if lanes * ways < EPILOGUE_MIN_VF:
        return None
    best, w = None, 2
    while w <= min(lanes, rest):
        if best is None or rest // w + rest % w < rest // best + rest % best:
            best = w
        w *= 2
    return best


def widths(lanes: int, n: int) -> tuple:
    """The vector widths along_row takes on a row of `n` with a reduction (SUM_IC
    registers an iteration): kb.lanes and the epilogue's, if any."""
    epi = _epilogue_width(lanes, SUM_IC, n % (lanes * SUM_IC))
    return (lanes,) if epi is None or epi == lanes else (lanes, epi)


def _reduce(kb, acc, flags):
    """llvm.vector.reduce.fadd of `acc` from -0.0, reassociating: code generation's
    halving tree (without reassoc the reduction would be sequential)."""
    vt = acc.type
    red = kb.mcx.intrinsic(f"llvm.vector.reduce.fadd.{suffix(vt)}", vt.element, [vt.element, vt])
    return kb.b.call(red, [ir.Constant(vt.element, -0.0), acc], fastmath=flags + ("reassoc",))


def sums_row(kb, inst) -> int | None:
    """The dimension reduce `inst` sums in vector form inside a vector row group, or None."""
    return None if kb.lanes is None else _row_add(inst)


def _row_add(inst) -> int | None:
    from ..interp.lanes import binary_root
    if len(inst.operands) != 2 or inst.shape.is_tuple:
        return None
    x = inst.operands[0].shape
    dt = x.dtype
    if binary_root(inst.attrs["to_apply"]) != "add" or dt.name not in ("f32", "f64") \
            or inst.shape.dtype != dt or inst.operands[1].shape.dtype != dt or x.rank != 2:
        return None
    minor = minor_to_major(x)[0]
    return minor if list(inst.attrs["dimensions"]) == [minor] else None


def reduce_takes_vectors(inst) -> bool:
    """The lanes facet of reduce: an f32/f64 sum along the minor dimension of a 2-D
    operand (row_sum)."""
    return _row_add(inst) is not None


def row_loop(kb, shape, rows, r, gen, target, scalar_loop, total=None, beside=None) -> None:
    """Row r of 2-D `shape` (rows major): gen over vectors of kb.lanes positions, stored
    into the buffer (row r of it) or the row scratch (`target`: (pointer, in scratch)),
    each value added to the RowSum `total` and each position passed to `beside(index, p)`
    (p: where the vector at index was stored); the positions after the last whole vector
    by `scalar_loop(lo)`, one by one. With a sum or `beside`, SUM_IC registers of vectors
    an iteration (the vectoriser's interleaving of such loops, whose partial sums are the
    bits). A loop with row divides (kb.row_divide: softmax's e / sum(e), element by
    element, no order in its bits) takes DIVIDE_WAYS registers an iteration, then the
    whole registers left one an iteration, and runs from the row's end down
    (DIVIDE_BACKWARD): it reads the row
    the loop before it has just written, whose last lines are still in the L1 cache
    (the loop is bound by the row's moves between L2 and L1, not by its arithmetic:
    softmax's divide as a multiply takes as long). Measured, not kept: row r-1's divide
    inside row r's exp loop (carried as row_ahead carries the max; e in two row buffers)
    was no faster in cache (64x8192, 1 thread: within 3 %; the exp loop is compute-bound,
    and the divide's arithmetic inside it cost about what its own loop did) and 15-28 %
    slower at 512x8192; softmax's compile 25 -> 33 ms."""
    from .types import storage_type, vector_store
    b = kb.b
    minor = minor_to_major(shape)[0]
    n = shape.dims[minor]
    per_row = shape.size // rows
    ptr, in_scratch = target
    base = b.mul(r, i64(per_row), flags=("nsw", "nuw"))

    def body(c, width):
        lin = b.add(base, c, flags=("nsw", "nuw"))
        multi = [None] * 2
        multi[minor], multi[1 - minor] = c, r
        index = Index(b, shape, multi=multi, linear=lin, lanes=width)
        v = gen(index)
        p = b.gep(ptr, [c if in_scratch else lin], source_etype=storage_type(shape.dtype), inbounds=True)
        vector_store(b, v, p)
        if total is not None:
            total.add(v)
        if beside is not None:
            beside(index, p)
    backward = False
    if total is not None or beside is not None:
        ways = SUM_IC
    elif kb.row_divide is not None:     # a loop with row divides: 4 registers an
        ways, backward = DIVIDE_WAYS or SUM_IC, DIVIDE_BACKWARD  # iteration, as the exp loop's
    else:
        ways = 1
    nv = along_row(kb, n, body, total, ways, f"v{minor}", backward)
    if nv < n:
        scalar_loop(nv)


def row_reader(kb, shape, slot, r, rows):
    """Reads row r of a row group member's result from its row scratch (the reads are at
    row r; with `lanes`, a vector of it)."""
    from .types import load_elem, storage_type, vector_load
    st = storage_type(shape.dtype)
    per_row = shape.size // rows
    minor = minor_to_major(shape)[0]

    def read(index):
        b = kb.b
        if index.lanes is not None:     # contiguous in the group's row layout (plan):
            p = b.gep(slot, [index.multi[minor]], source_etype=st, inbounds=True)   # at its column
            return vector_load(b, shape.dtype, p, index.lanes)
        off = b.sub(index.offset_in(shape), b.mul(r, i64(per_row)))
        return load_elem(b, shape.dtype, b.gep(slot, [off], source_etype=st, inbounds=True))
    return read
