"""Predicates for hloc.reduce: whether a candidate module (its text and, when known,
its arguments) is still interesting. `mismatch_predicate(config)`: replaying it reports
a mismatch (and hloc.reduce reads its `config` to guide the first cut);
`message_predicate(text)`: replaying fails with that message; `command_predicate(cmd)`:
a shell command exits 0 on the candidate's file. Errors count as "no".
"""
from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from typing import Callable

from .diagnostics import HlocError

__all__ = ["mismatch_predicate", "message_predicate", "command_predicate"]


def _parse(text: str):
    from .syntax import parse_module
    return parse_module(text, "<candidate>")


class mismatch_predicate:
    """Holds when replaying the module (hloc.replay, `config`) reports a mismatch;
    reduce_module reads its `config` to guide the first cut."""

    def __init__(self, config):
        self.config = config

    def __call__(self, text: str, args=None) -> bool:
        from .replay import replay_module
        return not replay_module(_parse(text), self.config, inputs=args).ok


def message_predicate(message: str, config=None) -> Callable[[str], bool]:
    """Holds when replaying the module fails with an hloc error containing `message`
    (or an internal error whose `Type: text` contains it)."""
    from .replay import ReplayConfig, replay_module

    def holds(text: str, args=None) -> bool:
        try:
            replay_module(_parse(text), config or ReplayConfig(), inputs=args)
        except HlocError as e:
            return message in e.message
        except Exception as e:  # noqa: BLE001 - an internal error is what users reduce
            return message in f"{type(e).__name__}: {e}"
        return False
    return holds


def command_predicate(command: str, *, timeout: float = 600) -> Callable[[str], bool]:
    """Holds when the shell command exits 0; `{}` in it is the candidate file's path
    (else the path is appended). The command sees the text only, not the arguments."""

    def holds(text: str, args=None) -> bool:
        fd, path = tempfile.mkstemp(suffix=".hlo", prefix="hloc-reduce-")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            cmd = command.replace("{}", shlex.quote(path)) if "{}" in command \
                else f"{command} {shlex.quote(path)}"
            try:
                done = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False
            return done.returncode == 0
        finally:
            os.unlink(path)
    return holds
