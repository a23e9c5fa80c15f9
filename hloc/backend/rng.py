"""rng-bit-generator, rng and rng-get-and-update-state as kernel emitters.

rng-bit-generator is bit-exact with the interpreter (XLA's
RngBitGeneratorExpander over prng.cc's Philox4x32-10 and ThreeFry2x32-20).

Every output element computes its own counter block (data parallel; no loop-carried
state), then the new state is written. Philox: element e of a 32-bit output is word
e % 4 of block e // 4 (64-bit: words 2(e%2), 2(e%2)+1 of block e // 2); the 128-bit
counter is (state[1], state[2]) for u64[3] and (state[1], state[0]) for u64[2].
ThreeFry (u64[2] state): 64-bit outputs use block e; 32-bit outputs split the shape in
halves along its first even (else first largest) dimension and interleave the two words.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from ..interp.rng import split_shape_into_halves
from .loops import Index, i64, loop_nest
from .registry import emits_kernel
from .types import I32, I64, storage_type

_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def _c32(v):
    return ir.Constant(I32, v & 0xFFFFFFFF)


def _rotl(b, v, d):
    return b.or_(b.shl(v, _c32(d)), b.lshr(v, _c32(32 - d)))


def _threefry(b, k0, k1, x0, x1):
    ks = (k0, k1, b.xor(b.xor(_c32(0x1BD11BDA), k0), k1))
    x0, x1 = b.add(x0, ks[0]), b.add(x1, ks[1])
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = b.add(x0, x1)
            x1 = b.xor(x0, _rotl(b, x1, r))
        x0 = b.add(x0, ks[(i + 1) % 3])
        x1 = b.add(b.add(x1, ks[(i + 2) % 3]), _c32(i + 1))
    return x0, x1


def _philox(b, c, k0, k1):
    c = list(c)
    for _ in range(10):
        p0 = b.mul(b.zext(c[0], I64), ir.Constant(I64, 0xD2511F53))
        p1 = b.mul(b.zext(c[2], I64), ir.Constant(I64, 0xCD9E8D57))
        hi = lambda p: b.trunc(b.lshr(p, ir.Constant(I64, 32)), I32)   # noqa: E731
        c = [b.xor(b.xor(hi(p1), c[1]), k0), b.trunc(p1, I32),
             b.xor(b.xor(hi(p0), c[3]), k1), b.trunc(p0, I32)]
        k0, k1 = b.add(k0, _c32(0x9E3779B9)), b.add(k1, _c32(0xBB67AE85))
    return c


def _split(b, v64):
    return b.trunc(v64, I32), b.trunc(b.lshr(v64, ir.Constant(I64, 32)), I32)


def _join(b, lo, hi):
    return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))


@emits_kernel("rng-bit-generator")
def _emit_rng_bit_generator(kb, inst, ops, outputs):
    (sptr, sshape), (vptr, vshape) = outputs
    sdt, dt = sshape.dtype, vshape.dtype
    algorithm = inst.attrs["algorithm"]
    algorithm = "rng_philox" if algorithm == "rng_default" else algorithm
    n_state = sshape.dims[0] if sshape.rank == 1 else -1
    if sdt.name not in ("u64", "s64") or dt.kind != "uint" or not (
            (algorithm == "rng_philox" and n_state in (2, 3))
            or (algorithm == "rng_three_fry" and n_state == 2)):
        raise unsupported(inst, f"rng-bit-generator {algorithm} from {sshape} to {vshape} in "
                                "the compiled back end")
    b = kb.b
    st = [ops[0](Index(b, sshape, multi=[i64(k)])) for k in range(n_state)]
    k0, k1 = _split(b, st[0])
    bits = 64 if dt.bits == 64 else 32
    dims = tuple(vshape.dims)
    size = vshape.size
    if algorithm == "rng_philox":
        lo, hi = (st[1], st[0]) if n_state == 2 else (st[1], st[2])
        words = 2 * size if bits == 64 else size
        nvec = -(-words // 4)
    else:
        half, split = split_shape_into_halves(dims)
        nvec = 1
        for d in half:
            nvec *= d
        if bits == 64:
            nvec = size
    if size:
        with loop_nest(b, list(dims)) as ivs:
            index = Index(b, vshape, multi=list(ivs))
            lin = None                              # logical row-major element number
            for d, n in enumerate(dims):
                lin = ivs[d] if lin is None else b.add(b.mul(lin, i64(n)), ivs[d])
            lin = lin if lin is not None else i64(0)
            if algorithm == "rng_philox":
                per = 2 if bits == 64 else 4
                block, lane = b.udiv(lin, i64(per)), b.urem(lin, i64(per))
                clo = b.add(lo, block)
                chi = b.select(b.icmp_unsigned("<", clo, lo), b.add(hi, i64(1)), hi)
                w = _philox(b, [*_split(b, clo), *_split(b, chi)], k0, k1)
                if bits == 64:
                    first = b.icmp_unsigned("==", lane, i64(0))
                    v = b.select(first, _join(b, w[0], w[1]), _join(b, w[2], w[3]))
                else:
                    v = b.select(b.icmp_unsigned("==", lane, i64(0)), w[0],
                                 b.select(b.icmp_unsigned("==", lane, i64(1)), w[1],
                                          b.select(b.icmp_unsigned("==", lane, i64(2)), w[2], w[3])))
            elif bits == 64:
                y0, y1 = _threefry(b, k0, k1, *_split(b, b.add(st[1], lin)))
                v = _join(b, y0, y1)
            else:
                hl = None                            # the element's position in the halves
                j = ir.Constant(I64, 0)
                for d, n in enumerate(half):
                    p = ivs[d] if dims else i64(0)
                    if d == split and dims:
                        j = b.urem(p, i64(2))
                        p = b.udiv(p, i64(2))
                    hl = p if hl is None else b.add(b.mul(hl, i64(n)), p)
                y0, y1 = _threefry(b, k0, k1, *_split(b, b.add(st[1], hl)))
                v = b.select(b.icmp_unsigned("==", j, i64(0)), y0, y1)
            v = b.trunc(v, ir.IntType(dt.bits)) if v.type.width > dt.bits else v
            p = b.gep(vptr, [index.linear], source_etype=storage_type(dt), inbounds=True)
            b.store(v, p)
    new = list(st)
    if algorithm == "rng_philox":
        new_lo = b.add(lo, i64(nvec))
        new[1] = new_lo
        if n_state == 3:
            new[2] = b.select(b.icmp_unsigned("<", new_lo, lo), b.add(hi, i64(1)), hi)
    else:
        new[1] = b.add(st[1], i64(nvec))
    for k, v in enumerate(new):
        b.store(v, b.gep(sptr, [i64(k)], source_etype=I64, inbounds=True))


@emits_kernel("rng")
def _emit_rng(kb, inst, ops, outputs):
    """rng(a, b): uniform in [a, b) or normal(mean a, stddev b) — random by definition, so
    not the interpreter's values (it draws from NumPy's generator), but XLA:CPU's kind of
    stream (its RngExpander): Philox4x32-10 keyed by the instruction, counter = (element,
    call number), the call number a per-executable global advanced atomically per run.
    Uniform floats take 24 (f64: 53) random bits, values that round onto b become a;
    integers are a + bits mod (b - a) (a when b <= a); normal is Box-Muller in f64."""
    import zlib
    from .types import F32, F64, compute_type, round_narrow, store_elem
    b = kb.b
    (vptr, vshape), = outputs
    dt = vshape.dtype
    dist = inst.attrs.get("distribution")
    if dist not in ("rng_uniform", "rng_normal") or (dist == "rng_normal" and dt.kind != "float") \
            or dt.kind not in ("float", "int", "uint", "pred"):
        raise unsupported(inst, f"rng {dist} of {dt.name} in the compiled back end")
    g = ir.GlobalVariable(kb.mcx.module, I64, name=kb.mcx.unique(f"rng.calls.{inst.name}"))
    g.initializer = ir.Constant(I64, 0)
    g.linkage = "private"
    call = b.atomic_rmw("add", g, i64(1), "monotonic")
    key = zlib.crc32(f"{inst.parent.name if inst.parent else ''}/{inst.name}".encode())
    k0, k1 = _c32(key), _c32(0x2545F491)
    scalar = Index(b, inst.operands[0].shape, multi=[])
    lo_v, hi_v = ops[0](scalar), ops[1](Index(b, inst.operands[1].shape, multi=[]))
    if vshape.size == 0:
        return
    with loop_nest(b, list(vshape.dims)) as ivs:
        index = Index(b, vshape, multi=list(ivs))
        w = _philox(b, [*_split(b, index.linear), *_split(b, call)], k0, k1)
        bits = _join(b, w[0], w[1])
        if dt.kind == "pred":
            v = b.icmp_unsigned("!=", b.and_(bits, i64(1)), i64(0))
        elif dt.kind in ("int", "uint"):
            t = ir.IntType(dt.bits)
            wide = (b.sext if dt.kind == "int" else b.zext) if dt.bits < 64 else None
            lo64 = wide(lo_v, I64) if wide else lo_v
            hi64 = wide(hi_v, I64) if wide else hi_v
            span = b.sub(hi64, lo64)
            empty = (b.icmp_signed if dt.kind == "int" else b.icmp_unsigned)("<=", hi64, lo64)
            r = b.urem(bits, b.select(empty, i64(1), span))
            v = b.select(empty, lo64, b.add(lo64, r))
            v = b.trunc(v, t) if dt.bits < 64 else v
        else:
            ct = compute_type(dt)
            if dist == "rng_uniform":
                if ct == F64:
                    u = b.fmul(b.uitofp(b.lshr(bits, i64(11)), F64), ir.Constant(F64, 2.0 ** -53))
                else:
                    u = b.fmul(b.uitofp(b.lshr(w[0], _c32(8)), F32), ir.Constant(F32, 2.0 ** -24))
                x = round_narrow(b, dt, b.fadd(lo_v, b.fmul(b.fsub(hi_v, lo_v), u)))
                v = b.select(b.fcmp_ordered("<", x, hi_v), x, lo_v)
            else:
                u1 = b.fmul(b.uitofp(b.add(b.lshr(bits, i64(11)), i64(1)), F64), ir.Constant(F64, 2.0 ** -53))
                u2 = b.fmul(b.uitofp(b.lshr(_join(b, w[2], w[3]), i64(11)), F64), ir.Constant(F64, 2.0 ** -53))
                log = kb.mcx.libm("log", F64, [F64])
                cos = kb.mcx.libm("cos", F64, [F64])
                sqrt = kb.mcx.intrinsic("llvm.sqrt.f64", F64, [F64])
                r = b.call(sqrt, [b.fmul(ir.Constant(F64, -2.0), b.call(log, [u1]))])
                z = b.fmul(r, b.call(cos, [b.fmul(ir.Constant(F64, 6.283185307179586), u2)]))
                mean = lo_v if ct == F64 else b.fpext(lo_v, F64)
                std = hi_v if ct == F64 else b.fpext(hi_v, F64)
                x = b.fadd(mean, b.fmul(std, z))
                v = round_narrow(b, dt, x if ct == F64 else b.fptrunc(x, F32))
        p = b.gep(vptr, [index.linear], source_etype=storage_type(dt), inbounds=True)
        store_elem(b, dt, v, p)


@emits_kernel("rng-get-and-update-state")
def _emit_rng_get_and_update_state(kb, inst, ops, outputs):
    """The CPU runtime's rng state (rng_state_thunk.cc), as the interpreter keeps it: a
    128-bit counter per instruction and loaded executable, starting at 0x7012395; each
    execution returns it as u64[2] (low, high) and advances it by `delta`. The words are
    two private globals advanced by atomic adds (the high one by the low one's carry), so
    concurrent runs each get a distinct state."""
    from ..interp.rng import RNG_STATE_INITIAL
    (sptr, sshape), = outputs
    if sshape.dtype.name != "u64" or tuple(sshape.dims) != (2,):
        raise unsupported(inst, f"rng-get-and-update-state to {sshape} in the compiled back end")
    b = kb.b
    delta = int(inst.attrs["delta"]) % (1 << 128)
    signed = lambda w: w - (1 << 64) if w >> 63 else w          # noqa: E731
    d_lo, d_hi = signed(delta & ((1 << 64) - 1)), signed(delta >> 64)
    words = []
    for part, init in (("lo", RNG_STATE_INITIAL & ((1 << 64) - 1)), ("hi", RNG_STATE_INITIAL >> 64)):
        g = ir.GlobalVariable(kb.mcx.module, I64, name=kb.mcx.unique(f"rng.state.{part}.{inst.name}"))
        g.initializer = ir.Constant(I64, signed(init))
        g.linkage = "private"
        words.append(g)
    old_lo = b.atomic_rmw("add", words[0], i64(d_lo), "monotonic")
    carry = b.zext(b.icmp_unsigned("<", b.add(old_lo, i64(d_lo)), old_lo), I64)
    old_hi = b.atomic_rmw("add", words[1], b.add(i64(d_hi), carry), "monotonic")
    for k, v in enumerate((old_lo, old_hi)):
        b.store(v, b.gep(sptr, [i64(k)], source_etype=I64, inbounds=True))
