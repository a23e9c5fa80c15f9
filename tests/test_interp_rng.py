"""rng, rng-bit-generator and rng-get-and-update-state.

Known answers: Random123's ThreeFry2x32-20 / Philox4x32-10 vectors, and outputs of XLA:CPU
(jaxlib 0.10.2) for rng-bit-generator over several states, shapes and types.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from hloc.interp import numerics as N
from hloc.ir.dtypes import DTYPES

rng = pytest.importorskip("hloc.interp.rng")
M64 = 2**64 - 1


def test_threefry2x32_known_answers():
    # Random123 kat_vectors: threefry2x32_20 (key, counter) -> output
    cases = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
             ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
             ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, want in cases:
        assert [int(v) for v in rng.threefry2x32(*key, *ctr)] == list(want)


def test_philox4x32_known_answers():
    # Random123 kat_vectors: philox4x32_10 (counter, key) -> output
    cases = [((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
             ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
             ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
              (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    for ctr, key, want in cases:
        assert [int(v) for v in rng.philox4x32(*ctr, *key)] == list(want)


def test_vectorised_generators_match_scalar_calls():
    ctr = np.arange(5, dtype=np.uint32)
    y0, y1 = rng.threefry2x32(7, 9, ctr, ctr * 3)
    for i in range(5):
        assert (int(y0[i]), int(y1[i])) == tuple(int(v) for v in rng.threefry2x32(7, 9, i, 3 * i))


def test_split_shape_into_halves():
    assert rng.split_shape_into_halves(()) == ((1,), 0)
    assert rng.split_shape_into_halves((3, 2)) == ((3, 1), 1)
    assert rng.split_shape_into_halves((4, 6)) == ((2, 6), 0)
    assert rng.split_shape_into_halves((3, 5, 7)) == ((3, 5, 4), 2)
    assert rng.split_shape_into_halves((7, 7)) == ((4, 7), 0)


# (algorithm, state, type, dims) -> (new state, values), from XLA:CPU (jaxlib 0.10.2)
XLA_ANSWERS = [
    ("rng_three_fry", [0, 0], "u32", (3, 2), [0, 3],
     [[1797259609, 2579123966], [1351547692, 3235790642], [1688610540, 4229293427]]),
    ("rng_three_fry", [0, 0], "u32", (7, 1), [0, 4],
     [[1797259609], [2579123966], [1351547692], [3235790642], [1688610540], [4229293427],
      [3098264785]]),
    ("rng_three_fry", [42, 7], "u8", (9,), [42, 12], [101, 17, 179, 6, 166, 119, 139, 117, 121]),
    ("rng_three_fry", [0x123456789ABCDEF0, M64 - 1], "u64", (5,), [0x123456789ABCDEF0, 3],
     [8112081530999492730, 2445923859953712039, 5540413775124856893, 7268757770303430396,
      4623188616535824262]),
    ("rng_philox", [5, M64, 9], "u32", (5,), [5, 1, 10],
     [4017057404, 1634864995, 201065378, 3840247100, 1292614439]),
    ("rng_philox", [0xDEADBEEF, 3, 2**63], "u16", (2, 3), [0xDEADBEEF, 5, 2**63],
     [[13879, 54339, 65408], [1833, 30330, 42569]]),
    ("rng_philox", [0, 0], "u32", (), [0, 1], 1713891541),
    ("rng_default", [42, 7], "u64", (2, 3), [42, 10],
     [[4362925212046387432, 13372340965885195484, 2102927134478982862],
      [16325028677038965232, 9181237949340249500, 13149048265699771366]]),
]


@pytest.mark.parametrize("alg,state,tname,dims,new_state,values", XLA_ANSWERS)
def test_rng_bit_generator_matches_xla(alg, state, tname, dims, new_state, values):
    dt = DTYPES[tname]
    st, vals = rng.rng_bit_generator(alg, np.array(state, np.uint64), dims, max(dt.bits, 32))
    vals = N.wrap(vals, dt)
    assert st.dtype == np.uint64 and st.tolist() == new_state
    assert vals.dtype == dt.np and vals.shape == dims and vals.tolist() == values


def test_rng_bit_generator_shapes_and_counters():
    st, vals = rng.rng_bit_generator("rng_three_fry", np.array([1, 2], np.uint64), (3, 5, 7), 32)
    assert st.tolist() == [1, 2 + 3 * 5 * 4] and vals.shape == (3, 5, 7)
    st, vals = rng.rng_bit_generator("rng_philox", np.array([1, 2, 3], np.uint64), (9,), 64)
    assert st.tolist() == [1, 2 + 5, 3] and vals.shape == (9,)
    st, _ = rng.rng_bit_generator("rng_philox", np.array([1, M64 - 1], np.uint64), (8,), 32)
    assert st.tolist() == [1, 0]                        # u64[2]: the high word is dropped
    with pytest.raises(N.Unsupported):
        rng.rng_bit_generator("rng_three_fry", np.array([1, 2, 3], np.uint64), (4,), 32)
    with pytest.raises(N.Unsupported):
        rng.rng_bit_generator("rng_philox", np.array([1, 2, 3, 4], np.uint64), (4,), 32)


def test_rng_values_uniform_and_normal():
    gen = np.random.default_rng(1)
    f = rng.rng_values(gen, "rng_uniform", DTYPES["bf16"], np.float32(1), np.float32(1.0078125),
                       (1000,))
    assert f.dtype == DTYPES["bf16"].np and (f.astype(np.float32) == 1).all()   # never hi
    i = rng.rng_values(gen, "rng_uniform", DTYPES["s8"], np.int8(-3), np.int8(2), (500,))
    assert i.dtype == np.int8 and i.min() == -3 and i.max() == 1
    u = rng.rng_values(gen, "rng_uniform", DTYPES["u64"], np.uint64(2**63), np.uint64(M64), (50,))
    assert u.dtype == np.uint64 and (u >= 2**63).all()
    n = rng.rng_values(gen, "rng_normal", DTYPES["f32"], np.float32(10), np.float32(0.5), (4, 500))
    assert n.dtype == np.float32 and n.shape == (4, 500) and abs(float(n.mean()) - 10) < 0.1
    a = rng.rng_values(np.random.default_rng(5), "rng_normal", DTYPES["f64"], 0.0, 1.0, (3,))
    b = rng.rng_values(np.random.default_rng(5), "rng_normal", DTYPES["f64"], 0.0, 1.0, (3,))
    assert a.tolist() == b.tolist()
    p = rng.rng_values(gen, "rng_uniform", DTYPES["pred"], np.bool_(0), np.bool_(1), (5,))
    assert p.dtype == np.bool_ and not p.any()          # [false, true) holds only false
    for args in [("rng_uniform", DTYPES["s32"], np.int32(3), np.int32(3)),
                 ("rng_normal", DTYPES["s32"], np.int32(0), np.int32(1)),
                 ("rng_uniform", DTYPES["pred"], np.bool_(1), np.bool_(0)),
                 ("rng_uniform", DTYPES["f32"], np.float32(1), np.float32(0))]:
        with pytest.raises(N.Unsupported):
            rng.rng_values(gen, *args, (2,))


# ---------------------------------------------------------------------------
# Through the interpreter

def _interpreter(text):
    import hloc
    from hloc.interp.core import Interpreter
    try:
        module = hloc.parse(text)
    except ImportError as e:
        pytest.skip(f"parser not available: {e}")
    return Interpreter(module)


def _run(interp, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return interp.run(list(args))


def test_rng_bit_generator_end_to_end():
    interp = _interpreter("""HloModule m
