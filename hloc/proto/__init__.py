"""XLA's protobuf messages (HloProto, HloSnapshot, HloModuleProto, LiteralProto ...).

`messages()` builds the message classes once, from XLA's own definitions
(hloc.proto.schema, generated from XLA's .proto files) in a private descriptor pool of
the protobuf runtime, so nothing here depends on the runtime's generated-code version or
clashes with another library's copy of the same files. hloc.proto.reader reads dump
files with them; hloc.proto.to_text turns an HloModuleProto into HLO text.
"""
from __future__ import annotations

from functools import lru_cache

from ..diagnostics import InputError

__all__ = ["messages", "message"]


@lru_cache(maxsize=1)
def messages() -> dict:
    """Full message name (`xla.HloProto`) -> class."""
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        raise InputError("reading XLA's binary protos needs the protobuf package "
                         "(pip install protobuf)") from None
    from .schema import DESCRIPTOR_SET
    files = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET).file
    return message_factory.GetMessages(list(files), pool=descriptor_pool.DescriptorPool())


def message(name: str):
    return messages()[f"xla.{name}"]
