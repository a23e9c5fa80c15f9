"""The verifier's options, its per-run context and the check tables.

`Options` mirrors HloVerifierOpts plus the HloModuleConfig fields the checks read
(replica_count, num_partitions, use_spmd_partitioning; by default taken from the module
header). A check is a small function registered in a table: `@check("rng")` runs
`fn(inst, ctx)` on every rng instruction, `@check()` on every instruction, and
`@module_check(phase)` runs `fn(ctx)` once, before ("pre") or after ("post") the
per-instruction pass, in XLA's order (VerifyAsynchronousInstructionPairs first;
buffers, entry layout, aliasing and original values last). `Context` builds what
several checks share once per run (unique users, callers of each computation, the
execution thread each computation really runs on) so no check does quadratic work.
Checks report with `ctx.fail(inst, message)`; the run collects every error.

A run may be limited to some instructions (`Context.subset`, set by
hloc.verify.incremental after a pass): per-instruction checks then run on those only,
and module checks reach them through `ctx.groups()`, `with_opcodes` and
`with_control_predecessors` (a module check whose answer depends on instructions it
is not given says so and looks at everything).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Callable

from ..diagnostics import VerifyError
from ..gc_pause import no_gc    # the cyclic GC doubled verification time
from ..ir.module import Computation, Instruction, Module
from ..ops import opcodes_with
from ..ops.base import ASYNC

ASYNC_OPS = opcodes_with(ASYNC)
MAIN_THREAD = "main"


@dataclass(frozen=True)
class Options:
    layout_sensitive: bool = False
    allow_mixed_precision: bool = True
    allow_unbounded_dynamism: bool = False
    verify_broadcast_dimensions_order: bool = False
    verify_reshape_is_bitcast: bool = False
    verify_custom_call_nested_computation_thread_name: bool = True
    verify_instruction_name_unchanged: bool = False
    verify_no_host_memory_space: bool = False
    verify_sharding_device_numbers: bool = True
    allow_bitcast_to_have_different_size: bool = False
    # LayoutAssignment::InstructionCanChangeLayout as the layout-change predicate;
    # None: whenever layout_sensitive (what layout-sensitive XLA pipelines pass).
    check_layout_changes: bool | None = None
    # HloModuleConfig; None: the module header's value, else 1.
    replica_count: int | None = None
    num_partitions: int | None = None
    use_spmd_partitioning: bool = False

    @property
    def layout_changes(self) -> bool:
        return self.layout_sensitive if self.check_layout_changes is None \
            else self.check_layout_changes


InstCheck = Callable[[Instruction, "Context"], None]
ModuleCheck = Callable[["Context"], None]

BY_OPCODE: dict[str, list[InstCheck]] = defaultdict(list)
EVERY: list[InstCheck] = []
MODULE_CHECKS: dict[str, list[ModuleCheck]] = {"pre": [], "post": []}
# Opcodes module checks look for (`Context.with_opcodes`): one walk finds them all.
INDEXED_OPCODES: set[str] = set()


BY_ATTR: dict[str, list] = defaultdict(list)


def check(*opcodes: str, option: str | None = None, attr: str | None = None):
    """Register `fn(inst, ctx)` for these opcodes (every instruction when none given);
    with `option`, only when that verifier option is on (skipped entirely otherwise);
    with `attr`, only for instructions that carry that attribute."""
    def register(fn: InstCheck) -> InstCheck:
        fn.option = option
        if attr is not None:
            BY_ATTR[attr].append(fn)
            return fn
        if not opcodes:
            EVERY.append(fn)
        for op in opcodes:
            BY_OPCODE[op].append(fn)
        return fn
    return register


def module_check(phase: str, opcodes=()):
    """Register `fn(ctx)`; `opcodes`: those it asks `ctx.with_opcodes` for."""
    INDEXED_OPCODES.update(opcodes)

    def register(fn: ModuleCheck) -> ModuleCheck:
        MODULE_CHECKS[phase].append(fn)
        return fn
    return register


def call_sites(comp: Computation) -> list[Instruction]:
    """`comp`'s instructions that call computations, in order."""
    return [i for i in comp.instructions if "calls" in i.opdef.traits and
            i.called_computations()]


