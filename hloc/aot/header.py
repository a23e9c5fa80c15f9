"""The C header of a compiled module (and its optional C++ wrapper class).

Everything a caller needs is in it: the entry points, the error codes, one block of
constants per argument and result (element type, dimensions, byte size, layout, the HLO
name), the scratch size and alignment, name->index enums and a lookup function, and the
thread-pool callback type. Nothing in it depends on Python.
"""
from __future__ import annotations

import re

from .lower import ERRORS, SCRATCH_ALIGN, Lowered


def _text(s: str) -> str:
    """A name from the dump inside a C comment: it cannot end the comment or the line."""
    return "".join(c if c.isprintable() else "?" for c in str(s)).replace("*/", "*\\/")


def _cstr(s: str) -> str:
    """A name from the dump as a C string literal's contents."""
    out = []
    for ch in str(s):
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isascii() and ch.isprintable():
            out.append(ch)
        else:
            out.extend(f"\\{b:03o}" for b in ch.encode())
    return "".join(out)


def _dims(dims) -> str:
    return "[" + ", ".join(map(str, dims)) + "]"


def _describe(kind, leaf) -> str:
    if leaf.dtype == "token":
        return f"/* {kind} {leaf.index}: `{_text(leaf.name)}`: token (no data; the pointer is ignored, may be NULL) */"
    layout = "row-major" if leaf.is_default_layout else (
        f"physical order {_dims(leaf.physical_dims)} (minor_to_major {{{','.join(map(str, leaf.minor_to_major))}}})")
    note = f"; {leaf.note}" if leaf.note else ""
    return (f"/* {kind} {leaf.index}: `{_text(leaf.name)}`: {leaf.dtype}{_dims(leaf.dims)}, "
            f"{leaf.nbytes} bytes, {leaf.ctype}{note}, layout {{{','.join(map(str, leaf.minor_to_major))}}} "
            f"({layout}), aligned to {leaf.align} */")


def _block(P, kind, leaves) -> list[str]:
    up = kind.upper()
    out = []
    for leaf in leaves:
        base = f"{P}_{up}_{leaf.ident}"
        out.append(_describe(kind, leaf))
        out.append(f"#define {base}_INDEX {leaf.index}")
        out.append(f"#define {base}_BYTES {leaf.nbytes}")
        out.append(f"#define {base}_RANK {len(leaf.dims)}")
        out.append(f"#define {base}_ELEMENTS {_count(leaf.dims)}")
        if leaf.dims:
            out.append(f"static const int64_t {base}_DIMS[{len(leaf.dims)}] = "
                       f"{{{', '.join(map(str, leaf.dims))}}};")
        out.append(f"typedef {leaf.ctype} {base}_T;")
        out.append("")
    return out


