"""`hloc bisect` and `hloc reduce`: the command lines over hloc.bisect and hloc.reduce.

Both take run_hlo_module's test platform (`--platform`, default as `hloc replay`'s) and
error bounds; what they print and their exit codes are in each command's help.
"""
from __future__ import annotations

import click

from .cli_replay import (NUMERICS, backend_for_platform, configure_platforms,
                         default_test_platform, load_with_arguments)


@click.command("bisect")
@click.argument("file", type=click.Path())
@click.option("--platform", "--backend", "platform", metavar="NAME",
              help="Test platform (default: the compiled back end when there is one).")
@NUMERICS
@click.option("--inputs", multiple=True, metavar="FILE", help="Arguments (.npz / .npy).")
@click.option("--abs-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--rel-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--per-instruction", "table_path", metavar="FILE",
              help="Write every ENTRY instruction's divergence score (max abs/rel error, "
                   "ULPs) on the test platform to FILE ('-': stdout).")
def bisect_command(file, platform, numerics, inputs, abs_error_bound, rel_error_bound, table_path):
    """Find the first pass, or the first instruction, that makes FILE miscompare.

    \b
    Replays FILE as `hloc replay` does. On a mismatch: when the optimised module already
    disagrees with the reference on the interpreter, a pass broke it: the passes' outputs
    are bisected and the first pass after which the module disagrees is named, with the
    computations it changed (before / after as HLO text). Otherwise every ENTRY
    instruction of the optimised module is run on its own on the test platform and the
    interpreter, from the interpreter's values of its operands, and the first that
    diverges is named, and when it is a fusion or call, the instruction inside it that
    diverges on its own, with its isolated module. An HloSnapshot brings its arguments.

    Exit status: 0 nothing to bisect (test and reference agree), 1 a culprit was named,
    2 bad input, 3 an unsupported operation.
    """
    import difflib

    from .bisect import bisect
    from .cli_common import cli_progress, write_text
    from .compare import ErrorSpec
    from .fake_args import make_fake_arguments
    from .isolate import instruction_scores, score_table
    from .replay import DEFAULT_SEED, clone_module, is_after_optimizations, optimized_copy
    test = backend_for_platform(platform, "platform") if platform else default_test_platform()
    configure_platforms(numerics, test)
    spec = ErrorSpec(abs_error_bound, rel_error_bound)
    progress = cli_progress()
    try:
        module, recorded = load_with_arguments(file, "bisect", progress)
        if recorded is not None and not inputs:       # an HloSnapshot's arguments
            args = recorded
        elif inputs:
            from .inputs import bind_arguments, read_inputs
            args = bind_arguments(module, read_inputs(inputs))
        else:
            import numpy as np
            args = make_fake_arguments(module, rng=np.random.default_rng(DEFAULT_SEED))
        result = bisect(module, args, test_backend=test, spec=spec, path=file,
                        progress=progress)
        if table_path:
            tested = clone_module(module) if is_after_optimizations(module, file) \
                else optimized_copy(module)
            scores = result.scores or instruction_scores(tested, args, test, spec,
                                                         progress=progress)
            write_text(score_table(scores) + "\n", None if table_path == "-" else table_path)
    finally:
        progress.close()
    click.echo(result.summary)
    if result.kind == "pass" and result.pair is None:
        diff = difflib.unified_diff(result.before.splitlines(), result.after.splitlines(),
                                    f"before {result.pass_name}", f"after {result.pass_name}",
                                    lineterm="", n=2)
        click.echo("\n".join(diff))
    if result.pair is not None:
        small_before, small_after, _ = result.pair
        click.echo(f"\nsmallest module the pass breaks on its own (before {result.pass_name}):\n"
                   f"{small_before}\nafter {result.pass_name}:\n{small_after}", nl=False)
    elif result.kind == "instruction":
        inner = f" > %{' > %'.join(result.inner)}" if result.inner else ""
        click.echo(f"isolated module of %{result.instruction}{inner}:\n{result.after}", nl=False)
    raise SystemExit(0 if result.kind == "none" else 1)


