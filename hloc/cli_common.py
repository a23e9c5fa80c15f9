"""What several commands share: reading a module argument and the progress reporter.

`load_modules(path, command=..., pick=...)` reads `-` (stdin), a file (HLO text, or
XLA's binary/text protos by their `.pb` / `.pbtxt` extension), or a dump directory
(through hloc.dumpdir's selection); a named file that fails to parse gets a
`note:` saying what it looks like when it is not HLO text; `load_module` is the same for
commands that take one module (and keeps a snapshot's arguments), and `one_module` words
the refusal of a file of several. `cli_progress()` builds the
Progress object for the running command: on only when stderr is a terminal and
`--quiet` was not given; colour unless NO_COLOR is set (the one environment read here).
"""
from __future__ import annotations

import os
import sys

import click

from .diagnostics import HlocError, InputError
from .progress import NULL, Progress

__all__ = ["load_modules", "load_module", "one_module", "cli_progress", "quiet", "write_text"]


def write_text(text: str, path: str | None) -> None:
    """`text` to the file `path`, or to stdout when `path` is None (or empty); a file that
    cannot be written is an input error (exit 2), not an internal one."""
    if not path:
        click.echo(text, nl=False)
        return
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise InputError(f"{path}: cannot write: {e.strerror}") from None


def quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return False
    root = ctx.find_root()
    return bool(root.params.get("quiet"))


def cli_progress() -> Progress:
    if quiet():
        return NULL
    stream = sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return NULL
    return Progress(stream, enabled=True, color="NO_COLOR" not in os.environ)


def resolve(path: str, command: str, pick: str | None = None, can_pick: bool = True) -> str:
    """`path`, or the HLO file chosen in it when it is a directory (announced)."""
    if path != "-" and os.path.isdir(path):
        from .dumpdir import choose
        chosen = choose(path, pick, command, can_pick)
        click.echo(f"hloc {command}: taking {chosen}", err=True)
        return chosen
    if pick is not None:
        raise click.UsageError("--pick selects a file in a directory; MODULE is a file")
    return path


def load_modules(path: str, *, command: str, pick: str | None = None, progress=NULL,
                 can_pick: bool = True):
    """(the file read, its modules); errors as HlocError with exit code 2. `can_pick`:
    whether `command` has --pick (a directory's error suggests it)."""
    path, modules, _ = _read(path, command, pick, progress, can_pick)
    return path, modules


def load_module(path: str, *, command: str, pick: str | None = None, progress=NULL,
                can_pick: bool = True):
    """(the file read, its one module, an HloSnapshot's recorded arguments or None) for a
    command that takes one module: a file of several is refused (one_module)."""
    path, modules, arguments = _read(path, command, pick, progress, can_pick)
    return path, one_module(path, modules, command), arguments


def one_module(path: str, modules: list, command: str):
    """The module of a file that holds one, else the input error every command gives."""
    if len(modules) != 1:
        name = "<stdin>" if path == "-" else path
        raise InputError(f"{name}: holds {len(modules)} modules; `hloc {command}` takes one")
    return modules[0]


def _read(path: str, command: str, pick: str | None, progress, can_pick: bool):
    """(the file read, its modules, a snapshot's arguments or None): a proto is read and
    parsed once, its arguments kept for the commands that run it."""
    from .syntax import parse_modules, read_text
    from .proto.reader import proto_format
    path = resolve(path, command, pick, can_pick)
    with progress.phase("parse", "" if path == "-" else os.path.basename(path)):
        if path == "-":
            return path, parse_modules(sys.stdin.read(), "<stdin>"), None
        if proto_format(path):          # .pb / .pbtxt: XLA's HloSnapshot / HloProto
            from .proto.reader import read_proto
            got = read_proto(path)
            return path, [got.module], got.arguments
        try:
            text = read_text(path)
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory") from None
        except OSError as e:
            raise InputError(f"{path}: {e.strerror or e}") from None
        except HlocError as e:
            raise with_hint(e, path)
        try:
            return path, parse_modules(text, path), None
        except HlocError as e:
            raise with_hint(e, path)


def with_hint(error: HlocError, path: str) -> HlocError:
    from .dumpdir import hint_for
    hint = hint_for(path)
    if hint is not None:
        error.notes = tuple(error.notes) + (hint,)
    return error
