"""`hloc compile` (hloc.aot): libraries with a C ABI, checked against XLA's values.

* Every testdata/dumps program (before-optimizations, through the default pipeline as
  `hloc run --backend cpu` does) is compiled to a shared library and called through
  ctypes on XLA's inputs; results are compared with XLA's outputs under the JIT tests'
  ErrorSpec and lists (tests/test_backend_dumps.py). LAPACK programs must be refused at
  compile time with an error that names LAPACK.
* For a set of programs the library's bits equal the JIT's (`compile_module(gemm="emitted")`,
  the same emitted code) at 1 and 2 threads.
* A C program (tests/aot/driver.c) built with `cc` against the header, linked with the
  library, with the static archive, or loading it with dlopen(RTLD_NOW) — no Python in
  that process — runs the dumps' inputs; with a caller thread pool and two concurrent
  instances too. Skipped when there is no C compiler.
* Error codes, the aarch64 object's ELF machine, the emitted GEMM against NumPy.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.aot import compile_library
from hloc.backend import compile_module
from hloc.backend.loops import minor_to_major
from hloc.cli_backend import prepare_for_cpu
from hloc.compare import ErrorSpec, near
from hloc.diagnostics import UnsupportedError
from hloc.inputs import bind_arguments, flatten_leaves, load_npz

HERE = Path(__file__).resolve().parent
DUMPS = HERE.parent / "testdata" / "dumps"
SPEC = ErrorSpec(abs=1e-3, rel=1e-3)
CC = shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc) on PATH")

# Programs whose custom calls need LAPACK: refused without --lapack.
LAPACK = {"linalg_qr_eigh", "linalg_svd"}
# (program, output) -> why XLA's value is not the module's semantics (as in test_backend_dumps).
XLA_DIFFERS = {
    ("f64_math", 11): "XLA folds (x * 1e300) * 1e10 into x * inf, so 0 * ... is NaN",
}
# Programs checked bit for bit against the JIT and through the C driver (tuples, while,
# conditionals, large dots through the emitted GEMM, convolutions, bf16, RNG, sort).
BITWISE = ["mlp_train_step", "cnn_train_step", "while_loop_newton", "cond_pred_input",
           "bf16_arith", "conv2d_variants", "sort_ops", "random_threefry", "switch_branches",
           "nested_tuple_outputs", "complex64_math", "scatter_ops", "scan_rnn"]
C_PROGRAMS = ["mlp_train_step", "bert_train_step", "while_loop_collatz", "nested_tuple_outputs",
              "bf16_arith"]
MIN_PROGRAMS = 74


def _programs():
    return sorted(p.stem for p in DUMPS.glob("*.npz"))


def test_corpus_count():
    assert len(_programs()) >= MIN_PROGRAMS
    assert all((DUMPS / f"{p}.npz").exists() for p in BITWISE + C_PROGRAMS)


def _io(prog):
    d = load_npz(DUMPS / f"{prog}.npz")
    n_in = sum(1 for k in d if k.startswith("in") and k[2:].isdigit())
    n_out = sum(1 for k in d if k.startswith("out") and k[3:].isdigit())
    return [d[f"in{i}"] for i in range(n_in)], [d[f"out{i}"] for i in range(n_out)]


def _module(prog):
    m = hloc.parse_file(DUMPS / f"{prog}.before_optimizations.hlo")
    prepare_for_cpu(m, None)
    return m


def _leaves(value, shape, out):
    if shape.is_tuple:
        for v, s in zip(value, shape.elements):
            _leaves(v, s, out)
    else:
        out.append((value, shape))
    return out


def _perm(shape):
    return tuple(reversed(minor_to_major(shape)))


def _arg_buffers(module, ins):
    """One C-contiguous array per argument leaf in its physical layout (None: token)."""
    params = sorted((i for i in module.entry.instructions if i.opcode == "parameter"),
                    key=lambda p: p.parameter_number)
    bound = bind_arguments(module, ins)
    bufs = []
    for v, s in [x for p, b in zip(params, bound) for x in _leaves(b, p.shape, [])]:
        if not s.dtype.is_array:
            bufs.append(None)
            continue
        a = np.asarray(v, dtype=s.dtype.np)
        bufs.append(np.ascontiguousarray(a.transpose(_perm(s))))
    return bufs


def _from_physical(raw, s):
    phys = tuple(s.dims[d] for d in _perm(s))
    a = np.frombuffer(raw, dtype=s.dtype.np).reshape(phys)
    return a.transpose(np.argsort(_perm(s)))


class CLib:
    """A compiled library called through ctypes."""

    def __init__(self, path, prefix, lib, module):
        self.dll = ctypes.CDLL(str(path))
        self.run_with = getattr(self.dll, f"{prefix}_run_with")
        self.run_with.restype = ctypes.c_int
        self.run_with.argtypes = [ctypes.c_void_p] * 4
        self.lib, self.module = lib, module

    def call(self, bufs, threads=1, scratch_offset=0, results=None, raw_args=None):
        shapes = list(self.module.entry.root.shape.leaves())
        outs = results if results is not None else [
            np.zeros(max(leaf.nbytes, 1) + 64, np.uint8) for leaf in self.lib.results]
        out_ptrs = [None if not leaf.nbytes else _aligned(o, 64) for leaf, o in zip(self.lib.results, outs)]
        arg_ptrs = raw_args if raw_args is not None else [None if b is None or not b.nbytes else b.ctypes.data
                                                          for b in bufs]
        scratch = np.zeros(self.lib.scratch_bytes + 128, np.uint8)
        s_ptr = _aligned(scratch, 64) + scratch_offset if self.lib.scratch_bytes else None
        cfg = (ctypes.c_int64 * 3)(threads, 0, 0)
        a = (ctypes.c_void_p * max(1, len(arg_ptrs)))(*arg_ptrs)
        r = (ctypes.c_void_p * max(1, len(out_ptrs)))(*out_ptrs)
        rc = self.run_with(ctypes.addressof(a), ctypes.addressof(r), s_ptr, ctypes.addressof(cfg))
        got = []
        for leaf, p, s in zip(self.lib.results, out_ptrs, shapes):
            if not s.dtype.is_array:
                continue
            raw = ctypes.string_at(p, leaf.nbytes) if leaf.nbytes else b""
            got.append(_from_physical(raw, s))
        return rc, got


def _aligned(arr, align):
    base = arr.ctypes.data
    return base + (-base) % align


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("aot-cache")


def _build(prog, tmp_path, cache=None, **kw):
    module = _module(prog)
    path = tmp_path / "libm.so"
    lib = compile_library(module, str(path), header=str(tmp_path / "m.h"), name="m",
                          cache_dir=cache, **kw)
    return module, lib, path


@pytest.mark.parametrize("prog", _programs())
def test_library_matches_xla(prog, tmp_path, cache):
    ins, outs = _io(prog)
    if prog in LAPACK:
        with pytest.raises(UnsupportedError) as e:
            _build(prog, tmp_path, cache)
        assert "lapack" in e.value.message.lower(), e.value.message
        return
    module, lib, path = _build(prog, tmp_path, cache)
    rc, got = CLib(path, "m", lib, module).call(_arg_buffers(module, ins))
    assert rc == 0
    assert len(got) == len(outs)
    bad = [f"out{i}: {r.message}" for i, (e, a) in enumerate(zip(outs, got))
           if (prog, i) not in XLA_DIFFERS and not (r := near(e, a, SPEC)).ok]
    assert not bad, "\n".join(bad)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == np.ascontiguousarray(b).astype(a.dtype).tobytes()


@pytest.mark.parametrize("prog", BITWISE)
def test_library_bits_equal_jit(prog, tmp_path, cache):
    ins, _ = _io(prog)
    module, lib, path = _build(prog, tmp_path, cache, threads=2)
    clib = CLib(path, "m", lib, module)
    bufs = _arg_buffers(module, ins)
    exe = compile_module(module, gemm="emitted", threads=2, cache_dir=tmp_path / "cache")
    ref = flatten_leaves(exe.run(bind_arguments(module, ins)), module.entry.root.shape)
    for threads in (1, 2):
        rc, got = clib.call(bufs, threads=threads)
        assert rc == 0
        bad = [i for i, (e, a) in enumerate(zip(ref, got)) if not _same_bits(e, a)]
        assert not bad, f"threads={threads}: outputs {bad} differ from the JIT's bits"


def test_error_codes(tmp_path, cache):
    module, lib, path = _build("mlp_train_step", tmp_path, cache)
    clib = CLib(path, "m", lib, module)
    bufs = _arg_buffers(module, _io("mlp_train_step")[0])
    assert lib.scratch_bytes > 0
    assert clib.call(bufs)[0] == 0
    assert clib.call(bufs, threads=0)[0] == 4
    assert clib.call(bufs, threads=65)[0] == 4
    ptrs = [b.ctypes.data for b in bufs]
    assert clib.call(bufs, raw_args=[None] + ptrs[1:])[0] == 1
    assert clib.call(bufs, raw_args=[ptrs[0] + 1] + ptrs[1:])[0] == 2      # f32 at an odd address
    assert clib.call(bufs, scratch_offset=4)[0] == 2
    big = np.zeros(lib.results[0].nbytes + 64, np.uint8)
    overlap = [ptrs[0]] + ptrs[1:]
    outs = [big] + [np.zeros(max(r.nbytes, 1) + 64, np.uint8) for r in lib.results[1:]]
    assert clib.call(bufs, raw_args=[_aligned(big, 64)] + overlap[1:], results=outs)[0] == 3
    run = getattr(clib.dll, "m_run")
    run.restype = ctypes.c_int
    assert run(None, None, None) == 1


def test_two_threads_at_once(tmp_path, cache):
    """Two Python threads (ctypes drops the GIL) call one library with 2 threads each."""
    module, lib, path = _build("mlp_train_step", tmp_path, cache, threads=2)
    clib = CLib(path, "m", lib, module)
    bufs = _arg_buffers(module, _io("mlp_train_step")[0])
    ref = clib.call(bufs, threads=2)[1]
    results = [None] * 4

    def work(k):
        results[k] = clib.call(bufs, threads=2)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for rc, got in results:
        assert rc == 0 and all(_same_bits(e, a) for e, a in zip(ref, got))


def test_header_names_and_layout(tmp_path, cache):
    _, lib, _ = _build("mlp_train_step", tmp_path, cache)
    text = (tmp_path / "m.h").read_text()
    assert f"#define m_SCRATCH_BYTES {lib.scratch_bytes}" in text
    assert f"#define m_NUM_ARGS {len(lib.args)}" in text
    for leaf in lib.args:
        assert f"`{leaf.name}`: {leaf.dtype}[{', '.join(map(str, leaf.dims))}]" in text
        assert f"#define m_ARG_{leaf.ident}_BYTES {leaf.nbytes}" in text
    assert "int m_run(void* const* args, void* const* results, void* scratch);" in text


def _elf_machine(data: bytes) -> int:
    assert data[:4] == b"\x7fELF"
    return struct.unpack_from("<H", data, 18)[0]


def test_aarch64_object(tmp_path):
    module = _module("mlp_train_step")
    out = tmp_path / "m.o"
    lib = compile_library(module, str(out), name="m", triple="aarch64-unknown-linux-gnu")
    assert lib.triple.startswith("aarch64")
    assert _elf_machine(out.read_bytes()) == 183          # EM_AARCH64
    if shutil.which("file"):
        assert "aarch64" in subprocess.run(["file", str(out)], capture_output=True, text=True).stdout
    host = tmp_path / "h.o"
    compile_library(module, str(host), name="m")
    assert _elf_machine(host.read_bytes()) in (62, 183)   # x86-64 or aarch64 host


def test_self_contained_needs_only_system_libraries(tmp_path, cache):
    _, lib, path = _build("mlp_train_step", tmp_path, cache)
    assert not any("blas" in s for s in lib.undefined)
    if shutil.which("readelf"):
        out = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True).stdout
        needed = [line.split("[")[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]
        assert needed and all(n.split(".so")[0] in ("libc", "libm", "libpthread", "ld-linux-x86-64",
                                                   "ld-linux-aarch64") for n in needed), needed


def test_no_compiler_is_a_clear_error(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path / "empty"))
    env.pop("CC", None)
    cmd = [sys.executable, "-m", "hloc", "compile", str(DUMPS / "while_loop_newton.before_optimizations.hlo")]
    r = subprocess.run(cmd + ["-o", str(tmp_path / "x.so")], capture_output=True, text=True, env=env)
    assert r.returncode == 3 and "C compiler" in r.stderr and "cc" in r.stderr, r.stderr
    r = subprocess.run(cmd + ["-o", str(tmp_path / "x.o")], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x.o").exists()


def _write_inputs(module, ins, d: Path):
    d.mkdir()
    for i, b in enumerate(_arg_buffers(module, ins)):
        (d / f"in{i}.bin").write_bytes(b"" if b is None else b.tobytes())


def _read_outputs(module, lib, d: Path):
    shapes = list(module.entry.root.shape.leaves())
    return [_from_physical((d / f"out{j}.bin").read_bytes(), s)
            for j, s in enumerate(shapes) if s.dtype.is_array]


def _cc(*args):
    r = subprocess.run([CC, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@needs_cc
@pytest.mark.parametrize("prog", C_PROGRAMS)
def test_c_program(prog, tmp_path, cache):
    ins, outs = _io(prog)
    module, lib, so = _build(prog, tmp_path, cache)
    compile_library(module, str(tmp_path / "libm.a"), name="m", cache_dir=cache)
    _write_inputs(module, ins, tmp_path / "in")
    driver = HERE / "aot" / "driver.c"
    header = tmp_path / "m.h"
    _cc("-O1", "-include", header, driver, so, f"-Wl,-rpath,{tmp_path}", "-lpthread", "-o", tmp_path / "linked")
    _cc("-O1", "-include", header, driver, tmp_path / "libm.a", "-lm", "-lpthread", "-o", tmp_path / "static")
    _cc("-O1", "-DUSE_DLOPEN", "-include", header, driver, "-ldl", "-lpthread", "-o", tmp_path / "dl")
    ref = None
    runs = [("linked", [], "1", "0", "0"), ("static", [], "2", "0", "1"), ("dl", [so], "2", "1", "1")]
    for exe, pre, threads, pool, conc in runs:
        out = tmp_path / f"out_{exe}"
        out.mkdir()
        env = {"PATH": "/usr/bin:/bin"}      # nothing of Python's environment
        r = subprocess.run([tmp_path / exe, *pre, tmp_path / "in", out, threads, pool, conc],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, f"{exe}: {r.stderr}"
        got = _read_outputs(module, lib, out)
        bad = [f"{exe} out{i}: {res.message}" for i, (e, a) in enumerate(zip(outs, got))
               if not (res := near(e, a, SPEC)).ok]
        assert not bad, "\n".join(bad)
        if ref is None:
            ref = got
        assert all(_same_bits(x, y) for x, y in zip(ref, got)), f"{exe}: bits differ from the first run"


@needs_cc
def test_cpp_class(tmp_path):
    cxx = shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    module = _module("while_loop_newton")
    so = tmp_path / "libm.so"
    lib = compile_library(module, str(so), header=str(tmp_path / "m.h"), name="m", cpp_class="demo::Loop")
    src = tmp_path / "t.cc"
    src.write_text('#include "m.h"\n#include <cstdio>\n#include <cstring>\n'
                   "int main() { demo::Loop loop; loop.set_thread_count(2);\n"
                   "  for (int i = 0; i < demo::Loop::kNumArgs; ++i) std::memset(loop.arg_data(i), 0, m_arg_bytes[i]);\n"
                   "  int rc = loop.Run(); std::printf(\"%d %d\\n\", rc, demo::Loop::LookupArgIndex(m_arg_names[0]));\n"
                   "  return rc; }\n")
    r = subprocess.run([cxx, "-std=c++17", "-I", tmp_path, src, so, f"-Wl,-rpath,{tmp_path}", "-o", tmp_path / "t"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([tmp_path / "t"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["0", "0"], r.stdout + r.stderr
    assert lib.args


def test_python_api_writes_a_library(tmp_path):
    m = hloc.parse_file(DUMPS / "while_loop_newton.before_optimizations.hlo")
    lib = hloc.compile(m, str(tmp_path / "libw.o"), header=str(tmp_path / "w.h"))
    assert lib.prefix == "w" and (tmp_path / "libw.o").exists() and "w_run" in (tmp_path / "w.h").read_text()
    exe = hloc.compile(hloc.parse_file(DUMPS / "while_loop_newton.before_optimizations.hlo"))
    assert hasattr(exe, "run")



def test_header_says_when_kernels_allocate(tmp_path):
    """Sort kernels take row scratch from malloc (libc): allowed, and the header says so;
    a module without them keeps the never-allocates promise."""
    sort = hloc.compile(hloc.parse_file(DUMPS / "sort_ops.before_optimizations.hlo"),
                        str(tmp_path / "libs.o"), header=str(tmp_path / "s.h"))
    assert "malloc" in sort.undefined
    assert "also malloc row scratch" in (tmp_path / "s.h").read_text()
    hloc.compile(hloc.parse_file(DUMPS / "while_loop_newton.before_optimizations.hlo"),
                 str(tmp_path / "libw.o"), header=str(tmp_path / "w.h"))
    assert "the library never allocates" in (tmp_path / "w.h").read_text()

# ---- the emitted GEMM against NumPy (through the JIT with gemm="emitted")

def _dot_module(m, n, k, dt, lhs_layout="{1,0}", out_layout="{1,0}", rhs_t=False):
    rhs = f"{dt}[{n},{k}]" if rhs_t else f"{dt}[{k},{n}]"
    return hloc.parse(f"""HloModule g
