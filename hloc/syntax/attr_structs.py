"""Attribute kinds with structure: int/bool/shape lists, computation and instruction
references, slices, padding, windows (window_util::ToString), convolution dim labels,
replica groups (canonical iota lists), each a parser and XLA's printer.
"""
from __future__ import annotations

import math
from itertools import product

from ..ir.attrs import (AttrSyntaxError, CompRef, ConvDimNumbers, InlineComp, ReplicaGroups, Window,
                        WindowDim)
from ..ir.shape import Shape, ShapeSyntaxError, parse_shape_prefix
from .attr_scan import (_ATTR_NAME, _Cur, _DIM_LABELS, _KEYWORDS, _NAME, _balanced_end, _f_bool,
                        _int64, _list, _p_bool)


# ---------------------------------------------------------------------------
# Lists

def _p_int_list(c: _Cur) -> tuple[int, ...]:
    return _list(c, _Cur.int)


def _f_int_list(v) -> str:
    return "{" + ",".join(map(str, v)) + "}"


def _p_int_list_list(c: _Cur) -> tuple[tuple[int, ...], ...]:
    return _list(c, _p_int_list)


def _f_int_list_list(v) -> str:
    return "{" + ",".join(map(_f_int_list, v)) + "}"


def _p_bool_list(c: _Cur) -> tuple[bool, ...]:
    return _list(c, _p_bool)


def _f_bool_list(v) -> str:
    return "{" + ",".join(map(_f_bool, v)) + "}"


def _p_bool_list_or_bool(c: _Cur) -> tuple[bool, ...]:
    if c.at("{"):
        return _p_bool_list(c)
    return (_p_bool(c),)


def _p_shape(c: _Cur) -> Shape:
    p = c.ws()
    try:
        shape, c.i = parse_shape_prefix(c.s, p)
    except ShapeSyntaxError as e:
        raise AttrSyntaxError(str(e), e.offset) from None
    return shape


def _p_shape_list(c: _Cur) -> tuple[Shape, ...]:
    return _list(c, _p_shape)


def _f_shape_list(v) -> str:
    return "{" + ", ".join(map(str, v)) + "}"


# ---------------------------------------------------------------------------
# Computations and instruction names

def _p_computation(c: _Cur):
    p = c.ws()
    if c.s.startswith("{", p):
        c.i = _balanced_end(c.s, p)
        return InlineComp(c.s[p + 1:c.i - 1], p + 1)
    m = _NAME.match(c.s, p)
    if not m or (not m.group(1) and m.group(2) in _KEYWORDS):
        raise c.err("expects computation name", p)
    c.i = m.end()
    return CompRef(m.group(2))


def _f_computation(v) -> str:
    if isinstance(v, InlineComp):
        return "{" + v.text + "}"
    return "%" + (v if isinstance(v, str) else v.name)   # CompRef or a resolved computation


def _p_computation_list(c: _Cur) -> tuple:
    return _list(c, _p_computation, "a computation list")


def _f_computation_list(v) -> str:
    return "{" + ", ".join(map(_f_computation, v)) + "}"


def _p_instruction_list(c: _Cur) -> tuple[str, ...]:
    c.need("{", "expects '{' at the beginning of instruction name list")
    names = []
    while True:
        m = c.match(_NAME)
        if not m:
            raise c.err("expects a instruction name")
        names.append(m.group(2))
        if not c.eat(","):
            break
    c.need("}", "expects '}' at the end of instruction name list")
    return tuple(names)


def _f_instruction_list(v) -> str:
    return "{" + ", ".join("%" + (x if isinstance(x, str) else x.name) for x in v) + "}"


# ---------------------------------------------------------------------------
# slice, padding, window, dim_labels

def _p_slice(c: _Cur) -> tuple[tuple[int, int, int], ...]:
    c.need("{", "expects '{' to start ranges")
    out = []
    if c.eat("}"):
        return ()
    while True:
        p = c.ws()
        c.need("[", "expects a list starting with '['")
        vals = []
        if not c.at("]"):
            while True:
                vals.append(c.int())
                if not c.eat(":"):
                    break
        c.need("]", "expects a list to end with ']'")
        if len(vals) not in (2, 3):
            raise c.err("expects [start:limit:step] or [start:limit], but sees "
                        f"{len(vals)} elements.", p)
        out.append((vals[0], vals[1], vals[2] if len(vals) == 3 else 1))
        if not c.eat(","):
            break
    c.need("}", "expects '}' to end ranges")
    return tuple(out)


def _f_slice(v) -> str:
    omit_stride = all(s == 1 for _, _, s in v)     # strides print for all dims or none
    return "{" + ", ".join(f"[{a}:{b}]" if omit_stride else f"[{a}:{b}:{s}]"
                           for a, b, s in v) + "}"


