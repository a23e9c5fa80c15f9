"""The work-group runtime: large data-parallel kernels split over threads, in native code.

A kernel (hloc.backend.kernels) computes work group `wg` of `nwg` — a slice of its
output's outermost physical dimension. `work_groups(inst)` fixes `nwg` at compile time
from the kernel's size alone (bytes read and written, plus the multiply-adds of a dot
or convolution inside), never from the thread count: every work group computes exactly
what the single-threaded loop computes for those rows (reductions inside a kernel run
whole within one group), so results are bit-identical whatever the thread count.
Kernels under MIN_WORK bytes keep `nwg = 1` and are called directly: no thread is
touched. Larger ones are cut into at most MAX_GROUPS large chunks (memory-bound loops
gain little from more on this machine; XLA's ParallelTaskAssigner has the same shape).

`hloc.parallel(kernel, args, nwg)`, a few instructions emitted into each module that splits
a kernel, reads the module's `hloc_nthreads` global (set by the Executable from
`os.sched_getaffinity` or `--threads`) and calls the thread runtime's entry
`hloc_rt_parallel(kernel, args, nwg, nthreads)` (hloc.backend.threadpool: compiled once
per process, a persistent worker pool; the module only declares it). Each thread takes
the next work group from a shared counter (an atomic add) until none is left, so a thread
that the OS deschedules (a machine shared with other processes) holds up one group, not
a fixed share. Which thread computes a group never changes what it computes. Until this
runtime, every module carried its own `noinline optnone` copy of a pthread start/join
runtime: 2.4-3 ms of LLVM time in every parallel module, 19-45 us per call.
"""
from __future__ import annotations

from llvmlite import ir

from . import threadpool
from .loops import minor_to_major
from .types import I64, PTR, VOID, itemsize

NTHREADS = "hloc_nthreads"
MAX_THREADS = threadpool.MAX_THREADS
MIN_WORK = 1 << 20          # bytes (or weighted multiply-adds) below which a kernel runs inline
CHUNK = 1 << 20
MAX_GROUPS = 32
# Softmax 512x8192's row groups (16 rows each; benchmarks/row_ab.py, ABBA, same bits):
# 64 groups were 8-9 % slower in cache before row_ahead.FIRST_FAST, 0-3 % after, 128
# (before) 14-54 % (each group's first row streams its max alone); 16 groups within
# noise at 1 and 2 threads (0.98-1.04).


def _bytes(shape) -> int:
    return sum(s.size * itemsize(s.dtype) for s in shape.leaves() if s.dtype.is_array)


def _inner_work(inst) -> int:
    """Multiply-adds of dots/convolutions computed by `inst` (4 'bytes' each)."""
    insts = inst.attrs["calls"].instructions if inst.opcode == "fusion" else [inst]
    work = 0
    for i in insts:
        if i.opcode == "dot":
            k = 1
            for d in i.attrs.get("lhs_contracting_dims", ()):
                k *= i.operands[0].shape.dims[d]
            work += i.shape.size * k
        elif i.opcode == "convolution":
            w = i.operands[1].shape
            out_feat = max(1, w.dims[i.attrs["dim_labels"].kernel_output_feature])
            work += i.shape.size * (w.size // out_feat)
    return 4 * work


def kernel_work(inst) -> int:
    """Bytes read and written by `inst`'s kernel plus 4 per multiply-add inside."""
    return _bytes(inst.shape) + sum(_bytes(o.shape) for o in inst.operands) + _inner_work(inst)


def touched_bytes(inst) -> int:
    """Bytes `inst`'s kernel reads and writes when it runs: like kernel_work, but a fusion
    parameter read only through (dynamic-)slices counts as the slices it reads, and a
    dynamic-update-slice of its own operand buffer (hloc.backend.inplace) as its update
    (a scan body's one-element reads and writes of its loop-carried arrays)."""
    from .inplace import dus_base
    out = _bytes(inst.shape)
    ins = [_bytes(o.shape) for o in inst.operands]
    if inst.opcode == "fusion":
        comp = inst.attrs["calls"]
        for p in comp.parameters:
            users = p.users
            if users and all(u.opcode in ("dynamic-slice", "slice") and u.operands[0] is p
                             for u in users):
                ins[p.parameter_number] = sum(_bytes(u.shape) for u in users)
        root = comp.root
    else:
        root = inst
    base = dus_base(inst)
    if base is not None:
        out = ins[base] = _bytes(root.operands[1].shape)
    return out + sum(ins) + _inner_work(inst)


def work_groups(inst) -> int:
    """How many work groups a data-parallel kernel for `inst` is cut into (>= 1)."""
    leaves = [s for s in inst.shape.leaves() if s.dtype.is_array and s.rank]
    if not leaves:
        return 1
    work = touched_bytes(inst)
    if work < MIN_WORK:
        return 1
    n0 = min(s.dims[minor_to_major(s)[-1]] for s in leaves)
    return max(1, min(n0, MAX_GROUPS, work // CHUNK))


def parallel_function(mcx) -> ir.Function:
    """`void hloc.parallel(ptr kernel, ptr args, i64 nwg)`: the module's thread count and a
    call of the thread runtime (emitted once per module; LLVM inlines it)."""
    fn = mcx._decls.get("hloc.parallel")
    if fn is not None:
        return fn
    module = mcx.module
    nthreads = ir.GlobalVariable(module, I64, name=mcx.fixed(NTHREADS))
    nthreads.initializer = ir.Constant(I64, 1)
    entry = mcx.intrinsic(threadpool.ENTRY, VOID, [PTR, PTR, I64, I64])
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64]), name=mcx.fixed("hloc.parallel"))
    fn.linkage = "internal"
    kernel, args, nwg = fn.args
    kernel.name, args.name, nwg.name = "kernel", "args", "nwg"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    b.call(entry, [kernel, args, nwg, b.load(nthreads, typ=I64, name="nthreads")])
    b.ret_void()
    mcx._decls["hloc.parallel"] = fn
    return fn
