"""XLA's binary dumps (testdata/proto, written by tools/gen_proto_dumps.py with JAX):
an HloProto (`--xla_dump_hlo_as_proto`) is the same module as XLA's text dump of it,
an HloSnapshot (`--xla_dump_hlo_snapshots`) replays with its recorded arguments to the
result XLA recorded, `hloc replay` prints the same report for a .pb as for its text, and
malformed protos are one-line input errors."""
from __future__ import annotations

import glob
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

from hloc.cli import main
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import HlocError, InputError
from hloc.ir.graph import remove_unreachable_computations
from hloc.printer import module_to_text
from hloc.proto.reader import read_proto
from hloc.replay import DEFAULT_SEED, run_side
from hloc.runner import BACKENDS
from hloc.syntax import parse_module
from hloc.verifier import verify

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO = os.path.join(ROOT, "testdata", "proto")
HLO_PB = sorted(glob.glob(os.path.join(PROTO, "*.hlo.pb")))
SNAPSHOTS = sorted(glob.glob(os.path.join(PROTO, "*.hlo_snapshot.pb")))
# Header attributes XLA's text dump takes from the HloModuleConfig, which an HloProto
# does not carry (HloModule::CreateFromProto starts from a default config).
CONFIG_ONLY = re.compile(r", allow_spmd_sharding_propagation_to_(parameters|output)=\{[\w,]*\}")


def test_corpus_counts():
    assert len(HLO_PB) == 30 and len(SNAPSHOTS) == 15


def _blocks(text: str) -> dict:
    """The printed module by part: header, stack-frame tables, each computation by name
    (XLA's text and its proto list an optimised module's computations in different
    orders)."""
    parts = {}
    for block in filter(None, (b.strip() for b in text.split("\n\n"))):
        m = re.match(r"(?:ENTRY )?%(\S+) \(", block)
        key = m.group(1) if m else block.split("\n", 1)[0].split(" ", 1)[0]
        assert key not in parts, key
        parts[key] = block
    return parts


@pytest.mark.parametrize("pb", HLO_PB, ids=os.path.basename)
def test_hlo_proto_is_the_module_of_its_text_dump(pb):
    text_path = pb[:-len(".pb")]
    got = read_proto(pb)
    assert got.kind == "HloProto" and got.arguments is None
    verify(got.module)
    # An optimised module's proto also holds computations nothing calls any more (left by
    # fusion), which its text dump leaves out.
    remove_unreachable_computations(got.module)
    want = CONFIG_ONLY.sub("", module_to_text(parse_module(open(text_path).read(), text_path)))
    assert _blocks(module_to_text(got.module)) == _blocks(want)


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=os.path.basename)
def test_snapshot_runs_to_the_result_xla_recorded(snap):
    got = read_proto(snap)
    assert got.kind == "HloSnapshot" and got.result is not None
    after = snap.replace(".hlo_snapshot.pb", ".after_optimizations.hlo")
    assert module_to_text(got.module) == \
        module_to_text(read_proto(after + ".pb").module)     # the module XLA ran
    verify(got.module)
    assert len(got.arguments) == len(got.module.entry.parameters)
    value, _, _ = run_side(got.module, got.arguments, "interpreter", DEFAULT_SEED)
    result = near(got.result, value, ErrorSpec(1e-5, 1e-5))
    assert result.ok, result.message


@pytest.mark.skipif("cpu" not in BACKENDS, reason="no compiled back end")
@pytest.mark.parametrize("name", ["mlp_train_step", "scan_rnn", "conv2d_variants"])
def test_snapshot_on_the_compiled_back_end(name):
    got = read_proto(os.path.join(PROTO, f"{name}.hlo_snapshot.pb"))
    value, _, _ = run_side(got.module, got.arguments, "cpu", DEFAULT_SEED)
    result = near(got.result, value, ErrorSpec(1e-4, 1e-4))
    assert result.ok, result.message


