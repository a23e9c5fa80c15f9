"""`no_gc()`: CPython's cyclic collector off for a block, restored after.

Parsing, verifying and optimising a big module allocate millions of objects that form
no garbage cycles (or few) while the module itself stays live; every collection in
between would rescan that whole heap. What the block drops is freed by reference
counting; the next collection after it takes what cycles there are.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def no_gc():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
