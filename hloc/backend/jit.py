"""LLVM IR -> native code: the new pass manager, object emission, the object cache, MCJIT.

`lower(module, options)` emits the whole HLO module as one LLVM module (every kernel and
computation function) plus the entry wrapper `hloc_entry(params, outs, temp)`, which in
xla-cpu numerics sets FTZ/DAZ in MXCSR around the call and restores it after.
`optimize(ir_text, options)` runs O3 (SLP on) and returns the optimised module — the
IR that `hloc emit-llvm` prints is exactly what `native(...)` compiles. Object code
is checked against the runtime table before it is loaded, and the engine that owns the
code is kept by the returned `NativeCode` as long as anyone can call into it.
"""
from __future__ import annotations

import platform
import time

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from .. import __version__
from . import runtime
from .cache import ObjectCache, cache_key
from .computation import Functions
from .context import ModuleContext, Options
from .types import I32, PTR, VOID

ENTRY = "hloc_entry"
_host = None


def host():
    """(target, cpu name, features, triple), initialised once."""
    global _host
    if _host is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        triple = llvm.get_process_triple()
        _host = (llvm.Target.from_triple(triple), llvm.get_host_cpu_name(),
                 llvm.get_host_cpu_features().flatten(), triple)
    return _host


def target_machine(opt: int = 3):
    target, cpu, feats, _ = host()
    return target.create_target_machine(cpu=cpu, features=feats, opt=opt, jit=True)


class Lowered:
    """The LLVM module of one HLO module and what the runtime needs to call it."""

    def __init__(self, ir_text: str, arena: int, entry_comp):
        self.ir_text = ir_text
        self.arena = arena
        self.entry_comp = entry_comp


def lower(module, options: Options) -> Lowered:
    from .expand import for_codegen
    module = for_codegen(module)          # batch-norm expanded, as XLA:CPU always does
    _, _, _, triple = host()
    tm = target_machine()
    mcx = ModuleContext(module.name, options, triple, str(tm.target_data))
    fns = Functions(mcx)
    entry = fns.compile(module.entry)
    wrapper = ir.Function(mcx.module, ir.FunctionType(VOID, [PTR, PTR, PTR]), name=ENTRY)
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
    return Lowered(str(mcx.module), fns.arena(module.entry), module.entry)


def optimize(ir_text: str, options: Options):
    """The parsed, verified and optimised llvm ModuleRef."""
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    if options.opt_level > 0:
        tm = target_machine(options.opt_level)
        pto = llvm.PipelineTuningOptions(speed_level=options.opt_level)
        pto.slp_vectorization = True
        pb = llvm.PassBuilder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    return mod


class NativeCode:
    """Loaded object code; holds the engine as long as the entry address is used."""

    def __init__(self, engine, address: int, obj: bytes):
        self.engine = engine
        self.libraries = runtime.handles()      # what the code's resolved symbols point into
        self.address = address
        self.obj = obj


def key_for(ir_text: str, options: Options) -> str:
    _, cpu, feats, triple = host()
    return cache_key(ir_text, options.key(), cpu, feats, triple, __version__,
                     llvmlite.__version__, ".".join(map(str, llvm.llvm_version_info)))


def native(lowered: Lowered, options: Options, cache: ObjectCache) -> tuple[NativeCode, bool, float]:
    """(code, cache hit, seconds) for a lowered module."""
    t0 = time.perf_counter()
    key = key_for(lowered.ir_text, options)
    obj = cache.get(key)
    hit = obj is not None
    if not hit:
        mod = optimize(lowered.ir_text, options)
        obj = target_machine(options.opt_level).emit_object(mod)
    runtime.check_object(obj)
    if not hit:
        cache.put(key, obj)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(options.opt_level))
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    addr = engine.get_function_address(ENTRY)
    if not addr:
        raise RuntimeError("compiled module has no entry function")
    return NativeCode(engine, addr, obj), hit, time.perf_counter() - t0