def _count(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _names(P, kind, leaves) -> list[str]:
    up = kind.upper()
    out = [f"static const char* const {P}_{kind}_names[{max(1, len(leaves))}] = {{"]
    out += [f'  "{_cstr(leaf.name)}",' for leaf in leaves] or ['  ""']
    out.append("};")
    out.append(f"static const int64_t {P}_{kind}_bytes[{max(1, len(leaves))}] = "
               f"{{{', '.join(str(x.nbytes) for x in leaves) or '0'}}};")
    out.append(f"/* The index of the {kind} named `name` (its HLO name), or -1. */")
    out.append(f"static inline int {P}_{kind}_index(const char* name) {{")
    out.append(f"  for (int i = 0; i < {P}_NUM_{up}S; ++i)")
    out.append(f"    if (strcmp({P}_{kind}_names[i], name) == 0) return i;")
    out.append("  return -1;")
    out.append("}")
    if leaves:
        out.append(f"enum {{ {', '.join(f'{P}_{up}_{x.ident} = {x.index}' for x in leaves)} }};")
    return out


# Kernels that take their scratch from the C heap (hloc.backend.sorting / fft / lapack).
_ALLOCATES = re.compile(r'^declare [^\n]*@"?malloc"?\(', re.M)


def header_text(low: Lowered, module_name: str, source: str, target, cpp_class: str | None = None,
                link_note: str = "") -> str:
    P = low.prefix
    guard = f"{P.upper()}_H_"
    lines = [
        f"/* {P}.h: the C interface of HLO module `{_text(module_name)}` compiled ahead of time by hloc",
        f" * (hloc compile {_text(source)}). Target {target.triple}, cpu {_text(target.cpu)}.",
        " *",
        " * Call:",
        f" *   void* args[{P}_NUM_ARGS]       one pointer per argument buffer, in the order below",
        f" *   void* results[{P}_NUM_RESULTS] one pointer per result buffer (written by the call)",
        f" *   void* scratch                 {P}_SCRATCH_BYTES bytes aligned to {P}_SCRATCH_ALIGN",
        *([" *                                 (NULL when that is 0); sort, fft and LAPACK kernels",
           " *                                 also malloc row scratch, freed before they return."]
          if _ALLOCATES.search(low.ir_text) else
          [" *                                 (NULL when that is 0); the library never allocates."]),
        f" *   int rc = {P}_run(args, results, scratch);            threads: {P}_DEFAULT_THREADS",
        f" *   int rc = {P}_run_with(args, results, scratch, &cfg); threads / thread pool per call",
        " * Buffers hold elements in the layout stated for each (row-major unless said),",
        " * contiguous, aligned to their element size. Arguments are only read; results must",
        " * not overlap arguments, each other or scratch. Every call is independent: the library",
        " * has no mutable global state, so threads may call it at once, each with its own",
        " * results and scratch. Results do not depend on the thread count.",
        f" * Link: {_text(link_note) or 'nothing beyond libc, libm and libpthread (-lm -lpthread for a static link).'}",
        *([" * Stack: large dots (the emitted GEMM) use about 160 KiB of stack in each thread that",
           " * runs them: the caller's and, with a thread pool, the pool's threads."]
          if "hloc.gemm." in low.ir_text else []),
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"#define {P}_NUM_ARGS {len(low.args)}",
        f"#define {P}_NUM_RESULTS {len(low.results)}",
        f"#define {P}_SCRATCH_BYTES {low.scratch}",
        f"#define {P}_SCRATCH_ALIGN {SCRATCH_ALIGN}",
        f"#define {P}_DEFAULT_THREADS {low.threads}",
        f"#define {P}_MAX_THREADS 64",
        "",
        "/* Return codes: nothing has been written when a call returns an error. */",
    ]
    for code, (name, why) in ERRORS.items():
        lines.append(f"#define {P}_{name} {code}  /* {why} */")
    lines += [
        "",
        "/* A caller's thread pool: run task(task_arg, i) for every i in [0, n), on any threads,",
        " * and return when all have finished. */",
        f"typedef void (*{P}_task_fn)(void* task_arg, int64_t i);",
        f"typedef void (*{P}_parallel_for_fn)(void* pool, int64_t n, {P}_task_fn task, void* task_arg);",
        "typedef struct {",
        f"  int64_t threads;                 /* 1..{P}_MAX_THREADS: how many large kernels are split over */",
        f"  {P}_parallel_for_fn parallel_for; /* NULL: the library's own worker pool (stopped at exit or dlclose) */",
        "  void* pool;                      /* passed to parallel_for */",
        f"}} {P}_config;",
        "",
        f"int {P}_run(void* const* args, void* const* results, void* scratch);",
        f"int {P}_run_with(void* const* args, void* const* results, void* scratch,",
        f"               const {P}_config* config);   /* config NULL: as {P}_run */",
        "",
        "/* ---- arguments (ENTRY parameters, tuples flattened) ---- */",
    ]
    lines += _block(P, "arg", low.args)
    lines.append("/* ---- results (ROOT, tuples flattened) ---- */")
    lines += _block(P, "result", low.results)
    lines += _names(P, "arg", low.args) + [""] + _names(P, "result", low.results)
    lines += ["", "#ifdef __cplusplus", '}  /* extern "C" */']
    if cpp_class:
        lines += _cpp_class(P, cpp_class)
    lines += ["#endif", "", f"#endif  /* {guard} */", ""]
    return "\n".join(lines)


def _cpp_class(P, spec) -> list[str]:
    parts = spec.split("::")
    ns, name = parts[:-1], parts[-1]
    out = ["", "#include <cstdlib>", "#include <new>", ""]
    out += [f"namespace {n} {{" for n in ns]
    out += [
        f"/* Owns aligned buffers for every argument, result and the scratch, like tfcompile's",
        f" * classes: fill arg_data(i), call Run(), read result_data(i). Not copyable. */",
        f"class {name} {{",
        " public:",
        f"  static constexpr int kNumArgs = {P}_NUM_ARGS;",
        f"  static constexpr int kNumResults = {P}_NUM_RESULTS;",
        f"  {name}() {{",
        f"    for (int i = 0; i < kNumArgs; ++i) args_[i] = Alloc({P}_arg_bytes[i]);",
        f"    for (int i = 0; i < kNumResults; ++i) results_[i] = Alloc({P}_result_bytes[i]);",
        f"    scratch_ = Alloc({P}_SCRATCH_BYTES);",
        "  }",
        f"  ~{name}() {{",
        "    for (int i = 0; i < kNumArgs; ++i) std::free(args_[i]);",
        "    for (int i = 0; i < kNumResults; ++i) std::free(results_[i]);",
        "    std::free(scratch_);",
        "  }",
        f"  {name}(const {name}&) = delete;",
        f"  {name}& operator=(const {name}&) = delete;",
        "  void set_thread_count(int64_t n) { config_.threads = n; }",
        f"  void set_thread_pool({P}_parallel_for_fn fn, void* pool) {{ config_.parallel_for = fn; config_.pool = pool; }}",
        f"  /* {P}_OK (0) on success, else one of the {P}_ERR_* codes. */",
        f"  int Run() {{ return {P}_run_with(args_, results_, scratch_, &config_); }}",
        "  void* arg_data(int i) { return args_[i]; }",
        "  const void* result_data(int i) const { return results_[i]; }",
        f"  static int LookupArgIndex(const char* name) {{ return {P}_arg_index(name); }}",
        f"  static int LookupResultIndex(const char* name) {{ return {P}_result_index(name); }}",
        " private:",
        "  static void* Alloc(int64_t n) {",
        f"    if (n == 0) return nullptr;",
        f"    void* p = std::aligned_alloc({P}_SCRATCH_ALIGN, (n + {P}_SCRATCH_ALIGN - 1) / {P}_SCRATCH_ALIGN * {P}_SCRATCH_ALIGN);",
        "    if (!p) throw std::bad_alloc();",
        "    return p;",
        "  }",
        "  void* args_[kNumArgs > 0 ? kNumArgs : 1] = {};",
        "  void* results_[kNumResults > 0 ? kNumResults : 1] = {};",
        "  void* scratch_ = nullptr;",
        f"  {P}_config config_ = {{{P}_DEFAULT_THREADS, nullptr, nullptr}};",
        "};",
    ]
    out += [f"}}  // namespace {n}" for n in reversed(ns)]
    return out
