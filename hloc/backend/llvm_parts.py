"""The LLVM IR that runs, printed: the parts of a module as the JIT compiles them.

The JIT compiles a lowered module as parts (hloc.backend.jit.part_plan), each optimised
and code-generated with its own settings: its pass pipeline (O3, O1 for brief code, or
compile_threads.LEAN_PASSES for explicit vector row kernels), SLP on or off, the
process-wide LLVM options it compiles under (compile_threads.BRIEF_OPTIONS or the
defaults) and its code-generation level. `hloc emit-llvm` prints every part, each after
a header comment naming its settings (`HEADER`, read back by `read`), before or after
its own passes; `hloc opt --dump-to` writes one file per part, named as XLA:CPU names the
parts of its parallel-codegen split (llvm_ir::DumpIrIfEnabled with the part module's
identifier suffix: `module_NNNN.<name>.ir-no-opt.part_00.ll`, `.ir-with-opt.part_00.ll`,
and `.ir-no-opt.ll` / `.ir-with-opt.ll` for a module compiled whole). The optimised text,
code-generated with its part's settings (`compile_printed`), is the JIT's object.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import compile_threads, jit

HEADER = re.compile(r"^; hloc part (\d+) of (\d+)(?: \((part_\d+)\))?: passes=(\S+) "
                    r"slp=(on|off) llvm-options=(\S+) codegen=O(\d)$", re.M)
LEAN_NAME = f"lean({','.join(name for name, _ in compile_threads.LEAN_PASSES)})"   # passes=, LEAN


@dataclass
class Part:
    """One part: its IR text (before passes, or after them once `optimised`) and the
    settings it compiles with (hloc.backend.jit.Lowered.settings)."""
    index: int
    count: int
    text: str
    slp: bool
    brief: bool            # compiled under compile_threads.BRIEF_OPTIONS
    level: int             # its passes' level (compile_threads.LEAN: the lean list)
    codegen: int           # its code generation's level

    @property
    def name(self) -> str:
        """XLA's suffix for a part of a split module ("" for a module compiled whole)."""
        return f"part_{self.index:02d}" if self.count > 1 else ""

    def header(self) -> str:
        passes = LEAN_NAME if self.level == compile_threads.LEAN else f"O{self.level}"
        opts = compile_threads.options_of(self.brief)
        name = f" ({self.name})" if self.name else ""
        return (f"; hloc part {self.index + 1} of {self.count}{name}: passes={passes} "
                f"slp={'on' if self.slp else 'off'} llvm-options={','.join(opts)} "
                f"codegen=O{self.codegen}")


def parts(lowered, options) -> list[Part]:
    """The parts of a lowered module (hloc.backend.jit.lower) with their settings."""
    n = len(lowered.parts)
    return [Part(k, n, text, slp, brief, level, cg) for k, (text, (slp, brief, level, cg))
            in enumerate(zip(lowered.parts, lowered.settings(options)))]


def optimised(part: Part, make_tm=jit.compile_machine) -> Part:
    """`part` after its own passes (with the machine of its code generation, as the JIT)."""
    text = compile_threads.optimised_text(part.text, make_tm(part.codegen), part.level,
                                          part.slp, part.brief)
    return Part(part.index, part.count, text, part.slp, part.brief, part.level, part.codegen)


def module_parts(module, options, optimized: bool = True) -> list[Part]:
    """The parts the JIT compiles `module` as (units included, as jit.lower's `ahead`),
    before or after their passes."""
    ps = parts(jit.lower(module, options, units=True), options)
    return [optimised(p) for p in ps] if optimized else ps


def text(ps: list[Part]) -> str:
    """One text: every part after its header comment."""
    return "\n".join(f"{p.header()}\n{p.text}" + ("" if p.text.endswith("\n") else "\n")
                     for p in ps)


def dump_files(ps: list[Part], optimized: bool) -> list[tuple[str, str]]:
    """(XLA's dump suffix, text) per part: `ir-with-opt.part_00.ll` ..."""
    stage = "ir-with-opt" if optimized else "ir-no-opt"
    return [(".".join(x for x in (stage, p.name, "ll") if x), f"{p.header()}\n{p.text}")
            for p in ps]


def read(printed: str) -> list[Part]:
    """The parts of a text `text` printed, with their settings from the headers (each
    text as printed, with its final newline)."""
    heads = list(HEADER.finditer(printed))
    if not heads:
        raise ValueError("no '; hloc part' header in the text")
    out = []
    for k, h in enumerate(heads):
        end = heads[k + 1].start() - 1 if k + 1 < len(heads) else len(printed)   # "\n" between
        passes = h.group(4)
        level = compile_threads.LEAN if passes == LEAN_NAME else int(passes.lstrip("O"))
        brief = h.group(6) == ",".join(compile_threads.BRIEF_OPTIONS)
        out.append(Part(int(h.group(1)) - 1, int(h.group(2)), printed[h.end() + 1:end],
                        h.group(5) == "on", brief, level, int(h.group(7))))
    return out


def compile_printed(part: Part, make_tm=jit.compile_machine) -> bytes:
    """The object of an optimised part's printed IR: code generation only, at its level
    and under its options (what the JIT emits after the part's passes)."""
    with compile_threads.OPTIONS_LOCK.compiling(part.brief):
        return compile_threads.compile_one(part.text, lambda: make_tm(part.codegen), 0,
                                           compile_threads.available())
