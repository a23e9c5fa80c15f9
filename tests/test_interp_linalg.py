"""Linear algebra and custom-call evaluations (hloc/interp/linalg.py, custom_calls.py).

Convolution is checked against a loop written after HloEvaluator's
HandleConvolutionWithLiterals (grouped, batch-grouped, dilated, padded, reversed, any
dim_labels); dot against sequential accumulation; fft against numpy; triangular-solve,
cholesky and the LAPACK custom-calls against their defining identities.
"""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import hloc
import hloc.interp.custom_calls  # noqa: F401
import hloc.interp.data_movement  # noqa: F401
import hloc.interp.elementwise  # noqa: F401
import hloc.interp.linalg as la
from hloc.diagnostics import UnsupportedError
from hloc.interp.core import Interpreter
from hloc.syntax.attr_kinds import parse_value

RNG = np.random.default_rng(99)


def run(text, *args):
    return Interpreter(hloc.parse(text)).run(list(args))


# ---------------------------------------------------------------------------
# dot

def test_dot_accumulates_sequentially_in_f32_for_bf16():
    bf16 = ml_dtypes.bfloat16
    lhs = RNG.standard_normal((3, 40)).astype(bf16)
    rhs = RNG.standard_normal((40, 2)).astype(bf16)
    got = la.dot_array(lhs, rhs, lhs_contracting=(1,), rhs_contracting=(0,), out_dtype=bf16)
    want = np.zeros((3, 2), np.float32)
    for k in range(40):
        want = want + lhs[:, k, None].astype(np.float32) * rhs[None, k, :].astype(np.float32)
    assert got.dtype == bf16
    np.testing.assert_array_equal(got, want.astype(bf16))


def test_dot_batch_and_multiple_contracting_dims():
    lhs = RNG.standard_normal((2, 3, 4, 5))
    rhs = RNG.standard_normal((5, 2, 4, 6))
    got = la.dot_array(lhs, rhs, lhs_batch=(0,), rhs_batch=(1,), lhs_contracting=(2, 3),
                       rhs_contracting=(2, 0), out_dtype=np.float64)
    want = np.einsum("bmkc,cbkn->bmn", lhs, rhs)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_dot_integers_wrap_and_convert_operands():
    lhs = np.full((1, 4), 100, np.int8)
    rhs = np.full((4, 1), 3, np.int8)
    assert la.dot_array(lhs, rhs, lhs_contracting=(1,), rhs_contracting=(0,),
                        out_dtype=np.int8)[0, 0] == np.int8(np.int64(1200) - 1280)
    assert la.dot_array(lhs, rhs, lhs_contracting=(1,), rhs_contracting=(0,),
                        out_dtype=np.int32)[0, 0] == 1200


def test_dot_e2e_with_algorithm():
    got = run("""HloModule m
ENTRY e { a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT d = f32[2,2] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, algorithm=dot_bf16_bf16_f32 }""",
              np.full((2, 3), 1.00390625 + 2 ** -10, np.float32), np.ones((3, 2), np.float32))
    np.testing.assert_array_equal(got, np.full((2, 2), 3 * 1.0078125, np.float32))  # operands rounded to bf16


# ---------------------------------------------------------------------------
# convolution

