"""Object code of several LLVM modules, compiled at the same time on threads.

llvmlite wraps every call into LLVM in one process-wide lock (`llvmlite.binding.ffi`,
`_LLVMLock`), so two threads compiling through its API take turns (measured: two
halves of a 188-kernel module, one thread running and one waiting on the lock in
every /proc sample). LLVM itself is thread-safe for modules in different LLVMContexts
with their own TargetMachine and pass managers, and ctypes drops the GIL around a
foreign call, so the three heavy calls — parse, optimise, emit — are made here on the
unlocked ctypes functions of llvmlite's own library (`ffi.lib._lib`), each thread with
its own context, target machine and pass builder (both threads then ran in every
sample). Everything else, short, still goes through the locked API. Where this
llvmlite lacks that handle (another version), parts compile one after another through
the public API: same objects, no parallelism.

`Ahead` compiles parts on a thread of its own while the caller goes on generating the
rest of the module in Python (hloc.backend.jit.lower: a large computation's part as soon
as its code is complete); `compile_all` then compiles the rest beside it.

Each part has its own level (hloc.backend.jit.BRIEF_LEVEL), for both its optimiser
(the pipeline's speed level) and its code generation (the target machine's; each thread
keeps one per level), and may have a code generation level of its own
(hloc.backend.jit.ROW_CODEGEN_LEVEL): settings of the part's own pipeline and machine,
not options.

A part whose loops all run briefly (hloc.backend.computation.Functions.brief: small
kernels, no library loops; hloc.backend.jit.lower marks every part of a module or none)
is compiled with BRIEF_OPTIONS: code generation without loop
strength reduction, and the optimiser without partial loop unrolling. LSR rewrites only
integer address arithmetic (results were bit-identical on every dump and benchmark module
with it off in every part), it is a fifth of a kernel-heavy module's LLVM time (BERT step:
3.0 -> 2.4 s CPU) and half the code generation of a part of many small inlined loop nests,
and it gains 1-5 % on long streaming loops (which keep it) but nothing measurable on
short ones, nor on row kernels (hloc.backend.jit.ROW_BRIEF_OPTIONS: their parts go without it,
2-2.5 ms of softmax's code generation). Partial unrolling (of constant-trip loops too long to unroll
fully; full unrolling is unchanged) copies the body of every such loop several times over
for the rest of the pipeline and code generation to work through: off as well, the BERT
step's LLVM CPU time fell by another sixth (2.09 -> 1.75 s; MLP step 196 -> 162 ms) for
1.5 % of its run time (MLP and the scans unchanged), bits unchanged on every dump and
benchmark module.
LLVM reads these options from process-wide `cl::opt`s, so
compile_all compiles the parts in two phases, each with its options set while no compile
under other options runs: everything in hloc that runs LLVM's optimiser or code
generator holds OPTIONS_LOCK for the options it needs (compiles under the same options
run at once), and with no compile running the options are DEFAULT_OPTIONS (set by
hloc.backend.jit.host through OPTIONS_LOCK.initial, unless a compile's came first).
`-unroll-allow-partial`, once given, overrides the target's own
choice for good, so it is given from the start, in every compile, and code never depends
on whether a brief compile came before; `true` is LLVM's own choice where the CPU's
scheduling model has a loop buffer (LoopMicroOpBufferSize, as in LLVM's models of recent
x86 cores; checked on znver4: objects identical to never giving the option).
"""
from __future__ import annotations

import ctypes
import threading
import time
from contextlib import contextmanager

import llvmlite.binding as llvm
from llvmlite.binding import ffi

try:
    _RAW = ffi.lib._lib
    _PARSE, _RUN, _EMIT, _VERIFY = (_RAW.LLVMPY_ParseAssembly, _RAW.LLVMPY_RunNewModulePassManager,
                                    _RAW.LLVMPY_TargetMachineEmitToMemory, _RAW.LLVMPY_VerifyModule)
except AttributeError:              # pragma: no cover - another llvmlite
    _RAW = None


BRIEF_OPTIONS = ("-disable-lsr=true", "-unroll-allow-partial=false")
DEFAULT_OPTIONS = ("-disable-lsr=false", "-unroll-allow-partial=true")


def set_options(options) -> None:
    for o in options:
        llvm.set_option("", o)


