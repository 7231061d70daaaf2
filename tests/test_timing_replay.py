"""The replay's fast walk (every node evaluated level by level, flows at full rate) against the
discrete-event engine: where no two flows overlap, both give the same times, bit for bit; entries
that never ran get none."""
import math

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.analysis import happens_before
from pyhcomm.config import Config
from pyhcomm.timing.costs import cost_model
from pyhcomm.timing.entry_costs import EntryCosts
from pyhcomm.timing.exact import exact_times
from pyhcomm.timing.replay import replay
from pyhcomm.timing.walk import walk
from hcomm_testutil import host_setup, malloc

pytestmark = pytest.mark.timeout(120)


def _both(sim):
    """(walk, engine) times of the record of ``sim``: each an (issue, start, end) of arrays."""
    record = sim.record
    graph = happens_before.build(record)
    costs = EntryCosts(cost_model(sim.runtime.product), graph, record)
    walked = walk(costs)
    assert walked is not None           # no two flows overlapped: the walk's times are final
    return walked, exact_times(costs)


def _ring_allgather(comm):
    from pyhcomm.collectives import allgather_ring, ring_peers, run
    send, recv = malloc(1024 * comm.size), malloc(1024 * comm.size)
    stream, _ = acl.rt.create_stream()
    run(comm.handle, stream, 0, allgather_ring, send, recv, 1024, peers=ring_peers(comm.rank, comm.size), tag="ag")
    assert acl.rt.synchronize_stream(stream) == 0


@pytest.mark.parametrize("product,op", [("Atlas 800T A2", "allreduce"), ("Atlas 800T A2", "allgather"),
                                        ("Atlas A3", "ring allreduce"), ("Atlas A3", "reduce_scatter"),
                                        ("Atlas A3", "ring allgather"), ("Atlas 350", "broadcast"),
                                        ("Atlas 350", "scatter")])
def test_the_walk_gives_the_engines_times_bit_for_bit(product, op):
    """Two calls on six ranks (one ring AllGather on eight), AI CPU kernels in batch mode where
    the product has them; a small queue budget interleaves the programs (the walk's levels mix
    every rank's entries). The A3 AllReduce runs the ring by name: the one-shot mesh HCCL chooses
    for it writes every peer at once through one port (overlapping flows the walk leaves to the
    engine)."""
    from verify_programs import collective
    config = Config.from_env().with_values(queue_budget=4)
    sim = pyhcomm.Sim(config, scheduler="coop", seed=7, product=product, data=False)
    if op == "ring allgather":
        pyhcomm.launch(_ring_allgather, 8, sim=sim, timeout=60)
    elif op == "ring allreduce":
        pyhcomm.launch(collective("allreduce", 64, calls=2, algorithm="ring"), 6, sim=sim, timeout=60)
    else:
        pyhcomm.launch(collective(op, 64, calls=2), 6, sim=sim, timeout=60)
    (issue, start, end), (e_issue, e_start, e_end) = _both(sim)
    assert not np.isnan(end).any()
    for a, b in ((issue, e_issue), (start, e_start), (end, e_end)):
        assert np.array_equal(a, b)
    tl = replay(sim)
    assert np.array_equal(np.array(tl.end), end) and len(tl.calls) == (1 if op == "ring allgather" else 2)


@pytest.mark.parametrize("scheduler,product,op", [("coop", "Atlas A3", "ring allgather"),
                                                  ("coop", "Atlas A3", "allreduce"),
                                                  ("threaded", "Atlas A3", "reduce_scatter"),
                                                  ("threaded", "Atlas 800T A2", "allgather")])
def test_the_record_s_batches_give_each_task_s_batch(scheduler, product, op):
    """``batch_ends`` (what the replay reads instead of every task's ``batch``) against the
    tasks themselves: per task the last seq of its batch, -1 outside one."""
    from pyhcomm.analysis.happens_before import batch_ends
    from verify_programs import collective
    config = Config.from_env().with_values(queue_budget=4)
    sim = pyhcomm.Sim(config, scheduler=scheduler, seed=3, product=product, data=False)
    if op == "ring allgather":
        pyhcomm.launch(_ring_allgather, 8, sim=sim, timeout=60)
    else:
        pyhcomm.launch(collective(op, 64, calls=2), 6, sim=sim, timeout=60)
    tasks = sim.record.tasks()
    last: dict = {}
    for t in tasks:
        if t.batch is not None:
            last[t.batch] = max(last.get(t.batch, -1), t.seq)
    want = [last[t.batch] if t.batch is not None else -1 for t in tasks]
    programs = np.array([-1 if t.program is None else t.program for t in tasks], dtype=np.int64)
    got = batch_ends(sim.record.batches, programs, np.array([t.seq for t in tasks], dtype=np.int64))
    assert got.tolist() == want
    assert (max(want) > 0) == (product == "Atlas A3")         # A3: AI CPU kernels in batch mode


