"""Instructions on their own: one small module per ENTRY instruction, run on two back ends.

`isolated_text(inst)` is the module XLA's `--isolate_instructions` would extract for an
instruction of the ENTRY computation: its operands become parameters (named as the
operands, so the instruction's line is unchanged), the computations it calls come
along, and it is the ROOT. `instruction_scores(module, args, test_backend, spec)` walks
the ENTRY in order, runs every isolated instruction on the interpreter and on the test
back end with the interpreter's values of its operands (so each instruction is judged on
its own inputs, not on upstream errors), and scores the difference: MATCHED / MISMATCH
(literal_comparison::Near), max abs and rel error and ULPs. The first MISMATCH is the
first instruction whose compiled value diverges. `inner_culprit` goes on inside a
diverging fusion or call: its computation becomes a module of its own, run on the
fusion's operand values, and its instructions are scored the same way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .compare import ErrorSpec, near
from .diagnostics import HlocError
from .ir.graph import callee_post_order

__all__ = ["isolated_text", "instruction_scores", "Score", "score_table", "ulp_distance",
           "isolation_report", "called_module_text", "inner_culprit"]

_CONTROL = re.compile(r", control-predecessors=\{[^}]*\}")


def isolated_text(inst) -> str:
    """HLO text of a module computing `inst` from parameters standing for its operands."""
    from .printer import computation_to_text, instruction_to_text
    parts = [f"HloModule isolated_{inst.name.replace('.', '_')}\n"]
    for comp in callee_post_order(inst.called_computations()):
        parts.append(computation_to_text(comp))
    lines = []
    operands = list(dict.fromkeys(inst.operands))
    for n, op in enumerate(operands):
        lines.append(f"  %{op.name} = {op.shape} parameter({n})")
    lines.append("  " + _CONTROL.sub("", instruction_to_text(inst, is_root=True)))
    parts.append("ENTRY %isolated {\n" + "\n".join(lines) + "\n}")
    return "\n\n".join(parts) + "\n"


def called_module_text(inst) -> str | None:
    """For a fusion or call: a module whose ENTRY is the computation it runs (once, on
    its operands), with what that computation calls; None for other instructions."""
    from .printer import computation_to_text
    called = inst.called_computations()
    if inst.opcode not in ("fusion", "call") or len(called) != 1:
        return None
    body = called[0]
    parts = [f"HloModule inside_{inst.name.replace('.', '_')}\n"]
    parts += [computation_to_text(c) for c in callee_post_order(inst.called_computations()) if c is not body]
    text = computation_to_text(body)
    parts.append(text if body.is_entry else "ENTRY " + text)
    return "\n\n".join(parts) + "\n"


def ulp_distance(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in units in the last place between two float arrays (NaN pairs
    and equal values count 0; a NaN against a number counts as the type's whole range)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.size == 0 or a.dtype.kind not in "fV" or a.dtype != b.dtype:
        return 0
    bits = a.dtype.itemsize * 8
    u = np.dtype(f"u{a.dtype.itemsize}")
    i = np.dtype(f"i{a.dtype.itemsize}") if bits >= 16 else None
    if i is None:
        return 0

    def ordered(x):
        raw = np.ascontiguousarray(x).view(u).astype(np.int64)
        sign = raw >> (bits - 1)
        mag = raw & ((1 << (bits - 1)) - 1)
        return np.where(sign == 1, -mag, mag)
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(fa) & np.isnan(fb)
    one_nan = np.isnan(fa) ^ np.isnan(fb)
    d = np.where(both_nan, 0, np.where(one_nan, (1 << (bits - 1)) - 1, d))
    return int(d.max())


@dataclass
class Score:
    name: str
    opcode: str
    status: str                 # MATCHED, MISMATCH, ERROR
    max_abs: float = 0.0
    max_rel: float = 0.0
    ulps: int = 0
    message: str = ""


def _leaves(v) -> list:
    if isinstance(v, tuple):
        return [x for e in v for x in _leaves(e)]
    return [v] if isinstance(v, np.ndarray) else []


def _errors(ref, test) -> tuple[float, float, int]:
    max_abs = max_rel = 0.0
    ulps = 0
    for r, t in zip(_leaves(ref), _leaves(test)):
        if r.shape != t.shape or r.size == 0:
            continue
        if r.dtype.kind in "fcV" or str(r.dtype) in ("bfloat16",):
            with np.errstate(all="ignore"):
                rr = r.astype(np.complex128 if r.dtype.kind == "c" else np.float64)
                tt = t.astype(rr.dtype)
                diff = np.abs(rr - tt)
                same = (rr == tt) | (np.isnan(rr) & np.isnan(tt))
                diff = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff))
                rel = np.where(same, 0.0, diff / np.where(rr == 0, np.nan, np.abs(rr)))
                rel = np.where(np.isnan(rel), np.inf, rel)
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float(rel.max()))
            if r.dtype.kind != "c":
                ulps = max(ulps, ulp_distance(r, t))
        else:
            d = np.abs(r.astype(np.float64) - t.astype(np.float64))
            max_abs = max(max_abs, float(d.max()))
    return max_abs, max_rel, ulps


def instruction_scores(module, args: list, test_backend: str, spec: ErrorSpec, *,
                       progress=None, values: dict | None = None) -> list[Score]:
    """A Score per non-parameter ENTRY instruction of `module`, in ENTRY order; `values`
    (when given) receives the interpreter's value of every ENTRY instruction by name."""
    from .progress import NULL
    from .replay import DEFAULT_SEED, run_side
    from .syntax import parse_module
    progress = progress or NULL
    by_id: dict[int, object] = {}
    scores: list[Score] = []
    entry = [i for i in module.entry.instructions]
    bar = progress.bar(len(entry), "isolate")
    try:
        for inst in entry:
            bar.step(inst.name)
            if inst.opcode == "parameter":
                by_id[id(inst)] = args[inst.parameter_number]
                continue
            operands = list(dict.fromkeys(inst.operands))
            op_values = [by_id[id(o)] for o in operands]
            try:
                iso = parse_module(isolated_text(inst), f"<isolated {inst.name}>")
                ref, _, _ = run_side(iso, op_values, "interpreter", DEFAULT_SEED)
            except HlocError as e:
                raise type(e)(f"isolating %{inst.name}: {e.message}") from None
            by_id[id(inst)] = ref
            try:
                test, _, _ = run_side(iso, op_values, test_backend, DEFAULT_SEED)
            except HlocError as e:
                scores.append(Score(inst.name, inst.opcode, "ERROR", message=e.message))
                continue
            result = near(ref, test, spec)
            max_abs, max_rel, ulps = _errors(ref, test)
            scores.append(Score(inst.name, inst.opcode, "MATCHED" if result.ok else "MISMATCH",
                                max_abs, max_rel, ulps,
                                "" if result.ok else result.messages[0].split("\n")[0]))
    finally:
        bar.close()
    if values is not None:
        values.update({i.name: v for i in entry if (v := by_id.get(id(i))) is not None})
    return scores


