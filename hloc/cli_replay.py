"""`hloc replay`: run_hlo_module's command line over hloc.replay and hloc.replay_batch.

One file prints run_hlo_module's console lines; several files (a dump directory, a glob)
print a results table (or `--json` lines), optionally in `--jobs N` processes.
"""
from __future__ import annotations

import json
import os

import click

from .diagnostics import InputError


def _translate(command: click.Command, args: list[str]) -> list[str]:
    from .xla_flags import Options, translate
    return translate("replay", list(args), Options(command))


class ReplayCommand(click.Command):
    """Accepts run_hlo_module's underscore spellings (hloc.xla_flags), and
    `--inputs a.npy b.npy`, as `hloc run` does: the .npy/.npz words right after --inputs
    are all arguments (never modules, which FILES would otherwise take them for)."""

    def parse_args(self, ctx, args):
        args = _translate(self, args)
        out, i = [], 0
        while i < len(args):
            a = args[i]
            out.append(a)
            i += 1
            if a == "--":
                out.extend(args[i:])
                break
            if a == "--inputs" and i < len(args):
                out.append(args[i])
                i += 1
            if a == "--inputs" or a.startswith("--inputs="):
                while i < len(args) and args[i].endswith((".npy", ".npz")) \
                        and not args[i].startswith("-"):
                    out.extend(["--inputs", args[i]])
                    i += 1
        return super().parse_args(ctx, out)


def backend_for_platform(value: str | None, flag: str) -> str | None:
    """run_hlo_module's platform name -> hloc back end (None: no run)."""
    from .runner import BACKENDS
    from .xla_flags import PENDING, PLATFORMS, FlagError
    if value is None or value.lower() in ("", "none"):
        return None
    v = value.lower()
    if v == "default":
        v = "interpreter"
    backend = PLATFORMS.get(v, v if v in BACKENDS else None)
    if backend is None:
        raise FlagError(f"--{flag}: unknown platform {value!r} (hloc knows: "
                        f"{', '.join(sorted(set(PLATFORMS) | set(BACKENDS)))})")
    if backend not in BACKENDS:
        raise FlagError(f"--{flag}: {value}: {PENDING.get(backend, 'no such back end in hloc')}")
    return backend


def configure_platforms(numerics: str, *backends) -> None:
    """The compiled back end, when one of `backends` uses it: its numerics and the user's
    object cache (as `hloc run --backend cpu`)."""
    if "cpu" in backends:
        from .cli_backend import configure_cpu
        configure_cpu(numerics=numerics, opt=None)


NUMERICS = click.option(
    "--numerics", type=click.Choice(["xla-cpu", "ieee"]), default="xla-cpu",
    show_default=True, help="cpu: XLA:CPU's numerics (FTZ/DAZ, FMA, reassociated "
                            "reductions), as run_hlo_module's Host platform, or IEEE.")


def default_test_platform() -> str:
    """The compiled back end when there is one, else the interpreter."""
    from .runner import BACKENDS
    return "cpu" if "cpu" in BACKENDS else "interpreter"


