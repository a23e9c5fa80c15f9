"""A real XLA dump directory (testdata/dumpdir, from tools/gen_dump_dir.py) used as a new
user would: `check DIR`, `run/opt/fmt DIR` selection, named inputs, --expected, hints
for files that are not HLO text, and `hloc FILE` without a command."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hloc.cli import main
from hloc.dumpdir import HLO, scan
from hloc.inputs import load_npz, save_npz

ROOT = Path(__file__).resolve().parents[1]
DIR = ROOT / "testdata" / "dumpdir" / "mlp_step"
BEFORE = DIR / "module_0000.jit_mlp_step.before_optimizations.txt"
AFTER = DIR / "module_0000.jit_mlp_step.cpu_after_optimizations.txt"
NPZ = DIR / "mlp_step.npz"
# What each non-HLO file of the directory is (the kinds XLA:CPU and JAX write there).
KINDS = {
    "mlp_step.npz": "npz",
    "cpu_after_optimizations-buffer-assignment-values.txt": "buffer assignment",
    "cpu_after_optimizations-buffer-assignment.txt": "buffer assignment",
    "cpu_after_optimizations-live-range.txt": "buffer live ranges",
    "cpu_after_optimizations-memory-usage-report.txt": "memory usage report",
    ".debug_options": "debug options",
    ".ll": "LLVM IR",
    ".o": "object file",
    "compile_options.textproto": "textproto",
    "topology.textproto": "textproto",
    "module.mlir": "StableHLO (MLIR)",
}


def invoke(*args, env=None):
    r = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def _files():
    return sorted(str(p) for p in DIR.rglob("*") if p.is_file())


def test_the_directory_holds_every_kind():
    kinds = {e.kind for e in scan(str(DIR))}
    assert kinds == {HLO, *KINDS.values()}
    assert len([e for e in scan(str(DIR)) if e.kind == HLO]) == 2


def test_check_dir_one_line_per_file():
    r = invoke("check", DIR)
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert sorted(line.split(": ", 1)[0] for line in lines) == _files()
    by_path = dict(line.split(": ", 1) for line in lines)
    assert by_path[str(BEFORE)].startswith("OK (1 module, ")
    assert by_path[str(AFTER)].startswith("OK (1 module, ")
    for path, text in by_path.items():
        if path in (str(BEFORE), str(AFTER)):
            continue
        want = next(k for suffix, k in KINDS.items() if path.endswith(suffix))
        assert text == f"skipped: {want}", path


@pytest.mark.parametrize("command", ["run", "opt", "fmt"])
def test_directory_lists_candidates(command):
    r = invoke(command, DIR)
    assert r.exit_code == 2
    assert f"`hloc {command}` takes one module" in r.stderr and "--pick" in r.stderr
    assert f"  {BEFORE}" in r.stderr and f"  {AFTER}" in r.stderr
    assert "Traceback" not in r.output


def test_pick_takes_the_named_file():
    r = invoke("fmt", DIR, "--pick", "cpu_after")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == AFTER.read_text()
    assert f"taking {AFTER}" in r.stderr
    r = invoke("fmt", DIR, "--pick", "no-such-name")
    assert r.exit_code == 2 and "no HLO file name contains 'no-such-name'" in r.stderr


@pytest.mark.parametrize("suffix,kind", [(".ll", "LLVM IR"), (".o", "an object file"),
                                         (".debug_options", "XLA debug options"),
                                         ("module.mlir", "StableHLO (MLIR)"),
                                         ("topology.textproto", "a textproto"),
                                         ("mlp_step.npz", "an npz archive"),
                                         ("buffer-assignment.txt", "a buffer assignment")])
def test_named_non_hlo_file_gets_a_hint(suffix, kind):
    path = next(p for p in _files() if p.endswith(suffix))
    r = invoke("check", path)
    assert r.exit_code == 2
    err = r.stderr.splitlines()
    assert err[0].startswith(f"{path}:1:")
    assert err[-1].startswith(f"note: this file looks like {kind}, not HLO text")
    assert "" not in err            # no empty source line with a bare caret


def test_named_file_is_parsed_even_with_an_odd_name(tmp_path):
    odd = tmp_path / "module_0000.x.ir-no-opt.ll"     # named like LLVM IR, but HLO text
    odd.write_text(BEFORE.read_text())
    r = invoke("check", odd)
    assert r.exit_code == 0 and r.stdout.startswith(f"{odd}: OK")


def test_file_without_command_suggests_commands():
    r = invoke(BEFORE)
    assert r.exit_code == 2
    assert f"hloc check {BEFORE}" in r.stderr and f"hloc run {BEFORE}" in r.stderr


# ---------------------------------------------------------------------------
# Binding named inputs

PARAMS = ["params__b1__.1", "params__b2__.1", "params__w1__.1", "params__w2__.1", "x.1", "y.1"]


def _inputs():
    d = load_npz(NPZ)
    return [d[f"in{i}"] for i in range(len(PARAMS))]


@pytest.mark.parametrize("style", ["exact", "no_suffix", "undecorated"])
def test_shuffled_named_keys_bind_by_name(tmp_path, style):
    def key(name):
        base = name.rsplit(".", 1)[0]
        return {"exact": name, "no_suffix": base,
                "undecorated": base.replace("params__", "").rstrip("_")}[style]
    named = {key(n): a for n, a in zip(PARAMS, _inputs())}
    order = list(named)
    np.random.default_rng(1).shuffle(order)
    assert order != list(named)
    np.savez(tmp_path / "in.npz", **{k: named[k] for k in order})
    r = invoke("run", BEFORE, "--inputs", tmp_path / "in.npz", "--expected", NPZ)
    assert r.exit_code == 0, r.stderr
    assert "OK: 5 outputs match." in r.stdout


def test_unknown_keys_are_refused_with_both_lists(tmp_path):
    ins = _inputs()
    keys = ["g1", "g2", "w1", "w2", "x", "y"]    # as the user had them
    np.savez(tmp_path / "in.npz", **{k: ins[i] for i, k in reversed(list(enumerate(keys)))})
    r = invoke("run", BEFORE, "--inputs", tmp_path / "in.npz")
    assert r.exit_code == 2 and r.stdout == ""
    assert "key 'g1' names no parameter" in r.stderr
    assert ("module parameters: params__b1__.1: f32[16], params__b2__.1: f32[4], "
            "params__w1__.1: f32[8,16]") in r.stderr
    assert "y: f32[32,4], x: f32[32,8], w2: f32[16,4]" in r.stderr


def test_ambiguous_key_is_refused(tmp_path):
    mod = tmp_path / "two.hlo"
    mod.write_text("HloModule two\nENTRY e {\n  a = f32[] parameter(0)\n"
                   "  x.1 = f32[] parameter(1)\n  x.2 = f32[] parameter(2)\n"
                   "  s = f32[] add(x.1, x.2)\n  ROOT t = f32[] add(s, a)\n}\n")
    np.savez(tmp_path / "in.npz", x=np.float32(1), a=np.float32(2), **{"x.2": np.float32(3)})
    r = invoke("run", mod, "--inputs", tmp_path / "in.npz")
    assert r.exit_code == 2 and "key 'x' could name x.1 or x.2" in r.stderr
    np.savez(tmp_path / "ok.npz", **{"x.1": np.float32(1), "a": np.float32(2),
                                     "x.2": np.float32(30)})
    r = invoke("run", mod, "--inputs", tmp_path / "ok.npz")
    assert r.exit_code == 0 and r.stdout == "f32[] 33\n"


NESTED = """HloModule jit_f
ENTRY main {
  params__dec___0_.1 = f32[] parameter(0)
  params__enc____w__.1 = f32[] parameter(1)
  xs_1_.1 = f32[] parameter(2)
  d = f32[] multiply(params__dec___0_.1, xs_1_.1)
  ROOT s = f32[] subtract(d, params__enc____w__.1)
}
"""


@pytest.mark.parametrize("keys", [("dec/0", "enc/w", "xs/1"), ("params.dec.0", "w", "xs.1"),
                                  ("params__dec___0_", "params__enc____w__.1", "xs_1_")])
def test_jax_pytree_paths_bind(tmp_path, keys):
    """JAX's names for params['dec'][0], params['enc']['w'] and xs[1] (jax 0.10.2)."""
    mod = tmp_path / "nested.hlo"
    mod.write_text(NESTED)
    values = dict(zip(keys, (np.float32(3), np.float32(1), np.float32(5))))
    np.savez(tmp_path / "in.npz", **dict(reversed(values.items())))
    r = invoke("run", mod, "--inputs", tmp_path / "in.npz")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "f32[] 14\n"                     # 3 * 5 - 1


