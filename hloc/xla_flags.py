"""run_hlo_module's and XLA's flag spellings, mapped to hloc's options or refused.

`translate(command, args, known)` rewrites a command line before click sees it:
`--input_module=F` becomes the module argument, `--platform=interpreter` becomes
`--backend interpreter`, `--print_literals` `--print-literals`, `--xla_dump_to=D`
(opt) `--dump-to D`, ... and any `--some_option` whose hyphenated form is one of the
command's options is accepted as that option. A spelling hloc understands but does not
do raises FlagError: one `error:` line saying what hloc does instead. The back ends
behind `--platform` come from PLATFORMS; a platform whose back end is not registered
in hloc.runner.BACKENDS is refused with PENDING's reason, so enabling `cpu` is adding
the back end (and, if its name differs, editing PLATFORMS). `pass_flags_from_env(text)`
reads `--xla_disable_hlo_passes` / `--xla_enable_hlo_passes_only` from an XLA_FLAGS
value (the CLI passes the environment's; this module reads no environment).
`cpu_options_from_env(text)` reads XLA:CPU's `xla_cpu_use_multi_output_fusion`, a
backend extra option (`--xla_backend_extra_options=xla_cpu_use_multi_output_fusion`,
XLA's spelling; hloc also takes `--xla_cpu_use_multi_output_fusion[=true]`), and
`translate` maps the same spellings on `hloc opt`'s command line to
`--xla-cpu-use-multi-output-fusion`.
"""
from __future__ import annotations

import shlex

import click

from .diagnostics import InputError

__all__ = ["translate", "pass_flags_from_env", "cpu_options_from_env", "PLATFORMS",
           "PENDING", "FlagError"]

# --platform / --reference_platform value -> hloc back-end name (hloc.runner.BACKENDS).
PLATFORMS = {"interpreter": "interpreter", "cpu": "cpu", "host": "cpu"}
# Why a platform cannot run (yet): shown when its back end is not registered.
PENDING = {
    "cpu": "the compiled CPU back end is not there yet; hloc runs modules on its reference "
           "interpreter (--platform=interpreter)",
    "gpu": "hloc has no GPU back end; it runs on its reference interpreter "
           "(--platform=interpreter)",
}
for _gpu in ("cuda", "rocm", "tpu", "sycl"):
    PENDING[_gpu] = PENDING["gpu"]
    PLATFORMS[_gpu] = "gpu"

_TRUE, _FALSE = ("", "true", "1", "yes"), ("false", "0", "no")

_ONE_SIDE = ("hloc run has one side, whose HLO pipeline --opt / --no-opt runs or skips "
             "(default: only on a module not optimised yet); `hloc replay` takes this flag "
             "as run_hlo_module does")
_WHOLE_PIPELINE = ("hloc run runs the whole default HLO pipeline or none (--opt / --no-opt); "
                   "to choose passes: `hloc opt MODULE {} A,B -o OUT`, "
                   "then `hloc run --no-opt OUT`")
_REFUSED = {
    "reference_platform": "hloc run compares with known outputs instead of a second "
                          "platform: --expected OUT.npz (e.g. from `hloc run --output`); "
                          "`hloc replay` runs a test and a reference platform as "
                          "run_hlo_module does",
    "input_literals_file": "hloc reads arguments from .npz/.npy files (--inputs) or literal "
                           "text (--input-literal), not RunHloModuleLiterals protos",
    "output_literals_file": "hloc writes results as .npz (--output), not "
                            "RunHloModuleLiterals protos",
    "run_test_hlo_passes": _ONE_SIDE,
    "run_reference_hlo_passes": _ONE_SIDE,
    "xla_dump_to": "hloc run writes no dumps; `hloc opt MODULE --dump-to DIR` writes the "
                   "XLA-named dumps of what it compiles (HLO after the pipeline, LLVM IR)",
    "xla_disable_hlo_passes": _WHOLE_PIPELINE.format("--disable-passes"),
    "xla_enable_hlo_passes_only": _WHOLE_PIPELINE.format("--enable-passes-only"),
}
_OPT_MAP = {"xla_dump_to": "--dump-to", "xla_disable_hlo_passes": "--disable-passes",
            "xla_enable_hlo_passes_only": "--enable-passes-only",
            "xla_dump_hlo_pass_re": "--dump-pass-re",
            "input_module": None}     # None: the module argument
# Flags that ask for what hloc opt does anyway (its dumps are HLO text).
_OPT_NOOP = {"xla_dump_hlo_as_text"}
# XLA:CPU backend extra options (cpu_options.cc) hloc opt does -> its option.
_BACKEND_EXTRA = {"xla_cpu_use_multi_output_fusion": "--xla-cpu-use-multi-output-fusion"}


def _split(arg: str) -> tuple[str, str | None]:
    name, eq, value = arg[2:].partition("=")
    return name, (value if eq else None)


class FlagError(InputError):
    """A run_hlo_module / XLA spelling hloc understands but does not do (exit 2)."""


def _refuse(flag: str, why: str):
    raise FlagError(f"--{flag}: {why}")


def _platform(flag: str, value: str, backends) -> list[str]:
    backend = PLATFORMS.get(value.lower())
    if backend is None:
        _refuse(flag, f"unknown platform {value!r} (hloc knows: "
                      f"{', '.join(sorted(PLATFORMS))})")
    if backend not in backends:
        _refuse(flag, f"{value}: {PENDING.get(backend, 'no such back end in hloc')}")
    return ["--backend", backend]


def _value(args: list[str], i: int, name: str, value: str | None) -> tuple[str, int]:
    if value is not None:
        return value, i + 1
    if i + 1 >= len(args):
        raise click.UsageError(f"--{name} needs a value")
    return args[i + 1], i + 2