_HELP = """Run FILES as XLA's run_hlo_module does: a test run and a reference run, compared.

\b
The test side is the module after hloc's XLA:CPU-shaped pipeline (hloc opt) run on
--platform (default: the compiled back end when hloc has one, else the interpreter);
the reference side is the module as written on the interpreter
(--reference_platform=, i.e. empty, skips it). An after-optimizations dump (its file
name, or is_scheduled=true) is not optimised again unless --run_test_hlo_passes=true;
the report says so. Results are compared as literal_comparison::Near: an element
mismatches only when it exceeds both --abs_error_bound and --rel_error_bound.

\b
FILES may be dump directories (XLA_FLAGS=--xla_dump_to=DIR) or globs: their
before_optimizations files by default (--stage), grouped by module number; buffer
assignments, memory reports, .ll and other files are skipped. Several files give a
results table (--json: one JSON object per line), --jobs N runs them in N processes.

\b
Arguments: fake, as MakeFakeArguments makes them (index ranges, reducer identities,
unique sort keys; seeded, not XLA's random bits), one engine per file continuing over
--iterations as run_hlo_module's; or --inputs in.npz / a.npy ... / --input-literal,
the same arguments for every iteration. --input_literals_file takes .npz/.npy;
--output_literals_file writes arguments and both results as .npz (argN,
test.outN, reference.outN; prefixed iterationI. with several iterations).
XLA's protos are read by extension (.pb binary, .pbtxt text) or --input_format
(which also makes '-' read stdin as that proto):
an HloSnapshot (--xla_dump_hlo_snapshots) replays with its recorded arguments, an
HloProto / HloModuleProto (--xla_dump_hlo_as_proto) with fake ones. RunHloModuleLiterals
protos are not read.
--isolate_instructions runs each ENTRY instruction of the test module (after the
pipeline) on its own, from the interpreter's values of its operands (XLA extracts them
from the module as given and feeds each fake data), and prints XLA's table.

Exit status: 0 every run close enough, 1 a mismatch, 2 bad input or a parse/verify
error, 3 an unsupported operation, 4 an internal error (with several files, the highest).
"""


@click.command("replay", cls=ReplayCommand, help=_HELP)
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--platform", "--backend", "platform", metavar="NAME",
              help="Test platform: cpu/host (compiled), interpreter, or any hloc back end.")
@NUMERICS
@click.option("--reference-platform", default="interpreter", show_default=True,
              metavar="NAME", help="Reference platform; 'default' = interpreter; empty: none.")
@click.option("--run-test-hlo-passes", type=click.BOOL, default=None, metavar="BOOL",
              help="Run the pipeline on the test side [true; false for after-optimizations "
                   "dumps].")
@click.option("--run-reference-hlo-passes", type=click.BOOL, default=True, metavar="BOOL",
              help="Run the pipeline on a compiled reference platform [true]; the "
                   "interpreter reference always runs the module as written.")
