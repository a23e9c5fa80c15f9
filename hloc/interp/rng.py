"""Random numbers: rng, rng-bit-generator and rng-get-and-update-state.

rng-bit-generator is bit-exact with XLA: RngBitGeneratorExpander
(xla/hlo/transforms/expanders/rng_bit_generator_expander.cc) over ThreeFry2x32 and
Philox4x32-10 from xla/hlo/builder/lib/prng.cc. The state is u64[N] with the key in
state[0]; ThreeFry's 64-bit counter is state[1]; Philox's 128-bit counter is
(state[1], state[2]) for N = 3 and (state[1], state[0]) for N = 2 (the expander reverses
the state and keeps only the low word). rng_default is Philox, as on XLA:CPU. 32-bit
ThreeFry output splits the shape in halves (SplitShapeIntoHalves) and interleaves the two
words; Philox output takes the four words of each counter round-robin; types narrower
than 32 bits keep the low bits of the 32-bit output. rng-get-and-update-state follows
the CPU runtime (xla/backends/cpu/runtime/rng_state_thunk.cc): a 128-bit counter per
instruction, starting at 0x7012395, returned as (low, high) and then advanced by delta.
rng (rng_uniform / rng_normal) draws from the interpreter's seeded NumPy generator, as
HloEvaluator draws from its std engine; its numbers are not XLA's.
"""
from __future__ import annotations

import weakref

import numpy as np

from . import numerics as N
from .core import evaluates

_U32 = np.uint32
_U64 = np.uint64
_M32 = _U64(0xFFFFFFFF)
_S32 = _U64(32)
RNG_STATE_INITIAL = 0x7012395


# ---------------------------------------------------------------------------
# Counter-based generators (vectorised over counters; all arithmetic mod 2**32)

def _rotl(v, d: int):
    return (v << _U32(d)) | (v >> _U32(32 - d))


_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(key0, key1, x0, x1):
    """ThreeFry2x32 with 20 rounds (Salmon et al. 2011), as prng.cc's ThreeFry2x32."""
    with np.errstate(all="ignore"):
        ks0, ks1 = np.asarray(key0, _U32), np.asarray(key1, _U32)
        ks = (ks0, ks1, _U32(0x1BD11BDA) ^ ks0 ^ ks1)
        x0 = np.asarray(x0, _U32) + ks[0]
        x1 = np.asarray(x1, _U32) + ks[1]
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = x0 ^ _rotl(x1, r)
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + _U32(i + 1)
        return x0, x1


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32 with 10 rounds (Salmon et al. 2011), as prng.cc's Philox4x32."""
    with np.errstate(all="ignore"):
        c = [np.asarray(v, _U32) for v in (c0, c1, c2, c3)]
        k0, k1 = np.asarray(k0, _U32), np.asarray(k1, _U32)
        for _ in range(10):
            p0 = c[0].astype(_U64) * _U64(0xD2511F53)
            p1 = c[2].astype(_U64) * _U64(0xCD9E8D57)
            c = [(p1 >> _S32).astype(_U32) ^ c[1] ^ k0, (p1 & _M32).astype(_U32),
                 (p0 >> _S32).astype(_U32) ^ c[3] ^ k1, (p0 & _M32).astype(_U32)]
            k0 = k0 + _U32(0x9E3779B9)
            k1 = k1 + _U32(0xBB67AE85)
        return tuple(c)


def _lo_hi(u64):
    u64 = np.asarray(u64, _U64)
    return (u64 & _M32).astype(_U32), (u64 >> _S32).astype(_U32)


def _join(lo, hi):
    return lo.astype(_U64) | (hi.astype(_U64) << _S32)


