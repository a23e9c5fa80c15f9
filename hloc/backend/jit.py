"""LLVM IR -> native code: the new pass manager, object emission, the object cache, MCJIT.

`lower(module, options)` emits the whole HLO module as one LLVM module (every kernel and
computation function) plus the entry wrapper `hloc_entry(params, outs, temp)`, which in
xla-cpu numerics sets FTZ/DAZ in MXCSR around the call and restores it after.
`compile_objects(...)` compiles it in parts, each optimised and code-generated with its
own settings (`part_plan`); `hloc emit-llvm` prints those parts, each before or after its
own passes (hloc.backend.llvm_parts). Parts (hloc.backend.partition): a large module is
split by size into parts that LLVM optimises and emits on several threads
(hloc.backend.compile_threads); the part count depends on the module alone, so objects do
not depend on the machine's cores; a part holding a very large function is optimised
without SLP, SLP_MAX_INSTRUCTIONS; a module whose loops all run briefly is compiled
without loop strength reduction and partial unrolling, compile_threads.BRIEF_OPTIONS; a
part whose loops all run briefly is optimised and code-generated at BRIEF_LEVEL; a part of
row kernels has its own settings, ROW_SLP, ROW_CODEGEN_LEVEL, ROW_BRIEF_OPTIONS; with
`ahead`, a large computation's part starts compiling on a thread of its own as soon as its
code is complete, beside the rest of IR generation (`collect_units`): grad(scan)'s scan
bodies, BERT's layer loop. The objects are checked against the runtime table before they
are loaded into one engine, and the engine that owns the code is kept by the returned
`NativeCode` as long as anyone can call into it.
`module_key` keys the object cache on the HLO text and hloc's sources, not on the IR,
so a cache hit skips the HLO passes and IR generation.
"""
from __future__ import annotations

import os
import platform
import threading

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from .. import __version__
from . import compile_threads, partition, runtime
from .buffers import alias_leaves
from .cache import cache_key
from .computation import Functions
from .context import ModuleContext, Options, gc_paused
from .loops import has_loop
from .types import I32, PTR, VOID

ENTRY = "hloc_entry"
UNROLL_THRESHOLD = 100
# About this much LLVM IR text per part, at most MAX_PARTS parts: small modules stay
# whole (a part costs a few ms of its own), large ones split finely enough to balance
# over the cores; fixed numbers, so the parts, and the objects, depend on the module only.
PART_BYTES = 48 << 10
MAX_PARTS = 8
# A part holding a function of more LLVM instructions than this (with what it inlines:
# a scan body of thousands of inlined scalar kernels, one long basic block) is optimised
# without the SLP vectoriser, whose time grows with block length: a quarter of the
# grad(scan) body's optimisation, for no measured run time (the loop vectoriser
# still runs; XLA:CPU has SLP off everywhere). Smaller functions keep it (the f64 scan
# body's 3x3 products need it).
SLP_MAX_INSTRUCTIONS = 8000
# The level (optimiser and code generation) of a part whose functions all run their loops
# briefly (hloc.backend.computation.Functions.brief: kernels under a MiB, or 64 KiB in a
# while loop; computations of calls and loops). O1 leaves out GVN, DSE, jump threading and
# the like, which on such code buy little (run time: grad(scan), the MLP and BERT steps
# within 1 %, the CNN step and the f64 scan 1-2 % slower), and code generation at "less"
# leaves out the post-RA
# scheduler: grad(scan)'s LLVM CPU 390 -> 245 ms, MLP 160 -> 135, BERT 1700 -> 1550.
# Long loops keep the module's level: at O1 the row and streaming kernels ran 5-30 %
# slower. Set per part: the level is a pipeline setting, not a process-wide option.
BRIEF_LEVEL = 1
# A part of row-group kernels (hloc.backend.row_groups: loops over long rows; the rest of
# the part brief) is optimised at the module's level (the loop vectoriser), but without
# SLP (ROW_SLP: softmax's and layernorm's objects are identical with and without it, and
# it is 0.5-1 ms of their optimisation), with code generation at ROW_CODEGEN_LEVEL (None:
# the part's own level) and, with ROW_BRIEF_OPTIONS, under compile_threads.BRIEF_OPTIONS
# where every other part may (no loop strength reduction; the row loops carry their
# own unroll hints, hloc.backend.row_loop_hints.row_hints). Set per part, like BRIEF_LEVEL.
# LLVM CPU, softmax 512x8192 36-38 -> 34 ms, layernorm 4096x1024 19-20 -> 16-18; run time,
# in cache on one thread (64x8192, 512x1024, benchmarks/row_ab.py): softmax within 0.6 %,
# layernorm from 0.8 % slower to 5.5 % faster over five runs (identical code: 0.7 %); the
# bits are unchanged. What is left is LLVM's cost per
# pipeline run over the vector code: O3 run again on its own output still takes 16 of
# softmax's 17 ms, where a pipeline of SROA, InstCombine and SimplifyCFG takes 1 ms, but
# llvmlite 0.50 exposes no loop vectoriser outside the default pipelines.
# A part of row kernels in explicit vector code (hloc.backend.row_vector) and functions
# without loops has nothing for the loop passes or the vectoriser to do: it is optimised
# at compile_threads.LEAN (compile_threads.LEAN_PASSES) and code-generated at
# BRIEF_LEVEL. Layernorm 4096x1024's part: optimisation 6.3 ms at O1 against 1.1.
# Code generation at O2/O3 gives softmax's exp loop the same instructions in another
# order (softmax 64x8192, 2 threads: 1.3-1.5 % slower), as do -misched=ilpmax/ilpmin,
# -misched-prera-direction=topdown and -enable-misched=false (1 thread: 1.029, 1.015,
# 1.001, 1.005; benchmarks/row_ab.py). The out-of-order core hides the order: the
# loop is bound by its multiply-adds (per 64 elements 48, of the exp and the divide, on
# one pair of pipes; vaddps, vmaxps, vcvtdq2ps and vscalefps issue on the other pair on
# this Zen 4: benchmarks/vector_ops.py).
LEAN_ROWS = True
ROW_SLP = False
ROW_CODEGEN_LEVEL = 1
ROW_BRIEF_OPTIONS = True
_host = None


