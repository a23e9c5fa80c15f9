"""`hloc opt` as a driver: dump file names (xla/service/dump.cc, hlo_pass_pipeline.cc),
--passes / --list-passes / --disable-passes, already-optimized input, and dump paths
that a module name cannot move outside the dump directory."""
from __future__ import annotations

import os

import pytest

import hloc
from hloc.passes import PASSES, list_passes
from hloc.passes.base import FixedPoint, Pipeline
from hloc.passes.driver import optimize
from hloc.passes.dump import Dumper, file_name_for, sanitize_file_name
from hloc.passes.pipelines import Stages, default_pipeline
from hloc.printer import module_to_text

from opt_cli import invoke_opt

SMALL = """HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %t = (f32[4]{0}, f32[4]{0}) tuple(%p, %p)
  %g = f32[4]{0} get-tuple-element(%t), index=1
  %n1 = f32[4]{0} negate(%g)
  %n2 = f32[4]{0} negate(%p)
  ROOT %r = f32[4]{0} add(%n1, %n2)
}
"""

MINE = ["call-inliner", "cse", "dce", "flatten-call-graph", "tuple-simplifier",
        "zero_sized_hlo_elimination"]


def _pipeline():
    """A small XLA-shaped pipeline: dce, a fixed point (tuple-simplifier, dce), cse."""
    return Stages("cpu", [Pipeline("HLO passes through layout assignment", [
        PASSES["dce"](),
        FixedPoint(Pipeline("simplification", [PASSES["tuple-simplifier"](),
                                               PASSES["dce"]()])),
        PASSES["cse"](),
    ])])


def _dump(tmp_path, pass_re):
    module = hloc.parse(SMALL)
    dumper = Dumper(tmp_path / "dumps", module.name, 0, pass_re)
    optimize(module, _pipeline(), dumper=dumper)
    return sorted(os.listdir(tmp_path / "dumps")), module


# Expected names, derived from HloPassPipeline::RunPassesInternal and
# DumpHloModuleBetweenPassesIfEnabled: each pipeline run (every fixed-point round)
# writes after_pipeline-start.before_<first>; after a pass, a file is written when it
# changed the module or the regex is not exactly ".*", and only if the regex matches
# the pass before or after; one step counter per module; spaces in pipeline names
# become "_" (SanitizeFileName). Round 1 of "simplification" replaces the gte (the
# dead tuple goes with it); round 2 changes nothing; cse then merges the negates.
STAGES = ["module_0000.jit_f.before_optimizations.txt",
          "module_0000.jit_f.cpu_after_optimizations.txt",
          "module_0000.jit_f.debug_options"]
EXPECTED = {
    ".*": [
        "0000.HLO_passes_through_layout_assignment.after_pipeline-start.before_dce",
        "0001.simplification.after_pipeline-start.before_tuple-simplifier",
        "0002.simplification.after_tuple-simplifier.before_dce",
        "0003.simplification.after_pipeline-start.before_tuple-simplifier",
        "0004.HLO_passes_through_layout_assignment.after_simplification.before_cse",
        "0005.HLO_passes_through_layout_assignment.after_cse.before_pipeline-end",
    ],
    "cse": [
        "0000.HLO_passes_through_layout_assignment.after_simplification.before_cse",
        "0001.HLO_passes_through_layout_assignment.after_cse.before_pipeline-end",
    ],
    "^dce$": [
        "0000.HLO_passes_through_layout_assignment.after_pipeline-start.before_dce",
        "0001.HLO_passes_through_layout_assignment.after_dce.before_simplification",
        "0002.simplification.after_tuple-simplifier.before_dce",
        "0003.simplification.after_dce.before_pipeline-end",
        "0004.simplification.after_tuple-simplifier.before_dce",
        "0005.simplification.after_dce.before_pipeline-end",
    ],
    "pipeline-start": [
        "0000.HLO_passes_through_layout_assignment.after_pipeline-start.before_dce",
        "0001.simplification.after_pipeline-start.before_tuple-simplifier",
        "0002.simplification.after_pipeline-start.before_tuple-simplifier",
    ],
}


