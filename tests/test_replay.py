"""hloc replay / bisect / reduce: run_hlo_module's console lines and exit codes, and a
planted miscompile (a broken pass, a back end that miscomputes one op) found by bisect
and shrunk by reduce to a small module that still fails."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import hloc
from hloc.cli import main
from hloc.passes import Pass, Pipeline, get_pass
from hloc.replay import ReplayConfig, replay_module
from hloc.runner import BACKENDS, InterpreterBackend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DUMPS = os.path.join(ROOT, "testdata", "dumps")
DENSE = os.path.join(DUMPS, "dense_relu.before_optimizations.hlo")
BERT = os.path.join(DUMPS, "bert_train_step.before_optimizations.hlo")

AXPY = """HloModule axpy
ENTRY e {
  a = f32[] parameter(0)
  x = f32[64] parameter(1)
  y = f32[64] parameter(2)
  b = f32[64] broadcast(a), dimensions={}
  m = f32[64] multiply(b, x)
  e = f32[64] exponential(m)
  ROOT s = f32[64] add(e, y)
}
"""


class PlantedBrokenPass(Pass):
    """Test only: turns every non-ROOT multiply of the ENTRY into an add."""
    name = "planted-broken-pass"

    def run(self, module, ctx) -> bool:
        from hloc.ir.rewriter import add_instruction
        comp, changed = module.entry, False
        for inst in list(comp.instructions):
            if inst.opcode == "multiply" and inst is not comp.root:
                new = add_instruction(comp, "add", inst.shape, list(inst.operands), before=inst)
                inst.replace_all_uses_with(new)
                comp.remove_instruction(inst)
                changed = True
        return changed


def broken_pipeline():
    return Pipeline("planted", [get_pass("call-inliner"), get_pass("algsimp"),
                                PlantedBrokenPass(), get_pass("dce")])


class WrongOpBackend(InterpreterBackend):
    """Test only: a back end whose code for one opcode is 1% off, as a broken emitter
    would be: `prepare` multiplies every such instruction's result by 1.01 (a rewrite
    of the module's text, so it relies on no interpreter internals) and runs that."""
    runner_name = "WrongExp"

    def __init__(self, opcode):
        self.opcode = opcode
        self.name = f"wrong-{opcode}"

    def prepare(self, module, *, seed):
        line = re.compile(rf"^(\s*)(ROOT )?%?([\w.\-]+) = ((\w+)\[[^\]]*\]\S*) "
                          rf"{re.escape(self.opcode)}\((.*)$")
        out = []
        for text in hloc.to_text(module).splitlines():
            m = line.match(text)
            if m is None:
                out.append(text)
                continue
            ind, root, name, shape, ty, rest = m.groups()
            out += [f"{ind}%{name}.planted = {shape} {self.opcode}({rest}",
                    f"{ind}%{name}.k = {ty}[] constant(1.01)",
                    f"{ind}%{name}.kb = {shape} broadcast(%{name}.k), dimensions={{}}",
                    f"{ind}{root or ''}%{name} = {shape} multiply(%{name}.planted, %{name}.kb)"]
        return super().prepare(hloc.parse("\n".join(out)), seed=seed)


def _planted_backend(opcode):
    backend = WrongOpBackend(opcode)
    BACKENDS[backend.name] = backend
    try:
        yield backend.name
    finally:
        del BACKENDS[backend.name]


@pytest.fixture
def wrong_exp():
    yield from _planted_backend("exponential")


@pytest.fixture
def wrong_log():
    yield from _planted_backend("log")


def _invoke(args):
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


# ---------------------------------------------------------------------------
# replay: run_hlo_module's lines

