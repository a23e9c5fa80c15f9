"""A compiled module ready to call: NumPy arguments in, fresh NumPy results out.

`compile_module(module, ...)` lowers, optimises (or loads from the object cache) and
loads the code once; `Executable.run(args)` calls it as often as wanted. Argument leaves
are passed by pointer without copies when already C-contiguous in the parameter's
physical layout (never written: compiled code writes only its own buffers); results
are new arrays each call, so a result handed out is never overwritten by a later call.
The temporary arena is allocated once and reused; a call made while another thread is
inside the same Executable gets a private arena, so concurrent calls are safe.
"""
from __future__ import annotations

import ctypes
import threading
import time

import numpy as np

from ..diagnostics import InputError
from .buffers import ALIGN
from .cache import ObjectCache
from .context import Options
from .jit import lower, native
from .loops import minor_to_major

_ENTRY_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _leaf_shapes(shape):
    return [s for s in shape.leaves()]


def _physical(arr: np.ndarray, shape) -> np.ndarray:
    """The array's elements in `shape`'s physical order, C-contiguous (a view if possible)."""
    perm = tuple(reversed(minor_to_major(shape)))
    a = arr if perm == tuple(range(arr.ndim)) else arr.transpose(perm)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _flatten(value, shape, out):
    if shape.is_tuple:
        if not isinstance(value, tuple) or len(value) != len(shape.elements):
            raise InputError("argument does not match a tuple parameter")
        for v, s in zip(value, shape.elements):
            _flatten(v, s, out)
    else:
        out.append((value, shape))


class Executable:
    """Compile once, call many times."""

    def __init__(self, module, options: Options, cache_dir=None):
        self.module = module
        self.options = options
        t0 = time.perf_counter()
        self.lowered = lower(module, options)
        self.code, self.cache_hit, _ = native(self.lowered, options, ObjectCache(cache_dir))
        self.compile_s = time.perf_counter() - t0
        self._fn = _ENTRY_T(self.code.address)
        self._arena_raw, self._arena = self._new_arena()
        self._busy = threading.Lock()
        entry = module.entry
        self.param_shapes = [p.shape for p in sorted(entry.parameters, key=lambda p: p.parameter_number)] \
            if hasattr(entry, "parameters") else []
        self.result_shape = entry.root.shape

    def _new_arena(self):
        raw = np.empty(self.lowered.arena + ALIGN, np.uint8)
        base = raw.ctypes.data
        return raw, base + (-base) % ALIGN

    def run(self, args: list):
        leaves = []
        for v, s in zip(args, self.param_shapes):
            _flatten(v, s, leaves)
        keep, ptrs = [], []
        for v, s in leaves:
            if not s.dtype.is_array:
                ptrs.append(None)
                continue
            a = np.asarray(v)
            if a.dtype != s.dtype.np or a.shape != tuple(s.dims):
                raise InputError(f"argument of type {a.dtype}{list(a.shape)} does not match "
                                 f"parameter {s}")
            a = _physical(a, s)
            keep.append(a)
            ptrs.append(a.ctypes.data if a.size else None)
        out_shapes = _leaf_shapes(self.result_shape)
        outs, out_ptrs = [], []
        for s in out_shapes:
            if not s.dtype.is_array:
                outs.append(None)
                out_ptrs.append(None)
                continue
            phys = tuple(s.dims[d] for d in reversed(minor_to_major(s)))
            o = np.empty(phys, s.dtype.np)
            outs.append(o)
            out_ptrs.append(o.ctypes.data if o.size else None)
        p_arr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
        o_arr = (ctypes.c_void_p * max(len(out_ptrs), 1))(*out_ptrs)
        if self._busy.acquire(blocking=False):
            try:
                self._fn(ctypes.addressof(p_arr), ctypes.addressof(o_arr), self._arena)
            finally:
                self._busy.release()
        else:
            raw, arena = self._new_arena()
            self._fn(ctypes.addressof(p_arr), ctypes.addressof(o_arr), arena)
            del raw
        del keep
        results = []
        for o, s in zip(outs, out_shapes):
            if o is None:
                from ..interp.core import TOKEN
                results.append(TOKEN)
                continue
            perm = list(reversed(minor_to_major(s)))
            inv = np.argsort(perm)
            results.append(o if perm == sorted(perm) else o.transpose(inv))
        return _unflatten(results, self.result_shape)


def _unflatten(leaves: list, shape):
    it = iter(leaves)

    def build(s):
        if s.is_tuple:
            return tuple(build(e) for e in s.elements)
        return next(it)
    return build(shape)
