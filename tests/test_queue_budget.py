"""The cooperative scheduler's queue budget: a host program that issues many tasks before it
blocks yields to the hub every ``queue_budget`` tasks (like a host thread whose hardware queue is
full), so the tasks queued at once stay bounded; the order stays a function of program and seed."""
import io

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.config import Config
from pyhcomm.collectives.patterns import ring_step
from hcomm_testutil import malloc, pattern, read, write

pytestmark = pytest.mark.timeout(120)

COPIES = 300
ROUNDS = 40     # ring steps: 5 tasks each


def _sim(budget, seed=0):
    return pyhcomm.Sim(Config.from_env().with_values(queue_budget=budget), scheduler="coop", seed=seed)


def _watch_depth(sim):
    """Make ``sim``'s scheduler note the deepest its queues got, all streams together."""
    sched = sim.scheduler
    submit = sched.submit
    seen = {"max": 0}

    def watching(task):
        submit(task)
        seen["max"] = max(seen["max"], sum(len(s.queue) for s in sched.queued_streams()))

    sched.submit = watching
    return seen


def _copies_then_one_synchronize(comm):
    """``COPIES`` dependent local copies (each reads what the one before wrote), issued before
    the rank's first synchronize; returns the last buffer's bytes."""
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, stream, 0)
    bufs = [malloc(64) for _ in range(2)]
    write(bufs[0], pattern(64, comm.rank + 1))
    for i in range(COPIES):
        assert pyhcomm.HcommLocalCopyOnThread(t, bufs[(i + 1) % 2], bufs[i % 2], 64) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return read(bufs[COPIES % 2], 64).tolist()


@pytest.mark.parametrize("budget", [0, 16, 64])
def test_the_tasks_queued_at_once_stay_within_the_budget_of_each_host_program(budget):
    sim = _sim(budget)
    seen = _watch_depth(sim)
    out = pyhcomm.launch(_copies_then_one_synchronize, 2, sim=sim)
    assert out == [pattern(64, 1).tolist(), pattern(64, 2).tolist()]
    if budget == 0:            # unbounded: a program issues everything before any of it runs
        assert seen["max"] == COPIES
    else:                      # a program yields as it issues its budget-th task: they run first
        assert seen["max"] == budget - 1


def _ring_with_notifies(comm):
    """``ROUNDS`` ring steps (grant left, wait for right's grant, write into right's HCCL buffer,
    tell right, wait for left's data: pyhcomm.collectives.patterns.ring_step), all issued before
    one synchronize: every wait needs a task another program issues later than the budget allows
    at once."""
    n, r = comm.size, comm.rank
    descs = []
    for peer in ((r + 1) % n, (r - 1) % n):
        d = pyhcomm.HcclChannelDesc()
        pyhcomm.HcclChannelDescInit(d)
        d.remoteRank, d.channelProtocol, d.notifyNum = peer, pyhcomm.COMM_PROTOCOL_HCCS, 2
        descs.append(d)
    _, (right, left) = pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, descs)
    stream, _ = acl.rt.create_stream()
    _, t = pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, stream, 0)
    _, theirs, _ = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, right)
    src = malloc(8 * ROUNDS)
    write(src, np.repeat(np.arange(ROUNDS, dtype=np.uint8) + r, 8))
    for i in range(ROUNDS):
        ring_step(t, left, right, write=(theirs + 8 * i, src + 8 * i, 8))
    assert acl.rt.synchronize_stream(stream) == 0
    _, mine, _ = pyhcomm.HcclGetHcclBuffer(comm.handle)
    return read(mine, 8 * ROUNDS).tolist()


def _export(budget, seed):
    sim = _sim(budget, seed)
    out = pyhcomm.launch(_ring_with_notifies, 4, sim=sim)
    buf = io.BytesIO()
    sim.record.export_jsonl(buf)
    return out, buf.getvalue()


@pytest.mark.parametrize("seed", [0, 5])
def test_a_budget_keeps_the_schedule_deterministic_for_a_seed_and_the_bytes_the_same(seed):
    out, export = _export(8, seed)
    again, export2 = _export(8, seed)
    assert export == export2 and out == again
    unbounded, export0 = _export(0, seed)
    assert export0 != export                     # another order of issue ...
    assert unbounded == out                      # ... the same bytes
    for r in range(4):                           # rank r received what rank r-1 wrote in each round
        left = (r - 1) % 4
        assert out[r] == [i + left for i in range(ROUNDS) for _ in range(8)]
