"""One native function per HLO computation, control flow included.

`void @comp.<name>(ptr %params, ptr %outs, ptr %temp)`: `params`/`outs` are arrays of
leaf pointers, `temp` the computation's arena (hloc.backend.buffers). Instructions run
in order: a kernel call per fusion or op (large data-parallel ones through the
work-group runtime, hloc.backend.parallel; large dots through BLAS; large full reductions
in fixed chunks, hloc.backend.split_reduce), while / conditional / call as LLVM loops,
switches and calls of the callees' functions — no Python between ops or iterations.
The closed match below is over the structural kinds only; everything else is a kernel.
"""
from __future__ import annotations

from contextlib import nullcontext

from llvmlite import ir

from ..interp.core import unsupported
from . import (blas, buffers, collective_calls, conv_gemm, dedup, irfast, library_fusion,
               parallel, row_groups, split_reduce)
from .profile import site_of
from .context import fast_names, ptr_arg
from .inplace import inplace_state
from .kernels import CALLER_ARRAY_BYTES, data_parallel, emit_kernel
from .loops import at_entry, i32, i64
from .types import I1, I8, I32, I64, PTR, VOID, TypeUnsupported, opaque

COMP_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR])
# A computation function whose code, with the kernels and computations LLVM inlines into
# it, exceeds this many LLVM instructions is not inlined into its caller: it is then a
# unit of its own that hloc.backend.partition can place in another part than its
# caller's (a large scan body compiles beside the computation that loops over it). A
# call per loop iteration is nothing beside that much code.
OWN_UNIT_INSTRUCTIONS = 2500
# A kernel's loops run briefly (Functions.brief) under parallel.MIN_WORK bytes touched per
# call (the size below which it runs on one thread), or under this many when it runs
# inside a while loop, whose trip count is not known: the BERT step's layer loop runs
# kernels of up to 37 KiB, a scan body's scalar kernels touch a few hundred bytes.
BRIEF_LOOPED_WORK = 64 << 10
# A convolution through im2col + OpenBLAS whose im2col copies touch fewer bytes than this
# leaves its computation brief (compiled at jit.BRIEF_LEVEL under the brief options); 0:
# never, its im2col loops keep their part at the module's level. The CNN step's two (14-56
# KiB) make its entry part O3, 62 % of its LLVM time on one core (benchmarks/
# compile_parts.py): with 1 << 20 its compile is 351 -> 247 ms wall, 547 -> 415 ms CPU
# (0.88x -> 0.64x XLA:CPU's, where it was at the goal's edge), same bits, for a run time
# of 0.060-0.061 -> 0.062-0.063 ms (best of 300, 4 runs each; the im2col loops are not
# vectorised at O1), still 0.3x XLA:CPU's.
BRIEF_IM2COL_BYTES = 1 << 20
# An inlinable kernel takes its buffers as arguments (hloc.backend.kernels.direct_type);
# the weight still counts the array of pointers a call of the other kernels passes
# (caller: alloca, bitcast, a GEP and store per pointer; kernel: a GEP and load per
# pointer): the thresholds above and jit.SLP_MAX_INSTRUCTIONS were set in those units.
_ARGS_ARRAY, _ARGS_ARRAY_FIXED = 4, 2


