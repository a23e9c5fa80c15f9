"""`hloc run`: inputs (npz, npy, literal text), fake arguments, outputs and exit codes."""
from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

import hloc
from hloc.cli import main
from hloc.diagnostics import InputError
from hloc.inputs import load_npz, save_npz

ADD = """HloModule add_mod

ENTRY e {
  x = f32[2,3] parameter(0)
  y = f32[2,3] parameter(1)
  ROOT s = f32[2,3] add(x, y)
}
"""

MIXED = """HloModule mixed

ENTRY e {
  p = (f32[2], s32[]) parameter(0)
  b = bf16[3] parameter(1)
  a = f32[2] get-tuple-element(p), index=0
  i = s32[] get-tuple-element(p), index=1
  n = bf16[3] negate(b)
  k = s32[] add(i, i)
  ROOT t = (f32[2], (bf16[3], s32[])) tuple(a, (bf16[3], s32[]) tuple(n, k))
}
"""

DSLICE = """HloModule ds

ENTRY e {
  x = f32[10] parameter(0)
  i = s32[] parameter(1)
  ROOT d = f32[3] dynamic-slice(x, i), dynamic_slice_sizes={3}
}
"""

UNSUPPORTED = """HloModule unsup

ENTRY e {
  a = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(a), custom_call_target="hloc_test_no_such_target"
}
"""

