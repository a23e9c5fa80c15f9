"""Verification after each pass, limited to what changed since the last verification.

XLA's pass pipelines run HloVerifier after every pass that changed the module; so does
`hloc opt`. Most passes change a few instructions of a big module, so `Verifier` checks
only what an edit can have made wrong, using the IR's change tracking (hloc.ir.changes:
every edit records the instructions whose checks read what it changed, and bumps its
computation's generation):

- in a computation that is new, whose instruction list was replaced wholesale, or whose
  place in the module changed (its execution thread, whether a fusion or an async op
  calls it, whether it is the entry, whether a while loop calls it: what checks of its
  instructions read about it), every instruction; else the instructions its change set
  names, plus every async op of it when one of them is in the set (async ops read each
  other along their chain);
- every instruction that calls a computation whose generation or place changed, and so
  on up the call graph (a caller's checks read its callees' signatures and contents,
  and threads through every computation below it);
- the module checks, over those instructions where they are per instruction, else over
  the module (see hloc.verify.core.Context.groups).

The graph invariants the IR API keeps (hloc.ir.invariants.graph_errors) are checked on the
instructions an edit recorded and on every instruction of a computation checked whole.
The first run, a run after the module header's replica or partition count changed, and
any run with an option whose checks read names (which are not tracked) check
everything. When a limited run finds an error the whole module is checked again and
that run's errors are reported, so what a pass failure says does not depend on what
was checked.
"""
from __future__ import annotations

from ..diagnostics import VerifyError
from ..ir.invariants import graph_errors
from ..ir.module import Computation, Module
from ..gc_pause import no_gc
from .core import ASYNC_OPS, Context, Options, call_sites, run_checks


class Verifier:
    """Verifies one module again and again as passes change it."""

    def __init__(self, module: Module, **options):
        self.module = module
        self.opts = Options(**options)
        # computation -> (generation, place) when last verified without errors
        self._verified: dict[Computation, tuple] = {}
        self._found_buffers = False
        self._config = None
        self._memos = ({}, set())       # Context.infer_memo / shapes_ok, kept across runs
        self._sites: dict = {}          # computation -> (generation, {call site: None})
        self._changes: dict = {}        # this run's take_changes, per computation
        self.last_checked = 0           # instructions the last run checked (tests, stats)
        self.limited_runs = 0           # runs that checked what changed (tests, stats)

    def _context(self) -> Context:
        return Context(self.module, self.opts, self._memos, self._call_sites)

    def _call_sites(self, comp: Computation) -> list:
        """call_sites(comp), from the last run's and this run's changes (the order of
        callers matters only to messages, which come from a whole-module run)."""
        hit = self._sites.get(comp)
        if hit is None or hit[0] != comp.generation:
            everything, touched = self._changes.get(comp, (True, ()))
            if hit is None or everything:
                sites = dict.fromkeys(call_sites(comp))
            else:
                sites = {i: None for i in hit[1] if i.parent is comp}
                for inst in touched:
                    if inst.parent is comp and "calls" in inst.opdef.traits and \
                            inst.called_computations():
                        sites[inst] = None
                    else:
                        sites.pop(inst, None)
            hit = self._sites[comp] = (comp.generation, sites)
        return list(hit[1])

    def check(self) -> tuple[list[str], list[VerifyError]]:
        """(broken graph invariants, verifier errors) of the module, those of a
        whole-module run when there is any; no verifier run when the graph is broken."""
        with no_gc():
            return self._check()

    def _check(self) -> tuple[list[str], list[VerifyError]]:
        module = self.module
        changes = self._changes = {c: c.take_changes() for c in module.computations}
        if not self._verified or self.opts.verify_instruction_name_unchanged or \
                _config(module) != self._config:
            return self._full()
        local = {}
        for comp, (everything, touched) in changes.items():
            if everything or comp not in self._verified:
                local[comp] = comp.instructions
            elif touched:
                local[comp] = [i for i in touched if i.parent is comp]
        self.limited_runs += 1
        if graph_errors(module, local):
            return self._full()
        ctx = run_checks(lambda: self._limited_context(changes))
        if ctx.errors:
            return self._full()
        self._remember(ctx)
        return [], []

    def _full(self) -> tuple[list[str], list[VerifyError]]:
        self._verified = {}
        broken = graph_errors(self.module)
        if broken:
            return broken, []
        ctx = run_checks(self._context)
        self.last_checked = sum(len(c.instructions) for c in self.module.computations)
        if ctx.errors:
            return [], ctx.errors
        self._remember(ctx)
        return [], []

    def _remember(self, ctx: Context) -> None:
        places = ctx.places
        self._verified = {c: (c.generation, places.get(c) or _place(ctx, c))
                          for c in self.module.computations}
        if len(self._sites) > len(self._verified):       # forget removed computations
            self._sites = {c: v for c, v in self._sites.items() if c in self._verified}
        self._found_buffers = ctx.found_buffers
        self._config = _config(self.module)

    def _limited_context(self, changes: dict) -> Context:
        ctx = self._context()
        ctx.found_buffers = self._found_buffers
        subset: dict = {}
        moved = []                      # computations whose callers are to be checked
        for comp in self.module.computations:
            everything, touched = changes[comp]
            old = self._verified.get(comp)
            place = ctx.places[comp] = _place(ctx, comp)
            if old is None or everything or old[1] != place:
                subset[comp] = set(comp.instructions)
            elif touched:
                insts = {i for i in touched if i.parent is comp}
                if any(i.opcode in ASYNC_OPS for i in insts):
                    insts.update(i for i in comp.instructions if i.opcode in ASYNC_OPS)
                subset[comp] = insts
            if old is None or old[0] != comp.generation or old[1] != place:
                moved.append(comp)
        seen = set(moved)
        while moved:
            comp = moved.pop()
            for site in ctx.callers.get(comp, ()):
                caller = site.parent
                if caller is None:
                    continue
                subset.setdefault(caller, set()).add(site)
                if caller not in seen:
                    seen.add(caller)
                    moved.append(caller)
        ctx.subset = subset
        self.last_checked = sum(len(s) for s in subset.values())
        return ctx


def _config(module: Module) -> tuple:
    """The module header's settings that per-instruction checks read (collectives)."""
    return module.attrs.get("replica_count"), module.attrs.get("num_partitions")


def _place(ctx: Context, comp: Computation) -> tuple:
    """What checks of a computation's instructions read about the computation."""
    callers = ctx.callers.get(comp, ())
    return (ctx.thread(comp), comp in ctx.fused, comp in ctx.async_comps,
            comp is ctx.module.entry, any(c.opcode == "while" for c in callers))