class _Options:
    """Who may compile under which process-wide options: any number of compiles under the
    same ones at once (the parts of one module on several threads, a part compiled
    ahead beside them), a compile under others waits until none runs. `with
    OPTIONS_LOCK:` compiles under DEFAULT_OPTIONS; with no compile left the options are
    back at DEFAULT_OPTIONS."""

    def __init__(self):
        self._cond = threading.Condition(threading.Lock())
        self._current = None               # what was last set here
        self._users = 0

    def acquire(self, options) -> None:
        with self._cond:
            while self._users and self._current != options:
                self._cond.wait()
            if self._current != options:
                set_options(options)
                self._current = options
            self._users += 1

    def release(self) -> None:
        with self._cond:
            self._users -= 1
            if not self._users and self._current != DEFAULT_OPTIONS:
                set_options(DEFAULT_OPTIONS)
                self._current = DEFAULT_OPTIONS
            self._cond.notify_all()

    def initial(self) -> None:
        """Sets DEFAULT_OPTIONS when LLVM is initialised (hloc.backend.jit.host) unless
        options were set here already: the first host() of a process may come inside a
        compile under BRIEF_OPTIONS (a printed part compiled first thing), whose options
        must stay."""
        with self._cond:
            if self._current is None:
                set_options(DEFAULT_OPTIONS)
                self._current = DEFAULT_OPTIONS

    def hold_for_fork(self, timeout: float) -> bool:
        """Take the condition's lock (no thread is then inside acquire or release, nor
        setting options) for os.fork; False where `timeout` ran out."""
        return self._cond.acquire(timeout=timeout)

    def after_fork(self, child: bool) -> None:
        """The parent lets go; the child has none of the compiling threads: no users,
        and a fresh condition (a compile under other options would otherwise wait for
        them for good)."""
        if child:
            self._cond, self._users = threading.Condition(threading.Lock()), 0
        else:
            self._cond.release()

    @contextmanager
    def compiling(self, brief: bool):
        """Held for a compile under BRIEF_OPTIONS (`brief`) or DEFAULT_OPTIONS."""
        self.acquire(options_of(brief))
        try:
            yield
        finally:
            self.release()

    def __enter__(self):
        self.acquire(DEFAULT_OPTIONS)

    def __exit__(self, *exc):
        self.release()


OPTIONS_LOCK = _Options()


def options_of(brief: bool) -> tuple:
    """The LLVM options a part compiles under: BRIEF_OPTIONS where `brief`."""
    return BRIEF_OPTIONS if brief else DEFAULT_OPTIONS


def available() -> bool:
    """Whether parts can compile at the same time (the unlocked calls exist)."""
    return _RAW is not None


# A part's level for code already in vector form with no loop left to restructure
# (hloc.backend.jit.LEAN_ROWS): the passes of LEAN_PASSES only, no pipeline. Rotation (a
# row loop tested at its top becomes one tested at its bottom) is what lets code
# generation's MachineLICM keep the vector loops' constants in registers: without it
# softmax's exp loop reloaded 14 of them per iteration (8 % slower in cache).
LEAN = -1
# LEAN's passes in order, (LLVM's name, what adds it to a module pass manager): the names
# are printed in emit-llvm's part headers (hloc.backend.llvm_parts)
LEAN_PASSES = (
    ("sroa", llvm.ModulePassManager.add_sroa_pass),
    ("instcombine", llvm.ModulePassManager.add_instruction_combine_pass),
    ("simplifycfg", llvm.ModulePassManager.add_simplify_cfg_pass),
    ("loop-rotate", llvm.ModulePassManager.add_loop_rotate_pass),
)


def module_passes(tm, opt_level: int, slp: bool = True):
    """(module pass manager, pass builder) of `opt_level` (LEAN included)."""
    if opt_level == LEAN:
        pb = pass_builder(tm, 1, False)
        mpm = llvm.ModulePassManager()
        for _, add in LEAN_PASSES:
            add(mpm)
        return mpm, pb
    pb = pass_builder(tm, opt_level, slp)
    return pb.getModulePassManager(), pb


def pass_builder(tm, opt_level: int, slp: bool = True):
    """hloc's LLVM pipeline: the new pass manager at `opt_level`, SLP on unless `slp` is
    false (hloc.backend.jit.SLP_MAX_INSTRUCTIONS)."""
    pto = llvm.PipelineTuningOptions(speed_level=opt_level)
    pto.slp_vectorization = slp
    return llvm.PassBuilder(tm, pto)


