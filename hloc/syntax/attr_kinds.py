"""The attribute kinds registry `KINDS` (name -> Kind: parse + format, cached by text):
aliasing, buffer donors, computation layouts, literal attributes, enums and the kinds of
attr_scan.py and attr_structs.py. `parse_value` / `format_value` are the entry points.
"""
from __future__ import annotations

import re
from typing import Any, Callable

from ..ir.attrs import (AttrSyntaxError, CompRef, ComputationLayout, ConvDimNumbers,  # noqa: F401 (re-exported)
                        InlineComp, LiteralAttr, ReplicaGroups, Verbatim, Window, WindowDim)
from ..ir.shape import Shape, TupleShape
from .attr_scan import (_Cur, _IDENT, _balanced_end, _f_bool, _f_float, _f_string, _list, _p_bool,
                        _p_float, _p_ident, _p_string)
from .attr_structs import (_f_bool_list, _f_computation, _f_computation_list, _f_dim_labels,
                           _f_instruction_list, _f_int_list, _f_int_list_list, _f_padding,
                           _f_replica_groups, _f_shape_list, _f_slice, _f_window, _p_bool_list,
                           _p_bool_list_or_bool, _p_computation, _p_computation_list, _p_dim_labels,
                           _p_instruction_list, _p_int_list, _p_int_list_list, _p_padding,
                           _p_replica_groups, _p_shape, _p_shape_list, _p_slice, _p_window)


# ---------------------------------------------------------------------------
# Aliasing, buffer donors, computation layout

def _shape_index(c: _Cur) -> tuple[int, ...]:
    c.need("{", "Expects '{' at the start of ShapeIndex")
    idx = []
    while not c.at("}"):
        idx.append(c.int())
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of ShapeIndex")
    return tuple(idx)


def _si(idx) -> str:
    return "{" + ",".join(map(str, idx)) + "}"


def _p_aliasing(c: _Cur):
    """output_to_operand_aliasing: ((output_index, operand, operand_index), ...)."""
    c.need("{", "Expects '{' at the start of instruction aliasing description")
    msg = ("Expected format: <output_shape_index>: (<operand_index>, "
           "<operand_shape_index>)")
    out = []
    while not c.at("}"):
        index = _shape_index(c)
        c.need(":", msg)
        c.need("(", msg)
        operand = c.int()
        c.need(",", msg)
        operand_index = _shape_index(c)
        c.need(")", msg)
        out.append((index, operand, operand_index))
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of instruction aliasing description")
    return tuple(out)


def _f_aliasing(v) -> str:
    return "{" + ", ".join(f"{_si(o)}: ({n}, {_si(i)})" for o, n, i in v) + "}"


def _p_input_output_alias(c: _Cur):
    """Module input_output_alias: ((output_index, param, param_index, kind), ...) in
    output-index order; kind is 'may-alias' (the default) or 'must-alias'."""
    c.need("{", "Expects '{' at the start of aliasing description")
    msg = ("Expected format: <output_shape_index>: (<input_param>, "
           "<input_param_shape_index>) OR <output_shape_index>: <input_param>")
    out = []
    while not c.at("}"):
        index = _shape_index(c)
        c.need(":", msg)
        c.need("(", msg)
        param = c.int()
        c.need(",", msg)
        param_index = _shape_index(c)
        kind = "may-alias"
        if c.eat(","):
            p = c.ws()
            m = c.match(_IDENT)
            if not m or m.group() not in ("must-alias", "may-alias"):
                raise c.err("Unexpected aliasing kind; expected SYSTEM or USER", p)
            kind = m.group()
        c.need(")", msg)
        out.append((index, param, param_index, kind))
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of aliasing description")
    return tuple(sorted(out, key=lambda a: a[0]))


def _f_input_output_alias(v) -> str:
    if not v:
        return "{}"
    return "{ " + ", ".join(
        f"{_si(o)}: ({p}, {_si(i)}, {k})"
        for o, p, i, k in v) + " }"


