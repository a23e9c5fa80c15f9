"""In-place dynamic-update-slice: loop state updated where it lies, not copied per step.

A scan's body typically writes one row per iteration into a loop-carried array with a
dynamic-update-slice (DUS). Copied whole, that costs O(n) per step — O(n^2) a loop.

* Kernels: a kernel whose root is a DUS of one of its operand buffers (a fusion
  parameter read by nothing but that DUS, or an unfused DUS) first compares its output
  pointer with that operand's: when they are the same buffer, only the update window is
  written (the rest already holds the operand); otherwise the operand is copied as bytes
  (a memcpy) and the window written. The check is at run time, so the kernel is right
  whatever the buffers turn out to be, and small enough to inline into a loop body.
* While loops: a state element `k` whose body output is such a DUS of the body's own
  state element `k` (read by nothing else in the body) keeps one buffer for both halves
  of the double-buffered state (hloc.backend.computation), so the DUS runs in place;
  so does an element the body passes through unchanged (a scan's saved residuals in the
  backward loop), whose copy from parameter to output is then skipped at run time.
"""
from __future__ import annotations

from llvmlite import ir

from .loops import Index, for_range, i64, minor_to_major

DUS = "dynamic-update-slice"


def dus_base(inst) -> int | None:
    """Operand number whose buffer `inst`'s kernel may update in place, or None."""
    if inst.shape.is_tuple:
        return None
    if inst.opcode == DUS:
        if len(inst.operands) != 2 + inst.operands[0].shape.rank:
            return None
        return 0 if minor_to_major(inst.shape) == minor_to_major(inst.operands[0].shape) else None
    if inst.opcode != "fusion":
        return None
    root = inst.attrs["calls"].root
    if root.opcode != DUS or len(root.operands) != 2 + root.operands[0].shape.rank:
        return None
    base = root.operands[0]
    if base.opcode != "parameter" or len(base.users) != 1 or root.operands[1] is base \
            or any(o is base for o in root.operands[2:]):
        return None
    if minor_to_major(root.shape) != minor_to_major(base.shape):
        return None
    return base.parameter_number


def emit_window(kb, root, ops, out_ptr, out_shape, wg) -> None:
    """out[start + j] = update[j] for every j of the update (work group 0 only)."""
    from .structural import _start
    from .types import storage_type, store_elem
    b = kb.b
    op, up = root.operands[0].shape, root.operands[1].shape
    if up.size == 0:
        return
    with b.if_then(b.icmp_unsigned("==", wg, i64(0))):
        starts = [_start(kb, root, ops, 2 + d, op.dims[d] - up.dims[d]) for d in range(op.rank)]
        stack, js = [], []
        for d in range(up.rank):
            cm = for_range(b, 0, up.dims[d], name=f"w{d}")
            js.append(cm.__enter__())
            stack.append(cm)
        v = ops[1](Index(b, up, multi=list(js)))
        idx = Index(b, out_shape, multi=[b.add(s, j) for s, j in zip(starts, js)])
        p = b.gep(out_ptr, [idx.offset_in(out_shape)], source_etype=storage_type(out_shape.dtype),
                  inbounds=True)
        store_elem(b, out_shape.dtype, kb.fenced(v), p)
        for cm in reversed(stack):
            cm.__exit__(None, None, None)


def copy_operand(kb, dst, src, shape, wg) -> None:
    """dst <- src, all of `shape`'s bytes (work group 0 only): a DUS kernel's operand
    when its output is another buffer, before emit_window writes the update."""
    from .types import I1, I64, PTR, VOID, itemsize
    b = kb.b
    n = shape.size * itemsize(shape.dtype)
    if n == 0:
        return
    f = kb.mcx.intrinsic("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    with b.if_then(b.icmp_unsigned("==", wg, i64(0))):
        b.call(f, [dst, src, i64(n), ir.Constant(I1, 0)])


def same_buffer(b: ir.IRBuilder, p, q) -> ir.Value:
    return b.icmp_unsigned("==", b.ptrtoint(p, ir.IntType(64)), b.ptrtoint(q, ir.IntType(64)))


def inplace_state(body) -> set[int]:
    """State elements `k` of a while body (a tuple of arrays) updated in place by a DUS,
    or passed through unchanged (the body's copy of it to its output is then skipped)."""
    param = body.parameter_instruction(0) if hasattr(body, "parameter_instruction") else \
        next((i for i in body.instructions if i.opcode == "parameter"), None)
    root = body.root
    if param is None or not param.shape.is_tuple or root.opcode != "tuple" \
            or any(e.is_tuple for e in param.shape.elements):
        return set()
    gtes: dict[int, list] = {}
    for u in param.users:
        if u.opcode != "get-tuple-element":
            return set()
        gtes.setdefault(u.attrs["index"], []).append(u)
    out = set()
    for k, d in enumerate(root.operands):
        g = gtes.get(k)
        if d.opcode == "get-tuple-element" and d.operands[0] is param and d.attrs["index"] == k:
            out.add(k)          # passed through unchanged: nothing writes it
            continue
        base = dus_base(d)
        if base is None or g is None or len(g) != 1 or d.operands[base] is not g[0]:
            continue
        if len(g[0].users) != 1 or sum(1 for o in root.operands if o is d) != 1:
            continue
        if d.shape != param.shape.elements[k]:
            continue
        out.add(k)
    return out