def test_replay_console_lines_as_run_hlo_module():
    code, out, err = _invoke(["replay", "--platform=interpreter", DENSE])
    assert code == 0
    assert out == f"\n ** Running {DENSE}** \n"
    num = r"[0-9.e+-]+"
    expected = [r"Running HLO module with runner Interpreter\.\.\.",
                rf"\.\.\. compiled and ran in {num}s\.",
                rf"execution time for runner Interpreter: {num}s\.",
                r"Running HLO module with runner Interpreter\.\.\.",
                rf"\.\.\. compiled and ran in {num}s\.",
                rf"execution time for runner Interpreter: {num}s\.",
                r"", r"\*\* Results on Interpreter and Interpreter are close enough\. \*\*",
                r"0/1 runs failed\."]
    lines = err.splitlines()
    assert len(lines) == len(expected), err
    for line, pattern in zip(lines, expected):
        assert re.fullmatch(pattern, line), (line, pattern)


def test_replay_print_literals_and_iterations():
    code, out, err = _invoke(["replay", "--platform=interpreter", "--print_literals",
                              "--iterations=2", DENSE])
    assert code == 0
    assert out.count("** Argument 0 **") == 2
    assert out.count("** Result with test runner Interpreter **") == 2
    assert out.count("** Result with reference runner Interpreter **") == 2
    assert "\n=== Iteration 1\n" in err and "\n=== Iteration 2\n" in err
    assert err.rstrip().endswith("0/2 runs failed.")


def test_fake_arguments_continue_across_iterations():
    m = hloc.parse_file(DENSE)
    o = replay_module(m, ReplayConfig(iterations=2))
    a0, a1 = o.arguments
    assert not np.array_equal(a0[0], a1[0])          # one engine per file, continuing
    o2 = replay_module(m, ReplayConfig(iterations=1))
    assert np.array_equal(o2.arguments[0][0], a0[0])  # seeded: the same first draw


def test_after_optimizations_dump_not_optimised_again():
    path = os.path.join(DUMPS, "dense_relu.after_optimizations.hlo")
    m = hloc.parse_file(path)
    o = replay_module(m, ReplayConfig(), path=path)
    assert not o.optimized and o.ok
    assert "after-optimizations dump" in o.notes[0]
    assert replay_module(m, ReplayConfig(run_test_passes=True), path=path).optimized


def test_replay_mismatch_report_and_exit_code(wrong_exp, tmp_path):
    f = tmp_path / "axpy.hlo"
    f.write_text(AXPY)
    code, out, err = _invoke(["replay", "--platform", wrong_exp, str(f)])
    assert code == 1
    assert "Running HLO module with runner WrongExp..." in err
    assert re.search(r"INVALID_ARGUMENT: Mismatch count \d+ \([0-9.]+%\) in shape f32\[64\] "
                     r"\(64 elements\), abs bound 0.001, rel bound 0.001", err), err
    assert "Top relative error mismatches:" in err
    assert "Absolute magnitude breakdown of actual values:" in err   # >= 64 elements
    assert err.rstrip().endswith("1/1 runs failed.")
    # Bounds wide enough for a 1% error: close enough (an element fails only past both).
    code, _, err = _invoke(["replay", "--platform", wrong_exp, "--rel_error_bound=0.02",
                            str(f)])
    assert code == 0, err


def test_replay_planted_broken_pass_mismatches():
    m = hloc.parse_file(BERT)
    lines = []
    o = replay_module(m, ReplayConfig(pipeline=broken_pipeline), err=lines.append)
    assert not o.ok and o.failed_runs == 1
    assert any(line.startswith("INVALID_ARGUMENT: Array at shape index") for line in lines)
    assert replay_module(m, ReplayConfig()).ok


def test_replay_inputs_and_output_literals(tmp_path):
    npz = os.path.join(DUMPS, "dense_relu.npz")
    out = tmp_path / "lits.npz"
    code, _, err = _invoke(["replay", "--platform=interpreter", "--inputs", npz,
                            "--output_literals_file", str(out), DENSE])
    assert code == 0, err
    got = np.load(out)
    assert {"arg0", "arg1", "arg2", "test.out0", "reference.out0"} <= set(got.files)
    assert np.array_equal(got["test.out0"], got["reference.out0"])


