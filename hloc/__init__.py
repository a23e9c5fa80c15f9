"""hloc: parse, print, verify, run, optimise and replay XLA HLO text.

Python API:
    module = hloc.parse(text)              # -> hloc.ir.module.Module (raises HlocError)
    text = hloc.to_text(module)            # XLA dump style
"""
from __future__ import annotations

__version__ = "0.1.0"


def parse(text: str, name: str = "<input>"):
    from .syntax import parse_module
    return parse_module(text, name)


def parse_file(path):
    from .syntax import parse_module, read_text
    return parse_module(read_text(path), str(path))


def to_text(module) -> str:
    from .printer import module_to_text
    return module_to_text(module)
