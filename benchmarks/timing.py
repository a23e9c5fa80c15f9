"""The best-of timer the benchmark scripts share (wall clock, steady state)."""
from __future__ import annotations

import time


def best(fn, repeat: int, warmup: bool = False):
    """(fastest wall-clock seconds of `repeat` calls of `fn`, the last call's value);
    with `warmup`, one untimed call first."""
    value = fn() if warmup else None
    fastest = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        fastest = min(fastest, time.perf_counter() - t0)
    return fastest, value