# ---------------------------------------------------------------------------
# --expected

def test_expected_mismatch_exits_1_with_report(tmp_path):
    d = load_npz(NPZ)
    d["out3"] = d["out3"].copy()
    d["out3"][2, 5] += 0.5
    save_npz(tmp_path / "bad.npz", d)
    r = invoke("run", BEFORE, "--inputs", NPZ, "--expected", tmp_path / "bad.npz")
    assert r.exit_code == 1
    report = r.stdout[r.stdout.index("** Comparison with"):].splitlines()
    assert report[1].startswith("out3: Mismatch count 1 (0.7812%) in shape f32[8,16] "
                                "(128 elements), abs bound 0.001, rel bound 0.001")
    assert report[2] == "Top relative error mismatches:"
    assert "index {2,5}" in report[3]
    assert report[-1] == "1 of 5 outputs miscompared."
    r = invoke("run", BEFORE, "--inputs", NPZ, "--expected", tmp_path / "bad.npz",
               "--abs-error-bound", "0.6")
    assert r.exit_code == 0, r.stdout


def test_expected_counts_outputs(tmp_path):
    d = load_npz(NPZ)
    del d["out4"]
    save_npz(tmp_path / "short.npz", d)
    r = invoke("run", BEFORE, "--inputs", NPZ, "--expected", tmp_path / "short.npz")
    assert r.exit_code == 1 and "want tuple element count: 4 got tuple element count: 5" \
        in r.stdout


