"""The `fusion` and `fusion-wrapper` passes (XLA:CPU's CpuInstructionFusion, FusionWrapper).

- XLA's own cases (xla/service/cpu/cpu_instruction_fusion_test.cc): which opcodes end up
  in the root fusion, its kind, and the modules that must stay unchanged.
- XLA's partition as the oracle: every testdata/dumps/*.after_optimizations.hlo is
  "unfused" (each kLoop/kOutput fusion inlined, producers XLA had duplicated merged
  again, copies from XLA's later copy insertion dropped) and fused again; the fusions
  (name stem, kind, fused opcodes) and the unfused instructions must be XLA's.
- Values: fusion (and fusion-wrapper) alone on every before_optimizations dump with
  inputs leaves every interpreter output bit for bit identical, the verifier accepts the
  result, its text reparses to the same text, and `changed` is honest.
"""
from __future__ import annotations

import collections
import re
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.diagnostics import UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz
from hloc.ir.module import Instruction
from hloc.passes import PassContext
from hloc.passes.fusion import InstructionFusion
from hloc.ir.graph import post_order
from hloc.syntax.literal_printer import literal_text
from hloc.passes.fusion import FusionWrapper
from hloc.runner import run_module
from hloc.verifier import collect_errors

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"


def fuse(text: str, wrap: bool = False):
    module = hloc.parse(text)
    changed = InstructionFusion().run(module, PassContext(check_no_change=True))
    if wrap:
        changed |= FusionWrapper().run(module, PassContext())
    assert not collect_errors(module), collect_errors(module)[0].message
    return module, changed


def root_fusion_opcodes(module, kind="kLoop") -> list[str]:
    root = module.entry.root
    assert root.opcode == "fusion", hloc.to_text(module)
    assert root.attrs["kind"] == kind
    return sorted(i.opcode for i in root.attrs["calls"].instructions)


def entry(body: str, params: str = "") -> str:
    return f"HloModule test\n\nENTRY main {{\n{body}\n}}\n"


# ---------------------------------------------------------------------------
# cpu_instruction_fusion_test.cc: OpcodeFusionTest

