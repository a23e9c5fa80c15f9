"""XLA:CPU's fusion passes: `fusion` (instruction_fusion.py: CpuInstructionFusion, its
rules in decisions.py and the analyses they use in analysis.py), `fusion-wrapper`
(wrapper.py) and `cpu_multi_output_fusion` (multi_output.py, behind
xla_cpu_use_multi_output_fusion); they build fusions with build.py."""
from __future__ import annotations

from .instruction_fusion import InstructionFusion
from .multi_output import CpuMultiOutputFusion
from .wrapper import FusionWrapper

__all__ = ["InstructionFusion", "FusionWrapper", "CpuMultiOutputFusion"]