def translate(command: str, args: list[str], known: set[str], backends=()) -> list[str]:
    """`args` with run_hlo_module / XLA spellings replaced by `command`'s options."""
    out: list[str] = []
    module: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if not arg.startswith("--") or arg.split("=", 1)[0] in known:
            out.append(arg)
            i += 1
            continue
        name, value = _split(arg)
        name = name.replace("-", "_")       # run_hlo_module's names, either spelling
        if name == "input_format":
            value, i = _value(args, i, name, value)
            if "--input-format" in known:
                out.append(f"--input-format={value.lower()}")
            elif value.lower() not in ("hlo", "txt", "text", "pb", "pbtxt"):
                _refuse(name, f"{value}: hloc reads HLO text, and XLA's protos by their "
                              f".pb / .pbtxt extension")
            continue
        if name == "input_module":
            value, i = _value(args, i, name, value)
            module.append(value)
            continue
        if command == "run" and name == "platform":
            value, i = _value(args, i, name, value)
            out.extend(_platform(name, value, backends))
            continue
        if command == "run" and name == "reference_platform":
            value, i = _value(args, i, name, value)
            if value.lower() in ("", "none"):
                continue                # no reference run: what hloc does anyway
            _refuse(name, _REFUSED[name])
        if command == "run" and name == "random_init_input_literals":
            if (value or "").lower() in _TRUE:
                i += 1
                continue
            _refuse(name, "without --inputs hloc always makes fake arguments")
        if command == "opt" and name == "xla_backend_extra_options":
            value, i = _value(args, i, name, value)
            out.extend(_backend_extra(value))
            continue
        if command == "opt" and name in _OPT_NOOP and (value or "").lower() in _TRUE:
            i += 1
            continue
        if command == "opt" and _OPT_MAP.get(name):
            value, i = _value(args, i, name, value)
            out.extend([_OPT_MAP[name], value])
            continue
        if command == "opt" and name in _REFUSED and name not in _OPT_MAP:
            _refuse(name, "a flag of running a module; hloc opt only optimises and prints it "
                          "(`hloc replay` takes it as run_hlo_module does)")
        if command == "run" and name in _REFUSED:
            _refuse(name, _REFUSED[name])
        hyphen = "--" + name.replace("_", "-")
        if hyphen in known:
            if value is not None and value.lower() in _TRUE + _FALSE and \
                    hyphen in known and _is_flag(hyphen, known):
                if value.lower() in _TRUE:
                    out.append(hyphen)
                elif "--no-" + hyphen[2:] in known:     # off, over XLA_FLAGS' on
                    out.append("--no-" + hyphen[2:])
                i += 1
                continue
            out.append(hyphen if value is None else f"{hyphen}={value}")
            i += 1
            continue
        if name.startswith("xla_"):
            _refuse(name, f"hloc does not read XLA's debug options (`hloc {command} --help` "
                          f"lists what it does)")
        out.append(arg)         # click reports it
        i += 1
    if module:
        out.extend(["--", *module] if not any(a == "--" for a in out) else module)
    return out


def _extra_options(value: str) -> dict[str, str]:
    """xla_backend_extra_options' `key[=value],...` (a key alone means on)."""
    out = {}
    for item in value.split(","):
        key, _, val = item.strip().partition("=")
        if key:
            out[key] = val
    return out


def _backend_extra(value: str) -> list[str]:
    out = []
    for key, val in _extra_options(value).items():
        if key not in _BACKEND_EXTRA:
            _refuse("xla_backend_extra_options",
                    f"{key}: hloc opt does not do this XLA:CPU backend option (it does: "
                    f"{', '.join(sorted(_BACKEND_EXTRA))})")
        if val.lower() in _TRUE:
            out.append(_BACKEND_EXTRA[key])
        elif val.lower() in _FALSE:
            out.append("--no-" + _BACKEND_EXTRA[key][2:])
        else:
            _refuse("xla_backend_extra_options", f"{key}={val}: expected true or false")
    return out


def _env_flags(text: str | None):
    """(name, value or None) of each `--flag[=value]` word of an XLA_FLAGS value."""
    try:
        words = shlex.split(text or "")
    except ValueError:
        words = (text or "").split()
    return [_split(w) for w in words if w.startswith("--")]


def cpu_options_from_env(text: str | None) -> dict[str, bool]:
    """XLA:CPU options in an XLA_FLAGS value that hloc opt does:
    {"xla_cpu_use_multi_output_fusion": bool} when XLA_FLAGS sets it."""
    out: dict[str, bool] = {}
    for name, value in _env_flags(text):
        if name == "xla_backend_extra_options" and value is not None:
            for key, val in _extra_options(value).items():
                if key in _BACKEND_EXTRA:
                    out[key] = val.lower() in _TRUE
        elif name in _BACKEND_EXTRA:
            out[name] = (value or "").lower() in _TRUE
    return out


def _is_flag(option: str, known) -> bool:
    return getattr(known, "flags", None) is not None and option in known.flags


class Options(set):
    """A command's option spellings, and which of them are on/off flags."""

    def __init__(self, command: click.Command):
        names, flags = set(), set()
        for p in command.params:
            if isinstance(p, click.Option):
                names.update(p.opts)
                names.update(p.secondary_opts)
                if p.is_flag:
                    flags.update(p.opts)
        super().__init__(names)
        self.flags = flags


def pass_flags_from_env(text: str | None) -> dict[str, str]:
    """`xla_disable_hlo_passes` / `xla_enable_hlo_passes_only` values in XLA_FLAGS."""
    out: dict[str, str] = {}
    for name, value in _env_flags(text):
        if name in ("xla_disable_hlo_passes", "xla_enable_hlo_passes_only") and value:
            out[name] = value
    return out
