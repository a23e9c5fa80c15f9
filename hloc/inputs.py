"""Argument values for a module: reading .npz/.npy/literal text, checking them, writing .npz.

The .npz convention (`hloc run --output`, `--inputs`, `--expected`): arrays whose dtype
NumPy's format cannot name (bfloat16, float8_*, int4 ...; `np.savez` would store them as
raw `|V2`/`|V1` bytes) are stored as their raw bits in the unsigned integer of the same
item size, and a 0-d string entry named TYPE_TABLE (`hloc:dtypes`: the colon cannot
occur in an HLO name or an `outN` key) holds JSON mapping each key to its dtype name.
`load_npz` undoes that, also for the corpora's older table key `dtypes` (when it is a
0-d string); `save_npz` always writes TYPE_TABLE; `load_outputs` returns the `outN`
arrays as ml_dtypes/NumPy arrays in one call. Arrays saved straight from ml_dtypes come
back as raw void (`|V2`) and are reinterpreted as the parameter's type.
`bind_arguments` matches values to the ENTRY parameters (by position, by name through
hloc.binding, or from flattened tuple leaves) and raises InputError naming the parameter
for a wrong count, dtype or shape.
"""
from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .binding import describe_parameters, describe_values, match_names, value_shape_text
from .diagnostics import InputError
from .ir.literal import LiteralError
from .syntax.literal_parser import parse_literal
from .ir.shape import ArrayShape, ShapeSyntaxError, TupleShape, parse_shape_prefix

__all__ = ["NATIVE", "TYPE_TABLE", "InputArray", "load_npz", "load_outputs", "save_npz",
           "encode_arrays", "read_inputs", "parse_input_literal", "bind_arguments", "flatten_leaves", "entry_parameters"]

NATIVE = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64", "complex64", "complex128"})
_IN_KEY = re.compile(r"in(\d+)$")
_OUT_KEY = re.compile(r"out(\d+)$")
TYPE_TABLE = "hloc:dtypes"
LEGACY_TYPE_TABLE = "dtypes"


@dataclass
class InputArray:
    """One argument value and where it came from (for error messages)."""
    value: object
    label: str
    name: str | None = None     # the npz key, when it may name a parameter
    source: str | None = None   # the file it came from


# ---------------------------------------------------------------------------
# npz / npy encoding

def _decode(arr: np.ndarray, dtype_name: str | None, label: str) -> np.ndarray:
    if dtype_name is None or dtype_name in NATIVE:
        return arr
    np_type = getattr(ml_dtypes, dtype_name, None)
    if np_type is None:
        raise InputError(f"{label}: unknown dtype {dtype_name!r} in the dtypes entry")
    if np.dtype(np_type).itemsize != arr.dtype.itemsize:
        raise InputError(f"{label}: stored as {arr.dtype}, which cannot hold {dtype_name} bits")
    return arr.view(np_type)


def load_npz(path) -> dict[str, np.ndarray]:
    """The arrays of an .npz in stored order, non-native dtypes decoded (no `dtypes` key)."""
    if os.path.isfile(path) and not _is_npz(path):
        with open(path, "rb") as f:
            raise InputError(f"{path}: not a .npz file ({_what(f.read(6))})")
    try:
        with np.load(path, allow_pickle=False) as d:
            files = list(d.files)
            raw = {k: d[k] for k in files}
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"{path}: cannot read as .npz: {e}") from None
    dtypes = {}
    for key in (TYPE_TABLE, LEGACY_TYPE_TABLE):
        table = raw.get(key)
        if table is None or table.ndim != 0 or table.dtype.kind not in "US":
            continue
        del raw[key]
        try:
            dtypes = json.loads(str(table))
        except ValueError as e:
            raise InputError(f"{path}: the {key} entry is not JSON: {e}") from None
        if not isinstance(dtypes, dict):
            raise InputError(f"{path}: the {key} entry is not a JSON object")
        break
    return {k: _decode(v, dtypes.get(k), f"{path}:{k}") for k, v in raw.items()}