OPCODE_CASES = {
    "Exponential_Reshape_Negate": ("""
  p = f32[1,4] parameter(0)
  e = f32[1,4] exponential(p)
  r = f32[4] reshape(e)
  ROOT n = f32[4] negate(r)""", ["exponential", "negate", "parameter", "reshape"]),
    "Broadcast_Reshape_DynamicSlice_Tanh": ("""
  p = f32[8] parameter(0)
  s1 = s32[] parameter(1)
  s2 = s32[] parameter(2)
  b = f32[1,8,8] broadcast(p), dimensions={1}
  r = f32[8,8] reshape(b)
  d = f32[4,4] dynamic-slice(r, s1, s2), dynamic_slice_sizes={4,4}
  ROOT t = f32[4,4] tanh(d)""", ["broadcast", "dynamic-slice", "parameter", "parameter",
                                 "parameter", "reshape", "tanh"]),
    "Broadcast_Negate": ("""
  p = f32[8] parameter(0)
  b = f32[8,8] broadcast(p), dimensions={1}
  ROOT n = f32[8,8] negate(b)""", ["broadcast", "negate", "parameter"]),
    "DynamicSlice_Negate": ("""
  p = f32[4] parameter(0)
  s = s32[] parameter(1)
  d = f32[2] dynamic-slice(p, s), dynamic_slice_sizes={2}
  ROOT n = f32[2] negate(d)""", ["dynamic-slice", "negate", "parameter", "parameter"]),
    "Exponential_Negate": ("""
  p = f32[4] parameter(0)
  e = f32[4] exponential(p)
  ROOT n = f32[4] negate(e)""", ["exponential", "negate", "parameter"]),
    "Reshape_Negate": ("""
  p = f32[4,4] parameter(0)
  r = f32[16] reshape(p)
  ROOT n = f32[16] negate(r)""", ["negate", "parameter", "reshape"]),
    "Reverse_Negate": ("""
  p = f32[8] parameter(0)
  r = f32[8] reverse(p), dimensions={0}
  ROOT n = f32[8] negate(r)""", ["negate", "parameter", "reverse"]),
    "Slice_Negate": ("""
  p = f32[4] parameter(0)
  s = f32[2] slice(p), slice={[0:4:2]}
  ROOT n = f32[2] negate(s)""", ["negate", "parameter", "slice"]),
    "Exponential_Transpose_Negate": ("""
  p = f32[3,4] parameter(0)
  e = f32[3,4] exponential(p)
  t = f32[4,3] transpose(e), dimensions={1,0}
  ROOT n = f32[4,3] negate(t)""", ["exponential", "negate", "parameter", "transpose"]),
    "DynamicSliceWithDynamicUpdateSlice": ("""
  from = f32[10,100,1000] parameter(0)
  s1 = u32[] parameter(1)
  s2 = u32[] parameter(2)
  s3 = u32[] parameter(3)
  to = f32[10,100,1000] parameter(4)
  u1 = u32[] parameter(5)
  u2 = u32[] parameter(6)
  u3 = u32[] parameter(7)
  slice = f32[10,1,1000] dynamic-slice(from, s1, s2, s3), dynamic_slice_sizes={10,1,1000}
  ROOT dus = f32[10,100,1000] dynamic-update-slice(to, slice, u1, u2, u3)""",
                                           ["dynamic-slice", "dynamic-update-slice"]
                                           + ["parameter"] * 8),
    "MessOfFusibleNodes": ("""
  loop_idx = s32[] parameter(0)
  param1 = s32[] parameter(1)
  param2 = s32[4] parameter(2)
  ds = s32[1] dynamic-slice(param2, loop_idx), dynamic_slice_sizes={1}
  idx_choice = s32[] reshape(ds)
  zero = s32[] constant(0)
  param3 = f32[100,100,10,100,50] parameter(3)
  slice = f32[1,100,10,100,50] dynamic-slice(param3, idx_choice, zero, zero, zero, zero), dynamic_slice_sizes={1,100,10,100,50}
  param4 = f32[4,100,10,100,50] parameter(4)
  ROOT dus = f32[4,100,10,100,50] dynamic-update-slice(param4, slice, loop_idx, param1, param1, param1, param1)""",
                           ["constant", "dynamic-slice", "dynamic-slice", "dynamic-update-slice",
                            "reshape"] + ["parameter"] * 5),
    "ScalarConstantInFusion": ("""
  a = f32[1] parameter(0)
  b = f32[1] constant({1})
  a_plus_b = f32[1] add(a, b)
  c = f32[1] constant({2})
  ROOT result = f32[1] add(a_plus_b, c)""", ["add", "add", "constant", "constant", "parameter"]),
    # The newer XLA:CPU (the one in the testdata dumps) keeps every non-scalar constant
    # out of fusions: BigConstantNotInFusion's expectation, for a small one too.
    "SmallConstantNotInFusion": ("""
  a = f32[10,10]{1,0} parameter(0)
  b = f32[10,10]{1,0} constant({...})
  a_plus_b = f32[10,10]{1,0} add(a, b)
  c = f32[10,10]{1,0} constant({...})
  ROOT result = f32[10,10]{1,0} add(a_plus_b, c)""", ["add", "add", "parameter", "parameter",
                                                     "parameter"]),
}


@pytest.mark.parametrize("name", sorted(OPCODE_CASES))
def test_opcode_fusion(name):
    body, expected = OPCODE_CASES[name]
    module, changed = fuse(entry(body))
    assert changed
    assert root_fusion_opcodes(module) == sorted(expected)


MAP_COMPUTATIONS = """HloModule test

add_one {
  arg0 = f32[] parameter(0)
  one = f32[] constant(1)
  ROOT add = f32[] add(arg0, one)
}

max {
  arg0 = f32[] parameter(0)
  arg1 = f32[] parameter(1)
  ROOT m = f32[] maximum(arg0, arg1)
}

ENTRY main {
  p0 = f32[3,4] parameter(0)
  p1 = f32[3,4] parameter(1)
  %s
}
"""


