"""`hloc emit-llvm` prints the LLVM IR that runs: the parts the JIT compiles a module as
(hloc.backend.jit.part_plan), each after its own passes, with its settings in a header
(hloc.backend.llvm_parts); `hloc opt --dump-to` writes them under XLA's part names.

Two proofs that the printed IR is the JIT's, both able to fail: the JIT's own optimised
modules, printed at the moment it emits code from them, equal the printed parts; and the
printed parts, code-generated with the settings their headers name, give the JIT's objects
(where LLVM's text keeps what code generation follows: it does not keep use-list order,
whose `uselistorder` directives LLVM 22 cannot read back on splat constants, so two of
the CNN step's three parts code-generate differently from their text; every module here
does not).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import hloc
from hloc.backend import Options, compile_threads, emit_llvm, jit, llvm_parts
from hloc.cli import main
from hloc.cli_backend import prepare_for_cpu
from row_modules import LAYERNORM, SOFTMAX

DUMPS = Path(__file__).resolve().parent.parent / "testdata" / "dumps"

def _module(name):
    if name == "softmax":
        text = SOFTMAX
    elif name == "layernorm":
        text = LAYERNORM
    else:
        text = (DUMPS / f"{name}.before_optimizations.hlo").read_text()
    return prepare_for_cpu(hloc.parse(text, name), None)


def _jit(module, monkeypatch=None):
    """The JIT's objects of `module` (compiled as the Executable does) and, with
    `monkeypatch`, the optimised modules it emitted them from, printed then."""
    seen = []
    if monkeypatch is not None:
        emit = compile_threads._EMIT

        def spy(tm, mod, *rest):
            seen.append(str(mod))
            return emit(tm, mod, *rest)
        monkeypatch.setattr(compile_threads, "_EMIT", spy)
    options = Options()
    objs = jit.compile_objects(jit.lower(module, options, ahead=True), options)
    return objs, seen


# (module, parts, headers' settings): row modules in explicit vector code (the lean
# passes; code generation at 1), a brief one, and modules in parts
LEAN = llvm_parts.LEAN_NAME
CASES = {
    "softmax": (1, [(LEAN, "off", "brief", 1)]),
    "layernorm": (1, [(LEAN, "off", "brief", 1)]),
    "while_loop_newton": (1, [("O1", "on", "brief", 1)]),
    "searchsorted_interp": (2, [("O1", "on", "brief", 1)] * 2),
    "mlp_train_step": (2, [("O1", "on", "brief", 1)] * 2),
    "cnn_train_step": (3, [("O1", "on", "brief", 1)] * 3),
    # its two im2col copies counted long (computation.BRIEF_IM2COL_BYTES 0): an O3 part
    "cnn_train_step/im2col-long": (3, [("O3", "on", "default", 3), ("O1", "on", "default", 1),
                                       ("O1", "on", "default", 1)]),
}


def _settings(part):
    passes = LEAN if part.level == compile_threads.LEAN \
        else f"O{part.level}"
    return (passes, "on" if part.slp else "off", "brief" if part.brief else "default",
            part.codegen)


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_parts_are_the_jits_optimised_modules(name, monkeypatch):
    if name.endswith("/im2col-long"):
        from hloc.backend import computation
        monkeypatch.setattr(computation, "BRIEF_IM2COL_BYTES", 0)
    module = _module(name.split("/")[0])
    printed = emit_llvm(module)
    parts = llvm_parts.read(printed)
    count, settings = CASES[name]
    assert [p.count for p in parts] == [count] * count
    assert [_settings(p) for p in parts] == settings
    assert printed.count("; ModuleID") == count
    _, seen = _jit(module, monkeypatch)
    assert sorted(seen) == sorted(p.text for p in parts)


@pytest.mark.parametrize("name", ["softmax", "layernorm", "while_loop_newton", "mlp_train_step"])
def test_printed_parts_code_generate_to_the_jits_objects(name):
    module = _module(name)
    parts = llvm_parts.read(emit_llvm(module))
    objs, _ = _jit(module)
    assert len(objs) == len(parts)
    assert [llvm_parts.compile_printed(p) for p in parts] == objs
    # a part code-generated with other settings than its header's is another object
    other = parts[0]
    other.codegen = 3 if other.codegen != 3 else 1
    assert llvm_parts.compile_printed(other) != objs[0]


def test_no_opt_prints_the_parts_before_passes():
    module = _module("mlp_train_step")
    lowered = jit.lower(module, Options(), units=True)
    parts = llvm_parts.read(emit_llvm(module, optimized=False))
    assert [p.text for p in parts] == [t if t.endswith("\n") else t + "\n" for t in lowered.parts]
    assert [_settings(p) for p in parts] == CASES["mlp_train_step"][1]
    assert "; ModuleID = \"" in parts[0].text      # hloc's own text, not LLVM's print


def test_units_are_planned_as_the_jit_compiles_them_ahead():
    """A large computation's part of its own (compiled ahead in the JIT): the plan without
    `units` differs, so printing needs it."""
    module = _module("searchsorted_interp")
    a, b = jit.lower(module, Options(), ahead=True), jit.lower(module, Options(), units=True)
    jit.compile_objects(a, Options())         # takes over what was compiled ahead
    assert (a.units, b.units, b.ahead) == (1, 1, None)
    assert a.parts == b.parts and a.settings(Options()) == b.settings(Options())
    assert jit.lower(module, Options()).parts != b.parts


def test_cli_emit_llvm_and_opt_dumps_name_the_parts(tmp_path):
    src = str(DUMPS / "mlp_train_step.before_optimizations.hlo")
    emitted = CliRunner().invoke(main, ["emit-llvm", src])
    assert emitted.exit_code == 0, emitted.output
    assert [h.group(3) for h in llvm_parts.HEADER.finditer(emitted.output)] == ["part_00", "part_01"]
    r = CliRunner().invoke(main, ["opt", src, "--dump-to", str(tmp_path)])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".ll"))
    stem = "module_0000.jit_mlp_train_step"
    assert names == [f"{stem}.ir-{s}-opt.part_0{k}.ll" for s in ("no", "with") for k in (0, 1)]
    text = (tmp_path / f"{stem}.ir-with-opt.part_01.ll").read_text()
    assert text.startswith("; hloc part 2 of 2 (part_01): passes=O1 ")
    assert llvm_parts.read(text)[0].text == llvm_parts.read(emitted.output)[1].text
