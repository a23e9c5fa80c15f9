"""One progress facility for every command: timed phase lines, or a bar over many files.

    prog = Progress(stream=sys.stderr, enabled=stderr_is_a_terminal, color=...)
    with prog.phase("parse", path):      # parse, verify, fake arguments, passes,
        ...                              # compile, run: any name
    bar = prog.bar(len(files), "check")  # many items: one line rewritten in place
    for f in files:
        bar.step(f)                      # before each item
    bar.close()
    with prog.step("fusion"):            # inside a phase: what runs now (long ones
        ...                              # get a line of their own)
    prog.close()                         # stops the timer; prints nothing more

Nothing is printed until the work has taken THRESHOLD seconds (2 s): then the phases
finished so far are printed, each following phase gets a line when it finishes, and a
phase still running gets a `phase ...` line so a long silence is explained. Quick
commands print nothing. `enabled=False` (stderr not a terminal, or `--quiet`) makes
every call a no-op, as does the shared NULL object; `color` only styles the lines.
The timings are kept (`prog.timings`) either way, for callers that report them.
Library code takes a Progress argument (default NULL) and never decides whether to print.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

__all__ = ["Progress", "NULL", "THRESHOLD"]

THRESHOLD = 2.0
_DIM, _RESET = "\x1b[2m", "\x1b[0m"


class Progress:
    def __init__(self, stream=None, *, enabled: bool = False, color: bool = False,
                 prefix: str = "hloc", threshold: float = THRESHOLD, clock=time.monotonic):
        self.stream = stream
        self.enabled = enabled and stream is not None
        self.color = color
        self.prefix = prefix
        self.threshold = threshold
        self.clock = clock
        self.timings: list[tuple[str, float]] = []
        self._start = clock()
        self._pending: list[str] = []     # lines held back until the threshold
        self._shown = False
        self._current: str | None = None
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._bar_line = False
        if self.enabled:
            self._timer = threading.Timer(threshold, self._on_threshold)
            self._timer.daemon = True
            self._timer.start()

    # -- output -----------------------------------------------------------------
    def _write(self, text: str) -> None:
        head = f"{self.prefix}: "
        if self.color:
            head = _DIM + head + _RESET
        if self._bar_line:
            self.stream.write("\n")
            self._bar_line = False
        self.stream.write(head + text + "\n")
        self.stream.flush()

    def _emit(self, text: str) -> None:
        with self._lock:
            if self._shown:
                self._write(text)
            else:
                self._pending.append(text)

    def _on_threshold(self) -> None:
        with self._lock:
            if self._shown or not self.enabled:
                return
            self._shown = True
            for line in self._pending:
                self._write(line)
            self._pending.clear()
            if self._current is not None:
                self._write(f"{self._current} ...")

    def _maybe_show(self) -> None:
        if not self._shown and self.clock() - self._start >= self.threshold:
            self._on_threshold()

    # -- API ----------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str, detail: str = ""):
        """Time a phase; its line says `name detail 1.23 s` once output has started."""
        label = f"{name} {detail}".rstrip()
        t0 = self.clock()
        self._current = label
        try:
            yield
        finally:
            self._current = None
            secs = self.clock() - t0
            self.timings.append((name, secs))
            if self.enabled:
                self._maybe_show()
                self._emit(f"{label} {secs:.2f} s")

    @contextmanager
    def step(self, label: str, min_seconds: float = 1.0):
        """A step inside the current phase (e.g. one pass of `hloc opt`): while it runs it
        is what a `... ` line names; once output has started, a step that took at least
        `min_seconds` gets its own `label 1.23 s` line (quick steps stay silent)."""
        outer = self._current
        self._current = label
        t0 = self.clock()
        try:
            yield
        finally:
            self._current = outer
            secs = self.clock() - t0
            if self.enabled and secs >= min_seconds:
                self._maybe_show()
                self._emit(f"  {label} {secs:.2f} s")

    def note(self, text: str) -> None:
        """A line that belongs with the phase lines (shown under the same rule)."""
        if self.enabled:
            self._emit(text)

    def bar(self, total: int, label: str) -> "Bar":
        return Bar(self, total, label)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self._bar_line:
                self.stream.write("\n")
                self.stream.flush()
                self._bar_line = False
            self.enabled = False


class Bar:
    """`label [#####.....] 12/40 name`, rewritten in place once the threshold passed."""

    WIDTH = 24

    def __init__(self, progress: Progress, total: int, label: str):
        self.p = progress
        self.total = max(total, 1)
        self.label = label
        self.done = 0

    def step(self, item: str = "") -> None:
        p = self.p
        if p.enabled:
            p._maybe_show()
            if p._shown:
                with p._lock:
                    fill = self.WIDTH * self.done // self.total
                    text = (f"{self.label} [{'#' * fill}{'.' * (self.WIDTH - fill)}] "
                            f"{self.done}/{self.total} {item}")[:120]
                    p.stream.write("\r\x1b[K" + text)
                    p.stream.flush()
                    p._bar_line = True
        self.done += 1

    def close(self) -> None:
        p = self.p
        if p.enabled and p._shown:
            with p._lock:
                if p._bar_line:
                    p.stream.write("\r\x1b[K")
                    p._bar_line = False
                p.stream.flush()
            p._emit(f"{self.label}: {self.done} done")


NULL = Progress(None, enabled=False)