def _p_buffer_donor(c: _Cur):
    """Module buffer_donor: sorted, de-duplicated ((param, param_index), ...)."""
    c.need("{", "Expects '{' at the start of buffer donor description")
    msg = "Expected format: (<input_param>, <input_param_shape_index>)"
    out = set()
    while not c.at("}"):
        c.need("(", msg)
        param = c.int()
        c.need(",", msg)
        out.add((param, _shape_index(c)))
        c.need(")", msg)
        if not c.eat(","):
            break
    c.need("}", "Expects '}' at the end of buffer donor description")
    return tuple(sorted(out))


def _f_buffer_donor(v) -> str:
    if not v:
        return "{}"
    return "{ " + ", ".join(f"({p}, {_si(i)})" for p, i in v) + " }"


def _p_computation_layout(c: _Cur) -> ComputationLayout:
    c.need("{", "Expects '{' at the start of computation layout")
    c.need("(", "Expects ( before parameter shape list")
    params = []
    while not c.at(")"):
        params.append(_p_shape(c))
        if c.at(")"):
            break
        c.need(",", "Expects , between parameter shapes")
    c.need(")", "Expects ) at end of parameter shape list")
    c.need("->", "Expects -> before result shape")
    result = _p_shape(c)
    c.need("}", "Expects '}' at the end of computation layouts")
    return ComputationLayout(tuple(params), result)


def _f_computation_layout(v: ComputationLayout) -> str:
    # Parameters print like a tuple shape, /*index=N*/ comments included.
    return "{" + str(TupleShape(tuple(v.params))) + "->" + str(v.result) + "}"


# ---------------------------------------------------------------------------
# literal, verbatim

_LITERAL_ATOM = re.compile(r"[^\s,(){}\[\]]+")


def _literal_item(c: _Cur) -> Shape:
    """One literal (`shape value` or a tuple `(lit, lit)`); returns its shape."""
    p = c.ws()
    if c.s.startswith("(", p):
        c.i = p + 1
        elements = []
        while not c.at(")"):
            elements.append(_literal_item(c))
            if not c.at(")"):
                c.need(",", "expects ',' to separate tuple elements")
        c.i += 1
        return TupleShape(tuple(elements))
    shape = _p_shape(c)
    p = c.ws()
    if c.s.startswith(("{", "("), p):
        c.i = _balanced_end(c.s, p)
    elif not c.match(_LITERAL_ATOM):
        raise c.err("expects a literal value", p)
    return shape


def _p_literal(c: _Cur) -> LiteralAttr:
    start = c.ws()
    shape = _literal_item(c)
    return LiteralAttr(shape, c.s[start:c.i])


# ---------------------------------------------------------------------------
# Enums

def _enum(what: str, values: tuple[str, ...], fold: bool = False,
          unknown: str | None = None) -> Callable[[_Cur], str]:
    """A parser for one of `values` (printed as written there); `fold`: case-insensitive
    as XLA's StringToEnum; `unknown`: the `, error: ...` XLA appends to the message."""
    table = {(v.lower() if fold else v): v for v in values}

    def parse(c: _Cur) -> str:
        p = c.ws()
        m = _IDENT.match(c.s, p)
        if not m:
            raise c.err(f"expects {what}", p)
        value = table.get(m.group().lower() if fold else m.group())
        if value is None:
            tail = f", error: {unknown.format(m.group())}" if unknown else ""
            raise c.err(f"expects {what} but sees: {m.group()}{tail}", p)
        c.i = m.end()
        return value
    return parse


def _str(v) -> str:
    return str(v)


_DOT_ALGORITHMS = (
    "unset", "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
    "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
    "dot_bf16_bf16_f32_x6", "dot_tf32_tf32_f32", "dot_tf32_tf32_f32_x3", "dot_f32_f32_f32",
    "dot_f64_f64_f64", "dot_bf16_bf16_f32_x9")