def inner_culprit(inst, op_values: list, test_backend: str, spec: ErrorSpec, *,
                  progress=None) -> list:
    """Inside a diverging fusion or call: [(instruction, Score)] from `inst` down to the
    innermost instruction of its computation (and of what that calls, as deep as fusions
    and calls go) that diverges on its own from the interpreter's operand values. Empty
    when nothing inside diverges on its own (the difference needs the instructions
    together)."""
    from .syntax import parse_module
    path = []
    while True:
        text = called_module_text(inst)
        if text is None:
            return path
        inner = parse_module(text, f"<inside {inst.name}>")
        values: dict = {}
        scores = instruction_scores(inner, op_values, test_backend, spec, progress=progress,
                                    values=values)
        bad = next((s for s in scores if s.status != "MATCHED"), None)
        if bad is None:
            return path
        inst = inner.entry.instruction_by_name(bad.name)
        path.append((inst, bad))
        params = {p.name: a for p, a in zip(inner.entry.parameters, op_values)}
        values.update(params)
        op_values = [values[o.name] for o in dict.fromkeys(inst.operands)]


def score_table(scores: list[Score], *, only_diverging: bool = False) -> str:
    rows = [f"{'instruction':<40} {'opcode':<22} {'status':<9} {'max abs':>10} "
            f"{'max rel':>10} {'ULPs':>10}"]
    for s in scores:
        if only_diverging and s.status == "MATCHED" and s.max_abs == 0:
            continue
        rows.append(f"{s.name:<40} {s.opcode:<22} {s.status:<9} {s.max_abs:>10.3g} "
                    f"{s.max_rel:>10.3g} {s.ulps:>10}")
    return "\n".join(rows)


def isolation_report(scores: list[Score]) -> str:
    """run_hlo_module's `--isolate_instructions` table (Reference | Test | Module |
    Status) and a count per result."""
    rows = [" %-20s | %-20s | %-29s | %s" % ("Reference", "Test", "Module", "Status"),
            "-" * 110]
    counts: dict[str, int] = {}
    for s in scores:
        result = {"MATCHED": "MATCHED", "MISMATCH": "MISMATCH"}.get(s.status, "RUNTIME ERROR")
        ref = "RAN" if result == "RUNTIME ERROR" else result
        counts[result] = counts.get(result, 0) + 1
        status = "OK" if result == "MATCHED" else (s.message or result)
        rows.append(" %-20s | %-20s | %-29s | %s" % (ref, result,
                                                     f"isolated_{s.name}", status))
    rows.append("")
    rows.extend(" %-20s | %d" % (k, v) for k, v in sorted(counts.items()))
    return "\n".join(rows)