def test_unary_and_binary_map_of_exps():
    module, _ = fuse(MAP_COMPUTATIONS % """e = f32[3,4] exponential(p0)
  ROOT m = f32[3,4] map(e), dimensions={0,1}, to_apply=add_one""")
    assert root_fusion_opcodes(module) == ["exponential", "map", "parameter"]
    module, _ = fuse(MAP_COMPUTATIONS % """e0 = f32[3,4] exponential(p0)
  e1 = f32[3,4] exponential(p1)
  ROOT m = f32[3,4] map(e0, e1), dimensions={0,1}, to_apply=max""")
    assert root_fusion_opcodes(module) == sorted(["exponential", "exponential", "map",
                                                  "parameter", "parameter"])


def test_big_constant_not_in_fusion():
    module, _ = fuse(entry("""
  a = f32[1000,1000]{1,0} parameter(0)
  b = f32[1000,1000]{1,0} constant({...})
  a_plus_b = f32[1000,1000]{1,0} add(a, b)
  c = f32[1000,1000]{1,0} constant({...})
  ROOT result = f32[1000,1000]{1,0} add(a_plus_b, c)"""))
    assert root_fusion_opcodes(module) == ["add", "add", "parameter", "parameter", "parameter"]


# DotOperationFusion_* and DotAddOutputFusion_*

def _dot(m, k, n, extra_use=False):
    lhs = f"f32[{k}]" if m == 1 else f"f32[{m},{k}]"
    rhs = f"f32[{k}]" if n == 1 else f"f32[{k},{n}]"
    out = f"f32[{n}]" if m == 1 else f"f32[{m}]" if n == 1 else f"f32[{m},{n}]"
    lc = 0 if m == 1 else 1
    text = f"""
  p0 = {lhs} parameter(0)
  p1 = {rhs} parameter(1)
  p2 = {out} parameter(2)
  dot = {out} dot(p0, p1), lhs_contracting_dims={{{lc}}}, rhs_contracting_dims={{0}}"""
    if extra_use:
        text += f"""
  token = token[] after-all()
  outfeed = token[] outfeed(dot, token), outfeed_config="no_config"
  ROOT add = {out} add(dot, p2), control-predecessors={{outfeed}}"""
    else:
        text += f"\n  ROOT add = {out} add(dot, p2)"
    return entry(text)


@pytest.mark.parametrize("m,k,n", [(1, 50, 19), (19, 50, 1)])
def test_dot_add_output_fusion(m, k, n):
    module, _ = fuse(_dot(m, k, n))
    assert root_fusion_opcodes(module, "kOutput") == ["add", "dot", "parameter", "parameter",
                                                      "parameter"]
    assert module.entry.root.name == "dot_add_fusion"