def test_overlapping_batches_of_one_program_leave_it_to_the_tasks():
    from pyhcomm.analysis.happens_before import batch_ends
    seqs, programs = np.array([3, 4, 5, 9]), np.array([1, 1, 2, 1])
    assert batch_ends([(1, 1, 3, 4), (2, 2, 5, 5), (3, 1, 9, 9)], programs, seqs).tolist() == [4, 4, 5, 9]
    assert batch_ends([(1, 1, 3, 4), (2, 2, 5, 5), (3, 1, 9, 9)], programs, seqs + 10).tolist() == [-1] * 4
    assert batch_ends([(1, 1, 3, 6), (2, 1, 5, 9)], programs, seqs) is None


def test_entries_that_never_ran_get_no_times():
    """A wait whose record never comes times out; what its stream queued behind it never runs."""
    sim = pyhcomm.current_sim()
    _comm, stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 64) == 0
    assert pyhcomm.HcommThreadNotifyWaitOnThread(thread, 0, 1) == 0     # nobody records it: 1 s timeout
    assert pyhcomm.HcommLocalCopyOnThread(thread, src, dst, 64) == 0
    assert acl.rt.synchronize_stream(stream) != 0
    entries = sim.record.entries()
    kinds = [e.kind for e in entries]
    (issue, start, end), (e_issue, e_start, e_end) = _both(sim)
    first, wait, behind = (kinds.index("LocalCopy"), kinds.index("ThreadNotifyWait"),
                           len(kinds) - 1 - kinds[::-1].index("LocalCopy"))
    assert not math.isnan(end[first]) and math.isnan(end[behind]) and math.isnan(start[behind])
    assert math.isnan(end[wait])
    assert not math.isnan(issue[behind])            # issued: the synchronize after it needed its program
    for a, b in ((issue, e_issue), (start, e_start), (end, e_end)):
        assert np.array_equal(a, b, equal_nan=True)


def test_a_timeline_does_not_keep_the_replays_arrays_alive(monkeypatch):
    """The timeline keeps what it needs (times, the graph for events and arrows); the replay's
    per-entry cost arrays (a few hundred MB at 1024 ranks) go when replay() returns."""
    import gc
    import weakref
    made = []
    init = EntryCosts.__init__

    def remember(self, *args):
        init(self, *args)
        made.append(weakref.ref(self))
    monkeypatch.setattr(EntryCosts, "__init__", remember)
    config = Config.from_env().with_values(record_capacity=0)
    sim = pyhcomm.Sim(config, scheduler="coop", seed=7, product="Atlas A3", data=False)
    pyhcomm.launch(_ring_allgather, 4, sim=sim)
    tl = replay(sim)
    gc.collect()
    assert len(made) == 1 and made[0]() is None
    assert tl.arrows and tl.calls and len(tl.end) == len(tl.issue) > 0


@pytest.mark.parametrize("servers", [1, 2])
def test_a_channel_notify_record_s_signal_takes_its_channel_s_link_latency(servers):
    """One protocol for every channel (one server: HCCS) gives the latency without reading the
    records; two servers (HCCS inside each, RoCE between them) read each record's channel."""
    from verify_programs import collective
    config = Config.from_env().with_values(devices_per_server=8 // servers)
    sim = pyhcomm.Sim(config, scheduler="coop", seed=3, product="Atlas 800T A2", data=False)
    pyhcomm.launch(collective("allgather", 64), 8, sim=sim, timeout=60)
    record, model = sim.record, cost_model(sim.runtime.product)
    protocols = {p for p, _peer in record.channel_info.values()}
    assert len(protocols) == servers
    rp = EntryCosts(model, happens_before.build(record), record)
    records = [(i, e) for i, e in enumerate(record.entries()) if e.kind == "ChannelNotifyRecord"]
    assert records
    want = [model.link(record.channel_info[e.target[0]][0]).latency for _i, e in records]
    assert rp.siglat[[i for i, _e in records]].tolist() == want
    assert len(set(want)) == servers
