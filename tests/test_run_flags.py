"""run_hlo_module's spellings, the --output convention, and the progress facility."""
from __future__ import annotations

import io
import json

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

import hloc
from hloc.cli import main
from hloc.inputs import TYPE_TABLE, load_npz
from hloc.progress import NULL, Progress

ADD = """HloModule add_mod

ENTRY e {
  x = f32[2] parameter(0)
  y = f32[2] parameter(1)
  ROOT s = f32[2] add(x, y)
}
"""
ARGS = ["--input-literal", "f32[2] {1, 2}", "--input-literal", "f32[2] {10, 20}"]
OUT = "f32[2] {11, 22}\n"


@pytest.fixture
def mod(tmp_path):
    p = tmp_path / "add.hlo"
    p.write_text(ADD)
    return str(p)


def invoke(*args, env=None):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


@pytest.mark.parametrize("flags", [
    ["--input_format=hlo"], ["--input_format", "hlo"], ["--platform=interpreter"],
    ["--platform", "Interpreter"], ["--reference_platform="], ["--print_all"],
    ["--use_large_float_range"], ["--abs_error_bound=0.1"], ["--random_init_input_literals"],
    ["--no_verify"], ["--iterations=1"], ["--input-format=hlo"], ["--reference-platform="],
    ["--print-all"]])
def test_run_hlo_module_spellings_map(mod, flags):
    r = invoke("run", mod, *ARGS, *flags)
    assert r.exit_code == 0, r.output
    assert r.stdout == OUT


def test_input_module_and_print_literals(mod):
    r = invoke("run", f"--input_module={mod}", "--print_literals", *ARGS)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("** Argument 0 **\nf32[2] {1, 2}\n** Argument 1 **")
    assert r.stdout.endswith("** Result with test runner CPU **\n" + OUT)     # the default


@pytest.mark.parametrize("flag", ["--reference_platform=interpreter",
                                  "--run_test_hlo_passes=false", "--output_literals_file=o.pb"])
def test_opt_refuses_flags_of_running_without_speaking_of_run(mod, flag):
    r = invoke("opt", mod, flag)
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and "hloc opt only optimises" in r.stderr, r.stderr
    assert "hloc run" not in r.stderr


@pytest.mark.parametrize("flags,words", [
    (["--platform=cuda"], "no GPU back end"),
    (["--reference_platform=interpreter"], "--expected OUT.npz"),
    (["--input_format=mhlo"], "hloc reads HLO text"),
    (["--xla_dump_to=/tmp/x"], "hloc opt MODULE --dump-to DIR"),
    (["--xla_disable_hlo_passes=dce"], "hloc opt MODULE --disable-passes"),
    (["--xla_enable_hlo_passes_only=dce"], "hloc opt MODULE --enable-passes-only"),
    (["--run_test_hlo_passes=false"], "--no-opt"),
    (["--run_reference_hlo_passes=false"], "hloc replay"),
    (["--xla_cpu_use_thunk_runtime=false"], "does not read XLA's debug options"),
    (["--input_literals_file=a.pbtxt"], "--inputs"),
    (["--xla-dump-to=/tmp/x"], "hloc opt MODULE --dump-to DIR"),
    (["--reference-platform", "cpu"], "--expected OUT.npz"),
])
def test_refused_spellings_say_why_in_one_line(mod, flags, words):
    r = invoke("run", mod, *ARGS, *flags)
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("error: --"), r.stderr
    assert words in r.stderr
    assert "No such option" not in r.stderr and "Did you mean" not in r.stderr
    # hloc run compiles, and runs the default pipeline on before-optimizations modules
    assert "does not compile" not in r.stderr and "with no HLO passes" not in r.stderr


def test_platform_table_follows_the_registered_backends(mod, monkeypatch):
    from hloc import runner
    monkeypatch.setitem(runner.BACKENDS, "cpu", runner.BACKENDS["interpreter"])
    r = invoke("run", mod, *ARGS, "--platform=cpu")
    assert r.exit_code == 0 and r.stdout == OUT