def test_after_optimizations_dump_matches_xla_too():
    r = invoke("run", DIR, "--pick", "cpu_after", "--inputs", NPZ, "--expected", NPZ)
    assert r.exit_code == 0, r.output


def test_opt_force_on_the_after_dump_verifies(tmp_path):
    out = tmp_path / "o.hlo"
    r = invoke("opt", "--force", AFTER, "-o", out)
    assert r.exit_code == 0, r.stderr
    assert invoke("check", out).exit_code == 0
    assert os.path.getsize(out) > 0


# ---------------------------------------------------------------------------
# hloc opt --force on XLA's own after-optimizations dumps

AFTER_DUMPS = sorted(str(p) for p in (ROOT / "testdata").rglob("*after_optimizations*")
                     if p.suffix in (".hlo", ".txt") and "buffer" not in p.name
                     and "memory" not in p.name and "live-range" not in p.name)


def test_after_dump_corpus_is_there():
    assert len(AFTER_DUMPS) >= 80
    assert any("random_threefry" in p for p in AFTER_DUMPS)    # control edges into fusions


@pytest.mark.parametrize("path", AFTER_DUMPS, ids=lambda p: Path(p).name)
def test_opt_force_output_verifies(path, tmp_path):
    """The pass context verifies after every changed pass (so a pass that leaves a
    dangling control edge fails here), and the printed module must parse and verify."""
    out = tmp_path / "o.hlo"
    r = invoke("opt", "--force", path, "-o", out)
    assert r.exit_code == 0, r.stderr
    r = invoke("check", out)
    assert r.exit_code == 0, r.output


def test_pass_context_catches_a_dangling_control_edge(monkeypatch):
    """With the graph API's control-edge removal disabled, fusion's removal of a fused
    producer leaves dangling control edges: the invariant check after the pass says so."""
    from hloc.ir.module import Instruction
    monkeypatch.setattr(Instruction, "safely_drop_all_control_deps", lambda self: None)
    monkeypatch.setattr(Instruction, "drop_all_control_deps", lambda self: None)
    path = next(p for p in AFTER_DUMPS if "random_threefry" in p)
    r = invoke("opt", "--force", path)
    assert r.exit_code == 4
    assert "after pass fusion: graph invariant broken" in r.stderr
    assert "control predecessor" in r.stderr


def test_directory_mode_sniffs_unknown_txt_and_reports_failures(tmp_path):
    (tmp_path / "pasted.txt").write_text(BEFORE.read_text())          # HLO by content
    (tmp_path / "notes.txt").write_text("some notes\n")
    (tmp_path / "broken.before_optimizations.txt").write_text("HloModule m\nENTRY e {\n")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    r = invoke("check", tmp_path)
    assert r.exit_code == 2
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert lines[str(tmp_path / "pasted.txt")].startswith("OK")
    assert lines[str(tmp_path / "notes.txt")] == "skipped: unknown text"
    assert lines[str(tmp_path / "blob.bin")] == "skipped: unknown"
    assert lines[str(tmp_path / "broken.before_optimizations.txt")] == "FAILED"
    assert r.stderr.startswith(f"{tmp_path / 'broken.before_optimizations.txt'}:")


def test_empty_directory_is_an_input_error(tmp_path):
    r = invoke("check", tmp_path)
    assert r.exit_code == 2 and "no HLO text files" in r.stderr
    r = invoke("run", tmp_path)
    assert r.exit_code == 2 and "no HLO text files" in r.stderr