def test_replay_inputs_takes_one_npy_per_parameter_as_run_does(tmp_path):
    """`--inputs a.npy b.npy c.npy` (as `hloc run` takes it): the .npy/.npz words after
    --inputs are arguments, not modules to replay; the module may come before or after."""
    d = np.load(os.path.join(DUMPS, "dense_relu.npz"))
    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"a{i}.npy"))
        np.save(paths[-1], d[f"in{i}"])
    for args in (["--inputs", *paths, DENSE], [DENSE, "--inputs", *paths]):
        code, out, err = _invoke(["replay", "--platform=interpreter", "--print_literals",
                                  *args])
        assert code == 0, err
        assert "close enough" in out + err and "error" not in out + err
    code, out, err = _invoke(["replay", "--platform=interpreter", "--inputs",
                              os.path.join(DUMPS, "dense_relu.npz"), DENSE])
    assert code == 0, err


def test_replay_refusals():
    code, _, err = _invoke(["replay", "--input_format=pb", DENSE])
    assert code == 2 and "not an HloSnapshot, HloProto or HloModuleProto" in err
    code, _, err = _invoke(["replay", "--input_format=mhlo", DENSE])
    assert code == 2 and "--input-format" in err
    code, _, err = _invoke(["replay", "--platform=tpu", DENSE])
    assert code == 2 and "--platform" in err
    code, _, err = _invoke(["replay", "--input_literals_file=x.pb", DENSE])
    assert code == 2 and "RunHloModuleLiterals" in err


def test_replay_without_reference():
    code, _, err = _invoke(["replay", "--platform=interpreter", "--reference_platform=",
                            DENSE])
    assert code == 0 and "Skipping reference runner" in err


# ---------------------------------------------------------------------------
# replay over a dump directory

def test_replay_dump_directory_table_and_json(tmp_path):
    d = os.path.join(ROOT, "testdata", "dumpdir")
    code, out, err = _invoke(["replay", "--platform=interpreter", d])   # one module:
    assert code == 0 and out.startswith("\n ** Running ") and "before_optimizations" in out
    for stage in ("before", "after"):
        code, out, _ = _invoke(["replay", "--platform=interpreter", "--json", f"--stage={stage}", d])
        objs = [json.loads(line) for line in out.splitlines()]
        assert code == 0 and len(objs) == 1 and objs[0]["status"] == "ok", out
        assert f"{stage}_optimizations" in objs[0]["file"]
        assert objs[0]["optimized"] == (stage == "before")
    for n, name in ((3, "dense_relu"), (1, "argmax_argmin")):
        for stage in ("before_optimizations", "after_optimizations"):
            src = os.path.join(DUMPS, f"{name}.{stage}.hlo")
            (tmp_path / f"module_{n:04d}.jit_{name}.{stage}.txt").write_text(open(src).read())
    (tmp_path / "module_0001.jit_argmax_argmin.ir-no-opt.ll").write_text("; ModuleID = 'x'\n")
    (tmp_path / "module_0001.jit_argmax_argmin.cpu_after_optimizations-buffer-assignment.txt"
     ).write_text("BufferAssignment:\n")
    code, out, err = _invoke(["replay", "--platform=interpreter", "-v", str(tmp_path)])
    assert code == 0, out + err
    rows = [line for line in out.splitlines() if line.startswith("ok ")]
    assert [r.split()[-1].rsplit("/", 1)[-1] for r in rows] == [
        "module_0001.jit_argmax_argmin.before_optimizations.txt",
        "module_0003.jit_dense_relu.before_optimizations.txt"]
    assert out.splitlines()[-1] == "2 ok of 2 files"
    assert "skipped: " in err and "LLVM IR" in err and "buffer assignment" in err