def host():
    """(target, cpu name, features, triple), initialised once."""
    global _host
    if _host is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # Full unrolling of constant-trip loops is most of O3's time on kernel-heavy
        # modules (BERT step: 17 s at LLVM's 300, 14 s at 100, same run time); process-wide.
        llvm.set_option("", f"-unroll-threshold={UNROLL_THRESHOLD}")
        compile_threads.OPTIONS_LOCK.initial()
        triple = llvm.get_process_triple()
        _host = (llvm.Target.from_triple(triple), llvm.get_host_cpu_name(),
                 llvm.get_host_cpu_features().flatten(), triple)
    return _host


def target_machine(opt: int = 3):
    target, cpu, feats, _ = host()
    return target.create_target_machine(cpu=cpu, features=feats, opt=opt, jit=True)


_compiling = threading.local()


def compile_machine(opt: int = 3):
    """This thread's target machine for optimising and emitting objects, made once: its
    X86 subtarget (parsing the host's feature string) costs ~0.6 ms, about 3 % of a
    one-kernel module's compile. Not for an engine, which takes ownership of its own."""
    tms = getattr(_compiling, "tms", None)
    if tms is None:
        tms = _compiling.tms = {}
    tm = tms.get(opt)
    if tm is None:
        tm = tms[opt] = target_machine(opt)
    return tm


class Lowered:
    """The LLVM module of one HLO module and what the runtime needs to call it."""

    def __init__(self, ir_text: str, arena: int, entry_comp, sites=(), parts=None, slp=None,
                 brief=None, levels=None, codegen=None):
        self.ir_text = ir_text
        self.parts = list(parts) if parts else [ir_text]    # what compiles, one object each
        self.slp = list(slp) if slp is not None else [True] * len(self.parts)   # per part
        # per part: every loop in it runs briefly (compile_threads.BRIEF_OPTIONS)
        self.brief = list(brief) if brief is not None else [False] * len(self.parts)
        # per part: LLVM's level for it (optimiser and code generation), None: the options'
        self.levels = list(levels) if levels is not None else [None] * len(self.parts)
        # per part: the level of its code generation, None: its level's
        self.codegen = list(codegen) if codegen is not None else [None] * len(self.parts)
        self.ahead = None                # compile_threads.Ahead compiling the first parts
        self.units = 0                   # the first `units` parts are the units' own
        self.arena = arena
        self.entry_comp = entry_comp
        self.sites = list(sites)         # profiled kernel sites (hloc.backend.profile)

    def settings(self, options: Options) -> list[tuple]:
        """Per part: (SLP on, brief options, level, code-generation level), levels as
        compiled (hloc.backend.compile_threads.compile_all's arguments)."""
        return resolved(zip(self.slp, self.brief, self.levels, self.codegen), options)


