"""The runtime table: the only native symbols compiled code may call.

A fixed allowlist (libm functions, memcpy/memset), resolved once from the C library
with ctypes and registered with LLVM before any code is loaded. Every object file is
checked before it is loaded: each undefined symbol it references must be on the
allowlist (MCJIT would otherwise segfault at call time on an unresolved one). Nothing
from a dump is ever looked up as a symbol: names come only from this table.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import struct

import llvmlite.binding as llvm

from ..diagnostics import UnsupportedError

_LIBM_1 = ("exp", "expm1", "log", "log1p", "sin", "cos", "tan", "tanh", "cbrt", "erf",
           "acos", "acosh", "asin", "asinh", "atan", "atanh", "sinh", "cosh")
_LIBM_2 = ("pow", "atan2", "fmod", "hypot", "fma")
ALLOWED = frozenset({*_LIBM_1, *_LIBM_2, *(f + "f" for f in (*_LIBM_1, *_LIBM_2)),
                     "memcpy", "memset", "memmove"})

_resolved: dict[str, int] | None = None


def require(name: str) -> None:
    if name not in ALLOWED:
        raise AssertionError(f"runtime symbol {name} is not on the allowlist")


def _libraries():
    libs = []
    for lib in ("m", "c"):
        path = ctypes.util.find_library(lib)
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    libs.append(ctypes.CDLL(None))
    return libs


def resolve_all() -> dict[str, int]:
    """Address of every allowlisted symbol, registered with LLVM (once per process)."""
    global _resolved
    if _resolved is None:
        table = {}
        libs = _libraries()
        for name in sorted(ALLOWED):
            for lib in libs:
                try:
                    addr = ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                except AttributeError:
                    continue
                if addr:
                    table[name] = addr
                    llvm.add_symbol(name, addr)
                    break
        _resolved = table
    return _resolved


def undefined_symbols(obj: bytes) -> list[str]:
    """Undefined global symbols of an ELF64 little-endian relocatable object."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise ValueError("not an ELF64 little-endian object")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    out = []
    for sh in sections:
        if sh[1] != 2:          # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        s_off = strtab[4]
        for k in range(sh[5] // 24):
            name_off, info, _other, shndx, _val, _size = struct.unpack_from("<IBBHQQ", obj, sh[4] + k * 24)
            if shndx == 0 and name_off and (info >> 4) in (1, 2):   # UND, GLOBAL/WEAK
                end = obj.index(b"\0", s_off + name_off)
                out.append(obj[s_off + name_off:end].decode())
    return out


def check_object(obj: bytes) -> None:
    """Refuse an object that references a symbol outside the resolved allowlist."""
    table = resolve_all()
    bad = [s for s in undefined_symbols(obj) if s not in table]
    if bad:
        raise UnsupportedError("unsupported: compiled code needs native symbols outside the "
                               f"runtime table: {', '.join(sorted(bad))}")
