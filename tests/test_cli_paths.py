"""Every command's file arguments: what it cannot read or write is an input error (one
line, exit 2), never `internal error` (exit 4); XLA's protos (.pb) are read by every
command that takes a module (README: "every command reads `.pb`")."""
from __future__ import annotations

import pytest
from click.testing import CliRunner

from hloc.cli import main

from corpus import TESTDATA

AXPY = TESTDATA / "examples" / "axpy.hlo"
PROTO = TESTDATA / "proto" / "dense_relu.before_optimizations.hlo.pb"
PROTO_TEXT = TESTDATA / "proto" / "dense_relu.before_optimizations.hlo"


def run(args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def _input_error(r, *needles):
    assert r.exit_code == 2, r.output
    assert "internal error" not in r.output and "Traceback" not in r.output, r.output
    for n in needles:
        assert n in r.output, r.output


@pytest.mark.parametrize("command", [["emit-llvm"], ["graph"]])
def test_missing_module_file_is_an_input_error(tmp_path, command):
    missing = tmp_path / "missing.hlo"
    _input_error(run([*command, missing]), str(missing))


@pytest.mark.parametrize("command", [["emit-llvm"], ["graph"], ["compile", "-o", "x.o"]])
def test_directory_as_module_is_an_input_error(tmp_path, command):
    """A directory of several modules: the listing, and no --pick suggested to a command
    that has no --pick."""
    (tmp_path / "a.hlo").write_text(AXPY.read_text())
    (tmp_path / "b.hlo").write_text(AXPY.read_text())
    r = run([*command, tmp_path])
    _input_error(r, str(tmp_path), "a.hlo", "b.hlo")
    assert "--pick" not in r.output


@pytest.mark.parametrize("command", [["emit-llvm", "--no-opt", "--no-hlo-opt"], ["graph"]])
def test_proto_module_is_read_like_its_text(command):
    from_text = run([*command, PROTO_TEXT])
    assert from_text.exit_code == 0, from_text.output
    from_proto = run([*command, PROTO])
    assert from_proto.exit_code == 0, from_proto.output
    assert from_proto.output == from_text.output


@pytest.mark.parametrize("command,out", [
    (["emit-llvm", "--no-opt"], "x.ll"),
    (["graph"], "x.dot"),
    (["compile"], "x.o"),
    (["compile"], "x.a"),
    (["compile"], "x.so"),
])
def test_unwritable_output_is_an_input_error(tmp_path, command, out):
    target = tmp_path / "no_such_dir" / out
    _input_error(run([*command, AXPY, "-o", target]), str(target), "cannot write")


def test_unwritable_header_is_an_input_error(tmp_path):
    header = tmp_path / "no_such_dir" / "x.h"
    r = run(["compile", AXPY, "-o", tmp_path / "x.o", "--header", header])
    _input_error(r, str(header), "cannot write")


@pytest.mark.parametrize("command", [["compile", "-o", "x.o"], ["emit-llvm"], ["graph"],
                                     ["run"], ["bisect"], ["reduce", "--fails-with", "add"]])
def test_a_file_of_several_modules_is_refused_naming_the_command(tmp_path, command):
    """Never the first module silently (compile did that), and the message names the
    command that was run (bisect and reduce said `replay`)."""
    two = tmp_path / "two.hlo"
    two.write_text(AXPY.read_text() + "---\n" + AXPY.read_text())
    args = [a if a != "x.o" else tmp_path / "x.o" for a in command]
    r = run([*args, two])
    _input_error(r, "holds 2 modules", f"hloc {command[0]}")
    assert not (tmp_path / "x.o").exists()


@pytest.mark.parametrize("command", [["replay", "--platform=interpreter"],
                                     ["bisect", "--platform=interpreter"],
                                     ["reduce", "--platform=interpreter", "--fails-with", "x"]])
def test_stdin_module_for_replay_bisect_reduce(command):
    """`-` reads the module from stdin, as run/check/fmt/opt/emit-llvm/compile/graph do
    (it was '-: No such file or directory')."""
    r = run([*command, "-"], input=AXPY.read_text())
    assert "No such file" not in r.output, r.output
    if command[0] == "reduce":      # the predicate does not hold: exit 2, said so
        assert r.exit_code == 2 and "does not hold" in r.output, r.output
    else:
        assert r.exit_code == 0, r.output


@pytest.mark.parametrize("extra", [[], ["--json"], ["--jobs", "2"]])
def test_replay_of_several_files_with_a_missing_one_is_an_input_error(tmp_path, extra):
    """A missing FILE among several was an `internal` row (FileNotFoundError), exit 4."""
    missing = tmp_path / "nonexist.hlo"
    r = run(["replay", "--platform=interpreter", *extra, missing, AXPY])
    _input_error(r, str(missing), "No such file")


@pytest.mark.parametrize("files,extra", [(["-", AXPY], []), ([AXPY, "-"], ["--json"]),
                                          (["-"], ["--json"])])
def test_replay_stdin_beside_other_files_or_in_a_batch_is_refused(files, extra):
    """'-' replays alone with console lines; beside other FILES (or with --json) it was an
    `internal` row ('-': No such file or directory), exit 4."""
    r = run(["replay", "--platform=interpreter", *extra, *files], input=AXPY.read_text())
    _input_error(r, "'-'")
    assert len(r.output.strip().splitlines()) == 1, r.output


def test_replay_batch_row_for_a_file_that_cannot_be_read(tmp_path):
    """A file that cannot be read when its turn comes is an `error` row (exit 2)."""
    from hloc.replay import ReplayConfig
    from hloc.replay_batch import replay_file
    r = replay_file(str(tmp_path), ReplayConfig(test_backend="interpreter"))
    assert r.status == "error" and str(tmp_path) in r.error, r


@pytest.mark.parametrize("command,stdin,name", [
    (["compile", "-o", "x.o"], False, None), (["emit-llvm"], False, None),
    (["graph"], False, None), (["run"], False, None), (["run"], True, None),
    (["bisect"], False, None), (["replay", "--platform=interpreter"], False, None),
    (["replay", "--platform=interpreter"], True, None),
    (["replay", "--platform=interpreter", "--json"], False, "replay")])
def test_several_modules_refusal_is_one_wording(tmp_path, command, stdin, name):
    """Every command refuses a file of several modules in the same words (one helper,
    hloc.cli_common.one_module), naming the file (<stdin> for '-') and the command."""
    two = tmp_path / "two.hlo"
    text = AXPY.read_text() + "---\n" + AXPY.read_text()
    two.write_text(text)
    args = [a if a != "x.o" else tmp_path / "x.o" for a in command]
    r = run([*args, "-" if stdin else two], input=text if stdin else None)
    assert r.exit_code == 2, r.output
    want = (f"{'<stdin>' if stdin else two}: holds 2 modules; "
            f"`hloc {name or command[0]}` takes one")
    assert want in r.output, r.output
    assert "internal error" not in r.output
