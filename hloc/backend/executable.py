"""A compiled module ready to call: NumPy arguments in, fresh NumPy results out.

`compile_module(module, ...)` lowers, optimises (or loads from the object cache) and
loads the code once; `Executable.run(args)` calls it as often as wanted. Argument leaves
are passed by pointer without copies when already C-contiguous in the parameter's
physical layout (never written: compiled code writes only its own buffers); results
are never overwritten by a later call: a result buffer is reused only once nothing
outside the Executable refers to it any more (CPython's reference count says so — a
view or a slice keeps its base alive), so steady-state calls whose caller drops the
previous result allocate nothing (a fresh 16 MiB array costs its page faults, several
ms here). `run(args, out=...)` writes into the caller's own arrays instead. The
temporary arena is allocated once and reused; a call made while another thread is
inside the same Executable gets a private arena and fresh results, so concurrent calls
are safe.

Donation is explicit and fixed at compile time: `compile_module(..., donate=(0,))` says
every `run` may overwrite the arguments of those ENTRY parameters (never assumed: a
NumPy caller's array would change under it). For each `input_output_alias` entry of a
donated parameter the result is then the argument's own array, updated in place where
the buffer plan proves it safe (hloc.backend.buffers; a dynamic-update-slice then writes
only its window); where it cannot, the result is computed into its own buffer and, for
must-alias, copied into the argument afterwards (as XLA's copy insertion), for
may-alias returned as a fresh array. A donated argument that cannot be written as it
is (read-only, or overlapping another argument) is copied first, as is one that is not
contiguous in the parameter's layout or not an ndarray (converted anyway); the result
is then that copy. Without donation arguments are never written, must-alias modules included.
`donation` tells, per aliased output leaf, which of these happened.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from dataclasses import astuple

import numpy as np

from ..diagnostics import InputError, UnsupportedError
from ..ir.shape import parse_shape
from ..printer import module_to_text as to_text
from . import blas, runtime, threadpool_jit
from .buffers import ALIGN
from .cache import ObjectCache, pack, unpack
from .collective_calls import device_table
from .compile_threads import Stats
from .context import Options
from .jit import compile_objects, load, lower, module_key
from .loops import minor_to_major
from .parallel import MAX_THREADS, NTHREADS
from .profile import Counters, Site

_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
POOL = 3            # result buffers kept per output leaf
PLACE_BYTES = 1 << 20   # results this large are placed like their largest argument (_new_result)
PAGE = 4096


def _unused(pool: list, k: int) -> bool:
    """Whether nothing but `pool` refers to pool[k] (the list's reference + the call's)
    or to the buffer it views (a placed result, _new_result: NumPy links every view of
    it, the caller's and run()'s transposes, to that buffer, not to pool[k])."""
    if sys.getrefcount(pool[k]) != 2:
        return False
    base = pool[k].base
    return base is None or sys.getrefcount(base) == 3      # pool[k]'s link, `base`, the call's


def _new_result(spec, args: list) -> np.ndarray:
    """A new result array. One of PLACE_BYTES or more starts at the largest argument's
    offset in a 4 KiB page (rounded down to its item size): a streaming kernel reads an
    argument's element and writes the result's in the same iteration, and its speed
    depends on where the two lie relative to each other, which NumPy leaves to glibc
    (large arrays 16 bytes into a page, or anywhere in the heap once a large array was
    freed). At the same offset a load never meets an earlier store's low 12 address bits
    (the 4 KiB aliasing of Intel's and AMD's store buffers) except at its own element,
    which it reads first. Measured here (issue 12, Zen 4, 2 threads, input 16 bytes into
    a page, p25 of 400 calls; benchmarks/row_placement.py): layernorm 4096x1024 0.46 ms at
    the input's offset, 0.57-0.63 ms 64-byte aligned; softmax 512x8192 0.86-0.92 ms at
    the input's offset, 0.82-0.87 64-byte aligned (the smaller effect: layernorm's rule
    is taken). The same place call after call and process after process, so the time is
    too."""
    dt = np.dtype(spec.dtype)
    nbytes = dt.itemsize * spec.size
    ref = max((a for a in args if a.nbytes >= PLACE_BYTES), key=lambda a: a.nbytes, default=None)
    if nbytes < PLACE_BYTES or ref is None:
        return np.empty(spec.phys_dims, spec.dtype)
    offset = ref.ctypes.data % PAGE
    offset -= offset % dt.itemsize
    raw = np.empty(nbytes + PAGE, np.uint8)
    at = (offset - raw.ctypes.data) % PAGE
    return raw[at:at + nbytes].view(dt).reshape(spec.phys_dims)


def _leaf_shapes(shape):
    return [s for s in shape.leaves()]


def _phys_dims(shape) -> tuple:
    return tuple(shape.dims[d] for d in reversed(minor_to_major(shape)))


def _address(a: np.ndarray) -> int:
    """The data address of a C-contiguous array (c_char.from_buffer is ~3x faster than
    .ctypes.data; read-only arrays export no writable buffer)."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.ctypes.data


