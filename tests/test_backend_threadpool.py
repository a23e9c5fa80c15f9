"""The native thread runtime (hloc.backend.threadpool): compiled once per process, a
persistent worker pool; the caller's floating-point state in the workers (both numerics,
either order), concurrent callers from Python threads, fork, exit with workers alive."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, emit_llvm, parallel, runtime, threadpool, threadpool_jit

ROOT = Path(__file__).resolve().parents[1]
N = 1 << 20
ADD = f"HloModule m\n\nENTRY e {{\n  x = f32[{N}] parameter(0)\n  ROOT r = f32[{N}] add(x, x)\n}}\n"
SUB = np.full(N, np.float32(1e-40))      # subnormal: x + x flushes to 0 under FTZ/DAZ only


def _script(body: str, tmp_path, timeout=120) -> subprocess.CompletedProcess:
    """Run `body` in a fresh Python (this tree, its own object cache)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_CACHE_HOME=str(tmp_path / "cache"))
    prelude = textwrap.dedent(f"""\
        import os, sys, threading
        import numpy as np
        import hloc
        from hloc.backend import compile_module
        N = {N}
        ADD = {ADD!r}
        SUB = np.full(N, np.float32(1e-40))
        """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(body)],
                          capture_output=True, text=True, env=env, timeout=timeout)


def test_modules_only_declare_the_runtime():
    """No per-module thread code: a split kernel calls the runtime's fixed entry."""
    text = emit_llvm(hloc.parse(ADD), optimized=False)
    assert parallel.work_groups(hloc.parse(ADD).entry.root) > 1
    assert f'declare void @"{threadpool.ENTRY}"' in text
    assert "pthread_create" not in text and "optnone" not in text
    exe = compile_module(hloc.parse(ADD), threads=2)
    assert exe.code.calls == {threadpool.ENTRY}
    addrs = threadpool_jit.install()
    assert addrs is threadpool_jit.install()
    assert runtime.resolve_all()[threadpool.ENTRY] == addrs[threadpool.ENTRY]


def test_module_objects_may_not_call_the_runtimes_libc():
    """pthread_create, syscall, getpid, sched_yield: the runtime's own object only."""
    obj = threadpool_object()
    assert set(runtime.undefined_symbols(obj)) <= runtime.RUNTIME_LIBC
    runtime.check_runtime_object(obj)
    from hloc.diagnostics import UnsupportedError
    with pytest.raises(UnsupportedError, match="getpid"):
        runtime.check_objects([_object_calling("getpid")])


def threadpool_object() -> bytes:
    import llvmlite.binding as llvm
    from hloc.backend import jit
    tm = jit.compile_machine(threadpool_jit.LEVEL)
    return tm.emit_object(llvm.parse_assembly(threadpool.module_text(jit.host()[3], str(tm.target_data))))


def _object_calling(name: str) -> bytes:
    import llvmlite.binding as llvm
    from hloc.backend import jit
    text = (f'declare i32 @"{name}"()\ndefine i32 @"f"() {{\n  %r = call i32 @"{name}"()\n'
            "  ret i32 %r\n}\n")
    return jit.compile_machine().emit_object(llvm.parse_assembly(text))


