"""Running Graphviz's `dot` program to turn DOT text into SVG or PNG.

`dot` is an optional system program: where it is missing, `GraphvizMissing` names the
package that provides it. The DOT text goes in on stdin and the image comes back on
stdout, so nothing from the dump ever becomes a path or an argument.
"""
from __future__ import annotations

import shutil
import subprocess

from ..diagnostics import InputError

FORMATS = ("svg", "png")


class GraphvizMissing(InputError):
    """The `dot` program is not installed."""


class GraphvizFailed(InputError):
    exit_code = 4


def find_dot() -> str | None:
    return shutil.which("dot")


def render(dot_text: str, fmt: str, *, program: str | None = None,
           timeout: float | None = None) -> bytes:
    """The image `dot -T<fmt>` makes of `dot_text`."""
    if fmt not in FORMATS:
        raise InputError(f"Graphviz output format must be one of {', '.join(FORMATS)}")
    program = program or find_dot()
    if program is None:
        raise GraphvizMissing(
            f"drawing {fmt.upper()} needs Graphviz's `dot` program, which is not installed "
            f"(Debian/Ubuntu: apt-get install graphviz; Fedora: dnf install graphviz; "
            f"macOS: brew install graphviz; conda: conda install graphviz); "
            f"write .dot or .html instead, which need nothing")
    try:
        proc = subprocess.run([program, f"-T{fmt}"], input=dot_text.encode("utf-8"),
                              capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise GraphvizFailed(f"Graphviz `dot` took more than {timeout:g} s; draw less "
                             f"(--around INSTR --radius N or --computation NAME)") from None
    except OSError as e:
        raise GraphvizFailed(f"cannot run Graphviz `dot` ({program}): {e.strerror}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GraphvizFailed(f"Graphviz `dot` failed (exit {proc.returncode})"
                             + (f": {err[-1]}" if err else ""))
    return proc.stdout