ENTRY e {
  s = u64[3] parameter(0)
  ROOT r = (u64[3], u32[5]) rng-bit-generator(s), algorithm=rng_philox
}""")
    state, values = _run(interp, np.array([5, M64, 9], np.uint64))
    assert state.tolist() == [5, 1, 10]
    assert values.dtype == np.uint32
    assert values.tolist() == [4017057404, 1634864995, 201065378, 3840247100, 1292614439]


def test_rng_get_and_update_state_end_to_end():
    interp = _interpreter("""HloModule m
ENTRY e {
  a = u64[2] rng-get-and-update-state(), delta=10
  b = u64[2] rng-get-and-update-state(), delta=7
  ROOT t = (u64[2], u64[2]) tuple(a, b)
}""")
    a, b = _run(interp)
    assert a.dtype == np.uint64
    assert a.tolist() == b.tolist() == [0x7012395, 0]      # one counter per instruction
    a, b = _run(interp)
    assert a.tolist() == [0x7012395 + 10, 0] and b.tolist() == [0x7012395 + 7, 0]


def test_rng_end_to_end():
    interp = _interpreter("""HloModule m
ENTRY e {
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  ROOT r = f32[2,3] rng(lo, hi), distribution=rng_uniform
}""")
    out = _run(interp)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    assert ((out >= -1) & (out < 1)).all()


def test_old_three_operand_rng_is_unsupported_not_a_crash():
    # rng(min, max, shape) predates today's HLO; the verifier rejects it, but with
    # --no-verify the interpreter must say so rather than fail inside NumPy.
    from hloc.diagnostics import UnsupportedError
    interp = _interpreter("""HloModule m
ENTRY e {
  a = f32[] constant(0)
  b = f32[] constant(1)
  s = s64[1] constant({3})
  ROOT r = f32[3] rng(a, b, s), distribution=rng_uniform
}""")
    with pytest.raises(UnsupportedError, match=r"rng takes two scalar operands .*rng\(min, max, shape\)"):
        _run(interp)
