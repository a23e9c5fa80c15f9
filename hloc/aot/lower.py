"""An HLO module as the LLVM modules of a library: the JIT's code plus a C entry point.

Two LLVM modules: the *code* (every computation and kernel function, from the JIT's
emitters unchanged, hloc.backend.computation.Functions), which hloc.aot compiles in the
JIT's parts with the JIT's settings (hloc.backend.jit.part_plan), and the *glue* (what
follows, one part of its own), which calls the entry computation and which the code
calls for its work groups (`hloc.parallel`, external). What differs from
hloc.backend.jit.lower:

* the entry points `int PREFIX_run(args, results, scratch)` and
  `int PREFIX_run_with(args, results, scratch, const PREFIX_config*)`, which check what
  can be checked (null and misaligned pointers, results overlapping other buffers, a bad
  thread count) and return an error code (hloc.aot.header lists them) before any code runs;
* the work-group runtime reads its thread count and the caller's optional thread-pool
  callback from the call's config through one thread-local pointer, set on entry and
  restored on return (the JIT's reads a module global that the Executable sets instead);
  without a callback it runs on the library's own copy of the thread runtime
  (hloc.backend.threadpool: a persistent worker pool that concurrent callers share
  through a try-lock, the one that finds it busy starting and joining its own pthreads),
  whose workers a destructor (llvm.global_dtors) stops and joins at exit or dlclose,
  before the code they run is unmapped; so two threads may run at once;
* FTZ/DAZ (xla-cpu numerics) is set per target (MXCSR on x86-64, FPCR.FZ on aarch64),
  and again in pool tasks, which do not inherit the caller's floating-point state.
"""
from __future__ import annotations

from llvmlite import ir

from ..backend import compile_threads, jit, parallel, threadpool
from ..backend.computation import Functions
from ..backend.context import ModuleContext, Options
from ..backend.loops import for_range, i64
from ..backend.types import I32, I64, PTR, VOID, opaque
from .abi import argument_leaves, result_leaves

CTX = "hloc_aot_ctx"                # the thread-local config pointer
CONFIG_T = ir.LiteralStructType([I64, PTR, PTR])     # threads, parallel_for, pool
POOL_T = ir.FunctionType(VOID, [PTR, I64, PTR, PTR])  # (pool, n, task_fn, task_arg)
TASK_FN_T = ir.FunctionType(VOID, [PTR, I64])

OK, ERR_NULL, ERR_ALIGN, ERR_OVERLAP, ERR_THREADS = 0, 1, 2, 3, 4
ERRORS = {
    OK: ("OK", "success"),
    ERR_NULL: ("ERR_NULL_POINTER", "args, results or scratch (when SCRATCH_BYTES > 0) is NULL, "
                                   "or so is a buffer of non-zero size"),
    ERR_ALIGN: ("ERR_ALIGNMENT", "a buffer is not aligned to its element size, or scratch to "
                                 "SCRATCH_ALIGN bytes"),
    ERR_OVERLAP: ("ERR_OVERLAP", "a result buffer or scratch overlaps another buffer"),
    ERR_THREADS: ("ERR_THREADS", "config->threads is not in 1..MAX_THREADS"),
}
SCRATCH_ALIGN = 64


class Lowered:
    def __init__(self, fns, entry, glue, glue_module, scratch, args, results, prefix, threads):
        self.fns = fns                  # the code (hloc.backend.jit.part_plan plans its parts)
        self.units, self.printed = [], {}   # its units (jit.collect_units), for part_plan
        self.entry = entry              # its entry computation's function, which glue calls
        self.glue = glue                # the glue module's text
        self.ir_text = glue             # hloc.aot adds the code's, printed for its parts
        self.scratch = scratch
        self.args, self.results = args, results
        self.prefix, self.threads = prefix, threads
        self.exports = export_names(prefix)
        # every function and global either module defines, which the library names
        # `PREFIX.name`, hidden, but the exports (hloc.aot.target)
        self.defined = (_defined(fns.mcx.module) | _defined(glue_module)) - set(self.exports)


