"""Multi-device dumps: mesh-axes replica groups, N devices in one process, global views.

testdata/multidevice holds seven JAX programs run by XLA on 4 CPU devices
(tools/gen_multidevice.py): before dumps must give JAX's global outputs from the global
inputs, after dumps JAX's per-device outputs from the per-device inputs. Group-mode
semantics are checked on small modules with values worked out by hand from XLA's rules.
"""
from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import hloc
from hloc.diagnostics import HlocError, UnsupportedError
from hloc.interp import Interpreter
from hloc.interp.devices import DeviceError, run_devices
from hloc.inputs import flatten_leaves
from hloc.syntax import attr_kinds as A
from corpus import TESTDATA, XLA, needs_corpus, xla_manifest

MD = TESTDATA / "multidevice"
RUN_INTERP = [sys.executable, "-m", "hloc", "run", "--backend", "interpreter"]   # collectives
PROGRAMS = ["pmap_collectives", "shard_map_collectives", "dp_mlp_step", "mesh2d_matmul",
            "fsdp_layer", "shard_map_partial", "shard_map_2d"]
TOL = dict(rtol=1e-5, atol=1e-6)


def _npz(path):
    d = np.load(path)
    ins = [d[f"in{i}"] for i in range(sum(k.startswith("in") for k in d.files))]
    outs = [d[f"out{i}"] for i in range(sum(k.startswith("out") for k in d.files))]
    return ins, outs


@pytest.mark.parametrize("name", PROGRAMS)
@pytest.mark.parametrize("stage", ["before", "after"])
def test_dump_prints_back_byte_for_byte(name, stage):
    text = (MD / f"{name}.{stage}_optimizations.hlo").read_text()
    assert hloc.to_text(hloc.parse(text)) == text


def test_after_dumps_use_mesh_axes_groups():
    texts = [(MD / f"{n}.after_optimizations.hlo").read_text() for n in PROGRAMS]
    assert sum("replica_groups=mesh[" in t for t in texts) == 3      # dp, 2-D mesh, fsdp


@pytest.mark.parametrize("name", PROGRAMS)
def test_before_dump_gives_jax_global_outputs(name):
    m = hloc.parse((MD / f"{name}.before_optimizations.hlo").read_text())
    ins, outs = _npz(MD / f"{name}.npz")
    got = flatten_leaves(Interpreter(m).run(ins), m.entry.root.shape)
    assert len(got) == len(outs)
    for g, want in zip(got, outs):
        np.testing.assert_allclose(g, want, **TOL)


@pytest.mark.parametrize("name", PROGRAMS)
def test_after_dump_on_4_devices_gives_jax_outputs(name):
    m = hloc.parse((MD / f"{name}.after_optimizations.hlo").read_text())
    ins, outs = _npz(MD / f"{name}.devices.npz")
    results = run_devices(m, [[x[d] for x in ins] for d in range(4)])
    for d, r in enumerate(results):
        got = flatten_leaves(r, m.entry.root.shape)
        for g, want in zip(got, outs):
            np.testing.assert_allclose(g, want[d], **TOL)
    # the per-device blocks put together are JAX's global outputs
    _, glob = _npz(MD / f"{name}.npz")
    for i, want in enumerate(glob):
        blocks = [flatten_leaves(r, m.entry.root.shape)[i] for r in results]
        if want.shape == blocks[0].shape:                          # replicated
            for b in blocks:
                np.testing.assert_allclose(b, want, **TOL)
        else:
            assert sum(b.size for b in blocks) >= want.size