class Stats:
    """Seconds spent per phase, summed over parts (`add` is thread-safe)."""

    def __init__(self):
        self.seconds = {"parse": 0.0, "optimise": 0.0, "codegen": 0.0}
        self._lock = threading.Lock()

    def add(self, phase: str, t0: float) -> float:
        now = time.perf_counter()
        with self._lock:
            self.seconds[phase] += now - t0
        return now


def optimised_module(ir_text: str, tm, opt_level: int, slp: bool = True,
                     brief: bool = False, prepare=None):
    """One part parsed, verified, `prepare`d and through its passes: `compile_one`'s
    steps before code generation, under the part's options (BRIEF_OPTIONS where `brief`),
    on llvmlite's locked calls."""
    with OPTIONS_LOCK.compiling(brief):
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        if prepare is not None:
            prepare(mod)
        if opt_level != 0:
            mpm, pb = module_passes(tm, opt_level, slp)
            mpm.run(mod, pb)
        return mod


def optimised_text(ir_text: str, tm, opt_level: int, slp: bool = True,
                   brief: bool = False) -> str:
    """The IR of one part after its passes, printed (what `compile_one` emits code from)."""
    return str(optimised_module(ir_text, tm, opt_level, slp, brief))


def compile_one(ir_text: str, make_tm, opt_level: int, unlocked: bool, stats=None,
                slp: bool = True, prepare=None) -> bytes:
    """Object code of one module: parse, verify, `prepare(module)` where given (the AOT
    library's symbol names), optimise at `opt_level` (SLP per `slp`), emit with the
    target machine `make_tm()` (called once, for both: a target machine serves one
    thread for many modules, one after another)."""
    stats = stats or Stats()
    tm = make_tm()
    t = time.perf_counter()
    if not unlocked:
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        if prepare is not None:
            prepare(mod)
        t = stats.add("parse", t)
        if opt_level != 0:
            mpm, pb = module_passes(tm, opt_level, slp)
            mpm.run(mod, pb)
        t = stats.add("optimise", t)
        obj = tm.emit_object(mod)
        stats.add("codegen", t)
        return obj
    ctx = llvm.create_context()
    with ffi.OutputString() as err:
        ptr = _PARSE(ctx, ctypes.c_char_p(ir_text.encode()), err)
        if err:
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    mod = llvm.ModuleRef(ptr, ctx)
    try:
        with ffi.OutputString() as err:
            if _VERIFY(mod, err):
                raise RuntimeError(str(err))
        if prepare is not None:
            prepare(mod)
        t = stats.add("parse", t)
        if opt_level != 0:
            mpm, pb = module_passes(tm, opt_level, slp)
            _RUN(mpm, mod, pb)
        t = stats.add("optimise", t)
        with ffi.OutputString() as err:
            buf = _EMIT(tm, mod, 1, err)
            if not buf:
                raise RuntimeError(str(err))
        stats.add("codegen", t)
        try:
            start, size = ffi.lib.LLVMPY_GetBufferStart(buf), ffi.lib.LLVMPY_GetBufferSize(buf)
            return ctypes.string_at(start, size)
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)
    finally:
        mod.close()


def compile_all(texts: list[str], make_tm, opt_level: int, threads: int,
                stats: Stats | None = None, slp: list[bool] | None = None,
                brief: list[bool] | None = None, levels: list[int] | None = None,
                codegen: list[int] | None = None, prepare=None) -> list[bytes]:
    """The objects of `texts`, in order, compiled on up to `threads` threads (largest
    first, each thread taking the next when done; `make_tm(level)`: a target machine
    whose code generation runs at `level`, made once per thread and level; `slp`: per
    text, SLP on or off, default on; `brief`: per text, whether it compiles with
    BRIEF_OPTIONS, default not; `levels`: per text, the level of both its optimiser and
    its code generation, default `opt_level`; `codegen`: per text, the level of its code
    generation where not its level's; `prepare`: compile_one's). Objects do not depend
    on `threads`."""
    n = len(texts)
    slp = list(slp) if slp is not None else [True] * n
    brief = list(brief) if brief is not None else [False] * n
    levels = list(levels) if levels is not None else [opt_level] * n
    codegen = list(codegen) if codegen is not None else levels
    out: list = [None] * n
    for phase in (False, True):
        ks = [k for k in range(n) if bool(brief[k]) == phase]
        if not ks:
            continue
        with OPTIONS_LOCK.compiling(phase):
            objs = _compile_all([texts[k] for k in ks], make_tm, threads, stats,
                                [slp[k] for k in ks], [levels[k] for k in ks],
                                [codegen[k] for k in ks], prepare)
        for k, obj in zip(ks, objs):
            out[k] = obj
    return out