def ref_conv(lhs, rhs, window, d, fgc, bgc, out_dims):
    """HloEvaluator's loop, element by element."""
    out = np.zeros(out_dims, np.float64)
    nsp = len(d.input_spatial)
    in_z = lhs.shape[d.input_feature]
    in_b = lhs.shape[d.input_batch]
    oz = rhs.shape[d.kernel_output_feature]
    ig, og, bgs = in_z // fgc, oz // fgc, in_b // bgc
    depth = oz // bgc if bgc > 1 else 1
    wsizes = [rhs.shape[k] for k in d.kernel_spatial]
    for oi in itertools.product(*map(range, out_dims)):
        o = oi[d.output_feature]
        acc = 0.0
        for wi in itertools.product(*map(range, wsizes)):
            lsp, ksp = [], []
            for k in range(nsp):
                w = window.dims[k]
                u = oi[d.output_spatial[k]] * w.stride - w.pad_lo + wi[k] * w.rhs_dilate
                if u % w.lhs_dilate or not 0 <= u // w.lhs_dilate < lhs.shape[d.input_spatial[k]]:
                    break
                lsp.append(u // w.lhs_dilate)
                ksp.append(w.size - 1 - wi[k] if w.reversal else wi[k])
            else:
                for rz in range(ig):
                    li = [0] * lhs.ndim
                    li[d.input_batch] = oi[d.output_batch] + ((o // depth) * bgs) % in_b
                    li[d.input_feature] = (o // og) * ig + rz
                    ri = [0] * rhs.ndim
                    ri[d.kernel_output_feature] = o
                    ri[d.kernel_input_feature] = rz
                    for k in range(nsp):
                        li[d.input_spatial[k]] = lsp[k]
                        ri[d.kernel_spatial[k]] = ksp[k]
                    acc += lhs[tuple(li)] * rhs[tuple(ri)]
        out[oi] = acc
    return out


def conv_out_dims(lhs_shape, rhs_shape, window, d, bgc):
    dims = [0] * len(lhs_shape)
    dims[d.output_batch] = lhs_shape[d.input_batch] // bgc
    dims[d.output_feature] = rhs_shape[d.kernel_output_feature]
    for k, w in enumerate(window.dims):
        n = lhs_shape[d.input_spatial[k]]
        base = (n - 1) * w.lhs_dilate + 1 + w.pad_lo + w.pad_hi
        span = (rhs_shape[d.kernel_spatial[k]] - 1) * w.rhs_dilate + 1
        dims[d.output_spatial[k]] = max(0, (base - span) // w.stride + 1)
    return dims


CONV_CASES = [
    # dim_labels, window, feature groups, batch groups, lhs shape, rhs shape
    ("b01f_01io->b01f", "size=2x2 pad=1_0x0_1", 1, 1, (2, 4, 3, 2), (2, 2, 2, 3)),
    ("bf01_oi01->bf01", "size=3x2 stride=2x1 pad=1_1x0_0 lhs_dilate=2x1 rhs_dilate=1x2",
     1, 1, (1, 2, 4, 5), (2, 2, 3, 2)),
    ("f01b_i01o->01fb", "size=2x2 rhs_reversal=1x0 pad=0_1x1_1", 2, 1, (4, 3, 3, 2), (2, 2, 2, 4)),
    ("b0f_0io->b0f", "size=2 pad=-1_2 rhs_dilate=2", 3, 1, (1, 6, 3), (2, 1, 6)),
    ("0bf_0oi->0fb", "size=2 stride=2", 1, 2, (5, 4, 3), (2, 2, 3)),
    ("bf0_io0->bf0", "size=3 lhs_dilate=3 pad=2_2", 2, 2, (4, 4, 3), (2, 4, 3)),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_convolution_matches_reference_loop(case):
    labels, wtext, fgc, bgc, ls, rs = CONV_CASES[case]
    d = parse_value("dim_labels", labels)
    window = parse_value("window", "{" + wtext + "}")
    lhs = RNG.integers(-3, 4, ls).astype(np.float32)
    rhs = RNG.integers(-3, 4, rs).astype(np.float32)
    dims = conv_out_dims(ls, rs, window, d, bgc)
    got = la.convolution_array(lhs, rhs, window=window, dnums=d, feature_group_count=fgc,
                               batch_group_count=bgc, out_dims=dims, out_dtype=np.float32)
    np.testing.assert_array_equal(got, ref_conv(lhs, rhs, window, d, fgc, bgc, dims))


def test_convolution_skips_padding_instead_of_multiplying_by_zero():
    got = run("""HloModule m
ENTRY e { x = f32[1,3,1] parameter(0)
  k = f32[2,1,1] parameter(1)
  ROOT c = f32[1,4,1] convolution(x, k), window={size=2 pad=1_1}, dim_labels=b0f_0io->b0f }""",
              np.ones((1, 3, 1), np.float32), np.array([[[np.inf]], [[1]]], np.float32))
    np.testing.assert_array_equal(got[0, :, 0], [1, np.inf, np.inf, np.inf])


def test_convolution_e2e_int8_wraps():
    got = run("""HloModule m
ENTRY e { x = s8[1,2,1] parameter(0)
  k = s8[2,1,1] parameter(1)
  ROOT c = s8[1,1,1] convolution(x, k), window={size=2}, dim_labels=b0f_0io->b0f }""",
              np.array([[[100], [100]]], np.int8), np.array([[[1]], [[1]]], np.int8))
    assert got.dtype == np.int8 and got[0, 0, 0] == -56


# ---------------------------------------------------------------------------
# fft

@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_fft_matches_numpy_with_padding_and_truncation(kind):
    x = RNG.standard_normal((2, 5, 6))
    if kind != "RFFT":
        x = x + 1j * RNG.standard_normal((2, 5, 6))
    lengths = (4, 8)
    ref = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
           "IRFFT": np.fft.irfftn}[kind](x, s=lengths, axes=(1, 2))
    out_dtype = np.float32 if kind == "IRFFT" else np.complex64
    got = la.fft_array(x.astype(np.complex64 if kind != "RFFT" else np.float32), kind,
                       lengths, ref.shape, out_dtype)
    assert got.dtype == out_dtype
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


def test_fft_e2e():
    x = (RNG.standard_normal((3, 8))).astype(np.float32)
    got = run("""HloModule m
ENTRY e { x = f32[3,8] parameter(0)
  ROOT f = c64[3,5] fft(x), fft_type=RFFT, fft_length={8} }""", x)
    np.testing.assert_allclose(got, np.fft.rfft(x), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------
# triangular-solve, cholesky

@pytest.mark.parametrize("left,lower,unit,trans", list(itertools.product(
    [True, False], [True, False], [True, False], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])))
def test_triangular_solve_all_variants(left, lower, unit, trans):
    n = 4
    a = RNG.standard_normal((2, n, n)) + 1j * RNG.standard_normal((2, n, n)) + 4 * np.eye(n)
    b = RNG.standard_normal((2, n, 3) if left else (2, 3, n)) + 0j
    x = la.triangular_solve_array(a, b, left_side=left, lower=lower, unit_diagonal=unit,
                                  transpose_a=trans, out_dtype=np.complex128)
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t[:, range(n), range(n)] = 1
    op = {"NO_TRANSPOSE": t, "TRANSPOSE": np.swapaxes(t, 1, 2),
          "ADJOINT": np.swapaxes(t, 1, 2).conj()}[trans]
    np.testing.assert_allclose(op @ x if left else x @ op, b, atol=1e-10)


def test_cholesky_lower_upper_and_not_positive_definite():
    m = RNG.standard_normal((2, 4, 4))
    a = m @ np.swapaxes(m, 1, 2) + 4 * np.eye(4)
    a[1] = -a[1]                                   # second matrix is not positive definite
    text = """HloModule m
ENTRY e { a = f64[2,4,4] parameter(0)
  ROOT c = f64[2,4,4] cholesky(a), lower=LOWER }"""
    lo = run(text.replace("LOWER", "true"), a)
    np.testing.assert_allclose(lo[0] @ lo[0].T, a[0], rtol=1e-12)
    assert np.all(np.triu(lo[0], 1) == 0)
    assert np.isnan(lo[1]).all()
    up = run(text.replace("LOWER", "false"), a)
    np.testing.assert_allclose(up[0].T @ up[0], a[0], rtol=1e-12)
    assert np.all(np.tril(up[0], -1) == 0)


def test_cholesky_reads_only_its_triangle():
    a = np.array([[4.0, 99.0], [2.0, 5.0]])
    np.testing.assert_allclose(la.cholesky_array(a, lower=True, out_dtype=np.float64),
                               [[2, 0], [1, 2]])


# ---------------------------------------------------------------------------
# batch norm

def test_batch_norm_training_inference_grad():
    x = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    scale = RNG.standard_normal(3).astype(np.float32)
    offset = RNG.standard_normal(3).astype(np.float32)
    out, mean, var = run("""HloModule m
ENTRY e { x = f32[4,3,5] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  ROOT b = (f32[4,3,5], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1 }""",
                         x, scale, offset)
    xd = x.astype(np.float64)
    m = xd.mean(axis=(0, 2))
    v = xd.var(axis=(0, 2))
    np.testing.assert_allclose(mean, m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(var, v, rtol=1e-4, atol=1e-5)
    norm = (xd - m[None, :, None]) / np.sqrt(v[None, :, None] + 1e-3)
    np.testing.assert_allclose(out, norm * scale[None, :, None] + offset[None, :, None],
                               rtol=1e-4, atol=1e-4)
    inf = la.batch_norm_inference(x, scale, offset, mean, var, epsilon=1e-3, feature_index=1)
    np.testing.assert_allclose(inf, out, rtol=1e-4, atol=1e-4)
    g = RNG.standard_normal(x.shape).astype(np.float32)
    gx, gs, gb = la.batch_norm_grad(x, scale, mean, var, g, epsilon=1e-3, feature_index=1)
    np.testing.assert_allclose(gb, g.sum(axis=(0, 2)), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gs, (g * norm).sum(axis=(0, 2)), rtol=1e-3, atol=1e-3)
    n = 20
    want = (scale[None, :, None] / np.sqrt(v[None, :, None] + 1e-3) / n) * (
        n * g - g.sum(axis=(0, 2))[None, :, None]
        - (xd - m[None, :, None]) * (g * (xd - m[None, :, None])).sum(axis=(0, 2))[None, :, None]
        / (v[None, :, None] + 1e-3))
    np.testing.assert_allclose(gx, want, rtol=1e-3, atol=1e-3)


# ---------------------------------------------------------------------------
# custom-call

def _cc(target, operand_shapes, result_shape, config="", called=""):
    params = "\n".join(f"  p{i} = {s} parameter({i})" for i, s in enumerate(operand_shapes))
    ops = ", ".join(f"p{i}" for i in range(len(operand_shapes)))
    cfg = f", backend_config={config}" if config else ""
    return f"""HloModule m
{called}
ENTRY e {{
{params}
  ROOT c = {result_shape} custom-call({ops}), custom_call_target="{target}"{cfg}
}}"""


def test_custom_call_topk_with_comparator():
    called = """gt { a = f32[] parameter(0)
  b = f32[] parameter(1)
  i = s32[] parameter(2)
  j = s32[] parameter(3)
  ROOT r = pred[] compare(a, b), direction=GT }"""
    text = _cc("TopK", ["f32[2,5]"], "(f32[2,2], s32[2,2])", called=called).replace(
        'custom_call_target="TopK"', 'custom_call_target="TopK", called_computations={gt}')
    x = np.array([[1, 7, 3, 7, 0], [5, 4, 3, 2, 1]], np.float32)
    v, i = run(text, x)
    np.testing.assert_array_equal(v, [[7, 7], [5, 4]])
    np.testing.assert_array_equal(i, [[1, 3], [0, 1]])


def test_lapack_potrf_getrf_trsm():
    m = RNG.standard_normal((2, 3, 3))
    a = m @ np.swapaxes(m, 1, 2) + 3 * np.eye(3)
    out, info = run(_cc("lapack_dpotrf_ffi", ["f64[2,3,3]"], "(f64[2,3,3], s32[2])",
                        "{uplo = 76 : ui8}"), a)
    lo = np.tril(out)
    np.testing.assert_allclose(lo @ np.swapaxes(lo, 1, 2), a, rtol=1e-12)
    np.testing.assert_array_equal(np.triu(out, 1), np.triu(a, 1))
    np.testing.assert_array_equal(info, [0, 0])
    g = RNG.standard_normal((3, 4, 4)).astype(np.float32)
    lu, piv, info = run(_cc("lapack_sgetrf_ffi", ["f32[3,4,4]"],
                            "(f32[3,4,4], s32[3,4], s32[3])"), g)
    for k in range(3):
        perm = np.arange(4)
        for j, p in enumerate(piv[k] - 1):
            perm[[j, p]] = perm[[p, j]]
        lower = np.tril(lu[k], -1) + np.eye(4)
        np.testing.assert_allclose(lower @ np.triu(lu[k]), g[k][perm], rtol=1e-5, atol=1e-5)
    b = RNG.standard_normal((2, 3, 2))
    x = run(_cc("lapack_dtrsm_ffi", ["f64[2,3,3]", "f64[2,3,2]"], "f64[2,3,2]",
                "{diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}"),
            a, b)
    np.testing.assert_allclose(np.swapaxes(np.tril(a), 1, 2) @ x, b, atol=1e-12)


def test_lapack_qr_eigh_svd():
    a = RNG.standard_normal((2, 5, 3))
    h, tau = run(_cc("lapack_dgeqrf_ffi", ["f64[2,5,3]"], "(f64[2,5,3], f64[2,3])"), a)
    q = run(_cc("lapack_dorgqr_ffi", ["f64[2,5,3]", "f64[2,3]"], "f64[2,5,3]"), h, tau)
    np.testing.assert_allclose(q @ np.triu(h[:, :3, :]), a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(q, 1, 2) @ q, np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)
    s = a[:, :3, :] + np.swapaxes(a[:, :3, :], 1, 2)
    v, w, info = run(_cc("lapack_dsyevd_ffi", ["f64[2,3,3]"], "(f64[2,3,3], f64[2,3], s32[2])",
                         "{mode = 86 : ui8, uplo = 76 : ui8}"), s)
    np.testing.assert_allclose(v @ (w[:, :, None] * np.swapaxes(v, 1, 2)), s, atol=1e-12)
    assert np.all(np.diff(w, axis=1) >= 0)
    _, sv, u, vt, info = run(_cc("lapack_dgesdd_ffi", ["f64[2,5,3]"],
                                 "(f64[2,5,3], f64[2,3], f64[2,5,3], f64[2,3,3], s32[2])",
                                 "{mode = 83 : ui8}"), a)
    np.testing.assert_allclose(u @ (sv[:, :, None] * vt), a, atol=1e-12)


def test_unknown_custom_call_target_is_unsupported():
    with pytest.raises(UnsupportedError, match="custom-call target 'my_kernel'"):
        run(_cc("my_kernel", ["f32[2]"], "f32[2]"), np.zeros(2, np.float32))


def test_lapack_geev_right_eigenvectors():
    a = RNG.standard_normal((2, 4, 4))
    wr, wi, vl, vr, info = run(_cc(
        "lapack_dgeev_ffi", ["f64[2,4,4]"],
        "(f64[2,4], f64[2,4], c128[2,4,4], c128[2,4,4], s32[2])",
        "{compute_left = 78 : ui8, compute_right = 86 : ui8}"), a)
    w = wr + 1j * wi
    np.testing.assert_allclose(a @ vr, vr * w[:, None, :], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(vr, axis=1), 1, rtol=1e-12)
    np.testing.assert_array_equal(info, [0, 0])
