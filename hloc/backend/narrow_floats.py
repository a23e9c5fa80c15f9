"""f8 and f4 element types: decode by a 2^bits-entry table, encode by a table of rounding
boundaries, both computed once from ml_dtypes (the interpreter's conversions), so every
format (e5m2, e4m3, e4m3fn, e4m3b11fnuz, e3m4, e5m2fnuz, e4m3fnuz, e8m0fnu, e2m1fn)
rounds exactly as ml_dtypes does — ties, subnormals, overflow to inf/NaN or saturation
included — without per-format bit tricks. Encoding is a branch-free binary search over
the sorted boundaries (the smallest f32 that converts to each next code).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from llvmlite import ir

from .context import ModuleContext
from .types import F32, I8, I32, I64

NARROW = frozenset({"f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4", "f8e5m2fnuz",
                    "f8e4m3fnuz", "f8e8m0fnu", "f4e2m1fn"})


def _key(f):
    """f32 -> int64 total-order key (monotone in the value; -0 < +0)."""
    u = np.asarray(f, np.float32).view(np.int32).astype(np.int64)
    return np.where(u < 0, -(u & 0x7FFFFFFF) - 1, u)


def _unkey(k):
    k = np.asarray(k, np.int64)
    u = np.where(k < 0, (-(k + 1)) | -0x80000000, k).astype(np.int32)
    return u.view(np.float32)


@lru_cache(maxsize=None)
def tables(dt):
    """(decode f32[2^bits], boundaries f32[m], codes u8[m+1], (+NaN code, -NaN code))."""
    n = 1 << dt.bits
    codes = np.arange(n, dtype=np.uint8)
    decode = codes.view(dt.np).astype(np.float32)
    enc = lambda k: int(np.asarray(_unkey([k]), np.float32).astype(dt.np).view(np.uint8)[0])   # noqa: E731
    # Inputs in f32 order give codes in runs; each run's first f32 is found by bisection
    # between adjacent representable values (one code change between them).
    probe = np.concatenate([decode[np.isfinite(decode)], [-np.inf, np.inf]]).astype(np.float32)
    keys = [int(k) for k in np.unique(_key(probe))]
    codes_out, starts = [enc(keys[0])], []
    for a, b in zip(keys[:-1], keys[1:]):
        ca, cb = enc(a), enc(b)
        if ca == cb:
            continue
        while b - a > 1:
            m = (a + b) // 2
            if enc(m) == ca:
                a = m
            else:
                b = m
        starts.append(b)
        codes_out.append(cb)
    bounds = _unkey(np.array(starts, np.int64))
    nan = tuple(int(np.array([v], np.float32).astype(dt.np).view(np.uint8)[0])
                for v in (np.nan, -np.nan))      # NaN keeps its sign where the format can
    return decode, bounds, np.array(codes_out, np.uint8), nan


def _global(module, name, arr, ty):
    name = ModuleContext.fixed(name)      # a family of context.RESERVED: no dump name takes it
    g = module.globals.get(name)
    if g is None:
        at = ir.ArrayType(ty, len(arr))
        g = ir.GlobalVariable(module, at, name=name)
        g.initializer = ir.Constant(at, [ir.Constant(ty, float(v) if ty == F32 else int(v)) for v in arr])
        g.global_constant = True
        g.linkage = "private"
    return g


def decode(b: ir.IRBuilder, dt, raw8):
    table = _global(b.module, f"{dt.name}.decode", tables(dt)[0], F32)
    idx = b.zext(b.and_(raw8, ir.Constant(I8, (1 << dt.bits) - 1)), I64)
    p = b.gep(table, [ir.Constant(I64, 0), idx], source_etype=table.value_type, inbounds=True)
    return b.load(p, typ=F32)


def encode(b: ir.IRBuilder, dt, x):
    _, bounds, codes, nan = tables(dt)
    bt = _global(b.module, f"{dt.name}.bounds", bounds, F32)
    ct = _global(b.module, f"{dt.name}.codes", codes, I8)
    # count of boundaries <= x in total order (f32 keys): binary search, branch-free
    key = _ir_key(b, x)
    m = len(bounds)
    pos = ir.Constant(I64, 0)
    step = 1
    while step * 2 <= m:
        step *= 2
    while step >= 1:
        cand = b.add(pos, ir.Constant(I64, step))
        ok = b.icmp_signed("<=", cand, ir.Constant(I64, m))
        idx = b.select(ok, b.sub(cand, ir.Constant(I64, 1)), ir.Constant(I64, 0))
        bv = b.load(b.gep(bt, [ir.Constant(I64, 0), idx], source_etype=bt.value_type, inbounds=True), typ=F32)
        take = b.and_(ok, b.icmp_signed("<=", _ir_key(b, bv), key))
        pos = b.select(take, cand, pos)
        step //= 2
    code = b.load(b.gep(ct, [ir.Constant(I64, 0), pos], source_etype=ct.value_type, inbounds=True), typ=I8)
    neg = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    nan_code = b.select(neg, ir.Constant(I8, nan[1]), ir.Constant(I8, nan[0]))
    return b.select(b.fcmp_unordered("uno", x, x), nan_code, code)


def _ir_key(b, x):
    u = b.sext(b.bitcast(x, I32), I64)
    neg = b.icmp_signed("<", u, ir.Constant(I64, 0))
    mag = b.and_(u, ir.Constant(I64, 0x7FFFFFFF))
    return b.select(neg, b.sub(ir.Constant(I64, -1), mag), u)