def _p_padding(c: _Cur) -> tuple[tuple[int, int, int], ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind != "pad":
        raise c.err("expects padding config, e.g., '0_0_0x3_3_1'", p)
    c.i = m.end()
    out = []
    for dim in m.group().split("x"):
        lo, hi, *interior = (int(x) for x in dim.split("_"))
        out.append((lo, hi, interior[0] if interior else 0))
    return tuple(out)


def _f_padding(v) -> str:
    interior = any(i != 0 for _, _, i in v)
    return "x".join(f"{lo}_{hi}_{i}" if interior else f"{lo}_{hi}" for lo, hi, i in v)


_WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")


def _window_dxd(c: _Cur) -> tuple[int, ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind == "int":
        c.i = m.end()
        return (_int64(m.group(), p),)
    if kind == "dxd":
        c.i = m.end()
        return tuple(_int64(x, p) for x in m.group().split("x"))
    raise c.err("expects token type kInt or kDxD", p)


def _window_pad(c: _Cur) -> tuple[tuple[int, int], ...]:
    p = c.ws()
    kind, m = c.number_token()
    if kind != "pad":
        raise c.err("expects window pad pattern, e.g., '0_0x3_3'", p)
    out = []
    for dim in m.group().split("x"):
        parts = dim.split("_")
        if len(parts) != 2:
            raise c.err("expects padding_low and padding_high separated by '_'", p)
        out.append((int(parts[0]), int(parts[1])))
    c.i = m.end()
    return tuple(out)


def _p_window(c: _Cur) -> Window:
    start = c.ws()
    c.need("{", "expected '{' to start window attribute")
    fields: dict[str, tuple] = {}
    while not c.at("}"):
        p = c.i
        if p == len(c.s):
            raise c.err("expected '}' to end window attribute")
        m = _ATTR_NAME.match(c.s, p)
        if not m:
            raise c.err("expects sub-attributes in window", p)
        name = m.group(1)
        if name not in _WINDOW_FIELDS:
            raise c.err(f"unexpected attribute name: {name}", p)
        if name in fields:
            raise c.err(f"sub-attribute '{name}=' already exists", m.end())
        c.i = m.end()
        fields[name] = _window_pad(c) if name == "pad" else _window_dxd(c)
    c.i += 1
    size = fields.get("size", ())
    for name in _WINDOW_FIELDS[1:]:
        if name in fields and len(fields[name]) != len(size):
            raise c.err(f"expects '{name}=' has the same size as 'size='", start)
    n = len(size)
    stride = fields.get("stride", (1,) * n)
    pad = fields.get("pad", ((0, 0),) * n)
    lhs = fields.get("lhs_dilate", (1,) * n)
    rhs = fields.get("rhs_dilate", (1,) * n)
    rev = fields.get("rhs_reversal", (0,) * n)
    return Window(tuple(WindowDim(size[i], stride[i], pad[i][0], pad[i][1], lhs[i], rhs[i],
                                  rev[i] == 1) for i in range(n)))


def _f_window(w: Window) -> str:
    """window_util::ToString inside braces; fields at their defaults are left out."""
    dims = w.dims
    if not dims:
        return "{}"
    out = ["size=" + "x".join(str(d.size) for d in dims)]
    if any(d.stride != 1 for d in dims):
        out.append("stride=" + "x".join(str(d.stride) for d in dims))
    if any(d.pad_lo or d.pad_hi for d in dims):
        out.append("pad=" + "x".join(f"{d.pad_lo}_{d.pad_hi}" for d in dims))
    if any(d.lhs_dilate != 1 for d in dims):
        out.append("lhs_dilate=" + "x".join(str(d.lhs_dilate) for d in dims))
    if any(d.rhs_dilate != 1 for d in dims):
        out.append("rhs_dilate=" + "x".join(str(d.rhs_dilate) for d in dims))
    if any(d.reversal for d in dims):
        out.append("rhs_reversal=" + "x".join("1" if d.reversal else "0" for d in dims))
    return "{" + " ".join(out) + "}"


def _dim_labels(c: _Cur, part: str, pos: int, a: str, b: str, what: str):
    seen = [ch for ch in part if ch != "?"]
    if len(set(seen)) != len(seen):
        raise c.err(f"expects unique {what} dimension numbers, but sees {part}", pos)
    spatial = [-1] * sum(ch not in (a, b, "?") for ch in part)
    first = second = 0                      # proto defaults when 'b'/'f' ('i'/'o') is absent
    for i, ch in enumerate(part):
        if ch == a:
            first = i
        elif ch == b:
            second = i
        elif ch.isdigit() and int(ch) < len(spatial):
            spatial[int(ch)] = i
        elif ch != "?":
            raise c.err(f"expects [0-{len(part) - 1}{a}{b}?] in {what} dimension numbers", pos)
    return first, second, tuple(spatial)


def _p_dim_labels(c: _Cur) -> ConvDimNumbers:
    p = c.ws()
    m = _DIM_LABELS.match(c.s, p)
    if not m:
        raise c.err("expects dim labels pattern, e.g., 'bf0_0io->0bf'", p)
    c.i = m.end()
    lhs, rest = m.group().split("_")
    rhs, out = rest.split("->")
    ib, if_, isp = _dim_labels(c, lhs, p, "b", "f", "lhs")
    ki, ko, ksp = _dim_labels(c, rhs, p, "i", "o", "rhs")
    ob, of, osp = _dim_labels(c, out, p, "b", "f", "output")
    if not len(isp) == len(ksp) == len(osp):
        raise c.err("input, kernel, and output must have same number of spatial dimensions, "
                    f"but got {len(isp)}, {len(ksp)}, {len(osp)}, respectively.", p)
    return ConvDimNumbers(ib, if_, isp, ki, ko, ksp, ob, of, osp)


def _labels_text(x: int, y: int, sx: str, sy: str, spatial: tuple[int, ...]) -> str:
    out = ["?"] * (max(x, y, max(spatial, default=0)) + 1)
    out[x] = sx
    out[y] = sy
    for i, d in enumerate(spatial):
        out[d] = str(i)
    return "".join(out)


def _f_dim_labels(d: ConvDimNumbers) -> str:
    """ConvolutionDimensionNumbersToString."""
    return (_labels_text(d.input_batch, d.input_feature, "b", "f", d.input_spatial) + "_"
            + _labels_text(d.kernel_input_feature, d.kernel_output_feature, "i", "o",
                           d.kernel_spatial) + "->"
            + _labels_text(d.output_batch, d.output_feature, "b", "f", d.output_spatial))


# ---------------------------------------------------------------------------
# Replica groups

def _ints_until(c: _Cur, close: str, close_msg: str) -> tuple[int, ...]:
    vals = [c.int()]
    while c.eat(","):
        vals.append(c.int())
    c.need(close, close_msg)
    return tuple(vals)


def _canonical_iota(dims, perm):
    """IotaTileAssignment::Create's CanonicalizeIotaDims: drop 1s, merge in-order runs."""
    dims, perm = list(dims), list(perm)
    if len(dims) <= 1:
        return tuple(dims), tuple(perm)
    while True:
        old_to_new, n = [], 0
        for d in dims:
            old_to_new.append(-1 if d == 1 else n)
            n += d != 1
        if n != len(dims):
            perm = [old_to_new[q] for q in perm if old_to_new[q] >= 0]
            dims = [d for d in dims if d != 1]
        changed = False
        base = 0
        for i in range(1, len(dims)):
            if perm[base] + (i - base) == perm[i]:
                dims[perm[base]] *= dims[perm[i]]
                dims[perm[i]] = 1
                changed = True
            else:
                base = i
        if not changed:
            break
    if not dims:
        return (1,), (0,)
    return tuple(dims), tuple(perm)


def _iota_groups(num_groups: int, group_size: int, reshape, perm):
    strides = [1] * len(reshape)
    for i in range(len(reshape) - 2, -1, -1):
        strides[i] = strides[i + 1] * reshape[i + 1]
    tstrides = [strides[q] for q in perm]
    flat = [sum(i * s for i, s in zip(idx, tstrides))
            for idx in product(*(range(reshape[q]) for q in perm))]
    return tuple(tuple(flat[g * group_size:(g + 1) * group_size]) for g in range(num_groups))


def _p_replica_groups(c: _Cur) -> ReplicaGroups:
    if c.at("{"):
        return ReplicaGroups(_p_int_list_list(c))
    p = c.ws()
    c.need("[", "expected '[' to start sharding devices shape")
    dims = _ints_until(c, "]", "expected ']' to end sharding devices shape")
    if not c.eat("<="):
        raise c.err("Caller expected iota tile assignment when parsing, which should not "
                    "have any manual device entries.")
    c.need("[", "expected '[' to start sharding iota_reshape_dims")
    reshape = _ints_until(c, "]", "expected ']' to end sharding iota_reshape_dims")
    perm: tuple[int, ...] = (0,)
    if len(reshape) > 1:
        msg = "expected 'T(' to start sharding devices iota_transpose_perm"
        c.need("T", msg)
        c.need("(", msg)
        q = c.ws()
        perm = _ints_until(c, ")", "expected ')' to end sharding devices iota_transpose_perm")
        for d in perm:
            if not 0 <= d < len(reshape):
                raise c.err(f"Out of range iota minor_to_major value {d}, expecting value in "
                            f"range [0, {len(reshape)})", q)
    if len(dims) != 2:
        raise c.err(f"expects iota replica groups with 2 dimensions, but sees {len(dims)}", p)
    if sorted(perm) != list(range(len(reshape))):
        raise c.err("iota_transpose_perm must be a permutation of the reshape dimensions", p)
    if min(dims + reshape) < 0 or math.prod(dims) != math.prod(reshape):
        raise c.err(f"iota replica groups {list(dims)} do not match the {math.prod(reshape)} "
                    "devices of the reshape dimensions", p)
    rdims, rperm = _canonical_iota(reshape, perm)
    return ReplicaGroups(_iota_groups(dims[0], dims[1], rdims, rperm),
                         (dims[0], dims[1], rdims, rperm))


def _f_replica_groups(v: ReplicaGroups) -> str:
    if v.iota is None:
        return _f_int_list_list(v.groups)
    g, s, dims, perm = v.iota
    out = f"[{g},{s}]<=[{','.join(map(str, dims))}]"
    if len(dims) > 1:
        out += "T(" + ",".join(map(str, perm)) + ")"
    return out