def test_replay_jobs_in_processes(tmp_path):
    for name in ("dense_relu", "bf16_arith", "argmax_argmin"):
        src = os.path.join(DUMPS, f"{name}.before_optimizations.hlo")
        (tmp_path / f"{name}.before_optimizations.hlo").write_text(open(src).read())
    (tmp_path / "bad.before_optimizations.hlo").write_text("HloModule bad\nENTRY e {\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "hloc", "replay", "--platform=interpreter",
                           "--jobs", "2", "--json", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    objs = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["status"] for o in objs] == ["ok", "error", "ok", "ok"], done.stdout
    assert done.returncode == 2


# ---------------------------------------------------------------------------
# bisect

def test_bisect_names_the_planted_pass():
    from hloc.bisect import bisect
    m = hloc.parse_file(BERT)
    args = hloc.fake_arguments(m)
    from hloc.passes import PASSES
    PASSES[PlantedBrokenPass.name] = PlantedBrokenPass    # so the pair can be shrunk
    try:
        r = bisect(m, args, pipeline=broken_pipeline)
    finally:
        del PASSES[PlantedBrokenPass.name]
    assert r.kind == "pass" and r.pass_name == "planted-broken-pass", r.summary
    assert "multiply(" in r.before and r.before != r.after
    # the passes before it changed the module and still agree: the search found the first
    assert r.step > 0
    small_before, small_after, small_args = r.pair
    assert _count(small_before) <= 5, small_before
    assert " multiply(" in small_before and " multiply(" not in small_after
    assert len(small_args) == len(hloc.parse(small_before).entry.parameters)


def test_bisect_names_the_miscomputing_instruction(wrong_exp, tmp_path):
    f = tmp_path / "axpy.hlo"
    f.write_text(AXPY)
    table = tmp_path / "scores.txt"
    code, out, err = _invoke(["bisect", "--platform", wrong_exp, "--per-instruction",
                              str(table), str(f)])
    assert code == 1, out + err
    assert "instruction %" in out and "exponential(" in out   # the isolated module
    rows = {line.split()[0]: line.split() for line in table.read_text().splitlines()[1:]}
    bad = [name for name, row in rows.items() if row[2] == "MISMATCH"]
    assert len(bad) == 1 and bad[0] in out
    assert 0.005 < float(rows[bad[0]][4]) < 0.02     # max rel error: exp 1% off, then + y


def test_bisect_nothing_to_find():
    code, out, _ = _invoke(["bisect", "--platform=interpreter", DENSE])
    assert code == 0 and "nothing to bisect" in out


# ---------------------------------------------------------------------------
# reduce

def _count(text):
    m = hloc.parse(text)
    return sum(len(c.instructions) for c in m.computations)


def test_reduce_planted_pass_bug_to_a_small_valid_module():
    from hloc.reduce import mismatch_predicate, reduce_module
    from hloc.verifier import verify
    text = open(BERT).read()
    assert _count(text) > 1000
    pred = mismatch_predicate(ReplayConfig(pipeline=broken_pipeline))
    r = reduce_module(text, pred)
    assert r.instructions <= 10, r.text
    m = hloc.parse(r.text)
    verify(m)
    assert any(i.opcode == "multiply" for i in m.entry.instructions)
    assert pred(r.text)
    assert reduce_module(text, pred).text == r.text           # deterministic


def test_reduce_miscomputing_op_cli(wrong_log, tmp_path):
    # The train steps compute NaN losses from fake arguments (JAX's take_along_axis fills
    # out-of-range labels with NaN), so both sides agree; special_functions does not.
    out = tmp_path / "small.hlo"
    src = os.path.join(DUMPS, "special_functions.before_optimizations.hlo")
    assert _count(open(src).read()) > 700
    code, _, err = _invoke(["reduce", "--platform", wrong_log, "-o", str(out), src])
    assert code == 0, err
    text = out.read_text()
    m = hloc.parse(text)
    assert _count(text) <= 10 and any(i.opcode == "log"
                                      for c in m.computations for i in c.instructions), text


