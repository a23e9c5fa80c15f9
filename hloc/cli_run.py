"""`hloc run`: bind inputs, run on a back end, show the result, compare with --expected.

Flags map to library calls: hloc.inputs (reading, binding by name), hloc.fake_args,
hloc.runner (back ends), hloc.summary (what is printed), hloc.compare (XLA's
literal comparison for --expected), hloc.xla_flags (run_hlo_module's spellings) and
hloc.progress (phase lines on a terminal).
"""
from __future__ import annotations

import click

from .diagnostics import InputError


class RunCommand(click.Command):
    """Accepts run_hlo_module's spellings (hloc.xla_flags), and `--inputs a.npy b.npy`,
    which takes every following non-option word (click options take one value each);
    when that swallows the MODULE argument, the last word is MODULE."""

    def parse_args(self, ctx, args):
        from .runner import BACKENDS
        from .xla_flags import Options, translate
        args = translate("run", list(args), Options(self), backends=BACKENDS)
        takes_value = {name for p in self.params if isinstance(p, click.Option)
                       and not p.is_flag and p.nargs == 1 for name in p.opts}
        out, groups, positional = [], [], 0
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                rest = args[i + 1:]
                positional += len(rest)
                out.extend(args[i:])
                break
            if a == "--inputs" or a.startswith("--inputs="):
                vals = [a.split("=", 1)[1]] if "=" in a else []
                i += 1
                while i < len(args) and not (args[i].startswith("-") and args[i] != "-"):
                    vals.append(args[i])
                    i += 1
                groups.append((len(out), vals))
                out.append(None)
                continue
            if a.startswith("-") and a != "-":
                out.append(a)
                if a in takes_value and i + 1 < len(args):
                    out.append(args[i + 1])
                    i += 1
            else:
                positional += 1
                out.append(a)
            i += 1
        given_back = None
        if positional == 0 and groups and len(groups[-1][1]) > 1:
            given_back = groups[-1][1].pop()
        final = []
        slots = dict(groups)
        for j, a in enumerate(out):
            if a is None:
                vals = slots[j]
                if not vals:
                    final.append("--inputs")     # let click report the missing value
                for v in vals:
                    final.extend(["--inputs", v])
            else:
                final.append(a)
        if given_back is not None:
            final.append(given_back)
        return super().parse_args(ctx, final)


_HELP = """Run MODULE (HLO text) on inputs or on fake arguments and show the result.

\b
MODULE may be a dump directory: the HLO files there are listed, and --pick TEXT takes
the one whose name contains TEXT. run_hlo_module's spellings are understood:
--input_module=F, --input_format=hlo, --platform=interpreter or cpu (the compiled back
end, as --backend cpu), --print_literals, --abs_error_bound/--rel_error_bound and
any option below with underscores; --reference_platform, --xla_dump_to and the pass
flags are refused with what to do instead.

\b
Inputs: one .npz with keys in0, in1, ... or keys that name the parameters (exactly,
without XLA's .N suffix, or as the JAX pytree path in the name: enc/w, enc.w or w for
params__enc____w__.1), else an error listing both sides; --positional binds the file's arrays in stored order instead. Several .npy /
.npz files bind in the order given. Without inputs the arguments are made as
run_hlo_module's MakeFakeArguments makes them: the same constraints (indices in range,
reducer identities, unique sort keys), seeded, but not the same random bits.

\b
Result: under 1000 elements, XLA literal text; larger, one entry per leaf (out0, ...):
small leaves in full, large ones as shape, min/max/mean, NaN/Inf counts and the first
elements (--print-all prints every value).

\b
--output / --expected .npz convention: leaves keyed out0, out1, ... in flattened
order; types NumPy cannot name (bf16, f8, int4 ...) stored as raw bits in the unsigned
integer of the same size, with a JSON type table under the key 'hloc:dtypes';
hloc.load_outputs(path) returns them as ml_dtypes arrays.

\b
--iterations: unlike run_hlo_module, which draws new random arguments for every
iteration, hloc runs every iteration on the same arguments.

Exit status: 0 ok, 1 mismatch with --expected, 2 bad input or parse/verify error,
3 unsupported operation.
"""