def test_run_cli_per_device_inputs_output_json_expected(tmp_path):
    f = MD / "fsdp_layer.after_optimizations.hlo"
    dev = MD / "fsdp_layer.devices.npz"
    out = tmp_path / "o.npz"
    r = subprocess.run([*RUN_INTERP, str(f), "--inputs", str(dev),
                        "--expected", str(dev), "--output", str(out), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert [d["partition"] for d in j["devices"]] == [0, 1, 2, 3]
    assert "OK: 2 outputs match on 4 devices" in r.stderr
    got = hloc.load_outputs(out)
    _, want = _npz(dev)
    np.testing.assert_allclose(got[1], want[1], **TOL)
    r = subprocess.run([*RUN_INTERP, str(f), "--devices", "3"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "1 x 4 = 4 devices" in r.stderr
    r = subprocess.run([*RUN_INTERP, str(f), "--inputs",
                        str(MD / "fsdp_layer.npz")], capture_output=True, text=True)
    assert r.returncode == 2 and "leading device axis" in r.stderr


def test_run_cli_text_per_device_and_global_view():
    r = subprocess.run([*RUN_INTERP,
                        str(MD / "mesh2d_matmul.after_optimizations.hlo")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert re.findall(r"\*\* device (\d) \(replica 0, partition \d\) \*\*", r.stdout) == \
        ["0", "1", "2", "3"]
    r = subprocess.run([*RUN_INTERP,
                        str(MD / "shard_map_collectives.before_optimizations.hlo"),
                        "--inputs", str(MD / "shard_map_collectives.npz"),
                        "--expected", str(MD / "shard_map_collectives.npz")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "** device" not in r.stdout, r.stderr


# ---------------------------------------------------------------------------
# Mesh-axes replica groups (XLA's MeshAxesReplicaGroupList)

@pytest.mark.parametrize("text,groups", [
    ("mesh['a'=2,'b'=4] {'b'}", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("mesh['a'=2,'b'=4] {'a'}", ((0, 4), (1, 5), (2, 6), (3, 7))),
    ("mesh['a'=2,'b'=4] {'b','a'}", ((0, 4, 1, 5, 2, 6, 3, 7),)),
    ("mesh['a'=8] {'a':(2)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
    ("mesh['a'=8] {'a':(1)2,'a':(4)2}", ((0, 1, 4, 5), (2, 3, 6, 7))),
    ("mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0) {'b'}", ((7, 6, 5, 4), (3, 2, 1, 0))),
    ("mesh['axis_0'=4,'axis_1'=1] {'axis_0'}", ((0, 1, 2, 3),)),
])
def test_mesh_groups_parse_print_and_expand(text, groups):
    v = A.parse_value("replica_groups", text)
    assert A.format_value("replica_groups", v) == text
    assert v.groups == groups


@pytest.mark.parametrize("text,message", [
    ("mesh['a'=2] {}", "more than one device per group"),
    ("mesh['a'=2] {'c'}", "unknown mesh axis"),
    ("mesh['a'=8] {'a':(1)4,'a':(2)2}", "overlap"),
    ("mesh[a=2] {a}", "expects string"),
    ("mesh['a'=2,'a'=2] {'a'}", "duplicate axis names"),
    ("mesh['a'=4], device_ids=(0,1,1,3) {'a'}", "permutation"),
    ("mesh['a'=100000,'b'=100000] {'a'}", "at most"),
])
def test_bad_mesh_groups_are_rejected(text, message):
    with pytest.raises(A.AttrSyntaxError, match=message):
        A.parse_value("replica_groups", text)


def test_verifier_checks_mesh_groups_against_the_device_count():
    text = (MD / "fsdp_layer.after_optimizations.hlo").read_text()
    from hloc.diagnostics import VerifyError
    from hloc.verifier import verify
    with pytest.raises(VerifyError, match="should contain 8 flattened IDs, but found 4"):
        verify(hloc.parse(text.replace("num_partitions=4", "num_partitions=8")))


# ---------------------------------------------------------------------------
# Group modes and op semantics on 2 replicas x 2 partitions (device d = 2r + p)

ADD = "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"


def _run4(body, shape="f32[2]", header="replica_count=2, num_partitions=2"):
    text = f"HloModule m, {header}\n{ADD}ENTRY e {{ x = {shape} parameter(0)\n {body} }}"
    m = hloc.parse(text)
    n = 4 if "replica_count" in header else 2
    xs = [np.array([10 * d, 10 * d + 1], np.float32) for d in range(n)]
    return [np.asarray(v) if not isinstance(v, tuple) else v
            for v in run_devices(m, [[x] for x in xs])]


def test_all_reduce_group_modes():
    # no channel: replicas {0,1} of the same partition -> devices (0,2) and (1,3)
    out = _run4("ROOT r = f32[2] all-reduce(x), replica_groups={}, to_apply=add")
    assert [o.tolist() for o in out] == [[20, 22], [40, 42], [20, 22], [40, 42]]
    # channel, no global ids: replica group x all partitions -> everyone
    out = _run4("ROOT r = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1}}, "
                "to_apply=add")
    assert all(o.tolist() == [60, 64] for o in out)
    # flattened ids
    out = _run4("ROOT r = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,3},{1,2}}, "
                "use_global_device_ids=true, to_apply=add")
    assert [o.tolist() for o in out] == [[30, 32], [30, 32], [30, 32], [30, 32]]


def test_all_gather_orders_by_group_and_ids():
    out = _run4("ROOT r = f32[4] all-gather(x), channel_id=1, replica_groups={{3,0},{2,1}}, "
                "use_global_device_ids=true, dimensions={0}")
    assert out[0].tolist() == [30, 31, 0, 1] and out[1].tolist() == [20, 21, 10, 11]
    rid = _run4("ROOT r = (u32[], u32[]) tuple(replica-id(), partition-id())")
    assert [(int(a), int(b)) for a, b in rid] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_reduce_scatter_all_to_all_permute_broadcast():
    out = _run4("ROOT r = f32[1] reduce-scatter(x), channel_id=1, replica_groups={{0,1}}, "
                "use_global_device_ids=true, dimensions={0}, to_apply=add",
                header="num_partitions=2")
    assert [o.tolist() for o in out] == [[10], [12]]
    out = _run4("ROOT r = f32[2] all-to-all(x), channel_id=1, replica_groups={{0,1}}, "
                "dimensions={0}", header="num_partitions=2")
    assert [o.tolist() for o in out] == [[0, 10], [1, 11]]
    out = _run4("ROOT r = f32[2] collective-permute(x), channel_id=1, "
                "source_target_pairs={{0,1}}")
    assert [o.tolist() for o in out] == [[0, 0], [0, 1], [0, 0], [20, 21]]
    out = _run4("ROOT r = f32[2] collective-broadcast(x), replica_groups={{1,0}}")
    assert [o.tolist() for o in out] == [[20, 21], [30, 31], [20, 21], [30, 31]]


# Partition 0 takes the branch with the all-reduce, partition 1 does not: they never meet.
NOT_MEETING = f"""HloModule m, num_partitions=2
{ADD}t {{ a = f32[2] parameter(0)
 ROOT r = f32[2] all-reduce(a), channel_id=1, replica_groups={{{{0,1}}}},
   use_global_device_ids=true, to_apply=add }}
f {{ ROOT a = f32[2] parameter(0) }}
ENTRY e {{ x = f32[2] parameter(0)
 p = u32[] partition-id()
 z = u32[] constant(0)
 c = pred[] compare(p, z), direction=EQ
 ROOT r = f32[2] conditional(c, x, x), true_computation=t, false_computation=f }}"""


def test_devices_that_do_not_meet_fail_instead_of_hanging():
    text = NOT_MEETING
    m = hloc.parse(text)
    done = []
    t = threading.Thread(target=lambda: done.append(
        pytest.raises(DeviceError, run_devices, m, [[np.zeros(2, np.float32)]] * 2)))
    t.start()
    t.join(60)
    assert done and "finished without reaching all-reduce" in str(done[0].value)


def test_alone_a_collective_needing_devices_is_unsupported():
    text = f"HloModule m, num_partitions=2\n{ADD}ENTRY e {{ x = f32[2] parameter(0)\n" \
           "ROOT r = f32[2] all-reduce(x), channel_id=1, replica_groups={{0,1}}, " \
           "use_global_device_ids=true, to_apply=add }"
    with pytest.raises(UnsupportedError, match="all-reduce needs 2 devices"):
        Interpreter(hloc.parse(text)).run([np.zeros(2, np.float32)])
    beyond = hloc.parse(text.replace("{{0,1}}", "{{0,1,2}}"))
    with pytest.raises(DeviceError, match="beyond the 2 of the run"):
        run_devices(beyond, [[np.zeros(2, np.float32)]] * 2)


# ---------------------------------------------------------------------------
# XLA's multi-device corpus modules, run with their device counts

def _multi_device_files() -> list[str]:
    out = []
    for row in xla_manifest():
        head = next((ln for ln in (XLA / row["file"]).read_text().splitlines()
                     if "HloModule" in ln), "")
        counts = [int(n) for n in re.findall(r"(?:replica_count|num_partitions)=(\d+)", head)]
        if row["expect"] == "parse_ok" and any(c > 1 for c in counts):
            out.append(row["file"])
    return out


# Those XLA did not run or that hloc does not run yet, with the reason (checked both ways).
NOT_RUN = {
    "0139_raggedalltoallwithreplicagroups.hlo": "out of bounds",   # random fake offsets
    "0141_raggedalltoall.hlo": "out of bounds",
    "0140_raggedalltoallwithcollectivedevicelist.hlo": "out of bounds",
    "0145_collectivepermuteinplaceupdate.hlo": "in-place (4-operand) form",
    "0146_collectivepermuteinplaceupdate3d.hlo": "in-place (4-operand) form",
    "0147_collectivepermuteinplaceupdatemultiplereadwrite.hlo": "in-place (4-operand) form",
    "0148_collectivepermuteinplaceupdatetuplemultiplereadw.hlo": "in-place (4-operand) form",
    "0149_collectivepermutetupleinplaceupdate.hlo": "in-place (4-operand) form",
    "0152_collectivepermutestartanddoneinplaceupdate.hlo": "in-place (4-operand) form",
}


@needs_corpus
def test_corpus_multi_device_modules_run_with_their_device_counts():
    from hloc import multidevice as md
    from hloc.fake_args import make_fake_arguments
    from hloc.runner import run_module
    from hloc.verifier import verify
    files = _multi_device_files()
    ran_by_xla = {r["file"] for r in xla_manifest() if "compiled+ran" in r["notes"]}
    ok, failed = [], {}
    for name in files:
        m = hloc.parse((XLA / name).read_text())
        verify(m)
        n = md.device_plan(m, None)
        args = (md.fake_per_device(m, n, seed=1, use_large_float_range=False) if n > 1
                else make_fake_arguments(m, seed=1))
        try:
            run_module(m, args, devices=n)
            ok.append(name)
        except UnsupportedError as e:
            failed[name] = str(e)
    assert len(files) == 26
    assert ran_by_xla & set(files) <= set(ok), "a module XLA ran does not run"
    assert len(ran_by_xla & set(files)) == 9
    assert set(failed) == set(NOT_RUN), sorted(set(failed) ^ set(NOT_RUN))
    for name, why in NOT_RUN.items():
        assert why in failed[name], (name, failed[name])
    assert len(ok) == 17


@pytest.mark.parametrize("name", PROGRAMS)
def test_opt_keeps_collectives_shardings_and_manual_regions(name):
    """`hloc opt` on the before dump (the manual-region call is `inlineable="false"`, so the
    call-inliner keeps it) and `opt --force` on the after dump keep JAX's values."""
    from hloc.passes.driver import optimize
    from hloc.passes.pipelines import default_pipeline
    before = hloc.parse((MD / f"{name}.before_optimizations.hlo").read_text())
    regions = sum("manual_computation_body" in c.name for c in before.computations)
    assert optimize(before, default_pipeline()).skipped is None
    assert sum("manual_computation_body" in c.name for c in before.computations) == regions
    ins, outs = _npz(MD / f"{name}.npz")
    got = flatten_leaves(Interpreter(before).run(ins), before.entry.root.shape)
    for g, want in zip(got, outs):
        np.testing.assert_allclose(g, want, **TOL)
    after = hloc.parse((MD / f"{name}.after_optimizations.hlo").read_text())
    assert optimize(after, default_pipeline(), force=True).skipped is None
    ins, outs = _npz(MD / f"{name}.devices.npz")
    for d, r in enumerate(run_devices(after, [[x[d] for x in ins] for d in range(4)])):
        for g, want in zip(flatten_leaves(r, after.entry.root.shape), outs):
            np.testing.assert_allclose(g, want[d], **TOL)


def test_huge_device_counts_are_refused_before_any_work():
    f = MD / "mesh2d_matmul.after_optimizations.hlo"
    text = f.read_text().replace("num_partitions=4", "num_partitions=100000", 1)
    r = subprocess.run([*RUN_INTERP, "--no-verify", "-"], input=text,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 3 and "at most 512 run in one process" in r.stderr, r.stderr


def test_mesh_group_text_mutations_never_crash():
    """Untrusted input: every mutation of mesh-groups text parses or is an AttrSyntaxError."""
    rng = np.random.default_rng(0)
    seeds = ["mesh['a'=2,'b'=4], device_ids=(7,6,5,4,3,2,1,0) {'b','a':(1)2}",
             "mesh['axis_0'=4,'axis_1'=1] {'axis_0'}"]
    alphabet = list("mesh[]{}(),='ab:0123456789 -_x")
    for _ in range(3000):
        s = list(seeds[rng.integers(len(seeds))])
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(len(s)))
            op = rng.integers(3)
            if op == 0:
                del s[i]
            elif op == 1:
                s.insert(i, alphabet[rng.integers(len(alphabet))])
            else:
                s[i] = alphabet[rng.integers(len(alphabet))]
        text = "".join(s)
        try:
            v = A.parse_value("replica_groups", text)
        except A.AttrSyntaxError:
            continue
        groups = v.groups
        assert sorted(x for g in groups for x in g) == sorted(set(x for g in groups for x in g))


def test_manual_region_forms_not_run_are_unsupported_and_named():
    text = (MD / "shard_map_collectives.before_optimizations.hlo").read_text()
    ins, _ = _npz(MD / "shard_map_collectives.npz")
    partly = text.replace('#sdy.mesh<["x"=4]>', '#sdy.mesh<["x"=4, "y"=2]>')
    assert partly != text
    # manual over x of an x=4, y=2 mesh: the body runs on 8 devices, its groups name 4
    with pytest.raises(DeviceError, match="device 4 is in none of the replica groups"):
        Interpreter(hloc.parse(partly)).run(ins)
    sub = text.replace('[{\\"x\\"}, {}]>]>",xla.sdy.manual_axes',
                       '[{\\"x\\":(1)2}, {}]>]>",xla.sdy.manual_axes')
    assert sub != text
    with pytest.raises(UnsupportedError, match="a Shardy form hloc does not run yet"):
        Interpreter(hloc.parse(sub)).run(ins)


def test_async_wrapped_and_start_done_collectives():
    text = f"""HloModule m, num_partitions=2
{ADD}%ag (a: f32[2]) -> f32[4] {{
  %a = f32[2]{{0}} parameter(0)
  ROOT %g = f32[4]{{0}} all-gather(%a), channel_id=1, replica_groups={{{{0,1}}}},
    use_global_device_ids=true, dimensions={{0}}
}}
ENTRY e {{ x = f32[2] parameter(0)
  s = ((f32[2]), f32[4], u32[]) async-start(x), calls=%ag
  d = f32[4] async-done(s)
  rs = f32[2] all-reduce-start(x), channel_id=2, replica_groups={{{{0,1}}}},
    use_global_device_ids=true, to_apply=add
  rd = f32[2] all-reduce-done(rs)
  ps = (f32[2], f32[2], u32[], u32[]) collective-permute-start(x), channel_id=3,
    source_target_pairs={{{{0,1}},{{1,0}}}}
  pd = f32[2] collective-permute-done(ps)
  ROOT t = (f32[4], f32[2], f32[2]) tuple(d, rd, pd) }}"""
    m = hloc.parse(text)
    xs = [np.array([1, 2], np.float32), np.array([10, 20], np.float32)]
    out = run_devices(m, [[x] for x in xs])
    for d in range(2):
        assert out[d][0].tolist() == [1, 2, 10, 20]
        assert out[d][1].tolist() == [11, 22]
        assert out[d][2].tolist() == xs[1 - d].tolist()


def _xla_values() -> dict:
    return json.loads((MD / "corpus_values.json").read_text())


@needs_corpus
@pytest.mark.parametrize("name", sorted(json.loads((MD / "corpus_values.json").read_text())))
def test_corpus_module_gives_xla_results_on_every_device(name):
    """Per device, the SHA-256 of every result leaf equals XLA's
    (tools/gen_corpus_multidevice_values.py: exact integer inputs, R replicas)."""
    import hashlib
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "gen_values", TESTDATA.parent / "tools" / "gen_corpus_multidevice_values.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    want = _xla_values()[name]
    m = hloc.parse((XLA / name).read_text())
    n = want["replicas"] * want["partitions"]
    params = [(tuple(p.shape.dims), p.shape.dtype.np) for p in m.entry.parameters]
    results = run_devices(m, [gen.inputs(params, d) for d in range(n)])
    for d, r in enumerate(results):
        got = [hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
               for a in flatten_leaves(r, m.entry.root.shape)]
        assert got == want["digests"][d], f"device {d}"


def test_ragged_all_to_all_with_two_updates_per_peer():
    text = """HloModule m, replica_count=2
ENTRY e { x = f32[4] parameter(0)
  o = f32[6] parameter(1)
  io = s64[4] parameter(2)
  sz = s64[4] constant({1, 1, 2, 0})
  oo = s64[4] parameter(3)
  ROOT r = f32[6] ragged-all-to-all(x, o, io, sz, oo, sz), replica_groups={{0,1}} }"""
    m = hloc.parse(text)
    x = [np.array([1, 2, 3, 4], np.float32), np.array([10, 20, 30, 40], np.float32)]
    o = np.full(6, -1, np.float32)
    # device d sends: to peer 0 rows [io[0]] and [io[1]]; to peer 1 rows io[2]:+2 (and nothing)
    io = np.array([0, 3, 1, 0], np.int64)
    oo = [np.array([0, 1, 0, 0], np.int64), np.array([2, 3, 4, 5], np.int64)]
    out = run_devices(m, [[x[d], o, io, oo[d]] for d in range(2)])
    assert out[0].tolist() == [1, 4, 10, 40, -1, -1]
    assert out[1].tolist() == [2, 3, -1, -1, 20, 30]


@pytest.mark.parametrize("name", ["shard_map_2d", "fsdp_layer", "shard_map_collectives"])
def test_mutated_groups_and_counts_never_crash_or_hang(name):
    """Untrusted input, run unverified on 4 devices: replica groups, permute pairs, mesh
    groups and num_partitions mutated; each run ends ok or with a clean hloc error."""
    text = (MD / f"{name}.after_optimizations.hlo").read_text()
    ins, _ = _npz(MD / f"{name}.devices.npz")
    rng = np.random.default_rng(7)
    spots = [m.span() for m in re.finditer(r"\{\{[0-9,{}]*\}\}|mesh\[[^\]]*\] \{[^}]*\}|"
                                          r"num_partitions=\d+|dimensions=\{\d\}", text)]
    outcomes = collections.Counter()
    for _ in range(120):
        a, b = spots[rng.integers(len(spots))]
        old = text[a:b]
        if old.startswith("num_partitions"):
            new = f"num_partitions={rng.choice([1, 2, 3, 4, 8])}"
        elif old.startswith("dimensions"):
            new = f"dimensions={{{rng.integers(0, 3)}}}"
        elif old.startswith("mesh"):
            new = rng.choice(["mesh['a'=2,'b'=2] {'b'}", "mesh['a'=4] {'a':(1)2}",
                              "mesh['a'=2,'b'=4] {'a'}", "mesh['x'=4] {'x'}"])
        else:
            ids = [int(i) for i in rng.permutation(4)]
            k = int(rng.integers(1, 5))
            groups = [ids[i:i + k] for i in range(0, 4, k)]
            if rng.random() < 0.3:
                groups[0][0] = int(rng.integers(0, 6))
            new = "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"
        mutant = text[:a] + new + text[b:]
        box = {}

        def go():
            try:
                m = hloc.parse(mutant)
                n = m.attrs.get("num_partitions") or 1
                run_devices(m, [[x[d % 4] for x in ins] for d in range(n)])
                box["k"] = "ok"
            except HlocError as e:
                box["k"] = type(e).__name__
            except Exception as e:          # noqa: BLE001 - the test reports it
                box["k"] = f"crash: {e!r}"
        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(60)
        kind = box.get("k", "hang")
        assert kind != "hang" and not kind.startswith("crash"), (kind, old, new)
        outcomes[kind] += 1
    assert outcomes["ok"] and len(outcomes) > 1


@pytest.mark.parametrize("name", ["pmap_collectives", "shard_map_collectives",
                                  "shard_map_partial"])
def test_mutated_manual_regions_never_crash_or_hang(name):
    """Before dumps with their Shardy attributes and shapes mutated: verified, then run;
    ok or a clean hloc error, never a crash or hang."""
    from hloc.verifier import verify
    text = (MD / f"{name}.before_optimizations.hlo").read_text()
    ins, _ = _npz(MD / f"{name}.npz")
    rng = np.random.default_rng(3)
    spots = [m.span() for m in re.finditer(r'\\"[a-z]+\\"|\{\}|"[a-z]+"=\d|f32\[\d+,\d+\]', text)]
    choices = ['\\"x\\"', '\\"i\\"', '\\"data\\"', '\\"zz\\"', "{}", '{\\"x\\", \\"x\\"}',
               '"x"=2', '"i"=8', '"data"=3', "f32[2,3]", "f32[1,3]", "f32[8,2]"]
    outcomes = collections.Counter()
    for _ in range(150):
        mutant = text
        for _ in range(int(rng.integers(1, 3))):
            a, b = spots[rng.integers(len(spots))]
            mutant = mutant[:a] + str(rng.choice(choices)) + mutant[b:]
        box = {}

        def go():
            try:
                m = hloc.parse(mutant)
                verify(m)
                box["k"] = "ok" if Interpreter(m).run(ins) is not None else ""
            except HlocError as e:
                box["k"] = type(e).__name__
            except Exception as e:          # noqa: BLE001 - the test reports it
                box["k"] = f"crash: {e!r}"
        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(60)
        kind = box.get("k", "hang")
        assert kind != "hang" and not kind.startswith("crash"), kind
        outcomes[kind] += 1
    assert len(outcomes) > 1
