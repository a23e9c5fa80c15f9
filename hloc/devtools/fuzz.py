"""A fixed-seed mutation fuzzer over HLO text dumps: the mutations and one case's run.

`mutate(text, rng)` applies one to three random mutations (spans deleted, duplicated,
swapped or truncated; numbers, opcodes, element types, dimensions, attribute values,
operands, called computations, constants and comparison directions replaced);
`run_case(text, deep, rng)` sends the mutant through parse + verify + print and, with
`deep`, through the interpreter (fake arguments, sometimes over the whole float range)
and the default `hloc opt` pipeline, and classifies the outcome:

  ok           every stage succeeded
  error        a clean HlocError (parse / verify / input / out of memory)
  unsupported  the interpreter cannot run an op and says so
  crash        any other exception, or a NumPy warning (warnings are errors here)

Over-budget cases and native crashes are seen from outside the process: tools/fuzz.py runs
cases in worker processes with a watchdog; tests run a bounded number in-process. It lives
in the package (not in tools/) so the suite can import it without path tricks; it imports
nothing beyond hloc and NumPy.
"""
from __future__ import annotations

import random
import re
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..ops import REGISTRY
from ..ops.base import ELEMENTWISE, SHAPE_REQUIRED


def _elementwise(arity: int) -> tuple:
    """Elementwise ops of `arity` that need no attribute and no written result type."""
    return tuple(n for n, op in REGISTRY.items()
                 if ELEMENTWISE in op.traits and op.arity == arity and not op.required_attrs
                 and SHAPE_REQUIRED not in op.traits and op.unsupported is None)


UNARY_OPS = _elementwise(1)
BINARY_OPS = _elementwise(2)
OTHER_OPS = ("reshape", "broadcast", "transpose", "slice", "reduce", "select", "clamp",
             "convert", "bitcast-convert", "dot", "concatenate", "pad", "gather", "scatter",
             "while", "call", "conditional", "tuple", "get-tuple-element", "iota",
             "dynamic-slice", "dynamic-update-slice", "reverse", "sort", "map", "fusion",
             "reduce-window", "select-and-scatter", "convolution", "rng", "compare",
             "custom-call", "bitcast", "copy-start", "all-reduce", "after-all")
DTYPES = ("pred", "s8", "s16", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64",
          "c64", "c128", "f8e4m3fn", "s4", "u1", "token")
NUMBERS = ("0", "-1", "1", "2", "2147483648", "-2147483648", "9223372036854775808",
           "-9223372036854775809", "1e30", "18446744073709551616", "4294967296", "65536")
FLOATS = ("nan", "-nan", "inf", "-inf", "-0", "0", "1e38", "3.4028235e+38", "1e-45",
          "1.7976931348623157e+308", "-2147483648", "2147483647", "-9223372036854775808",
          "65504", "5e-324")
DIMS = ("0", "1", "-1", "2147483648", "1000000000000", "9223372036854775807", "7")
DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE", "XX")

_NUM_RE = re.compile(r"(?<![\w.%])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")
_OPCODE_RE = re.compile(r"(?<=\s)([a-z][a-z0-9-]*)(?=\()")
_DTYPE_RE = re.compile(r"\b(pred|[sfuc]\d+|bf16|f8e\w+|token)(?=\[)")
_DIMS_RE = re.compile(r"(?<=[a-z0-9]\[)([^\]]*)(?=\])")
_ATTR_RE = re.compile(r"\b([a-z_]+)=(\{[^{}]*\}|[\w.:-]+)")
_NAME_RE = re.compile(r"%[\w.-]+")
_INST_NAME_RE = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.-]+)\s*=", re.M)
_COMP_NAME_RE = re.compile(r"^\s*(?:ENTRY\s+)?(%[\w.-]+)\s*[({]", re.M)
_CALLS_RE = re.compile(r"\b(calls|to_apply|body|condition|branch_computations|"
                       r"true_computation|false_computation)=\{?(%?[\w.-]+)")
_CONST_RE = re.compile(r"constant\(([^()]*)\)")
_DIRECTION_RE = re.compile(r"direction=([A-Z]+)")


def _spans(text: str, rng: random.Random) -> tuple[int, int]:
    a = rng.randrange(len(text) + 1)
    return a, min(len(text), a + rng.choice((1, 2, 5, 20, 100, 1000)))


