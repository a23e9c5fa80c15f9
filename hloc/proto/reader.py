"""Read XLA's protobuf dumps: HloSnapshot, HloProto, HloModuleProto (binary or text format).

`read_proto(path, fmt)` (or `read_proto_data(data, name, fmt)` of bytes already read)
follows xla/tools/hlo_module_loader.cc: with `fmt` "pb" (binary) or "pbtxt" (protobuf
text format), or from the file's extension, the data is tried as an
HloSnapshot (`--xla_dump_hlo_snapshots`: the module, its arguments and its result),
an HloUnoptimizedSnapshot (the module before optimisation, arguments per partition),
then as an HloProto (`--xla_dump_hlo_as_proto`: module and buffer assignment), then as
a bare HloModuleProto. The module becomes HLO text (hloc.proto.to_text) parsed by
hloc's parser, so everything downstream sees an ordinary module; a snapshot's arguments
come back as NumPy values (None when it recorded none: fake arguments, as
run_hlo_module). Data that is none of these, or a module that does not hold
together, is an InputError naming the file, on one line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..diagnostics import HlocError, InputError

__all__ = ["ProtoModule", "read_proto", "read_proto_data", "proto_format", "FORMATS"]

FORMATS = ("pb", "pbtxt")


@dataclass
class ProtoModule:
    module: object               # hloc.ir Module
    text: str                    # the module as HLO text
    kind: str                    # HloSnapshot, HloUnoptimizedSnapshot, HloProto, HloModuleProto
    arguments: list | None = None    # a snapshot's arguments (NumPy values); None: none
    result: object = None            # a snapshot's result as XLA computed it (or None)


def proto_format(path: str) -> str | None:
    """"pb" / "pbtxt" from the file's extension (XLA's default), None for anything else."""
    ext = os.path.splitext(path)[1].lower()
    return {".pb": "pb", ".pbtxt": "pbtxt"}.get(ext)


def _decode(data: bytes, fmt: str, name: str):
    from google.protobuf import message as pbmessage
    from google.protobuf import text_format

    from . import message
    cls = message(name)
    try:
        if fmt == "pb":
            return cls.FromString(data)
        msg = cls()     # fields newer than hloc's copy of XLA's schema are skipped
        text_format.Parse(data.decode("utf-8"), msg, allow_unknown_field=True)
        return msg
    except (pbmessage.DecodeError, text_format.ParseError, UnicodeDecodeError, ValueError,
            RecursionError):
        return None


def _module_of(data: bytes, fmt: str):
    """(kind, HloModuleProto, argument LiteralProtos or None, HloSnapshot or None) of the
    first message kind that fits."""
    snap = _decode(data, fmt, "HloSnapshot")
    if snap is not None and snap.HasField("hlo") and snap.hlo.hlo_module.computations:
        return "HloSnapshot", snap.hlo.hlo_module, snap.arguments, snap
    # --xla_dump_hlo_unoptimized_snapshots: the module before optimisation and each
    # partition's arguments (the first partition's are used).
    unopt = _decode(data, fmt, "HloUnoptimizedSnapshot")
    if unopt is not None and unopt.partitions and unopt.hlo_module.computations:
        return "HloUnoptimizedSnapshot", unopt.hlo_module, unopt.partitions[0].arguments, None
    proto = _decode(data, fmt, "HloProto")
    if proto is not None and proto.hlo_module.computations:
        return "HloProto", proto.hlo_module, None, None
    module = _decode(data, fmt, "HloModuleProto")
    if module is not None and module.computations:
        return "HloModuleProto", module, None, None
    return None


def read_proto(path: str, fmt: str | None = None) -> ProtoModule:
    fmt = fmt or proto_format(path) or "pb"
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown proto format {fmt!r} (pb or pbtxt)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    return read_proto_data(data, path, fmt)


def read_proto_data(data: bytes, path: str, fmt: str) -> ProtoModule:
    """As read_proto, of bytes already read (stdin); `path` names them in errors."""
    from ..syntax import parse_module
    from .to_text import ProtoError, literal_value, module_text
    if fmt not in FORMATS:
        raise InputError(f"{path}: unknown proto format {fmt!r} (pb or pbtxt)")
    found = _module_of(data, fmt)
    if found is None:
        what = "binary" if fmt == "pb" else "text-format"
        raise InputError(f"{path}: not an HloSnapshot, HloProto or HloModuleProto ({what} "
                         f"protobuf{', --input_format=pbtxt?' if fmt == 'pb' else ''})")
    kind, proto, arguments, snap = found
    try:
        text = module_text(proto)
        # run_hlo_module replays recorded literals only when there are some
        # (arguments_size() != 0); a snapshot without any runs on fake arguments.
        args = [literal_value(a)[1] for a in arguments] if arguments else None
        result = literal_value(snap.result)[1] \
            if snap is not None and snap.HasField("result") else None
    except ProtoError as e:
        raise InputError(f"{path}: {kind}: {e.message}") from None
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, RecursionError) as e:
        raise InputError(f"{path}: {kind}: malformed module ({type(e).__name__}: {e})") \
            from None
    try:
        module = parse_module(text, f"{path} (as HLO text)")
    except HlocError as e:
        first = e.render().splitlines()[0]
        raise InputError(f"{path}: {kind}: its module is not valid HLO: {first}") from None
    return ProtoModule(module, text, kind, args, result)