def export_names(prefix: str) -> tuple:
    """The library's exported symbols: PREFIX_run, PREFIX_run_with (hloc.aot.header)."""
    return f"{prefix}_run", f"{prefix}_run_with"


def _defined(module: ir.Module) -> set:
    return {g.name for g in module.global_values
            if not (isinstance(g, ir.Function) and g.is_declaration)
            and not g.name.startswith("llvm.")}


def lower_library(module, options: Options, prefix: str, triple: str, data_layout: str,
                  threads: int = 1, features: str = "") -> Lowered:
    from ..backend.expand import for_codegen
    module = for_codegen(module)          # as the JIT's (batch-norm, library fusions)
    exports = export_names(prefix)
    glue = ModuleContext(module.name + ".glue", options, triple, data_layout)
    glue.features = features
    glue.reserve(exports)
    ctx = ir.GlobalVariable(glue.module, PTR, name=glue.fixed(CTX))
    ctx.initializer = ir.Constant(PTR, None)
    ctx.linkage = "internal"
    arch = triple.split("-")[0]
    fpenv = _FpEnv(glue, arch) if options.xla else None
    parallel_fn = _install_parallel(glue, ctx, fpenv, triple)
    mcx = ModuleContext(module.name, options, triple, data_layout)
    mcx.features = features
    # the code and the glue link into one library: no name of the code's may be an export
    # (exports keep their names) or one the glue defines, before any kernel is named
    mcx.reserve((*exports, *_defined(glue.module)))
    # the code calls the glue's hloc.parallel (another part: a declaration here)
    mcx._decls["hloc.parallel"] = ir.Function(mcx.module, parallel_fn.function_type,
                                              name=mcx.fixed(parallel_fn.name))
    fns = Functions(mcx)
    # the units' parts, as the JIT's (jit.lower); the entry computation, named only once
    # emitted (no root here), is the rest of the module, dealt out to parts, not a unit:
    # the glue is what stands where the JIT's wrapper is
    units, printed = jit.collect_units(fns, options, ()) if compile_threads.available() \
        else ([], {})
    entry = fns.compile(module.entry)
    scratch = fns.arena(module.entry)
    args, results = argument_leaves(module.entry), result_leaves(module.entry)
    callee = ir.Function(glue.module, entry.function_type, name=entry.name)
    run_with = _run_with(glue, prefix, callee, ctx, fpenv, args, results, scratch, threads)
    run = ir.Function(glue.module, ir.FunctionType(I32, [PTR, PTR, PTR]), name=exports[0])
    b = ir.IRBuilder(run.append_basic_block("entry"))
    b.ret(b.call(run_with, [*run.args, ir.Constant(PTR, None)]))
    text = str(glue.module)
    decl = f"@\"{CTX}\" = internal global ptr null"
    if text.count(decl) != 1:
        raise AssertionError("thread-local config pointer not found in the module text")
    text = text.replace(decl, f"@\"{CTX}\" = internal thread_local global ptr null")
    low = Lowered(fns, entry, text, glue.module, scratch, args, results, prefix, threads)
    low.units = [u for u in units if u[0] != entry.name]
    low.printed = printed
    return low


class _FpEnv:
    """Set flush-to-zero (and denormals-are-zero where there is one) around a call."""

    def __init__(self, mcx, arch):
        self.mcx, self.arch = mcx, arch

    def enter(self, b):
        if self.arch not in threadpool.FPENV_ARCHS:
            return lambda: None
        declare = self.mcx.intrinsic
        old = threadpool.get_fpenv(b, self.arch, declare)
        flush = 0x8040 if self.arch in ("x86_64", "amd64") else 1 << 24     # FTZ | DAZ; FPCR.FZ
        threadpool.set_fpenv(b, self.arch, declare, b.or_(old, i64(flush)))
        return lambda: threadpool.set_fpenv(b, self.arch, declare, old)


