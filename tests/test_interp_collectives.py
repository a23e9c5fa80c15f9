"""Collectives, replica-id and partition-id on the interpreter's single device.

One participant makes every collective the identity (or zeros for a permute that sends
nothing to device 0); the participant count follows XLA's CollectiveOpGroupMode (channel_id,
use_global_device_ids, replica_count, num_partitions) and the written result shape. Any
collective that needs other devices is UnsupportedError naming the op and the count.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import hloc
from hloc.diagnostics import UnsupportedError
from hloc.interp import Interpreter  # registers every evaluation

ADD = """add { a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b) }
"""
X = np.arange(4, dtype=np.float32)
Y = np.ones(4, np.float32)


def run(body: str, header: str = ""):
    text = (f"HloModule m{header}\n{ADD}ENTRY e {{ x = f32[4] parameter(0)\n"
            f"  y = f32[4] parameter(1)\n  {body} }}")
    return Interpreter(hloc.parse(text)).run([X, Y])


def test_replica_and_partition_id_are_zero():
    out = run("a = u32[] replica-id()\n  b = u32[] partition-id()\n"
              "  ROOT t = (u32[], u32[]) tuple(a, b)", ", replica_count=1, num_partitions=1")
    assert [int(v) for v in out] == [0, 0]
    assert all(v.dtype == np.uint32 and v.shape == () for v in out)


@pytest.mark.parametrize("body,header", [
    ("ROOT r = f32[4] all-reduce(x), to_apply=add", ""),
    ("ROOT r = f32[4] all-reduce(x), replica_groups={{0}}, to_apply=add", ""),
    ("ROOT r = f32[4] all-reduce(x), replica_groups={{0},{1}}, to_apply=add", ", replica_count=2"),
    ("ROOT r = f32[4] all-reduce(x), channel_id=1, replica_groups={{0},{1}}, "
     "use_global_device_ids=true, to_apply=add", ", num_partitions=2"),
    ("ROOT r = f32[4] all-gather(x), dimensions={0}", ""),
    ("ROOT r = f32[4] reduce-scatter(x), dimensions={0}, to_apply=add", ""),
    ("ROOT r = f32[4] all-to-all(x), dimensions={0}", ""),
    ("ROOT r = f32[4] collective-broadcast(x), replica_groups={{0}}", ""),
    ("ROOT r = f32[4] collective-permute(x), source_target_pairs={{0,0}}", ""),
    ("ROOT r = f32[4] collective-permute(x), channel_id=2, source_target_pairs={{0,0}}",
     ", replica_count=3"),
    ("s = f32[4] all-reduce-start(x), to_apply=add\n  ROOT r = f32[4] all-reduce-done(s)", ""),
    ("s = (f32[4], f32[4]) all-gather-start(x), dimensions={0}\n"
     "  ROOT r = f32[4] all-gather-done(s)", ""),
    ("s = (f32[4], f32[4], u32[], u32[]) collective-permute-start(x), "
     "source_target_pairs={{0,0}}\n  ROOT r = f32[4] collective-permute-done(s)", ""),
])
def test_single_participant_collectives_are_the_identity(body, header):
    out = run(body, header)
    assert out.dtype == np.float32 and out.tolist() == X.tolist()
    assert out is not X


def test_variadic_forms_return_tuples():
    out = run("ROOT r = (f32[4], f32[4]) all-reduce(x, y), to_apply=add")
    assert [o.tolist() for o in out] == [X.tolist(), Y.tolist()]
    out = run("ROOT r = (f32[4]) all-to-all(x)")
    assert isinstance(out, tuple) and out[0].tolist() == X.tolist()


def test_permute_that_sends_nothing_to_device_0_gives_zeros():
    out = run("ROOT r = f32[4] collective-permute(x), source_target_pairs={}")
    assert out.tolist() == [0, 0, 0, 0] and out.dtype == np.float32


@pytest.mark.parametrize("body,header,needed", [
    ("ROOT r = f32[4] all-reduce(x), to_apply=add", ", replica_count=4", 4),
    ("ROOT r = f32[4] all-reduce(x), replica_groups={{0,1}}, to_apply=add", ", replica_count=2", 2),
    # channel_id without use_global_device_ids: replica group size x num_partitions
    ("ROOT r = f32[4] all-reduce(x), channel_id=1, replica_groups={{0}}, to_apply=add",
     ", num_partitions=2", 2),
    ("ROOT r = f32[8] all-gather(x), dimensions={0}", "", 2),
    ("ROOT r = f32[2] reduce-scatter(x), dimensions={0}, to_apply=add", "", 2),
    ("ROOT r = (f32[4], f32[4]) all-to-all(x, y)", "", 2),
    ("ROOT r = f32[4] all-to-all(x), channel_id=1, dimensions={0}", ", num_partitions=2", 2),
    ("ROOT r = f32[4] collective-broadcast(x), replica_groups={{0,1,2}}", ", replica_count=3", 3),
    ("ROOT r = f32[4] collective-permute(x), source_target_pairs={{0,1},{1,0}}", "", 2),
    ("ROOT r = f32[4] collective-permute(x), source_target_pairs={{0,0}}", ", replica_count=2", 2),
])
def test_collectives_needing_more_devices_are_unsupported(body, header, needed):
    op = re.search(r"([a-z][a-z-]*)\(x", body).group(1)
    with pytest.raises(UnsupportedError, match=f"{op} needs {needed} devices"):
        run(body, header)


def test_ragged_all_to_all_on_one_device_copies_rows():
    text = """HloModule m
ENTRY e { x = f32[6,2] parameter(0)
  o = f32[5,2] parameter(1)
  io = s64[2] constant({0, 3})
  sz = s64[2] constant({2, 1})
  oo = s64[2] constant({3, 0})
  rs = s64[2] constant({2, 1})
  ROOT r = f32[5,2] ragged-all-to-all(x, o, io, sz, oo, rs), replica_groups={{0}} }"""
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    o = np.full((5, 2), -1, np.float32)
    out = Interpreter(hloc.parse(text)).run([x, o])
    np.testing.assert_array_equal(out, [[6, 7], [-1, -1], [-1, -1], [0, 1], [2, 3]])
    assert o[0, 0] == -1                                     # the operand is not modified
    bad = text.replace("{3, 0}", "{4, 0}")
    with pytest.raises(UnsupportedError, match="out of bounds"):
        Interpreter(hloc.parse(bad)).run([x, o])
    two = text.replace("replica_groups={{0}}", "replica_groups={{0,1}}")
    with pytest.raises(UnsupportedError, match="ragged-all-to-all needs 2 devices"):
        Interpreter(hloc.parse(two)).run([x, o])


@pytest.mark.parametrize("body", [
    "ROOT r = f32[8] all-gather-start(x), dimensions={0}",
    "ROOT r = f32[4] reduce-scatter(x), dimensions={1}, to_apply=add",
    "ROOT r = f32[4] collective-permute-start(x), source_target_pairs={{0,0}}",
    "ROOT r = f32[2] all-reduce(x), to_apply=add",
])
def test_shapes_the_verifier_rejects_are_unsupported(body):
    with pytest.raises(UnsupportedError, match="verifier rejects"):
        run(body)
