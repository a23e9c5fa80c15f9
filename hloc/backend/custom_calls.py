"""topk and the custom-calls the compiled back end runs, as kernel emitters.

A custom-call target is looked up in CUSTOM_CALLS, a fixed table of emitters (a target
name is only ever compared with this table, never resolved as a native symbol); any
other target is `unsupported` naming it. jaxlib's LAPACK trsm and (real) potrf and getrf targets
are emitted as loops with the interpreter's semantics (info output included); geqrf,
orgqr/ungqr, syevd/heevd, gesdd, gesvd and geev call OpenBLAS's LAPACK (lapack.py). TopK and `topk` keep the k first elements of a
stable sort (ties: lower index first) by an insertion pass over each row into the k
output slots: the TopK comparator inlined, or for `topk` the total order (descending
when `largest`), as XLA's TopkDecomposer.
"""
from __future__ import annotations

from llvmlite import ir

from ..interp.core import unsupported
from . import lapack
from .elementwise import compare_values
from .indexing import _copy_all
from .loops import Index, for_range, i64, loop_names, loop_nest
from .reductions import inline_computation
from .registry import emits_kernel
from .types import I32, I64, load_elem, storage_type, store_elem


def _topk_rows(kb, inst, gen, outputs, less):
    """outputs = (values, indices); less(cand_v, cand_i, other_v, other_i) -> i1."""
    b = kb.b
    (vptr, vshape), (iptr, ishape) = outputs
    op = inst.operands[0].shape
    n, k = op.dims[-1], vshape.dims[-1]
    if vshape.size == 0:
        return
    with loop_nest(b, op.dims[:op.rank - 1], names=loop_names("t", op.rank - 1)) as ivs:

        def slot(ptr, shape, j):
            return b.gep(ptr, [Index(b, shape, multi=ivs + [j]).linear], source_etype=storage_type(shape.dtype),
                         inbounds=True)

        count = kb.alloca_entry(I64, name="topk.count")
        b.store(i64(0), count)
        with for_range(b, 0, n, name="ti") as i:
            cand = gen(Index(b, op, multi=ivs + [i]))
            cand_i = b.trunc(i, I32)
            jslot = kb.alloca_entry(I64, name="topk.j")
            b.store(b.load(count, typ=I64), jslot)
            head, test, move, end = (b.append_basic_block(f"topk.{s}") for s in ("head", "test", "move", "end"))
            b.branch(head)
            b.position_at_end(head)
            j = b.load(jslot, typ=I64)
            b.cbranch(b.icmp_signed(">", j, i64(0)), test, end)
            b.position_at_end(test)
            jm1 = b.sub(j, i64(1))
            other = load_elem(b, vshape.dtype, slot(vptr, vshape, jm1))
            other_i = load_elem(b, ishape.dtype, slot(iptr, ishape, jm1))
            b.cbranch(less(cand, cand_i, other, other_i), move, end)
            b.position_at_end(move)
            with b.if_then(b.icmp_signed("<", j, i64(k))):
                store_elem(b, vshape.dtype, other, slot(vptr, vshape, j))
                store_elem(b, ishape.dtype, other_i, slot(iptr, ishape, j))
            b.store(jm1, jslot)
            b.branch(head)
            b.position_at_end(end)
            j = b.load(jslot, typ=I64)
            with b.if_then(b.icmp_signed("<", j, i64(k))):
                store_elem(b, vshape.dtype, cand, slot(vptr, vshape, j))
                store_elem(b, ishape.dtype, cand_i, slot(iptr, ishape, j))
            c = b.load(count, typ=I64)
            b.store(b.select(b.icmp_signed("<", c, i64(k)), b.add(c, i64(1)), c), count)


@emits_kernel("topk")
def _emit_topk(kb, inst, ops, outputs):
    dt = inst.operands[0].shape.dtype
    largest = inst.attrs.get("largest", True) is not False
    ctype = "TOTALORDER" if dt.kind == "float" else None

    def less(v, vi, w, wi):
        return compare_values(kb, inst, dt, v, w, "GT" if largest else "LT", ctype)
    _topk_rows(kb, inst, ops[0], outputs, less)


def _topk_custom_call(kb, inst, ops, outputs):
    comps = inst.attrs.get("called_computations") or ()
    comp = comps[0] if comps else inst.attrs.get("to_apply")
    if comp is None:
        raise unsupported(inst, "TopK custom-call without a comparator")
    four = len([i for i in comp.instructions if i.opcode == "parameter"]) == 4

    def less(v, vi, w, wi):
        args = [v, w, vi, wi] if four else [v, w]
        return inline_computation(kb, comp, args)[0]
    _topk_rows(kb, inst, ops[0], outputs, less)


def _lapack_trsm(kb, inst, ops, outputs):
    from ..interp.custom_calls import _char, ffi_attrs
    from .linalg import triangular_solve
    if len(inst.operands) != 2:
        raise unsupported(inst, "trsm custom-call with an alpha operand")
    attrs = ffi_attrs(inst)
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[_char(attrs, "trans_x", "N")]
    triangular_solve(kb, inst, ops, outputs, left=_char(attrs, "side", "L") == "L",
                     lower=_char(attrs, "uplo", "L") == "L",
                     unit=_char(attrs, "diag", "N") == "U", trans=trans)


def _lapack_potrf(kb, inst, ops, outputs):
    from ..interp.custom_calls import _char, ffi_attrs
    from .linalg import potrf
    potrf(kb, inst, ops, outputs, lower=_char(ffi_attrs(inst), "uplo", "L") == "L")


def _lapack_getrf(kb, inst, ops, outputs):
    from .linalg import getrf
    getrf(kb, inst, ops, outputs)


def _identity(kb, inst, ops, outputs):
    (ptr, shape), = outputs
    if len(inst.operands) != 1 or inst.operands[0].shape.dims != shape.dims:
        raise unsupported(inst, f"{inst.attrs.get('custom_call_target')} custom-call from "
                                f"{', '.join(str(o.shape) for o in inst.operands)} to {shape} "
                                "(an identity on one device only when the shape is kept)")
    _copy_all(kb, ops[0], ptr, shape)


CUSTOM_CALLS = {
    "TopK": _topk_custom_call,
    "Sharding": _identity,
    "SPMDFullToShardShape": _identity,
    "SPMDShardToFullShape": _identity,
    "MoveToHost": _identity,
    "MoveToDevice": _identity,
}
CUSTOM_CALLS.update(lapack.targets())      # calls of OpenBLAS's LAPACK (hloc.backend.lapack)
for _p in "sdcz":      # jaxlib's LAPACK FFI targets, emitted as loops (not LAPACK calls)
    CUSTOM_CALLS[f"lapack_{_p}trsm_ffi"] = _lapack_trsm
for _p in "sd":
    CUSTOM_CALLS[f"lapack_{_p}potrf_ffi"] = _lapack_potrf
    CUSTOM_CALLS[f"lapack_{_p}getrf_ffi"] = _lapack_getrf


@emits_kernel("custom-call")
def _emit_custom_call(kb, inst, ops, outputs):
    target = inst.attrs.get("custom_call_target")
    fn = CUSTOM_CALLS.get(target)
    if fn is None:
        raise unsupported(inst, f"custom-call target {target!r} in the compiled back end")
    fn(kb, inst, ops, outputs)


_ = ir
