"""`--dump-to` / `--dump-pass-re`: HLO text dumps named as xla/service/dump.cc names them.

Every file is `module_<%04d id>.<module name>.<suffix>.txt` (FilenameFor; the module
name is dropped when the name would exceed 255 characters), passed through XLA's
SanitizeFileName (`/ \\ [ ] space` become `_`; hloc also replaces control and non-ASCII
characters) and written inside the dump directory, which is created when missing; a
name can never leave it, and an existing symlink is not followed. The stages hloc has:

- `before_optimizations` (the input) and `cpu_after_optimizations` (the result; XLA:CPU
  prefixes `cpu_`), each with the `debug_options` file XLA writes beside them (the
  non-default DebugOptions as text proto: here `xla_dump_to` and `xla_dump_hlo_pass_re`);
- with a pass regex, `<%04d step>.<pipeline>.after_<pass>.before_<next pass>` per
  DumpHloModuleBetweenPassesIfEnabled, where the step counts the per-pass files of this
  module from 0000. As in HloPassPipeline::RunPassesInternal, each pipeline run (each
  round of a fixed point) writes `after_pipeline-start.before_<first pass>`; after a
  pass (or nested pipeline) a file is written when the pass changed the module or the
  regex is not exactly `.*`; and a file is written only if the regex matches (re.search,
  like RE2::PartialMatch) the name before or after it. The last pass is followed by
  `before_pipeline-end`.
"""
from __future__ import annotations

import os
import re

from ..diagnostics import HlocError

MAX_FILE_NAME = 255
_UNSAFE = re.compile(r"[^\x21-\x7e]|[/\\\[\]]")


class DumpError(HlocError):
    exit_code = 2


def sanitize_file_name(name: str) -> str:
    """XLA's SanitizeFileName, extended to control and non-ASCII characters."""
    return _UNSAFE.sub("_", name)


def file_name_for(module_id: int, module_name: str, suffix: str) -> str:
    """FilenameFor(unique_id, module_name, prefix="", suffix), then sanitised."""
    name = f"module_{module_id:04d}"
    full = f"{name}.{module_name}.{suffix}" if module_name else f"{name}.{suffix}"
    if module_name and len(full) > MAX_FILE_NAME:
        full = f"{name}.{suffix}"
    return sanitize_file_name(full)


def _text_proto_string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append(f"\\{ord(ch):03o}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class Dumper:
    """Writes one module's dumps into `directory`; `written` lists the paths."""

    def __init__(self, directory, module_name: str, module_id: int = 0,
                 pass_re: str | None = None):
        self.directory = os.path.abspath(os.fspath(directory))
        self.module_name = module_name
        self.module_id = module_id
        self.pass_re = pass_re or None
        self._pattern = re.compile(pass_re) if pass_re else None
        self.step = 0
        self.written: list[str] = []

    # -- naming ----------------------------------------------------------------
    def file_name(self, suffix: str) -> str:
        return file_name_for(self.module_id, self.module_name, suffix)

    def _matches(self, pass_name: str) -> bool:
        return self._pattern is not None and self._pattern.search(pass_name) is not None

    # -- writing ---------------------------------------------------------------
    def write(self, suffix: str, text: str) -> str:
        """Write `text` as the file for `suffix` (no extension added); returns the path."""
        name = self.file_name(suffix)
        path = os.path.join(self.directory, name)
        if os.path.dirname(path) != self.directory or name in ("", ".", ".."):
            raise DumpError(f"refusing to write dump file {name!r} outside {self.directory}")
        try:
            os.makedirs(self.directory, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(path, flags, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        except OSError as e:
            raise DumpError(f"cannot write dump file {path}: {e.strerror}") from None
        self.written.append(path)
        return path

    def _module_text(self, module) -> str:
        from ..printer import module_to_text
        return module_to_text(module)

    def debug_options(self) -> str:
        text = f"xla_dump_to: {_text_proto_string(self.directory)}\n"
        if self.pass_re:
            text += f"xla_dump_hlo_pass_re: {_text_proto_string(self.pass_re)}\n"
        return text

    def before_optimizations(self, module) -> None:
        self.write("before_optimizations.txt", self._module_text(module))
        self.write("debug_options", self.debug_options())

    def after_optimizations(self, module, text: str | None = None) -> None:
        self.write("cpu_after_optimizations.txt",
                   self._module_text(module) if text is None else text)
        self.write("debug_options", self.debug_options())

    # -- per-pass files (called by PassContext) -----------------------------------
    def between_passes(self, module, pipeline_name: str, after: str, before: str) -> None:
        """DumpHloModuleBetweenPassesIfEnabled."""
        if not (self._matches(before) or self._matches(after)):
            return
        suffix = f"{self.step:04d}.{pipeline_name}.after_{after}.before_{before}.txt"
        self.step += 1
        self.write(suffix, self._module_text(module))

    def pipeline_start(self, module, pipeline) -> None:
        first = pipeline.passes[0].name if pipeline.passes else "pipeline-end"
        self.between_passes(module, pipeline.name, "pipeline-start", first)

    def after_pass(self, module, pipeline_name: str, pass_name: str, next_name: str,
                   changed: bool) -> None:
        if self._pattern is None or not (changed or self.pass_re != ".*"):
            return
        self.between_passes(module, pipeline_name, pass_name, next_name)
