"""`hloc opt`: optimise HLO modules as XLA:CPU's HLO passes (or hlo-opt --passes) do.

Flags map to hloc.passes.driver.optimize; the module text goes to stdout or -o.
"""
from __future__ import annotations

import re

import click


_MODULE_ID = re.compile(r"(?:^|[/\\])module_(\d+)\.[^/\\]*$")


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def _check_names(names: list[str], known: list[str], param: str) -> None:
    for name in names:
        if name not in known:
            raise click.BadParameter(
                f"Pass {name} not found. Known passes: {', '.join(sorted(known))}",
                param_hint=param)


def _timing_report(timings: dict) -> str:
    rows = sorted(timings.values(), key=lambda t: -t.seconds)
    width = max([len(t.name) for t in rows] + [5])
    lines = [f"{'pass':<{width}}  {'seconds':>9}  runs  changed"]
    for t in rows:
        lines.append(f"{t.name:<{width}}  {t.seconds:9.4f}  {t.runs:4d}  {t.changes:7d}")
    lines.append(f"{'total':<{width}}  {sum(t.seconds for t in rows):9.4f}")
    return "\n".join(lines)


class OptCommand(click.Command):
    """Accepts XLA's spellings (--xla_dump_to, --xla_disable_hlo_passes,
    --xla_enable_hlo_passes_only, --input_module, underscore forms): hloc.xla_flags."""

    def parse_args(self, ctx, args):
        from .xla_flags import Options, translate
        return super().parse_args(ctx, translate("opt", list(args), Options(self)))


@click.command("opt", cls=OptCommand)
@click.argument("module", type=click.Path(allow_dash=True), required=False)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write the optimised module here instead of stdout.")
@click.option("--pipeline", type=click.Choice(["default", "none"]), default="default",
              show_default=True, help="XLA:CPU's HLO pipeline, or no passes (print only).")
@click.option("--passes", metavar="A,B,C",
              help="Run exactly these passes, once each, in order (hlo-opt's "
                   "transforms_pipeline) instead of --pipeline.")
@click.option("--list-passes", is_flag=True, help="Print the known pass names and exit.")
@click.option("--disable-passes", metavar="A,B",
              help="Skip these passes or pipelines wherever they occur "
                   "(--xla_disable_hlo_passes).")
@click.option("--enable-passes-only", metavar="A,B",
              help="Run only these passes and pipelines, skipping every other "
                   "(--xla_enable_hlo_passes_only: a nested pipeline runs only if named).")
@click.option("--pick", metavar="TEXT",
              help="MODULE is a dump directory: take the HLO file whose name contains TEXT.")
@click.option("--dump-to", type=click.Path(file_okay=False),
              help="Write XLA-named dumps (before/after optimizations, and the LLVM IR the "
                   "compiled back end makes of the result: *.ir-no-opt.ll, "
                   "*.ir-with-opt.ll, or *.ir-no-opt.part_NN.ll ... per part of a module "
                   "compiled in parts) to this directory.")
@click.option("--dump-pass-re", metavar="REGEX",
              help="Also dump the module after every pass whose name matches "
                   "(--xla_dump_hlo_pass_re; '.*' dumps only passes that changed it).")
@click.option("--module-id", type=click.IntRange(min=0),
              help="NNNN in the dump file names [default: from an input named "
                   "module_NNNN.*, else 0].")
@click.option("-v", "--verbose", is_flag=True, help="Print a per-pass timing summary on stderr.")
@click.option("--force", is_flag=True,
              help="Optimise even an already optimized module (is_scheduled=true or fusions).")
@click.option("--verify-each/--no-verify-each", default=True, show_default=True,
              help="Run the HLO verifier on the input and after every pass that changed it.")
@click.option("--check-no-change", is_flag=True,
              help="Fail when a pass reporting no change altered the printed module.")
@click.option("--xla-cpu-use-multi-output-fusion/--no-xla-cpu-use-multi-output-fusion",
              "multi_output_fusion", default=None,
              help="XLA:CPU's multi-output fusion (off by default, as in XLA): fusion without "
                   "duplication, fusion-wrapper, then sibling fusions into tuple-rooted "
                   "fusions (cpu_multi_output_fusion). Also from XLA_FLAGS "
                   "(--xla_backend_extra_options=xla_cpu_use_multi_output_fusion).")
