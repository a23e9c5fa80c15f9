"""The native thread runtime: one persistent worker pool, compiled once per process.

Every module's split kernels (hloc.backend.parallel) call one external entry,
`void hloc_rt_parallel(kernel, args, nwg, nthreads)`, which runs work groups 0..nwg-1 of
`kernel` on up to `nthreads` threads (the caller and pool workers); each thread takes the
next group from a shared counter (an atomic add) until none is left, so which thread
computes a group never changes what it computes: results are bit-identical whatever the
thread count. The runtime is LLVM IR built here (no C compiler needed): the JIT compiles
it once per process (hloc.backend.threadpool_jit) and registers its entry under that
fixed name in hloc's own table (hloc.backend.runtime), so modules only declare it; the
AOT library (hloc.aot.lower) carries the same functions, internal, in its own module.

The pool: workers started on first use (as many as the most threads a call has asked
for, up to MAX_THREADS - 1) sleep on a futex word (Linux `futex(2)` through libc's
`syscall`) that holds a call sequence number and how many workers the call uses; a
call publishes its task, bumps the word and wakes them, works itself too, then sleeps on a
second futex word counting the workers still busy. Futexes rather than pthread condition
variables: two lock-free words and no opaque libc structures whose size and
initialisation differ between C libraries and targets; a wake-up measured 4-6 us against
19-45 us to start and join a pthread per call. What a call must not inherit from the
worker's past:
* floating-point state: the caller's MXCSR (x86-64) or FPCR (aarch64) is stored with the
  task and loaded by each worker before it runs it (xla-cpu numerics sets FTZ/DAZ, exact
  numerics does not; a worker lives across both);
* other callers: the pool is taken with a try-lock; a call that finds it busy (another
  thread's call, or a call made from inside a worker) starts and joins its own pthreads
  as before (`hloc_rt.spawn`; new threads inherit the caller's floating-point
  environment, pthread_create(3)), never waits;
* fork: the pool belongs to the process id that started its workers; a call in a child
  (another pid) resets it and starts workers of its own, never waits on its parent's.
A call waits for its workers spinning up to CALLER_SPINS pauses (~25 us here) before it
sleeps; a worker spins WORKER_SPINS pauses after its task before it sleeps, so a call
that follows soon (the next split kernel of a module, a loop of calls) finds it awake
and makes no system call to wake it (`sleepers` counts those asleep). A spin yields the
CPU (sched_yield) every CALLER_YIELD / WORKER_YIELD pauses: on a loaded machine the caller and a worker
can share one CPU, and each spinning its full time while the other waited to run made a
tiny split call 56 us instead of 7-14.
`hloc_rt_stop` wakes the workers with a stop mark and joins them (the AOT library's
destructor, before dlclose); a later call starts new ones. Targets other than x86-64 and
aarch64 Linux (whose futex numbers and floating-point registers are known here) use
`hloc_rt.spawn` for every call.
"""
from __future__ import annotations

from llvmlite import ir

from . import irtext
from .loops import at_entry, for_range, i64
from .types import I8, I32, I64, PTR, VOID, opaque

ENTRY = "hloc_rt_parallel"
STOP = "hloc_rt_stop"
MAX_THREADS = 64
SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}
_X86 = ("x86_64", "amd64")
FPENV_ARCHS = (*_X86, "aarch64", "arm64")      # where get_fpenv / set_fpenv know the register
FUTEX_WAIT, FUTEX_WAKE = 128, 129       # FUTEX_WAIT / FUTEX_WAKE | FUTEX_PRIVATE_FLAG
STOPPING = 255                          # the word's worker count that tells them to exit
CALLER_SPINS = 1000                     # pauses (~25 ns each on this machine's x86-64)
WORKER_SPINS = 1000
CALLER_YIELD = 32                       # a spin yields the CPU every this many pauses
WORKER_YIELD = 32                       # (0: never)

KERNEL_T = ir.FunctionType(VOID, [PTR, I64, I64])       # kernel(args, wg, nwg)
ENTRY_T = ir.FunctionType(VOID, [PTR, PTR, I64, I64])    # hloc_rt_parallel
TASK_T = ir.LiteralStructType([PTR, PTR, I64, PTR])      # kernel, args, nwg, next group (i64*)