@click.option("--abs-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--rel-error-bound", type=float, default=1e-3, show_default=True)
@click.option("--iterations", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--print-literals", is_flag=True, help="Print arguments and both results.")
@click.option("--different-random-seeds", is_flag=True,
              help="Module seed i+1 in iteration i (rng ops), as run_hlo_module.")
@click.option("--use-large-float-range", is_flag=True,
              help="Fake floats over the whole range instead of [-0.1, 0.2).")
@click.option("--inputs", multiple=True, metavar="FILE",
              help="Arguments: one .npz (in0, ... or parameter names) or .npy per parameter.")
@click.option("--input-literal", "literals", multiple=True, metavar="TEXT",
              help="An argument as XLA literal text (repeatable).")
@click.option("--input-literals-file", metavar="FILE", help="Arguments from .npz/.npy.")
@click.option("--output-literals-file", metavar="FILE",
              help="Write arguments and results as .npz (one file only).")
@click.option("--isolate-instructions", is_flag=True,
              help="Run every ENTRY instruction of the test module on its own (one file).")
@click.option("--input-format", type=click.Choice(["hlo", "txt", "text", "pb", "pbtxt"]),
              help="hlo: HLO text; pb / pbtxt: XLA's HloSnapshot, HloProto or HloModuleProto, "
                   "binary / text format [from the extension: .pb, .pbtxt, else text].")
@click.option("--stage", type=click.Choice(["before", "after", "all"]), default="before",
              show_default=True, help="Which dumps of a directory to replay.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Replay files in this many processes.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per file.")
@click.option("-v", "--verbose", is_flag=True,
              help="With several files: also each file's run_hlo_module lines.")
def replay(files, platform, numerics, reference_platform, run_test_hlo_passes, run_reference_hlo_passes,
           abs_error_bound, rel_error_bound, iterations, print_literals,
           different_random_seeds, use_large_float_range, inputs, literals,
           input_literals_file, output_literals_file, isolate_instructions, input_format, stage,
           jobs, as_json, verbose):
    from .cli_common import cli_progress
    from .compare import ErrorSpec
    from .replay import ReplayConfig
    from .replay_batch import expand, json_line, replay_files, table
    test = backend_for_platform(platform, "platform") if platform else default_test_platform()
    config = ReplayConfig(
        test_backend=test,
        reference_backend=backend_for_platform(reference_platform, "reference_platform"),
        run_test_passes=run_test_hlo_passes, run_reference_passes=run_reference_hlo_passes,
        spec=ErrorSpec(abs_error_bound, rel_error_bound), iterations=iterations,
        different_random_seeds=different_random_seeds, print_literals=print_literals,
        use_large_float_range=use_large_float_range)
    configure_platforms(numerics, config.test_backend, config.reference_backend)
    if input_literals_file:
        if not input_literals_file.endswith((".npz", ".npy")):
            raise InputError(f"--input_literals_file {input_literals_file}: hloc reads .npz/.npy "
                             f"arguments, not RunHloModuleLiterals protos")
        inputs = tuple(inputs) + (input_literals_file,)
    inputs_spec = (tuple(inputs), tuple(literals)) if inputs or literals else None
    paths, skipped = expand(files, stage)
    if "-" in paths and (len(paths) > 1 or as_json):
        raise InputError("'-' (stdin) is replayed alone, with run_hlo_module's console lines: "
                         "not beside other FILES or with --json")
    if (output_literals_file or isolate_instructions) and len(paths) != 1:
        raise InputError("--output_literals_file / --isolate_instructions take one file")
    progress = cli_progress()
    try:
        if isolate_instructions:
            raise SystemExit(_isolate(paths[0], config, inputs_spec, progress, input_format))
        if len(paths) == 1 and not as_json:
            code = _replay_single(paths[0], config, inputs_spec, output_literals_file, progress,
                                  input_format)
            raise SystemExit(code)
        for line in skipped if verbose else ():
            click.echo(line, err=True)
        results = []
        for r in replay_files(paths, config, jobs=jobs, inputs_spec=inputs_spec,
                              progress=progress, input_format=input_format):
            results.append(r)
            if as_json:
                click.echo(json.dumps(json_line(r)))
            elif verbose:
                click.echo(r.stdout, nl=False)
                click.echo(r.stderr, nl=False, err=True)
    finally:
        progress.close()
    if not as_json:
        click.echo(table(results))
    raise SystemExit(max(r.code for r in results))


def _load(path, progress, input_format, command="replay"):
    """(verified module, a snapshot's arguments or None)."""
    from .cli_common import resolve, with_hint
    from .diagnostics import HlocError
    from .proto.reader import proto_format
    from .replay_batch import load_for_replay
    from .verifier import verify
    if path == "-" and input_format in ("pb", "pbtxt"):     # stdin as the proto named
        from .proto.reader import read_proto_data
        with progress.phase("parse", "<stdin>"):
            got = read_proto_data(click.get_binary_stream("stdin").read(), "<stdin>",
                                  input_format)
        with progress.phase("verify"):
            verify(got.module)
        return got.module, got.arguments
    if path == "-":                     # stdin: HLO text, as every other command reads it
        from .cli_common import load_module
        _, module, _ = load_module(path, command=command, progress=progress)
        with progress.phase("verify"):
            verify(module)
        return module, None
    path = resolve(path, command)
    with progress.phase("parse", os.path.basename(path)):
        try:
            module, arguments = load_for_replay(path, input_format, command)
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory") from None
        except OSError as e:
            raise InputError(f"{path}: {e.strerror or e}") from None
        except HlocError as e:
            raise e if input_format in ("pb", "pbtxt") or proto_format(path) else \
                with_hint(e, path)
    with progress.phase("verify"):
        verify(module)
    return module, arguments


def _replay_single(path, config, inputs_spec, output_literals_file, progress,
                   input_format=None) -> int:
    from .replay import replay_module
    module, inputs = _load(path, progress, input_format)
    if inputs_spec is not None:
        from .inputs import bind_arguments, read_inputs
        from .multidevice import bind_per_device, device_plan
        n = device_plan(module, None)
        inputs = bind_arguments(module, read_inputs(*inputs_spec)) if n == 1 else \
            bind_per_device(module, read_inputs(*inputs_spec), n, positional=False)
    outcome = replay_module(module, config, path=path, inputs=inputs,
                            out=click.echo, err=lambda s: click.echo(s, err=True),
                            progress=progress)
    if output_literals_file:
        write_literals(output_literals_file, module, outcome)
    return 0 if outcome.ok else 1


def _isolate(path, config, inputs_spec, progress, input_format=None) -> int:
    """--isolate_instructions: the ENTRY instructions of the test module (after the
    pipeline unless it is an after-optimizations dump), each run on its own on the test
    platform and the interpreter from the interpreter's values of its operands."""
    import numpy as np

    from .fake_args import make_fake_arguments
    from .isolate import instruction_scores, isolation_report
    from .replay import clone_module, is_after_optimizations, optimized_copy
    module, _ = _load(path, progress, input_format)    # fake data, as XLA's isolation
    if inputs_spec is not None:
        from .inputs import bind_arguments, read_inputs
        args = bind_arguments(module, read_inputs(*inputs_spec))
    else:
        args = make_fake_arguments(module, rng=np.random.default_rng(config.input_seed))
    run_passes = config.run_test_passes
    if run_passes is None:
        run_passes = is_after_optimizations(module, path) is None
    tested = optimized_copy(module) if run_passes else clone_module(module)
    click.echo(f"\n ** Running {path}** ")
    scores = instruction_scores(tested, args, config.test_backend, config.spec,
                                progress=progress)
    click.echo(isolation_report(scores))
    return 0 if all(s.status == "MATCHED" for s in scores) else 1


def write_literals(path, module, outcome) -> None:
    """Arguments and both results of every iteration as one .npz (per-device runs: each
    array with a leading device axis, as `hloc run --output` writes them)."""
    from .inputs import save_npz
    if outcome.devices > 1:
        import dataclasses

        import numpy as np
        per = [write_literals_arrays(module, dataclasses.replace(
            outcome, devices=1, arguments=[a[d] for a in outcome.arguments],
            test_values=[v[d] if v is not None else None for v in outcome.test_values],
            reference_values=[v[d] if v is not None else None
                              for v in outcome.reference_values]))
            for d in range(outcome.devices)]
        save_npz(path, {k: np.stack([p[k] for p in per]) for k in per[0]})
        return
    save_npz(path, write_literals_arrays(module, outcome))


def write_literals_arrays(module, outcome) -> dict:
    from .inputs import flatten_leaves
    arrays = {}
    shape = module.entry.root.shape
    many = len(outcome.arguments) > 1
    for i, args in enumerate(outcome.arguments):
        pre = f"iteration{i}." if many else ""
        for j, (p, v) in enumerate(zip(module.entry.parameters, args)):
            for k, leaf in enumerate(flatten_leaves(v, p.shape)):
                arrays[f"{pre}arg{j}" + (f".{k}" if k else "")] = leaf
        for side, value in (("test", outcome.test_values[i]),
                            ("reference", outcome.reference_values[i])):
            if value is not None:
                for k, leaf in enumerate(flatten_leaves(value, shape)):
                    arrays[f"{pre}{side}.out{k}"] = leaf
    return arrays


def load_with_arguments(path, command, progress):
    """One module (verified) and, for an HloSnapshot, its recorded arguments (else None)."""
    return _load(path, progress, None, command)
