"""`no_gc()`: CPython's cyclic collector off for a block, restored after.

Parsing, verifying and optimising a big module allocate millions of objects that form
no garbage cycles (or few) while the module itself stays live; every collection in
between would rescan that whole heap. What the block drops is freed by reference
counting; the next collection after it takes what cycles there are.

`no_gc(long_lived=True)` also tells the collector that what the block allocated and kept
is long-lived (the opt driver: the instructions and computations the passes built): it
goes straight to the oldest generation instead of being traversed by the first young
collection after the block (0.13 s after opt of the 28k-line dump: 350k objects) and
again by the middle one. Cycles among those objects are still collected, by the next
full collection.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def no_gc(long_lived: bool = False, collect_young: bool = False):
    """The cyclic collector off for the block; `collect_young`: one young-generation
    collection of what the block allocated before it is back on (the back end's lowering:
    hloc.backend.context.gc_paused)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if collect_young:
                gc.collect(0)
            if long_lived and gc.get_freeze_count() == 0:
                # Both O(1) list splices: every tracked object moves to the permanent
                # generation and back into the oldest one; young counts restart at 0.
                # (Skipped when someone else has frozen objects: unfreeze would thaw them.)
                gc.freeze()
                gc.unfreeze()
            gc.enable()
