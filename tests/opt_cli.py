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


def opt_case_fails(path, disabled: str | None = None) -> str | None:
    """Why the testdata/opt test at `path` fails (optionally with one pass disabled), or
    None when `hloc opt` exits 0 and every CHECK line matches."""
    from filecheck import FileCheckError, check, parse_checks, run_args
    text = path.read_text()
    args = run_args(text, str(path))
    if disabled:
        args = [*args, f"--disable-passes={disabled}"]
    result = invoke_opt(args)
    if result.exit_code != 0:
        return f"exit {result.exit_code}\n{result.stderr}{result.stdout}"
    try:
        check(result.stdout, parse_checks(text), str(path))
    except FileCheckError as e:
        return str(e)
    return None