@pytest.mark.parametrize("first", ["xla-cpu", "ieee"])
def test_workers_take_the_callers_floating_point_state(first, tmp_path):
    """Workers born under one numerics mode run the other's tasks under the caller's
    MXCSR: xla-cpu flushes subnormals (FTZ/DAZ) on every thread, exact numerics on none."""
    other = "ieee" if first == "xla-cpu" else "xla-cpu"
    r = _script(f"""
        exes = {{m: compile_module(hloc.parse(ADD), numerics=m, threads=4) for m in ("xla-cpu", "ieee")}}
        for mode in ["{first}", "{other}"] * 3 + ["{first}"]:
            y = exes[mode].run([SUB])
            ok = not y.any() if mode == "xla-cpu" else bool((y == SUB + SUB).all())
            assert ok, (mode, np.count_nonzero(y))
        print("ok")
        """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_thread_counts_share_one_pool():
    """Executables asking 1..4 threads, called in turn: the pool grows to the most asked,
    a call uses only its own count; the bits never change."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(N).astype(np.float32)
    text = ADD.replace("add(x, x)", "exponential(x)")
    ref = compile_module(hloc.parse(text), threads=1).run([x]).tobytes()
    exes = [compile_module(hloc.parse(text), threads=n) for n in (4, 2, 3, 1)]
    for _ in range(5):
        for exe in exes:
            assert exe.run([x]).tobytes() == ref, exe.threads


def test_concurrent_callers_from_python_threads():
    """Several Python threads calling split kernels at once (one takes the pool, the
    others start their own threads), both numerics: right bits, no deadlock."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(N).astype(np.float32)
    x[::7] = np.float32(1e-40)
    text = ADD
    exes = [compile_module(hloc.parse(text), numerics=m, threads=n)
            for m in ("xla-cpu", "ieee") for n in (2, 3)]
    refs = [compile_module(hloc.parse(text), numerics=m, threads=1).run([x]).tobytes()
            for m in ("xla-cpu", "ieee") for _ in (2, 3)]
    assert refs[0] != refs[2]          # the numerics differ on these inputs
    errors = []

    def work(k):
        try:
            for i in range(30):
                j = (k + i) % len(exes)
                if exes[j].run([x]).tobytes() != refs[j]:
                    errors.append((k, i, j))
        except BaseException as e:       # reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a caller hangs"
    assert not errors, errors


def test_stop_then_run_again():
    x = np.arange(N, dtype=np.float32)
    exe = compile_module(hloc.parse(ADD), threads=3)
    want = (x + x).tobytes()
    assert exe.run([x]).tobytes() == want
    threadpool_jit.stop()
    assert exe.run([x]).tobytes() == want          # new workers
    threadpool_jit.stop()
    threadpool_jit.stop()                              # none running: nothing to do


def test_fork_child_starts_its_own_workers(tmp_path):
    """A child forked while the parent's workers sleep must not wait on them: it resets
    the pool and starts its own; the parent's pool still works afterwards."""
    r = _script("""
        import signal
        x = np.arange(N, dtype=np.float32)
        exe = compile_module(hloc.parse(ADD), threads=3)
        want = (x + x).tobytes()
        assert exe.run([x]).tobytes() == want                  # the parent's workers run
        for round in range(2):
            pid = os.fork()
            if pid == 0:
                signal.alarm(60)                               # a hang fails the test
                ok = all(exe.run([x]).tobytes() == want for _ in range(20))
                inner = os.fork()                              # a grandchild, too
                if inner == 0:
                    os._exit(0 if exe.run([x]).tobytes() == want else 3)
                _, st = os.waitpid(inner, 0)
                os._exit(0 if ok and st == 0 else 4)
            _, status = os.waitpid(pid, 0)
            assert status == 0, status
            assert exe.run([x]).tobytes() == want
        print("ok")
        """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_fork_while_the_runtime_installs(tmp_path):
    """os.fork while install_ahead's thread compiles the runtime (holding its lock): the
    child must not inherit the lock held by a thread it does not have (it hung at its
    first parallel compile), and parent and child both compute."""
    r = _script("""
        import signal, time
        from hloc.backend import threadpool_jit
        x = np.arange(N, dtype=np.float32)
        want = (x + x).tobytes()
        threadpool_jit.install_ahead(None)             # compiles: no cache directory
        t0 = time.monotonic()
        while not threadpool_jit._lock.locked():
            assert not threadpool_jit._installed and time.monotonic() - t0 < 10, "no install seen"
            time.sleep(0)
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)                           # a hang fails the test
            exe = compile_module(hloc.parse(ADD), threads=2)
            ok = exe.run([x]).tobytes() == want and threadpool_jit.origin() is not None
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        exe = compile_module(hloc.parse(ADD), threads=2)
        assert exe.run([x]).tobytes() == want
        print("ok")
        """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_fork_while_another_thread_compiles(tmp_path):
    """os.fork while another thread compiles under LLVM's default options (it counts as
    a user of compile_threads.OPTIONS_LOCK): the child has no such thread, so a compile
    of its own under other options must not wait for it (it hung there for good)."""
    r = _script("""
        import signal
        from hloc.backend import compile_threads
        held, done = threading.Event(), threading.Event()
        def compiling():
            with compile_threads.OPTIONS_LOCK:
                held.set()
                done.wait()
        t = threading.Thread(target=compiling)
        t.start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            signal.alarm(30)                           # a hang fails the test
            compile_threads.OPTIONS_LOCK.acquire(compile_threads.BRIEF_OPTIONS)
            compile_threads.OPTIONS_LOCK.release()
            x = np.arange(N, dtype=np.float32)
            exe = compile_module(hloc.parse(ADD), threads=2)
            os._exit(0 if exe.run([x]).tobytes() == (x + x).tobytes() else 3)
        _, status = os.waitpid(pid, 0)
        done.set()
        t.join()
        assert status == 0, status
        print("ok")
        """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_exit_with_workers_alive(tmp_path):
    """Interpreter exit (normal, sys.exit, and with a daemon thread still calling) while
    pool workers are alive: no hang, no crash."""
    for ending in ("pass", "sys.exit(0)", "os._exit(0)"):
        r = _script(f"""
            x = np.ones(N, np.float32)
            exe = compile_module(hloc.parse(ADD), threads=4)
            exe.run([x])
            def spin():
                while True:
                    exe.run([x])
            threading.Thread(target=spin, daemon=True).start()
            exe2 = compile_module(hloc.parse(ADD), numerics="ieee", threads=2)
            exe2.run([x])
            {ending}
            """, tmp_path, timeout=120)
        assert r.returncode == 0, (ending, r.returncode, r.stderr)


def test_runtime_object_comes_from_the_cache(tmp_path):
    """A fresh process loads the runtime's object from the cache a first one wrote."""
    body = """
        from hloc.backend import threadpool_jit
        exe = compile_module(hloc.parse(ADD), threads=2, cache_dir=os.environ["XDG_CACHE_HOME"])
        assert exe.run([np.ones(N, np.float32)]).sum() == 2 * N
        print(threadpool_jit.origin())
        """
    first, second = _script(body, tmp_path), _script(body, tmp_path)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert (first.stdout.strip(), second.stdout.strip()) == ("compiled", "cache")