def test_platform_cpu_runs_the_compiled_back_end(mod, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    r = invoke("run", mod, *ARGS, "--platform=cpu", "--print_literals")
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith("** Result with test runner CPU **\n" + OUT)


def test_opt_maps_xla_pass_flags(mod, tmp_path):
    r = invoke("opt", mod, f"--xla_dump_to={tmp_path / 'd'}", "--xla_dump_hlo_as_text",
               "--xla_disable_hlo_passes=dce")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == [
        "module_0000.add_mod.before_optimizations.txt",
        "module_0000.add_mod.cpu_after_optimizations.txt", "module_0000.add_mod.debug_options",
        "module_0000.add_mod.ir-no-opt.ll", "module_0000.add_mod.ir-with-opt.ll"]
    r = invoke("opt", mod, "--xla_dump_hlo_module_re=.*")
    assert r.exit_code == 2 and "does not read XLA's debug options" in r.stderr
    r = invoke("opt", mod, "--xla_disable_hlo_passes=no-such-pass")
    assert r.exit_code == 2 and "Pass no-such-pass not found" in r.stderr


def test_unknown_options_still_get_clicks_error(mod):
    r = invoke("run", mod, "--no_such_thing")
    assert r.exit_code == 2 and "No such option" in r.stderr


def test_opt_reads_pass_flags_from_xla_flags(mod):
    env = {"XLA_FLAGS": "--xla_dump_to=/nonexistent --xla_enable_hlo_passes_only=dce,cse"}
    r = invoke("opt", mod, "-v", env=env)
    assert r.exit_code == 0, r.output
    assert "hloc opt: from XLA_FLAGS: --xla_enable_hlo_passes_only=dce,cse" in r.stderr
    ran = {line.split()[0] for line in r.stderr.splitlines()[2:] if line.strip()}
    assert ran <= {"dce", "cse", "total"}, r.stderr
    env = {"XLA_FLAGS": "--xla_disable_hlo_passes=dce --xla_enable_hlo_passes_only=cse"}
    r = invoke("opt", mod, env=env)
    assert r.exit_code == 2 and "only one of" in r.stderr


def test_help_documents_iterations_and_output_convention():
    text = " ".join(invoke("run", "--help").stdout.split())
    assert "unlike run_hlo_module, which draws new random arguments for every iteration, " \
        "hloc runs every iteration on the same arguments" in text
    assert "'hloc:dtypes'" in text and "hloc.load_outputs" in text


# ---------------------------------------------------------------------------
# --output convention

def test_output_round_trips_bf16(tmp_path):
    p = tmp_path / "b.hlo"
    p.write_text("HloModule b\nENTRY e {\n  x = bf16[3] parameter(0)\n"
                 "  n = bf16[3] negate(x)\n  i = s4[2] constant({1, -2})\n"
                 "  ROOT t = (bf16[3], s4[2]) tuple(n, i)\n}\n")
    r = invoke("run", p, "--input-literal", "bf16[3] {1, 2.5, -3}", "--output",
               tmp_path / "o.npz")
    assert r.exit_code == 0, r.output
    outs = hloc.load_outputs(tmp_path / "o.npz")
    assert outs[0].dtype == ml_dtypes.bfloat16 and outs[1].dtype == ml_dtypes.int4
    assert outs[0].tolist() == [-1, -2.5, 3] and outs[1].tolist() == [1, -2]
    raw = np.load(tmp_path / "o.npz")
    assert sorted(raw.files) == sorted(["out0", "out1", TYPE_TABLE])
    assert json.loads(str(raw[TYPE_TABLE])) == {"out0": "bfloat16", "out1": "int4"}


def test_a_key_named_dtypes_is_data(tmp_path):
    np.savez(tmp_path / "in.npz", dtypes=np.arange(3), other=np.ones(2))
    assert sorted(load_npz(tmp_path / "in.npz")) == ["dtypes", "other"]


# ---------------------------------------------------------------------------
# Progress

class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_progress_is_silent_for_quick_work():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, enabled=True, clock=clock, threshold=2.0)
    with p.phase("parse"):
        clock.t += 0.5
    p.close()
    assert out.getvalue() == "" and p.timings == [("parse", 0.5)]


def test_progress_shows_phases_after_the_threshold():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, enabled=True, clock=clock, threshold=2.0)
    with p.phase("parse", "m.hlo"):
        clock.t += 1.5
    with p.phase("passes"):
        clock.t += 1.0
    bar = p.bar(2, "check")
    bar.step("a")
    bar.step("b")
    bar.close()
    p.close()
    text = out.getvalue()
    assert text.startswith("hloc: parse m.hlo 1.50 s\nhloc: passes 1.00 s\n")
    assert "check [" in text and text.endswith("hloc: check: 2 done\n")
    assert "\x1b[2m" not in text


def test_progress_off_and_null_print_nothing():
    out, clock = io.StringIO(), Clock()
    p = Progress(out, enabled=False, clock=clock)
    with p.phase("run"):
        clock.t += 10
    with NULL.phase("run"):
        pass
    NULL.bar(3, "x").step("y")
    assert out.getvalue() == ""


def test_quiet_flag_and_non_terminal_stderr(mod):
    r = invoke("--quiet", "run", mod, *ARGS)
    assert r.exit_code == 0 and r.stdout == OUT
    assert not any(line.startswith("hloc: ") for line in r.stderr.splitlines())


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_cli_progress_follows_terminal_quiet_and_no_color(monkeypatch):
    import sys

    import click

    from hloc.cli_common import cli_progress
    monkeypatch.setattr(sys, "stderr", _Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    p = cli_progress()
    assert p.enabled and p.color
    p.close()
    monkeypatch.setenv("NO_COLOR", "1")
    p = cli_progress()
    assert p.enabled and not p.color
    p.close()
    with click.Context(main) as ctx:
        ctx.params["quiet"] = True
        assert cli_progress() is NULL
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert cli_progress() is NULL


def test_write_errors_are_input_errors(mod, tmp_path):
    for command in ("fmt", "opt"):
        r = invoke(command, mod, "-o", tmp_path / "no-such-dir" / "o.hlo")
        assert r.exit_code == 2 and "cannot write" in r.stderr, r.output


@pytest.mark.parametrize("flag", ["--xla_disable_hlo_passes=dce",
                                  "--xla_enable_hlo_passes_only=dce"])
def test_pass_flag_advice_runs_the_chosen_passes_only(mod, flag):
    """The advice ends in `hloc run --no-opt OUT`: a plain `hloc run OUT` runs the whole
    default pipeline again on a module that is not yet optimised (no fusion, not
    scheduled), i.e. the passes the user left out as well."""
    r = invoke("run", mod, *ARGS, flag)
    assert r.exit_code == 2
    assert "then `hloc run --no-opt OUT`" in r.stderr, r.stderr
