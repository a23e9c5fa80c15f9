"""Fake arguments for a module, made as run_hlo_module's MakeFakeArguments makes them.

xla/tests/test_utils.cc: every ENTRY parameter gets seeded random data (floats uniform
in [-0.1, 0.2), or sign * 2^U(min_exp-1, max_exp-1) with rare 0/1/inf for the large
range; integers over the type's full range; pred 0/1), except where data flow says a
value must be constrained. The uses of each parameter leaf are followed through tuple /
get-tuple-element, call / fusion / while / conditional parameters, called roots, bitcast,
convert and reduce-precision; gather and scatter indices are also followed back through
reshape, transpose, copy and slice. Constraints: dynamic-slice / dynamic-update-slice
start indices lie in [0, dim - slice]; gather / scatter indices in [0, min over the
indexed dims of (dim - 1)], sorted when `indices_are_sorted`; reduce, reduce-window and
select-and-scatter init values are 0 for an `add(p0, p1)` reducer, 1 for `multiply`,
else random; sort keys of a key/value or stable sort have no duplicates (a shuffled
iota for integers; distinct values for floats, where XLA constrains only integers).
Two different kinds of constraint on one leaf are an error, as in XLA. The numbers come
from NumPy's PCG64 seeded with `seed`: the constraints are XLA's, the bits are not
std::minstd_rand0's, so the values differ from run_hlo_module's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

from .diagnostics import InputError
from .inputs import entry_parameters
from .ir.dtypes import DTYPES, DType
from .ir.graph import callers
from .ir.shape import UNBOUNDED, ArrayShape, TupleShape

__all__ = ["make_fake_arguments", "find_constraints", "Constraint"]

_FORWARD = ("convert", "reduce-precision", "bitcast")          # same value, new type
_FORMATTING = ("reshape", "transpose", "copy", "slice")         # gather/scatter indices only


@dataclass
class Constraint:
    """What the uses of one parameter leaf ask of its values."""
    index_bound: int | None = None
    sorted: bool = False
    unique: bool = False
    constant: str | None = None          # "zero" | "one" | "random" (reducer unknown)
    uses: list[str] = field(default_factory=list)

    def kinds(self) -> list[str]:
        out = []
        if self.unique:
            out.append("sort keys")
        if self.index_bound is not None:
            out.append("indices")
        if self.constant is not None:
            out.append("init value")
        return out


def _init_kind(comp) -> str:
    """GetInitValue: 0 for add(p0, p1), 1 for multiply(p0, p1), else unknown."""
    root = comp.root
    if len(comp.parameters) != 2 or len(root.operands) != 2:
        return "random"
    a, b = root.operands
    if a.opcode != "parameter" or b.opcode != "parameter" or a is b:
        return "random"
    return {"add": "zero", "multiply": "one"}.get(root.opcode, "random")


def _record(user, k: int, formatted: bool, c: Constraint) -> None:
    op, n = user.opcode, len(user.operands)
    if op in ("gather", "scatter") and k == (1 if op == "gather" else (n - 1) // 2):
        operand = user.operands[0].shape
        index_map = user.attrs.get("start_index_map" if op == "gather"
                                   else "scatter_dims_to_operand_dims", ())
        for d in index_map:
            bound = operand.dims[d] - 1
            c.index_bound = bound if c.index_bound is None else min(c.index_bound, bound)
        c.sorted |= bool(user.attrs.get("indices_are_sorted"))
        c.uses.append(f"%{user.name}")
        return
    if formatted:
        return
    if op in ("dynamic-slice", "dynamic-update-slice"):
        first = 1 if op == "dynamic-slice" else 2
        if k < first:
            return
        operand = user.operands[0].shape
        piece = user.shape if op == "dynamic-slice" else user.operands[1].shape
        index_shape = user.operands[k].shape
        if isinstance(index_shape, ArrayShape) and index_shape.rank == 1:   # old vector form
            dims = range(operand.rank)
        else:
            dims = [k - first]
        for d in dims:
            bound = operand.dims[d] - piece.dims[d]
            c.index_bound = bound if c.index_bound is None else min(c.index_bound, bound)
        c.uses.append(f"%{user.name}")
    elif (op in ("reduce", "reduce-window") and k >= n // 2) or \
            (op == "select-and-scatter" and k == 2):
        comp = user.attrs.get("scatter" if op == "select-and-scatter" else "to_apply")
        c.constant = _init_kind(comp) if comp is not None else "random"
        c.uses.append(f"%{user.name}")
    elif op == "sort" and k == 0 and (n >= 2 or user.attrs.get("is_stable")):
        c.unique = True
        c.uses.append(f"%{user.name}")


class _Walker:
    def __init__(self, module):
        self.callers = {id(c): sites for c, sites in callers(module).items()}
        self.seen: set = set()

    def walk(self, inst, path: tuple, formatted: bool, c: Constraint) -> None:
        key = (id(inst), path, formatted)
        if key in self.seen:
            return
        self.seen.add(key)
        for user in {id(u): u for u in inst.users}.values():
            for k, op in enumerate(user.operands):
                if op is inst:
                    self.use(user, k, path, formatted, c)
        comp = inst.parent
        if comp is not None and comp.root is inst and not comp.is_entry:
            for caller in self.callers.get(id(comp), ()):
                if caller.opcode in ("call", "fusion", "conditional", "async-start"):
                    self.walk(caller, path, formatted, c)

    def use(self, user, k: int, path: tuple, formatted: bool, c: Constraint) -> None:
        op = user.opcode
        if op == "tuple":
            self.walk(user, (k,) + path, formatted, c)
        elif op == "get-tuple-element":
            if path and path[0] == user.attrs.get("index"):
                self.walk(user, path[1:], formatted, c)
        elif op in ("call", "fusion", "async-start"):
            callees = user.called_computations()
            if callees and k < len(callees[0].parameters):
                self.walk(callees[0].parameters[k], path, formatted, c)
        elif op == "while":
            for name in ("body", "condition"):
                comp = user.attrs.get(name)
                if comp is not None and comp.parameters:
                    self.walk(comp.parameters[0], path, formatted, c)
            self.walk(user, path, formatted, c)
        elif op == "conditional":
            if k == 0:
                self.leaf_use(user, k, path, formatted, c)
                return
            if "branch_computations" in user.attrs:
                branches = user.attrs["branch_computations"]
            else:
                branches = (user.attrs.get("true_computation"), user.attrs.get("false_computation"))
            comp = branches[k - 1] if k - 1 < len(branches) else None
            if comp is not None and comp.parameters:
                self.walk(comp.parameters[0], path, formatted, c)
        elif op in _FORWARD and not path:
            self.walk(user, (), formatted, c)
        elif (op in _FORMATTING or (op == "custom-call" and user.attrs.get("custom_call_target")
                                    == "AssumeGatherIndicesInBound")) and not path:
            self.walk(user, (), True, c)
        else:
            self.leaf_use(user, k, path, formatted, c)

    def leaf_use(self, user, k, path, formatted, c):
        if not path:
            _record(user, k, formatted, c)


def _leaf_paths(shape, prefix=()):
    if isinstance(shape, TupleShape):
        out = []
        for i, e in enumerate(shape.elements):
            out.extend(_leaf_paths(e, prefix + (i,)))
        return out
    return [(prefix, shape)]


def find_constraints(module) -> list[dict[tuple, Constraint]]:
    """Per ENTRY parameter: {leaf path: Constraint} for the leaves its uses constrain."""
    out = []
    for param in entry_parameters(module):
        leaves = {}
        for path, _shape in _leaf_paths(param.shape):
            c = Constraint()
            _Walker(module).walk(param, path, False, c)
            if c.kinds():
                leaves[path] = c
        out.append(leaves)
    return out


# ---------------------------------------------------------------------------
# Value generation

def _int_range(dt: DType) -> tuple[int, int]:
    if dt.name == "s1":
        return -1, 0
    if dt.kind == "int":
        return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
    return 0, (1 << dt.bits) - 1


def _from_ints(values: np.ndarray, dt: DType) -> np.ndarray:
    """Small int64 values, wrapped into dt's range, in dt's storage type."""
    if dt.kind == "pred":
        return (values & 1).astype(np.bool_)
    if dt.is_integral and dt.bits < 64:
        lo, hi = _int_range(dt)
        values = (values - lo) % (hi - lo + 1) + lo
    with np.errstate(all="ignore"):
        return values.astype(dt.np)


def _uniform_floats(rng, dt: DType, n: int, large: bool) -> np.ndarray:
    if dt.is_complex:
        comp = DTYPES["f32" if dt.name == "c64" else "f64"]
        re = _uniform_floats(rng, comp, n, large)
        im = _uniform_floats(rng, comp, n, large)
        return (re + 1j * im.astype(np.complex128)).astype(dt.np)
    wide = np.float64 if dt.name == "f64" else np.float32
    if not large:
        x = rng.uniform(-0.1, 0.2, n).astype(wide)
    else:
        fi = ml_dtypes.finfo(dt.np)
        e = rng.uniform(int(fi.minexp) - 1, int(fi.maxexp) - 1, n)
        sign = np.where(rng.integers(0, 2, n) == 1, -1.0, 1.0)
        x = (sign * np.exp2(e)).astype(wide)
        special = rng.random(n)
        specials = [0.0, -0.0, 1.0, -1.0]
        if np.isinf(np.array(np.inf, np.float32).astype(dt.np)):
            specials += [np.inf, -np.inf]
        for i, v in enumerate(specials):
            x[(special >= i * 1e-6) & (special < (i + 1) * 1e-6)] = v
    with np.errstate(all="ignore"):
        out = x.astype(dt.np)
    if ml_dtypes.finfo(dt.np).min >= 0:      # unsigned exponent-only types (f8e8m0fnu)
        with np.errstate(all="ignore"):
            out = np.maximum(np.abs(x), float(ml_dtypes.finfo(dt.np).tiny)).astype(dt.np)
    return out


def _random_leaf(rng, shape: ArrayShape, large: bool) -> np.ndarray:
    dt, n = shape.dtype, shape.size
    if dt.kind == "pred":
        flat = rng.integers(0, 2, n).astype(np.bool_)
    elif dt.is_integral:
        lo, hi = _int_range(dt)
        big = np.uint64 if dt.kind == "uint" else np.int64
        flat = rng.integers(lo, hi, n, dtype=big, endpoint=True).astype(dt.np)
    else:
        flat = _uniform_floats(rng, dt, n, large)
    return flat.reshape(shape.dims)


def _index_leaf(rng, shape: ArrayShape, bound: int, sort: bool) -> np.ndarray:
    dt = shape.dtype
    if dt.is_integral:
        bound = min(bound, _int_range(dt)[1])
    bound = max(bound, 0)
    flat = rng.integers(0, bound, shape.size, dtype=np.int64, endpoint=True)
    if sort:
        flat = np.sort(flat)
    return _from_ints(flat, dt).reshape(shape.dims)


def _unique_floats(rng, dt: DType, n: int) -> np.ndarray:
    x = _uniform_floats(rng, dt, n, False)
    if np.unique(x.astype(np.float64)).size == n:
        return x
    if dt.bits <= 16:     # every finite value of the type, nearest the usual range first
        u = f"u{dt.np.itemsize}"
        allv = np.arange(1 << (8 * dt.np.itemsize), dtype=np.uint32).astype(u).view(dt.np)
        with np.errstate(invalid="ignore"):
            wide = allv.astype(np.float64)
        keep = np.isfinite(wide) & ~((wide == 0) & np.signbit(wide))
        vals, idx = np.unique(wide[keep], return_index=True)
        if vals.size < n:
            raise InputError(f"cannot make {n} distinct {dt.name} sort keys")
        cand = allv[keep][idx]
        pick = np.argsort(np.abs(vals - 0.05), kind="stable")[:n]
        out = cand[pick]
    else:
        u = np.uint32 if dt.name == "f32" else np.uint64
        start = np.array([0.05], dt.np).view(u)[0]
        out = (np.arange(n, dtype=u) + start).view(dt.np)
    return out[rng.permutation(n)]


def _unique_leaf(rng, shape: ArrayShape, large: bool) -> np.ndarray:
    dt, n = shape.dtype, shape.size
    if dt.is_integral:
        iota = np.arange(n, dtype=np.int64)
        if dt.kind == "int":
            iota -= n // 2
        return _from_ints(rng.permutation(iota), dt).reshape(shape.dims)
    if dt.is_float:
        return _unique_floats(rng, dt, n).reshape(shape.dims)
    return _random_leaf(rng, shape, large)


def _constant_leaf(shape: ArrayShape, kind: str) -> np.ndarray:
    value = 0 if kind == "zero" else 1
    return np.full(shape.dims, value, dtype=shape.dtype.np)


def _make_leaf(rng, shape, c: Constraint | None, large: bool, where: str):
    from .interp.core import TOKEN
    if not isinstance(shape, ArrayShape) or not shape.dtype.is_array:
        return TOKEN
    if any(d == UNBOUNDED for d in shape.dims):
        raise InputError(f"cannot make fake data for {where}: {shape.no_layout()} has an "
                         f"unbounded dimension; pass --inputs")
    if c is None:
        return _random_leaf(rng, shape, large)
    kinds = c.kinds()
    if len(kinds) > 1:
        raise InputError(f"conflicting operand generation constraints for {where} "
                         f"({' and '.join(kinds)}: {', '.join(c.uses)}); pass --inputs")
    if c.index_bound is not None:
        return _index_leaf(rng, shape, c.index_bound, c.sorted)
    if c.unique:
        return _unique_leaf(rng, shape, large)
    if c.constant in ("zero", "one"):
        return _constant_leaf(shape, c.constant)
    return _random_leaf(rng, shape, large)


def _build(rng, shape, path, constraints, large, where):
    if isinstance(shape, TupleShape):
        return tuple(_build(rng, e, path + (i,), constraints, large, where)
                     for i, e in enumerate(shape.elements))
    return _make_leaf(rng, shape, constraints.get(path), large, where)


def make_fake_arguments(module, *, seed: int = 42, use_large_float_range: bool = False,
                        rng: np.random.Generator | None = None) -> list:
    """One value per ENTRY parameter (tuples for tuple parameters), seeded by `seed`."""
    rng = rng if rng is not None else np.random.default_rng(seed)
    params = entry_parameters(module)
    out = []
    for param, constraints in zip(params, find_constraints(module)):
        where = f"argument {param.parameter_number} ({param.name})"
        out.append(_build(rng, param.shape, (), constraints, use_large_float_range, where))
    return out
