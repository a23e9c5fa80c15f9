"""Compiled multi-device execution: N devices as threads running native code that meet at
collectives through the device runtime (hloc.backend.device_runtime).

The seven JAX programs of testdata/multidevice (XLA's after-optimizations dumps, 4
devices) must give JAX's per-device outputs and, in ieee numerics, the interpreter's
multi-device values bit for bit; the group-mode modules of test_multidevice give the
values worked out by hand from XLA's rules; failures end the run with the error, never a
hang; the object code names only the runtime table's fixed entry.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

import hloc
from hloc.backend import compile_module, runtime
from hloc.backend.device_runtime import DeviceExecutable, run_devices
from hloc.diagnostics import UnsupportedError
from hloc.inputs import flatten_leaves
from hloc.interp import Interpreter
from hloc.interp.devices import DeviceError, run_devices as interp_run_devices
from corpus import TESTDATA, XLA, needs_corpus

MD = TESTDATA / "multidevice"
PROGRAMS = ["pmap_collectives", "shard_map_collectives", "dp_mlp_step", "mesh2d_matmul",
            "fsdp_layer", "shard_map_partial", "shard_map_2d"]
TOL = dict(rtol=1e-5, atol=1e-6)
ADD = "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"


def _npz(path):
    d = np.load(path)
    ins = [d[f"in{i}"] for i in range(sum(k.startswith("in") for k in d.files))]
    outs = [d[f"out{i}"] for i in range(sum(k.startswith("out") for k in d.files))]
    return ins, outs


def _leaves(m, values):
    return [flatten_leaves(v, m.entry.root.shape) for v in values]


@pytest.fixture(scope="module")
def programs():
    """name -> (module, per-device args, JAX's per-device outputs, interpreter leaves)."""
    out = {}
    for name in PROGRAMS:
        m = hloc.parse((MD / f"{name}.after_optimizations.hlo").read_text())
        ins, outs = _npz(MD / f"{name}.devices.npz")
        args = [[x[d] for x in ins] for d in range(4)]
        out[name] = (m, args, outs, _leaves(m, interp_run_devices(m, args)))
    return out


@pytest.mark.parametrize("name", PROGRAMS)
def test_after_dump_compiled_on_4_devices_gives_jax_and_interpreter_values(name, programs):
    m, args, outs, interp = programs[name]
    exe = compile_module(m, numerics="ieee")
    assert isinstance(exe, DeviceExecutable) and exe.table
    got = _leaves(m, run_devices(exe, args))
    for d in range(4):
        assert len(got[d]) == len(outs)
        for g, want, i in zip(got[d], outs, interp[d]):
            np.testing.assert_allclose(g, want[d], **TOL)
            assert g.dtype == i.dtype and np.array_equal(g, i), f"device {d}"
    # xla-cpu numerics: XLA's values within the tolerance (contraction/reassociation)
    got = _leaves(m, run_devices(compile_module(m), args))
    for d in range(4):
        for g, want in zip(got[d], outs):
            np.testing.assert_allclose(g, want[d], **TOL)


# XLA's bit-exact agreement (xla-cpu numerics, JAX's .devices.npz) where it holds; the
# others differ from XLA by 1-2 ulp of f32 on some element (dots and reductions summed
# in another order), checked against the tolerance above. mesh2d_matmul's and
# shard_map_partial's tanh is XLA:CPU's rational approximation in xla-cpu numerics.
BIT_EXACT_WITH_XLA = {"pmap_collectives", "shard_map_collectives", "shard_map_2d", "mesh2d_matmul",
                     "shard_map_partial"}


@pytest.mark.parametrize("name", PROGRAMS)
def test_bit_exact_with_xla_where_listed(name, programs):
    m, args, outs, _ = programs[name]
    got = _leaves(m, run_devices(compile_module(m), args))
    exact = all(np.array_equal(g, want[d]) for d in range(4) for g, want in zip(got[d], outs))
    assert exact == (name in BIT_EXACT_WITH_XLA)


def _module4(body, header="replica_count=2, num_partitions=2", shape="f32[2]"):
    return hloc.parse(f"HloModule m, {header}\n{ADD}ENTRY e {{ x = {shape} parameter(0)\n"
                      f" {body} }}")


def _both(m, n=4):
    xs = [[np.array([10 * d, 10 * d + 1], np.float32)] for d in range(n)]
    compiled = run_devices(compile_module(m, numerics="ieee"), xs)
    for c, i in zip(_leaves(m, compiled), _leaves(m, interp_run_devices(m, xs))):
        assert all(np.array_equal(a, b) for a, b in zip(c, i))
    return [np.asarray(v) if not isinstance(v, tuple) else v for v in compiled]


def test_group_modes_compiled():
    out = _both(_module4("ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add"))
    assert [o.tolist() for o in out] == [[20, 22], [40, 42], [20, 22], [40, 42]]
    out = _both(_module4("ROOT r = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1}}, "
                         "to_apply=add"))
    assert all(o.tolist() == [60, 64] for o in out)
    out = _both(_module4("ROOT r = f32[4] all-gather(x), channel_id=1, "
                         "replica_groups={{3,0},{2,1}}, use_global_device_ids=true, "
                         "dimensions={0}"))
    assert out[0].tolist() == [30, 31, 0, 1] and out[1].tolist() == [20, 21, 10, 11]
    rid = _both(_module4("ROOT r = (u32[], u32[]) tuple(replica-id(), partition-id())"))
    assert [(int(a), int(b)) for a, b in rid] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    out = _both(_module4("ROOT r = f32[1] reduce-scatter(x), channel_id=1, "
                         "replica_groups={{0,1}}, use_global_device_ids=true, dimensions={0}, "
                         "to_apply=add", header="num_partitions=2"), n=2)
    assert [o.tolist() for o in out] == [[10], [12]]
    out = _both(_module4("ROOT r = f32[2] all-to-all(x), channel_id=1, replica_groups={{0,1}}, "
                         "dimensions={0}", header="num_partitions=2"), n=2)
    assert [o.tolist() for o in out] == [[0, 10], [1, 11]]
    out = _both(_module4("ROOT r = f32[2] collective-permute(x), channel_id=1, "
                         "source_target_pairs={{0,1}}"))
    assert [o.tolist() for o in out] == [[0, 0], [0, 1], [0, 0], [20, 21]]
    out = _both(_module4("ROOT r = f32[2] collective-broadcast(x), replica_groups={{1,0}}"))
    assert [o.tolist() for o in out] == [[20, 21], [30, 31], [20, 21], [30, 31]]


def test_non_default_layouts_and_async_forms_compiled():
    m = hloc.parse(f"""HloModule m, num_partitions=2
{ADD}%ag (a: f32[2]) -> f32[4] {{
  %a = f32[2]{{0}} parameter(0)
  ROOT %g = f32[4]{{0}} all-gather(%a), channel_id=1, replica_groups={{{{0,1}}}},
    use_global_device_ids=true, dimensions={{0}}
}}
ENTRY e {{ x = f32[2] parameter(0)
  y = f32[2,3]{{0,1}} parameter(1)
  s = ((f32[2]), f32[4], u32[]) async-start(x), calls=%ag
  d = f32[4] async-done(s)
  rs = f32[2] all-reduce-start(x), channel_id=2, replica_groups={{{{0,1}}}},
    use_global_device_ids=true, to_apply=add
  rd = f32[2] all-reduce-done(rs)
  ps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(x), channel_id=3,
    source_target_pairs={{{{0,1}},{{1,0}}}}
  pd = f32[2] collective-permute-done(ps)
  yg = f32[4,3]{{0,1}} all-gather(y), channel_id=4, replica_groups={{{{0,1}}}},
    use_global_device_ids=true, dimensions={{0}}
  ROOT t = (f32[4], f32[2], f32[2], f32[4,3]{{0,1}}) tuple(d, rd, pd, yg) }}""")
    xs = [np.array([1, 2], np.float32), np.array([10, 20], np.float32)]
    ys = [np.arange(6, dtype=np.float32).reshape(2, 3) + 100 * d for d in range(2)]
    out = run_devices(compile_module(m), [[x, y] for x, y in zip(xs, ys)])
    for d in range(2):
        assert out[d][0].tolist() == [1, 2, 10, 20]
        assert out[d][1].tolist() == [11, 22]
        assert out[d][2].tolist() == xs[1 - d].tolist()
        assert np.array_equal(out[d][3], np.concatenate(ys))


LOOP = f"""HloModule m, num_partitions=2
{ADD}max {{ a = s32[] parameter(0)
 b = s32[] parameter(1)
 ROOT c = s32[] maximum(a, b) }}
cond {{ s = (s32[], s32[]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 n = s32[] get-tuple-element(s), index=1
 ROOT lt = pred[] compare(i, n), direction=LT }}
body {{ s = (s32[], s32[]) parameter(0)
 i = s32[] get-tuple-element(s), index=0
 n = s32[] get-tuple-element(s), index=1
 one = s32[] constant(1)
 j = s32[] add(i, one)
 k = s32[] all-reduce(j), channel_id=1, replica_groups={{{{0,1}}}},
   use_global_device_ids=true, to_apply=max
 ROOT t = (s32[], s32[]) tuple(k, n) }}
ENTRY e {{ n = s32[] parameter(0)
 z = s32[] constant(0)
 t = (s32[], s32[]) tuple(z, n)
 w = (s32[], s32[]) while(t), condition=cond, body=body
 ROOT r = s32[] get-tuple-element(w), index=0 }}"""


def test_collectives_inside_a_while_loop_meet_once_per_iteration():
    m = hloc.parse(LOOP)
    out = run_devices(compile_module(m), [[np.int32(5)], [np.int32(5)]])
    assert [int(v) for v in out] == [5, 5]


def _no_hang(fn):
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(DeviceError, fn)),
                         daemon=True)
    t.start()
    t.join(60)
    assert done, "the run did not end"
    return str(done[0].value)