def get_fpenv(b, arch: str, declare):
    """The calling thread's floating-point control word as an i64: MXCSR on x86-64, FPCR
    on aarch64 (`declare(name, ret, args)`: the module's declaration of an intrinsic)."""
    if arch in _X86:
        slot = _entry_slot(b, I32, "mxcsr")
        b.call(declare("llvm.x86.sse.stmxcsr", VOID, [PTR]), [slot])
        return b.zext(b.load(slot, typ=I32), I64)
    return b.call(declare("llvm.aarch64.get.fpcr", I64, []), [])


def set_fpenv(b, arch: str, declare, v) -> None:
    """Load `v` (get_fpenv's form) into the calling thread's control register."""
    if arch in _X86:
        slot = _entry_slot(b, I32, "mxcsr")
        b.store(b.trunc(v, I32), slot)
        b.call(declare("llvm.x86.sse.ldmxcsr", VOID, [PTR]), [slot])
    else:
        b.call(declare("llvm.aarch64.set.fpcr", VOID, [I64]), [v])


def _entry_slot(b, ty, name):
    """A stack slot allocated in the function's entry block (not once per loop turn)."""
    with at_entry(b, b.function):
        return opaque(b, b.alloca(ty, name=name))


def fill_tasks(b, task, kernel, args, nwg, n) -> None:
    """Tasks 0..n-1 (`task(t)` their TASK_T slots) share the work groups of `kernel` on
    `args` through one counter (a stack slot of the caller, which waits for them all)."""
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


