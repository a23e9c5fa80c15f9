"""XLA:CPU's fusion passes: `fusion` (instruction_fusion.py: CpuInstructionFusion, its
rules in decisions.py and the analyses they use in analysis.py) and `fusion-wrapper`
(wrapper.py); both build fusions with build.py."""
from __future__ import annotations

from .instruction_fusion import InstructionFusion
from .wrapper import FusionWrapper

__all__ = ["InstructionFusion", "FusionWrapper"]