def _replace_match(text: str, pattern: re.Pattern, rng: random.Random, make) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = rng.choice(matches)
    g = 1 if m.re.groups else 0
    return text[:m.start(g)] + make(m.group(g)) + text[m.end(g):]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def m_delete(text, rng):
    a, b = _spans(text, rng)
    return text[:a] + text[b:]


def m_duplicate(text, rng):
    a, b = _spans(text, rng)
    return text[:b] + text[a:b] + text[b:]


def m_truncate(text, rng):
    return text[:rng.randrange(len(text) + 1)]


def m_flip(text, rng):
    if not text:
        return text
    i = rng.randrange(len(text))
    return text[:i] + rng.choice("{}()[],=%:;\"\\ \n0a-/*.#\x00é") + text[i + 1:]


def m_swap_lines(text, rng):
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def m_delete_line(text, rng):
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "\n".join(lines)


def m_number(text, rng):
    return _replace_match(text, _NUM_RE, rng, lambda _: rng.choice(NUMBERS))


def m_opcode(text, rng):
    def make(old):
        for group in (UNARY_OPS, BINARY_OPS):
            if old in group and rng.random() < 0.7:
                return rng.choice(group)              # same kind: often still verifies
        return rng.choice(UNARY_OPS + BINARY_OPS + OTHER_OPS)
    return _replace_match(text, _OPCODE_RE, rng, make)


def m_dtype(text, rng):
    return _replace_match(text, _DTYPE_RE, rng, lambda _: rng.choice(DTYPES))


def m_dims(text, rng):
    def make(old):
        dims = old.split(",") if old else []
        if not dims or rng.random() < 0.2:
            return ",".join(dims + [rng.choice(DIMS)])
        dims[rng.randrange(len(dims))] = rng.choice(DIMS)
        return ",".join(dims)
    return _replace_match(text, _DIMS_RE, rng, make)


def m_attribute(text, rng):
    def make(old):
        value = old
        nums = list(_NUM_RE.finditer(value))
        if nums and rng.random() < 0.8:
            n = rng.choice(nums)
            return value[:n.start()] + rng.choice(NUMBERS + DIMS) + value[n.end():]
        return rng.choice(("{}", "{0,0}", "{-1}", "{1,0,2}", "0", "-1", "LT", "{{0,1}}",
                           "bogus", "2147483648"))
    return _replace_match(text, re.compile(_ATTR_RE.pattern.replace("([a-z_]+)=", "[a-z_]+=")),
                          rng, make)


def m_operand(text, rng):
    names = _INST_NAME_RE.findall(text)
    if not names:
        return text
    lines = _lines(text)
    i = rng.randrange(len(lines))
    line = lines[i]
    paren = line.find("(", line.find("="))
    refs = [m for m in _NAME_RE.finditer(line) if m.start() > paren > 0]
    if not refs:
        return text
    m = rng.choice(refs)
    new = rng.choice(names)
    if not new.startswith("%") and m.group().startswith("%"):
        new = "%" + new
    lines[i] = line[:m.start()] + new + line[m.end():]
    return "\n".join(lines)


def m_called(text, rng):
    comps = _COMP_NAME_RE.findall(text)
    if not comps:
        return text
    return _replace_match(text, re.compile(_CALLS_RE.pattern.replace(r"=\{?(%?[\w.-]+)",
                                                                     r"=\{?(%?[\w.-]+)")),
                          rng, lambda old: rng.choice(comps))


def _constant_body(old: str, rng: random.Random) -> str:
    r = rng.random()
    nums = list(_NUM_RE.finditer(old)) + list(re.finditer(r"\b(?:true|false|nan|inf)\b", old))
    if nums and r < 0.6:
        n = rng.choice(nums)
        return old[:n.start()] + rng.choice(FLOATS + NUMBERS) + old[n.end():]
    if r < 0.8 and "," in old:                          # one element fewer
        k = old.rfind(",")
        return old[:k] + old[k + 1:].replace(old[k + 1:].strip(" }"), "", 1)
    if r < 0.9 and old.endswith("}"):                   # one element more
        return old[:-1] + ", " + rng.choice(FLOATS) + "}"
    return rng.choice(("{}", "{{}}", "0", "{0}", "nan", "{...}", "true", "(1, 2)"))


