"""On-disk cache of object code, keyed by everything that decides the code.

Key = sha256 of the HLO module text, the HLO pipeline and code-generation options, the
host CPU name and features, a digest of hloc's sources and the hloc / llvmlite / LLVM
versions (hloc.backend.jit.module_key). The payload is the object code and what the
runtime needs to call it (`pack` / `unpack`: a JSON header, then the object). An entry
is `MAGIC + key + sha256(payload) + payload`; a read validates all three and treats anything else as a miss (and removes
the entry), so a corrupt or truncated file is recompiled, never loaded. Writes go to a
temporary file in the same directory and are renamed into place (atomic on POSIX), so
concurrent runs never see half an entry. The directory is chosen by the caller (the CLI
reads XDG_CACHE_HOME); None disables the cache.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

MAGIC = b"HLOCOBJ2"


def pack(meta: dict, obj: bytes) -> bytes:
    head = json.dumps(meta, separators=(",", ":")).encode()
    return len(head).to_bytes(8, "little") + head + obj


def unpack(payload: bytes) -> tuple[dict, bytes] | None:
    """(meta, object) of a payload, or None if it is not one."""
    n = int.from_bytes(payload[:8], "little")
    if len(payload) < 8 + n:
        return None
    try:
        meta = json.loads(payload[8:8 + n])
    except ValueError:
        return None
    return (meta, payload[8 + n:]) if isinstance(meta, dict) else None


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        data = p.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class ObjectCache:
    def __init__(self, directory):
        self.directory = os.fspath(directory) if directory is not None else None

    def _path(self, key: str) -> str:
        return os.path.join(self.directory, key[:2], key + ".o")

    def get(self, key: str) -> bytes | None:
        if self.directory is None:
            return None
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        head = len(MAGIC) + 64 + 32
        ok = (data[:len(MAGIC)] == MAGIC and data[len(MAGIC):len(MAGIC) + 64] == key.encode()
              and len(data) > head
              and hashlib.sha256(data[head:]).digest() == data[len(MAGIC) + 64:head])
        if not ok:
            try:
                os.unlink(path)
            except OSError:
                pass
            return None
        return data[head:]

    def put(self, key: str, obj: bytes) -> None:
        if self.directory is None:
            return
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(MAGIC + key.encode() + hashlib.sha256(obj).digest() + obj)
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            pass      # a cache that cannot be written only costs speed