def _invoke(args):
    r = CliRunner().invoke(main, args, catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def _report(text: str, path: str) -> str:
    return re.sub(r"[0-9.e+-]+s\.", "Ns.", text.replace(path, "FILE"))


@pytest.mark.parametrize("name", ["dense_relu", "cond_pred_input", "sort_ops"])
def test_replay_pb_reports_as_its_text_dump(name):
    for stage in ("before", "after"):
        text = os.path.join(PROTO, f"{name}.{stage}_optimizations.hlo")
        runs = [_invoke(["replay", "--platform=interpreter", p]) for p in (text, text + ".pb")]
        assert runs[0][0] == runs[1][0] == 0, runs
        assert _report(runs[0][1], text) == _report(runs[1][1], text + ".pb")
        assert _report(runs[0][2], text) == _report(runs[1][2], text + ".pb")


def test_replay_snapshot_uses_its_arguments(tmp_path):
    """The snapshot replays with its recorded arguments: the same report as its text
    dump (the after-optimizations module) given those arguments as --inputs."""
    snap = os.path.join(PROTO, "mlp_train_step.hlo_snapshot.pb")
    text = os.path.join(PROTO, "mlp_train_step.after_optimizations.hlo")
    lits = tmp_path / "lits.npz"
    code, out, err = _invoke(["replay", "--platform=interpreter", "--output_literals_file",
                              str(lits), snap])
    assert code == 0, err
    got = np.load(lits)
    recorded = read_proto(snap).arguments
    for i, a in enumerate(recorded):
        assert np.array_equal(got[f"arg{i}"], a)
    args = tmp_path / "args.npz"
    np.savez(args, **{f"in{i}": a for i, a in enumerate(recorded)})
    code2, out2, err2 = _invoke(["replay", "--platform=interpreter", "--inputs", str(args),
                                 text])
    assert code2 == 0
    assert _report(out, snap) == _report(out2, text)
    assert _report(err, snap).replace("it is is_scheduled=true",
                                      "its file name says after_optimizations") == \
        _report(err2, text)


def test_run_snapshot_uses_its_arguments(tmp_path):
    """`hloc run snapshot.pb` runs on the recorded arguments (as `hloc replay` and
    run_hlo_module do), not on fake ones; --inputs still overrides them."""
    snap = os.path.join(PROTO, "dense_relu.hlo_snapshot.pb")
    want = read_proto(snap).arguments
    out = tmp_path / "out.npz"
    code, _, err = _invoke(["run", "--backend", "interpreter", "--output", str(out), snap])
    assert code == 0, err
    assert "recorded arguments" in err
    m = read_proto(snap).module
    from hloc.inputs import load_outputs
    from hloc.runner import run_module
    ref = run_module(m, [np.asarray(a) for a in want]).value
    assert np.array_equal(load_outputs(out)[0], ref)
    np.savez(tmp_path / "in.npz", **{f"in{i}": np.zeros_like(a) for i, a in enumerate(want)})
    code, _, err = _invoke(["run", "--backend", "interpreter", "--inputs",
                            str(tmp_path / "in.npz"), "--output", str(out), snap])
    assert code == 0 and "recorded arguments" not in err, err
    assert not np.array_equal(load_outputs(out)[0], ref)


def test_pbtxt_and_input_format(tmp_path):
    from google.protobuf import text_format

    from hloc.proto import message
    pb = os.path.join(PROTO, "dense_relu.before_optimizations.hlo.pb")
    proto = message("HloProto").FromString(open(pb, "rb").read())
    as_text = tmp_path / "m.pbtxt"
    as_text.write_text(text_format.MessageToString(proto))
    # The text format drops what the schema hloc carries does not name (newer XLA's
    # end_line / end_column of the stack-frame table's file locations).
    newer = re.compile(r" end_(line|column)=\d+")
    assert module_to_text(read_proto(str(as_text)).module) == \
        newer.sub("", module_to_text(read_proto(pb).module))
    renamed = tmp_path / "m.data"
    renamed.write_bytes(open(pb, "rb").read())
    code, _, err = _invoke(["replay", "--platform=interpreter", "--input_format=pb",
                            str(renamed)])
    assert code == 0, err
    code, _, err = _invoke(["replay", "--input_format=pb", pb[:-3]])
    assert code == 2 and "not an HloSnapshot, HloProto or HloModuleProto" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = _invoke(["run", "--backend=interpreter", pb])      # every command reads .pb
    assert code == 0, err
    snap = os.path.join(PROTO, "cond_pred_input.hlo_snapshot.pb")      # with its arguments
    code, out, err = _invoke(["bisect", "--platform=interpreter", snap])
    assert code == 0 and "nothing to bisect" in out, out + err


def test_malformed_protos_are_one_line_errors(tmp_path):
    """Truncations, bit flips, byte insertions and deletions of real protos: each reads
    to a module that verifies, or fails with one InputError line naming the file."""
    rng = np.random.default_rng(0)
    sources = [os.path.join(PROTO, n) for n in ("dense_relu.before_optimizations.hlo.pb",
                                                 "cond_pred_input.hlo_snapshot.pb",
                                                 "sort_ops.after_optimizations.hlo.pb")]
    path = str(tmp_path / "bad.pb")
    outcomes = {"ok": 0, "error": 0}
    for src in sources:
        data = open(src, "rb").read()
        for trial in range(120):
            b = bytearray(data)
            kind = trial % 4
            at = int(rng.integers(0, len(b)))
            if kind == 0:
                b = b[:at]
            elif kind == 1:
                b[at] ^= 1 << int(rng.integers(0, 8))
            elif kind == 2:
                b[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 5)), dtype=np.uint8))
            else:
                del b[at:at + int(rng.integers(1, 5))]
            with open(path, "wb") as f:
                f.write(bytes(b))
            try:
                verify(read_proto(path).module)
                outcomes["ok"] += 1
            except InputError as e:
                assert path in e.message and "\n" not in e.render(), e.render()
                outcomes["error"] += 1
            except HlocError as e:         # a module that parses but does not verify
                assert "\n" not in e.message, e.message
                outcomes["error"] += 1
    assert outcomes["error"] > 100 and outcomes["ok"] > 0, outcomes