def test_reduce_training_step_with_real_inputs(wrong_log, tmp_path):
    """A real 2,556-instruction training step (XLA's before-optimizations dump of a 6-layer
    transformer, testdata/reduce) on a back end whose `log` is 1% off: reduced with the
    recorded inputs to a module of at most 10 instructions whose arguments are the values
    the big module computed there, and which still mismatches when replayed."""
    src = os.path.join(ROOT, "testdata", "reduce", "bert6_train_step.before_optimizations.hlo")
    npz = os.path.join(ROOT, "testdata", "reduce", "bert6_train_step.npz")
    assert _count(open(src).read()) >= 2000
    out, args = tmp_path / "small.hlo", tmp_path / "small.npz"
    code, _, err = _invoke(["reduce", "--platform", wrong_log, "--inputs", npz,
                            "--output-inputs", str(args), "-o", str(out), src])
    assert code == 0, err
    assert re.search(r"2556 -> \d+ instructions", err), err
    m = hloc.parse(out.read_text())
    assert _count(out.read_text()) <= 10
    assert any(i.opcode == "log" for c in m.computations for i in c.instructions)
    code, _, err = _invoke(["replay", "--platform", wrong_log, "--inputs", str(args), str(out)])
    assert code == 1 and "Mismatch count" in err
    code, _, err = _invoke(["replay", "--platform=interpreter", "--inputs", str(args), str(out)])
    assert code == 0, err


def test_reduce_with_a_command_predicate(tmp_path):
    env_py = sys.executable
    cmd = f"{env_py} -c \"import sys; sys.exit(0 if 'divide(' in open(sys.argv[1]).read() else 1)\""
    out = tmp_path / "r.hlo"
    code, _, err = _invoke(["reduce", "--predicate", cmd, "-o", str(out), DENSE.replace(
        "dense_relu", "cnn_train_step")])
    assert code == 0, err
    assert "divide(" in out.read_text() and _count(out.read_text()) <= 6


def test_reduce_refuses_when_predicate_does_not_hold():
    code, _, err = _invoke(["reduce", "--platform=interpreter", DENSE])
    assert code == 2 and "does not hold" in err


def test_compiled_style_reference_platform(wrong_exp, tmp_path):
    f = tmp_path / "axpy.hlo"
    f.write_text(AXPY)
    code, _, err = _invoke(["replay", "--platform=interpreter",
                            f"--reference_platform={wrong_exp}", str(f)])
    assert code == 1 and "runner WrongExp..." in err and "Mismatch count" in err


RNG = """HloModule r
ENTRY e {
  lo = f32[] parameter(0)
  hi = f32[] parameter(1)
  ROOT r = f32[4] rng(lo, hi), distribution=rng_uniform
}
"""


@pytest.mark.parametrize("flag,differ", [([], False), (["--different_random_seeds"], True)])
def test_different_random_seeds(tmp_path, flag, differ):
    f = tmp_path / "rng.hlo"
    f.write_text(RNG)
    code, out, err = _invoke(["replay", "--platform=interpreter", "--print_literals",
                              "--iterations=2", "--input-literal", "f32[] 0",
                              "--input-literal", "f32[] 1", *flag, str(f)])
    assert code == 0, err
    results = re.findall(r"\*\* Result with test runner Interpreter \*\*\n(.*)", out)
    assert len(results) == 2 and (results[0] != results[1]) == differ, out


def test_isolate_instructions_table(wrong_exp, tmp_path):
    f = tmp_path / "axpy.hlo"
    f.write_text(AXPY)
    code, out, _ = _invoke(["replay", "--platform", wrong_exp, "--isolate_instructions",
                            "--run_test_hlo_passes=false", str(f)])
    lines = out.splitlines()
    head = lines.index(" Reference            | Test                 | Module"
                       "                        | Status")
    assert lines[head + 1] == "-" * 110
    rows = {line.split("|")[2].strip(): line for line in lines[head + 2:] if line.count("|") == 3}
    assert rows["isolated_e"].startswith(" MISMATCH             | MISMATCH             | ")
    assert rows["isolated_m"].startswith(" MATCHED              | MATCHED              | ")
    assert code == 1