@pytest.mark.parametrize("pass_re", list(EXPECTED))
def test_dump_file_names_follow_xla(tmp_path, pass_re):
    names, _ = _dump(tmp_path, pass_re)
    passes = [f"module_0000.jit_f.{n}.txt" for n in EXPECTED[pass_re]]
    assert names == sorted(STAGES + passes)


def test_dump_contents(tmp_path):
    names, module = _dump(tmp_path, ".*")
    d = tmp_path / "dumps"
    assert (d / STAGES[0]).read_text() == module_to_text(hloc.parse(SMALL))
    assert (d / STAGES[1]).read_text() == module_to_text(module)
    assert "%t = " not in module_to_text(module) and "negate(%p)" in module_to_text(module)
    step2 = (d / "module_0000.jit_f.0002.simplification.after_tuple-simplifier.before_dce.txt")
    assert "%n1 = f32[4]{0} negate(%p)" in step2.read_text()
    debug = (d / STAGES[2]).read_text()
    assert debug == f'xla_dump_to: "{d}"\nxla_dump_hlo_pass_re: ".*"\n'


def test_no_pass_re_means_stage_files_only(tmp_path):
    names, _ = _dump(tmp_path, None)
    assert names == STAGES


def test_file_names_are_sanitised_and_stay_in_the_directory(tmp_path):
    assert sanitize_file_name("a b/c\\d[e]") == "a_b_c_d_e_"
    assert file_name_for(7, "../../etc/x", "before_optimizations.txt") == \
        "module_0007..._.._etc_x.before_optimizations.txt"
    assert file_name_for(0, "/abs/x\x00\n", "s") == "module_0000._abs_x__.s"
    assert file_name_for(3, "n" * 300, "cpu_after_optimizations.txt") == \
        "module_0003.cpu_after_optimizations.txt"            # too long: name dropped
    for name in ("../../etc/x", "/etc/passwd", "..", "a/../../b"):
        d = tmp_path / "out"
        path = Dumper(d, name).write("before_optimizations.txt", "x")
        assert os.path.dirname(path) == str(d)
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_dump_does_not_follow_symlinks(tmp_path):
    target = tmp_path / "target"
    target.write_text("keep")
    d = tmp_path / "d"
    d.mkdir()
    (d / "module_0000.m.before_optimizations.txt").symlink_to(target)
    from hloc.passes.dump import DumpError
    with pytest.raises(DumpError):
        Dumper(d, "m").write("before_optimizations.txt", "x")
    assert target.read_text() == "keep"


def test_hostile_module_name_is_a_parse_error_and_writes_nothing(tmp_path):
    src = tmp_path / "in.hlo"
    src.write_text("HloModule ../../etc/x\n\nENTRY e { ROOT p = f32[] parameter(0) }\n")
    dumps = tmp_path / "a" / "b"
    result = invoke_opt([src, "--dump-to", dumps])
    assert result.exit_code == 2
    assert not dumps.exists()
    assert sorted(os.listdir(tmp_path)) == ["in.hlo"]


# -- the command line -----------------------------------------------------------------

@pytest.fixture
def small(tmp_path):
    path = tmp_path / "module_0042.jit_f.before_optimizations.txt"
    path.write_text(SMALL)
    return path


def test_list_passes():
    result = invoke_opt(["--list-passes"])
    assert result.exit_code == 0
    names = result.stdout.strip().split(",")
    assert names == sorted(names) == list_passes()
    assert set(MINE) <= set(names)


