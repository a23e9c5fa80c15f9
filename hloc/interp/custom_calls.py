"""custom-call: an explicit allowlist of targets that real XLA:CPU dumps carry.

Each target maps to a NumPy implementation with the operand and result layout of the
kernel XLA or jaxlib links for it: `TopK` (XLA's TopkDecomposer: stable sort with the
called comparator on (values, iota), first k), the LAPACK FFI targets jaxlib registers on
CPU (jaxlib/cpu/lapack_kernels.cc: potrf, getrf, geqrf, orgqr/ungqr, syevd/heevd,
gesdd/gesvd, trsm and geev with right eigenvectors, for s/d/c/z; matrices are the two
minor logical dims, their column-major layout is physical only; character options such
as uplo arrive in backend_config as `{uplo = 76 : ui8}`), and the sharding and host
offload annotations that are identities on one device. potrf, getrf (dgetf2 pivoting),
orgqr and trsm are written out here; geqrf, syevd, gesdd and geev call NumPy's LAPACK in
double precision. Results match XLA's up to rounding (and, for real geev, the sign of
each eigenvector). Any other target is reported as unsupported; nothing from
the dump is ever resolved to code.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir.shape import TupleShape
from .core import evaluates
from .linalg import cholesky_lower, triangular_solve_array
from .sorting import sort_permutation

_CONFIG_ITEM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(-?\d+)\s*:\s*[a-z]+\d*")


def ffi_attrs(inst) -> dict[str, int]:
    """Integer attributes of a typed-FFI backend_config (`{uplo = 76 : ui8, ...}`)."""
    cfg = inst.attrs.get("backend_config")
    text = getattr(cfg, "text", cfg)
    if not isinstance(text, str):
        return {}
    return {k: int(v) for k, v in _CONFIG_ITEM.findall(text)}


def _char(attrs, name, default):
    return chr(attrs[name]) if name in attrs else default


def _leaf_dtypes(inst):
    return [s.dtype.np for s in inst.shape.leaves()]


def _finite_batches(a):
    """`a` with every matrix holding a NaN or infinity zeroed (NumPy's LAPACK wrappers raise
    LinAlgError on them), and the mask of those matrices: their outputs are NaN and their
    info 1 (LAPACK's output is unspecified there; JAX masks any info != 0 with NaN)."""
    bad = ~np.isfinite(a).all(axis=(-2, -1))
    if bad.any():
        a = np.where(bad[..., None, None], np.zeros((), a.dtype), a)
    return a, bad


def _mask(x, bad):
    x = np.array(x, copy=True)
    if bad.any():
        x[bad] = np.nan
    return x


def _info(batch_shape, values=None):
    out = np.zeros(batch_shape, dtype=np.int32)
    if values is not None:
        out[...] = values
    return out


# ---------------------------------------------------------------------------
# TopK

def _topk(inst, operands, ctx):
    x = operands[0]
    comps = inst.attrs.get("called_computations") or ()
    comp = comps[0] if comps else inst.attrs.get("to_apply")
    if comp is None:
        raise ctx.unsupported(inst, "TopK custom-call without a comparator")
    k = inst.shape.elements[0].dims[-1]
    n = x.shape[-1]
    rows = x.reshape(-1, n)
    iota = np.broadcast_to(np.arange(n, dtype=np.int32), rows.shape).copy()
    keys = [rows, iota] if len(comp.parameters) == 4 else [rows]
    perm = sort_permutation(ctx, comp, keys)[:, :k]
    values = np.take_along_axis(rows, perm, axis=1).reshape(x.shape[:-1] + (k,))
    return values, perm.astype(np.int32).reshape(x.shape[:-1] + (k,))


# ---------------------------------------------------------------------------
# LAPACK

def _potrf(inst, operands, ctx):
    a = operands[0]
    uplo = _char(ffi_attrs(inst), "uplo", "L")
    work = a if uplo == "L" else np.swapaxes(a, -1, -2).conj()
    l, _ = cholesky_lower(work)
    n = a.shape[-1]
    diag = np.diagonal(l, axis1=-2, axis2=-1)
    bad = np.isnan(diag.real) | (diag.real <= 0) if n else np.zeros(a.shape[:-1], bool)
    info = np.where(bad.any(axis=-1), np.argmax(bad, axis=-1) + 1, 0) if n else \
        np.zeros(a.shape[:-2], np.int64)
    if uplo == "L":
        out = np.where(np.tril(np.ones((n, n), bool)), l, a)
    else:
        out = np.where(np.triu(np.ones((n, n), bool)), np.swapaxes(l, -1, -2).conj(), a)
    return out.astype(a.dtype), _info(a.shape[:-2], info)


def _abs1(v):
    return np.abs(v.real) + np.abs(v.imag) if v.dtype.kind == "c" else np.abs(v)


def _getrf(inst, operands, ctx):
    """dgetf2: partial pivoting on the first largest |a| (|re|+|im| for complex)."""
    a = np.array(operands[0])
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    k = min(m, n)
    a = a.reshape((-1, m, n))
    nb = a.shape[0]
    piv = np.zeros((nb, k), dtype=np.int32)
    info = np.zeros(nb, dtype=np.int32)
    rows = np.arange(nb)
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(_abs1(a[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            pivot = a[rows, p, j]
            zero = pivot == 0
            info = np.where(zero & (info == 0), j + 1, info)
            swap = ~zero
            rj, rp = a[rows, j].copy(), a[rows, p].copy()
            a[rows, j] = np.where(swap[:, None], rp, rj)
            a[rows, p] = np.where(swap[:, None], rj, rp)
            if j + 1 < m:
                scaled = a[:, j + 1:, j] / a[:, j, j][:, None]
                a[:, j + 1:, j] = np.where(swap[:, None], scaled, a[:, j + 1:, j])
            if j + 1 < m and j + 1 < n:
                a[:, j + 1:, j + 1:] -= a[:, j + 1:, j, None] * a[:, j, None, j + 1:]
    return (a.reshape(batch + (m, n)), piv.reshape(batch + (k,)),
            info.reshape(batch))


def _geqrf(inst, operands, ctx):
    a = np.asarray(operands[0])
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    flat = a.reshape((-1, m, n))
    outs, taus = [], []
    for mat in flat:
        h, tau = np.linalg.qr(mat.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                              mode="raw")
        outs.append(h.T)
        taus.append(tau)
    out = np.array(outs).reshape(a.shape).astype(a.dtype)
    tau = np.array(taus).reshape(batch + (min(m, n),)).astype(a.dtype)
    return out, tau


def _orgqr(inst, operands, ctx):
    """dorg2r / zung2r: Q = H(0) H(1) ... H(k-1) applied to the first n unit columns."""
    a, tau = np.asarray(operands[0]), np.asarray(operands[1])
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    wt = np.complex128 if a.dtype.kind == "c" else np.float64
    q = np.broadcast_to(np.eye(m, n, dtype=wt), a.shape).copy()
    for j in range(k - 1, -1, -1):
        v = np.zeros(a.shape[:-2] + (m - j,), dtype=wt)
        v[..., 0] = 1
        v[..., 1:] = a[..., j + 1:, j]
        t = tau[..., j].astype(wt)
        proj = np.einsum("...i,...ij->...j", v.conj(), q[..., j:, :])
        q[..., j:, :] -= t[..., None, None] * v[..., :, None] * proj[..., None, :]
    return q.astype(a.dtype)


def _syevd(inst, operands, ctx):
    a = np.asarray(operands[0])
    attrs = ffi_attrs(inst)
    uplo = _char(attrs, "uplo", "L")
    mode = _char(attrs, "mode", "V")
    dts = _leaf_dtypes(inst)
    wt = np.complex128 if a.dtype.kind == "c" else np.float64
    safe, bad = _finite_batches(a.astype(wt))
    w, v = np.linalg.eigh(safe, UPLO=uplo)
    vecs = _mask(v, bad).astype(dts[0]) if mode == "V" else a.copy()
    return vecs, _mask(w, bad).astype(dts[1]), _info(a.shape[:-2], bad)


def _gesdd(inst, operands, ctx):
    a = np.asarray(operands[0])
    mode = _char(ffi_attrs(inst), "mode", "A")
    dts = _leaf_dtypes(inst)
    shapes = inst.shape.leaves()
    wt = np.complex128 if a.dtype.kind == "c" else np.float64
    safe, bad = _finite_batches(a.astype(wt))
    if mode == "N":
        s = np.linalg.svd(safe, compute_uv=False)
        u = np.zeros(shapes[2].dims, dts[2])
        vt = np.zeros(shapes[3].dims, dts[3])
    else:
        u, s, vt = np.linalg.svd(safe, full_matrices=(mode == "A"))
        u, vt = _mask(u, bad).astype(dts[2]), _mask(vt, bad).astype(dts[3])
    return a.copy(), _mask(s, bad).astype(dts[1]), u, vt, _info(a.shape[:-2], bad)


def _geev(inst, operands, ctx):
    """Eigenvalues and right eigenvectors (unit norm, largest component real, as geev).
    Real inputs return (wr, wi, vl, vr, info) with complex vectors, complex ones
    (w, vl, vr, info); left eigenvectors are not computed here."""
    a = np.asarray(operands[0])
    attrs = ffi_attrs(inst)
    if _char(attrs, "compute_left", "N") != "N":
        raise ctx.unsupported(inst, "geev with left eigenvectors")
    shapes = inst.shape.leaves()
    safe, bad = _finite_batches(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    w, v = np.linalg.eig(safe)
    w, v = _mask(w.astype(np.complex128), bad), _mask(v, bad)
    right = _char(attrs, "compute_right", "V") == "V"
    vl = np.zeros(shapes[-3].dims, shapes[-3].dtype.np)
    vr = v.astype(shapes[-2].dtype.np) if right else np.zeros(shapes[-2].dims,
                                                                shapes[-2].dtype.np)
    info = _info(a.shape[:-2], bad)
    if a.dtype.kind == "c":
        return w.astype(shapes[0].dtype.np), vl, vr, info
    return (w.real.astype(shapes[0].dtype.np), w.imag.astype(shapes[1].dtype.np), vl, vr,
            info)


def _trsm(inst, operands, ctx):
    if len(operands) != 2:
        raise ctx.unsupported(inst, "trsm custom-call with an alpha operand")
    attrs = ffi_attrs(inst)
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[_char(attrs, "trans_x", "N")]
    return triangular_solve_array(
        operands[0], operands[1], left_side=_char(attrs, "side", "L") == "L",
        lower=_char(attrs, "uplo", "L") == "L", unit_diagonal=_char(attrs, "diag", "N") == "U",
        transpose_a=trans, out_dtype=inst.shape.dtype.np)


def _identity(inst, operands, ctx):
    return operands[0]


CUSTOM_CALLS = {
    "TopK": _topk,
    "Sharding": _identity,
    "SPMDFullToShardShape": _identity,
    "SPMDShardToFullShape": _identity,
    "MoveToHost": _identity,
    "MoveToDevice": _identity,
}
for _p in "sdcz":
    _herm = "he" if _p in "cz" else "sy"
    _orth = "un" if _p in "cz" else "or"
    CUSTOM_CALLS.update({
        f"lapack_{_p}potrf_ffi": _potrf,
        f"lapack_{_p}getrf_ffi": _getrf,
        f"lapack_{_p}geqrf_ffi": _geqrf,
        f"lapack_{_p}{_orth}gqr_ffi": _orgqr,
        f"lapack_{_p}{_herm}evd_ffi": _syevd,
        f"lapack_{_p}gesdd_ffi": _gesdd,
        f"lapack_{_p}gesvd_ffi": _gesdd,
        f"lapack_{_p}trsm_ffi": _trsm,
        f"lapack_{_p}geev_ffi": _geev,
    })


@evaluates("custom-call")
def _eval_custom_call(inst, operands, ctx):
    target = inst.attrs.get("custom_call_target")
    fn = CUSTOM_CALLS.get(target)
    if fn is None:
        raise ctx.unsupported(inst, f"custom-call target {target!r}")
    out = fn(inst, operands, ctx)
    if isinstance(inst.shape, TupleShape) and not isinstance(out, tuple):
        out = (out,)
    return out