def m_constant(text, rng):
    return _replace_match(text, _CONST_RE, rng, lambda old: _constant_body(old, rng))


def m_direction(text, rng):
    return _replace_match(text, _DIRECTION_RE, rng, lambda _: rng.choice(DIRECTIONS))


SYNTACTIC = (m_delete, m_duplicate, m_truncate, m_flip, m_swap_lines, m_delete_line)
STRUCTURAL = (m_number, m_opcode, m_dtype, m_dims, m_attribute, m_operand, m_called,
              m_constant, m_direction)
# Mutations that often leave a module valid: used for the deep (run + opt) cases.
SEMANTIC = (m_constant, m_constant, m_opcode, m_direction, m_number)


def mutate(text: str, rng: random.Random, *, deep: bool = False) -> tuple[str, list[str]]:
    """The mutant and the names of the mutations applied."""
    pool = SEMANTIC if deep else SYNTACTIC + STRUCTURAL + STRUCTURAL
    names = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        fn = rng.choice(pool)
        text = fn(text, rng)
        names.append(fn.__name__[2:])
    return text, names


def corpus(root: Path, *, max_bytes: int = 60_000) -> list[Path]:
    """The .hlo files under root up to max_bytes, in a fixed order."""
    return sorted(p for p in root.rglob("*.hlo") if p.stat().st_size <= max_bytes)


@dataclass
class Outcome:
    kind: str             # ok | error | unsupported | crash
    stage: str            # parse | verify | print | run | opt
    detail: str = ""


def run_case(text: str, *, deep: bool, seed: int = 0, large_floats: bool = False) -> Outcome:
    """One mutant through the stages, NumPy warnings turned into errors."""
    with warnings.catch_warnings(), np.errstate(divide="warn", over="warn", invalid="warn",
                                                under="ignore"):   # NumPy's defaults
        warnings.simplefilter("error")
        return _run_case(text, deep, seed, large_floats)


def _run_case(text, deep, seed, large_floats) -> Outcome:
    from ..diagnostics import HlocError, UnsupportedError
    stage = "parse"
    try:
        from ..printer import module_to_text
        from ..syntax import parse_modules
        from ..verifier import verify
        modules = parse_modules(text, "<fuzz>")
        stage = "verify"
        for m in modules:
            verify(m)
        stage = "print"
        for m in modules:
            module_to_text(m)
        if not deep or len(modules) != 1:
            return Outcome("ok", stage)
        from ..fake_args import make_fake_arguments
        from ..passes.driver import optimize
        from ..passes.pipelines import default_pipeline
        from ..runner import result_text, run_module
        m = modules[0]
        stage = "run"
        args = make_fake_arguments(m, seed=seed, use_large_float_range=large_floats)
        try:
            result = run_module(m, args)
            result_text(result.shape, result.value)
            ran = True
        except UnsupportedError:
            ran = False
        stage = "opt"
        m = parse_modules(text, "<fuzz>")[0]
        optimize(m, default_pipeline())
        module_to_text(m)
        return Outcome("ok" if ran else "unsupported", "run" if not ran else stage)
    except UnsupportedError as e:
        return Outcome("unsupported", stage, str(e).splitlines()[0])
    except HlocError as e:
        return Outcome("error", stage, str(e).splitlines()[0] if str(e) else "")
    except (RecursionError, MemoryError) as e:      # the CLI reports these cleanly
        return Outcome("error", stage, type(e).__name__)
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(tb)
                      if "/hloc/" in f.filename.replace("\\", "/")), "?")
        return Outcome("crash", stage, f"{type(e).__name__}: {str(e)[:200]} at {where}")


def make_case(files: list[Path], texts: dict, index: int, base_seed: int, deep: bool):
    """Case `index` of a run: (source file, mutant text, mutation names, large floats)."""
    rng = random.Random(f"{base_seed}:{'deep' if deep else 'check'}:{index}")
    path = files[rng.randrange(len(files))]
    if path not in texts:
        texts[path] = path.read_text()
    text, names = mutate(texts[path], rng, deep=deep)
    return path, text, names, rng.random() < 0.5
