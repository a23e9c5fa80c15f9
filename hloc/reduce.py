"""Shrink a module while a predicate holds (delta debugging), keeping it valid HLO.

`reduce_module(text, predicate)` starts from a module for which `predicate(text)` is
true and applies shrinking edits in a fixed order until none makes progress:

1. cut the ENTRY at one instruction (it becomes the ROOT; what no longer feeds it goes):
   a binary search over the ENTRY's instructions in order finds an early cut that holds,
   then an operand of the ROOT becomes the ROOT while that holds;
2. replace instructions by new parameters of the same shape, so everything feeding only
   them goes (chunks first, halving to single instructions, nearest to the ROOT first);
3. replace instructions by their own operands of the same shape;
4. shrink shapes: a module left with elementwise instructions over one shape keeps
   half of its elements (flattened) while that holds, down to one;
5. inline calls (the call inliner pass) and drop unused computations and parameters.

For a mismatch predicate (`mismatch_predicate`) a guided cut comes first: one run of the
module with every ENTRY value as an output on the test back end (LLVM optimisations off)
names the instructions whose values diverge from the interpreter's, and the first of
them, cut out with its operands as parameters, is tried as the whole module. A big
module then costs two compiles (the predicate's check of the input and the guide)
instead of a search over big candidates.

Every candidate is printed, parsed back and verified before the predicate sees it, so
whatever is returned parses and verifies; a candidate is kept only when it is smaller
(fewer instructions, then fewer elements); the edits and their order are deterministic.
Predicates (`mismatch_predicate`, `message_predicate`, `command_predicate`) take the
candidate's text and its arguments and say whether it is still interesting; errors count
as "no". With `inputs` (the module's arguments) the reduction keeps values: a parameter
that replaces an instruction gets the value that instruction had in the module being
reduced (one interpreter run of it with every ENTRY value as an output), so the small
module sees exactly the numbers the big one saw; `ReduceResult.arguments` are its
arguments. Without `inputs`, arguments are None and predicates make fake ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .diagnostics import HlocError
from .ir.graph import remove_unreachable_computations

__all__ = ["reduce_module", "ReduceResult", "instruction_count", "mismatch_predicate",
           "message_predicate", "command_predicate"]

_STALE_HEADER = ("entry_computation_layout", "input_output_alias", "buffer_donor",
                 "is_scheduled", "allow_spmd_sharding_propagation_to_parameters",
                 "allow_spmd_sharding_propagation_to_output")


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
        if id(inst) in live and inst.control_predecessors:
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


def entry_values(module, args: list, backend: str = "interpreter") -> dict:
    """Every ENTRY instruction's value (by name) when `module` runs on `args` on
    `backend`: one run of a copy whose ROOT is a tuple of all of them."""
    from .ir.rewriter import add_instruction
    from .ir.shape import TupleShape
    from .replay import DEFAULT_SEED, run_side
    copy = _parse(_print(module))
    entry = copy.entry
    keep = [i for i in entry.instructions if _array_shape(i.shape) or i.shape.is_tuple]
    root = add_instruction(entry, "tuple", TupleShape(tuple(i.shape for i in keep)), keep)
    entry.root = root
    value, _, _ = run_side(copy, args, backend, DEFAULT_SEED)
    return {i.name: v for i, v in zip(keep, value)}


class _Reducer:
    def __init__(self, text: str, predicate, progress, args: list | None):
        self.best = text
        self.size = instruction_count(_parse(text))
        self.key = _size_key(_parse(text))
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
        values = dict(self.values) if self.values is not None else None
        try:
            if edit(module, values) is False:
                return False
            _clean(module)
        except (ValueError, KeyError, IndexError, AttributeError):
            return False
        text = _valid(module)
        if text is None:
            return False
        candidate = _parse(text)
        size, key = instruction_count(candidate), _size_key(candidate)
        if key >= self.key:
            return False
        args = None
        if values is not None:
            if any(p.name not in values for p in candidate.entry.parameters):
                return False
            args = [values[p.name] for p in candidate.entry.parameters]
        self.evaluations += 1
        try:
            ok = bool(self.predicate(text, args))
        except Exception:       # noqa: BLE001 - a candidate that breaks hloc is not kept
            ok = False
        if ok:
            self.best, self.size, self.key, self.args = text, size, key, args
            if args is not None:
                self.values = entry_values(candidate, args)
            self.accepted += 1
            self.progress.note(f"reduce: {size} instructions")
        return ok

    # -- edits -------------------------------------------------------------------------
    def guided_cut(self, config, tries: int = 4) -> bool:
        """For a mismatch predicate: one run of the module with every ENTRY value as an
        output on the test back end, compared value by value with the interpreter's;
        the first instructions that diverge (in ENTRY order, so their operands agree)
        are tried cut out on their own: the instruction as ROOT, its operands
        parameters carrying the values they had. One compile of the big module instead
        of a search over big candidates; when no cut keeps the predicate, nothing
        changes and the other edits go on as before."""
        from .compare import near
        from .fake_args import make_fake_arguments
        from .replay import DEFAULT_SEED
        module = _parse(self.best)
        values = self.values
        args = self.args
        try:
            if values is None:
                args = make_fake_arguments(module, rng=np.random.default_rng(DEFAULT_SEED))
                values = entry_values(module, args)
            with self.progress.phase("reduce", "every value on the test back end"):
                test = entry_values(module, args, _exploratory(config.test_backend))
        except (HlocError, MemoryError):       # no guide: the search below still runs
            return False
        diverging = [i.name for i in module.entry.instructions
                     if i.opcode != "parameter" and i.name in test and i.name in values
                     and not near(values[i.name], test[i.name], config.spec).ok]
        for name in diverging[:tries]:
            if self.attempt(lambda m, v, n=name: _isolate(m, n, dict(values) if v is None
                                                          else v)):
                return True
        return False

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

    def shrink_shapes(self) -> bool:
        """A module of elementwise instructions over one shape (where reductions of an
        elementwise bug end): its elements, flattened, halved while the predicate holds
        (either half), down to one; with values, each half keeps the values it had."""
        progress = False
        while True:
            module = _parse(self.best)
            n = _elementwise_elements(module)
            if n is None or n <= 1:
                return progress
            halves = ((0, n // 2), (n // 2, n))
            if not any(self.attempt(lambda m, v, a=a, b=b: _flat_slice(m, a, b, v))
                       for a, b in halves):
                return progress
            progress = True

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


def _size_key(module) -> tuple[int, int]:
    """What `smaller` means: fewer instructions, then fewer elements in their shapes."""
    elements = 0
    for c in module.computations:
        for i in c.instructions:
            if _array_shape(i.shape):
                elements += int(np.prod(i.shape.dims, dtype=np.int64))
    return instruction_count(module), elements


def _elementwise_elements(module) -> int | None:
    """The element count when `module` is one computation of parameters and elementwise
    instructions over arrays of one shape; else None."""
    from .ops.base import ELEMENTWISE
    if len(module.computations) != 1:
        return None
    dims = {i.shape.dims if _array_shape(i.shape) else None
            for i in module.entry.instructions}
    if len(dims) != 1 or None in dims or any(
            i.opcode != "parameter" and ELEMENTWISE not in i.opdef.traits
            for i in module.entry.instructions):
        return None
    return int(np.prod(next(iter(dims)), dtype=np.int64))


def _flat_slice(module, a: int, b: int, values) -> bool:
    """Every instruction of an elementwise module reshaped to [b - a]: elements a..b of
    its flattened value (parameters' values sliced alike)."""
    for inst in module.entry.instructions:
        inst.set_shape(inst.shape.with_dims((b - a,)))
        if values is not None and inst.opcode == "parameter":
            values[inst.name] = np.asarray(values[inst.name]).reshape(-1)[a:b].copy()
    return True


def _exploratory(name: str):
    """The test back end for the guide's one run: without LLVM's optimisations when it
    has them (a tenth of the compile time of a big module; the candidates the run
    suggests are then judged by the predicate itself, on the back end as configured)."""
    import copy

    from .runner import get_backend
    impl = get_backend(name)
    if getattr(impl, "opt_level", 0):
        impl = copy.copy(impl)
        impl.opt_level = 0
    return impl


def _isolate(module, name: str, values) -> bool:
    """`name` as the ROOT, each of its non-parameter operands a new parameter."""
    if not _set_root(module, name) and module.entry.root.name != name:
        return False
    inst = module.entry.root
    _parameterize(module, [o.name for o in inst.operands if o.opcode != "parameter"], values)
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


def with_constants(text: str, args: list, *, max_elements: int = 4096) -> str | None:
    """`text` with each ENTRY parameter replaced by a constant holding its argument, so
    the module needs no input file; None when the arguments are too big to print."""
    import re

    from .syntax.literal_printer import format_constant
    module = _parse(text)
    params = module.entry.parameters
    if not params or sum(int(np.size(a)) for a in args) > max_elements or \
            not all(_array_shape(p.shape) for p in params):
        return None
    lines = text.splitlines()
    for p, a in zip(params, args):
        pat = re.compile(rf"^(\s*(?:ROOT )?%?{re.escape(p.name)} = \S+ )parameter\(\d+\)")
        lit = format_constant(p.shape, np.asarray(a, dtype=p.shape.dtype.np), print_large=True)
        lines = [pat.sub(lambda m: f"{m.group(1)}constant({lit})", ln) for ln in lines]
    out = re.sub(r"^(ENTRY %?[\w.\-]+) \([^\n]*\) -> [^\n]* \{$", r"\1 {", "\n".join(lines),
                 flags=re.M)
    candidate = _parse(out)
    _clean(candidate)
    return _valid(candidate)


def reduce_module(text: str, predicate: Callable, *, inputs: list | None = None,
                  progress=None, max_rounds: int = 8, constants: bool = False) -> ReduceResult:
    """The smallest module found for which `predicate(text, arguments)` holds (starting
    from `text` with `inputs`, for which it must hold). With `constants` and `inputs`,
    the result's parameters then become constants of their values when the predicate
    still holds (a reproducer without an input file; `arguments` is then [])."""
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
    config = getattr(predicate, "config", None)
    if config is not None:
        r.guided_cut(config)
    for _ in range(max_rounds):
        with progress.phase("reduce", f"{r.size} instructions"):
            changed = r.cut_root()
            changed |= r.descend_root()
            changed |= r.to_parameters()
            changed |= r.to_operands()
            changed |= r.shrink_shapes()
            changed |= r.inline_calls()
        if not changed:
            break
    if constants and r.args:
        inlined = with_constants(r.best, r.args)
        r.evaluations += inlined is not None
        if inlined is not None and predicate(inlined, []):
            r.best, r.args, r.size = inlined, [], instruction_count(_parse(inlined))
    return ReduceResult(r.best, r.size, start_size, r.evaluations, r.accepted, r.args)


# The predicates live in hloc.reduce_predicates; these names are kept here.
from .reduce_predicates import (command_predicate, message_predicate,  # noqa: E402
                                mismatch_predicate)
