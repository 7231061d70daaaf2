"""Collective calls mark themselves in the record (the timing model times each call)."""
from array import array

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.capi import hccl_ops as ops
from pyhcomm.config import Config
from pyhcomm.timing.replay import replay


def _allreduce_twice(comm):
    send, _ = acl.rt.malloc(4096, 0)
    recv, _ = acl.rt.malloc(4096, 0)
    stream, _ = acl.rt.create_stream()
    for _ in range(2):
        assert ops.HcclAllReduce(send, recv, 1024, 4, 0, comm.handle, stream) == 0
    acl.rt.synchronize_stream(stream)


def test_every_call_records_a_marker_after_its_entries():
    sim = pyhcomm.Sim(data=False)
    pyhcomm.launch(_allreduce_twice, 2, sim=sim)
    events = sim.record.events()
    marks = [e for e in events if e.kind == "Collective"]
    assert [(e.rank, e.name) for e in sorted(marks, key=lambda e: (e.rank, e.seq))] == \
        [(0, "HcclAllReduce"), (0, "HcclAllReduce"), (1, "HcclAllReduce"), (1, "HcclAllReduce")]
    for rank in (0, 1):
        mine = sorted((e for e in marks if e.rank == rank), key=lambda e: e.seq)
        tasks = [e.seq for e in events if e.rank == rank and e.entry == "task"]
        first_call = [s for s in tasks if mine[0].first <= s < mine[0].seq]
        second_call = [s for s in tasks if mine[1].first <= s < mine[1].seq]
        assert first_call and second_call and len(first_call) == len(second_call)
        assert len(first_call) + len(second_call) == len(tasks)     # every task belongs to one call
        assert mine[0].seq < mine[1].first                           # the calls do not overlap
        assert mine[0].api == "HcclAllReduce" and mine[0].entry == "host"


def test_the_replay_refuses_a_record_that_lost_entries():
    sim = pyhcomm.Sim(Config.from_env().with_values(record_capacity=20), data=False)
    pyhcomm.launch(_allreduce_twice, 2, sim=sim)
    with pytest.raises(ValueError, match="PYHCOMM_RECORD_CAPACITY=0"):
        replay(sim)
    whole = pyhcomm.Sim(data=False)
    pyhcomm.launch(_allreduce_twice, 2, sim=whole)
    tl = replay(whole)
    assert [c.name for c in tl.calls] == ["HcclAllReduce", "HcclAllReduce"]
    assert tl.calls[0].end <= tl.calls[1].end and all(c.seconds > 0 for c in tl.calls)


@pytest.mark.parametrize("product", ["Atlas 800T A2", "Atlas A3"])
def test_a_call_lists_its_tasks_as_compact_indices(product):
    """A call's entries: its program's tasks from ``first`` to the marker, and on A3 every task
    of the AI CPU kernels it launched (a kernel launch has no rank; its tasks are the call's)."""
    sim = pyhcomm.Sim(data=False, product=product)
    pyhcomm.launch(_allreduce_twice, 2, sim=sim)
    tl = replay(sim)
    entries = sim.record.entries()      # the timeline's order: issue order
    marks = sorted((e for e in entries if e.kind == "Collective"), key=lambda e: e.seq)
    launches = {e.seq: e for e in entries if e.kind == "KernelLaunch"}
    assert bool(launches) == (product == "Atlas A3")
    seen = []
    for k, call in enumerate(tl.calls):
        assert isinstance(call.entries, array) and call.entries.typecode == "q"
        idx = np.frombuffer(call.entries, np.int64)
        assert (np.diff(idx) > 0).all()
        mine = marks[k::2]

        def in_call(e):
            if e.kernel:
                e = launches[e.kernel]
            return any(m.program == e.program and m.extra["first"] <= e.seq < m.seq for m in mine)
        want = [i for i, e in enumerate(entries) if e.entry == "task" and in_call(e)]
        assert idx.tolist() == want
        seen += want
    tasks = [i for i, e in enumerate(entries) if e.entry == "task"]
    assert sorted(seen) == tasks            # every task belongs to one call
