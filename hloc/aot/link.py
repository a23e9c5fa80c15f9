"""Object file -> what the user asked for: `.o` as is, `.a` written here, `.so` by `cc`.

A static archive is written directly (System V `ar` format with its symbol index, which
is what `ld` reads), so `.o` and `.a` output need no tool at all; a shared library is
linked by the system C compiler (`$CC` chosen by the CLI, else `cc`), against libm and
libpthread only, plus the --blas/--lapack libraries when given.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile

from ..diagnostics import InputError, UnsupportedError


def find_compiler(cc: str | None = None) -> str:
    for name in ([cc] if cc else ["cc", "gcc", "clang"]):
        path = shutil.which(name)
        if path:
            return path
    raise UnsupportedError(
        f"writing a shared library needs a C compiler to link it, and no {cc or 'cc, gcc or clang'} "
        "was found on PATH (install one, e.g. `apt-get install gcc`, or write OUT.o / OUT.a, "
        "which need no linker)")


def write_archive(path: str, obj: bytes, member: str, symbols: list[str]) -> None:
    """A one-member `ar` archive with a symbol index naming `symbols`."""
    name = member[:15] + "/"
    names = b"".join(s.encode() + b"\0" for s in symbols)
    index_size = 4 + 4 * len(symbols) + len(names)
    index_size += index_size % 2
    first = 8 + 60 + index_size                # offset of the object's header
    index = struct.pack(">I", len(symbols)) + struct.pack(">I", first) * len(symbols) + names
    index += b"\n" * (index_size - len(index))

    def header(n, size):
        return f"{n:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()
    data = b"!<arch>\n" + header("/", index_size) + index + header(name, len(obj)) + obj
    if len(obj) % 2:
        data += b"\n"
    with open(path, "wb") as f:
        f.write(data)


def link_shared(path: str, obj: bytes, libs: list[str], cc: str | None = None,
                soname: str | None = None) -> None:
    compiler = find_compiler(cc)
    with tempfile.TemporaryDirectory(prefix="hloc-aot-") as tmp:
        o = os.path.join(tmp, "module.o")
        with open(o, "wb") as f:
            f.write(obj)
        rpaths = [f"-Wl,-rpath,{os.path.dirname(p)}" for p in libs]   # found where they were
        cmd = [compiler, "-shared", "-o", os.path.abspath(path), o, *libs, *rpaths, "-lm",
               "-lpthread", "-Wl,-z,noexecstack"]
        if soname:
            cmd.append(f"-Wl,-soname,{soname}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise InputError(f"linking {path} failed ({' '.join(cmd[:2])} ...): "
                             f"{msg[-1] if msg else 'exit ' + str(r.returncode)}")