def resolved(settings, options: Options) -> list[tuple]:
    """`part_plan`'s settings with their levels as compiled: level None is the options',
    code generation None the part's level."""
    out = []
    for slp, brief, level, cg in settings:
        level = options.opt_level if level is None else level
        out.append((slp, brief, level, level if cg is None else cg))
    return out


def _brief_names(fns: Functions, mcx) -> set:
    """Functions whose loops all run briefly (the entry wrapper and the thread runtime's
    call, hloc.backend.parallel, have no loop)."""
    brief = {n for n, b in fns.brief.items() if b} | {ENTRY}
    wrapper = mcx._decls.get("hloc.parallel")
    return brief | ({wrapper.name} if wrapper is not None else set())


def _row_part(fns: Functions, members: set, brief: set) -> bool:
    """Whether a part holds row-group kernels and otherwise only brief functions."""
    return bool(members & fns.rows) and members <= brief | fns.rows


def _lean_part(fns: Functions, members: set) -> bool:
    """Whether a part holds explicit vector row kernels (hloc.backend.row_vector) and
    otherwise only functions without loops or left unoptimised (optnone)."""
    if not members & fns.explicit:
        return False
    for f in fns.mcx.module.functions:
        if f.name in members and f.name not in fns.explicit and not f.is_declaration \
                and "optnone" not in f.attributes and has_loop(f):
            return False
    return True


def _cheap_options(fns: Functions, members: set, brief: set) -> bool:
    """Whether a part may compile under compile_threads.BRIEF_OPTIONS."""
    return members <= brief or (ROW_BRIEF_OPTIONS and _row_part(fns, members, brief))


def _part_settings(fns: Functions, members: set, brief: set, options: Options):
    """(SLP on, level, code-generation level) of a part: SLP_MAX_INSTRUCTIONS,
    BRIEF_LEVEL, ROW_SLP and ROW_CODEGEN_LEVEL."""
    large = any(fns.weight(f) > SLP_MAX_INSTRUCTIONS for f in fns.fns.values()
                if f.name in members)
    if LEAN_ROWS and options.opt_level > 0 and _lean_part(fns, members):
        return False, compile_threads.LEAN, min(options.opt_level, BRIEF_LEVEL)
    if members <= brief:
        return not large, min(options.opt_level, BRIEF_LEVEL), None
    if _row_part(fns, members, brief):
        cg = None if ROW_CODEGEN_LEVEL is None else min(options.opt_level, ROW_CODEGEN_LEVEL)
        return ROW_SLP and not large, None, cg
    return not large, None, None


def unit_settings(fns: Functions, members: set, options: Options):
    """(SLP on, brief options, level, code-generation level) of a unit's own part
    (hloc.backend.partition.unit_part), compiled by itself: `part_plan`'s rules."""
    brief = _brief_names(fns, fns.mcx)
    slp, level, cg = _part_settings(fns, members, brief, options)
    return slp, _cheap_options(fns, members, brief), level, cg


def collect_units(fns: Functions, options: Options, roots=(ENTRY,), pending=None):
    """Have `fns` make the part of each unit (hloc.backend.partition.unit_part, with
    `unit_settings`) as soon as its code is complete; `pending` (compile_threads.Ahead):
    start compiling it there. Returns (made, printed), filled while `fns` compiles:
    `part_plan`'s `units` and `printed`. The JIT's (`lower`) and the AOT library's
    (hloc.aot.lower) units; only where compile_threads.available(), as `lower` plans them."""
    mcx = fns.mcx
    made, printed = [], {}                # units' (name, text, members, settings); texts printed

    def on_unit(fn):
        got = partition.unit_part(mcx.module, fn, printed, roots=roots)
        if got is None:
            return
        text, members = got
        settings = slp, cheap, level, cg = unit_settings(fns, members, options)
        level = options.opt_level if level is None else level
        if pending is not None:
            pending.submit(len(made), text, level, slp, cheap, level if cg is None else cg)
        made.append((fn.name, text, members, settings))
    fns.on_unit = on_unit
    return made, printed