@click.command("reduce")
@click.argument("file", type=click.Path())
@click.option("--predicate", "command", metavar="CMD",
              help="Shell command that exits 0 while the module is still interesting; {} is "
                   "the candidate file (else appended).")
@click.option("--mismatch", is_flag=True,
              help="Built-in predicate: `hloc replay` reports a mismatch (default).")
@click.option("--fails-with", metavar="TEXT",
              help="Built-in predicate: replay fails with an hloc error containing TEXT.")
@click.option("--platform", "--backend", "platform", metavar="NAME",
              help="Test platform of the built-in predicates.")
@NUMERICS
@click.option("--abs-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--rel-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--inputs", multiple=True, metavar="FILE",
              help="The module's arguments (.npz / .npy); the reduced module's parameters "
                   "then carry the values the original computed there.")
@click.option("--output-inputs", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --inputs: write the reduced module's arguments (in0, ...) here.")
@click.option("--constants", is_flag=True,
              help="With arguments (--inputs, an HloSnapshot's): the reduced module's "
                   "parameters become constants of their values when it still holds, so "
                   "the reproducer needs no input file.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the reduced module here (default: stdout).")
def reduce_command(file, command, mismatch, fails_with, platform, numerics, abs_error_bound,
                   rel_error_bound, inputs, output_inputs, constants, output):
    """Shrink FILE while a predicate holds and print the smallest module found.

    \b
    With the mismatch predicate, a guided cut comes first: one run of the module with
    every ENTRY value as an output on the test platform (LLVM optimisations off) names
    the first instruction whose value diverges from the interpreter's, which is tried
    on its own, its operands parameters carrying their values. Then edits, in a fixed
    order until none helps: cut the ENTRY at an instruction (it becomes the ROOT),
    replace instructions by parameters or by a same-shaped operand, shrink the shape of
    an elementwise module (halving its elements), inline calls, drop what is left
    unused. Every candidate parses and verifies before the predicate sees it, so the
    result is valid HLO; a candidate is kept when it has fewer instructions, or as many
    with fewer elements. The predicate must hold for FILE.

    Exit status: 0 reduced (or already minimal), 2 bad input or the predicate does not
    hold for FILE, 3 an unsupported operation.
    """
    from .cli_common import cli_progress, write_text
    from .compare import ErrorSpec
    from .printer import module_to_text
    from .reduce import (command_predicate, message_predicate, mismatch_predicate,
                         reduce_module)
    from .replay import ReplayConfig
    if sum(bool(x) for x in (command, mismatch, fails_with)) > 1:
        raise click.UsageError("give one of --predicate, --mismatch, --fails-with")
    test = backend_for_platform(platform, "platform") if platform else default_test_platform()
    configure_platforms(numerics, test)
    config = ReplayConfig(test_backend=test, spec=ErrorSpec(abs_error_bound, rel_error_bound))
    if command:
        predicate = command_predicate(command)
    elif fails_with:
        predicate = message_predicate(fails_with, config)
    else:
        predicate = mismatch_predicate(config)
    progress = cli_progress()
    try:
        module, recorded = load_with_arguments(file, "reduce", progress)
        from .replay import is_after_optimizations
        if is_after_optimizations(module, file):     # candidates lose the file name
            config.run_test_passes = False
        args = recorded                 # an HloSnapshot's arguments, else None
        if inputs:
            from .inputs import bind_arguments, read_inputs
            args = bind_arguments(module, read_inputs(inputs))
        elif output_inputs and args is None:
            raise click.UsageError("--output-inputs needs --inputs (or an HloSnapshot)")
        result = reduce_module(module_to_text(module), predicate, inputs=args,
                               constants=constants,
                               progress=progress)
    finally:
        progress.close()
    click.echo(f"hloc reduce: {result.start_instructions} -> {result.instructions} "
               f"instructions ({result.evaluations} predicate runs)", err=True)
    if output_inputs:
        from .inputs import save_npz
        save_npz(output_inputs, {f"in{i}": a for i, a in enumerate(result.arguments)})
    write_text(result.text, output)
