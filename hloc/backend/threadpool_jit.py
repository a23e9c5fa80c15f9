"""The JIT's copy of the thread runtime (hloc.backend.threadpool): once per process.

`install(cache_dir)` compiles the runtime module for the host (or loads its object from
the on-disk object cache), checks the object's undefined symbols (the C library's thread
and futex functions only, hloc.backend.runtime.RUNTIME_LIBC), loads it into an MCJIT
engine of its own and registers the entries with LLVM under their fixed names
(runtime.register), before the first module that calls them is loaded
(hloc.backend.jit.load). The engine is never freed, not even at interpreter shutdown
(llvmlite disposes nothing then either): pool workers sleep inside its code for the
rest of the process, so that code is never unmapped while one can run it; process exit
ends them. A cached object is safe to load: its key holds the runtime's IR text, the
target (triple, CPU name, features), the LLVM level and the llvmlite and LLVM versions,
which is everything that decides the object (the cache itself refuses a truncated or
altered entry, hloc.backend.cache), and it passes the same symbol check as a fresh one.
"""
from __future__ import annotations

import threading

from .threadpool import ENTRY, STOP, module_text

LEVEL = 2                    # LLVM level of the runtime's code

_lock = threading.Lock()
_installed: dict = {}        # entry name -> address, once loaded
_keep: list = []             # the engine holding the code: never freed (workers run it)
_origin: list = []           # "compiled" or "cache"


def install(cache_dir=None) -> dict:
    """Compile (or load from the object cache in `cache_dir`) and load the runtime once
    per process; register its entries with LLVM. Their addresses by name."""
    with _lock:
        if _installed:
            return _installed
        import llvmlite
        import llvmlite.binding as llvm

        from . import compile_threads, jit, runtime
        from .cache import ObjectCache, cache_key
        _, cpu, feats, triple = jit.host()
        tm = jit.compile_machine(LEVEL)
        text = module_text(triple, str(tm.target_data))
        cache = ObjectCache(cache_dir)
        key = cache_key("hloc-runtime", text, triple, cpu, feats, str(LEVEL), llvmlite.__version__,
                        ".".join(map(str, llvm.llvm_version_info)))
        obj = cache.get(key)
        _origin.append("compiled" if obj is None else "cache")
        if obj is None:
            mod = llvm.parse_assembly(text)
            mod.verify()
            with compile_threads.OPTIONS_LOCK:
                pb = compile_threads.pass_builder(tm, LEVEL)
                pb.getModulePassManager().run(mod, pb)
                obj = tm.emit_object(mod)
            cache.put(key, obj)
        runtime.check_runtime_object(obj)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), jit.target_machine(LEVEL))
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        addrs = {name: engine.get_function_address(name) for name in (ENTRY, STOP)}
        if not all(addrs.values()):
            raise RuntimeError("the thread runtime's object lacks its entries")
        _keep.append(engine)
        for name, addr in addrs.items():
            runtime.register(name, addr)
        _installed.update(addrs)
        return _installed


def origin() -> str | None:
    """Where this process's runtime object came from: "compiled", "cache", or None (not
    installed)."""
    return _origin[-1] if _installed else None


def stop() -> None:
    """Stop and join this process's pool workers (the next parallel call starts new ones)."""
    import ctypes
    addr = _installed.get(STOP)
    if addr:
        ctypes.CFUNCTYPE(None)(addr)()
