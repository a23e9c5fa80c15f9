"""Runs `hloc opt` in-process for the opt tests (the command is added to the `hloc`
group here if cli.py does not list it yet)."""
from __future__ import annotations

from click.testing import CliRunner

from hloc.cli import main
from hloc.cli_opt import opt

if "opt" not in main.commands:
    main.add_command(opt)


def invoke_opt(args, stdin: str | None = None):
    """Result of `hloc opt ARGS` (exit_code, stdout, stderr)."""
    return CliRunner().invoke(main, ["opt", *[str(a) for a in args]], input=stdin)