@pytest.mark.parametrize("text", [
    _dot(19, 50, 19),
    _dot(19, 50, 1, extra_use=True),
    entry("""
  a = f32[50,60]{1,0} parameter(0)
  b = f32[60,1]{1,0} parameter(1)
  c = f32[50,1]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT d = f32[50,1]{1,0} add(c, c)"""),                       # DontOutputFuseDuplicateOperands
    entry("""
  arg0 = f32[32768] parameter(0)
  arg1 = f32[32768,256] parameter(1)
  exp1 = f32[32768,256] exponential(arg1)
  ROOT dot = f32[256] dot(arg0, exp1), lhs_contracting_dims={0}, rhs_contracting_dims={0}"""),
    entry("""
  arg0 = f32[2,256] parameter(0)
  arg1 = f32[256,1024] parameter(1)
  exp1 = f32[256,1024] exponential(arg1)
  ROOT dot = f32[2,1024] dot(arg0, exp1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""),
], ids=["19x50x19", "19x50x1_multi_use", "duplicate_operands", "TooLarge", "ElementReuse"])
def test_dot_not_fused(text):
    module, changed = fuse(text)
    assert not changed
    assert module.entry.root.opcode != "fusion"


@pytest.mark.parametrize("middle", ["", "bitcast", "reshape"])
def test_dot_operation_fusion(middle):
    if middle:
        body = f"""
  arg0 = f32[2,512,2,128] parameter(0)
  arg1 = f32[256] parameter(1)
  exp0 = f32[2,512,2,128] exponential(arg0)
  mid = f32[1024,256] {middle}(exp0)
  ROOT dot = f32[1024] dot(mid, arg1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"""
    else:
        body = """
  arg0 = f32[1024,256] parameter(0)
  arg1 = f32[256] parameter(1)
  exp0 = f32[1024,256] exponential(arg0)
  ROOT dot = f32[1024] dot(exp0, arg1), lhs_contracting_dims={1}, rhs_contracting_dims={0}"""
    module, changed = fuse(entry(body))
    assert changed and module.entry.root.opcode == "fusion"
    assert "dot" in root_fusion_opcodes(module)


GATHERS = {
    "FusedTensorFlowGatherV2": ("s32[3,3]", "s32[2]", "s32[3,2]", "offset_dims={0}, "
                                "collapsed_slice_dims={1}, start_index_map={1}, "
                                "index_vector_dim=1, slice_sizes={3, 1}"),
    "FusedTensorFlowGatherMultipleBatchDims": ("s32[3,3]", "s32[2,2]", "s32[2,3,2]",
                                               "offset_dims={1}, collapsed_slice_dims={1}, "
                                               "start_index_map={1}, index_vector_dim=2, "
                                               "slice_sizes={3, 1}"),
    "FusedTensorFlowGatherNdMultipleBatchDims": ("s32[3,3]", "s32[2,2,2]", "s32[2,2]",
                                                 "offset_dims={}, collapsed_slice_dims={0,1}, "
                                                 "start_index_map={0,1}, index_vector_dim=2, "
                                                 "slice_sizes={1, 1}"),
    "FusedTensorFlowGatherNd_0": ("s32[3,3,2]", "s32[2,2]", "s32[2,2]",
                                  "offset_dims={1}, collapsed_slice_dims={0,1}, "
                                  "start_index_map={0,1}, index_vector_dim=1, "
                                  "slice_sizes={1,1,2}"),
    "FusedTensorFlowGatherNd_1": ("s32[3,3,2]", "s32[2,2]", "s32[2,2]",
                                  "offset_dims={1}, collapsed_slice_dims={0,1}, "
                                  "start_index_map={0,1}, index_vector_dim=0, "
                                  "slice_sizes={1,1,2}"),
    "FusedDynamicSlice": ("s32[3,3]", "s32[2]", "s32[1,1]", "offset_dims={0,1}, "
                          "collapsed_slice_dims={}, start_index_map={0,1}, "
                          "index_vector_dim=0, slice_sizes={1,1}"),
    "FusedBatchDynamicSlice": ("s32[3,3]", "s32[2,2]", "s32[2,1,1]", "offset_dims={1,2}, "
                               "collapsed_slice_dims={}, start_index_map={0,1}, "
                               "index_vector_dim=0, slice_sizes={1,1}"),
}


@pytest.mark.parametrize("name", sorted(GATHERS))
def test_gather_loop_fusion(name):
    operand, indices, out, attrs = GATHERS[name]
    module, _ = fuse(entry(f"""
  operand = {operand} parameter(0)
  indices = {indices} parameter(1)
  gather = {out} gather(operand, indices), {attrs}
  one = s32[] constant(1)
  one_broadcasted = {out} broadcast(one), dimensions={{}}
  ROOT result = {out} add(gather, one_broadcasted)"""))
    assert root_fusion_opcodes(module) == sorted(["gather", "add", "broadcast", "constant",
                                                  "parameter", "parameter"])


@pytest.mark.parametrize("dims,out", [("{0}", "f32[60]{0}"), ("{0,1}", "f32[]")],
                         ids=["FuseReduceMajor", "FuseReduceMinor"])
def test_fuse_reduce(dims, out):
    module, changed = fuse(f"""HloModule module
add {{
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT add = f32[] add(lhs, rhs)
}}
ENTRY main {{
  a = f32[50,60]{{1,0}} parameter(0)
  b = f32[50,60]{{1,0}} parameter(1)
  c = f32[50,60]{{1,0}} add(a, b)
  init = f32[] constant(0)
  ROOT r = {out} reduce(c, init), dimensions={dims}, to_apply=add
}}""")
    assert changed
    assert root_fusion_opcodes(module) == ["add", "constant", "parameter", "parameter", "reduce"]
    assert module.entry.root.name == "add_reduce_fusion"


SCALAR_BODY = """
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  %maximum.1 = f32[] maximum(f32[] %lhs, f32[] %rhs)
  %convert.8 = bf16[] convert(f32[] %maximum.1)
  ROOT %convert.9 = f32[] convert(bf16[] %convert.8)"""


@pytest.mark.parametrize("text", [
    # SkipScatterComputations
    f"""HloModule module
%scatter_max (param0: f32[], param1: f32[]) -> f32[] {{{SCALAR_BODY}
}}
ENTRY %main (arg0: f32[13,5,10,62], arg1: s32[3,1], arg2: f32[3,1,5,10,62]) -> f32[13,5,10,62] {{
  %arg0 = f32[13,5,10,62]{{3,2,1,0}} parameter(0)
  %arg1 = s32[3,1]{{1,0}} parameter(1)
  %arg2 = f32[3,1,5,10,62]{{4,3,2,1,0}} parameter(2)
  ROOT %scatter.2 = f32[13,5,10,62]{{3,2,1,0}} scatter(f32[13,5,10,62]{{3,2,1,0}} %arg0, s32[3,1]{{1,0}} %arg1, f32[3,1,5,10,62]{{4,3,2,1,0}} %arg2), update_window_dims={{1,2,3,4}}, inserted_window_dims={{}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=%scatter_max
}}""",
    # SkipReduceComputationsIfFusionEmitters
    f"""HloModule module
%reduce_max (param0: f32[], param1: f32[]) -> f32[] {{{SCALAR_BODY}
}}
ENTRY %main (arg0: f32[13,5,10,62]) -> f32[13,5,10] {{
  %arg0 = f32[13,5,10,62]{{3,2,1,0}} parameter(0)
  %init = f32[] constant(0)
  ROOT %reduce = f32[13,5,10]{{2,1,0}} reduce(%arg0, %init), dimensions={{3}}, to_apply=%reduce_max
}}""",
    # SkipComputationsAttachedToCustomCalls
    """HloModule module
%custom_computation (param_0: f32[10,10], param_1: f32[10,10]) -> f32[10,10] {
  %param_0 = f32[10,10]{1,0} parameter(0)
  %param_1 = f32[10,10]{1,0} parameter(1)
  %add = f32[10,10]{1,0} add(f32[10,10]{1,0} %param_0, f32[10,10]{1,0} %param_1)
  %subtract = f32[10,10]{1,0} subtract(f32[10,10]{1,0} %param_0, f32[10,10]{1,0} %param_1)
  ROOT %multiply = f32[10,10]{1,0} multiply(f32[10,10]{1,0} %add, f32[10,10]{1,0} %subtract)
}
ENTRY %main (Arg_0: f32[10,10], Arg_1: f32[10,10]) -> f32[10,10] {
  %Arg_0 = f32[10,10]{1,0} parameter(0)
  %Arg_1 = f32[10,10]{1,0} parameter(1)
  ROOT %custom_call = f32[10,10]{1,0} custom-call(f32[10,10]{1,0} %Arg_0, f32[10,10]{1,0} %Arg_1), custom_call_target="target", called_computations={%custom_computation}
}""",
], ids=["scatter", "reduce", "custom-call"])
def test_scalar_bodies_are_not_fused(text):
    module, changed = fuse(text)
    assert not changed
    assert hloc.to_text(module) == hloc.to_text(hloc.parse(text))


def test_wrapper_names_and_kinds():
    module, _ = fuse(entry("""
  p = f32[4,8] parameter(0)
  e = f32[4,8] exponential(p)
  n = f32[4,8] negate(e)
  m = f32[4,8] multiply(e, p)
  t = f32[8,4] transpose(p), dimensions={1,0}
  ROOT out = (f32[4,8], f32[4,8], f32[8,4]) tuple(n, m, t)"""), wrap=True)
    kinds = {i.name: i.opcode for i in module.entry.instructions}
    assert kinds["wrapped_exponential"] == "fusion" and kinds["t"] == "transpose"
    names = [c.name for c in module.computations]
    assert names == ["wrapped_exponential_computation", "wrapped_negate_computation",
                     "wrapped_multiply_computation", "main"]


# ---------------------------------------------------------------------------
# XLA's partition of the real dumps as the oracle

def _fusion_callers(module) -> set[int]:
    return {id(i.attrs["calls"]) for c in module.computations for i in c.instructions
            if i.opcode == "fusion"}


def unfuse(module) -> None:
    """Undo XLA:CPU's fusion: inline kLoop/kOutput fusions, merge what XLA duplicated,
    and drop the copies copy insertion added after fusion."""
    fused = _fusion_callers(module)
    for comp in module.computations:
        if id(comp) in fused:
            continue
        for inst in list(comp.instructions):
            if inst.opcode == "copy" or inst.name.startswith("wrapped_copy"):
                inst.replace_all_uses_with(inst.operands[0])
                comp.remove_instruction(inst)
    for comp in list(module.computations):
        if id(comp) in fused:
            continue
        for inst in list(comp.instructions):
            if inst.opcode != "fusion" or inst.attrs["kind"] == "kCustom":
                continue
            body, env = inst.attrs["calls"], {}
            for f in post_order(body):
                if f.opcode == "parameter":
                    env[id(f)] = inst.operands[f.parameter_number]
                    continue
                c = Instruction(f.name, f.opdef, f.shape, [env[id(o)] for o in f.operands],
                                dict(f.attrs))
                c.literal = f.literal
                comp.add_instruction(c, before=inst)
                env[id(f)] = c
            inst.replace_all_uses_with(env[id(body.root)])
            comp.remove_instruction(inst)
            module.remove_computation(body)
    for comp in module.computations:
        if id(comp) in fused:
            continue
        seen = {}
        for inst in post_order(comp):
            if inst.opcode in ("parameter", "rng", "custom-call", "while", "conditional",
                               "call", "fusion"):
                continue
            key = (inst.opcode, str(inst.shape), tuple(id(o) for o in inst.operands),
                   literal_text(inst.literal) if inst.literal is not None else None,
                   repr(sorted((k, repr(v)) for k, v in inst.attrs.items() if k != "metadata")))
            if key in seen:
                inst.replace_all_uses_with(seen[key])
                if comp.root is not inst:
                    comp.remove_instruction(inst)
            else:
                seen[key] = inst
    module._uniquer = None


def partition(module) -> collections.Counter:
    out: collections.Counter = collections.Counter()
    stack, seen = [module.entry], set()
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        for i in comp.instructions:
            if i.opcode in ("while", "conditional", "call"):
                stack.extend(i.called_computations())
            if i.opcode == "fusion":
                ops = sorted(x.opcode for x in i.attrs["calls"].instructions
                             if x.opcode != "parameter")
                if not set(ops) <= {"copy", "bitcast"}:
                    stem = re.sub(r"\.\d+$", "", i.name)
                    out[("fusion", i.attrs["kind"], stem, tuple(ops))] += 1
            elif i.opcode not in ("parameter", "constant", "tuple", "get-tuple-element",
                                  "bitcast", "copy"):
                out[("unfused", i.opcode)] += 1
    return out


AFTER = sorted(p.name.split(".")[0] for p in DUMPS.glob("*.after_optimizations.hlo"))
# The first producer fused into one select differs: the unfused module's post order is
# not exactly XLA's pre-fusion order there (same fusion, another name).
NAME_ONLY = {"linalg_qr_eigh"}


@pytest.mark.parametrize("prog", AFTER or [pytest.param(None, marks=pytest.mark.skip)])
def test_refusing_xla_dumps_gives_xla_partition(prog):
    module = hloc.parse_file(DUMPS / f"{prog}.after_optimizations.hlo")
    want = partition(module)
    unfuse(module)
    InstructionFusion().run(module, PassContext())
    FusionWrapper().run(module, PassContext())
    got = partition(module)
    if prog in NAME_ONLY:
        def strip(c):
            return collections.Counter({k[:2] + k[3:]: v for k, v in c.items()})
        want, got = strip(want), strip(got)
    assert got == want, {k: (want[k], got[k]) for k in set(want) | set(got)
                         if want[k] != got[k]}


# ---------------------------------------------------------------------------
# Values and validity on the before_optimizations dumps

BEFORE = sorted(p.name.split(".")[0] for p in DUMPS.glob("*.before_optimizations.hlo"))


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) and \
        a.dtype.kind not in "biu" else a


@pytest.mark.parametrize("prog", BEFORE or [pytest.param(None, marks=pytest.mark.skip)])
def test_fusion_keeps_values_bit_for_bit(prog):
    path = DUMPS / f"{prog}.before_optimizations.hlo"
    module = hloc.parse_file(path)
    fused = hloc.parse_file(path)
    assert InstructionFusion().run(fused, PassContext(check_no_change=True)) == \
        any(i.opcode == "fusion" for c in fused.computations for i in c.instructions)
    FusionWrapper().run(fused, PassContext(check_no_change=True))
    errors = collect_errors(fused)
    assert not errors, errors[0].message
    text = hloc.to_text(fused)
    assert hloc.to_text(hloc.parse(text)) == text
    npz = DUMPS / f"{prog}.npz"
    if not npz.exists():
        return
    d = load_npz(npz)
    inputs = [d[f"in{i}"] for i in range(sum(1 for k in d if re.fullmatch(r"in\d+", k)))]
    try:
        want = run_module(module, bind_arguments(module, inputs)).value
    except UnsupportedError as e:
        pytest.skip(e.message)
    got = run_module(fused, bind_arguments(fused, inputs)).value
    shape = module.entry.root.shape
    for i, (a, b) in enumerate(zip(flatten_leaves(want, shape), flatten_leaves(got, shape))):
        assert a.dtype == b.dtype and a.shape == b.shape, f"out{i}"
        assert np.array_equal(_bits(a), _bits(b)), f"out{i} differs after fusion"


def _wide_tuple_module(width: int) -> str:
    """A chain of adds whose every link, and some side values, feed one root tuple."""
    lines = ["HloModule wide", "", "ENTRY main {", "  p = f32[4] parameter(0)",
             "  q = f32[4] parameter(1)", "  a0 = f32[4] add(p, q)"]
    outs, prev = ["a0"], "a0"
    for n in range(1, width):
        if n % 7 == 0:          # a value off the chain: reached from q only
            lines.append(f"  s{n} = f32[4] negate(q)")
            outs.append(f"s{n}")
        else:
            lines.append(f"  a{n} = f32[4] add({prev}, p)")
            outs.append(prev := f"a{n}")
    lines.append(f"  ROOT t = ({', '.join(['f32[4]'] * len(outs))}) tuple({', '.join(outs)})")
    return "\n".join(lines + ["}", ""])


@pytest.mark.parametrize("width", [5, 64, 100])
def test_reachable_operands_matches_reaches(width):
    # The block test (unions of 32 operands' bits) must give exactly the operands a
    # per-operand reaches() gives, for sources with bits and for others (walks).
    from hloc.passes.fusion.analysis import Reachability
    comp = hloc.parse(_wide_tuple_module(width), "wide").entry
    order = post_order(comp)
    root = comp.root
    for sources in (None, order[::3]):
        reach = Reachability(order, sources)
        for a in order:
            want = [i for i, o in enumerate(root.operands) if reach.reaches(a, o)]
            assert reach.reachable_operands(a, root) == want
    assert Reachability(order).reachable_operands(order[0], root) != []