class Runtime:
    """The runtime's functions, emitted into `module` for `triple`. `decls`: the module's
    declarations by name (shared with its other code); `unique`: a fresh name for an
    internal symbol; `external`: whether the two entries are visible outside the module."""

    def __init__(self, module: ir.Module, triple: str, decls: dict, unique=lambda n: n,
                 external: bool = True):
        self.m, self.decls, self.unique = module, decls, unique
        self.arch = triple.split("-")[0]
        self.pooled = self.arch in SYS_FUTEX and "-linux" in triple
        self.task = self._task_runner()
        self.spawn = self._spawn()
        if self.pooled:
            g = self._global
            self.lock, self.pid = g("lock", I32, 64), g("pid", I32)
            self.word, self.pending = g("word", I32, 64), g("pending", I32, 64)
            self.counter, self.job = g("counter", I64, 64), g("job", TASK_T, 64)
            self.sleepers = g("sleepers", I32, 64)
            self.fpenv, self.workers = g("fpenv", I64), g("workers", I64)
            self.tids = g("tids", ir.ArrayType(I64, MAX_THREADS))
            self.main = self._main()
        self.entry = self._entry(external)
        self.stop = self._stop(external)

    # -- declarations and small pieces ------------------------------------------------
    def _decl(self, name, ret, args, var_arg=False):
        fn = self.decls.get(name)
        if fn is None:
            fn = self.decls[name] = ir.Function(self.m, ir.FunctionType(ret, args, var_arg=var_arg),
                                                name=name)
        return fn

    def _global(self, name, ty, align=None):
        g = ir.GlobalVariable(self.m, ty, name=self.unique("hloc_rt." + name))
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, None)
        if align:
            g.align = align
        return g

    def _function(self, name, ty, external=False):
        fn = ir.Function(self.m, ty, name=name if external else self.unique("hloc_rt." + name))
        fn.linkage = "external" if external else "internal"
        return fn

    def _futex(self, b, word, op, val, timeout=None):
        syscall = self._decl("syscall", I64, [I64], var_arg=True)
        b.call(syscall, [i64(SYS_FUTEX[self.arch]), word, i64(op), val,
                         timeout if timeout is not None else ir.Constant(PTR, None)])

    def _get_fpenv(self, b):
        return get_fpenv(b, self.arch, self._decl)

    def _set_fpenv(self, b, v):
        set_fpenv(b, self.arch, self._decl, v)

    def _pause(self, b):
        if self.arch in _X86:
            b.call(self._decl("llvm.x86.sse2.pause", VOID, []), [])
        else:
            b.call(self._decl("llvm.aarch64.hint", VOID, [I32]), [ir.Constant(I32, 1)])   # yield

    def _await(self, fn, b, word, done, spins: int, every: int, sleepers=None):
        """Load `word` (acquire) until `done(v)`: `spins` turns with a pause, then asleep on
        the futex (woken by whoever changes it), counted in `sleepers` while asleep when
        given. The value that was done."""
        pre = b.block
        head, check, spin, sleep, out = (fn.append_basic_block(n) for n in
                                         ("await", "await.check", "spin", "nap", "awaited"))
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(I64, name="turn")
        k.add_incoming(i64(0), pre)
        v = b.load_atomic(word, "acquire", 4, typ=I32)
        b.cbranch(done(v), out, check)
        b.position_at_end(check)
        b.cbranch(b.icmp_unsigned("<", k, i64(spins)), spin, sleep)
        b.position_at_end(spin)
        self._pause(b)
        turn = fn.append_basic_block("turned")
        if every:
            nap = fn.append_basic_block("yield")
            b.cbranch(b.icmp_unsigned("==", b.and_(k, i64(every - 1)), i64(every - 1)), nap, turn)
            b.position_at_end(nap)      # the thread waited for may be queued on this CPU
            b.call(self._decl("sched_yield", I32, []), [])
        b.branch(turn)
        b.position_at_end(turn)
        k.add_incoming(b.add(k, i64(1)), turn)
        b.branch(head)
        b.position_at_end(sleep)
        if sleepers is not None:        # seq_cst: see _wake_workers
            b.atomic_rmw("add", sleepers, ir.Constant(I32, 1), "seq_cst")
        self._futex(b, word, FUTEX_WAIT, b.zext(v, I64))
        if sleepers is not None:
            b.atomic_rmw("sub", sleepers, ir.Constant(I32, 1), "seq_cst")
        k.add_incoming(k, sleep)
        b.branch(head)
        b.position_at_end(out)
        return v

    @staticmethod
    def _next_word(b, word, active):
        """The word of the next call: sequence number + 1, `active` workers (an i32)."""
        return b.or_(b.add(b.and_(word, ir.Constant(I32, ~0xFF)), ir.Constant(I32, 0x100)), active)

    # -- the functions ----------------------------------------------------------------
    def _task_runner(self):
        """`ptr task(ptr t)`: run t's kernel on the next work group until the shared
        counter passes nwg (a pthread start routine, also the AOT caller pool's task)."""
        fn = self._function("task", ir.FunctionType(PTR, [PTR]))
        (task,) = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))

        def load(k, ty):
            return b.load(b.gep(task, [i64(0), ir.Constant(I32, k)], source_etype=TASK_T,
                                inbounds=True), typ=ty)
        kernel, args, nwg, counter = load(0, KERNEL_T.as_pointer()), load(1, PTR), load(2, I64), load(3, PTR)
        take, run, done = (fn.append_basic_block(n) for n in ("take", "run", "done"))
        b.branch(take)
        b.position_at_end(take)
        wg = b.atomic_rmw("add", counter, i64(1), "monotonic", name="wg")
        b.cbranch(b.icmp_unsigned("<", wg, nwg), run, done)
        b.position_at_end(run)
        b.call(kernel, [args, wg, nwg])
        b.branch(take)
        b.position_at_end(done)
        b.ret(ir.Constant(PTR, None))
        return fn

    def _spawn(self):
        """`spawn(kernel, args, nwg, n)`: tasks 1..n-1 on new pthreads, task 0 here, then
        join; a task whose thread could not start runs here."""
        fn = self._function("spawn", ENTRY_T)
        kernel, args, nwg, n = fn.args
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        create = self._decl("pthread_create", I32, [PTR, PTR, PTR, PTR])
        join = self._decl("pthread_join", I32, [I64, PTR])
        tasks_t, tids_t = ir.ArrayType(TASK_T, MAX_THREADS), ir.ArrayType(I64, MAX_THREADS)
        started_t = ir.ArrayType(I8, MAX_THREADS)
        tasks = opaque(b, b.alloca(tasks_t, name="tasks"))
        tids = opaque(b, b.alloca(tids_t, name="tids"))
        started = opaque(b, b.alloca(started_t, name="started"))

        def task(t):
            return b.gep(tasks, [i64(0), t], source_etype=tasks_t, inbounds=True)

        def at(arr, t, ty):
            return b.gep(arr, [i64(0), t], source_etype=ty, inbounds=True)
        fill_tasks(b, task, kernel, args, nwg, n)
        with for_range(b, 1, n, name="s") as t:
            rc = b.call(create, [at(tids, t, tids_t), ir.Constant(PTR, None), self.task, task(t)])
            b.store(b.zext(b.icmp_signed("==", rc, ir.Constant(I32, 0)), I8), at(started, t, started_t))
        b.call(self.task, [task(i64(0))])
        with for_range(b, 1, n, name="j") as t:
            ok = b.load(at(started, t, started_t), typ=I8)
            with b.if_else(b.icmp_unsigned("!=", ok, ir.Constant(I8, 0))) as (joined, inline):
                with joined:
                    b.call(join, [b.load(at(tids, t, tids_t), typ=I64), ir.Constant(PTR, None)])
                with inline:
                    b.call(self.task, [task(t)])
        b.ret_void()
        return fn

    def _main(self):
        """`ptr main(ptr arg)`: a pool worker; arg = (word at its start << 8) | index. It
        sleeps until the word changes; runs the call's task under the caller's
        floating-point state when its index is below the call's worker count; exits on
        STOPPING."""
        fn = self._function("main", ir.FunctionType(PTR, [PTR]))
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        blk = {n: fn.append_basic_block(n) for n in ("wait", "changed", "check", "run",
                                                      "wake", "done", "exit")}
        a = b.ptrtoint(fn.args[0], I64)
        idx = b.and_(a, i64(0xFF), name="index")
        first = b.trunc(b.lshr(a, i64(8)), I32, name="first")
        b.branch(blk["wait"])
        b.position_at_end(blk["wait"])
        seen = b.phi(I32, name="seen")
        seen.add_incoming(first, fn.entry_basic_block)
        w = self._await(fn, b, self.word, lambda v: b.icmp_unsigned("!=", v, seen), WORKER_SPINS,
                        WORKER_YIELD, self.sleepers)
        b.branch(blk["changed"])
        b.position_at_end(blk["changed"])
        active = b.zext(b.and_(w, ir.Constant(I32, 0xFF)), I64, name="active")
        b.cbranch(b.icmp_unsigned("==", active, i64(STOPPING)), blk["exit"], blk["check"])
        b.position_at_end(blk["check"])
        seen.add_incoming(w, blk["check"])
        b.cbranch(b.icmp_unsigned("<", idx, active), blk["run"], blk["wait"])
        b.position_at_end(blk["run"])
        self._set_fpenv(b, b.load(self.fpenv, typ=I64))
        b.call(self.task, [opaque(b, self.job)])
        old = b.atomic_rmw("sub", self.pending, ir.Constant(I32, 1), "acq_rel")
        b.cbranch(b.icmp_unsigned("==", old, ir.Constant(I32, 1)), blk["wake"], blk["done"])
        b.position_at_end(blk["wake"])
        self._futex(b, self.pending, FUTEX_WAKE, i64(1))
        b.branch(blk["done"])
        b.position_at_end(blk["done"])
        seen.add_incoming(w, blk["done"])
        b.branch(blk["wait"])
        b.position_at_end(blk["exit"])
        b.ret(ir.Constant(PTR, None))
        return fn

    def _entry(self, external):
        fn = self._function(ENTRY, ENTRY_T, external)
        kernel, args, nwg, nthreads = fn.args
        for v, name in zip(fn.args, ("kernel", "args", "nwg", "nthreads")):
            v.name = name
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        umin = lambda x, y: b.select(b.icmp_unsigned("<", x, y), x, y)   # noqa: E731
        n = umin(umin(nthreads, nwg), i64(MAX_THREADS))
        n = b.select(b.icmp_signed("<", n, i64(1)), i64(1), n, name="n")
        inline, threads = fn.append_basic_block("inline"), fn.append_basic_block("threads")
        b.cbranch(b.icmp_signed("<=", n, i64(1)), inline, threads)
        b.position_at_end(inline)
        one = opaque(b, b.alloca(TASK_T, name="task"))
        fill_tasks(b, lambda t: one, kernel, args, nwg, i64(1))
        b.call(self.task, [one])
        b.ret_void()
        b.position_at_end(threads)
        spawn = fn.append_basic_block("spawn")
        if self.pooled:
            self._pool_call(fn, b, spawn, kernel, args, nwg, n)
        else:
            b.branch(spawn)
        b.position_at_end(spawn)
        b.call(self.spawn, [kernel, args, nwg, n])
        b.ret_void()
        return fn

    def _owned(self, fn, b, other):
        """Continue in a new block when the pool belongs to this process (resetting it
        first when it belonged to the parent of a fork), else branch to `other`."""
        blk = {n: fn.append_basic_block(n) for n in ("claim", "swap", "reset", "owned")}
        pid = b.call(self._decl("getpid", I32, []), [], name="pid")
        p = b.load_atomic(self.pid, "acquire", 4, name="owner", typ=I32)
        b.cbranch(b.icmp_unsigned("==", p, pid), blk["owned"], blk["claim"])
        b.position_at_end(blk["claim"])           # -1: another thread is resetting it
        b.cbranch(b.icmp_signed("==", p, ir.Constant(I32, -1)), other, blk["swap"])
        b.position_at_end(blk["swap"])
        got = b.extract_value(b.cmpxchg(self.pid, p, ir.Constant(I32, -1), "acq_rel", "monotonic"), 1)
        b.cbranch(got, blk["reset"], other)
        b.position_at_end(blk["reset"])
        for g, ty in ((self.lock, I32), (self.word, I32), (self.pending, I32), (self.workers, I64)):
            b.store(ir.Constant(ty, 0), g)
        b.store_atomic(pid, self.pid, "release", 4)
        b.branch(blk["owned"])
        b.position_at_end(blk["owned"])

    def _pool_call(self, fn, b, spawn, kernel, args, nwg, n):
        blk = {n: fn.append_basic_block(n) for n in ("locked", "unlock", "publish", "finish")}
        self._owned(fn, b, spawn)
        got = b.extract_value(b.cmpxchg(self.lock, ir.Constant(I32, 0), ir.Constant(I32, 1),
                                        "acquire", "monotonic"), 1)
        b.cbranch(got, blk["locked"], spawn)
        b.position_at_end(blk["locked"])
        word = b.load(self.word, typ=I32, name="word")
        want = b.sub(n, i64(1), name="want")
        have = self._start_workers(fn, b, word, want)
        active = b.select(b.icmp_unsigned("<", want, have), want, have, name="active")
        b.cbranch(b.icmp_unsigned("==", active, i64(0)), blk["unlock"], blk["publish"])
        b.position_at_end(blk["unlock"])           # no worker could start
        b.store_atomic(ir.Constant(I32, 0), self.lock, "release", 4)
        b.branch(spawn)
        b.position_at_end(blk["publish"])
        job = opaque(b, self.job)
        for k, v in enumerate((kernel, args, nwg, opaque(b, self.counter))):
            b.store(v, b.gep(job, [i64(0), ir.Constant(I32, k)], source_etype=TASK_T, inbounds=True))
        b.store(i64(0), self.counter)
        b.store(self._get_fpenv(b), self.fpenv)
        active32 = b.trunc(active, I32)
        b.store_atomic(active32, self.pending, "monotonic", 4)
        self._wake_workers(fn, b, self._next_word(b, word, active32))
        b.call(self.task, [job])
        self._await(fn, b, self.pending, lambda v: b.icmp_unsigned("==", v, ir.Constant(I32, 0)),
                    CALLER_SPINS, CALLER_YIELD)
        b.branch(blk["finish"])
        b.position_at_end(blk["finish"])
        b.store_atomic(ir.Constant(I32, 0), self.lock, "release", 4)
        b.ret_void()

    def _wake_workers(self, fn, b, word):
        """Publish the pool's next `word` and wake the workers asleep on it (none are when
        all still spin: no system call). Both sides seq_cst: a worker counts itself in
        `sleepers` before its futex wait compares the word, so either this load sees it
        or its wait sees the new word and returns at once."""
        b.store_atomic(word, self.word, "seq_cst", 4)
        asleep = b.load_atomic(self.sleepers, "seq_cst", 4, typ=I32)
        wake, go = fn.append_basic_block("wake"), fn.append_basic_block("woken")
        b.cbranch(b.icmp_unsigned("!=", asleep, ir.Constant(I32, 0)), wake, go)
        b.position_at_end(wake)
        self._futex(b, self.word, FUTEX_WAKE, i64(0x7FFFFFFF))
        b.branch(go)
        b.position_at_end(go)

    def _start_workers(self, fn, b, word, want):
        """Start workers until `want` run (or one cannot start); how many run."""
        create = self._decl("pthread_create", I32, [PTR, PTR, PTR, PTR])
        tids_t = ir.ArrayType(I64, MAX_THREADS)
        pre = b.block
        head, body, ok, end = (fn.append_basic_block(n) for n in ("start", "create", "started",
                                                                  "enough"))
        have0 = b.load(self.workers, typ=I64, name="have")
        base = b.shl(b.zext(word, I64), i64(8))
        b.branch(head)
        b.position_at_end(head)
        have = b.phi(I64, name="workers")
        have.add_incoming(have0, pre)
        b.cbranch(b.icmp_unsigned("<", have, want), body, end)
        b.position_at_end(body)
        tid = b.gep(self.tids, [i64(0), have], source_etype=tids_t, inbounds=True)
        rc = b.call(create, [tid, ir.Constant(PTR, None), self.main, b.inttoptr(b.or_(base, have), PTR)])
        b.cbranch(b.icmp_signed("==", rc, ir.Constant(I32, 0)), ok, end)
        b.position_at_end(ok)
        nxt = b.add(have, i64(1))
        b.store(nxt, self.workers)
        have.add_incoming(nxt, ok)
        b.branch(head)
        b.position_at_end(end)
        out = b.phi(I64, name="running")
        out.add_incoming(have, head)
        out.add_incoming(have, body)
        return out

    def _stop(self, external):
        """`hloc_rt_stop()`: wait for the pool, tell its workers to exit, join them."""
        fn = self._function(STOP, ir.FunctionType(VOID, []), external)
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        if not self.pooled:
            b.ret_void()
            return fn
        done = fn.append_basic_block("done")
        blk = {n: fn.append_basic_block(n) for n in ("lock", "nap", "locked", "stop")}
        pid = b.call(self._decl("getpid", I32, []), [], name="pid")
        p = b.load_atomic(self.pid, "acquire", 4, typ=I32)
        b.cbranch(b.icmp_unsigned("==", p, pid), blk["lock"], done)
        b.position_at_end(blk["lock"])
        got = b.extract_value(b.cmpxchg(self.lock, ir.Constant(I32, 0), ir.Constant(I32, 1),
                                        "acquire", "monotonic"), 1)
        b.cbranch(got, blk["locked"], blk["nap"])
        b.position_at_end(blk["nap"])             # a call is running: up to 100 us, again
        ts = _entry_slot(b, ir.ArrayType(I64, 2), "timeout")
        b.store(ir.Constant(ir.ArrayType(I64, 2), [0, 100_000]), ts)
        self._futex(b, self.lock, FUTEX_WAIT, i64(1), ts)
        b.branch(blk["lock"])
        b.position_at_end(blk["locked"])
        have = b.load(self.workers, typ=I64)
        unlock = fn.append_basic_block("unlock")
        b.cbranch(b.icmp_unsigned("==", have, i64(0)), unlock, blk["stop"])
        b.position_at_end(blk["stop"])
        word = b.load(self.word, typ=I32)
        self._wake_workers(fn, b, self._next_word(b, word, ir.Constant(I32, STOPPING)))
        join = self._decl("pthread_join", I32, [I64, PTR])
        tids_t = ir.ArrayType(I64, MAX_THREADS)
        with for_range(b, 0, have, name="w") as t:
            tid = b.load(b.gep(self.tids, [i64(0), t], source_etype=tids_t, inbounds=True), typ=I64)
            b.call(join, [tid, ir.Constant(PTR, None)])
        b.store(i64(0), self.workers)
        b.branch(unlock)
        b.position_at_end(unlock)
        b.store_atomic(ir.Constant(I32, 0), self.lock, "release", 4)
        b.branch(done)
        b.position_at_end(done)
        b.ret_void()
        return fn


def module_text(triple: str, data_layout: str) -> str:
    """The JIT's runtime module for the host (`triple`)."""
    m = ir.Module(name="hloc_rt")
    m.triple, m.data_layout = triple, data_layout
    Runtime(m, triple, {})
    return irtext.module_text(m)        # = str(m): 1.3 of its 3.3 ms through llvmlite
