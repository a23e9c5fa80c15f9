"""Regression tests for hostile input (issue 8): each crash class the fuzzer or a user found,
and the CLI's last line of defence. Every case must end in a clean result or a located error."""
from __future__ import annotations

import subprocess
import sys
import time
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from hloc.cli import main
from hloc.diagnostics import HlocError
from hloc.fake_args import make_fake_arguments
from hloc.syntax.literal_printer import format_constant, literal_to_string
from hloc.passes.driver import optimize
from hloc.passes.pipelines import default_pipeline
from hloc.printer import module_to_text
from hloc.runner import result_json, run_module
from hloc.syntax import parse_modules
from hloc.verifier import verify


def cli(args, input=None):
    return CliRunner().invoke(main, args, input=input)


def write(tmp_path, text, name="m.hlo"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("tail", ["%f (a: f32[2]) -> ", "%f (a: f32[2]) ->", "%f (a: ",
                                  "%f (a: f32[2], b: ", "%f (a: (f32[2], "])
def test_file_ending_inside_a_signature_is_a_located_error(tmp_path, tail):
    path = write(tmp_path, "HloModule m\n\n" + tail)
    r = cli(["check", path])
    assert r.exit_code == 2, r.output
    assert f"{path}:3:" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("result, operand", [("f32", "c64"), ("c64", "f32"), ("f64", "c128")])
def test_negate_may_not_cross_between_real_and_complex(result, operand):
    # ShapeUtil::SameElementTypeIgnoringFpPrecision counts only real floating-point types
    # as one; complex is not among them.
    text = (f"HloModule m\nENTRY e {{\n  p = {operand}[2] parameter(0)\n"
            f"  ROOT n = {result}[2] negate(p)\n}}\n")
    (m,) = parse_modules(text, "m.hlo")
    with pytest.raises(HlocError, match="Expected instruction to have shape equal to"):
        verify(m)


def test_mixed_precision_between_real_floats_still_verifies():
    text = "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = bf16[2] negate(p)\n}\n"
    (m,) = parse_modules(text, "m.hlo")
    verify(m)


def test_concatenate_with_several_dimensions_is_an_error():
    text = ("HloModule m\nENTRY e {\n  p = f32[2,2] parameter(0)\n"
            "  ROOT c = f32[4,2] concatenate(p, p), dimensions={0,1}\n}\n")
    with pytest.raises(HlocError, match="exactly one dimension"):
        verify(parse_modules(text, "m.hlo")[0])


ZERO_HUGE = ("HloModule m\nENTRY e {\n  ROOT i = f32[1000000000000,0] iota(), "
             "iota_dimension=0\n}\n")


def test_zero_element_result_with_huge_dims_prints_at_once(tmp_path):
    path = write(tmp_path, ZERO_HUGE)
    t = time.perf_counter()
    r = cli(["run", path])
    assert r.exit_code == 0, r.output
    assert "[TRUNCATED, Literal with 0 values in 1000000000000 rows]" in r.output
    r = cli(["run", "--print-all", "--json", "--print-values", path])
    assert r.exit_code == 0 and '"shape": [1000000000000, 0]' in r.output
    r = cli(["fmt", path])
    assert r.exit_code == 0 and "f32[1000000000000,0]{1,0} iota()" in r.output
    assert time.perf_counter() - t < 5


def test_small_zero_element_arrays_print_as_xla_does():
    from hloc.ir.shape import parse_shape
    s = parse_shape("f32[2,0]")
    assert literal_to_string(s, np.zeros((2, 0), np.float32)) == "f32[2,0] {\n  {},\n  {}\n}"
    assert format_constant(s, np.zeros((2, 0), np.float32)) == "{ {}, {} }"
    huge = parse_shape("f32[1000000000000,0]")
    assert format_constant(huge, np.zeros((10**12, 0), np.float32)) == "{...}"


def test_zero_element_parameter_with_huge_dims_runs(tmp_path):
    path = write(tmp_path, "HloModule m\nENTRY e {\n  p = s32[0,4000000000000] parameter(0)\n"
                           "  ROOT n = s32[0,4000000000000] negate(p)\n}\n")
    r = cli(["run", "--print-literals", path])
    assert r.exit_code == 0, r.output
    assert r.output.count("[TRUNCATED, Literal with 0 values") == 0     # one row only


def _boom(exc):
    def raise_it(*a, **k):
        raise exc
    return raise_it


def test_unexpected_exception_is_one_line_exit_4(monkeypatch, tmp_path):
    import hloc.verifier
    path = write(tmp_path, "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    monkeypatch.setattr(hloc.verifier, "verify", _boom(ZeroDivisionError("bad\nsecond line")))
    r = CliRunner().invoke(main, ["run", path])
    assert r.exit_code == 4
    assert r.output.strip() == ("hloc: internal error: ZeroDivisionError: bad (run with --debug "
                                "for the traceback; please report it)")
    r = CliRunner().invoke(main, ["--debug", "run", path])
    assert isinstance(r.exception, ZeroDivisionError)


def test_ctrl_c_is_one_line_exit_130(monkeypatch, tmp_path):
    import hloc.verifier
    path = write(tmp_path, "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    monkeypatch.setattr(hloc.verifier, "verify", _boom(KeyboardInterrupt()))
    r = CliRunner().invoke(main, ["run", path])
    assert r.exit_code == 130
    assert r.output.strip() == "hloc: interrupted"


def test_sigint_in_a_real_process_exits_130(tmp_path):
    path = write(tmp_path, "HloModule m\nENTRY e {\n  ROOT c = f32[] constant(1)\n}\n")
    code = ("import hloc.verifier, sys\n"
            "def v(m): raise KeyboardInterrupt\n"
            "hloc.verifier.verify = v\n"
            "from hloc.cli import main\n"
            f"sys.argv = ['hloc', 'run', {path!r}]\nmain()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 130
    assert r.stderr.strip() == "hloc: interrupted" and r.stdout == ""


HOSTILE = """HloModule m
ENTRY e {
  a = f32[6] constant({0, nan, inf, -inf, -0, 1e38})
  b = f32[6] constant({0, 0, -inf, inf, 3.4e38, -1e-45})
  i = s32[6] constant({-2147483648, 0, -1, 2147483647, 0, -2147483648})
  j = s32[6] constant({-1, 0, 0, -1, -2147483648, 31})
  d = f32[6] divide(a, b)
  r = f32[6] remainder(a, b)
  p = f32[6] power(a, b)
  l = f32[6] log(b)
  x = f32[6] exponential(a)
  t = f32[6] atan2(a, b)
  ct = s32[6] convert(a)
  cu = u8[6] convert(b)
  q = s32[6] divide(i, j)
  s = s32[6] remainder(i, j)
  sh = s32[6] shift-left(i, j)
  pw = s32[6] power(i, j)
  f = f32[6] parameter(0)
  m = f32[6] multiply(f, a)
  ROOT out = (f32[6], f32[6], f32[6], f32[6], f32[6], f32[6], s32[6], u8[6], s32[6], s32[6],
              s32[6], s32[6], f32[6]) tuple(d, r, p, l, x, t, ct, cu, q, s, sh, pw, m)
}
"""


@pytest.mark.parametrize("large", [False, True])
def test_hostile_values_run_and_optimise_without_numpy_warnings(large):
    with warnings.catch_warnings(), np.errstate(divide="warn", over="warn", invalid="warn"):
        warnings.simplefilter("error")
        (m,) = parse_modules(HOSTILE, "m.hlo")
        verify(m)
        args = make_fake_arguments(m, seed=3, use_large_float_range=large)
        result = run_module(m, args)
        result_json(result, print_values=True)
        optimize(m, default_pipeline())
        module_to_text(m)
    d = result.value[0]
    assert np.isnan(d[:4]).all() and d[4] == 0 and d[5] == -np.inf


@pytest.mark.parametrize("target, shape", [
    ("lapack_ssyevd_ffi", "(f32[2,2]{0,1}, f32[2]{0}, s32[])"),
    ("lapack_sgesdd_ffi", "(f32[2,2]{0,1}, f32[2]{0}, f32[2,2]{0,1}, f32[2,2]{0,1}, s32[])"),
])
def test_lapack_custom_calls_on_non_finite_matrices_set_info(target, shape):
    # np.linalg raised LinAlgError ("did not converge") on NaN input: a traceback.
    cfg = "{mode = 86 : ui8, uplo = 76 : ui8}" if "syevd" in target else "{mode = 65 : ui8}"
    text = (f"HloModule m\nENTRY e {{\n  a = f32[2,2] constant({{{{nan, 1}}, {{1, inf}}}})\n"
            f"  ROOT r = {shape} custom-call(a), custom_call_target=\"{target}\", "
            f"api_version=API_VERSION_TYPED_FFI, backend_config={cfg}\n}}\n")
    (m,) = parse_modules(text, "m.hlo")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = run_module(m, []).value
    assert int(out[-1]) == 1 and np.isnan(out[1]).all()


@pytest.mark.parametrize("text, want", [
    ("p = f16[2] parameter(0)\n  ROOT s = f32[2] sine(p)", np.sin(np.float32([0.5, -1]))),
    ("p = c64[2] parameter(0)\n  ROOT s = f64[2] abs(p)", np.float64([0.5, 1])),
    ("p = f32[2] parameter(0)\n  ROOT s = bf16[2] copy(p)", None),
])
def test_unary_ops_with_mixed_precision_run(text, want):
    # The verifier allows another real float type for the result; the interpreter asserted.
    (m,) = parse_modules(f"HloModule m\nENTRY e {{\n  {text}\n}}\n", "m.hlo")
    verify(m)
    dt = m.entry.parameters[0].shape.dtype.np
    out = run_module(m, [np.array([0.5, -1], dt)]).value
    assert out.dtype == m.entry.root.shape.dtype.np
    if want is not None:
        assert np.allclose(out.astype(np.float64), want, rtol=1e-3)


def test_reductions_that_overflow_print_no_numpy_warning():
    text = ("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[4,6] parameter(0)\n"
            "  z = f32[] constant(3e38)\n  ROOT r = f32[4] reduce(p, z), dimensions={1}, "
            "to_apply=add\n}\n")
    (m,) = parse_modules(text, "m.hlo")
    with warnings.catch_warnings(), np.errstate(over="warn", invalid="warn"):
        warnings.simplefilter("error")
        out = run_module(m, [np.full((4, 6), 3e38, np.float32)]).value
        optimize(m, default_pipeline())
    assert (out == np.inf).all()


@pytest.mark.parametrize("operands, dims, message", [
    ("t", "{0}", "Expected array argument for sort"),
    ("p", "{0,1}", "exactly one dimension"),
])
def test_sort_of_a_tuple_or_with_several_dimensions_is_an_error(operands, dims, message):
    text = ("HloModule m\nlt {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT c = pred[] compare(a, b), direction=LT\n}\nENTRY e {\n"
            "  p = f32[2,2] parameter(0)\n  t = (f32[2,2]) tuple(p)\n"
            f"  ROOT s = f32[2,2] sort({operands}), dimensions={dims}, to_apply=lt\n}}\n")
    with pytest.raises(HlocError, match=message):
        verify(parse_modules(text, "m.hlo")[0])