class Functions:
    """Compiled computations of one module, each with its buffer plan."""

    def __init__(self, mcx, share_kernels: bool = True):
        self.mcx = mcx
        self.fns: dict[int, ir.Function] = {}
        self.plans: dict[int, buffers.Plan] = {}
        self.donated: tuple = (None, ())     # (ENTRY computation, buffers.alias_leaves)
        # identical kernels emitted once (None: each instruction its own kernel)
        self.kernels = dedup.Kernels() if share_kernels else None
        self._weights: dict[str, int] = {}
        # Function name -> whether every loop LLVM compiles in it runs briefly: a small
        # kernel (BRIEF_LOOPED_WORK), a computation whose own code is calls and while
        # loops. Parts holding only such functions compile the cheaper way
        # (compile_threads.BRIEF_OPTIONS); anything not noted here (row kernels, GEMM and
        # runtime helpers) does not (row kernels' parts may: Functions.rows).
        self.brief: dict[str, bool] = {}
        # row-group kernels (hloc.backend.row_groups) with loops along their rows: their
        # parts compile the row way
        # (hloc.backend.jit.ROW_SLP, ROW_CODEGEN_LEVEL, ROW_BRIEF_OPTIONS)
        self.rows: set[str] = set()
        # row-group kernels in explicit vector code (hloc.backend.row_vector): brief, and
        # their parts may compile at compile_threads.LEAN (hloc.backend.jit.LEAN_ROWS)
        self.explicit: set[str] = set()
        self._looped: set[int] = set()     # computations run inside a while loop
        # called with each function made noinline by OWN_UNIT_INSTRUCTIONS once its code
        # is complete (its callees come first): hloc.backend.jit compiles it ahead
        self.on_unit = None

    def note_brief(self, name: str, brief: bool) -> None:
        """A shared kernel is brief only if each of its instructions is."""
        self.brief[name] = self.brief.get(name, True) and brief

    def arena(self, comp) -> int:
        return self.plans[id(comp)].arena

    def compile(self, comp) -> ir.Function:
        """Callees first (post order over the call graph, iteratively)."""
        self._mark_looped(comp)
        order, seen = [], {id(comp)}
        stack = [(comp, iter(self._callees(comp)))]
        while stack:
            c, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                order.append(c)
            elif id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append((nxt, iter(self._callees(nxt))))
        for c in order:
            if id(c) not in self.fns:
                self._emit(c)
        return self.fns[id(comp)]

    def _mark_looped(self, comp) -> None:
        """Note the computations a while loop runs (its condition, body and their callees)."""
        stack, seen = [(comp, False)], set()
        while stack:
            c, looped = stack.pop()
            if (id(c), looped) in seen:
                continue
            seen.add((id(c), looped))
            if looped:
                self._looped.add(id(c))
            for inst in c.instructions:
                for callee in buffers.called_functions(inst):
                    stack.append((callee, looped or inst.opcode == "while"))

    def looped(self, comp) -> bool:
        return id(comp) in self._looped

    @staticmethod
    def _callees(comp) -> list:
        return [c for inst in comp.instructions for c in buffers.called_functions(inst)]

    def _emit(self, comp) -> None:
        mcx = self.mcx
        plan = buffers.plan(comp, self.arena,
                            self.donated[1] if comp is self.donated[0] else ())
        self.plans[id(comp)] = plan
        fn = fast_names(ir.Function(mcx.module, COMP_TYPE, name=mcx.unique("comp." + comp.name)))
        fn.args[0].name, fn.args[1].name, fn.args[2].name = "params", "outs", "temp"
        # The arena region a computation gets is disjoint from every buffer its params and
        # outs point to (the caller's own buffers lie below callee_offset): LLVM may then
        # keep temporaries in registers across stores to outputs.
        fn.args[2].add_attribute("noalias")
        self.fns[id(comp)] = fn
        self.note_brief(fn.name, True)
        _Emitter(self, comp, plan, fn).run()
        if self.weight(fn) > OWN_UNIT_INSTRUCTIONS:
            fn.attributes.add("noinline")
            if self.on_unit is not None:
                self.on_unit(fn)

    def weight(self, fn: ir.Function) -> int:
        """LLVM instructions in `fn` with the kernels (alwaysinline) and computations
        (unless noinline) it calls inlined, before optimisation. Other helpers (the
        work-group runtime, sort recursion) count as calls: the size must not depend on
        how kernels are dispatched, since it decides the pipeline (jit.SLP_MAX_INSTRUCTIONS)."""
        w = self._weights.get(fn.name)
        if w is None:
            comps = {f.name for f in self.fns.values()}
            w = 0
            for block in fn.blocks:
                w += len(block.instructions)
                for inst in block.instructions:
                    if not isinstance(inst, ir.CallInstr):   # only calls have a callee
                        continue
                    callee = inst.callee
                    if getattr(callee, "direct_args", False):
                        w += _ARGS_ARRAY * (len(inst.args) - 2) + _ARGS_ARRAY_FIXED
                    if isinstance(callee, ir.Function) and callee.blocks \
                            and "noinline" not in callee.attributes \
                            and ("alwaysinline" in callee.attributes or callee.name in comps):
                        w += self.weight(callee)
            self._weights[fn.name] = w
        return w