def opt(module, output, pipeline, passes, list_passes, disable_passes, enable_passes_only,
        pick, dump_to, dump_pass_re, module_id, verbose, force, verify_each,
        check_no_change, multi_output_fusion):
    """Optimise the HLO module(s) in MODULE and print the result.

    MODULE may be a dump directory (the HLO files there are listed; --pick TEXT takes
    one). XLA's spellings --xla_dump_to, --xla_disable_hlo_passes and
    --xla_enable_hlo_passes_only are understood, the last two also from XLA_FLAGS
    (command-line options win; applied ones are said on stderr).

    Exit status: 0 ok, 2 bad input, unknown pass or parse/verify error, 4 a pass failed.
    """
    import os

    from .cli_common import cli_progress, load_modules, write_text
    from .xla_flags import cpu_options_from_env, pass_flags_from_env
    from .passes import list_passes as known_passes
    from .passes.driver import optimize
    from .passes.dump import Dumper
    from .passes.pipelines import default_pipeline, pipeline_names, transforms_pipeline
    from .printer import module_to_text

    known = known_passes()
    if list_passes:
        click.echo(",".join(known))
        return
    if module is None:
        raise click.UsageError("Missing argument 'MODULE'.")
    names = _names(passes)
    if passes is not None:
        if not names:
            raise click.BadParameter("expects at least one pass name", param_hint="--passes")
        _check_names(names, known, "--passes")
    env = pass_flags_from_env(os.environ.get("XLA_FLAGS"))
    if disable_passes is None and enable_passes_only is None and env:
        disable_passes = env.get("xla_disable_hlo_passes")
        enable_passes_only = env.get("xla_enable_hlo_passes_only")
        click.echo("hloc opt: from XLA_FLAGS: " + " ".join(
            f"--{k}={v}" for k, v in sorted(env.items())), err=True)
    if disable_passes is not None and enable_passes_only is not None:
        raise click.UsageError("only one of --disable-passes and --enable-passes-only "
                               "(--xla_disable_hlo_passes / --xla_enable_hlo_passes_only) "
                               "can be given, as in XLA")
    cpu_env = cpu_options_from_env(os.environ.get("XLA_FLAGS"))
    if multi_output_fusion is None and "xla_cpu_use_multi_output_fusion" in cpu_env:
        multi_output_fusion = cpu_env["xla_cpu_use_multi_output_fusion"]
        click.echo("hloc opt: from XLA_FLAGS: xla_cpu_use_multi_output_fusion="
                   f"{str(multi_output_fusion).lower()}", err=True)
    disabled = _names(disable_passes)
    if dump_pass_re is not None:
        try:
            re.compile(dump_pass_re)
        except re.error as e:
            raise click.BadParameter(f"not a regular expression: {e}",
                                     param_hint="--dump-pass-re") from None
        if dump_to is None:
            raise click.UsageError("--dump-pass-re needs --dump-to")

    def make_pipeline():
        if passes is not None:
            return transforms_pipeline(names)
        if pipeline != "default":
            return None
        return default_pipeline(multi_output_fusion=bool(multi_output_fusion))

    sample = make_pipeline()
    every = sorted(set(known) | set(pipeline_names(sample) if sample else []))
    if disabled:
        _check_names(disabled, every, "--disable-passes")
    if enable_passes_only is not None:
        enabled = _names(enable_passes_only)
        _check_names(enabled, every, "--enable-passes-only")
        top = {sample.name} if sample is not None else set()
        disabled = [n for n in every if n not in enabled and n not in top]
    progress = cli_progress()
    try:
        path, modules = load_modules(module, command="opt", pick=pick, progress=progress)
        if module_id is None:
            m = _MODULE_ID.search(path)
            module_id = int(m.group(1)) if m else 0
        outputs = []
        for n, m in enumerate(modules):
            dumper = Dumper(dump_to, m.name, module_id + n, dump_pass_re) if dump_to else None
            with progress.phase("passes", m.name):
                result = optimize(m, make_pipeline(), verify_each=verify_each,
                                  check_no_change=check_no_change, disabled=disabled,
                                  dumper=dumper, force=force, progress=progress)
            if result.skipped:
                click.echo(f"hloc opt: {m.name}: {result.skipped}; printed unchanged "
                           f"(--force to optimise anyway)", err=True)
            if verbose and result.timings:
                click.echo(f"{m.name}:\n{_timing_report(result.timings)}", err=True)
            if dumper is not None:
                with progress.phase("LLVM IR", m.name):
                    _dump_llvm_ir(dumper, m)
            outputs.append(module_to_text(m))
    finally:
        progress.close()
    text = "---\n".join(outputs)
    write_text(text, output)


def _dump_llvm_ir(dumper, module) -> None:
    """XLA:CPU's `<module>.ir-no-opt.ll` / `.ir-with-opt.ll` (llvm_ir::DumpIrIfEnabled's
    names): the IR `hloc emit-llvm --no-opt` and `hloc emit-llvm` print for the optimised
    module, one file per part where the compiled back end compiles it in parts
    (`.ir-no-opt.part_00.ll` ..., as XLA names the parts of its parallel-codegen split;
    hloc.backend.llvm_parts), each after a comment naming its settings. A module the
    compiled back end cannot lower gets no .ll files and one line on stderr saying why."""
    from .backend import Options, llvm_parts
    from .diagnostics import UnsupportedError
    options = Options()
    try:
        parts = llvm_parts.module_parts(module, options, optimized=False)
    except UnsupportedError as e:
        click.echo(f"hloc opt: {module.name}: no LLVM IR dump: {e.message}", err=True)
        return
    for suffix, text in llvm_parts.dump_files(parts, optimized=False):
        dumper.write(suffix, text)
    optimised = [llvm_parts.optimised(p) for p in parts]
    for suffix, text in llvm_parts.dump_files(optimised, optimized=True):
        dumper.write(suffix, text)
