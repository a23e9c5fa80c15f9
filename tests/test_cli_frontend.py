"""`hloc check` / `hloc fmt`: output, exit codes, and bad input never crashing."""
from __future__ import annotations

import subprocess
import sys

import pytest
from click.testing import CliRunner

from hloc.cli import main

from corpus import TESTDATA

AXPY = TESTDATA / "examples" / "axpy.hlo"


def run(args, input=None):
    return CliRunner().invoke(main, args, input=input)


def test_fmt_prints_module_back():
    r = run(["fmt", str(AXPY)])
    assert r.exit_code == 0
    assert r.output == AXPY.read_text()


def test_fmt_writes_output_file(tmp_path):
    out = tmp_path / "o.hlo"
    r = run(["fmt", str(AXPY), "-o", str(out)])
    assert r.exit_code == 0 and out.read_text() == AXPY.read_text()


def test_check_ok_and_failure_lines(tmp_path):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT r = f32[] frobnicate()\n}\n")
    r = run(["check", str(AXPY), str(bad)])
    assert r.exit_code == 2
    assert f"{AXPY}: OK" in r.output
    assert f"{bad}:3:" in r.output  # mix_stderr: error text is in output too


def test_short_form_prints_canonically():
    text = "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = negate(p)\n}\n"
    r = run(["fmt", "-"], input=text)
    assert r.exit_code == 0
    assert r.output == (
        "HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}\n\n"
        "ENTRY %e (p: f32[2]) -> f32[2] {\n"
        "  %p = f32[2]{0} parameter(0)\n"
        "  ROOT %n = f32[2]{0} negate(%p)\n}\n\n")


def test_glog_prefixes_and_crlf_are_accepted():
    lines = AXPY.read_text().splitlines()
    pasted = "\r\n".join("I0521 12:04:45.883483 1509 service.cc:186] " + l for l in lines)
    r = run(["fmt", "-"], input=pasted)
    assert r.exit_code == 0, r.output
    assert r.output == AXPY.read_text()


def test_several_modules_in_one_file():
    text = AXPY.read_text() + "---\n" + AXPY.read_text()
    r = run(["check", "-"], input=text)
    assert r.exit_code == 0 and "2 modules" in r.output


BAD_INPUTS = {
    "empty": ("", "1:1"),
    "binary": ("\x00\x01\x02\xff garbage", "1:1"),
    "truncated": (AXPY.read_text()[:200], ":"),
    "deep_braces": ("HloModule m\nENTRY e {\n ROOT c = f32[1] constant(" + "{" * 5000
                    + "}" * 5000 + ")\n}\n", "3:"),
    "deep_nesting": ("HloModule m\nENTRY e {\n ROOT c = f32[] " + "negate(" * 5000
                     + "f32[] parameter(0)" + ")" * 5000 + "\n}\n", None),
    "huge_shape": ("HloModule m\nENTRY e {\n ROOT p = f32[10000000000,10000000000,100] "
                   "parameter(0)\n}\n", "3:"),
    "huge_elided_constant": ("HloModule m\nENTRY e {\n ROOT c = f32[100000000000] "
                             "constant({...})\n}\n", None),
    "undefined_name": ("HloModule m\nENTRY e {\n ROOT a = f32[] add(x, y)\n}\n", "3:"),
    "recursive_call": ("HloModule m\nc {\n p = f32[] parameter(0)\n ROOT r = f32[] call(p), "
                       "to_apply=c\n}\nENTRY e {\n p = f32[] parameter(0)\n ROOT r = f32[] "
                       "call(p), to_apply=c\n}\n", "4:"),
    "unknown_op": ("HloModule m\nENTRY e {\n p = f32[] parameter(0)\n ROOT r = f32[] "
                   "frobnicate(p)\n}\n", "4:"),
    "parameter_gap": ("HloModule m\nENTRY e {\n p = f32[] parameter(1)\n ROOT n = f32[] "
                      "negate(p)\n}\n", ":"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_is_a_located_error_not_a_crash(tmp_path, name):
    text, where = BAD_INPUTS[name]
    path = tmp_path / f"{name}.hlo"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    proc = subprocess.run([sys.executable, "-m", "hloc", "check", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    if where is None:       # valid, if silly, input: must simply work
        assert proc.returncode in (0, 2), proc.stderr
        return
    assert proc.returncode == 2, proc.stdout + proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith(f"{path}:") and "error:" in first, first
    assert where in first
