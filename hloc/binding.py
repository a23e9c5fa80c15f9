"""Which named input goes to which ENTRY parameter: by name, or refused.

An .npz whose keys are not `in0, in1, ...` binds by name, never silently by position.
A key names a parameter when it equals, in this order of preference, the parameter's
name (`p__b1__.1`), the name without XLA's `.N` uniquing suffix (`p__b1__`, `x` for
`x.1`), the pytree path JAX encoded in the name (`params__enc____w__` is
params['enc']['w']: `enc/w`, `enc.w`, `params/enc/w` or `params.enc.w`), or that path's
last part (`w`, `b1`). The first level at which a key matches exactly one parameter
decides; a key matching several there is ambiguous. Anything
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
# JAX names a pytree leaf by its path with `[`, `]` and `'` turned into `_`:
# params['enc']['w'] -> params__enc____w__, params['dec'][0] -> params__dec___0_, xs[1] -> xs_1_
_PATH = re.compile(r"^(?P<root>[A-Za-z0-9]*?(?:_[A-Za-z0-9]+)*?)(?P<path>(?:__.+?__|_\d+_)+)$")
_SEGMENT = re.compile(r"__(.+?)__|_(\d+)_")
LEVELS = 4


def name_aliases(name: str) -> list[set[str]]:
    """The spellings that may name a parameter, one set per level, most exact first:
    the name; without `.N`; the pytree path (`enc/w`, `enc.w`, `params/enc/w`); its
    last part (`w`)."""
    base = _SUFFIX.sub("", name)
    m = _PATH.match(base)
    if m is None:
        return [{name}, {base}, set(), set()]
    parts = [a or b for a, b in _SEGMENT.findall(m.group("path"))]
    root = m.group("root")
    paths = {"/".join(parts), ".".join(parts)}
    if root:
        paths |= {"/".join([root, *parts]), ".".join([root, *parts])}
    return [{name}, {base}, paths, {parts[-1]}]


def value_shape_text(value) -> str:
    """`f32[2,3]`-style text for an input value (a tuple of them in parentheses)."""
    if isinstance(value, tuple):
        return "(" + ", ".join(value_shape_text(v) for v in value) + ")"
    arr = np.asarray(value)
    try:
        name = from_numpy(arr.dtype).name
    except KeyError:
        name = str(arr.dtype)
    return f"{name}[{','.join(str(d) for d in arr.shape)}]"


def describe_parameters(params) -> str:
    return ", ".join(f"{p.name}: {p.shape.no_layout()}" for p in params)


def describe_values(inputs) -> str:
    return ", ".join(f"{i.name if i.name is not None else i.label}: "
                     f"{value_shape_text(i.value)}" for i in inputs)


def match_names(params, inputs, source: str) -> list:
    """`inputs` (InputArray with names) reordered to the parameters, or InputError."""
    aliases = [name_aliases(p.name) for p in params]
    bound: dict[int, object] = {}
    problems: list[str] = []
    for inp in inputs:
        chosen = None
        for level in range(LEVELS):
            hits = [n for n, a in enumerate(aliases) if inp.name in a[level]]
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
            f"  (keys bind as in0, in1, ..., as a parameter's name, that name without XLA's .N "
            f"suffix, or the JAX pytree path in it (enc/w or w for params__enc____w__); "
            f"--positional binds in file order)")
    return [bound[n] for n in range(len(params))]