ENTRY e {{
  a = {dt}[{m},{k}]{lhs_layout} parameter(0)
  b = {rhs}{{1,0}} parameter(1)
  ROOT d = {dt}[{m},{n}]{out_layout} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{1 if rhs_t else 0}}}
}}""")


@pytest.mark.parametrize("m,n,k,dt,lhs,out,rt", [
    (37, 65, 41, "f32", "{1,0}", "{1,0}", False),
    (100, 33, 257, "f32", "{0,1}", "{1,0}", True),
    (64, 48, 300, "f64", "{1,0}", "{0,1}", False),
    (13, 200, 50, "f64", "{0,1}", "{1,0}", True),
    (40, 30, 60, "c64", "{1,0}", "{1,0}", False),
    (300, 260, 520, "f32", "{1,0}", "{1,0}", False),
])
def test_emitted_gemm(m, n, k, dt, lhs, out, rt, tmp_path):
    npdt = {"f32": np.float32, "f64": np.float64, "c64": np.complex64}[dt]
    rng = np.random.default_rng(1)
    a = rng.standard_normal((m, k)).astype(npdt)
    b = rng.standard_normal((n, k) if rt else (k, n)).astype(npdt)
    if dt == "c64":
        a = (a + 1j * rng.standard_normal(a.shape)).astype(npdt)
        b = (b + 1j * rng.standard_normal(b.shape)).astype(npdt)
    module = _dot_module(m, n, k, dt, lhs, out, rt)
    exe1 = compile_module(module, gemm="emitted", threads=1, cache_dir=tmp_path)
    exe2 = compile_module(module, gemm="emitted", threads=2, cache_dir=tmp_path)
    got = exe1.run([a, b])
    ref = a.astype(np.complex128 if dt == "c64" else np.float64) @ (b.T if rt else b)
    tol = 1e-4 if dt in ("f32", "c64") else 1e-12
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max() * np.sqrt(k)
    assert _same_bits(got, exe2.run([a, b]))          # thread count does not change bits
    if dt == "f32":                                   # each element: fma over k in order
        i, j = m // 2, n // 3
        acc = np.float32(0)
        col = (b.T if rt else b)[:, j]
        for kk in range(k):
            acc = np.float32(np.float64(a[i, kk]) * np.float64(col[kk]) + np.float64(acc))
        assert acc == got[i, j]


def test_blas_option_links_openblas_with_the_jits_bits(tmp_path):
    from hloc.backend import runtime
    blas = runtime.openblas_path()
    if blas is None or CC is None:
        pytest.skip("no NumPy-bundled OpenBLAS or no C compiler")
    module = _dot_module(200, 150, 300, "f32")
    so = tmp_path / "libm.so"
    lib = compile_library(module, str(so), name="m", blas=blas)
    assert "scipy_cblas_sgemm64_" in lib.undefined
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((200, 300)).astype(np.float32), rng.standard_normal((300, 150)).astype(np.float32)
    rc, got = CLib(so, "m", lib, module).call([a, b])
    assert rc == 0
    ref = compile_module(module, gemm="blas", threads=1).run([a, b])
    assert _same_bits(ref, got[0])


def test_cli_writes_library_and_header(tmp_path):
    src = DUMPS / "reduce_sum_xyz.before_optimizations.hlo"
    cmd = [sys.executable, "-m", "hloc", "compile", str(src), "-o", str(tmp_path / "libxyz.a"),
           "--header", str(tmp_path / "xyz.h"), "--cpp-class", "ns::Xyz", "--threads", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "3 arguments, 1 results" in r.stderr
    head = (tmp_path / "xyz.h").read_text()
    assert "int xyz_run(void* const* args" in head and "class Xyz" in head
    assert "#define xyz_DEFAULT_THREADS 2" in head
    assert (tmp_path / "libxyz.a").read_bytes().startswith(b"!<arch>\n")
    r = subprocess.run(cmd[:5] + ["-o", str(tmp_path / "x.exe")], capture_output=True, text=True)
    assert r.returncode == 2 and "must end in .o, .a or .so" in r.stderr


@needs_cc
def test_caller_thread_pool_runs_the_work_groups(tmp_path, cache):
    """A kernel large enough to be split goes through the caller's parallel_for, with the
    bits of the library's own pthreads and of one thread."""
    n = 1 << 21
    module = _fma3(n)
    so = tmp_path / "libm.so"
    compile_library(module, str(so), header=str(tmp_path / "m.h"), name="m", cache_dir=cache)
    rng = np.random.default_rng(3)
    ins = [rng.standard_normal(n).astype(np.float32) for _ in range(3)]
    (tmp_path / "in").mkdir()
    for i, a in enumerate(ins):
        (tmp_path / "in" / f"in{i}.bin").write_bytes(a.tobytes())
    _cc("-O1", "-DUSE_DLOPEN", "-include", tmp_path / "m.h", HERE / "aot" / "driver.c", "-ldl", "-lpthread",
        "-o", tmp_path / "dl")
    outs = []
    for threads, pool in (("1", "0"), ("4", "0"), ("4", "1")):
        out = tmp_path / f"out{threads}{pool}"
        out.mkdir()
        r = subprocess.run([tmp_path / "dl", so, tmp_path / "in", out, threads, pool, "0"],
                           capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stderr
        calls = int(r.stderr.split("pool calls")[1])
        assert (calls > 0) == (pool == "1"), r.stderr
        outs.append((out / "out0.bin").read_bytes())
    assert outs[0] == outs[1] == outs[2]
    assert np.array_equal(np.frombuffer(outs[0], np.float32), compile_module(module).run(ins))


def _fma3(n=1 << 21):
    return hloc.parse(f"""HloModule fma3
ENTRY e {{
  x = f32[{n}] parameter(0)
  y = f32[{n}] parameter(1)
  z = f32[{n}] parameter(2)
  m = f32[{n}] multiply(y, z)
  ROOT s = f32[{n}] add(x, m)
}}""")


@needs_cc
def test_c_program_library_pool_lifecycle(tmp_path, cache):
    """The library's own worker pool (hloc.backend.threadpool) from a C program: workers
    start on the first split call and stay; concurrent callers, a forked child and
    grandchild get the first run's bits; dlclose joins the workers (the library's
    destructor) and leaves no thread behind; exit with them alive does not hang."""
    module = _fma3()
    so = tmp_path / "libm.so"
    compile_library(module, str(so), header=str(tmp_path / "m.h"), name="m", cache_dir=cache)
    rng = np.random.default_rng(4)
    (tmp_path / "in").mkdir()
    for i in range(3):
        (tmp_path / "in" / f"in{i}.bin").write_bytes(rng.standard_normal(1 << 21).astype(np.float32).tobytes())
    _cc("-O1", "-include", tmp_path / "m.h", HERE / "aot" / "pool_driver.c", "-ldl", "-lpthread",
        "-o", tmp_path / "pd")
    for threads, close, want in (("4", "1", "workers 3\nafter dlclose 0\n"), ("3", "0", "workers 2\n"),
                                 ("1", "1", "workers 0\nafter dlclose 0\n")):
        r = subprocess.run([tmp_path / "pd", so, tmp_path / "in", threads, close], capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin"}, timeout=120)
        assert r.returncode == 0 and r.stdout == want, (threads, close, r.returncode, r.stdout, r.stderr)


@needs_cc
def test_library_pool_runs_tasks_in_the_callers_numerics(tmp_path, cache):
    """Two libraries of one module, xla-cpu and exact numerics, called in turn on 4
    threads: subnormals flush in every work group of the first, in none of the second."""
    n = 1 << 21
    module = hloc.parse(f"HloModule a\nENTRY e {{\n  x = f32[{n}] parameter(0)\n"
                        f"  ROOT r = f32[{n}] add(x, x)\n}}")
    libs = {}
    for numerics in ("xla-cpu", "ieee"):
        path = tmp_path / f"lib{numerics[0]}.so"
        lib = compile_library(module, str(path), name=f"m{numerics[0]}", numerics=numerics,
                              cache_dir=cache)
        libs[numerics] = CLib(path, f"m{numerics[0]}", lib, module)
    x = np.full(n, np.float32(1e-40))
    for numerics in ("ieee", "xla-cpu") * 3:
        rc, (y,) = libs[numerics].call([x], threads=4)
        assert rc == 0
        assert (not y.any()) if numerics == "xla-cpu" else bool((y == x + x).all()), numerics


REF_CBLAS = r"""
/* A reference LP64 cblas_sgemm (row-major only), standing in for a system BLAS. */
int calls;
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (order != 101) return;
  ++calls;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p)
        s += (double)(ta == 111 ? a[i * lda + p] : a[p * lda + i]) *
             (tb == 111 ? b[p * ldb + j] : b[j * ldb + p]);
      c[i * ldc + j] = (float)(alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]));
    }
}
"""


@needs_cc
def test_blas_option_links_a_standard_cblas(tmp_path):
    src = tmp_path / "refblas.c"
    src.write_text(REF_CBLAS)
    blas = tmp_path / "librefblas.so"
    _cc("-shared", "-fPIC", "-O1", src, "-o", blas)
    module = _dot_module(200, 150, 300, "f32", lhs_layout="{0,1}")
    so = tmp_path / "libm.so"
    lib = compile_library(module, str(so), name="m", blas=str(blas))
    assert "cblas_sgemm" in lib.undefined and not any("scipy" in s for s in lib.undefined)
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((200, 300)).astype(np.float32), rng.standard_normal((300, 150)).astype(np.float32)
    clib = CLib(so, "m", lib, module)
    rc, got = clib.call([np.ascontiguousarray(a.T), b])       # lhs layout {0,1}: column-major bytes
    assert rc == 0
    ref = a.astype(np.float64) @ b                # the reference BLAS sums in double
    assert np.abs(got[0] - ref).max() <= 1e-6 * np.abs(ref).max()
    assert ctypes.c_int.in_dll(ctypes.CDLL(str(blas)), "calls").value == 1


@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v3"])
def test_portable_cpu(cpu, tmp_path, cache):
    """Code for an older x86 CPU than the host's (SSE2 or AVX2 vectors, the GEMM's 6-row
    tiles) still matches XLA's values."""
    from hloc.backend import jit
    if not jit.host()[3].startswith("x86_64"):
        pytest.skip("x86-64 host only")
    ins, outs = _io("mlp_train_step")
    module, lib, path = _build("mlp_train_step", tmp_path, cache, cpu=cpu)
    assert lib.cpu == cpu
    rc, got = CLib(path, "m", lib, module).call(_arg_buffers(module, ins))
    assert rc == 0 and all(near(e, a, SPEC).ok for e, a in zip(outs, got))
    gemm = _dot_module(70, 90, 110, "f32")
    lib = compile_library(gemm, str(tmp_path / "libg.so"), name="m", cpu=cpu)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((70, 110)).astype(np.float32), rng.standard_normal((110, 90)).astype(np.float32)
    rc, got = CLib(tmp_path / "libg.so", "m", lib, gemm).call([a, b])
    native = compile_module(gemm, gemm="emitted").run([a, b])
    assert rc == 0 and _same_bits(native, got[0])      # same per-element fma order on any tiling


# -- the JIT's parts and settings (hloc.backend.jit.part_plan) ------------------------------

def _jit_settings(module):
    from hloc.backend import Options, jit
    options = Options(gemm="emitted")
    return jit.lower(module, options, units=True).settings(options)     # as it compiles


def _row_module(name):
    from row_modules import LAYERNORM, SOFTMAX
    return prepare_for_cpu(hloc.parse({"softmax": SOFTMAX, "layernorm": LAYERNORM}[name]), None)


@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_row_library_compiles_the_jits_way_with_its_bits(name, tmp_path, cache):
    module = _row_module(name)
    path = tmp_path / "libm.so"
    lib = compile_library(module, str(path), name="m", cache_dir=cache, threads=2)
    from hloc.backend import compile_threads, threadpool_jit
    row = (False, True, compile_threads.LEAN, 1)     # both in explicit vector code (row_vector)
    assert lib.parts[:-1] == _jit_settings(module) == [row]
    assert lib.parts[-1] == (False, True, 0, threadpool_jit.LEVEL)     # the glue
    x = np.random.default_rng(0).standard_normal(module.entry.parameters[0].shape.dims)
    x = x.astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -0.0]
    x[1, :] = -np.inf
    x[2, 5] = 3e38
    exe = compile_module(module, gemm="emitted", threads=2, cache_dir=tmp_path / "jit")
    ref = np.asarray(exe.run([x]))
    clib = CLib(path, "m", lib, module)
    for threads in (1, 2):
        rc, (got,) = clib.call([x], threads=threads)
        assert rc == 0 and _same_bits(ref, got), f"threads={threads}"


@pytest.mark.parametrize("prog", ["mlp_train_step", "cnn_train_step"])
def test_library_parts_are_the_jits(prog, tmp_path, cache):
    """Modules the JIT compiles in parts: the library's code parts have its settings."""
    module = _module(prog)
    lib = compile_library(module, str(tmp_path / "libm.a"), name="m", cache_dir=cache)
    assert len(lib.parts) >= 3 and lib.parts[:-1] == _jit_settings(module)
    assert lib.units == 0
    members = subprocess.run(["ar", "t", str(tmp_path / "libm.a")], capture_output=True,
                             text=True).stdout.split() if shutil.which("ar") else None
    assert members in (None, [f"m_{k:02d}.o" for k in range(len(lib.parts))])


@needs_cc
def test_object_of_a_module_in_parts_has_the_jits_bits(tmp_path, cache):
    """`.o` output links the parts' optimised modules into one object (hloc.aot.target)."""
    prog = "mlp_train_step"
    ins, _ = _io(prog)
    module = _module(prog)
    lib = compile_library(module, str(tmp_path / "m.o"), name="m", cache_dir=cache)
    assert len(lib.parts) >= 3
    _cc("-shared", "-o", tmp_path / "libm.so", tmp_path / "m.o", "-lm", "-lpthread")
    clib = CLib(tmp_path / "libm.so", "m", lib, module)
    exe = compile_module(module, gemm="emitted", threads=2, cache_dir=tmp_path / "jit")
    ref = flatten_leaves(exe.run(bind_arguments(module, ins)), module.entry.root.shape)
    for threads in (1, 2):
        rc, got = clib.call(_arg_buffers(module, ins), threads=threads)
        assert rc == 0
        assert all(_same_bits(e, a) for e, a in zip(ref, got)), f"threads={threads}"


# How many units the JIT makes (hloc.backend.partition.unit_part: a large computation's
# part of its own), the entry computation's last (searchsorted: comp.main.23; BERT:
# comp.region_0.22, comp.region_16.74.clone, comp.main.79); the library's units are the
# same but the entry computation's, which there is the rest of the module (the glue
# stands where the JIT's wrapper, hloc_entry, does).
UNITS = {"searchsorted_interp": 1, "bert_train_step": 3}


@pytest.mark.parametrize("prog", sorted(UNITS))
def test_library_has_the_jits_units(prog, tmp_path, cache):
    from hloc.backend import Options, compile_threads, jit
    if not compile_threads.available():
        pytest.skip("no units where parts cannot compile at once (as in the JIT)")
    module = _module(prog)
    options = Options(gemm="emitted")
    low = jit.lower(module, options, units=True)
    assert low.units == UNITS[prog]
    jit_settings = low.settings(options)
    lib = compile_library(module, str(tmp_path / "libm.a"), name="m", cache_dir=cache)
    n = UNITS[prog] - 1
    assert lib.units == n and lib.parts[:n] == jit_settings[:n]
    if prog == "searchsorted_interp":       # the JIT's: the unit, then hloc_entry alone
        assert len(jit_settings) == 2 and lib.parts[:-1] == jit_settings[:1]
    ins, outs = _io(prog)
    clib = CLib(tmp_path / "libm.so", "m", compile_library(
        module, str(tmp_path / "libm.so"), name="m", cache_dir=cache), module)
    rc, got = clib.call(_arg_buffers(module, ins), threads=2)
    assert rc == 0
    bad = [f"out{i}: {res.message}" for i, (e, a) in enumerate(zip(outs, got))
           if not (res := near(e, a, SPEC)).ok]
    assert not bad, "\n".join(bad)


# -- names from the dump never take the library's -------------------------------------------

EXPORT_NAMES = """HloModule m_run

m_run_with {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m_run = f32[] add(a, b)
}

ENTRY m_run {
  p = f32[1048576] parameter(0)
  m_run = f32[1048576] exponential(p)
  m_run_with = f32[1024,1024] reshape(m_run)
  m.m_run = f32[1024,1024] transpose(m_run_with), dimensions={1,0}
  hloc_rt.lock = f32[1024,1024] multiply(m.m_run, m_run_with)
  c = f32[] constant(0)
  m_run_with.1 = f32[1024] reduce(hloc_rt.lock, c), dimensions={1}, to_apply=m_run_with
  ROOT m_run.2 = (f32[1024,1024], f32[1024]) tuple(hloc_rt.lock, m_run_with.1)
}
"""


@needs_cc
def test_dump_names_never_take_the_entry_points(tmp_path, cache):
    """Kernels named `m_run` / `m_run_with` (large: external in the code's module) are
    renamed like every other definition, never taking the exports: each of .a, .so and .o,
    linked into a C program, runs the entry (the interpreter's values), not a kernel."""
    from hloc.interp import run_module
    module = hloc.parse(EXPORT_NAMES)
    x = np.random.default_rng(0).uniform(-1, 1, 1 << 20).astype(np.float32)
    want = flatten_leaves(run_module(module, [x]), module.entry.root.shape)
    _write_inputs(module, [x], tmp_path / "in")
    driver, header = HERE / "aot" / "driver.c", tmp_path / "m.h"
    for kind in (".a", ".so", ".o"):
        lib_path = tmp_path / f"libm{kind}"
        lib = compile_library(module, str(lib_path), header=str(header), name="m", cache_dir=cache)
        exe = tmp_path / f"prog{kind}"
        _cc("-O1", "-include", header, driver, lib_path, f"-Wl,-rpath,{tmp_path}", "-lm",
            "-lpthread", "-o", exe)
        out = tmp_path / f"out{kind}"
        out.mkdir()
        r = subprocess.run([exe, tmp_path / "in", out, "2", "0", "0"], capture_output=True,
                           text=True, env={"PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, f"{kind}: {r.stderr}"
        got = _read_outputs(module, lib, out)
        bad = [f"{kind} out{i}: {res.message}" for i, (e, a) in enumerate(zip(want, got))
               if not (res := near(np.asarray(e), a, SPEC)).ok]
        assert not bad, "\n".join(bad)


def test_object_cache_key_holds_the_back_ends_settings(tmp_path, monkeypatch):
    """An object compiled under other back-end settings (one the IR text does not show: a
    process-wide LLVM option) is never taken from the cache (hloc.backend.settings)."""
    from hloc.backend import cache as object_cache
    from hloc.backend import jit
    puts = []
    put = object_cache.ObjectCache.put
    monkeypatch.setattr(object_cache.ObjectCache, "put",
                        lambda self, key, obj: (puts.append(key), put(self, key, obj)))
    module = _row_module("softmax")
    args = dict(name="m", cache_dir=tmp_path / "cache")
    compile_library(module, str(tmp_path / "a.o"), **args)
    compile_library(module, str(tmp_path / "a.o"), **args)            # a hit
    assert len(puts) == 1
    monkeypatch.setattr(jit, "UNROLL_THRESHOLD", jit.UNROLL_THRESHOLD + 1)
    compile_library(module, str(tmp_path / "a.o"), **args)
    assert len(puts) == 2 and puts[0] != puts[1]
