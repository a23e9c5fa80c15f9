"""Compiled hloc against XLA:CPU (via JAX), the interpreter and NumPy op by op.

    python benchmarks/run.py [CASE ...] [--repeat N] [--numerics xla-cpu|ieee] [--threads N]
                             [--no-interpreter] [--profile] [--compile-breakdown]
    /work/venv-jax/bin/python benchmarks/run.py      # adds the XLA:CPU columns

Same inputs for every executor, one process. The first six cases are HLO modules written
as JAX would lower them (before-optimizations: hloc's default pipeline runs first, as
`hloc run --backend cpu` does), checked against NumPy (ErrorSpec 1e-3); "stream" is the
streaming limit for the bytes the case must read and write (np.copyto of as many bytes,
measured in the same run). The file cases are JAX dumps (testdata/dumps training steps,
benchmarks/data scans from tools/gen_bench_dumps.py), checked against the values JAX
computed and timed on XLA:CPU by compiling the same HLO text (as tools/check_dumps.py).
Times are the best of --repeat steady-state calls (the interpreter: best of 2); compile
times are hloc's without cache and XLA's `jit(...).lower(...).compile()` (or
compile_and_load of the text). --profile prints hloc's per-kernel profile per case;
--compile-breakdown a second table of where hloc's compile time goes: HLO passes, LLVM IR
generation (Python), LLVM (wall, over the parts compiled on threads; and parse / optimise /
codegen summed over parts), loading, with the process CPU seconds of the whole compile.
Not a test: timings on a shared machine vary by +-30 %.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hloc  # noqa: E402
from hloc.backend import compile_module  # noqa: E402
from hloc.cli_backend import prepare_for_cpu  # noqa: E402
from hloc.compare import ErrorSpec, near  # noqa: E402
from hloc.inputs import bind_arguments, flatten_leaves, load_npz  # noqa: E402
from hloc.runner import run_module  # noqa: E402
from timing import best  # noqa: E402  (benchmarks/timing.py)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from row_modules import layernorm as _layernorm, softmax as _softmax  # noqa: E402  (the row tests' texts)

ROOT = Path(__file__).resolve().parents[1]

_ADD = "add_f {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT r = f32[] add(a, b)\n}\n"


def _sum_xyz(n):
    return f"""HloModule sum_xyz
{_ADD}
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  s = f32[{n}] add(x, m)
  zero = f32[] constant(0)
  ROOT r = f32[] reduce(s, zero), dimensions={{0}}, to_apply=add_f
}}
"""


def _poly(n):
    return f"""HloModule poly
ENTRY e {{
  x = f32[{n}] parameter(0)
  xx = f32[{n}] multiply(x, x)
  two = f32[] constant(2)
  two_b = f32[{n}] broadcast(two), dimensions={{}}
  tx = f32[{n}] multiply(two_b, x)
  a = f32[{n}] add(xx, tx)
  one = f32[] constant(1)
  one_b = f32[{n}] broadcast(one), dimensions={{}}
  ROOT r = f32[{n}] add(a, one_b)
}}
"""


def _relu_sq_mean(n):
    return f"""HloModule relu_sq_mean
{_ADD}
ENTRY e {{
  x = f32[{n}] parameter(0)
  zero = f32[] constant(0)
  zero_b = f32[{n}] broadcast(zero), dimensions={{}}
  r = f32[{n}] maximum(x, zero_b)
  sq = f32[{n}] multiply(r, r)
  s = f32[] reduce(sq, zero), dimensions={{0}}, to_apply=add_f
  cnt = f32[] constant({n})
  ROOT m = f32[] divide(s, cnt)
}}
"""


def _matmul(n):
    return f"""HloModule matmul