class Context:
    """`memos` (shape-rule results, shapes found fine; valid for one set of options)
    and `sites` (computation -> its call_sites, in any order) let a caller
    (hloc.verify.incremental) carry them from run to run."""

    def __init__(self, module: Module, opts: Options, memos: tuple | None = None,
                 sites=call_sites):
        # shape-rule results by (op, shapes, attributes); shapes whose own checks passed
        self.infer_memo, self.shapes_ok = memos if memos is not None else ({}, set())
        self.module = module
        self.opts = opts
        self.errors: list[VerifyError] = []
        # computation -> the instructions to check (all when None); set by
        # hloc.verify.incremental.
        self.subset: dict | None = None
        self.found_buffers = False      # set by verify_buffers: a buffer shape was seen
        self._index: tuple | None = None
        self.places: dict = {}          # hloc.verify.incremental's, per computation
        attrs = module.attrs
        self.replica_count = opts.replica_count or attrs.get("replica_count") or 1
        self.num_partitions = opts.num_partitions or attrs.get("num_partitions") or 1
        # CallGraph's caller instructions: once per call, in module order.
        self.callers: dict[Computation, list[Instruction]] = defaultdict(list)
        self.async_starts: list[Instruction] = []
        for comp in module.computations:
            for inst in sites(comp):
                for called in inst.called_computations():
                    self.callers[called].append(inst)
                if inst.opcode == "async-start":
                    self.async_starts.append(inst)
        self.fused = {c for c, insts in self.callers.items()
                      if any(i.opcode == "fusion" for i in insts)}
        self.async_comps = {c for c, insts in self.callers.items()
                            if any(i.opcode == "async-start" for i in insts)}
        self.threads: dict[Computation, str] = {
            c: c.execution_thread or MAIN_THREAD for c in module.computations}
        self.async_threads: dict[Instruction, str] = {}
        self._thread_errors: dict[tuple, str | None] = {}
        self._apply_async_threads()

    # -- reporting ---------------------------------------------------------------
    def fail(self, inst: Instruction | None, message: str) -> None:
        loc = None
        source = self.module.source
        if inst is not None and source is not None and isinstance(inst.loc, int):
            loc = source.loc(inst.loc)
        self.errors.append(VerifyError(message, loc))

    def groups(self):
        """(computation, its instructions to check) pairs."""
        if self.subset is None:
            return ((c, c.instructions) for c in self.module.computations)
        return self.subset.items()

    def with_opcodes(self, *opcodes: str) -> list:
        """(computation, instruction) to check whose opcode is one of `opcodes` (all in INDEXED_OPCODES)."""
        by_op, _ = self._indexed()
        if len(opcodes) == 1:
            return by_op.get(opcodes[0], [])
        return [p for p in self._walked if p[1].opcode in opcodes]

    def with_control_predecessors(self) -> list:
        """(computation, instruction) to check whose instruction has control predecessors."""
        return self._indexed()[1]

    def _indexed(self) -> tuple:
        if self._index is None:
            by_op: dict = {}
            controlled = []
            walked = []                 # the indexed pairs, in walk order
            wanted = INDEXED_OPCODES
            for comp, insts in self.groups():
                for inst in insts:
                    if inst.opcode in wanted:
                        by_op.setdefault(inst.opcode, []).append((comp, inst))
                        walked.append((comp, inst))
                    if inst.control_predecessors:
                        controlled.append((comp, inst))
            self._walked = walked
            self._index = (by_op, controlled)
        return self._index

    # -- shared facts ---------------------------------------------------------------
    @staticmethod
    def users(inst: Instruction) -> list[Instruction]:
        """HloInstruction::users(): each user once, in order."""
        return list(dict.fromkeys(inst.users))

    def thread(self, comp: Computation) -> str:
        return self.threads.get(comp, comp.execution_thread or MAIN_THREAD)

    def async_thread(self, inst: Instruction) -> str:
        """The thread an async op runs on: its start's (an enclosing async op may have
        overridden it), else what it says, else "main"."""
        thread = self.async_threads.get(inst)
        if thread:
            return thread
        if inst.opcode != "async-start" and inst.operands and \
                inst.operands[0].opcode in ASYNC_OPS:
            return self.async_thread(inst.operands[0])
        return inst.attrs.get("async_execution_thread") or MAIN_THREAD

    def _apply_async_threads(self) -> None:
        """HloAsyncStartInstruction::set_async_execution_thread: an async-start moves
        its wrapped computation (and what that calls) onto its thread."""
        for inst in self.async_starts:
            if inst.attrs.get("calls") is not None:
                self._set_thread(inst.attrs["calls"], self.async_thread(inst), set())

    def _set_thread(self, comp: Computation, thread: str, seen: set) -> None:
        if comp in seen:
            return
        seen.add(comp)
        self.threads[comp] = thread
        for inst in comp.instructions:
            if inst.opcode in ASYNC_OPS:
                self.async_threads[inst] = thread
                if inst.opcode == "async-start" and inst.attrs.get("calls") is not None:
                    self._set_thread(inst.attrs["calls"], thread, seen)
                continue
            for called in inst.called_computations():
                self._set_thread(called, thread, seen)

    def nested_thread_error(self, comp: Computation, skip_async: bool) -> str | None:
        """CheckNestedComputationThreadNameEqual, memoized per computation."""
        key = (comp, skip_async)
        if key in self._thread_errors:
            return self._thread_errors[key]
        self._thread_errors[key] = None            # no cycles in valid HLO; guard anyway
        result = None
        thread = self.thread(comp)
        for inst in comp.instructions:
            if "calls" not in inst.opdef.traits or (skip_async and inst.opcode in ASYNC_OPS):
                continue            # (no called computations: no call to ask)
            for called in inst.called_computations():
                if self.thread(called) != thread:
                    result = (f"Nested computations expects same computation's thread name: "
                              f"{self.thread(called)} vs {thread}, in called computation "
                              f"`{called.name}` vs caller computation `{comp.name}`")
                else:
                    result = self.nested_thread_error(called, skip_async)
                if result:
                    break
            if result:
                break
        self._thread_errors[key] = result
        return result


def run(module: Module, opts: Options) -> list[VerifyError]:
    return run_checks(lambda: Context(module, opts)).errors


def run_checks(make_context) -> Context:
    """Build the context (`make_context()`) and run every check on it."""
    with no_gc():
        ctx = make_context()
        _run(ctx)
        return ctx


def _run(ctx: Context) -> None:
    opts = ctx.opts
    for fn in MODULE_CHECKS["pre"]:
        fn(ctx)
    every = tuple(fn for fn in EVERY
                  if getattr(fn, "option", None) is None or getattr(opts, fn.option))
    by_opcode = BY_OPCODE
    by_attr = {k: v for k, v in BY_ATTR.items() if v}
    for _, insts in ctx.groups():
        for inst in insts:
            for fn in every:
                fn(inst, ctx)
            for fn in by_opcode.get(inst.opcode, ()):
                fn(inst, ctx)
            for name in inst.attrs:
                for fn in by_attr.get(name, ()):
                    fn(inst, ctx)
    for fn in MODULE_CHECKS["post"]:
        fn(ctx)
