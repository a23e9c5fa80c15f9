"""Which named input goes to which ENTRY parameter: by name, or refused.

An .npz whose keys are not `in0, in1, ...` binds by name, never silently by position.
A key names a parameter when it equals, in this order of preference, the parameter's
name (`p__b1__.1`), the name without XLA's `.N` uniquing suffix (`p__b1__`, `x` for
`x.1`), the name without JAX's pytree decoration `<arg>__<key>__` (`b1`), or the last
`____`-separated part of a nested decoration. The first level at which a key matches
exactly one parameter decides; a key matching several there is ambiguous. Anything
that leaves a parameter or a key unmatched is an InputError listing the module's
parameters (name, shape) and the file's keys; `positional=True` (the CLI's
`--positional`) binds in file order instead, and `binding_report` says how.
"""
from __future__ import annotations

import re

import numpy as np

from .diagnostics import InputError
from .ir.dtypes import from_numpy

__all__ = ["name_aliases", "match_names", "describe_parameters", "describe_values"]

_SUFFIX = re.compile(r"\.\d+$")
_DECORATED = re.compile(r"^[A-Za-z0-9_]*?__(.+)__$")


def name_aliases(name: str) -> list[str]:
    """The spellings that may name a parameter, most exact first (one per level)."""
    base = _SUFFIX.sub("", name)
    m = _DECORATED.match(base)
    inner = m.group(1) if m else base
    last = inner.split("____")[-1]
    return [name, base, inner, last]


def _shape_text(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(_shape_text(v) for v in value) + ")"
    arr = np.asarray(value)
    try:
        name = from_numpy(arr.dtype).name
    except KeyError:
        name = str(arr.dtype)
    return f"{name}[{','.join(str(d) for d in arr.shape)}]"


def describe_parameters(params) -> str:
    return ", ".join(f"{p.name}: {p.shape.no_layout()}" for p in params)


def describe_values(inputs) -> str:
    return ", ".join(f"{i.name if i.name is not None else i.label}: {_shape_text(i.value)}"
                     for i in inputs)


def match_names(params, inputs, source: str) -> list:
    """`inputs` (InputArray with names) reordered to the parameters, or InputError."""
    aliases = [name_aliases(p.name) for p in params]
    bound: dict[int, object] = {}
    problems: list[str] = []
    for inp in inputs:
        chosen = None
        for level in range(4):
            hits = [n for n, a in enumerate(aliases) if a[level] == inp.name]
            if len(hits) > 1:
                problems.append(f"key {inp.name!r} could name "
                                + " or ".join(params[n].name for n in hits))
                chosen = -1
                break
            if hits:
                chosen = hits[0]
                break
        if chosen is None:
            problems.append(f"key {inp.name!r} names no parameter")
        elif chosen >= 0:
            if chosen in bound:
                problems.append(f"keys {bound[chosen].name!r} and {inp.name!r} both name "
                                f"{params[chosen].name}")
            else:
                bound[chosen] = inp
    missing = [p.name for n, p in enumerate(params) if n not in bound]
    if missing and not problems:
        problems.append("no key for " + ", ".join(missing))
    if problems:
        raise InputError(
            f"cannot bind the arrays of {source} to the ENTRY parameters by name: "
            f"{'; '.join(problems)}\n"
            f"  module parameters: {describe_parameters(params)}\n"
            f"  keys of {source}: {describe_values(inputs)}\n"
            f"  (keys bind as in0, in1, ..., as a parameter's name, or as that name without "
            f"XLA's .N suffix or JAX's arg__key__ decoration; --positional binds in file "
            f"order)")
    return [bound[n] for n in range(len(params))]
