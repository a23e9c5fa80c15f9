"""Shrink a module while a predicate holds (delta debugging), keeping it valid HLO.

`reduce_module(text, predicate)` starts from a module for which `predicate(text)` is
true and applies shrinking edits in a fixed order until none makes progress:

1. cut the ENTRY at one instruction (it becomes the ROOT; what no longer feeds it goes):
   a binary search over the ENTRY's instructions in order finds an early cut that holds,
   then an operand of the ROOT becomes the ROOT while that holds;
2. replace instructions by new parameters of the same shape, so everything feeding only
   them goes (chunks first, halving to single instructions, nearest to the ROOT first);
3. replace instructions by their own operands of the same shape;
4. inline calls (the call inliner pass) and drop unused computations and parameters.

Every candidate is printed, parsed back and verified before the predicate sees it, so
whatever is returned parses and verifies; the edits and their order are deterministic.
Predicates (`mismatch_predicate`, `message_predicate`, `command_predicate`) take the
candidate's text and its arguments and say whether it is still interesting; errors count
as "no". With `inputs` (the module's arguments) the reduction keeps values: a parameter
that replaces an instruction gets the value that instruction had in the module being
reduced (one interpreter run of it with every ENTRY value as an output), so the small
module sees exactly the numbers the big one saw; `ReduceResult.arguments` are its
arguments. Without `inputs`, arguments are None and predicates make fake ones.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Callable

from .diagnostics import HlocError
from .ir.graph import remove_unreachable_computations

__all__ = ["reduce_module", "ReduceResult", "instruction_count", "mismatch_predicate",
           "message_predicate", "command_predicate"]

_STALE_HEADER = ("entry_computation_layout", "input_output_alias", "buffer_donor",
                 "is_scheduled")


@dataclass
class ReduceResult:
    text: str
    instructions: int
    start_instructions: int
    evaluations: int
    accepted: int
    arguments: list | None = None      # the reduced module's arguments (with `inputs`)


def _parse(text: str):
    from .syntax import parse_module
    return parse_module(text, "<candidate>")


def _print(module) -> str:
    from .printer import module_to_text
    return module_to_text(module)


def instruction_count(module) -> int:
    return sum(len(c.instructions) for c in module.computations)


def _clean(module) -> None:
    """Dead ENTRY code, unused parameters and computations, stale header attributes."""
    entry = module.entry
    live, stack = set(), [entry.root]
    while stack:
        inst = stack.pop()
        if id(inst) in live:
            continue
        live.add(id(inst))
        stack.extend(inst.operands)
        stack.extend(inst.control_predecessors)
    dead = [i for i in entry.instructions if id(i) not in live and i.opcode != "parameter"]
    for inst in entry.instructions:
        if id(inst) in live:
            inst.control_predecessors[:] = [p for p in inst.control_predecessors
                                            if id(p) in live]
    if dead:
        entry.remove_instructions(dead)
    for n in range(len(entry.parameters) - 1, -1, -1):
        p = entry.parameters[n]
        if not p.users and p is not entry.root:
            entry.remove_parameter(n)
    remove_unreachable_computations(module)
    for key in _STALE_HEADER:
        module.attrs.pop(key, None)


def _new_parameter(entry, shape, like_name: str):
    from .ir.module import Instruction
    from .ir.rewriter import uniquer
    from .ops import REGISTRY
    inst = Instruction(uniquer(entry.parent).unique(f"p_{like_name}"), REGISTRY["parameter"],
                       shape)
    inst.parameter_number = len(entry.parameters)
    first = next((i for i in entry.instructions if i.opcode != "parameter"), None)
    entry.add_instruction(inst, before=first)
    return inst


def _valid(module) -> str | None:
    """The module's text when it prints, parses back and verifies; else None."""
    from .verifier import collect_errors
    try:
        text = _print(module)
        if collect_errors(_parse(text)):
            return None
        return text
    except (HlocError, ValueError, KeyError, IndexError, AttributeError, RecursionError):
        return None


