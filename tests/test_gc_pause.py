"""hloc.gc_pause.no_gc: the cyclic collector is off inside the block and restored after;
with long_lived=True what the block kept ends in the oldest generation, nothing stays
frozen, and cycles it dropped are still collected."""
from __future__ import annotations

import gc
import weakref

from hloc.gc_pause import no_gc


class _Node:
    def __init__(self):
        self.me = self          # a reference cycle: only the cyclic collector frees it


def _in_generation(obj, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def test_off_inside_and_restored():
    assert gc.isenabled()
    with no_gc():
        assert not gc.isenabled()
        with no_gc(long_lived=True):      # nested: the outer block restores
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_long_lived_goes_to_the_oldest_generation():
    with no_gc(long_lived=True):
        kept = [_Node() for _ in range(3)]
        dropped = _Node()
        gone = weakref.ref(dropped)
        del dropped
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 100             # young counts restarted
    assert all(_in_generation(k, 2) for k in kept)
    assert not _in_generation(kept[0], 0)
    assert gone() is not None                  # the cycle waits for a full collection
    gc.collect()
    assert gone() is None
    assert all(k.me is k for k in kept)


def test_long_lived_leaves_frozen_objects_alone():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with no_gc(long_lived=True):
            kept = _Node()
        assert gc.get_freeze_count() == frozen     # someone else's freeze is kept,
        assert kept.me is kept                     # and nothing of the block frozen
    finally:
        gc.unfreeze()