def _install_parallel(mcx, ctx, fpenv, triple) -> ir.Function:
    """`hloc.parallel` as the computations call it, reading the call's config (external:
    the code, in other parts, declares it before any computation is emitted, so
    parallel.parallel_function finds it). Without a
    caller's pool it calls the library's own copy of the thread runtime
    (hloc.backend.threadpool, internal here), whose workers a destructor stops."""
    rt = threadpool.Runtime(mcx.module, triple, mcx._decls, unique=mcx.unique, external=False)
    if rt.pooled:
        _destructor(mcx.module, rt.stop)
    pool_task = ir.Function(mcx.module, TASK_FN_T, name=mcx.unique("hloc.pool_task"))
    pool_task.linkage = "internal"
    b = ir.IRBuilder(pool_task.append_basic_block("entry"))
    tasks_t = ir.ArrayType(threadpool.TASK_T, parallel.MAX_THREADS)
    restore = fpenv.enter(b) if fpenv else (lambda: None)
    b.call(rt.task, [b.gep(pool_task.args[0], [i64(0), pool_task.args[1]], source_etype=tasks_t,
                           inbounds=True)])
    restore()
    b.ret_void()

    fn = ir.Function(mcx.module, ir.FunctionType(VOID, [PTR, PTR, I64]), name=mcx.fixed("hloc.parallel"))
    kernel, args, nwg = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    tasks = opaque(b, b.alloca(tasks_t, name="tasks"))
    cfg = b.load(ctx, typ=PTR, name="config")
    field = lambda p, k: b.gep(p, [i64(0), ir.Constant(I32, k)], source_etype=CONFIG_T,  # noqa: E731
                               inbounds=True)
    threads = b.load(field(cfg, 0), typ=I64, name="threads")
    n = _umin(b, _umin(b, threads, nwg), i64(parallel.MAX_THREADS))
    n = b.select(b.icmp_signed("<", n, i64(1)), i64(1), n, name="n")

    def task(t):
        return b.gep(tasks, [i64(0), t], source_etype=tasks_t, inbounds=True)

    pool_fn = b.load(field(cfg, 1), typ=POOL_T.as_pointer(), name="parallel_for")  # typed: the callee
    use_pool = b.and_(b.icmp_unsigned("!=", pool_fn, ir.Constant(POOL_T.as_pointer(), None)),
                      b.icmp_unsigned(">", n, i64(1)))
    with b.if_else(use_pool) as (then, other):
        with then:
            threadpool.fill_tasks(b, task, kernel, args, nwg, n)
            b.call(pool_fn, [b.load(field(cfg, 2), typ=PTR), n, pool_task, tasks])
        with other:
            b.call(rt.entry, [kernel, args, nwg, threads])
    b.ret_void()
    return fn


def _destructor(module, fn) -> None:
    """`fn` in llvm.global_dtors: run at exit or dlclose of the library."""
    entry_t = ir.LiteralStructType([I32, PTR, PTR])
    arr_t = ir.ArrayType(entry_t, 1)
    g = ir.GlobalVariable(module, arr_t, name="llvm.global_dtors")
    g.linkage = "appending"
    g.initializer = ir.Constant(arr_t, [ir.Constant(entry_t, [ir.Constant(I32, 65535), fn,
                                                              ir.Constant(PTR, None)])])


def _umin(b, x, y):
    return b.select(b.icmp_unsigned("<", x, y), x, y)