def split_shape_into_halves(dims: tuple) -> tuple:
    """prng.cc SplitShapeIntoHalves: (half_dims, split_dim); the first even dimension,
    else the first largest one; a scalar splits as [1] (the second half is dropped)."""
    if not dims:
        return (1,), 0
    split = next((i for i, d in enumerate(dims) if d % 2 == 0), None)
    if split is None:
        split = max(range(len(dims)), key=lambda i: (dims[i], -i))
    half = list(dims)
    half[split] = (dims[split] + 1) // 2
    return tuple(half), split


def threefry_bits(key: int, counter: int, dims: tuple, bits: int):
    """(uint64 values of `bits` random bits, new counter) for ThreeFryBitGenerator."""
    dims = tuple(dims)
    k0, k1 = _lo_hi(key)
    size = int(np.prod(dims, dtype=np.int64))
    with np.errstate(all="ignore"):
        if bits == 64:
            c0, c1 = _lo_hi(_U64(counter) + np.arange(size, dtype=_U64))
            y0, y1 = threefry2x32(k0, k1, c0, c1)
            return _join(y0, y1).reshape(dims), (counter + size) % (1 << 64)
        half, split = split_shape_into_halves(dims)
        n = int(np.prod(half, dtype=np.int64))
        c0, c1 = _lo_hi(_U64(counter) + np.arange(n, dtype=_U64))
        y0, y1 = threefry2x32(k0, k1, c0, c1)
    if not dims:
        out = y0.reshape(())
    else:
        hs = half[:split + 1] + (1,) + half[split + 1:]
        out = np.concatenate([y0.reshape(hs), y1.reshape(hs)], axis=split + 1)
        even = list(dims)
        even[split] = 2 * half[split]
        out = out.reshape(even)
        out = out[tuple(slice(0, d) for d in dims)]
    return _low_bits(out, bits), (counter + n) % (1 << 64)