class _Spec:
    """What a call needs to know of one array leaf, computed once."""
    __slots__ = ("shape", "dtype", "dims", "size", "perm", "inv", "phys_dims")

    @staticmethod
    def of(shape):
        if not shape.dtype.is_array:
            return None
        sp = _Spec()
        sp.shape, sp.dtype, sp.dims, sp.size = shape, shape.dtype.np, tuple(shape.dims), shape.size
        perm = tuple(reversed(minor_to_major(shape)))
        ident = perm == tuple(range(len(perm)))
        sp.perm = None if ident else perm
        sp.inv = None if ident else tuple(int(i) for i in np.argsort(perm))
        sp.phys_dims = _phys_dims(shape)
        return sp


def _flatten(value, shape, out):
    if shape.is_tuple:
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise InputError("value does not match a tuple shape")
        for v, s in zip(value, shape.elements):
            _flatten(v, s, out)
    else:
        out.append((value, shape))


class Executable:
    """Compile once, call many times."""

    def __init__(self, module, options: Options, cache_dir=None, threads: int | None = None,
                 pipeline=None):
        """`pipeline`: None, or (name, fn) where fn(module) runs HLO passes in place before
        lowering; on an object-cache hit (keyed on the text before them, and `name`)
        neither the passes nor LLVM IR generation run."""
        if type(self) is Executable and device_table(module):
            # Its collectives would call the device runtime with no device run under way.
            raise UnsupportedError("unsupported: a module with collectives compiles to a "
                                   "DeviceExecutable (hloc.backend.compile_module picks it)")
        self.module = module
        self.options = options
        t0 = time.perf_counter()
        cache = ObjectCache(cache_dir)
        name, prepare = pipeline or ("", None)
        key = module_key(to_text(module), options, name) if cache.directory is not None else None
        payload = cache.get(key) if key is not None else None
        entry = unpack(payload) if payload is not None else None
        objs = _split_objects(entry[1], entry[0].get("objects")) if entry is not None else None
        self.lowered = None
        # seconds per compile phase (benchmarks/run.py --compile-breakdown)
        times = self.compile_times = {"key_lookup": time.perf_counter() - t0}
        if objs is None:                 # a miss (or an entry that does not hold its objects)
            t = time.perf_counter()
            if prepare is not None:
                prepare(module)
            times["hlo_passes"] = time.perf_counter() - t
            t = time.perf_counter()
            self.lowered = lowered = lower(module, options, ahead=True)
            times["ir_gen"] = time.perf_counter() - t
            t = time.perf_counter()
            if lowered.calls_runtime:    # the thread runtime (once per process) compiles
                threadpool_jit.install_ahead(cache_dir)      # beside this module's LLVM
            stats = Stats()
            objs = compile_objects(lowered, options, stats=stats)
            times["llvm"] = time.perf_counter() - t
            times.update({f"llvm_{k}_sum": v for k, v in stats.seconds.items()})
            times["parts"] = len(objs)
            ent = module.entry
            meta = {"arena": lowered.arena, "objects": [len(o) for o in objs],
                    "donated": [list(d) for d in lowered.donated],
                    "params": [str(p.shape) for p in sorted(ent.parameters, key=lambda p: p.parameter_number)],
                    "result": str(ent.root.shape),
                    "sites": [list(astuple(s)) for s in lowered.sites]}
            if key is not None:
                cache.put(key, pack(meta, b"".join(objs)))
        else:
            meta = entry[0]
        self.cache_hit = self.lowered is None
        t = time.perf_counter()
        self.code = load(objs, options, cache_dir)
        times["load"] = time.perf_counter() - t
        self.compile_s = time.perf_counter() - t0
        self.arena_bytes = meta["arena"]
        self.param_shapes = [parse_shape(t) for t in meta["params"]]
        self.result_shape = parse_shape(meta["result"])
        self._fn = _ENTRY_T(self.code.address)
        self.threads = self.set_threads(threads)
        self._arena_raw, self._arena = self._new_arena()
        self._busy = threading.Lock()
        self._out_leaves = _leaf_shapes(self.result_shape)
        self._out_specs = [_Spec.of(s) for s in self._out_leaves]
        self._in_specs = [_Spec.of(s) for p in self.param_shapes for s in p.leaves()]
        self._flat_params = not any(p.is_tuple for p in self.param_shapes)
        # (out leaf, param leaf, kind, in place) of each donated alias (hloc.backend.buffers)
        self._donated = [tuple(d) for d in meta.get("donated", ())]
        # OpenBLAS follows `threads` during calls of code that calls it (hloc.backend.blas)
        self._blas = blas.threads() if self.code.calls & (runtime.BLAS | runtime.LAPACK) else None
        self._pool: list[list] = [[] for _ in self._out_leaves]
        self._pool_addr: list[list] = [[] for _ in self._out_leaves]
        self.counters = Counters(self.code.engine, [Site(*s) for s in meta["sites"]]) \
            if options.profile else None

    @property
    def splits_kernels(self) -> bool:
        """Whether some kernel is split over threads (the module has the work-group runtime)."""
        return bool(self.code.engine.get_global_value_address(NTHREADS))

    def profile(self) -> list[dict]:
        """Per-kernel totals since compile or the last `reset_profile()` (profiled
        executables only: `Options(profile=True)`), slowest first."""
        if self.counters is None:
            raise ValueError("this executable was compiled without profiling")
        return self.counters.rows()

    def reset_profile(self) -> None:
        if self.counters is not None:
            self.counters.reset()

    @property
    def donation(self) -> list[dict]:
        """Per donated alias: output and parameter leaf, kind, and whether the output is
        computed in the parameter's buffer ("in place") or its own ("copy" for
        must-alias: copied into the argument after the call; "fresh" for may-alias)."""
        return [{"output_leaf": j, "param_leaf": i, "kind": k,
                 "placement": "in place" if ip else ("copy" if k == "must-alias" else "fresh")}
                for j, i, k, ip in self._donated]

    @property
    def memory_bytes(self) -> dict:
        """Bytes the executable owns: its temporary arena and the pooled result buffers."""
        pooled = sum((a if a.base is None else a.base).nbytes for pool in self._pool for a in pool)
        return {"arena": int(self.arena_bytes), "result_pool": int(pooled)}

    def set_threads(self, threads: int | None) -> int:
        """Threads large kernels are split over (None: the cores this process may use).
        Results do not depend on it (hloc.backend.parallel)."""
        if threads is None:
            affinity = getattr(os, "sched_getaffinity", None)
            threads = len(affinity(0)) if affinity else (os.cpu_count() or 1)
        threads = max(1, min(int(threads), MAX_THREADS))
        addr = self.code.engine.get_global_value_address(NTHREADS)
        if addr:                 # absent when the module has no kernel large enough to split
            ctypes.c_int64.from_address(addr).value = threads
        self.threads = threads
        return threads

    def _new_arena(self):
        raw = np.empty(self.arena_bytes + ALIGN, np.uint8)
        base = raw.ctypes.data
        return raw, base + (-base) % ALIGN

    def run(self, args: list, out=None):
        """The results for `args` (one value per ENTRY parameter; tuples for tuple
        parameters). With `out` (arrays shaped like the results, tuples for tuples),
        the results are written there and those arrays are returned."""
        if self._flat_params and len(args) == len(self._in_specs):
            leaves = args
        else:
            flat = []
            for v, s in zip(args, self.param_shapes):
                _flatten(v, s, flat)
            leaves = [v for v, _ in flat]
        keep = []
        p_arr = (ctypes.c_void_p * max(len(self._in_specs), 1))()
        phys = {} if self._donated else None
        for k, (v, spec) in enumerate(zip(leaves, self._in_specs)):
            if spec is None:
                continue
            a = v if type(v) is np.ndarray else np.asarray(v)
            if a.dtype != spec.dtype or a.shape != spec.dims:
                raise InputError(f"argument of type {a.dtype}{list(a.shape)} does not match "
                                 f"parameter {spec.shape}")
            if spec.perm is not None:
                a = a.transpose(spec.perm)
            if not a.flags.c_contiguous:
                a = np.ascontiguousarray(a)
            keep.append(a)
            if phys is not None:
                phys[k] = a
            if spec.size:
                p_arr[k] = _address(a)
        given = self._donated_arrays(phys, p_arr, out) if phys is not None else None
        old = self._blas.enter(self.threads) if self._blas is not None else None
        try:
            if self._busy.acquire(blocking=False):
                try:
                    outs, o_arr = self._outputs(out, pooled=True, args=keep, given=given)
                    self._fn(ctypes.addressof(p_arr), ctypes.addressof(o_arr), self._arena)
                finally:
                    self._busy.release()
            else:
                outs, o_arr = self._outputs(out, pooled=False, args=keep, given=given)
                raw, arena = self._new_arena()
                self._fn(ctypes.addressof(p_arr), ctypes.addressof(o_arr), arena)
                del raw
        finally:
            if old is not None:
                self._blas.exit(old)
        del keep
        if given:
            outs = self._donated_results(outs, given)
        results = []
        for o, spec in zip(outs, self._out_specs):
            if spec is None:
                from ..interp.core import TOKEN
                results.append(TOKEN)
            else:
                results.append(o if spec.inv is None else o.transpose(spec.inv))
        return _unflatten(results, self.result_shape)

    def _donated_arrays(self, phys: dict, p_arr, out) -> dict:
        """out leaf -> the donated argument array (physical order) its result goes to,
        replacing in `phys`/`p_arr` an argument that cannot be written by a copy of it."""
        if out is not None:
            raise InputError("out= cannot be combined with donated parameters")
        given = {}
        for j, i, _kind, _inplace in self._donated:
            a = phys[i]
            if not a.flags.writeable or any(
                    k != i and np.may_share_memory(a, x) for k, x in phys.items()):
                a = a.copy()        # read-only, or overlapping another argument
                phys[i] = a
                if a.size:
                    p_arr[i] = _address(a)
            given[j] = a
        return given

    def _donated_results(self, outs: list, given: dict) -> list:
        outs = list(outs)
        for j, _i, kind, inplace in self._donated:
            if not inplace and kind == "must-alias":
                np.copyto(given[j], outs[j])
            if inplace or kind == "must-alias":
                outs[j] = given[j]
        return outs

    def _outputs(self, out, pooled: bool, args: list, given=None):
        """(arrays, ctypes pointer array): one array per result leaf in its physical
        order — the caller's (`out`), an unused pooled one, or a new one; None for tokens;
        for an output computed in a donated argument (`given`), that argument."""
        arrays = self._caller_outputs(out, args) if out is not None else None
        o_arr = (ctypes.c_void_p * max(len(self._out_specs), 1))()
        if arrays is not None:
            for k, a in enumerate(arrays):
                if a is not None and a.size:
                    o_arr[k] = _address(a)
            return arrays, o_arr
        arrays = []
        for k, spec in enumerate(self._out_specs):
            if spec is None:
                arrays.append(None)
                continue
            if given and k in given and self._inplace(k):
                arrays.append(given[k])     # the code writes it through the param pointer
                continue
            pool = self._pool[k] if pooled else []
            j = next((j for j in range(len(pool)) if _unused(pool, j)), None)
            if j is None:
                a = _new_result(spec, args)
                addr = _address(a) if spec.size else None
                if pooled and len(pool) < POOL:
                    pool.append(a)
                    self._pool_addr[k].append(addr)
            else:
                a, addr = pool[j], self._pool_addr[k][j]
            arrays.append(a)
            if addr:
                o_arr[k] = addr
        return arrays, o_arr

    def _inplace(self, k: int) -> bool:
        return any(j == k and ip for j, _i, _kind, ip in self._donated)

    def _caller_outputs(self, out, args: list) -> list:
        leaves = []
        _flatten(out, self.result_shape, leaves)
        arrays = []
        for a, s in leaves:
            if not s.dtype.is_array:
                arrays.append(None)
                continue
            if not isinstance(a, np.ndarray) or a.dtype != s.dtype.np or a.shape != tuple(s.dims):
                raise InputError(f"out= array does not match result {s}")
            perm = tuple(reversed(minor_to_major(s)))
            phys = a if perm == tuple(range(a.ndim)) else a.transpose(perm)
            if not (phys.flags.c_contiguous and phys.flags.writeable):
                raise InputError(f"out= array for result {s} must be writeable and contiguous "
                                 f"in the result's layout")
            if any(np.may_share_memory(phys, x) for x in args + arrays if x is not None):
                raise InputError(f"out= array for result {s} overlaps an argument or another result")
            arrays.append(phys)
        return arrays


def _split_objects(blob: bytes, sizes) -> list[bytes] | None:
    """The objects a cache payload holds back to back (`sizes` from its header)."""
    if not isinstance(sizes, list) or sum(sizes) != len(blob) or not sizes:
        return None
    out, at = [], 0
    for n in sizes:
        out.append(blob[at:at + n])
        at += n
    return out


def _unflatten(leaves: list, shape):
    """Leaves back into `shape`'s nesting (no closure cycle: the leaves must be freed as
    soon as the caller drops them, for the result pool)."""
    if not shape.is_tuple:
        return leaves[0]
    return _build(iter(leaves), shape)


def _build(it, shape):
    if shape.is_tuple:
        return tuple(_build(it, e) for e in shape.elements)
    return next(it)
