"""Emission state: the module being built (`ModuleContext`) and one kernel (`KernelBuilder`).

`ModuleContext` owns the llvmlite `ir.Module`, the numerics options, declarations of
intrinsics and of the runtime table's libm functions, and globals for constants.
`KernelBuilder` is the state of one function being emitted: its IRBuilder, the
fast-math flags in force, and the per-kernel value cache that turns a fusion into
composed generators (`generator(inst, env)`), each instruction evaluated once per index.
"""
from __future__ import annotations

import functools
import re
from contextlib import contextmanager

import numpy as np
from llvmlite import ir
from llvmlite.ir._utils import DuplicatedNameError, NameScope

from ..gc_pause import no_gc
from ..interp.core import unsupported
from . import irfast, runtime
from .loops import at_entry, i64, minor_to_major
from .registry import ELEMENTAL
from .registry import emitter as emitter_of
from .types import I8, PTR, TypeUnsupported, opaque, storage_type


def gc_paused(fn):
    """`fn` with CPython's cyclic collector off while it runs, then one collection of what
    it allocated. Emission builds a module of ~150,000 llvmlite objects, all live until it
    is printed and all cyclic garbage after (parent links); each collection during emission
    rescanned that growing heap (a quarter of IR generation on the BERT and grad(scan)
    steps, for 2-4 MiB less peak). The one collection at the end frees what cycles are
    left here, not at the first allocation of whatever runs next (LLVM's compile); the
    lowerer releases the module itself first (ModuleContext.release), so that is little."""
    @functools.wraps(fn)
    def paused(*args, **kwargs):
        with no_gc(collect_young=True):
            return fn(*args, **kwargs)
    return paused


class Options:
    """Code generation options (they are part of the object-cache key)."""

    def __init__(self, numerics: str = "xla-cpu", opt_level: int = 3, gemm: str = "blas",
                 profile: bool = False, donate=()):
        if numerics not in ("xla-cpu", "ieee"):
            raise ValueError(f"unknown numerics mode {numerics!r} (xla-cpu or ieee)")
        if gemm not in ("blas", "emitted", "cblas"):
            raise ValueError(f"unknown gemm {gemm!r} (blas, emitted or cblas)")
        self.numerics = numerics
        self.opt_level = opt_level
        self.gemm = gemm        # large dots: NumPy's OpenBLAS, hloc.backend.gemm (the AOT default),
        #                         or a linked LP64 cblas (AOT --blas)
        self.profile = profile      # per-kernel timers (hloc.backend.profile)
        # ENTRY parameter numbers the caller donates (hloc.backend.buffers, executable)
        self.donate = tuple(sorted({int(i) for i in donate}))

    @property
    def xla(self) -> bool:
        return self.numerics == "xla-cpu"

    def key(self) -> str:
        return (f"numerics={self.numerics};O{self.opt_level}"
                + (f";gemm={self.gemm}" if self.gemm != "blas" else "")
                + (";profile" if self.profile else "")
                + (";donate=" + ",".join(map(str, self.donate)) if self.donate else ""))


# Names hloc gives its own symbols in a module, whatever the dump holds: the entry and
# the globals found by name after loading (jit.ENTRY, parallel.NTHREADS, profile.GLOBAL,
# collective_calls.ABORT, aot.lower.CTX), the module's call of the thread runtime
# (parallel.py, aot.lower), and helpers shared by the kernels that need them, found by
# name when emitted again (the GEMM functions and constants of gemm.py / blas.py,
# narrow_floats' tables). The runtime table's symbols (runtime.ALLOWED), the C library's
# that the thread runtime emitted into an AOT library declares (runtime.RUNTIME_LIBC)
# and intrinsics (llvm.*) are reserved too. A name from the dump never takes one
# (`unique`), so it can neither collide with nor stand in for it; hloc's own code takes
# one through `fixed`, which refuses a name not reserved here.
RESERVED = frozenset({"hloc_entry", "hloc_nthreads", "hloc_profile", "hloc_device_abort",
                      "hloc_aot_ctx", "hloc.parallel"})
_RESERVED_FAMILY = re.compile(r"hloc\.(cblas|gemm)\.\w+(\.kernel)?|gemm\.(one|zero)\.\w+"
                              r"|\w+\.(decode|bounds|codes)")


def reserved(name: str) -> bool:
    """Whether `name` is hloc's own (RESERVED, the families above, the runtime table's,
    an intrinsic's)."""
    return (name in RESERVED or name in runtime.ALLOWED or name in runtime.RUNTIME_LIBC
            or name.startswith("llvm.")
            or _RESERVED_FAMILY.fullmatch(name) is not None)