X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.full((2, 3), 10, np.float32)


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def write(tmp, name, text):
    p = tmp / name
    p.write_text(text)
    return str(p)


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_npz_inputs_in_order(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.savez(tmp / "in.npz", in1=Y, in0=X)        # numbered keys, stored out of order
    r = invoke("run", mod, "--inputs", tmp / "in.npz")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "f32[2,3] {\n  { 10, 11, 12 },\n  { 13, 14, 15 }\n}\n"


def test_npz_inputs_by_parameter_name(tmp):
    mod = write(tmp, "add.hlo", ADD.replace("add(x, y)", "subtract(x, y)"))
    np.savez(tmp / "in.npz", y=Y, x=X)
    r = invoke("run", mod, "--inputs", tmp / "in.npz")
    assert r.exit_code == 0, r.stderr
    assert "{ -10, -9, -8 }" in r.stdout


def test_npz_other_keys_are_refused_unless_positional(tmp):
    mod = write(tmp, "add.hlo", ADD.replace("add(x, y)", "subtract(x, y)"))
    np.savez(tmp / "in.npz", second=Y, first=X)     # not parameter names
    r = invoke("run", mod, "--inputs", tmp / "in.npz")
    assert r.exit_code == 2 and r.stdout == ""
    assert "cannot bind the arrays of" in r.stderr
    assert "module parameters: x: f32[2,3], y: f32[2,3]" in r.stderr
    assert "second: f32[2,3], first: f32[2,3]" in r.stderr
    r = invoke("run", mod, "--inputs", tmp / "in.npz", "--positional")
    assert r.exit_code == 0, r.stderr
    assert "{ 10, 9, 8 }" in r.stdout
    assert "--positional: binding in file order: x <- second, y <- first" in r.stderr


def test_npz_with_outputs_and_dtypes_entry(tmp):
    mod = write(tmp, "mixed.hlo", MIXED)
    b = np.array([1, -2, 0.5], ml_dtypes.bfloat16)
    save_npz(tmp / "in.npz", {"in0": np.array([1, 2], np.float32), "in1": np.array(3, np.int32),
                              "in2": b, "out0": np.zeros(1)})   # tuple leaves, bf16 as raw bits
    r = invoke("run", mod, "--inputs", tmp / "in.npz", "--output", tmp / "out.npz")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "(\nf32[2] {1, 2},\n(\nbf16[3] {-1, 2, -0.5},\ns32[] 6\n)\n)\n"
    out = load_npz(tmp / "out.npz")
    assert list(out) == ["out0", "out1", "out2"]
    assert out["out1"].dtype == ml_dtypes.bfloat16
    assert np.array_equal(out["out1"], -b) and int(out["out2"]) == 6
    raw = np.load(tmp / "out.npz")
    assert raw["out1"].dtype == np.uint16 and "bfloat16" in str(raw["hloc:dtypes"])


def test_npz_of_outputs_only_gives_a_parameterless_module_no_inputs(tmp):
    """The corpora's convention (in0.. beside out0..) with no inputs at all: a module
    without parameters runs with `--inputs F.npz --expected F.npz` as one with inputs
    does; out* keys are still refused when the module has parameters."""
    mod = write(tmp, "c.hlo", "HloModule c\n\nENTRY e {\n  ROOT c = s32[2] constant({1, 2})\n}\n")
    save_npz(tmp / "io.npz", {"out0": np.array([1, 2], np.int32)})
    r = invoke("run", mod, "--inputs", tmp / "io.npz", "--expected", tmp / "io.npz")
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("s32[2] {1, 2}\n")
    r = invoke("run", write(tmp, "add.hlo", ADD), "--inputs", tmp / "io.npz")
    assert r.exit_code == 2 and "key 'out0' names no parameter" in r.stderr


def test_several_npy_files(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.save(tmp / "a.npy", X)
    np.save(tmp / "b.npy", Y)
    for args in (("run", mod, "--inputs", tmp / "a.npy", tmp / "b.npy"),
                 ("run", "--inputs", tmp / "a.npy", tmp / "b.npy", mod),
                 ("run", "--inputs", tmp / "a.npy", "--inputs", tmp / "b.npy", mod)):
        r = invoke(*args)
        assert r.exit_code == 0, r.stderr
        assert "{ 10, 11, 12 }" in r.stdout


def test_literal_inputs(tmp):
    mod = write(tmp, "add.hlo", ADD)
    r = invoke("run", mod, "--input-literal", "f32[2,3] { { 1, 2, 3 }, { 4, 5, 6 } }",
               "--input-literal", "f32[2,3] {{0.5,0.5,0.5},{0,0,0}}")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "f32[2,3] {\n  { 1.5, 2.5, 3.5 },\n  { 4, 5, 6 }\n}\n"


def test_bad_literal_is_an_input_error(tmp):
    mod = write(tmp, "add.hlo", ADD)
    r = invoke("run", mod, "--input-literal", "f32[2,3] {1, 2}", "--input-literal", "f32[2,3] {}")
    assert r.exit_code == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--input-literal #1" in r.stderr


def test_wrong_count(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.save(tmp / "a.npy", X)
    r = invoke("run", mod, "--inputs", tmp / "a.npy")
    assert r.exit_code == 2
    assert r.stderr == ("error: mismatched number of expected arguments: module takes 2, "
                        f"got 1\n  module parameters: x: f32[2,3], y: f32[2,3]\n"
                        f"  given: {tmp / 'a.npy'}: f32[2,3]\n")


def test_wrong_shape_names_the_parameter(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.savez(tmp / "in.npz", in0=X, in1=Y.T.copy())
    r = invoke("run", mod, "--inputs", tmp / "in.npz")
    assert r.exit_code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "argument 1 (y)" in lines[0] and "f32[2,3]" in lines[0] and "f32[3,2]" in lines[0]


def test_wrong_dtype_names_the_parameter(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.savez(tmp / "in.npz", in0=X.astype(np.float64), in1=Y)
    r = invoke("run", mod, "--inputs", tmp / "in.npz")
    assert r.exit_code == 2
    assert "element type mismatch for argument 0 (x)" in r.stderr and "f64[2,3]" in r.stderr


def test_missing_input_file(tmp):
    mod = write(tmp, "add.hlo", ADD)
    r = invoke("run", mod, "--inputs", tmp / "nope.npz")
    assert r.exit_code == 2 and "nope.npz" in r.stderr


@pytest.mark.parametrize("name,data", [
    ("text.npy", b"1 2 3\n"),
    ("garbage.npz", b"not an archive"),
    ("truncated.npz", b"PK\x03\x04" + bytes(100)),
    ("empty.npy", b""),
])
def test_unreadable_input_file_is_one_clear_line(tmp, name, data):
    """Neither NumPy's advice to unpickle (the file is untrusted input) nor an internal
    error for a damaged archive: what the file is not, exit 2."""
    mod = write(tmp, "add.hlo", ADD)
    (tmp / name).write_bytes(data)
    r = invoke("run", mod, "--inputs", tmp / name)
    assert r.exit_code == 2, r.stderr
    assert "pickle" not in r.stderr and "internal error" not in r.stderr
    assert r.stderr.count("\n") == 1 and name in r.stderr
    assert "not a .npy or .npz file" in r.stderr
    np.save(tmp / "x.npy", X)
    np.save(tmp / "y.npy", Y)
    r = invoke("run", mod, "--inputs", tmp / "x.npy", tmp / "y.npy", "--expected", tmp / name)
    assert r.exit_code == 2, r.stderr
    assert "pickle" not in r.stderr and "internal error" not in r.stderr
    assert f"{name}: not a .npz file" in r.stderr


def test_expected_file_without_outputs_is_an_input_error(tmp):
    """An --expected .npz holding no out0, out1, ... (e.g. an inputs file given by
    mistake) says so and lists what it holds, instead of 'want tuple element count: 0
    ... out0..out-1' and exit 1."""
    mod = write(tmp, "add.hlo", ADD)
    np.savez(tmp / "in.npz", in0=X, in1=Y)
    r = invoke("run", mod, "--inputs", tmp / "in.npz", "--expected", tmp / "in.npz")
    assert r.exit_code == 2, r.stderr
    assert "out-1" not in r.stderr and "no out0" in r.stderr and "in0, in1" in r.stderr


def test_json_output(tmp):
    mod = write(tmp, "mixed.hlo", MIXED)
    r = invoke("run", mod, "--json", "--iterations", "2")
    assert r.exit_code == 0, r.stderr
    obj = json.loads(r.stdout)
    assert obj["module"] == "mixed" and obj["backend"] == "cpu"       # the default
    assert [(o["dtype"], o["shape"]) for o in obj["outputs"]] == [
        ("f32", [2]), ("bf16", [3]), ("s32", [])]
    assert all("values" in o for o in obj["outputs"])
    assert isinstance(obj["compile_s"], float) and len(obj["run_s"]) == 2


def test_json_values_of_large_outputs_only_on_request(tmp):
    mod = write(tmp, "big.hlo", "HloModule big\nENTRY e {\n  x = f32[2000] parameter(0)\n"
                                "  ROOT n = f32[2000] negate(x)\n}\n")
    obj = json.loads(invoke("run", mod, "--json").stdout)
    assert "values" not in obj["outputs"][0]
    obj = json.loads(invoke("run", mod, "--json", "--print-values").stdout)
    assert len(obj["outputs"][0]["values"]) == 2000


def test_json_special_values(tmp):
    mod = write(tmp, "div.hlo", "HloModule d\nENTRY e {\n  x = f32[3] parameter(0)\n"
                                "  z = f32[3] constant({0, 0, 0})\n"
                                "  ROOT q = f32[3] divide(x, z)\n}\n")
    r = invoke("run", mod, "--json", "--input-literal", "f32[3] {1, -1, 0}")
    assert json.loads(r.stdout)["outputs"][0]["values"] == ["inf", "-inf", "nan"]


def test_iterations_print_timings(tmp):
    mod = write(tmp, "add.hlo", ADD)
    r = invoke("run", mod, "--iterations", "3")
    assert r.exit_code == 0
    assert r.stderr.count("execution time for runner CPU: ") == 3
    assert "\n=== Iteration 0\n" in r.stderr and "\n=== Iteration 2\n" in r.stderr
    one = invoke("run", mod)
    assert "=== Iteration" not in one.stderr and one.stderr.count("execution time") == 1


def test_fake_arguments_are_deterministic(tmp):
    mod = write(tmp, "add.hlo", ADD)
    a, b = invoke("run", mod), invoke("run", mod, "--seed", "42")
    c = invoke("run", mod, "--seed", "7")
    assert a.exit_code == 0 and a.stdout == b.stdout and a.stdout != c.stdout


def test_fake_arguments_respect_constraints(tmp):
    mod = write(tmp, "ds.hlo", DSLICE)
    for seed in range(5):
        r = invoke("run", mod, "--seed", seed, "--print-literals")
        arg1 = r.stdout.split("** Argument 1 **\n")[1].splitlines()[0]
        assert arg1.startswith("s32[] ") and 0 <= int(arg1.split()[1]) <= 7


def test_print_literals(tmp):
    mod = write(tmp, "add.hlo", ADD)
    np.savez(tmp / "in.npz", in0=X, in1=Y)
    r = invoke("run", mod, "--inputs", tmp / "in.npz", "--print-literals")
    assert r.stdout.startswith("** Argument 0 **\nf32[2,3] {\n  { 0, 1, 2 },")
    assert "** Argument 1 **\nf32[2,3] {\n  { 10, 10, 10 }," in r.stdout
    assert "** Result with test runner CPU **\nf32[2,3] {\n  { 10, 11, 12 }," in r.stdout
    r = invoke("run", mod, "--inputs", tmp / "in.npz", "--print-literals", "--backend", "interpreter")
    assert "** Result with test runner Interpreter **\nf32[2,3] {\n  { 10, 11, 12 }," in r.stdout


def test_truncation_and_print_all(tmp):
    mod = write(tmp, "big.hlo", "HloModule big\nENTRY e {\n  x = f32[1000] parameter(0)\n"
                                "  ROOT n = f32[1000] negate(x)\n}\n")
    short = invoke("run", mod, "--input-literal", "f32[1000] {" + ", ".join(
        ["1"] * 998 + ["nan", "-inf"]) + "}").stdout.splitlines()
    assert short[0] == "f32[1000]  min -1  max inf  mean inf  NaN 1  Inf 1"
    assert short[1] == "  first 8: {-1, -1, -1, -1, -1, -1, -1, -1, ...}" and len(short) == 2
    full = invoke("run", mod, "--print-all").stdout
    assert full.startswith("f32[1000] {") and full.count(",") == 999


def test_unsupported_op_exit_3(tmp):
    mod = write(tmp, "u.hlo", UNSUPPORTED)
    r = invoke("run", mod)
    assert r.exit_code == 3
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{mod}:5:") and "hloc_test_no_such_target" in first


def test_unsupported_names_the_instruction_as_written(tmp):
    """The error points at the user's line; when the HLO passes renamed the instruction
    (call-inliner: custom-call.24 -> custom-call.1), it names it as written there too."""
    text = UNSUPPORTED.replace("ENTRY e {", "callee.7 {\n  p.8 = f32[2] parameter(0)\n  ROOT "
                               "custom-call.24 = f32[2] custom-call(p.8), custom_call_target="
                               "\"hloc_test_no_such_target\"\n}\n\nENTRY e {").replace(
        "ROOT c = f32[2] custom-call(a), custom_call_target=\"hloc_test_no_such_target\"",
        "n = f32[2] negate(a)\n  k = f32[2] call(n), to_apply=callee.7\n  ROOT s = f32[2] add(k, n)")
    mod = write(tmp, "u.hlo", text)
    r = invoke("run", mod)
    assert r.exit_code == 3, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{mod}:5:") and "(instruction %custom-call.24, " in first, first
    assert "after the HLO passes" in first


def test_parse_error_exit_2(tmp):
    mod = write(tmp, "bad.hlo", "HloModule m\nENTRY e {\n  ROOT x = f32[] bogus-op()\n}\n")
    r = invoke("run", mod)
    assert r.exit_code == 2 and f"{mod}:3:" in r.stderr


def test_scheduled_module_with_fusion(tmp):
    mod = write(tmp, "f.hlo", """HloModule f, is_scheduled=true

fused {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m = f32[4] multiply(a, b)
  ROOT s = f32[4] add(m, a)
}

ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT f = f32[4] fusion(x, y), kind=kLoop, calls=fused
}
""")
    r = invoke("run", mod, "--input-literal", "f32[4] {1, 2, 3, 4}",
               "--input-literal", "f32[4] {2, 2, 2, 2}")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "f32[4] {3, 6, 9, 12}\n"


def test_python_api():
    m = hloc.parse(ADD)
    out = m.run(X, Y)
    assert out.dtype == np.float32 and np.array_equal(out, X + Y)
    assert np.array_equal(hloc.run(m, X.tolist(), Y, backend="interpreter"), X + Y)
    with pytest.raises(InputError, match="module takes 2, got 1"):
        m.run(X)
    with pytest.raises(InputError, match=r"argument 0 \(x\)"):
        m.run(X.astype(np.float64), Y)
    with pytest.raises(InputError, match="unknown backend"):
        m.run(X, Y, backend="tpu")
    args = hloc.fake_arguments(m, seed=3)
    assert np.array_equal(m.run(*args), args[0] + args[1])
