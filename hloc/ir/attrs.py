"""Typed HLO attribute values: immutable, hashable values (ints, tuples, frozen
dataclasses, `Verbatim`) that attribute text parses to.

Parsing and printing them, XLA's way (xla/hlo/parser/hlo_parser.cc, window_util,
PaddingConfigToString, ConvolutionDimensionNumbersToString, absl CEscape ...), is
hloc.syntax's: attr_scan.py, attr_structs.py and the registry of kinds, attr_kinds.KINDS.
Attributes hloc does not interpret (metadata, sharding, backend_config ...) are kept as
`Verbatim` text and print back unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from .shape import Shape


class AttrSyntaxError(ValueError):
    """A malformed attribute value; `offset` is 0-based into the value text."""

    def __init__(self, message: str, offset: int = 0):
        super().__init__(message)
        self.offset = offset


# ---------------------------------------------------------------------------
# Value types

@dataclass(frozen=True)
class CompRef:
    """A computation referred to by name (`%name` or `name`); printed as `%name`."""
    name: str


@dataclass(frozen=True)
class InlineComp:
    """An inline computation body `{ ... }`: the text between the braces and its offset."""
    text: str
    offset: int


@dataclass(frozen=True)
class Verbatim:
    """Attribute text hloc keeps but does not interpret; printed unchanged."""
    text: str


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    lhs_dilate: int = 1      # base dilation
    rhs_dilate: int = 1      # window dilation
    reversal: bool = False


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.dims)


@dataclass(frozen=True)
class ConvDimNumbers:
    """ConvolutionDimensionNumbers; unset batch/feature dims are 0, as in the proto."""
    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


@dataclass(frozen=True)
class ReplicaGroups:
    """Replica groups; `iota` = (num_groups, group_size, reshape_dims, transpose_perm)
    in XLA's canonical form when the text used the iota syntax, else None."""
    groups: tuple[tuple[int, ...], ...]
    iota: tuple | None = None


@dataclass(frozen=True)
class ComputationLayout:
    params: tuple[Shape, ...]
    result: Shape


@dataclass(frozen=True)
class LiteralAttr:
    """`literal=` of custom-call: the literal's shape and its text, kept verbatim."""
    shape: Shape
    text: str