class _Emitter:
    def __init__(self, fns: Functions, comp, plan, fn):
        self.fns, self.comp, self.plan, self.fn = fns, comp, plan, fn
        self.mcx = fns.mcx
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self._ptr_cache: dict[int, ir.Value] = {}

    # -- pointers
    def ptr(self, buf: buffers.Buf) -> ir.Value:
        p = self._ptr_cache.get(id(buf))
        if p is not None:
            return p
        b = self.b
        params, outs, temp = self.fn.args
        with at_entry(b, self.fn):
            if buf.kind == "param":
                p = ptr_arg(b, params, buf.index)
            elif buf.kind == "out":
                p = ptr_arg(b, outs, buf.index)
            elif buf.kind == "temp":
                p = b.gep(temp, [i64(buf.offset)], source_etype=I8, inbounds=True)
            elif buf.kind == "const":
                p = self.mcx.constant_global(buf.inst, buf.index)
            else:
                p = ir.Constant(PTR, None)
        self._ptr_cache[id(buf)] = p
        return p

    def ptr_array(self, bufs) -> ir.Value:
        b = self.b
        arr_t = ir.ArrayType(PTR, max(len(bufs), 1))
        with at_entry(b, self.fn):
            slot = opaque(b, b.alloca(arr_t))
        zero = i64(0)
        for k, buf in enumerate(bufs):
            irfast.store(b, self.ptr(buf), irfast.gep(b, slot, [zero, i32(k)], arr_t))
        return slot

    def memcpy(self, dst, src, n: int) -> None:
        if n == 0:
            return
        f = self.mcx.intrinsic("llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
        self.b.call(f, [dst, src, i64(n), ir.Constant(I1, 0)])

    def timed(self, inst, kind: str | None = None):
        """A block whose code is timed as `inst`'s site when profiling (else nothing)."""
        prof = self.mcx.profiler
        if prof is None:
            return nullcontext()
        return prof.around(self, site_of(inst, self.comp.name, kind))

    def callee_temp(self):
        return self.b.gep(self.fn.args[2], [i64(self.plan.callee_offset)], source_etype=I8,
                          inbounds=True)

    def call_comp(self, comp, in_bufs, out_bufs) -> None:
        callee = self.fns.fns[id(comp)]
        self.b.call(callee, [self.ptr_array(in_bufs), self.ptr_array(out_bufs), self.callee_temp()])

    # -- instructions
    def run(self) -> None:
        groups = row_groups.plan(self.comp, self.plan)
        for inst in self.comp.instructions:
            if self.plan.no_code(inst):
                continue
            group = groups.get(id(inst))
            if group is None:
                self.instruction(inst)
            elif group.members[0] is inst:        # the others run inside its kernel
                fn = row_groups.emit(self, group)
                if group.vector:        # no loop left for LLVM's vectoriser: brief
                    self.fns.brief[fn.name] = True
                    self.fns.explicit.add(fn.name)
                elif any(m.shape.size > group.rows for m in group.members):
                    self.fns.rows.add(fn.name)          # it loops along its rows
        for j, buf in self.plan.root_copies:
            out = ptr_arg(self.b, self.fn.args[1], j)
            if buf.kind == "param":     # a while body's state passed through: maybe one buffer
                with self.b.if_then(self.b.icmp_unsigned("!=", out, self.ptr(buf))):
                    self.memcpy(out, self.ptr(buf), buf.size)
            else:
                self.memcpy(out, self.ptr(buf), buf.size)
        self.b.ret_void()

    def leaves(self, inst):
        return self.plan.leaves[id(inst)]

    def own_loops(self) -> None:
        """This computation's function has code of its own that may loop long (a library
        call's or a split reduction's loops): it is not brief. (A while loop's own code is
        the calls of its condition and body; their kernels are noted as looped.)"""
        self.fns.note_brief(self.fn.name, False)

    def brief_conv(self, inst, cg) -> bool:
        """Whether a convolution through a library gemm (OpenBLAS: no loop of LLVM's) leaves
        only brief loops here: its im2col copies (read and written) touch fewer than
        BRIEF_IM2COL_BYTES (and than a kernel's brief loops)."""
        if self.mcx.options.gemm == "emitted":
            return False                  # the gemm's own loops are LLVM's
        brief = BRIEF_LOOPED_WORK if self.fns.looped(self.comp) else parallel.MIN_WORK
        return 2 * conv_gemm.im2col_bytes(inst, cg) < min(brief, BRIEF_IM2COL_BYTES)

    def instruction(self, inst) -> None:
        match inst.opcode:
            case "while":
                self.while_(inst)
            case "call":
                self.call_comp(inst.attrs["to_apply"], [x for o in inst.operands for x in self.leaves(o)],
                               self.leaves(inst))
            case "conditional":
                self.conditional(inst)
            case "copy" if inst.shape.is_tuple:
                with self.timed(inst):
                    for dst, src in zip(self.leaves(inst), self.leaves(inst.operands[0])):
                        self.memcpy(self.ptr(dst), self.ptr(src), dst.size)
            case "copy-start" | "async-start":
                self.async_start(inst)
            case "select" if inst.shape.is_tuple:
                self.tuple_select(inst)
            case "dot" if (gemm := blas.plan(inst, self.mcx.options)) is not None:
                self.own_loops()
                with self.timed(inst, "dot:blas"):
                    blas.emit_call(self, inst, gemm)
            case "fusion" if (lib := library_fusion.plan(inst, self.mcx.options)) is not None:
                self.own_loops()
                library_fusion.emit(self, inst, lib)
            case "reduce" | "fusion" if (split := split_reduce.plan(inst, self.mcx.options)) is not None:
                self.own_loops()
                split_reduce.emit(self, inst, split)
            case "convolution" if (cg := conv_gemm.plan(inst, self.mcx.options)) is not None:
                if not self.brief_conv(inst, cg):
                    self.own_loops()
                with self.timed(inst, "conv:gemm"):
                    conv_gemm.emit(self, inst, cg)
            case _ if collective_calls.is_device_op(inst):
                self.own_loops()
                collective_calls.emit(self, inst)
            case _:
                if any(s.dtype.kind in ("token", "opaque") for s in inst.shape.leaves()) \
                        and inst.opcode not in ("fusion",):
                    raise unsupported(inst, f"opcode {inst.opcode} in the compiled back end")
                try:
                    kernels = self.fns.kernels
                    kernel = emit_kernel(self.mcx, inst) if kernels is None \
                        else kernels.get(self.mcx, inst, emit_kernel)
                except TypeUnsupported as e:
                    raise unsupported(inst, f"{inst.opcode} on {e} in the compiled back end") from None
                brief = BRIEF_LOOPED_WORK if self.fns.looped(self.comp) else parallel.MIN_WORK
                self.fns.note_brief(kernel.name, parallel.touched_bytes(inst) < brief)
                bufs = [x for o in inst.operands for x in self.leaves(o)] + self.leaves(inst)
                nwg = parallel.work_groups(inst) if data_parallel(inst) else 1
                if kernel.direct_args:
                    if nwg > 1:
                        raise AssertionError(f"inlinable kernel {kernel.name} in {nwg} work groups")
                    args = [self.ptr(x) for x in bufs] + [i64(0), i64(1)]
                    with self.timed(inst):
                        self.b.call(kernel, args)
                    per_ptr, per_call = CALLER_ARRAY_BYTES
                    self.fn.args_array_bytes = getattr(self.fn, "args_array_bytes", 0) \
                        + per_ptr * len(bufs) + per_call
                    return
                args = self.ptr_array(bufs)
                with self.timed(inst):
                    if nwg > 1:
                        run = parallel.parallel_function(self.mcx)
                        self.b.call(run, [kernel, args, i64(nwg)])
                    else:
                        self.b.call(kernel, [args, i64(0), i64(1)])

    def async_start(self, inst) -> None:
        """copy-start copies its operand into the destination element; async-start calls
        its computation on the operands into the results element (run synchronously, as
        the interpreter does); context elements are zeroed."""
        from .buffers import leaf_ranges
        mine = self.leaves(inst)
        ranges = leaf_ranges(inst.shape)
        ins = [x for o in inst.operands for x in self.leaves(o)]
        start, stop = ranges[0] if inst.opcode == "copy-start" else ranges[1]
        if inst.opcode == "copy-start":
            for dst, src in zip(mine[start:stop], ins):
                self.memcpy(self.ptr(dst), self.ptr(src), dst.size)
        else:
            self.call_comp(inst.attrs["calls"], ins, mine[start:stop])
        f = self.mcx.intrinsic("llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
        for a, z in ranges[2:]:
            for buf in mine[a:z]:
                if buf.size:
                    self.b.call(f, [self.ptr(buf), ir.Constant(I8, 0), i64(buf.size), ir.Constant(I1, 0)])

    def tuple_select(self, inst) -> None:
        """select(pred[], tuple, tuple): each leaf copied from the chosen operand."""
        b = self.b
        (pbuf,) = self.leaves(inst.operands[0])
        p = b.icmp_unsigned("!=", b.load(self.ptr(pbuf), typ=I8), ir.Constant(I8, 0))
        f = self.mcx.intrinsic("llvm.memmove.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
        for dst, t, e in zip(self.leaves(inst), self.leaves(inst.operands[1]),
                             self.leaves(inst.operands[2])):
            if dst.size:
                src = b.select(p, self.ptr(t), self.ptr(e))
                b.call(f, [self.ptr(dst), src, i64(dst.size), ir.Constant(I1, 0)])

    def while_(self, inst) -> None:
        """The state lives in two buffer sets A (the while's own) and B (scratch) used
        alternately: the loop runs body(A -> B) then body(B -> A), so an iteration copies
        nothing and swaps nothing (elements a body updates with an in-place DUS, or passes
        through, keep one buffer in both sets, hloc.backend.inplace); if the loop ends
        after a body(A -> B), B's elements are copied once into A."""
        b = self.b
        state = self.leaves(inst)
        scratch = self.plan.scratch[id(inst)]
        other, pred = scratch[:-1], scratch[-1]
        for dst, src in zip(state, self.leaves(inst.operands[0])):
            if dst.kind == "param":     # a donated parameter holding the state: maybe itself
                with b.if_then(b.icmp_unsigned("!=", self.ptr(dst), self.ptr(src))):
                    self.memcpy(self.ptr(dst), self.ptr(src), dst.size)
            else:
                self.memcpy(self.ptr(dst), self.ptr(src), dst.size)
        one_buffer = inplace_state(inst.attrs["body"])       # DUS in place / passed through
        other = [state[k] if k in one_buffer else buf for k, buf in enumerate(other)]
        set_a, set_b = self.ptr_array(state), self.ptr_array(other)
        callee_temp = self.callee_temp()
        cond_fn = self.fns.fns[id(inst.attrs["condition"])]
        body_fn = self.fns.fns[id(inst.attrs["body"])]
        pred_arr = self.ptr_array([pred])
        head = b.append_basic_block(f"{inst.name}.cond")
        body_a = b.append_basic_block(f"{inst.name}.body.a")
        body_b = b.append_basic_block(f"{inst.name}.body.b")
        end_b = b.append_basic_block(f"{inst.name}.end.b")
        end = b.append_basic_block(f"{inst.name}.end")

        def test(ptrs, yes, no):
            b.call(cond_fn, [ptrs, pred_arr, callee_temp])
            go = b.icmp_unsigned("!=", b.load(self.ptr(pred), typ=I8), ir.Constant(I8, 0))
            b.cbranch(collective_calls.keep_looping(self, go), yes, no)
        b.branch(head)
        b.position_at_end(head)
        test(set_a, body_a, end)
        b.position_at_end(body_a)
        b.call(body_fn, [set_a, set_b, callee_temp])
        test(set_b, body_b, end_b)
        b.position_at_end(body_b)
        b.call(body_fn, [set_b, set_a, callee_temp])
        b.branch(head)
        b.position_at_end(end_b)
        for k, (dst, src) in enumerate(zip(state, other)):
            if k not in one_buffer:
                self.memcpy(self.ptr(dst), self.ptr(src), dst.size)
        b.branch(end)
        b.position_at_end(end)

    def conditional(self, inst) -> None:
        b = self.b
        sel_inst = inst.operands[0]
        sel_buf = self.leaves(sel_inst)[0]
        dt = sel_inst.shape.dtype
        if "branch_computations" in inst.attrs:
            branches = list(inst.attrs["branch_computations"])
            v = b.load(self.ptr(sel_buf), typ=I32)
            n = len(branches)
            bad = b.or_(b.icmp_signed("<", v, i32(0)), b.icmp_signed(">=", v, i32(n)))
            v = b.select(bad, i32(n - 1), v)
            operands = inst.operands[1:]
        else:
            branches = [inst.attrs["true_computation"], inst.attrs["false_computation"]]
            raw = b.load(self.ptr(sel_buf), typ=I8)
            v = b.select(b.icmp_unsigned("!=", raw, ir.Constant(I8, 0)), i32(0),
                         i32(1))
            operands = inst.operands[1:]
        _ = dt
        end = b.append_basic_block(f"{inst.name}.end")
        blocks = [b.append_basic_block(f"{inst.name}.branch{k}") for k in range(len(branches))]
        sw = b.switch(v, blocks[-1])
        for k, blk in enumerate(blocks):
            sw.add_case(i32(k), blk)
        for k, (blk, comp) in enumerate(zip(blocks, branches)):
            b.position_at_end(blk)
            self.call_comp(comp, self.leaves(operands[k]), self.leaves(inst))
            b.branch(end)
        b.position_at_end(end)