def part_plan(fns: Functions, options: Options, roots=(ENTRY,), units=(), printed=None):
    """The parts LLVM compiles the module of `fns` as, with their settings: (the
    partition.Split, [(SLP on, brief options, level, code-generation level)] per part;
    level None: the options', code generation None: the part's level). `roots`: functions
    that stay external (looked up by name); `units`: (name, text, members, settings) of
    the parts made ahead (`collect_units`, `unit_settings`), used first. The one plan of
    the JIT (`lower`), `hloc emit-llvm` (hloc.backend.llvm_parts, from `lower`'s parts)
    and the AOT library (hloc.aot: the same parts and settings for its code module, with
    the entry computation as root instead of ENTRY and no unit of it, plus a glue part
    planned there)."""
    mcx = fns.mcx
    sp = partition.split(mcx.module, PART_BYTES, MAX_PARTS, roots=roots,
                         units=[u[:3] for u in units], printed=printed)
    units = list(units)[:sp.units]
    # A module whose functions all run their loops briefly compiles the cheaper way. All
    # parts or none (but units, compiled ahead, each by its own): brief and other parts
    # compile in separate phases (the option is process-wide), which would leave a core
    # idle (CNN step: 341 ms alone, then 95 and 141 ms side by side, against 341 beside
    # 236 in one phase).
    brief = _brief_names(fns, mcx)
    rest = sp.members[len(units):]
    every = all(_cheap_options(fns, m, brief) for m in rest)
    return sp, [u[3] for u in units] + [
        (slp, every, level, cg) for slp, level, cg in (_part_settings(fns, m, brief, options)
                                                       for m in rest)]


@gc_paused
def lower(module, options: Options, share_kernels: bool = True, ahead: bool = False,
          units: bool | None = None) -> Lowered:
    """`share_kernels`: identical kernels compile once (hloc.backend.dedup); the code
    computes the same either way. `ahead`: a unit's part (hloc.backend.partition) starts
    compiling on a thread of its own as soon as its code is complete (`compile_objects`
    takes its object over); its object is the same either way. `units` (default: as
    `ahead`): the units get parts of their own, as with `ahead`, even where nothing
    compiles ahead (`hloc emit-llvm`: the parts the JIT compiles)."""
    from .expand import for_codegen
    module = for_codegen(module)          # batch-norm expanded, as XLA:CPU always does
    _, _, feats, triple = host()
    # the data layout of this thread's machine (kept: a new one costs 0.15 ms per compile)
    mcx = ModuleContext(module.name, options, triple, str(compile_machine().target_data))
    mcx.features = feats                  # the target's, for code that depends on them
    fns = Functions(mcx, share_kernels)
    planned = (ahead if units is None else units) and compile_threads.available()
    pending = compile_threads.Ahead(compile_machine) if ahead and planned else None
    made, printed = collect_units(fns, options, (ENTRY,), pending) if planned else ([], {})
    donated = alias_leaves(module, options.donate)
    fns.donated = (module.entry, donated)
    try:
        entry = fns.compile(module.entry)
    except BaseException:
        if pending is not None:
            pending.close()               # what it has started finishes, unused
        raise
    wrapper = ir.Function(mcx.module, ir.FunctionType(VOID, [PTR, PTR, PTR]), name=mcx.fixed(ENTRY))
    for a, n in zip(wrapper.args, ("params", "outs", "temp")):
        a.name = n
    b = ir.IRBuilder(wrapper.append_basic_block("entry"))
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    if options.xla and x86:
        st = mcx.intrinsic("llvm.x86.sse.stmxcsr", VOID, [I32.as_pointer()])
        ld = mcx.intrinsic("llvm.x86.sse.ldmxcsr", VOID, [I32.as_pointer()])
        old, new = b.alloca(I32, name="mxcsr.old"), b.alloca(I32, name="mxcsr.ftz")
        b.call(st, [old])
        b.store(b.or_(b.load(old), ir.Constant(I32, 0x8040)), new)   # FTZ | DAZ
        b.call(ld, [new])
        b.call(entry, list(wrapper.args))
        b.call(ld, [old])
    else:
        b.call(entry, list(wrapper.args))
    b.ret_void()
    sites = mcx.profiler.sites if mcx.profiler is not None else []
    sp, settings = part_plan(fns, options, (ENTRY,), made, printed)
    if sp.units != len(made) and pending is not None:   # the module could not be split
        pending.close()
        pending = None
    lowered = Lowered(sp.text, fns.arena(module.entry), module.entry, sites, sp.parts,
                      *([s[k] for s in settings] for k in range(4)))
    lowered.ahead = pending               # compiling the first `units` parts
    lowered.units = sp.units
    lowered.kernels_merged = fns.kernels.merged if fns.kernels is not None else 0
    lowered.calls_runtime = "hloc.parallel" in mcx._decls      # the thread runtime's entry
    inplace = fns.plans[id(module.entry)].inplace
    # (out leaf, param leaf, kind, whether the output lives in the parameter's buffer)
    lowered.donated = [(j, i, kind, j in inplace) for j, i, kind in donated]
    mcx.release()                         # freed by reference counting (context.gc_paused)
    return lowered