@click.command("run", cls=RunCommand, help=_HELP)
@click.argument("module", type=click.Path(allow_dash=True))
@click.option("--pick", metavar="TEXT",
              help="MODULE is a directory: take the HLO file whose name contains TEXT.")
@click.option("--inputs", "inputs", multiple=True, metavar="FILE...",
              help="Arguments: one .npz (in0, in1, ... or keys naming the parameters) "
                   "or one .npy/.npz per parameter.")
@click.option("--positional", is_flag=True,
              help="Bind an .npz's arrays to the parameters in stored order, whatever "
                   "their keys (said on stderr).")
@click.option("--input-literal", "literals", multiple=True, metavar="TEXT",
              help="An argument as XLA literal text, e.g. 'f32[2] {1, 2}' (repeatable).")
@click.option("--seed", type=int, default=42, show_default=True,
              help="Seed of the fake arguments made when no inputs are given.")
@click.option("--use-large-float-range", is_flag=True,
              help="Fake floats over the whole range instead of [-0.1, 0.2).")
@click.option("--backend", default="cpu", show_default=True, metavar="NAME",
              help="Where to run the module: cpu (compiled to native code with LLVM) or "
                   "interpreter (HloEvaluator's semantics, the oracle; also runs what the "
                   "compiled back end cannot yet).")
@click.option("--numerics", type=click.Choice(["xla-cpu", "ieee"]), default="xla-cpu",
              show_default=True, help="cpu: XLA:CPU's numerics (FTZ/DAZ, FMA contraction, "
                                      "reassociated reductions) or IEEE (no flush, no contraction).")
@click.option("--opt/--no-opt", "hlo_opt", default=None,
              help="cpu: run (or skip) the default HLO pipeline before compiling (default: "
                   "only for modules that are not optimised yet).")
@click.option("--threads", type=click.IntRange(min=1, max=64), default=None,
              help="cpu: threads large kernels are split over (default: the cores this "
                   "process may use); results are identical for any value.")
@click.option("--profile", is_flag=True,
              help="cpu: time every kernel (like XLA's --xla_hlo_profile) and print per-kernel "
                   "time, bytes, GB/s and GFLOP/s, slowest first, to stderr (in --json: "
                   "\"profile\").")
@click.option("--iterations", type=click.IntRange(min=1), default=1, show_default=True,
              help="Runs on the same arguments (run_hlo_module draws new ones per "
                   "iteration); each is timed on stderr.")
@click.option("--output", type=click.Path(dir_okay=False),
              help="Write the flattened results as out0, out1, ... to this .npz "
                   "(convention above).")
@click.option("--expected", type=click.Path(dir_okay=False),
              help="Compare with the out0, out1, ... of this .npz as run_hlo_module "
                   "compares (literal_comparison::Near); exit 1 on a mismatch.")
@click.option("--abs-error-bound", type=float, default=1e-3, show_default=True,
              help="With --expected: absolute error bound for floats.")
@click.option("--rel-error-bound", type=float, default=1e-3, show_default=True,
              help="With --expected: relative error bound for floats.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (outputs, timings) instead of literal text.")
@click.option("--print-values", is_flag=True,
              help="With --json: include the values of outputs of any size.")
@click.option("--print-all", is_flag=True,
              help="Print the whole result as one XLA literal, however large.")
@click.option("--print-literals", is_flag=True,
              help="Also print the arguments as '** Argument i **' blocks.")
@click.option("--devices", type=click.IntRange(min=1), default=None, metavar="N",
              help="Devices to run on: default replica_count x num_partitions (1 for a "
                   "global-view, before-partitioning module); 1 runs the module once as "
                   "written. With N > 1, inputs, --output and --expected arrays have a "
                   "leading device axis.")