def test_not_a_proto_through_the_cli(tmp_path):
    bad = tmp_path / "x.pb"
    bad.write_bytes(b"\xff\xfe garbage \x00\x01")
    code, out, err = _invoke(["replay", str(bad)])
    assert code == 2 and err.strip().count("\n") == 0 and "Traceback" not in err, err
    assert err.startswith("error: ") and str(bad) in err


def test_dump_directory_with_protos_only(tmp_path):
    """A dump made with --xla_dump_hlo_as_proto alone: its before_optimizations HloProto
    is replayed; where XLA also wrote the text, the text is (the proto is skipped)."""
    import json
    import shutil
    for stage, name in (("before", "before_optimizations.hlo.pb"),
                        ("after", "cpu_after_optimizations.hlo.pb")):
        src = os.path.join(PROTO, f"dense_relu.{stage}_optimizations.hlo.pb")
        shutil.copy(src, tmp_path / f"module_0001.jit_dense_relu.{name}")
    shutil.copy(os.path.join(PROTO, "dense_relu.after_optimizations.hlo"),
                tmp_path / "module_0001.jit_dense_relu.cpu_after_optimizations.txt")
    for stage, want in (("before", "before_optimizations.hlo.pb"),
                        ("after", "cpu_after_optimizations.txt")):
        code, out, err = _invoke(["replay", "--platform=interpreter", "--json",
                                  f"--stage={stage}", str(tmp_path)])
        lines = [json.loads(x) for x in out.splitlines()]
        assert code == 0 and [x["file"].endswith(want) for x in lines] == [True], out + err


