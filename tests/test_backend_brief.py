"""Parts whose loops all run briefly compile without code generation's loop strength
reduction and without partial loop unrolling (hloc.backend.computation.Functions.brief,
compile_threads.BRIEF_OPTIONS), and so do parts of row kernels (jit.ROW_BRIEF_OPTIONS),
which also have their own code generation level and no SLP: which parts are brief, that each option is applied, that
their results keep their bits, and that the process-wide LLVM options are back at their
defaults after (a later compile's objects are unchanged)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, compile_threads, jit, row_groups
from hloc.backend.computation import BRIEF_LOOPED_WORK
from hloc.backend.context import Options
from hloc.backend.parallel import MIN_WORK
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from row_modules import softmax as _softmax

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"


def _elementwise(n: int) -> str:
    return f"""HloModule m
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  m = f32[{n}] multiply(x, y)
  ROOT r = f32[{n}] add(m, x)
}}
"""


def _looped(n: int) -> str:
    """The same kernel in the body of a while loop of 3 iterations."""
    return f"""HloModule m
body {{
  p = (s32[], f32[{n}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  x = f32[{n}] get-tuple-element(p), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  m = f32[{n}] multiply(x, x)
  y = f32[{n}] add(m, x)
  ROOT t = (s32[], f32[{n}]) tuple(j, y)
}}
cond {{
  p = (s32[], f32[{n}]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  three = s32[] constant(3)
  ROOT lt = pred[] compare(i, three), direction=LT
}}
ENTRY e {{
  x = f32[{n}] parameter(0)
  zero = s32[] constant(0)
  t = (s32[], f32[{n}]) tuple(zero, x)
  w = (s32[], f32[{n}]) while(t), condition=cond, body=body
  ROOT r = f32[{n}] get-tuple-element(w), index=1
}}
"""


def _brief(text: str) -> list[bool]:
    return jit.lower(hloc.parse(text), Options()).brief


def test_which_parts_are_brief(monkeypatch):
    # elementwise x*y+x touches 12 bytes per element
    small, large = 1 << 10, MIN_WORK // 12 + 1
    assert _brief(_elementwise(small)) == [True]
    assert _brief(_elementwise(large)) == [False]          # runs on the work-group runtime
    # in a while loop: brief under BRIEF_LOOPED_WORK (12 bytes per element here too)
    assert _brief(_looped(BRIEF_LOOPED_WORK // 12 - 64)) == [True]
    assert _brief(_looped(BRIEF_LOOPED_WORK // 12 + 64)) == [False]
    # a row kernel's part compiles under the brief options too (jit.ROW_BRIEF_OPTIONS;
    # its scalar form: in explicit vectors, hloc.backend.row_vector, it is brief anyway)
    from hloc.backend import row_vector
    monkeypatch.setattr(row_vector, "ENABLED", False)
    assert _brief(_softmax(64, 1024)) == [True]
    monkeypatch.setattr(jit, "ROW_BRIEF_OPTIONS", False)
    assert _brief(_softmax(64, 1024)) == [False]


def _objects(text: str, brief: bool) -> list[bytes]:
    low = jit.lower(hloc.parse(text), Options())
    low.brief = [brief] * len(low.parts)
    return jit.compile_objects(low, Options(), threads=2)


def test_brief_changes_the_code_and_restores_the_option():
    text = _looped(BRIEF_LOOPED_WORK // 12 - 64)
    # LSR changes the large elementwise kernel's code; a row kernel besides
    others = [_elementwise(MIN_WORK), _softmax(64, 1024)]
    before = [_objects(t, False) for t in others]
    assert _objects(text, True) != _objects(text, False)   # LSR did something here
    assert [_objects(t, False) for t in others] == before


def test_brief_turns_partial_unrolling_off(monkeypatch):
    # softmax's loops (1024 columns) are unrolled partially, unless brief; as separate
    # kernels: a row kernel's loops are never unrolled (hloc.backend.row_loop_hints.row_hints)
    monkeypatch.setattr(row_groups, "MIN_BYTES", 1 << 60)
    text = _softmax(64, 1024)
    brief = _objects(text, True)
    with monkeypatch.context() as m:
        m.setattr(compile_threads, "BRIEF_OPTIONS",
                  tuple(o for o in compile_threads.BRIEF_OPTIONS if "unroll" not in o))
        assert _objects(text, True) != brief
    assert _objects(text, True) == brief
    # and on again after: the row kernel's non-brief code is the one of partial unrolling
    compile_threads.set_options(("-unroll-allow-partial=false",))
    try:
        off = _objects(text, False)
    finally:
        compile_threads.set_options(compile_threads.DEFAULT_OPTIONS)
    _objects(text, True)
    assert _objects(text, False) != off


def _case(stem: str):
    """(HLO text, inputs) of the looped module or a testdata dump (its optimised text)."""
    if stem == "looped":
        n = BRIEF_LOOPED_WORK // 12 - 64
        return _looped(n), [np.random.default_rng(0).standard_normal(n, np.float32)]
    d = load_npz(DUMPS / f"{stem}.npz")
    ins = [d[f"in{i}"] for i in range(sum(1 for k in d if k.startswith("in") and k[2:].isdigit()))]
    return (DUMPS / f"{stem}.after_optimizations.hlo").read_text(), ins


def _bits_forcing(monkeypatch, text, stem, ins, field: str, forces, prepare=False):
    """Output bits of the compiled module once per value in `forces`, with the lowered
    module's per-part list `field` set to that value in every part (None: as lowered),
    and that list as each compile had it."""
    bits, seen = [], []
    for force in forces:
        real = jit.lower

        def lower(module, options, share_kernels=True, ahead=False, _force=force, _real=real):
            low = _real(module, options, share_kernels)
            if _force is not None:
                setattr(low, field, [_force] * len(low.parts))
            seen.append(list(getattr(low, field)))
            return low
        monkeypatch.setattr("hloc.backend.executable.lower", lower)
        m = hloc.parse(text, stem)
        if prepare:
            from hloc.cli_backend import prepare_for_cpu
            m = prepare_for_cpu(m, None)               # the fused row kernel
        out = flatten_leaves(compile_module(m).run(bind_arguments(m, ins)), m.entry.root.shape)
        bits.append([np.asarray(x).tobytes() for x in out])
    return bits, seen


@pytest.mark.parametrize("stem", ["bert_train_step", "mlp_train_step", "looped", "softmax"])
def test_brief_parts_give_the_same_bits(stem, monkeypatch):
    if stem == "softmax":          # not brief itself: forced, for its loops' unrolling
        monkeypatch.setattr(row_groups, "MIN_BYTES", 1 << 60)     # separate kernels (above)
        text = _softmax(64, 1024)
        ins = [np.random.default_rng(0).standard_normal((64, 1024), np.float32)]
    else:
        text, ins = _case(stem)
    bits, briefs = _bits_forcing(monkeypatch, text, stem, ins, "brief",
                                 (True, False) if stem == "softmax" else (None, False),
                                 prepare=stem == "softmax")
    assert any(briefs[0]) and not any(briefs[1])
    assert bits[0] == bits[1]


def _levels(text: str, opt_level: int = 3) -> list:
    return jit.lower(hloc.parse(text), Options(opt_level=opt_level)).levels


def test_which_parts_compile_at_the_brief_level(monkeypatch):
    from hloc.backend import row_vector
    small, large = 1 << 10, MIN_WORK // 12 + 1
    assert _levels(_elementwise(small)) == [jit.BRIEF_LEVEL]
    assert _levels(_elementwise(large)) == [None]           # the module's own level
    assert _levels(_looped(BRIEF_LOOPED_WORK // 12 - 64)) == [jit.BRIEF_LEVEL]
    assert _levels(_looped(BRIEF_LOOPED_WORK // 12 + 64)) == [None]
    # softmax's row kernel: in explicit vectors, the lean level (row_vector); its scalar
    # loops, the module's own level
    assert _levels(_softmax(64, 1024)) in ([compile_threads.LEAN], [None])
    monkeypatch.setattr(row_vector, "ENABLED", False)
    assert _levels(_softmax(64, 1024)) == [None]
    assert _levels(_elementwise(small), opt_level=0) == [0]  # never above the options'
    # the CNN step's entry computation has loops of its own, the im2col copies of its two
    # convolutions through OpenBLAS (14-56 KiB): brief where computation.BRIEF_IM2COL_BYTES
    # counts them so (the default), else the module's level; with the emitted GEMM, whose
    # loops are LLVM's, or im2col copies above a brief kernel's size, never
    from hloc.backend import computation, parallel
    m = hloc.parse((DUMPS / "cnn_train_step.after_optimizations.hlo").read_text())
    assert set(jit.lower(m, Options()).levels) == {jit.BRIEF_LEVEL}
    monkeypatch.setattr(computation, "BRIEF_IM2COL_BYTES", 0)
    levels = jit.lower(m, Options()).levels
    assert None in levels and jit.BRIEF_LEVEL in levels
    monkeypatch.setattr(computation, "BRIEF_IM2COL_BYTES", 1 << 20)
    levels = jit.lower(m, Options(gemm="emitted")).levels
    assert None in levels and jit.BRIEF_LEVEL in levels
    monkeypatch.setattr(parallel, "MIN_WORK", 2 * 56448)     # the larger one's im2col bytes
    levels = jit.lower(m, Options()).levels
    assert None in levels and jit.BRIEF_LEVEL in levels


def _objects_at(text: str, levels) -> list[bytes]:
    low = jit.lower(hloc.parse(text), Options())
    if levels is not None:
        low.levels = [levels] * len(low.parts)
    return jit.compile_objects(low, Options(), threads=2)


def test_the_brief_level_changes_the_code():
    text = _looped(BRIEF_LOOPED_WORK // 12 - 64)
    assert _objects_at(text, None) == _objects_at(text, jit.BRIEF_LEVEL)
    assert _objects_at(text, None) != _objects_at(text, 3)
    # the level is the part's own: the same text compiles to the same object either way
    assert _objects_at(text, 3) == _objects_at(text, 3)


@pytest.mark.parametrize("stem", ["bert_train_step", "mlp_train_step", "cnn_train_step",
                                  "looped"])
def test_brief_level_gives_the_same_bits(stem, monkeypatch):
    text, ins = _case(stem)
    bits, levels = _bits_forcing(monkeypatch, text, stem, ins, "levels", (None, 3))
    assert jit.BRIEF_LEVEL in levels[0] and set(levels[1]) == {3}
    assert bits[0] == bits[1]


def test_row_parts_compile_the_row_way(monkeypatch):
    """A part of row kernels: the module's level for the optimiser, ROW_CODEGEN_LEVEL for
    code generation, no SLP (jit.ROW_SLP); other parts as before; the code generation
    level changes the code but not the bits. (Row kernels with scalar loops: row_vector
    off; explicit vector ones compile at compile_threads.LEAN, test_backend_row_vector.)"""
    from hloc.backend import row_vector
    monkeypatch.setattr(row_vector, "ENABLED", False)
    low = jit.lower(hloc.parse(_softmax(64, 1024)), Options())
    assert (low.levels, low.codegen, low.slp) == ([None], [jit.ROW_CODEGEN_LEVEL], [jit.ROW_SLP])
    low = jit.lower(hloc.parse(_elementwise(MIN_WORK // 12 + 1)), Options())
    assert (low.levels, low.codegen, low.slp) == ([None], [None], [True])
    low = jit.lower(hloc.parse(_softmax(64, 1024)), Options(opt_level=0))
    assert low.codegen == [0]                               # never above the options'
    text = _softmax(64, 1024)

    def objects(codegen):
        low = jit.lower(hloc.parse(text), Options())
        if codegen is not None:
            low.codegen = [codegen]
        return jit.compile_objects(low, Options(), threads=1)
    assert objects(None) == objects(jit.ROW_CODEGEN_LEVEL) != objects(3)
    ins = [np.random.default_rng(0).standard_normal((64, 1024), np.float32)]
    bits, cgs = _bits_forcing(monkeypatch, text, "softmax", ins, "codegen", (None, 3),
                              prepare=True)
    assert cgs == [[jit.ROW_CODEGEN_LEVEL], [3]] and bits[0] == bits[1]
    bits, briefs = _bits_forcing(monkeypatch, text, "softmax", ins, "brief", (None, False),
                                 prepare=True)
    assert briefs == [[True], [False]] and bits[0] == bits[1]


def test_compiles_under_other_options_wait_and_the_defaults_come_back():
    import threading
    opts = compile_threads._Options()
    brief, default = compile_threads.BRIEF_OPTIONS, compile_threads.DEFAULT_OPTIONS
    opts.acquire(brief)
    opts.acquire(brief)                    # the same options: at once
    got = []

    def other():
        opts.acquire(default)
        got.append(opts._current)
        opts.release()
    t = threading.Thread(target=other)
    t.start()
    t.join(0.3)
    assert not got                         # waits while brief compiles run
    opts.release()
    t.join(0.3)
    assert not got
    opts.release()
    t.join(10)
    assert got == [default] and opts._current == default


_FIRST_COMPILE = """
import hashlib, sys
from hloc.backend import jit, llvm_parts
if {host_first}:
    jit.host()
part, = llvm_parts.read(open({path!r}).read())
assert part.brief
print(hashlib.sha256(llvm_parts.compile_printed(part)).hexdigest())
"""


def test_the_first_compile_of_a_process_keeps_its_options(tmp_path):
    # jit.host() initialises LLVM once per process; made inside a brief compile (the
    # first thing a process does is to compile a printed part), it must not put LLVM's
    # options back to the defaults under that compile
    import subprocess
    import sys
    from hloc.backend import llvm_parts
    part, = llvm_parts.module_parts(hloc.parse(_looped(BRIEF_LOOPED_WORK // 12 - 64)), Options())
    path = tmp_path / "part.ll"
    path.write_text(llvm_parts.text([part]))
    digests = [subprocess.run([sys.executable, "-c", _FIRST_COMPILE.format(path=str(path), host_first=h)],
                              capture_output=True, text=True, check=True).stdout
               for h in (True, False)]
    assert digests[0] == digests[1]