def test_a_device_leaving_a_loop_early_ends_the_run_instead_of_hanging():
    # device 1 stops after 3 iterations; device 0 waits at the all-reduce of iteration 4,
    # fails, and its loop (whose state the failed all-reduce never wrote) stops too.
    exe = compile_module(hloc.parse(LOOP))
    msg = _no_hang(lambda: run_devices(exe, [[np.int32(10 ** 9)], [np.int32(3)]]))
    assert "finished without reaching all-reduce" in msg
    # the executable is usable again afterwards
    assert [int(v) for v in run_devices(exe, [[np.int32(4)], [np.int32(4)]])] == [4, 4]


def test_devices_that_do_not_meet_in_a_conditional_fail():
    from test_multidevice import NOT_MEETING
    m = hloc.parse(NOT_MEETING)
    exe = compile_module(m)
    msg = _no_hang(lambda: run_devices(exe, [[np.zeros(2, np.float32)]] * 2))
    assert "finished without reaching all-reduce" in msg


def test_alone_a_collective_needing_devices_is_unsupported_and_a_group_of_one_runs():
    text = (f"HloModule m, num_partitions=2\n{ADD}ENTRY e {{ x = f32[2] parameter(0)\n"
            "ROOT r = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1}}, "
            "use_global_device_ids=true, to_apply=add }")
    exe = compile_module(hloc.parse(text))
    with pytest.raises(UnsupportedError, match="all-reduce needs 2 devices"):
        exe.run([np.zeros(2, np.float32)])
    one = compile_module(hloc.parse(text.replace("num_partitions=2", "num_partitions=1")
                                    .replace("{{0,1}}", "{{0}}")))
    assert one.run([np.array([1, 2], np.float32)]).tolist() == [1, 2]


