"""jit.lower leaves no cyclic garbage of the LLVM module it emitted (ModuleContext.release):
the llvmlite module and the kernel builders are freed by reference counting, not left
for the cyclic collector to trace."""
from __future__ import annotations

import gc
from pathlib import Path

import pytest
from llvmlite import ir

import hloc
from hloc.backend import jit
from hloc.backend.context import KernelBuilder, Options
from hloc.cli_backend import prepare_for_cpu

DUMPS = Path(__file__).resolve().parents[1] / "testdata" / "dumps"


@pytest.mark.parametrize("stem", ["mlp_train_step", "scan_rnn", "nested_control_flow",
                                  "sort_ops", "bert_train_step"])
@pytest.mark.parametrize("profile", [False, True])
def test_lowering_leaves_no_llvm_cycles(stem, profile):
    m = prepare_for_cpu(hloc.parse((DUMPS / f"{stem}.before_optimizations.hlo").read_text(),
                                   stem), None)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        low = jit.lower.__wrapped__(m, Options(profile=profile))   # without its collection
        gc.collect()
        left = [o for o in gc.garbage
                if isinstance(o, (ir.Value, ir.Block, ir.Module, KernelBuilder))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()
    assert low.ir_text.count("define ") > 1
    assert left == [], f"{len(left)} llvmlite objects left in cycles, e.g. {left[:3]}"