def _run_with(mcx, prefix, entry, ctx, fpenv, args, results, scratch, threads):
    fn = ir.Function(mcx.module, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]), name=export_names(prefix)[1])
    a_arr, r_arr, scr, cfg_in = fn.args
    for v, n in zip(fn.args, ("args", "results", "scratch", "config")):
        v.name = n
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fail = {code: fn.append_basic_block(f"err{code}") for code in (ERR_NULL, ERR_ALIGN, ERR_OVERLAP,
                                                                   ERR_THREADS)}
    for code, blk in fail.items():
        ir.IRBuilder(blk).ret(ir.Constant(I32, code))
    null = ir.Constant(PTR, None)

    def check(cond, code):
        ok = fn.append_basic_block("ok")
        b.cbranch(cond, fail[code], ok)
        b.position_at_end(ok)

    default = opaque(b, b.alloca(CONFIG_T, name="default"))
    b.store(ir.Constant(CONFIG_T, [i64(threads), null, null]), default)
    cfg = b.select(b.icmp_unsigned("==", cfg_in, null), default, cfg_in, name="cfg")
    nthreads = b.load(b.gep(cfg, [i64(0), ir.Constant(I32, 0)], source_etype=CONFIG_T, inbounds=True),
                      typ=I64)
    check(b.or_(b.icmp_signed("<", nthreads, i64(1)),
                b.icmp_signed(">", nthreads, i64(parallel.MAX_THREADS))), ERR_THREADS)
    if args:
        check(b.icmp_unsigned("==", a_arr, null), ERR_NULL)
    if results:
        check(b.icmp_unsigned("==", r_arr, null), ERR_NULL)
    bufs = []        # (address as i64, size, writable)
    for arr, leaves, writable in ((a_arr, args, False), (r_arr, results, True)):
        for leaf in leaves:
            if not leaf.nbytes:
                continue
            p = b.load(b.gep(arr, [i64(leaf.index)], source_etype=PTR, inbounds=True), typ=PTR)
            check(b.icmp_unsigned("==", p, null), ERR_NULL)
            addr = b.ptrtoint(p, I64)
            if leaf.align > 1:
                check(b.icmp_unsigned("!=", b.and_(addr, i64(leaf.align - 1)), i64(0)), ERR_ALIGN)
            bufs.append((addr, leaf.nbytes, writable))
    if scratch:
        check(b.icmp_unsigned("==", scr, null), ERR_NULL)
        addr = b.ptrtoint(scr, I64)
        check(b.icmp_unsigned("!=", b.and_(addr, i64(SCRATCH_ALIGN - 1)), i64(0)), ERR_ALIGN)
        bufs.append((addr, scratch, True))
    if any(w for _, _, w in bufs) and len(bufs) > 1:
        _overlap_check(b, bufs, check)
    old = b.load(ctx, typ=PTR, name="outer")
    b.store(cfg, ctx)
    restore = fpenv.enter(b) if fpenv else (lambda: None)
    b.call(entry, [a_arr, r_arr, scr])
    restore()
    b.store(old, ctx)
    b.ret(ir.Constant(I32, OK))
    return fn


def _overlap_check(b, bufs, check) -> None:
    """Any writable buffer [a, a+n) meeting another buffer: a loop over two tables."""
    n = len(bufs)
    tab_t = ir.ArrayType(I64, n)
    starts, ends = opaque(b, b.alloca(tab_t)), opaque(b, b.alloca(tab_t))
    first_writable = next(k for k, (_, _, w) in enumerate(bufs) if w)
    if not all(w for _, _, w in bufs[first_writable:]):
        raise AssertionError("writable buffers must come last")
    for k, (addr, size, _) in enumerate(bufs):
        b.store(addr, b.gep(starts, [i64(0), i64(k)], source_etype=tab_t, inbounds=True))
        b.store(b.add(addr, i64(size)), b.gep(ends, [i64(0), i64(k)], source_etype=tab_t, inbounds=True))
    flag = b.alloca(ir.IntType(1))
    b.store(ir.Constant(ir.IntType(1), 0), flag)
    with for_range(b, first_writable, n, name="w") as w:
        ws = b.load(b.gep(starts, [i64(0), w], source_etype=tab_t, inbounds=True), typ=I64)
        we = b.load(b.gep(ends, [i64(0), w], source_etype=tab_t, inbounds=True), typ=I64)
        with for_range(b, 0, n, name="o") as o:
            os_ = b.load(b.gep(starts, [i64(0), o], source_etype=tab_t, inbounds=True), typ=I64)
            oe = b.load(b.gep(ends, [i64(0), o], source_etype=tab_t, inbounds=True), typ=I64)
            meet = b.and_(b.icmp_unsigned("<", ws, oe), b.icmp_unsigned("<", os_, we))
            meet = b.and_(meet, b.icmp_unsigned("!=", w, o))
            b.store(b.or_(b.load(flag), meet), flag)
    check(b.load(flag), ERR_OVERLAP)