class _Machines:
    """One thread's target machines, by level, each made by `make_tm(level)` when first
    asked for (a machine serves one thread for many modules, one after another)."""

    def __init__(self, make_tm):
        self.make_tm = make_tm
        self.by_level: dict = {}

    def __call__(self, level: int):
        tm = self.by_level.get(level)
        if tm is None:
            tm = self.by_level[level] = self.make_tm(level)
        return tm


class Ahead:
    """Parts compiled one after another on a thread of their own while the caller goes
    on (hloc.backend.jit.lower hands over a unit's part as soon as its code is complete).
    `close()` takes no more and gives back the indices of the parts not started, for
    the caller to compile with the rest; `wait()` gives {index: object} of the others."""

    def __init__(self, make_tm):
        self.make_tm = make_tm
        self.stats = Stats()
        self._lock = threading.Lock()
        self._todo: list = []             # (index, text, level, slp, brief, codegen)
        self._done: dict = {}
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, index: int, text: str, level: int, slp: bool, brief: bool,
               codegen: int | None = None) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("parts submitted after close()")
            self._todo.append((index, text, level, slp, brief,
                               level if codegen is None else codegen))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="hloc-llvm-ahead",
                                                daemon=True)
                self._thread.start()

    def _work(self) -> None:
        machine = _Machines(self.make_tm)
        while True:
            with self._lock:
                if not self._todo or self._closed or self._error is not None:
                    self._thread = None
                    return
                index, text, level, slp, brief, codegen = self._todo.pop(0)
            try:
                tm = machine(codegen)
                with OPTIONS_LOCK.compiling(brief):
                    obj = compile_one(text, lambda: tm, level, True, self.stats, slp)
                with self._lock:
                    self._done[index] = obj
            except BaseException as e:      # re-raised by wait()
                with self._lock:
                    self._error = e
                    self._thread = None
                return

    def close(self) -> list[int]:
        with self._lock:
            self._closed = True
            left = [index for index, *_ in self._todo]
            self._todo = []
            return left

    def wait(self) -> dict:
        while True:
            with self._lock:
                thread = self._thread
            if thread is None:
                break
            thread.join()
        if self._error is not None:
            raise self._error
        return dict(self._done)


def _compile_all(texts, make_tm, threads, stats, slp, levels, codegen,
                 prepare=None) -> list[bytes]:
    threads = max(1, min(threads, len(texts)))
    if threads == 1 or not available():
        # On this thread, through the unlocked calls where they exist: llvmlite's own
        # calls hold its process-wide lock for a whole optimisation, which would stop
        # everything else compiling at the time (the thread runtime beside a first module).
        machine, unlocked = _Machines(make_tm), available()
        return [compile_one(t, lambda cg=cg: machine(cg), lv, unlocked, stats, s, prepare)
                for t, s, lv, cg in zip(texts, slp, levels, codegen)]
    order = sorted(range(len(texts)), key=lambda k: -len(texts[k]))
    out: list = [None] * len(texts)
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work():
        machine = _Machines(make_tm)        # this thread's
        while True:
            with lock:
                if not order or errors:
                    return
                k = order.pop(0)
            try:
                lv, cg = levels[k], codegen[k]
                out[k] = compile_one(texts[k], lambda: machine(cg), lv, True, stats, slp[k],
                                     prepare)
            except BaseException as e:      # re-raised in the caller's thread
                with lock:
                    errors.append(e)
                return

    pool = [threading.Thread(target=work, name=f"hloc-llvm-{i}", daemon=True)
            for i in range(threads - 1)]
    for t in pool:
        t.start()
    work()
    for t in pool:
        t.join()
    if errors:
        raise errors[0]
    return out