class FailingOpBackend(InterpreterBackend):
    """Test only: a back end whose compiler crashes on one opcode."""
    runner_name = "Failing"

    def __init__(self, opcode):
        self.opcode = opcode
        self.name = f"failing-{opcode}"

    def prepare(self, module, *, seed):
        if any(i.opcode == self.opcode for c in module.computations for i in c.instructions):
            raise RuntimeError(f"planted crash in {self.opcode}")
        return super().prepare(module, seed=seed)


def test_reduce_fails_with_message(tmp_path):
    backend = FailingOpBackend("divide")
    BACKENDS[backend.name] = backend
    try:
        out = tmp_path / "r.hlo"
        src = os.path.join(DUMPS, "cnn_train_step.before_optimizations.hlo")
        code, _, err = _invoke(["reduce", "--platform", backend.name, "--fails-with",
                                "planted crash in divide", "-o", str(out), src])
    finally:
        del BACKENDS[backend.name]
    assert code == 0, err
    text = out.read_text()
    assert "divide(" in text and _count(text) <= 4, text


@pytest.mark.skipif("cpu" not in BACKENDS, reason="no compiled back end")
def test_compiled_platform_numerics(tmp_path, monkeypatch):
    """On the compiled back end (run_hlo_module's Host), XLA:CPU numerics flush subnormals
    and so disagree with the interpreter on special_floats_arith; IEEE numerics agree."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(BACKENDS, "cpu", BACKENDS["cpu"])   # the CLI reconfigures it
    src = os.path.join(DUMPS, "special_floats_arith.before_optimizations.hlo")
    npz = os.path.join(DUMPS, "special_floats_arith.npz")
    code, _, err = _invoke(["replay", "--inputs", npz, src])
    assert code == 1 and "Running HLO module with runner Host..." in err
    code, _, err = _invoke(["replay", "--platform=cpu", "--numerics=ieee", "--inputs", npz, src])
    assert code == 0 and "** Results on Host and Interpreter are close enough. **" in err
    code, out, _ = _invoke(["bisect", "--inputs", npz, src])
    assert code == 1 and "computes a different value on cpu" in out


@pytest.fixture
def broken_log_emitter(monkeypatch):
    """Test only: the compiled back end's element generator for `log` multiplies its
    result by 1.01 (a deliberately broken emitter; the library's cpu back end has no
    object cache, so nothing compiled with it outlives the test)."""
    from llvmlite import ir

    import hloc.backend  # noqa: F401  (registers the emitters, whatever ran before)
    from hloc.ops import facets
    good = facets.get("emit", "log")
    assert good is not None

    def wrong(kb, inst, operands, index):
        v = good(kb, inst, operands, index)
        return kb.b.fmul(v, ir.Constant(v.type, 1.01))
    # A facet attached to the opcode itself wins over its semantic key's (hloc.ops.facets).
    monkeypatch.setitem(facets._TABLES["emit"], "log", wrong)
    from hloc.cli_backend import CpuBackend
    monkeypatch.setitem(BACKENDS, "cpu", CpuBackend())     # no object cache


LOG_SOFTMAX = """HloModule log_softmax
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  x = f32[4,64] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[4,64] broadcast(mx), dimensions={0}
  d = f32[4,64] subtract(x, mxb)
  ex = f32[4,64] exponential(d)
  zero = f32[] constant(0)
  sum = f32[4] reduce(ex, zero), dimensions={1}, to_apply=add_f32
  lg = f32[4] log(sum)
  lgb = f32[4,64] broadcast(lg), dimensions={0}
  ROOT out = f32[4,64] subtract(d, lgb)
}
"""


@pytest.mark.skipif("cpu" not in BACKENDS, reason="no compiled back end")
def test_broken_emitter_found_and_reduced_on_the_compiled_back_end(broken_log_emitter):
    """A log-softmax on the compiled back end with its `log` emitter broken: replay
    mismatches, bisect names the (fused) instruction holding the log and the log inside it,
    reduce keeps it."""
    from hloc.bisect import bisect
    from hloc.reduce import mismatch_predicate, reduce_module
    m = hloc.parse(LOG_SOFTMAX)
    config = ReplayConfig(test_backend="cpu")
    assert not replay_module(m, config).ok
    b = bisect(m, hloc.fake_arguments(m), test_backend="cpu")
    assert b.kind == "instruction" and " log(" in b.after, b.summary
    # Inside the fusion holding it, the log itself is named, isolated on its own.
    inner = hloc.parse(b.after)
    assert b.inner and [i.opcode for i in inner.entry.instructions] == ["parameter", "log"], \
        b.summary
    r = reduce_module(LOG_SOFTMAX, mismatch_predicate(config))
    assert r.instructions < _count(LOG_SOFTMAX) and " log(" in r.text, r.text
    assert not replay_module(hloc.parse(r.text), config).ok


def test_reduce_guided_cut_and_shape_shrinking(wrong_log):
    """The guided cut names the log among the softmax's instructions in one run, and the
    shapes of what is left shrink to one element (with recorded inputs: the element
    keeps the value the big module computed there, so it still mismatches)."""
    from hloc.reduce import mismatch_predicate, reduce_module
    x = np.linspace(0.5, 2.0, 256, dtype=np.float32).reshape(4, 64)
    r = reduce_module(LOG_SOFTMAX, mismatch_predicate(ReplayConfig(test_backend=wrong_log)),
                      inputs=[x])
    small = hloc.parse(r.text)
    assert [i.opcode for i in small.entry.instructions] == ["parameter", "log"], r.text
    assert small.entry.root.shape.dims == (1,) and r.arguments[0].shape == (1,)
    assert not replay_module(small, ReplayConfig(test_backend=wrong_log),
                             inputs=r.arguments).ok
    assert r.evaluations <= 8, r.evaluations          # the guide, not a search, found it
    # constants=True: the element becomes a constant, a reproducer without an input file,
    # when that still fails: not through the pipeline, which folds log(constant) ...
    c = reduce_module(LOG_SOFTMAX, mismatch_predicate(ReplayConfig(test_backend=wrong_log)),
                      inputs=[x], constants=True)
    assert c.text == r.text and c.arguments[0].shape == (1,)
    # ... but without it.
    raw = ReplayConfig(test_backend=wrong_log, run_test_passes=False)
    c = reduce_module(LOG_SOFTMAX, mismatch_predicate(raw), inputs=[x], constants=True)
    small = hloc.parse(c.text)
    assert [i.opcode for i in small.entry.instructions] == ["constant", "log"], c.text
    assert c.arguments == [] and not replay_module(small, raw).ok


@pytest.mark.slow
@pytest.mark.skipif("cpu" not in BACKENDS, reason="no compiled back end")
def test_reduce_training_step_on_the_compiled_back_end(broken_log_emitter):
    """The 2,556-instruction training step on the compiled back end with its `log`
    emitter broken, reduced with the recorded inputs: a one-element log, found with a
    few predicate runs (benchmarks/reduce_compiled.py times it)."""
    from hloc.reduce import mismatch_predicate, reduce_module
    src = os.path.join(ROOT, "testdata", "reduce", "bert6_train_step.before_optimizations.hlo")
    text = open(src).read()
    module = hloc.parse(text)
    npz = np.load(os.path.join(ROOT, "testdata", "reduce", "bert6_train_step.npz"))
    args = [npz[f"in{i}"] for i in range(len(module.entry.parameters))]
    r = reduce_module(text, mismatch_predicate(ReplayConfig(test_backend="cpu")), inputs=args)
    small = hloc.parse(r.text)
    assert r.start_instructions >= 2000 and r.instructions <= 10
    assert any(i.opcode == "log" for i in small.entry.instructions), r.text
    assert r.evaluations <= 20, r.evaluations
    assert not replay_module(small, ReplayConfig(test_backend="cpu"), inputs=r.arguments).ok