def test_unoptimized_snapshot(tmp_path):
    """An HloUnoptimizedSnapshot (the module before optimisation and each partition's
    arguments), built from a before_optimizations HloProto and a snapshot's arguments."""
    from hloc.proto import message
    before = message("HloProto").FromString(
        open(os.path.join(PROTO, "dense_relu.before_optimizations.hlo.pb"), "rb").read())
    snap = message("HloSnapshot").FromString(
        open(os.path.join(PROTO, "dense_relu.hlo_snapshot.pb"), "rb").read())
    unopt = message("HloUnoptimizedSnapshot")()
    unopt.hlo_module.CopyFrom(before.hlo_module)
    unopt.partitions.add().arguments.extend(snap.arguments)
    path = tmp_path / "m.pb"
    path.write_bytes(unopt.SerializeToString())
    got = read_proto(str(path))
    assert got.kind == "HloUnoptimizedSnapshot"
    assert module_to_text(got.module) == module_to_text(
        read_proto(os.path.join(PROTO, "dense_relu.before_optimizations.hlo.pb")).module)
    want = read_proto(os.path.join(PROTO, "dense_relu.hlo_snapshot.pb")).arguments
    assert all(np.array_equal(a, b) for a, b in zip(got.arguments, want))


def _snapshot_without_arguments(tmp_path):
    from hloc.proto.reader import _decode
    snap = _decode(open(os.path.join(PROTO, "dense_relu.hlo_snapshot.pb"), "rb").read(), "pb",
                   "HloSnapshot")
    del snap.arguments[:]
    path = tmp_path / "noargs.pb"
    path.write_bytes(snap.SerializeToString())
    return str(path)


@pytest.mark.parametrize("command", [["run", "--backend=interpreter"],
                                     ["replay", "--platform=interpreter"],
                                     ["bisect", "--platform=interpreter"]])
def test_snapshot_without_recorded_arguments_runs_on_fake_ones(tmp_path, command):
    """run_hlo_module uses a snapshot's literals only when it recorded some
    (`arguments_size() != 0`), else fake arguments: so does every command (run refused it
    as 'module takes 3, got 0'; replay failed with an internal IndexError)."""
    path = _snapshot_without_arguments(tmp_path)
    assert read_proto(path).arguments is None
    code, out, err = _invoke([*command, path])
    assert code == 0, out + err
    assert "recorded arguments" not in err and "internal error" not in out + err


@pytest.mark.parametrize("fmt", ["pb", "pbtxt"])
def test_replay_stdin_with_input_format_reads_a_proto(tmp_path, fmt):
    """`hloc replay --input_format=pb -` reads stdin as the proto the user named (it was
    parsed as HLO text: 'input is binary, not HLO text'); the same report as the file."""
    from google.protobuf import text_format

    from hloc.proto import message
    pb = os.path.join(PROTO, "dense_relu.hlo_snapshot.pb")
    data = open(pb, "rb").read()
    if fmt == "pbtxt":
        data = text_format.MessageToString(message("HloSnapshot").FromString(data)).encode()
    path = tmp_path / f"snap.{fmt}"
    path.write_bytes(data)
    r = CliRunner().invoke(main, ["replay", "--platform=interpreter", f"--input_format={fmt}",
                                  "-"], input=data)
    assert r.exit_code == 0, r.output
    code, out, err = _invoke(["replay", "--platform=interpreter", str(path)])
    assert code == 0, err
    assert _report(r.stdout, "-") == _report(out, str(path))


def test_run_snapshot_reads_and_parses_it_once(monkeypatch):
    """`hloc run X.pb` reads and parses the proto once: the arguments come with the module
    (it read the whole .pb a second time for them)."""
    from hloc.proto import reader
    calls = []
    real = reader.read_proto_data
    monkeypatch.setattr(reader, "read_proto_data",
                        lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    snap = os.path.join(PROTO, "dense_relu.hlo_snapshot.pb")
    code, _, err = _invoke(["run", "--backend", "interpreter", snap])
    assert code == 0 and "recorded arguments" in err, err
    assert calls == [snap]