def philox_bits(key: int, lo: int, hi: int, dims: tuple, bits: int):
    """(uint64 values, new counter low word, new high word) for PhiloxBitGenerator."""
    dims = tuple(dims)
    k0, k1 = _lo_hi(key)
    size = int(np.prod(dims, dtype=np.int64))
    words = 2 * size if bits == 64 else size
    nvec = -(-words // 4)
    with np.errstate(all="ignore"):
        ctr_lo = _U64(lo) + np.arange(nvec, dtype=_U64)
        ctr_hi = np.where(ctr_lo < _U64(lo), _U64(hi) + _U64(1), _U64(hi))
        w = philox4x32(*_lo_hi(ctr_lo), *_lo_hi(ctr_hi), k0, k1)
    if bits == 64:
        out = np.stack([_join(w[0], w[1]), _join(w[2], w[3])], axis=1)
    else:
        out = np.stack(w, axis=1).astype(_U64)
    out = _low_bits(out.reshape(-1)[:size].reshape(dims), bits)
    new_lo = (lo + nvec) % (1 << 64)
    new_hi = (hi + (1 if new_lo < lo else 0)) % (1 << 64)
    return out, new_lo, new_hi


def _low_bits(u, bits: int):
    u = np.asarray(u).astype(_U64)
    return u & _U64((1 << bits) - 1) if bits < 64 else u


def rng_bit_generator(algorithm: str, state: np.ndarray, dims: tuple, bits: int):
    """(new state as uint64, uint64 values) for an rng-bit-generator over u64[N] state."""
    s = [int(v) for v in np.asarray(state).astype(_U64).reshape(-1)]
    if algorithm == "rng_default":
        algorithm = "rng_philox"
    if algorithm == "rng_three_fry":
        if len(s) != 2:
            raise N.Unsupported(f"rng_three_fry with a u64[{len(s)}] state")
        values, ctr = threefry_bits(s[0], s[1], dims, bits)
        return np.array([s[0], ctr], _U64), values
    if algorithm != "rng_philox" or len(s) not in (2, 3):
        raise N.Unsupported(f"{algorithm} with a u64[{len(s)}] state")
    lo, hi = (s[1], s[0]) if len(s) == 2 else (s[1], s[2])
    values, lo, hi = philox_bits(s[0], lo, hi, dims, bits)
    return np.array([s[0], lo] if len(s) == 2 else [s[0], lo, hi], _U64), values


# ---------------------------------------------------------------------------
# Evaluations

@evaluates("rng-bit-generator")
def _rng_bit_generator(inst, operands, ctx):
    state_shape, out_shape = inst.shape.elements
    sdt, dt = state_shape.dtype, out_shape.dtype
    if sdt.name not in ("u64", "s64") or state_shape.rank != 1 or dt.kind != "uint" or \
            inst.operands[0].shape.dtype is not sdt:
        raise ctx.unsupported(inst, f"rng-bit-generator from {state_shape} to {out_shape}")
    bits = 32 if dt.bits < 32 else dt.bits
    try:
        state, values = rng_bit_generator(inst.attrs["algorithm"], operands[0], out_shape.dims,
                                          bits)
    except N.Unsupported as e:
        raise ctx.unsupported(inst, f"rng-bit-generator: {e}") from None
    return N.wrap(state, sdt), N.wrap(values, dt)


# Per interpreter, per instruction: the 128-bit state of rng-get-and-update-state.
_STATES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@evaluates("rng-get-and-update-state")
def _rng_get_and_update_state(inst, operands, ctx):
    states = _STATES.setdefault(ctx.interpreter, {})
    s = states.get(id(inst), RNG_STATE_INITIAL)
    states[id(inst)] = (s + int(inst.attrs["delta"])) % (1 << 128)
    return np.array([s & ((1 << 64) - 1), s >> 64], _U64)


def rng_values(gen: np.random.Generator, dist: str, dt, a, b, dims: tuple) -> np.ndarray:
    """Draw `rng` values: uniform in [a, b) (resampling values that round onto b, as
    HloEvaluator does) or normal(mean=a, stddev=b); computed in f64/int64 and cast."""
    dims = tuple(dims)
    if dist == "rng_uniform" and dt.kind in ("int", "uint", "pred"):
        lo, hi = int(a), int(b)
        if hi <= lo:
            raise N.Unsupported(f"rng_uniform over the empty range [{lo}, {hi})")
        w = gen.integers(lo, hi, size=dims, dtype=np.uint64 if dt.kind == "uint" else np.int64)
        return w != 0 if dt.kind == "pred" else N.wrap(w, dt)
    if dt.kind != "float":
        raise N.Unsupported(f"{dist} of {dt.name}")
    lo, hi = float(N.widen(a, dt)), float(N.widen(b, dt))
    if dist == "rng_normal":
        return N.narrow(gen.normal(lo, hi, size=dims).astype(np.float32)
                        if N.is_narrow_float(dt) else gen.normal(lo, hi, size=dims), dt)
    if dist != "rng_uniform" or not lo < hi:
        raise N.Unsupported(f"{dist} over [{lo}, {hi})")
    out = np.empty(dims, dt.np)
    todo = np.ones(dims, bool)
    with np.errstate(all="ignore"):
        while todo.any():
            v = N.narrow(gen.uniform(lo, hi, size=int(todo.sum())), dt)
            out[todo] = v
            w = N.widen(out, dt)
            todo = ~((w >= lo) & (w < hi))
    return out


@evaluates("rng")
def _rng(inst, operands, ctx):
    if len(operands) != 2 or any(np.ndim(v) != 0 for v in operands):
        shapes = ", ".join(str(o.shape) for o in inst.operands)
        raise ctx.unsupported(inst, f"rng takes two scalar operands (a, b), got ({shapes}); "
                                    "the old rng(min, max, shape) form is not HLO any more")
    a, b = (np.asarray(v) for v in operands)
    try:
        return rng_values(ctx.rng, inst.attrs["distribution"], inst.shape.dtype, a, b,
                          inst.shape.dims)
    except N.Unsupported as e:
        raise ctx.unsupported(inst, f"rng: {e}") from None

