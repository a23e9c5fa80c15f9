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

`hloc.parallel(kernel, args, nwg)` is emitted into every LLVM module (no Python, no
state between calls, so the AOT library can carry the same code): it reads the module's
`hloc_nthreads` global (set by the Executable from `os.sched_getaffinity` or
`--threads`), starts `n - 1` pthreads, works itself too and joins the others; each
thread takes the next work group from a shared counter (an atomic add) until none is
left, so a thread that the OS deschedules (a machine shared with other processes) holds
up one group, not a fixed share. Which thread computes a group never changes what it
computes. A pthread that cannot be started leaves its groups to the others. New threads inherit the caller's
floating-point environment (pthread_create(3)), so xla-cpu's FTZ/DAZ holds in them.
Thread start and join cost ~10-50 us, paid only by kernels of >= MIN_WORK bytes.
The two runtime functions are `noinline optnone` (RUNTIME_ATTRS): left to O3 they took
more than half of LLVM's time on a one-kernel module (x*x+2x+1: 40 of 48 ms compile,
22 ms without), for code whose cost is the pthread calls it makes.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import for_range, i64, minor_to_major
from .types import I8, I32, I64, PTR, itemsize, opaque

NTHREADS = "hloc_nthreads"
MAX_THREADS = 64
MIN_WORK = 1 << 20          # bytes (or weighted multiply-adds) below which a kernel runs inline
CHUNK = 1 << 20
MAX_GROUPS = 32
RUNTIME_ATTRS = ("noinline", "optnone")     # LLVM's optnone requires noinline


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


KERNEL_T = ir.FunctionType(ir.VoidType(), [PTR, I64, I64])
TASK_T = ir.LiteralStructType([PTR, PTR, I64, PTR])      # kernel, args, nwg, next group (i64*)


def parallel_function(mcx) -> ir.Function:
    """`void hloc.parallel(ptr kernel, ptr args, i64 nwg)`, emitted once per module."""
    fn = mcx._decls.get("hloc.parallel")
    if fn is not None:
        return fn
    module = mcx.module
    nthreads = ir.GlobalVariable(module, I64, name=NTHREADS)
    nthreads.initializer = ir.Constant(I64, 1)
    worker = _worker(mcx)
    from . import runtime
    runtime.require("pthread_create")
    runtime.require("pthread_join")
    create = mcx.intrinsic("pthread_create", I32, [PTR, PTR, PTR, PTR])
    join = mcx.intrinsic("pthread_join", I32, [I64, PTR])
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64]), name="hloc.parallel")
    fn.linkage = "internal"
    for a in RUNTIME_ATTRS:
        fn.attributes.add(a)
    kernel, args, nwg = fn.args
    kernel.name, args.name, nwg.name = "kernel", "args", "nwg"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tasks_t, tids_t = ir.ArrayType(TASK_T, MAX_THREADS), ir.ArrayType(I64, MAX_THREADS)
    tasks = opaque(b, b.alloca(tasks_t, name="tasks"))
    tids = opaque(b, b.alloca(tids_t, name="tids"))
    started = opaque(b, b.alloca(ir.ArrayType(I8, MAX_THREADS), name="started"))
    n = b.load(nthreads, typ=I64, name="n")
    n = _umin(b, _umin(b, n, nwg), i64(MAX_THREADS))
    n = b.select(b.icmp_unsigned("<", n, i64(1)), i64(1), n, name="nthreads")

    def task(t):
        return b.gep(tasks, [i64(0), t], source_etype=tasks_t, inbounds=True)

    fill_tasks(b, task, kernel, args, nwg, n)
    run_on_threads(b, create, join, worker, task, n, tids, started)
    b.ret_void()
    mcx._decls["hloc.parallel"] = fn
    return fn


def fill_tasks(b, task, kernel, args, nwg, n) -> None:
    """Tasks 0..n-1 (`task(t)` their TASK_T slots) share the work groups of `kernel` on
    `args` through one counter (a stack slot of the caller, which joins them all)."""
    def field(p, k):
        return b.gep(p, [i64(0), ir.Constant(I32, k)], source_etype=TASK_T, inbounds=True)
    counter = opaque(b, b.alloca(I64, name="next_wg"))
    b.store(i64(0), counter)
    with for_range(b, 0, n, name="t") as t:
        p = task(t)
        b.store(kernel, field(p, 0))
        b.store(args, field(p, 1))
        b.store(nwg, field(p, 2))
        b.store(counter, field(p, 3))


def run_on_threads(b, create, join, worker, task, n, tids, started) -> None:
    """Tasks 1..n-1 on new pthreads, task 0 on this one, then join; a task whose thread
    could not start runs here. `tids` / `started`: [MAX_THREADS x i64 / i8] stack slots."""
    tids_t, started_t = ir.ArrayType(I64, MAX_THREADS), ir.ArrayType(I8, MAX_THREADS)
    with for_range(b, 1, n, name="s") as t:
        tid = b.gep(tids, [i64(0), t], source_etype=tids_t, inbounds=True)
        rc = b.call(create, [tid, ir.Constant(PTR, None), worker, task(t)])
        ok = b.zext(b.icmp_signed("==", rc, ir.Constant(I32, 0)), I8)
        b.store(ok, b.gep(started, [i64(0), t], source_etype=started_t, inbounds=True))
    b.call(worker, [task(i64(0))])
    with for_range(b, 1, n, name="j") as t:
        ok = b.load(b.gep(started, [i64(0), t], source_etype=started_t, inbounds=True), typ=I8)
        with b.if_else(b.icmp_unsigned("!=", ok, ir.Constant(I8, 0))) as (joined, inline):
            with joined:
                tid = b.load(b.gep(tids, [i64(0), t], source_etype=tids_t, inbounds=True), typ=I64)
                b.call(join, [tid, ir.Constant(PTR, None)])
            with inline:
                b.call(worker, [task(t)])


def _umin(b, x, y):
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _worker(mcx) -> ir.Function:
    """`ptr hloc.worker(ptr task)`: run the task's kernel on the next work group until the
    shared counter passes nwg."""
    fn = ir.Function(mcx.module, ir.FunctionType(PTR, [PTR]), name="hloc.worker")
    fn.linkage = "internal"
    for a in RUNTIME_ATTRS:
        fn.attributes.add(a)
    (task,) = fn.args
    task.name = "task"
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def load(k, ty, name):
        return b.load(b.gep(task, [i64(0), ir.Constant(I32, k)], source_etype=TASK_T, inbounds=True),
                      typ=ty, name=name)
    kernel = load(0, KERNEL_T.as_pointer(), "kernel")       # a typed load: the indirect callee
    args, nwg = load(1, PTR, "args"), load(2, I64, "nwg")
    counter = load(3, PTR, "next_wg")
    loop, body, done = (fn.append_basic_block(n) for n in ("take", "run", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    wg = b.atomic_rmw("add", counter, i64(1), "monotonic", name="wg")
    b.cbranch(b.icmp_unsigned("<", wg, nwg), body, done)
    b.position_at_end(body)
    b.call(kernel, [args, wg, nwg])
    b.branch(loop)
    b.position_at_end(done)
    b.ret(ir.Constant(PTR, None))
    return fn