def test_passes_run_once_in_order(small):
    result = invoke_opt([small, "--passes=cse,tuple-simplifier"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    # cse ran first (the negates differ then), tuple-simplifier second.
    assert "%n1 = f32[4]{0} negate(%p)" in out and "%n2 = f32[4]{0} negate(%p)" in out
    assert "tuple(" not in out
    again = invoke_opt([small, "--passes=tuple-simplifier,cse"]).stdout
    assert "%n2" not in again and "add(%n1, %n1)" in again


def test_passes_dump_in_transforms_pipeline(small, tmp_path):
    d = tmp_path / "new" / "dir"
    result = invoke_opt([small, "--passes=tuple-simplifier,cse", "--dump-to", d,
                         "--dump-pass-re", ".*"])
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(d)) == sorted([
        "module_0042.jit_f.before_optimizations.txt",
        "module_0042.jit_f.cpu_after_optimizations.txt",
        "module_0042.jit_f.debug_options",
        "module_0042.jit_f.0000.transforms_pipeline.after_pipeline-start."
        "before_tuple-simplifier.txt",
        "module_0042.jit_f.0001.transforms_pipeline.after_tuple-simplifier.before_cse.txt",
        "module_0042.jit_f.0002.transforms_pipeline.after_cse.before_pipeline-end.txt",
        "module_0042.jit_f.ir-no-opt.ll",
        "module_0042.jit_f.ir-with-opt.ll",
    ])
    assert (d / "module_0042.jit_f.cpu_after_optimizations.txt").read_text() == result.stdout


def test_dump_to_writes_the_llvm_ir_that_runs(small, tmp_path):
    """*.ir-no-opt.ll / *.ir-with-opt.ll are what `hloc emit-llvm` prints for the
    optimised module; both parse and verify with llvmlite."""
    import llvmlite.binding as llvm

    from hloc.backend import emit_llvm
    from hloc.syntax import parse_module
    d = tmp_path / "d"
    result = invoke_opt([small, "--dump-to", d])
    assert result.exit_code == 0, result.stderr
    m = parse_module(result.stdout, "opt.hlo")
    for suffix, optimized in (("ir-no-opt.ll", False), ("ir-with-opt.ll", True)):
        text = (d / f"module_0042.jit_f.{suffix}").read_text()
        assert text == emit_llvm(m, optimized=optimized)
        llvm.parse_assembly(text).verify()


def test_dump_to_says_why_there_is_no_llvm_ir(tmp_path):
    src = tmp_path / "ch.hlo"     # f16 cholesky over 128 x 128: not compiled (interpreter only)
    src.write_text("HloModule ch\n\nENTRY e {\n  p = f16[129,129] parameter(0)\n"
                   "  ROOT r = f16[129,129] cholesky(p), lower=true\n}\n")
    result = invoke_opt([src, "--dump-to", tmp_path / "d"])
    assert result.exit_code == 0, result.stderr
    assert "no LLVM IR dump: unsupported: cholesky on f16[129,129]" in result.stderr
    assert not list((tmp_path / "d").glob("*.ll"))


def test_module_id_option(small, tmp_path):
    result = invoke_opt([small, "--pipeline=none", "--dump-to", tmp_path / "d",
                         "--module-id", "3"])
    assert result.exit_code == 0
    assert "module_0003.jit_f.before_optimizations.txt" in os.listdir(tmp_path / "d")


def test_unknown_pass_is_an_error_listing_the_known_ones(small):
    result = invoke_opt([small, "--passes=dce,nope"])
    assert result.exit_code == 2
    assert "Pass nope not found. Known passes: " in result.stderr
    known = result.stderr.split("Known passes: ")[1].split()
    assert [n.rstrip(",") for n in known] == list_passes()
    result = invoke_opt([small, "--disable-passes=nope"])
    assert result.exit_code == 2 and "Pass nope not found" in result.stderr


def test_disable_passes(small):
    out = invoke_opt([small, "--passes=tuple-simplifier,cse",
                      "--disable-passes=cse"]).stdout
    assert "%n2 = f32[4]{0} negate(%p)" in out and "%n1 = f32[4]{0} negate(%p)" in out
    assert invoke_opt([small, "--disable-passes=simplification,cse"]).exit_code == 0
    module = hloc.parse(SMALL)                # a nested pipeline is disabled by its name
    optimize(module, _pipeline(), disabled={"simplification"})
    out = module_to_text(module)
    assert "%n1 = f32[4]{0} negate(%g)" in out and "%n2 = f32[4]{0} negate(%p)" in out


def test_pipeline_none_prints_the_module(small):
    result = invoke_opt([small, "--pipeline=none"])
    assert result.exit_code == 0
    assert result.stdout == module_to_text(hloc.parse(SMALL))


def test_verbose_timing_and_output_file(small, tmp_path):
    out = tmp_path / "o.hlo"
    result = invoke_opt([small, "-v", "-o", out])
    assert result.exit_code == 0 and result.stdout == ""
    assert "pass" in result.stderr and "seconds" in result.stderr and "total" in result.stderr
    assert "cse" in result.stderr
    text = out.read_text()
    assert module_to_text(hloc.parse(text)) == text      # the output parses again


SCHEDULED = """HloModule s, is_scheduled=true

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %dead = f32[4]{0} negate(%p)
  ROOT %r = f32[4]{0} add(%p, %p)
}
"""

FUSED = """HloModule f

%fused (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(%a)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %dead = f32[4]{0} exponential(%p)
  ROOT %f = f32[4]{0} fusion(%p), kind=kLoop, calls=%fused
}
"""


@pytest.mark.parametrize("text,why", [(SCHEDULED, "is_scheduled=true"),
                                      (FUSED, "fusion instructions")])
def test_already_optimized_input_is_left_alone(tmp_path, text, why):
    src = tmp_path / "in.hlo"
    src.write_text(text)
    result = invoke_opt([src, "--passes=dce"])
    assert result.exit_code == 0
    assert result.stdout == module_to_text(hloc.parse(text))
    assert "%dead" in result.stdout
    assert "already optimized" in result.stderr and why in result.stderr
    forced = invoke_opt([src, "--passes=dce", "--force"])
    assert forced.exit_code == 0 and "%dead" not in forced.stdout


def test_default_pipeline_dump_starts_with_xla_pipeline_names(small, tmp_path):
    d = tmp_path / "d"
    result = invoke_opt([small, "--dump-to", d, "--dump-pass-re", "pipeline-start"])
    assert result.exit_code == 0, result.stderr
    names = sorted(os.listdir(d))
    first = default_pipeline().stages[0].passes[0].name
    assert names[0] == ("module_0042.jit_f.0000.HLO_passes_through_layout_assignment."
                        f"after_pipeline-start.before_{first}.txt")
    assert any(".simplification.after_pipeline-start." in n for n in names)
    assert any(".HLO_passes_after_layout_assignment.after_pipeline-start." in n
               for n in names)


def test_dump_pass_re_needs_dump_to(small):
    result = invoke_opt([small, "--dump-pass-re", ".*"])
    assert result.exit_code == 2


def test_unknown_pass_in_a_pipeline_is_an_error_when_built():
    from hloc.passes.base import PassError
    from hloc.passes.pipelines import _passes, pipeline_names
    with pytest.raises(PassError, match="Pass simplify-sorts not found"):
        _passes("algsimp", "simplify-sorts")
    names = pipeline_names(default_pipeline())
    assert all(n in PASSES for n in names if n not in _PIPELINE_NAMES), names


_PIPELINE_NAMES = {"cpu", "HLO passes through layout assignment", "simplification",
                   "dot-library-passes", "HLO passes after layout assignment",
                   "simplification after layout assignment"}


def test_progress_names_the_passes_that_take_long():
    import io

    from hloc.passes.base import Pass, PassContext, Pipeline
    from hloc.progress import Progress

    class Clock:
        t = 0.0

        def __call__(self):
            return self.t

    clock, out = Clock(), io.StringIO()
    seen = []

    class Quick(Pass):
        name = "quick"

        def run(self, module, ctx):
            seen.append(ctx.progress._current)
            clock.t += 0.1
            return False

    class Slow(Pass):
        name = "slow"

        def run(self, module, ctx):
            seen.append(ctx.progress._current)
            clock.t += 3.0
            return False

    progress = Progress(out, enabled=True, clock=clock, threshold=2.0)
    module = hloc.parse("HloModule m\nENTRY e { ROOT p = f32[] parameter(0) }\n")
    with progress.phase("passes", "m"):
        PassContext(progress=progress).run_pass(Pipeline("p", [Quick(), Slow()]), module)
    progress.close()
    assert seen == ["pass quick", "pass slow"]
    assert out.getvalue() == \
        "hloc: passes m ...\nhloc:   pass slow 3.00 s\nhloc: passes m 3.10 s\n"