def test_object_code_names_only_the_fixed_runtime_entry():
    m = hloc.parse((MD / "shard_map_2d.after_optimizations.hlo").read_text())
    exe = compile_module(m)
    undefined = set(runtime.undefined_symbols(exe.code.obj))
    assert "hloc_collective" in undefined
    assert undefined <= runtime.ALLOWED
    assert "hloc_collective" in runtime.DEVICE


def test_kernel_threads_are_shared_out_among_devices():
    m = hloc.parse((MD / "dp_mlp_step.after_optimizations.hlo").read_text())
    exe = compile_module(m, threads=8)
    ins, _ = _npz(MD / "dp_mlp_step.devices.npz")
    seen = []
    orig = DeviceExecutable.run_on

    def spy(self, interp, args):
        seen.append(self.threads)
        return orig(self, interp, args)
    DeviceExecutable.run_on = spy
    try:
        run_devices(exe, [[x[d] for x in ins] for d in range(4)])
    finally:
        DeviceExecutable.run_on = orig
    assert seen == [2] * 4 and exe.threads == 8


def test_run_cli_compiled_per_device(tmp_path):
    f = MD / "shard_map_2d.after_optimizations.hlo"
    dev = MD / "shard_map_2d.devices.npz"
    out = tmp_path / "o.npz"
    r = subprocess.run([sys.executable, "-m", "hloc", "run", str(f), "--backend", "cpu",
                        "--inputs", str(dev), "--expected", str(dev), "--output", str(out),
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["backend"] == "cpu" and [d["device"] for d in j["devices"]] == [0, 1, 2, 3]
    assert "OK: 6 outputs match on 4 devices" in r.stderr
    _, want = _npz(dev)
    for got, w in zip(hloc.load_outputs(out), want):
        np.testing.assert_allclose(got, w, **TOL)


# Global views: sharding annotations are copies; manual regions (shard_map / pmap bodies)
# run as an SPMD program on the mesh's devices (every device computes the global values,
# the body runs on its block, LocalToGlobalShape gathers the blocks).
@pytest.mark.parametrize("name", PROGRAMS)
def test_before_dump_compiled_gives_jax_global_outputs_and_the_interpreters(name):
    from hloc.cli_backend import prepare_for_cpu
    m = hloc.parse((MD / f"{name}.before_optimizations.hlo").read_text())
    ins, outs = _npz(MD / f"{name}.npz")
    want = flatten_leaves(Interpreter(m).run(ins), m.entry.root.shape)
    exe = compile_module(prepare_for_cpu(m, None), numerics="ieee")
    got = flatten_leaves(exe.run(ins), m.entry.root.shape)
    for g, j, i in zip(got, outs, want):
        np.testing.assert_allclose(g, j, **TOL)
        np.testing.assert_allclose(g, i, rtol=1e-6, atol=1e-7)


REGION = r"""HloModule m, num_partitions=2, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2]>}}
body { a = f32[1,2] parameter(0)
  ROOT n = f32[1,2] negate(a) }
ENTRY e { x = f32[2,2] parameter(0)
  l = f32[1,2] custom-call(x), custom_call_target="xla.sdy.GlobalToLocalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.in_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>",xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>"}
  r = f32[1,2] call(l), to_apply=body
  g = f32[2,2] custom-call(r), custom_call_target="xla.sdy.LocalToGlobalShape", custom_call_has_side_effect=true, frontend_attributes={xla.sdy.manual_axes="#sdy<manual_axes{\"x\"}>",xla.sdy.out_shardings="#sdy.sharding_per_value<[<@mesh, [{\"x\"}, {}]>]>"}
  ROOT t = (f32[2,2]) tuple(g) }"""


def test_compiled_manual_region_and_a_per_shard_value_used_outside():
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    m = hloc.parse(REGION)
    (g,) = compile_module(m).run([x])
    assert g.tolist() == (-x).tolist()
    bad = hloc.parse(REGION.replace("ROOT t = (f32[2,2]) tuple(g)",
                                    "ROOT t = (f32[2,2], f32[1,2]) tuple(g, r)"))
    with pytest.raises(UnsupportedError, match="per-shard value of a manual region used by "
                                               "tuple outside the region"):
        Interpreter(bad).run([x])
    with pytest.raises(UnsupportedError, match="per-shard value of a manual region used by "
                                               "tuple outside the region"):
        compile_module(bad).run([x])


def test_replay_compares_per_device(tmp_path):
    f = MD / "dp_mlp_step.after_optimizations.hlo"
    lit = tmp_path / "lit.npz"
    r = subprocess.run([sys.executable, "-m", "hloc", "replay", str(f), "--platform", "cpu",
                        "--inputs", str(MD / "dp_mlp_step.devices.npz"),
                        "--output_literals_file", str(lit)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "close enough on all 4 devices" in r.stderr
    d = np.load(lit)
    assert d["arg0"].shape[0] == 4 and d["test.out0"].shape[0] == 4
    # xla-cpu numerics differ from the interpreter by an ulp on some device: with zero
    # bounds the comparison names the device and fails
    r = subprocess.run([sys.executable, "-m", "hloc", "replay", str(f), "--platform", "cpu",
                        "--inputs", str(MD / "dp_mlp_step.devices.npz"),
                        "--abs_error_bound", "0", "--rel_error_bound", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert "INVALID_ARGUMENT: device " in r.stderr
    # fake per-device arguments, interpreter against interpreter
    r = subprocess.run([sys.executable, "-m", "hloc", "replay",
                        str(MD / "shard_map_collectives.after_optimizations.hlo"),
                        "--platform", "interpreter"], capture_output=True, text=True)
    assert r.returncode == 0 and "on all 4 devices" in r.stderr, r.stderr


# ---------------------------------------------------------------------------
# XLA's multi-device corpus modules, compiled

# Not run compiled, as on the interpreter (with the reasons in test_multidevice.NOT_RUN).
from test_multidevice import NOT_RUN as CORPUS_NOT_RUN, _multi_device_files  # noqa: E402


@needs_corpus
def test_corpus_multi_device_modules_compiled_give_the_interpreters_values():
    from hloc import multidevice as md
    from hloc.fake_args import make_fake_arguments
    ok, failed = [], {}
    for name in _multi_device_files():
        m = hloc.parse((XLA / name).read_text())
        n = md.device_plan(m, None)
        args = (md.fake_per_device(m, n, seed=1, use_large_float_range=False) if n > 1
                else [make_fake_arguments(m, seed=1)])
        try:
            exe = compile_module(m, numerics="ieee")
            got = run_devices(exe, args) if n > 1 else [exe.run(args[0])]
        except UnsupportedError as e:
            failed[name] = str(e)
            continue
        want = interp_run_devices(m, args) if n > 1 else [Interpreter(m).run(args[0])]
        for g, w in zip(_leaves(m, got), _leaves(m, want)):
            assert all(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
                       for a, b in zip(g, w)), name
        ok.append(name)
    assert set(failed) == set(CORPUS_NOT_RUN), sorted(set(failed) ^ set(CORPUS_NOT_RUN))
    for name, why in CORPUS_NOT_RUN.items():
        assert why in failed[name], (name, failed[name])
    assert len(ok) == 17


@needs_corpus
@pytest.mark.parametrize("name", sorted(json.loads((MD / "corpus_values.json").read_text())))
def test_corpus_module_compiled_gives_xla_results_on_every_device(name):
    """SHA-256 of every result leaf per device equals XLA:CPU's (corpus_values.json)."""
    import hashlib
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gen_values", TESTDATA.parent / "tools" / "gen_corpus_multidevice_values.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    want = json.loads((MD / "corpus_values.json").read_text())[name]
    m = hloc.parse((XLA / name).read_text())
    n = want["replicas"] * want["partitions"]
    params = [(tuple(p.shape.dims), p.shape.dtype.np) for p in m.entry.parameters]
    results = run_devices(compile_module(m), [gen.inputs(params, d) for d in range(n)])
    for d, r in enumerate(results):
        got = [hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
               for a in flatten_leaves(r, m.entry.root.shape)]
        assert got == want["digests"][d], f"device {d}"


def test_a_plain_executable_refuses_collectives():
    """Only the DeviceExecutable runs collectives; a plain Executable built by hand would
    call the device runtime with no device run under way."""
    from hloc.backend import Executable, Options
    from hloc.diagnostics import UnsupportedError
    m = hloc.parse("HloModule ar, replica_count=2\n\nadd {\n  a = f32[] parameter(0)\n"
                   "  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n"
                   "  p = f32[4] parameter(0)\n"
                   "  ROOT r = f32[4] all-reduce(p), replica_groups={{0,1}}, to_apply=add\n}\n")
    with pytest.raises(UnsupportedError, match="DeviceExecutable"):
        Executable(m, Options())
