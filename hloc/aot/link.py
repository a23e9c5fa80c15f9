"""Objects -> what the user asked for: `.o` as is, `.a` written here, `.so` by `cc`.

A library's parts are objects of their own (hloc.aot.target; `.o` output is one). A
static archive is written directly (System V `ar` format with its symbol index, which
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


def write_archive(path: str, objs: list[bytes], prefix: str) -> None:
    """An `ar` archive of the objects (members PREFIX_00.o ..., names cut to 15 bytes)
    with a symbol index naming every global symbol each defines, hidden ones included:
    the linker pulls the member of `PREFIX_run` from it, then the members that member
    needs, through the index."""
    from ..backend.runtime import defined_symbols
    members = [(f"{prefix[:9]}_{k:02d}.o", obj) for k, obj in enumerate(objs)]
    symbols = [(k, s) for k, obj in enumerate(objs) for s in defined_symbols(obj)]
    names = b"".join(s.encode() + b"\0" for _, s in symbols)
    index_size = 4 + 4 * len(symbols) + len(names)
    index_size += index_size % 2

    def header(n, size):
        return f"{n:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()
    offsets, at = [], 8 + 60 + index_size        # each member's header
    for _, obj in members:
        offsets.append(at)
        at += 60 + len(obj) + len(obj) % 2
    index = struct.pack(">I", len(symbols)) + b"".join(struct.pack(">I", offsets[k])
                                                       for k, _ in symbols) + names
    index += b"\n" * (index_size - len(index))
    data = [b"!<arch>\n", header("/", index_size), index]
    for name, obj in members:
        data += [header(name + "/", len(obj)), obj, b"\n" * (len(obj) % 2)]
    with open(path, "wb") as f:
        f.write(b"".join(data))


def link_shared(path: str, objs: list[bytes], libs: list[str], cc: str | None = None,
                soname: str | None = None) -> None:
    compiler = find_compiler(cc)
    with tempfile.TemporaryDirectory(prefix="hloc-aot-") as tmp:
        paths = [os.path.join(tmp, f"part{k:02d}.o") for k in range(len(objs))]
        for o, obj in zip(paths, objs):
            with open(o, "wb") as f:
                f.write(obj)
        rpaths = [f"-Wl,-rpath,{os.path.dirname(p)}" for p in libs]   # found where they were
        cmd = [compiler, "-shared", "-o", os.path.abspath(path), *paths, *libs, *rpaths, "-lm",
               "-lpthread", "-Wl,-z,noexecstack"]
        if soname:
            cmd.append(f"-Wl,-soname,{soname}")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            msg = (r.stderr or r.stdout).strip().splitlines()
            raise InputError(f"linking {path} failed ({' '.join(cmd[:2])} ...): "
                             f"{msg[-1] if msg else 'exit ' + str(r.returncode)}")