def encode_arrays(named: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What np.savez should store: raw bits for non-native dtypes plus the dtypes entry."""
    out, names = {}, {}
    for k, a in named.items():
        a = np.asarray(a)
        if not a.flags.c_contiguous:
            a = a.copy()            # (np.ascontiguousarray would make 0-d arrays 1-d)
        names[k] = a.dtype.name
        out[k] = a if a.dtype.name in NATIVE else a.view(f"u{a.dtype.itemsize}")
    out[TYPE_TABLE] = np.array(json.dumps(names, sort_keys=True))
    return out


def save_npz(path, named: dict[str, np.ndarray]) -> None:
    try:
        np.savez(path, **encode_arrays(named))
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror or e}") from None


def load_outputs(path) -> list[np.ndarray]:
    """The `out0, out1, ...` arrays of an .npz (as `hloc run --output` writes them), in
    order, with their real dtypes (ml_dtypes for bfloat16, float8_*, int4 ...)."""
    arrays = load_npz(path)
    numbered = {int(m.group(1)): k for k in arrays if (m := _OUT_KEY.match(k))}
    if arrays and not numbered:     # (no arrays at all: the outputs of an empty tuple)
        raise InputError(f"{path}: holds no out0, out1, ... arrays (it has "
                         f"{', '.join(arrays)})")
    if sorted(numbered) != list(range(len(numbered))):
        missing = next(i for i in range(len(numbered) + 1) if i not in numbered)
        raise InputError(f"{path}: has {', '.join(sorted(numbered.values()))} but no "
                         f"out{missing}")
    return [arrays[numbered[i]] for i in range(len(numbered))]


def _load_npy(path) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    if magic != b"\x93NUMPY":
        raise InputError(f"{path}: not a .npy or .npz file ({_what(magic)})")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{path}: cannot read as .npy: {e}") from None


def _what(magic: bytes) -> str:
    """What a file that is not the .npy/.npz expected looks like, from its first bytes
    (np.load would say 'pickled (object) data ... load it unsafely' of most such files,
    or raise BadZipFile for a damaged archive)."""
    if not magic:
        return "empty"
    if magic.startswith(b"PK"):
        return "a zip archive that cannot be read: truncated?"
    if magic.startswith(b"\x93NUMPY"):
        return "a .npy array"
    return "no NumPy header"


def _is_npz(path) -> bool:
    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


# ---------------------------------------------------------------------------
# Reading user inputs

def _npz_inputs(path) -> list[InputArray]:
    arrays = load_npz(path)
    numbered = {int(m.group(1)): k for k in arrays if (m := _IN_KEY.match(k))}
    if numbered:
        # Our own files (and the corpora) hold in0.. beside out0..: take the inputs only.
        order = sorted(numbered)
        if order != list(range(len(order))):
            missing = next(i for i in range(len(order) + 1) if i not in numbered)
            raise InputError(f"{path}: has {', '.join(numbered[i] for i in order)} "
                             f"but no in{missing}")
        return [InputArray(arrays[numbered[i]], f"{numbered[i]} of {path}") for i in order]
    return [InputArray(v, f"{k} of {path}", name=k, source=str(path))
            for k, v in arrays.items()]


def read_inputs(paths=(), literals=()) -> list[InputArray]:
    """Values from --inputs files (one .npz, or one file per parameter) and literal texts."""
    out: list[InputArray] = []
    paths = list(paths)
    for path in paths:
        if _is_npz(path):
            out.extend(_npz_inputs(path))
        else:
            out.append(InputArray(_load_npy(path), str(path)))
    if len(paths) > 1 and len(out) != len(paths):
        for inp in out:
            inp.name = None     # several files: positional, never by name
    for i, text in enumerate(literals):
        out.append(parse_input_literal(text, f"--input-literal #{i + 1}"))
    return out


def parse_input_literal(text: str, label: str = "literal") -> InputArray:
    """`f32[2] {1, 2}`, `(f32[], s32[]) (1, 2)`: a shape, then XLA literal text."""
    try:
        shape, pos = parse_shape_prefix(text, 0)
    except ShapeSyntaxError as e:
        raise InputError(f"{label}: {e} (expects a shape such as f32[2] first)") from None
    try:
        lit = parse_literal(text[pos:], shape)
    except LiteralError as e:
        raise InputError(f"{label}: {e.message} (at offset {pos + e.offset})") from None
    return InputArray(lit.value, f"{label} ({shape.no_layout()})")


# ---------------------------------------------------------------------------
# Matching values to parameters

def entry_parameters(module) -> list:
    params = list(module.entry.parameters)
    if any(p is None for p in params):
        raise InputError(f"ENTRY {module.entry.name} has gaps in its parameter numbers")
    return params


def _is_token(shape) -> bool:
    return isinstance(shape, ArrayShape) and not shape.dtype.is_array


def _leaf_count(shape) -> int:
    if isinstance(shape, TupleShape):
        return sum(_leaf_count(e) for e in shape.elements)
    return 0 if _is_token(shape) else 1


def _conform(value, shape, where: str, convert: bool):
    """`value` as the interpreter wants it for `shape`, or InputError."""
    from .interp.core import TOKEN
    if isinstance(shape, TupleShape):
        if not isinstance(value, (tuple, list)) or len(value) != len(shape.elements):
            got = "a list" if isinstance(value, list) else value_shape_text(value)
            raise InputError(f"shape mismatch for {where}: module expects {shape.no_layout()}, "
                             f"got {got}")
        return tuple(_conform(v, s, where, convert) for v, s in zip(value, shape.elements))
    if _is_token(shape):
        return TOKEN
    dt = shape.dtype
    if not isinstance(value, np.ndarray) and not isinstance(value, np.generic):
        if not convert:
            raise InputError(f"{where}: expected a NumPy array, got {type(value).__name__}")
        try:
            with np.errstate(all="ignore"):
                value = np.asarray(value, dtype=dt.np)
        except (TypeError, ValueError, OverflowError) as e:
            raise InputError(f"{where}: cannot convert to {shape.no_layout()}: {e}") from None
    arr = np.asarray(value)
    if arr.dtype != dt.np:
        if arr.dtype.kind == "V" and arr.dtype.itemsize == dt.np.itemsize:
            arr = arr.view(dt.np)      # raw bits (ml_dtypes arrays saved with np.save)
        else:
            raise InputError(f"element type mismatch for {where}: module expects "
                             f"{shape.no_layout()}, got {value_shape_text(arr)}")
    dims = tuple(shape.dims)
    ok = arr.ndim == len(dims) and all(
        a == d or (shape.is_dynamic_dim(i) and (d < 0 or a <= d))
        for i, (a, d) in enumerate(zip(arr.shape, dims)))
    if not ok:
        raise InputError(f"shape mismatch for {where}: module expects {shape.no_layout()}, "
                         f"got {value_shape_text(arr)}")
    return arr


def _unflatten(leaves: list, shape):
    if isinstance(shape, TupleShape):
        return tuple(_unflatten(leaves, e) for e in shape.elements)
    return None if _is_token(shape) else leaves.pop(0)


def bind_arguments(module, inputs, *, convert: bool = False, positional: bool = False) -> list:
    """The interpreter's argument list for the ENTRY parameters, checked against them.

    `inputs` is a list of InputArray or of plain values. Values go to parameters by
    position; named npz keys go by name (hloc.binding) or are refused, unless
    `positional`, which binds them in file order; a list as
    long as the flattened tuple leaves fills tuple parameters; token parameters take
    no value. `convert` lets Python numbers and lists through as the parameter type.
    """
    inputs = [i if isinstance(i, InputArray) else InputArray(i, f"value {n}")
              for n, i in enumerate(inputs)]
    params = entry_parameters(module)
    if not params and inputs and all(i.name is not None and _OUT_KEY.match(i.name)
                                     for i in inputs):
        inputs = []     # an npz of out0.. only (in0.. beside out0.., with no inputs)
    if inputs and all(i.name is not None for i in inputs) and not positional:
        inputs = match_names(params, inputs, inputs[0].source or "the inputs")
    shapes = [p.shape for p in params]
    if len(inputs) != len(params):
        non_token = [i for i, s in enumerate(shapes) if not _is_token(s)]
        n_leaves = sum(_leaf_count(s) for s in shapes)
        if len(inputs) == len(non_token) and len(non_token) < len(params):
            it = iter(inputs)
            inputs = [InputArray(None, "token") if _is_token(s) else next(it) for s in shapes]
        elif len(inputs) == n_leaves and any(isinstance(s, TupleShape) for s in shapes):
            leaves = list(inputs)
            grouped = []
            for s in shapes:
                if isinstance(s, TupleShape):
                    part = [leaves.pop(0) for _ in range(_leaf_count(s))]
                    value = _unflatten([p.value for p in part], s)
                    grouped.append(InputArray(value, ", ".join(p.label for p in part)))
                elif _is_token(s):
                    grouped.append(InputArray(None, "token"))
                else:
                    grouped.append(leaves.pop(0))
            inputs = grouped
        else:
            raise InputError(f"mismatched number of expected arguments: module takes "
                             f"{len(params)}, got {len(inputs)}\n"
                             f"  module parameters: {describe_parameters(params)}\n"
                             f"  given: {describe_values(inputs)}")
    args = []
    for i, (p, inp) in enumerate(zip(params, inputs)):
        where = f"argument {i} ({p.name}) from {inp.label}"
        args.append(_conform(inp.value, p.shape, where, convert))
    return args


def flatten_leaves(value, shape) -> list[np.ndarray]:
    """Array leaves of a result in tuple order (tokens dropped)."""
    if isinstance(shape, TupleShape):
        out = []
        for v, s in zip(value, shape.elements):
            out.extend(flatten_leaves(v, s))
        return out
    if _is_token(shape):
        return []
    return [np.asarray(value)]