_p_precision = _enum("precision", ("default", "high", "highest"), True,
                     "Unknown precision")

_ENUMS: dict[str, Callable[[_Cur], str]] = {
    "direction": _enum("comparison direction", ("EQ", "NE", "GE", "GT", "LE", "LT")),
    "comparison_type": _enum("comparison type", ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")),
    "fusion_kind": _enum("fusion kind", ("kLoop", "kInput", "kOutput", "kCustom"),
                         unknown="Unknown fusion kind: {}"),
    "fft_type": _enum("fft type", ("FFT", "IFFT", "RFFT", "IRFFT")),
    "distribution": _enum("random distribution", ("rng_invalid", "rng_uniform", "rng_normal"),
                          True, "Unknown distribution"),
    "rng_algorithm": _enum("random algorithm", ("rng_default", "rng_three_fry", "rng_philox"),
                           True, "Unknown algorithm"),
    "dot_algorithm": _enum("algorithm", _DOT_ALGORITHMS, True, "Unknown algorithm"),
    "api_version": _enum("custom-call API version", (
        "API_VERSION_UNSPECIFIED", "API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
        "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"),
        True, "Unknown API version"),
    "schedule": _enum("custom-call schedule",
                      ("SCHEDULE_NONE", "SCHEDULE_LATEST", "SCHEDULE_EARLIEST"),
                      True, "Unknown schedule"),
    "padding_type": _enum("padding type", ("PADDING_INVALID", "PADDING_VALID", "PADDING_SAME")),
    "transpose_a": _enum("transpose type",
                         ("TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT")),
    "conv_kind": _enum("convolution kind", ("fprop", "wgrad", "dgrad", "unset")),
}


def _p_precision_list(c: _Cur) -> tuple[str, ...]:
    return _list(c, _p_precision)


def _f_precision_list(v) -> str:
    return "{" + ",".join(v) + "}"


# ---------------------------------------------------------------------------
# The registry

_CACHE_MAX = 4096
_MISS = object()


class Kind:
    """One attribute kind: `parse(text) -> value` (cached) and `format(value) -> text`."""
    __slots__ = ("name", "_parse", "_format", "_cache")

    def __init__(self, name: str, parse: Callable[[str], Any], fmt: Callable[[Any], str],
                 cache: bool = True):
        self.name = name
        self._parse = parse
        self._format = fmt
        # Verbatim texts (metadata ...) are unique per instruction: caching them only churns.
        self._cache: dict[str, Any] | None = {} if cache else None

    def parse(self, text: str):
        cache = self._cache
        if cache is None:
            return self._parse(text)
        value = cache.get(text, _MISS)
        if value is _MISS:
            value = self._parse(text)
            if len(cache) >= _CACHE_MAX:
                del cache[next(iter(cache))]       # FIFO eviction keeps the dict bounded
            cache[text] = value
        return value

    def format(self, value) -> str:
        return self._format(value)

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


def _whole(item: Callable[[_Cur], Any]) -> Callable[[str], Any]:
    def parse(text: str):
        c = _Cur(text)
        value = item(c)
        c.done()
        return value
    return parse


_INT_LIST_FAST = re.compile(r"\{(-?\d{1,18}(?:,-?\d{1,18})*)?\}")


def _parse_int_list(text: str) -> tuple[int, ...]:
    m = _INT_LIST_FAST.fullmatch(text)
    if m:
        return tuple(map(int, m.group(1).split(","))) if m.group(1) else ()
    return _whole(_p_int_list)(text)


_RA_MODES = ("default", "highest")
_RA_TOLERANCES = ("atol", "rtol", "ulps")
_RA_NAME = re.compile(r"[A-Za-z_][\w.\-]*=")


def _p_result_accuracy(c: _Cur) -> Verbatim:
    """`{mode=highest}` or `{tolerance={atol=0.1,rtol=0,ulps=2}}`, checked as XLA's
    parser checks it and kept verbatim."""
    start = c.ws()
    c.need("{", "expects '{' at the start of result_accuracy")
    m = c.match(_RA_NAME)
    if m is None:
        raise c.err("expects attribute name")
    name = m.group()[:-1]
    if name == "mode":
        mode = c.match(re.compile(r"[A-Za-z_]\w*"))
        if mode is None or mode.group().lower() not in _RA_MODES:
            seen = mode.group() if mode else c.s[c.i:c.i + 10]
            raise c.err(f"expects ResultAccuracy type but sees: {seen}, error: Unknown "
                        f"accuracy mode", mode.start() if mode else None)
    elif name == "tolerance":
        c.need("{", "expects '{' at the start of tolerance")
        while not c.at("}"):
            t = c.match(_RA_NAME)
            if t is None or t.group()[:-1] not in _RA_TOLERANCES:
                raise c.err(f"invalid attribute name: {t.group()[:-1] if t else ''}")
            _p_float(c)
            c.eat(",")
        c.need("}", "expects '}' at the end of tolerance")
    else:
        raise c.err(f"invalid attribute name: {name}")
    c.need("}", "expects '}' at the end of result_accuracy")
    return Verbatim(c.s[start:c.i])


KINDS: dict[str, Kind] = {}


def _register(name: str, parse: Callable[[str], Any], fmt: Callable[[Any], str],
              cache: bool = True) -> None:
    KINDS[name] = Kind(name, parse, fmt, cache)


for _name, _item, _fmt in (
    ("bool", _p_bool, _f_bool),
    ("int", _Cur.int, _str),
    ("float", _p_float, _f_float),
    ("string", _p_string, _f_string),
    ("ident", _p_ident, _str),
    ("int_list_list", _p_int_list_list, _f_int_list_list),
    ("bool_list", _p_bool_list, _f_bool_list),
    ("bool_list_or_bool", _p_bool_list_or_bool, _f_bool_list),
    ("computation", _p_computation, _f_computation),
    ("computation_list", _p_computation_list, _f_computation_list),
    ("instruction_list", _p_instruction_list, _f_instruction_list),
    ("slice", _p_slice, _f_slice),
    ("window", _p_window, _f_window),
    ("dim_labels", _p_dim_labels, _f_dim_labels),
    ("padding", _p_padding, _f_padding),
    ("precision_list", _p_precision_list, _f_precision_list),
    ("shape", _p_shape, _str),
    ("shape_list", _p_shape_list, _f_shape_list),
    ("replica_groups", _p_replica_groups, _f_replica_groups),
    ("aliasing", _p_aliasing, _f_aliasing),
    ("input_output_alias", _p_input_output_alias, _f_input_output_alias),
    ("buffer_donor", _p_buffer_donor, _f_buffer_donor),
    ("computation_layout", _p_computation_layout, _f_computation_layout),
    ("literal", _p_literal, lambda v: v.text),
    ("result_accuracy", _p_result_accuracy, lambda v: v.text),
    *((name, parser, _str) for name, parser in _ENUMS.items()),
):
    _register(_name, _whole(_item), _fmt)
_register("int_list", _parse_int_list, _f_int_list)
_register("verbatim", Verbatim, lambda v: v.text, cache=False)
_register("sparsity", Verbatim, lambda v: v.text, cache=False)


def parse_value(kind_name: str, text: str):
    """Parse `text` as attribute kind `kind_name` (a key of KINDS)."""
    return KINDS[kind_name].parse(text)


def format_value(kind_name: str, value) -> str:
    """Print `value` of attribute kind `kind_name` the way XLA does."""
    return KINDS[kind_name].format(value)


# Mesh-axes replica groups (`mesh['x'=4] {'x'}`) extend the replica_groups kind.
from . import device_groups as _device_groups  # noqa: E402

_register("replica_groups", _whole(_device_groups._p_replica_groups),
          _device_groups._f_replica_groups)
