"""The JIT's copy of the thread runtime (hloc.backend.threadpool): once per process.

`install(cache_dir)` compiles the runtime module for the host (or loads its object from
the on-disk object cache), checks the object's undefined symbols (the C library's thread
and futex functions only, hloc.backend.runtime.RUNTIME_LIBC), loads it into an MCJIT
engine of its own and registers the entries with LLVM under their fixed names
(runtime.register), before the first module that calls them is loaded
(hloc.backend.jit.load). The engine is never freed, not even at interpreter shutdown
(llvmlite disposes nothing then either): pool workers sleep inside its code for the
rest of the process, so that code is never unmapped while one can run it; process exit
ends them. A cached object is safe to load: its key holds the digest of hloc's sources
(hloc.backend.jit.sources_digest: the runtime's code and everything that emits it), its
settings (spins, level: hloc.backend.settings.RUNTIME), the target (triple, CPU name,
features) and the llvmlite and LLVM versions, which is everything that decides the
object (the cache itself refuses a truncated or altered entry, hloc.backend.cache), and
it passes the same symbol check as a fresh one. A hit costs no IR generation (~3.5 ms of Python) and no code generation.
"""
from __future__ import annotations

import os
import sys
import threading
import time

from . import threadpool
from .threadpool import ENTRY, STOP

# LLVM's code-generation level for the runtime, which is not optimised: its loops are an
# atomic add and an indirect call per work group, or a spin with a pause, nothing O2
# makes faster; O2 took 60 ms of CPU to compile it here, code generation at 0 about 5.
LEVEL = 0

_lock = threading.Lock()
_start = threading.Lock()
_ahead = None                # the thread of install_ahead, once started
_installed: dict = {}        # entry name -> address, once loaded
_keep: list = []             # the engine holding the code: never freed (workers run it)
_origin: list = []           # "compiled" or "cache"


def _before_fork() -> None:
    """os.fork waits (bounded: the wait might be on the forking thread itself) for an
    install under way: install_ahead's thread to its end, whoever holds `_lock` to its
    release; then for compile_threads.OPTIONS_LOCK's own lock (a thread setting LLVM's
    options) and llvmlite's lock (any thread in a locked LLVM call, such as one
    disposing of the install's LLVM objects), in the order those threads take them. The
    child has none of those threads: it would inherit a lock held for good, or compiles
    counted that never end, and hang at its first install or LLVM call."""
    deadline = time.monotonic() + FORK_WAIT

    def left():
        return max(0.0, deadline - time.monotonic())
    ahead = _ahead
    if ahead is not None and ahead is not threading.current_thread():
        ahead.join(FORK_WAIT)
    got = _lock.acquire(timeout=left())
    options = _options_lock()
    options = options if options is not None and options.hold_for_fork(left()) else None
    llvm_lock = _llvm_lock()
    held = llvm_lock is not None and llvm_lock.acquire(timeout=left())
    _fork_held.append((got, options, llvm_lock if held else None))


def _after_fork_parent() -> None:
    got, options, llvm_lock = _fork_held.pop()
    if llvm_lock is not None:
        llvm_lock.release()
    if options is not None:
        options.after_fork(child=False)
    if got:
        _lock.release()


def _after_fork_child() -> None:
    """Fresh locks of our own (whatever the parent's threads held), no install thread (an
    install the parent had not finished is made again by the child's first load),
    OPTIONS_LOCK without the parent's compiles, and llvmlite's lock released where the
    fork took it."""
    global _lock, _start, _ahead
    _, _, llvm_lock = _fork_held.pop()
    if llvm_lock is not None:
        llvm_lock.release()
    options = _options_lock()
    if options is not None:
        options.after_fork(child=True)
    _lock, _start, _ahead = threading.Lock(), threading.Lock(), None


def _options_lock():
    """compile_threads.OPTIONS_LOCK where that module is loaded (nothing to hold before)."""
    mod = sys.modules.get(f"{__package__}.compile_threads")
    return getattr(mod, "OPTIONS_LOCK", None)


def _llvm_lock():
    """llvmlite's process-wide lock around its locked calls (an RLock), if this llvmlite
    has one where 0.50 keeps it."""
    import llvmlite.binding.ffi as ffi
    lock = getattr(getattr(getattr(ffi, "lib", None), "_lock", None), "_lock", None)
    return lock if hasattr(lock, "acquire") and hasattr(lock, "release") else None


FORK_WAIT = 10.0             # seconds os.fork waits at most for an install under way
_fork_held: list = []
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent,
                        after_in_child=_after_fork_child)


def install_ahead(cache_dir=None) -> None:
    """Start `install` on a thread of its own unless it is done or under way: it then
    compiles beside the LLVM compile of the first module that needs it (the Executable
    starts it; its own LLVM work on llvmlite's unlocked calls, compile_threads.compile_one),
    and `install` waits for it when that module is loaded. Not a daemon: interpreter exit waits for it rather than end it inside LLVM."""
    global _ahead
    with _start:
        if _installed or _ahead is not None:
            return
        _ahead = threading.Thread(target=_install_quietly, args=(cache_dir,), name="hloc-runtime")
        _ahead.start()


def _install_quietly(cache_dir) -> None:
    try:
        install(cache_dir)
    except Exception:         # noqa: BLE001  (raised again by the install the load makes)
        pass


def install(cache_dir=None) -> dict:
    """Compile (or load from the object cache in `cache_dir`) and load the runtime once
    per process; register its entries with LLVM. Their addresses by name."""
    with _lock:
        if _installed:
            return _installed
        import llvmlite
        import llvmlite.binding as llvm

        from . import compile_threads, jit, runtime, settings
        from .cache import ObjectCache, cache_key
        _, cpu, feats, triple = jit.host()
        cache = ObjectCache(cache_dir)
        key = None if cache.directory is None else cache_key(
            "hloc-runtime", jit.sources_digest(), triple, cpu, feats,
            settings.text(settings.RUNTIME), llvmlite.__version__,
            ".".join(map(str, llvm.llvm_version_info)))
        obj = cache.get(key) if key is not None else None
        _origin.append("compiled" if obj is None else "cache")
        if obj is None:
            text = threadpool.module_text(triple, str(jit.compile_machine(LEVEL).target_data))
            with compile_threads.OPTIONS_LOCK:
                obj = compile_threads.compile_one(text, lambda: jit.compile_machine(LEVEL), 0,
                                                  compile_threads.available())
            if key is not None:
                cache.put(key, obj)
        runtime.check_runtime_object(obj)
        engine = jit.engine_of([obj])
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