class NativeCode:
    """Loaded object code; holds the engine as long as the entry address is used."""

    def __init__(self, engine, address: int, objects: list[bytes], calls=frozenset()):
        self.engine = engine
        self.libraries = runtime.handles()      # what the code's resolved symbols point into
        self.address = address
        self.objects = objects
        self.calls = frozenset(calls)           # the runtime-table symbols the code calls

    @property
    def obj(self) -> bytes:
        """The object code of a module compiled as one part."""
        if len(self.objects) != 1:
            raise ValueError(f"the module compiled as {len(self.objects)} objects (see .objects)")
        return self.objects[0]


_sources_digest = None


def sources_digest() -> str:
    """sha256 over hloc's own Python sources (every file under the package): any change
    to how code is generated, anywhere in hloc, is a different cache key."""
    global _sources_digest
    if _sources_digest is None:
        import hashlib
        from pathlib import Path
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0")
            h.update(path.read_bytes())
        _sources_digest = h.hexdigest()
    return _sources_digest


def module_key(module_text: str, options: Options, pipeline: str) -> str:
    """The object-cache key of an HLO module: its text (before `pipeline`, the HLO passes
    that run on a miss), the options, the host and every version that decides the code —
    so a hit needs neither the HLO passes nor LLVM IR generation; the back end's
    module-level settings as they are now (hloc.backend.settings), so an object compiled
    under others is never loaded."""
    from . import settings
    _, cpu, feats, triple = host()
    return cache_key(module_text, pipeline, options.key(), cpu, feats, triple, __version__,
                     sources_digest(), llvmlite.__version__,
                     ".".join(map(str, llvm.llvm_version_info)), settings.text())


def compile_threads_default() -> int:
    """Threads LLVM compiles on: the cores this process may use."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else (os.cpu_count() or 1)


def compile_objects(lowered: Lowered, options: Options, threads: int | None = None,
                    stats=None) -> list[bytes]:
    """Optimised object code of a lowered module, one object per part, compiled on
    `threads` threads (None: every core) and checked against the runtime table;
    `stats` (compile_threads.Stats) collects seconds per LLVM phase."""
    threads = compile_threads_default() if threads is None else threads
    _, _, levels, codegen = zip(*lowered.settings(options))
    ahead, lowered.ahead = lowered.ahead, None
    n = len(lowered.parts)
    todo = list(range(n))
    if ahead is not None:                 # the parts it has not started are compiled here
        left = set(ahead.close())
        todo = [k for k in todo if k >= lowered.units or k in left]
    pick = lambda xs: [xs[k] for k in todo]   # noqa: E731
    objs = dict(zip(todo, compile_threads.compile_all(
        pick(lowered.parts), compile_machine, options.opt_level, threads, stats,
        pick(lowered.slp), pick(lowered.brief), pick(levels), pick(codegen))))
    if ahead is not None:
        objs.update(ahead.wait())
        if stats is not None:
            for phase, s in ahead.stats.seconds.items():
                stats.seconds[phase] += s
    objs = [objs[k] for k in range(n)]
    runtime.check_objects(objs)
    return objs


def engine_of(objs: list[bytes]):
    """An MCJIT engine holding `objs` alone, relocated and ready. MCJIT is made with a
    module, which its `finalize_object` would put through code generation even empty
    (0.5 ms of every load, a cache hit's too): the empty one is taken back out, so the
    engine only loads and relocates. Its target machine then generates nothing: a generic
    one for the host's triple (0.02 ms, against 0.14 for one with the host's CPU and
    features; MCJIT takes ownership of it, so one per engine)."""
    empty = llvm.parse_assembly("")
    engine = llvm.create_mcjit_compiler(empty, host()[0].create_target_machine(jit=True))
    engine.remove_module(empty)
    for obj in objs:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine


def load(objs: list[bytes], options: Options, cache_dir=None) -> NativeCode:
    """Objects into a new engine; the thread runtime first, when they call it
    (hloc.backend.threadpool_jit, its object from the cache in `cache_dir` when there)."""
    calls = runtime.check_objects(objs)
    if calls & runtime.THREAD_RUNTIME:
        from . import threadpool_jit
        threadpool_jit.install(cache_dir)
    engine = engine_of(objs)
    addr = engine.get_function_address(ENTRY)
    if not addr:
        raise RuntimeError("compiled module has no entry function")
    return NativeCode(engine, addr, list(objs), calls)