@click.option("--no-verify", is_flag=True, help="Skip the HLO verifier.")
def run(module, pick, inputs, positional, literals, seed, use_large_float_range, backend,
        numerics, hlo_opt, threads, profile, iterations, output, expected, abs_error_bound,
        rel_error_bound, as_json, print_values, print_all, print_literals, devices, no_verify):
    import json

    from .cli_common import cli_progress, load_module
    from .inputs import bind_arguments, read_inputs
    from .runner import argument_text, get_backend, result_json, run_module, save_outputs
    from .summary import result_summary

    progress = cli_progress()
    try:
        path, m, snapshot_args = load_module(module, command="run", pick=pick,
                                             progress=progress)
        if not no_verify:
            from .verifier import verify
            with progress.phase("verify"):
                verify(m)
        import os

        from . import multidevice as md
        n = md.device_plan(m, devices)
        comm = md.mpi_comm(os.environ)
        if comm is not None:
            from .cli_devices import run_mpi
            if backend == "cpu":
                from .cli_backend import configure_cpu
                configure_cpu(numerics=numerics, opt=hlo_opt, threads=threads or 1)
            return run_mpi(m, comm, n, inputs, literals, positional, seed,
                            use_large_float_range, output, as_json, print_values, print_all,
                            expected, abs_error_bound, rel_error_bound, backend=backend)
        # an HloSnapshot's recorded arguments, as run_hlo_module (and `hloc replay`) runs it
        recorded = None if inputs or literals or n > 1 else snapshot_args
        if recorded is not None:
            click.echo("hloc run: the HloSnapshot's recorded arguments (--inputs to run on "
                       "others)", err=True)
            args = bind_arguments(m, recorded)
        elif inputs or literals:
            read = read_inputs(inputs, literals)
            if positional and any(i.name is not None for i in read):
                pairs = ", ".join(f"{p.name} <- {i.name if i.name is not None else i.label}"
                                  for p, i in zip(m.entry.parameters, read))
                click.echo(f"hloc run: --positional: binding in file order: {pairs}", err=True)
            args = (md.bind_per_device(m, read, n, positional=positional) if n > 1 else
                    bind_arguments(m, read, positional=positional))
        else:
            from .fake_args import make_fake_arguments
            with progress.phase("fake arguments"):
                args = (md.fake_per_device(m, n, seed=seed,
                                           use_large_float_range=use_large_float_range)
                        if n > 1 else make_fake_arguments(
                            m, seed=seed, use_large_float_range=use_large_float_range))
        if profile and (backend != "cpu" or n > 1):
            raise InputError("--profile needs --backend cpu (one device)")
        if backend == "cpu":
            from .cli_backend import configure_cpu
            configure_cpu(numerics=numerics, opt=hlo_opt, threads=threads, profile=profile)
        runner = get_backend(backend).runner_name
        if print_literals and not as_json:
            for d, a in enumerate(args if n > 1 else [args]):
                if n > 1:
                    click.echo(f"** device {d} arguments **")
                click.echo(argument_text(m, a, print_all=print_all))

        def before(i):
            if iterations != 1:
                click.echo(f"\n=== Iteration {i}", err=True)

        def after(i, secs):
            click.echo(f"execution time for runner {runner}: {secs:g}s.", err=True)

        result = run_module(m, args, backend=backend, iterations=iterations, seed=seed,
                            before_iteration=before, after_iteration=after,
                            progress=progress, devices=n)
    finally:
        progress.close()
    if n > 1:
        from .cli_devices import report_devices
        report_devices(m, result, output, as_json, print_values or print_all, print_all,
                        print_literals, runner, expected, abs_error_bound, rel_error_bound)
        return
    if output:
        save_outputs(output, result.shape, result.value)
    if profile and not as_json:
        from .backend.profile import table
        click.echo(f"profile of {len(result.run_s)} iteration(s):", err=True)
        click.echo(table(get_backend(backend).executable.profile(), sum(result.run_s)), err=True)
    if as_json:
        obj = result_json(result, print_values=print_values or print_all)
        obj.update(getattr(get_backend(backend), "json_extra", dict)())
        click.echo(json.dumps(obj))
    else:
        if print_literals:
            click.echo(f"** Result with test runner {runner} **")
        click.echo(result_summary(result.shape, result.value, print_all=print_all))
    if expected:
        from .expect import compare_with_file
        ok, report = compare_with_file(expected, result.shape, result.value,
                                       abs_error_bound, rel_error_bound)
        click.echo(report, err=as_json)
        if not ok:
            raise SystemExit(1)
