"""The timing model of AIV kernels: per-entry cost ``aiv_task``, moves at ``aiv_copy_bandwidth``
(its device's memory) or ``aiv_link_bandwidth`` over an AIV channel after the link's latency, flag
loads after the store they read, a trace track per block; and example 05's AIV AllGather on it
(``benchmarks/example05.py``, with the AI CPU and CCU variants)."""
import os
import sys

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.spmd import observe_launches
from pyhcomm.timing.costs import GB, US, cost_model
from pyhcomm.timing.replay import replay
from pyhcomm.timing.trace import trace_events
from test_aiv import A350, _aiv_channel, launch, malloc

N = 1 << 20


def _times(tl, kind):
    return [(i, ev) for i, ev in enumerate(tl.events) if ev.kind == kind]


def test_a_local_copy_moves_at_the_aiv_copy_bandwidth_one_aiv_task_apart():
    pyhcomm.set_product(A350)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    src, dst = malloc(N), malloc(N)
    assert launch("copy", stream, dst, src, N) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    sim = pyhcomm.current_sim()
    model = cost_model(sim=sim)
    bw = model.aiv_copy_bandwidth
    for task in (1 * US, 3 * US):
        tl = replay(sim, model.with_values(aiv_task=task))
        (i, _load), = _times(tl, "AivLoad")
        (j, _store), = _times(tl, "AivStore")
        assert tl.end[i] - tl.start[i] == pytest.approx(N / bw)
        # the next entry is issued after this one returned, and aiv_task after this one was issued
        assert tl.issue[j] - tl.issue[i] == pytest.approx(max(task, N / bw))
        launch_at = next(k for k, ev in enumerate(tl.events) if ev.kind == "AivKernelLaunch")
        assert tl.issue[i] == pytest.approx(tl.start[launch_at] + model.kernel_launch)
    names = {e["args"]["name"] for e in trace_events(tl) if e.get("name") == "thread_name"}
    assert any(name.startswith("AIV kernel #") and name.endswith("block 0") for name in names)


def _remote_load(shared):
    def body(comm):
        mine = malloc(N)
        mem = pyhcomm.CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, mine, N)
        ret, h = pyhcomm.HcclCommMemReg(comm.handle, "m", mem)
        assert ret == 0
        ch = _aiv_channel(comm, 1 - comm.rank, (h,))
        if comm.rank == 0:
            ret, _num, remote, _tags = pyhcomm.HcclChannelGetRemoteMems(comm.handle, ch)
            stream, _ = acl.rt.create_stream()
            assert launch("copy", stream, mine, remote[0].addr, N) == 0
            assert acl.rt.synchronize_stream(stream) == 0
        comm.barrier()
    return body


def test_a_load_from_a_peer_pays_the_link_latency_twice_and_moves_at_the_aiv_link_bandwidth():
    sims = []
    with observe_launches(sims.append):
        pyhcomm.launch(_remote_load({}), 2, product=A350)
    model = cost_model(A350, sim=sims[0])
    tl = replay(sims[0], model)
    (i, load), = _times(tl, "AivLoad")
    assert load.remote == 1 and load.protocol == "COMM_PROTOCOL_UB_MEM"
    latency = model.link("COMM_PROTOCOL_UB_MEM").latency
    assert tl.end[i] - tl.start[i] == pytest.approx(2 * latency + N / (56 * GB))
    faster = replay(sims[0], model.with_values(aiv_link_bandwidth=112 * GB))
    assert faster.end[i] - faster.start[i] == pytest.approx(2 * latency + N / (112 * GB))


def test_a_flag_load_starts_after_the_store_it_read():
    pyhcomm.set_product(A350)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    flags, out = malloc(64), malloc(32)
    assert launch("ping_pong", stream, flags, out, blocks=2) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    tl = replay(pyhcomm.current_sim())
    seq_at = {ev.seq: k for k, ev in enumerate(tl.events)}
    for i, ev in _times(tl, "AivFlagLoad"):
        (store,) = ev.after
        assert tl.end[i] >= tl.end[seq_at[store]]      # its flow starts once the store ended


def test_example_05_on_the_timing_model_side_by_side(capsys):
    """The three variants of example 05 (AI CPU, AIV, CCU) by default, each size in turn; every
    rank gathers, and a larger size takes longer."""
    bench = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")
    sys.path.insert(0, bench)
    try:
        import example05
    finally:
        sys.path.remove(bench)
    assert example05.main(["--ranks", "2", "-b", "8K", "-e", "512K", "-f", "64"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [(r[0], int(r[1]), r[4]) for r in rows] == [(v, size, "success") for size in (8192, 524288)
                                                        for v in ("aicpu", "aiv", "ccu")]
    for variant in ("aicpu", "aiv", "ccu"):
        t = {int(r[1]): float(r[2]) for r in rows if r[0] == variant}
        assert 0 < t[8192] < t[524288], variant
        assert np.isfinite(list(t.values())).all()