ENTRY e {{
  x = f32[{n},{n}] parameter(0)
  y = f32[{n},{n}] parameter(1)
  ROOT d = f32[{n},{n}] dot(x, y), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def _np_softmax(x):
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def _np_layernorm(x):
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    return d / np.sqrt(var + np.float32(1e-5))


M4, M8 = 4 << 20, 8 << 20
CASES = {
    "sum(x+y*z) 3x4M": (_sum_xyz(M4), lambda r: [r.standard_normal(M4, np.float32) for _ in range(3)],
                        lambda x, y, z: np.sum(x + y * z)),
    "x*x+2x+1 8M": (_poly(M8), lambda r: [r.standard_normal(M8, np.float32)],
                    lambda x: x * x + 2 * x + 1),
    "mean(relu(x)^2) 8M": (_relu_sq_mean(M8), lambda r: [r.standard_normal(M8, np.float32)],
                           lambda x: np.mean(np.maximum(x, 0) ** 2)),
    "softmax 512x8192": (_softmax(512, 8192), lambda r: [r.standard_normal((512, 8192), np.float32)],
                         _np_softmax),
    "layernorm 4096x1024": (_layernorm(4096, 1024),
                            lambda r: [r.standard_normal((4096, 1024), np.float32)], _np_layernorm),
    "matmul 1024^2 f32": (_matmul(1024), lambda r: [r.standard_normal((1024, 1024), np.float32)
                                                    for _ in range(2)], lambda x, y: x @ y),
}

# Bytes each case must read and write (for the streaming limit).
STREAM_BYTES = {"sum(x+y*z) 3x4M": 3 * M4 * 4, "x*x+2x+1 8M": 2 * M8 * 4,
                "mean(relu(x)^2) 8M": M8 * 4, "softmax 512x8192": 2 * 512 * 8192 * 4,
                "layernorm 4096x1024": 2 * 4096 * 1024 * 4}
FILE_CASES = {
    "MLP train step": ROOT / "testdata/dumps/mlp_train_step",
    "BERT-like block train step": ROOT / "testdata/dumps/bert_train_step",
    "CNN train step": ROOT / "testdata/dumps/cnn_train_step",
    "scan 10k 3x3 f64 carry": ROOT / "benchmarks/data/scan_carry_f64",
    "grad(scan), 32 scalar leaves": ROOT / "benchmarks/data/grad_scan_scalars",
}


def _file_case(stem: Path):
    hlo = stem.with_name(stem.name + ".before_optimizations.hlo")
    if not hlo.exists():
        hlo = stem.with_suffix(".hlo")
    d = load_npz(stem.with_suffix(".npz"))
    n_in = sum(1 for k in d if k.startswith("in") and k[2:].isdigit())
    n_out = sum(1 for k in d if k.startswith("out") and k[3:].isdigit())
    return hlo.read_text(), [d[f"in{i}"] for i in range(n_in)], [d[f"out{i}"] for i in range(n_out)]


def _stream_time(nbytes, repeat):
    half = nbytes // 2
    src, dst = np.ones(half, np.uint8), np.empty(half, np.uint8)
    np.copyto(dst, src)
    return best(lambda: np.copyto(dst, src), repeat)[0]


def _xla_text(text, args, repeat):
    """(compile s, best run s) of XLA:CPU on HLO text (None, None without JAX)."""
    try:
        import jax
        import jaxlib._hlo as h
        from jax._src.interpreters import mlir as jmlir
        from jax._src.lib import xla_client as xc
        from jax._src.lib.mlir import ir
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    m = h.hlo_module_from_text(text)
    bc = xc._xla.mlir.hlo_to_stablehlo(m.as_serialized_hlo_module_proto())
    with jmlir.make_ir_context():
        code = jmlir.module_to_bytecode(ir.Module.parse(bc))
    client = jax.devices("cpu")[0].client
    exe = client.compile_and_load(code, xc.DeviceList(tuple(jax.devices("cpu"))), xc.CompileOptions())
    compile_s = time.perf_counter() - t0
    dev = [jax.device_put(a) for a in args]

    def call():
        return jax.block_until_ready(exe.execute_sharded(dev).disassemble_into_single_device_arrays())
    call()
    return compile_s, best(call, repeat)[0]


def _xla_fns():
    """The cases as jax.numpy functions (JAX imported)."""
    import jax
    import jax.numpy as jnp
    return {
        "sum(x+y*z) 3x4M": lambda x, y, z: jnp.sum(x + y * z),
        "x*x+2x+1 8M": lambda x: x * x + 2 * x + 1,
        "mean(relu(x)^2) 8M": lambda x: jnp.mean(jnp.maximum(x, 0) ** 2),
        "softmax 512x8192": lambda x: jax.nn.softmax(x, axis=1),
        "layernorm 4096x1024": lambda x: (x - x.mean(1, keepdims=True))
        * jax.lax.rsqrt(((x - x.mean(1, keepdims=True)) ** 2).mean(1, keepdims=True) + 1e-5),
        "matmul 1024^2 f32": lambda x, y: x @ y,
    }


def _xla_time(name, args, repeat):
    """XLA:CPU through JAX on the same computation (written with jax.numpy)."""
    try:
        import jax
    except ImportError:
        return None, None
    jax.config.update("jax_enable_x64", False)
    fns = _xla_fns()
    dev = [jax.device_put(a) for a in args]
    t0 = time.perf_counter()
    f = jax.jit(fns[name]).lower(*dev).compile()
    compile_s = time.perf_counter() - t0
    f(*dev).block_until_ready()
    t, out = best(lambda: f(*dev).block_until_ready(), repeat)
    return t, compile_s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*")
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--numerics", default="xla-cpu", choices=["xla-cpu", "ieee"])
    ap.add_argument("--no-interpreter", action="store_true")
    ap.add_argument("--profile", action="store_true", help="print hloc's per-kernel profile per case")
    ap.add_argument("--compile-breakdown", action="store_true",
                    help="print where hloc's compile time goes, per case")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for hloc's large kernels (default: the cores this process may use)")
    opts = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    rows, threads, breakdown = [], None, []
    kw = {} if opts.threads is None else {"threads": opts.threads}
    wanted = lambda name: not opts.cases or any(c in name for c in opts.cases)   # noqa: E731
    for name, (text, make, np_fn) in CASES.items():
        if not wanted(name):
            continue
        args = make(rng)
        module = prepare_for_cpu(hloc.parse(text, name), None)
        t0, c0 = time.perf_counter(), time.process_time()
        exe = compile_module(module, numerics=opts.numerics, **kw)
        compile_s = time.perf_counter() - t0
        breakdown.append((name, exe.compile_times, time.process_time() - c0))
        threads = exe.threads
        exe.run(args)
        t_hloc, out = best(lambda: exe.run(args), opts.repeat)
        out = np.array(out)
        t_np, ref = best(lambda: np_fn(*args), max(3, opts.repeat // 2))
        t_int = None
        if not opts.no_interpreter:
            t_int, iout = best(lambda: run_module(module, args).value, 2)
            assert near(np.asarray(ref, np.float32), np.asarray(iout), ErrorSpec(1e-3, 1e-3)).ok
        assert near(np.asarray(ref, np.float32), out, ErrorSpec(1e-3, 1e-3)).ok, name
        t_stream = _stream_time(STREAM_BYTES[name], opts.repeat) if name in STREAM_BYTES else None
        t_xla, xla_compile = _xla_time(name, args, opts.repeat)
        rows.append((name, t_hloc, compile_s, t_int, t_np, t_stream, t_xla, xla_compile))
        _profile(opts, name, module, args, kw)
    for name, stem in FILE_CASES.items():
        if not wanted(name):
            continue
        text, ins, want = _file_case(stem)
        module = hloc.parse(text, name)
        args = bind_arguments(module, ins)
        t0, c0 = time.perf_counter(), time.process_time()
        exe = hloc.compile(module, numerics=opts.numerics)
        exe.set_threads(opts.threads)
        compile_s = time.perf_counter() - t0
        breakdown.append((name, exe.compile_times, time.process_time() - c0))
        threads = exe.threads
        got = exe.run(args)
        for g, w in zip(flatten_leaves(got, module.entry.root.shape), want):
            assert near(np.asarray(w), np.asarray(g), ErrorSpec(1e-3, 1e-3)).ok, name
        t_hloc, _ = best(lambda: exe.run(args), opts.repeat)
        t_int = None
        if not opts.no_interpreter and "scan" not in name:
            t_int, _ = best(lambda: run_module(module, args).value, 1)
        xla_compile, t_xla = _xla_text(text, ins, opts.repeat)
        rows.append((name, t_hloc, compile_s, t_int, None, None, t_xla, xla_compile))
        _profile(opts, name, module, args, kw)
    ms = lambda t: "-" if t is None else f"{t * 1e3:.3f}" if t < 0.01 else f"{t * 1e3:.2f}"  # noqa: E731
    ratio = lambda a, b: "-" if a is None or b is None else f"{a / b:.2f}x"   # noqa: E731
    print(f"numerics={opts.numerics}; threads={threads}; times in ms, best of {opts.repeat}; "
          "ratios = hloc / other (< 1: hloc is faster)")
    print("| case | hloc | NumPy | stream | XLA:CPU | interp | hloc/NumPy | hloc/stream | hloc/XLA "
          "| compile hloc | compile XLA |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, th, tc, ti, tn, ts, tx, txc in rows:
        print(f"| {name} | {ms(th)} | {ms(tn)} | {ms(ts)} | {ms(tx)} | {ms(ti)} | {ratio(th, tn)} "
              f"| {ratio(th, ts)} | {ratio(th, tx)} | {ms(tc)} | {ms(txc)} |")
    if opts.compile_breakdown:
        _print_breakdown(rows, breakdown, ms, ratio)


def _print_breakdown(rows, breakdown, ms, ratio):
    """hloc's compile time by phase (Executable.compile_times), beside XLA's compile."""
    xla = {r[0]: (r[2], r[7]) for r in rows}
    print("\ncompile, ms: hloc (wall) and XLA:CPU; HLO passes, IR gen (Python), LLVM wall "
          "(parts on threads), LLVM parse/optimise/codegen summed over parts, load; "
          "CPU = process CPU time of hloc's compile")
    print("| case | hloc | XLA | hloc/XLA | HLO passes | IR gen | LLVM | parse | optimise "
          "| codegen | parts | load | CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, t, cpu in breakdown:
        hc, xc = xla[name]
        g = lambda k: ms(t.get(k))   # noqa: E731
        print(f"| {name} | {ms(hc)} | {ms(xc)} | {ratio(hc, xc)} | {g('hlo_passes')} | "
              f"{g('ir_gen')} | {g('llvm')} | {g('llvm_parse_sum')} | {g('llvm_optimise_sum')} | "
              f"{g('llvm_codegen_sum')} | {t.get('parts', '-')} | {g('load')} | {ms(cpu)} |")


def _profile(opts, name, module, args, kw):
    if not opts.profile:
        return
    from hloc.backend.profile import table
    exe = compile_module(module, numerics=opts.numerics, profile=True, **kw)
    exe.run(args)
    exe.reset_profile()
    t0 = time.perf_counter()
    for _ in range(opts.repeat):
        exe.run(args)
    print(f"\n{name}: profile of {opts.repeat} calls")
    print(table(exe.profile()[:15], time.perf_counter() - t0))


if __name__ == "__main__":
    main()