class ModuleContext:
    def __init__(self, name: str, options: Options, triple: str = "", data_layout: str = ""):
        self.module = ir.Module(name=name)
        if triple:
            self.module.triple = triple
        if data_layout:
            self.module.data_layout = data_layout
        self.options = options
        self.features = ""          # LLVM target features ("+avx512f,..."), set by the lowerer
        self._decls: dict[str, ir.Function] = {}
        self._consts: dict[tuple, ir.GlobalVariable] = {}
        self._names: set[str] = set()
        self._builders: list = []       # every KernelBuilder, for release()
        from .profile import Profiler
        self.profiler = Profiler(self) if options.profile else None

    def unique(self, name: str) -> str:
        base = "".join(c if c.isalnum() or c in "._" else "_" for c in name) or "f"
        if base.startswith("llvm."):        # no suffix makes it anything but an intrinsic's
            base = "_" + base
        out, n = base, 1
        # never a reserved name: a kernel called `exp` (or `memcpy`, `hloc_entry`) would
        # collide with, or stand in for, the symbol of that name
        while out in self._names or reserved(out):
            n += 1
            out = f"{base}.{n}"
        self._names.add(out)
        return out

    def reserve(self, names) -> None:
        """Keep `names` from every later `unique` in this module: symbols defined beside
        it that it must not define (an AOT library's entry points and glue, hloc.aot.lower)."""
        self._names.update(names)

    @staticmethod
    def fixed(name: str) -> str:
        """`name`, for hloc's own symbol of that name; it must be reserved (RESERVED)."""
        if not reserved(name):
            raise ValueError(f"{name!r} is not a reserved name (context.RESERVED)")
        return name

    def release(self) -> None:
        """Break the emitted module's reference cycles once its text is printed, so that
        reference counting frees it: llvmlite's parent links (module <-> globals,
        function <-> blocks and arguments, block <-> instructions, loop phis) and the
        builders' generator closures. Traced by the cyclic collector instead, the
        ~75,000 objects of grad(scan)'s module took twice as long. The module is empty
        after this; whatever cycle is left is still the collector's."""
        for kb in self._builders:
            kb.release()
        self._builders.clear()
        self.profiler = None                # it refers back to this context
        phi = ir.PhiInstr
        for g in self.module.globals.values():
            if isinstance(g, ir.Function):
                for blk in g.blocks:
                    for i in blk.instructions:
                        if type(i) is not phi:      # phis come first in a block
                            break
                        i.incomings = []
                    blk.instructions = []
                    blk.terminator = None
                g.blocks = []
                g.args = ()
                g.return_value = None
        self.module.globals.clear()

    def intrinsic(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        fn = self._decls.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
            self._decls[name] = fn
        return fn

    def libm(self, name: str, ret: ir.Type, args: list) -> ir.Function:
        """A libm function from the runtime table (refused if not on the allowlist)."""
        runtime.require(name)
        return self.intrinsic(name, ret, args)

    def constant_global(self, inst, leaf: int = 0) -> ir.GlobalVariable:
        """Leaf `leaf` of the constant (the array itself unless tuple-shaped): its bytes in
        its physical layout, as a private global."""
        g = self._consts.get((id(inst), leaf))
        if g is None:
            shape, value = inst.shape.leaves()[leaf], inst.literal.value
            if inst.shape.is_tuple:
                value = _flat_leaves(value)[leaf]
            arr = np.asarray(value, dtype=shape.dtype.np)
            phys = np.ascontiguousarray(arr.transpose(tuple(reversed(minor_to_major(shape)))))
            data = bytearray(phys.tobytes())
            ty = ir.ArrayType(I8, max(len(data), 1))
            g = ir.GlobalVariable(self.module, ty, name=self.unique("const." + inst.name))
            g.initializer = ir.Constant(ty, data or bytearray(1))
            g.global_constant = True
            g.linkage = "private"
            g.align = 64
            self._consts[(id(inst), leaf)] = g
        return g


def _flat_leaves(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat_leaves(v)]
    return [value]


class _Names(NameScope):
    """llvmlite's NameScope of a function with `register` in one call: the same names in
    the same order (the '.N' of every unnamed instruction and the '.N' suffixes of
    repeated names, from the same counters), without the two method calls per name that
    were a tenth of IR generation."""

    def register(self, name, deduplicate=False):
        used = self._useset
        if name in used:
            if not deduplicate:
                raise DuplicatedNameError(name)
            base, counters = name, self._basenamemap
            i = counters[base]
            while name in used:
                i += 1
                name = f"{base}.{i}"
            counters[base] = i
        used.add(name)
        return name


def fast_names(fn: ir.Function) -> ir.Function:
    """`fn` with its name scope registering through `_Names`; the scope's state (the
    arguments' names) is shared, so blocks made before this still name consistently."""
    old = fn.scope
    if type(old) is NameScope:
        new = _Names()
        new._useset, new._basenamemap = old._useset, old._basenamemap
        fn.scope = new
    return fn


class KernelBuilder:
    """One function being emitted: builder, fast-math flags, value cache."""

    def __init__(self, mcx: ModuleContext, fn: ir.Function):
        self.mcx = mcx
        self.fn = fast_names(fn)
        entry = fn.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self.cache: dict = {}
        self.flags: tuple = ("contract",) if mcx.options.xla else ()
        self._gens: dict = {}
        self.fence_outputs = False      # kernels.py: results fenced (inlinable kernel)
        self.overrides: dict = {}       # id(inst) -> generator used instead of its emitter
        self.reduce_split: dict = {}    # id(reduce) -> (wg, nwg): its chunk (split_reduce)
        self.row_divide = None          # row_divide.RowDivide while a row group's row loop is emitted
        self.bounds = None              # bounds.Bounds of the kernel (member) whose loop is emitted
        self.lanes = None               # row_vector's width while a vector row group is emitted
        self.hoist = None               # row_vector.vector_loop's open block before the loop
        mcx._builders.append(self)

    def release(self) -> None:
        """Drop the generators and cached values (closures over this builder)."""
        self.cache.clear()
        self._gens.clear()
        self.overrides.clear()
        self.reduce_split.clear()
        self.row_divide = None
        self.bounds = None
        self.lanes = None
        self.hoist = None

    @property
    def options(self) -> Options:
        return self.mcx.options

    @contextmanager
    def reassociating(self):
        """FP ops emitted inside may be reassociated (xla-cpu reductions)."""
        old = self.flags
        if self.options.xla:
            self.flags = tuple(sorted(set(old) | {"reassoc", "contract"}))
        try:
            yield
        finally:
            self.flags = old

    def fenced(self, v):
        """`v` through llvm.arithmetic.fence when this kernel's results are fenced (a
        float stored by a kernel that may be inlined: no FP folding across kernels)."""
        t = getattr(v, "type", None)
        if not self.fence_outputs or not isinstance(t, (ir.FloatType, ir.DoubleType)):
            return v
        name = "llvm.arithmetic.fence." + ("f32" if isinstance(t, ir.FloatType) else "f64")
        return self.b.call(self.mcx.intrinsic(name, t, [t]), [v])

    def alloca_entry(self, ty: ir.Type, name: str = "") -> ir.Value:
        """An alloca in the entry block (so mem2reg promotes it)."""
        b = self.b
        with at_entry(b, self.fn):
            return opaque(b, b.alloca(ty, name=name))

    def generator(self, inst, env):
        """The element generator of `inst` inside a computation whose parameters are
        generated by `env[parameter_number]`; memoised per instruction and index."""
        key = (id(inst), id(env))
        g = self._gens.get(key)
        if g is not None:
            return g
        if id(inst) in self.overrides:
            g = self.overrides[id(inst)]
        elif inst.opcode == "parameter":
            g = env[inst.parameter_number]
        else:
            emitter = emitter_of(inst.opdef)
            if emitter is None or emitter.kind != ELEMENTAL:
                why = inst.opdef.unsupported
                raise unsupported(inst, f"opcode {inst.opcode} in the compiled back end"
                                        + (f" ({why})" if why else "")
                                        + (" inside a fusion" if emitter is not None else ""))
            for leaf in inst.shape.leaves():
                if leaf.dtype.is_array:
                    try:
                        storage_type(leaf.dtype)
                    except TypeUnsupported as e:
                        raise unsupported(inst, f"{inst.opcode} on {e} in the compiled back end") from None
            ops = [self.generator(o, env) for o in inst.operands]
            fn, cache = emitter.fn, self.cache

            def g(index, _inst=inst, _ops=ops, _fn=fn):
                k = (id(_inst), id(index))
                hit = cache.get(k)
                if hit is not None:
                    return hit[0]
                v = _fn(self, _inst, _ops, index)
                cache[k] = (v, index)
                return v
        self._gens[key] = g
        return g


def ptr_arg(b: ir.IRBuilder, array: ir.Value, k: int, name: str = "") -> ir.Value:
    """Pointer number k of an array of pointers."""
    slot = irfast.gep(b, array, [i64(k)], PTR)
    return irfast.load(b, slot, PTR, name)