def entry_values(module, args: list) -> dict:
    """Every ENTRY instruction's value (by name) when `module` runs on `args` on the
    interpreter: one run of a copy whose ROOT is a tuple of all of them."""
    from .ir.rewriter import add_instruction
    from .ir.shape import TupleShape
    from .replay import DEFAULT_SEED, run_side
    copy = _parse(_print(module))
    entry = copy.entry
    keep = [i for i in entry.instructions if _array_shape(i.shape) or i.shape.is_tuple]
    root = add_instruction(entry, "tuple", TupleShape(tuple(i.shape for i in keep)), keep)
    entry.root = root
    value, _, _ = run_side(copy, args, "interpreter", DEFAULT_SEED)
    return {i.name: v for i, v in zip(keep, value)}


class _Reducer:
    def __init__(self, text: str, predicate, progress, args: list | None):
        self.best = text
        self.size = instruction_count(_parse(text))
        self.predicate = predicate
        self.progress = progress
        self.evaluations = 0
        self.accepted = 0
        self.args = args
        self.values = entry_values(_parse(text), args) if args is not None else None

    def attempt(self, edit) -> bool:
        """Apply `edit(module, values)` to a fresh copy of the best module (`values`: the
        best module's ENTRY values, or None); keep it if smaller, valid and still
        interesting."""
        module = _parse(self.best)
        try:
            if edit(module, self.values) is False:
                return False
            _clean(module)
        except (ValueError, KeyError, IndexError, AttributeError):
            return False
        text = _valid(module)
        if text is None:
            return False
        candidate = _parse(text)
        size = instruction_count(candidate)
        if size >= self.size:
            return False
        args = None
        if self.values is not None:
            if any(p.name not in self.values for p in candidate.entry.parameters):
                return False
            args = [self.values[p.name] for p in candidate.entry.parameters]
        self.evaluations += 1
        try:
            ok = bool(self.predicate(text, args))
        except Exception:       # noqa: BLE001 - a candidate that breaks hloc is not kept
            ok = False
        if ok:
            self.best, self.size, self.args = text, size, args
            if args is not None:
                self.values = entry_values(candidate, args)
            self.accepted += 1
            self.progress.note(f"reduce: {size} instructions")
        return ok

    # -- edits -------------------------------------------------------------------------
    def cut_root(self) -> bool:
        names = [i.name for i in _parse(self.best).entry.instructions
                 if i.opcode != "parameter"]
        lo, hi = -1, len(names) - 1        # names[hi] as ROOT holds (the current ROOT)
        found = False
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.attempt(lambda m, v, n=names[mid]: _set_root(m, n)):
                hi, found = mid, True
                names = names[:mid + 1]
            else:
                lo = mid
        return found

    def descend_root(self) -> bool:
        """Make an operand of the ROOT the ROOT while that holds (tuples, loops)."""
        progress = True
        found = False
        while progress:
            progress = False
            root = _parse(self.best).entry.root
            for name in dict.fromkeys(o.name for o in root.operands
                                      if o.opcode != "parameter"):
                if self.attempt(lambda m, v, n=name: _set_root(m, n)):
                    progress = found = True
                    break
        return found

    def to_parameters(self) -> bool:
        progress = False
        order = _from_root(_parse(self.best))
        chunk = max(1, len(order) // 2)
        while chunk >= 1:
            i = 0
            while i < len(order):
                group = order[i:i + chunk]
                if self.attempt(lambda m, v, g=group: _parameterize(m, g, v)):
                    progress = True
                    order = _from_root(_parse(self.best))
                    i = 0 if chunk > 1 else i
                    continue
                i += chunk
            if chunk == 1:
                break
            chunk //= 2
        return progress

    def to_operands(self) -> bool:
        progress = False
        for name in _from_root(_parse(self.best)):
            if self.attempt(lambda m, v, n=name: _forward_operand(m, n)):
                progress = True
        return progress

    def inline_calls(self) -> bool:
        def edit(m, values):
            from .passes import get_pass
            from .passes.driver import optimize
            if not any(i.opcode == "call" for c in m.computations for i in c.instructions):
                return False
            optimize(m, get_pass("call-inliner"), verify_each=False, force=True)
        return self.attempt(edit)


def _set_root(module, name: str):
    inst = module.entry.instruction_by_name(name)
    if inst is None or inst is module.entry.root:
        return False
    module.entry.root = inst
    if hasattr(inst, "is_root_marked"):
        for i in module.entry.instructions:
            i.is_root_marked = i is inst
    return True


def _from_root(module) -> list[str]:
    """Non-parameter, non-ROOT ENTRY instructions, nearest to the ROOT first (BFS)."""
    entry = module.entry
    seen, order, frontier = {id(entry.root)}, [], list(entry.root.operands)
    while frontier:
        nxt = []
        for inst in frontier:
            if id(inst) in seen:
                continue
            seen.add(id(inst))
            if inst.opcode != "parameter":
                order.append(inst.name)
            nxt.extend(inst.operands)
        frontier = nxt
    return order


def _array_shape(shape) -> bool:
    from .ir.shape import ArrayShape
    return isinstance(shape, ArrayShape) and shape.dtype.is_array


def _parameterize(module, names, values) -> bool:
    """Replace the named instructions by new parameters; with `values`, each parameter's
    value (under its new name) is the instruction's."""
    entry = module.entry
    done = False
    for name in names:
        inst = entry.instruction_by_name(name)
        if inst is None or inst.parent is not entry or not inst.users or \
                not _array_shape(inst.shape) or inst.opcode == "constant" and \
                inst.shape.rank == 0:
            continue
        p = _new_parameter(entry, inst.shape, name)
        if values is not None:
            values[p.name] = values[name]
        inst.replace_all_uses_with(p)
        done = True
    return done


def _forward_operand(module, name: str) -> bool:
    inst = module.entry.instruction_by_name(name)
    if inst is None:
        return False
    for op in inst.operands:
        if str(op.shape) == str(inst.shape):
            inst.replace_all_uses_with(op)
            return True
    return False


def reduce_module(text: str, predicate: Callable, *, inputs: list | None = None,
                  progress=None, max_rounds: int = 8) -> ReduceResult:
    """The smallest module found for which `predicate(text, arguments)` holds (starting
    from `text` with `inputs`, for which it must hold)."""
    from .diagnostics import InputError
    from .progress import NULL
    progress = progress or NULL
    start = _parse(text)
    params = [p.name for p in start.entry.parameters]
    _clean(start)
    first = _valid(start)
    args = None
    if inputs is not None and first is not None:
        by_name = dict(zip(params, inputs))
        args = [by_name[p.name] for p in _parse(first).entry.parameters]
    if first is None or not predicate(first, args):
        raise InputError("the predicate does not hold for the module as given; nothing to "
                         "reduce")
    r = _Reducer(first, predicate, progress, args)
    start_size = instruction_count(_parse(text))
    for _ in range(max_rounds):
        with progress.phase("reduce", f"{r.size} instructions"):
            changed = r.cut_root()
            changed |= r.descend_root()
            changed |= r.to_parameters()
            changed |= r.to_operands()
            changed |= r.inline_calls()
        if not changed:
            break
    return ReduceResult(r.best, r.size, start_size, r.evaluations, r.accepted, r.args)


# ---------------------------------------------------------------------------
# Predicates

def mismatch_predicate(config) -> Callable[[str], bool]:
    """Holds when replaying the module (hloc.replay, `config`) reports a mismatch."""
    from .replay import replay_module

    def holds(text: str, args=None) -> bool:
        return not replay_module(_parse(text), config, inputs=args).ok
    return holds


def message_predicate(message: str, config=None) -> Callable[[str], bool]:
    """Holds when replaying the module fails with an hloc error containing `message`
    (or an internal error whose `Type: text` contains it)."""
    from .replay import ReplayConfig, replay_module

    def holds(text: str, args=None) -> bool:
        try:
            replay_module(_parse(text), config or ReplayConfig(), inputs=args)
        except HlocError as e:
            return message in e.message
        except Exception as e:  # noqa: BLE001 - an internal error is what users reduce
            return message in f"{type(e).__name__}: {e}"
        return False
    return holds


def command_predicate(command: str, *, timeout: float = 600) -> Callable[[str], bool]:
    """Holds when the shell command exits 0; `{}` in it is the candidate file's path
    (else the path is appended). The command sees the text only, not the arguments."""

    def holds(text: str, args=None) -> bool:
        fd, path = tempfile.mkstemp(suffix=".hlo", prefix="hloc-reduce-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            cmd = command.replace("{}", shlex.quote(path)) if "{}" in command \
                else f"{command} {shlex.quote(path)}"
            try:
                done = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False
            return done.returncode == 0
        finally:
            os.unlink(path)
    return holds
