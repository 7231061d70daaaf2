"""pyhcomm.launch: N ranks in one process, one host thread and one device per rank; results in rank
order; a failing rank is re-raised as RankError and aborts the others' blocking calls; a world that
can never progress fails with a report instead of hanging; no rank thread outlives the call."""
import os
import threading

import pytest

import pyhcomm
from pyhcomm import (HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer,
                     HcclGetHcclBuffer, HcclThreadAcquire, HcclThreadAcquireWithStream, HcommChannelNotifyRecordOnThread, HcommChannelNotifyWait, HcommChannelNotifyWaitOnThread,
                     HcommReadOnThread, acl)
from hcomm_testutil import malloc, pattern, read, write

R = pyhcomm.HcclResult
E = pyhcomm.CommEngine
P = pyhcomm.CommProtocol
DEVICE_BASE, DEVICE_STRIDE = 0x12C0_0000_0000, 1 << 40

pytestmark = pytest.mark.timeout(60)


def _channel(comm, peer, engine=E.COMM_ENGINE_CPU_TS, protocol=P.COMM_PROTOCOL_HCCS, notify=2):
    d = HcclChannelDesc()
    assert HcclChannelDescInit(d) == 0
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, protocol, notify
    ret, (ch,) = HcclChannelAcquire(comm.handle, engine, [d])
    assert ret == 0
    return ch


def _host_thread(comm, notify=1):
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    ret, t = HcclThreadAcquireWithStream(comm.handle, E.COMM_ENGINE_CPU_TS, stream, notify)
    assert ret == 0
    return t, stream


def _rank_threads():
    return [t for t in threading.enumerate() if t.name.startswith("pyhcomm-rank") and t.is_alive()]


# -- results, devices, products ------------------------------------------------------------------------------
def test_results_come_back_in_rank_order():
    def body(comm, scale, offset=0):
        return comm.rank * scale + offset, comm.size

    results = pyhcomm.launch(body, 8, 10, offset=3, timeout=60)
    assert results == [(r * 10 + 3, 8) for r in range(8)]
    assert _rank_threads() == []


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_each_rank_runs_on_its_own_device_with_its_own_communicator(scheduler):
    def body(comm):
        dev, ret = acl.rt.get_device()
        assert ret == 0
        ptr = malloc(64)
        return (comm.rank, comm.device, dev, ptr, threading.current_thread() is not threading.main_thread(),
                comm.handle, comm.name)

    results = pyhcomm.launch(body, 4, timeout=60, scheduler=scheduler)
    for r, (rank, device, current, ptr, other_thread, handle, name) in enumerate(results):
        assert rank == device == current == r
        assert DEVICE_BASE + r * DEVICE_STRIDE <= ptr < DEVICE_BASE + (r + 1) * DEVICE_STRIDE
        assert other_thread == (scheduler == "threaded")  # coop: greenlets on the calling thread
    assert len({h for *_, h, _ in results}) == 4
    assert len({n for *_, n in results}) == 1          # one communicator, four ranks


def test_devices_can_be_chosen():
    results = pyhcomm.launch(lambda comm: (comm.rank, comm.device), 2, devices=[3, 1], timeout=60)
    assert results == [(0, 3), (1, 1)]


@pytest.mark.parametrize("name,family", [("Atlas A3", "A3"), ("Atlas 350", "950"), ("Atlas 800T A2", "A2")])
def test_launch_selects_the_product(name, family):
    def body(comm):
        return pyhcomm.get_product().family, acl.get_soc_name()

    results = pyhcomm.launch(body, 2, product=name, timeout=60)
    assert results == [(family, pyhcomm.find_product(name).soc_name)] * 2
    assert pyhcomm.get_product().name == "Atlas 800T A2"  # the launch ran in a Sim of its own


def test_launch_with_more_ranks_than_devices_per_server():
    def body(comm):
        ret, buf, size = HcclGetHcclBuffer(comm.handle)
        assert ret == 0
        return comm.device, buf

    results = pyhcomm.launch(body, 20, product="Atlas 800T A2", timeout=60)
    assert [d for d, _ in results] == list(range(20))
    assert len({b for _, b in results}) == 20


def test_launch_argument_errors():
    with pytest.raises(ValueError):
        pyhcomm.launch(lambda comm: None, 0)
    with pytest.raises(ValueError):
        pyhcomm.launch(lambda comm: None, 2, devices=[0])
    assert _rank_threads() == []


def test_a_rank_that_finished_early_keeps_its_memory_for_the_others():
    """Rank 1 stages data and returns at once; rank 0 reads it one-sided afterwards."""
    def body(comm):
        peer = 1 - comm.rank
        ch = _channel(comm, peer)
        ret, remote, _ = HcclChannelGetHcclBuffer(comm.handle, ch)
        ret2, local, _ = HcclGetHcclBuffer(comm.handle)
        assert ret == ret2 == 0
        if comm.rank == 1:
            write(local, pattern(256, 21))
            t, stream = _host_thread(comm)
            assert HcommChannelNotifyRecordOnThread(t, ch, 0) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            return None
        t, stream = _host_thread(comm)
        dst = malloc(256)
        assert HcommChannelNotifyWaitOnThread(t, ch, 0, 0) == 0
        assert HcommReadOnThread(t, ch, dst, remote, 256) == 0
        assert acl.rt.synchronize_stream(stream) == 0
        return read(dst, 256)

    got, _ = pyhcomm.launch(body, 2, timeout=60)
    assert (got == pattern(256, 21)).all()


# -- a failing rank -----------------------------------------------------------------------------------------------
class Boom(Exception):
    pass


def test_an_exception_on_one_rank_is_a_rank_error_and_aborts_the_waiting_ranks():
    """Ranks 0, 1 and 3 each enqueue a wait for rank 2's record (thread A), then tell rank 2 they
    did (thread B records rank 2's notify 1) and synchronize thread A. Rank 2 waits for the three
    records and raises. The waiting ranks are aborted (their synchronize fails at once instead of
    hanging) and launch re-raises rank 2's exception."""
    seen = {}

    def body(comm):
        if comm.rank == 2:
            t, stream = _host_thread(comm)
            for p in (0, 1, 3):
                assert HcommChannelNotifyWaitOnThread(t, _channel(comm, p), 1, 0) == 0
            assert acl.rt.synchronize_stream(stream) == 0
            raise Boom("rank 2 gives up")
        ch = _channel(comm, 2)
        ta, sa = _host_thread(comm)
        tb, sb = _host_thread(comm)
        assert HcommChannelNotifyWaitOnThread(ta, ch, 0, 0) == 0
        assert HcommChannelNotifyRecordOnThread(tb, ch, 1) == 0
        seen[comm.rank] = acl.rt.synchronize_stream(sa)
        return seen[comm.rank]

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 4, timeout=60)
    err = info.value
    assert err.rank == 2
    assert isinstance(err.__cause__, Boom) and str(err.__cause__) == "rank 2 gives up"
    assert "rank 2" in str(err) and "rank 2 gives up" in str(err)
    assert sorted(seen) == [0, 1, 3]
    assert all(code == pyhcomm.ACL_ERROR_RT_STREAM_ABORT for code in seen.values()), seen
    assert _rank_threads() == []


def test_rank_error_reports_the_first_failure_only_once_the_others_returned():
    finished = []

    def body(comm):
        if comm.rank == 0:
            raise KeyError("first")
        finished.append(comm.rank)
        return comm.rank

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 3, timeout=60)
    assert info.value.rank == 0 and isinstance(info.value.__cause__, KeyError)
    assert sorted(finished) == [1, 2]
    assert _rank_threads() == []


def test_the_next_launch_after_a_failure_runs_normally():
    def bad(comm):
        ch = _channel(comm, 1 - comm.rank)
        assert HcclChannelGetHcclBuffer(comm.handle, ch)[0] == 0      # both ends connected
        if comm.rank == 1:
            raise Boom()
        t, stream = _host_thread(comm)
        HcommChannelNotifyWaitOnThread(t, ch, 0, 0)   # may already find rank 1's end gone
        return acl.rt.synchronize_stream(stream)

    with pytest.raises(pyhcomm.RankError):
        pyhcomm.launch(bad, 2, timeout=60)
    assert pyhcomm.launch(lambda comm: comm.rank, 2, timeout=60) == [0, 1]


def test_a_rank_waiting_for_a_failed_peer_to_connect_is_aborted(monkeypatch, env):
    """Rank 1 fails before acquiring its end of the channel; rank 0 waits for that end in
    HcclChannelGetHcclBuffer. The wait must end with the abort, not run into HCCL_CONNECT_TIMEOUT."""
    env("HCCL_CONNECT_TIMEOUT", "5")      # bounds the test if the abort is missed
    seen = {}

    def body(comm):
        if comm.rank == 1:
            raise Boom("before connecting")
        ch = _channel(comm, 1)
        seen[0] = HcclChannelGetHcclBuffer(comm.handle, ch)[0]
        return seen[0]

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 2, timeout=60)
    assert info.value.rank == 1
    assert seen[0] not in (R.HCCL_SUCCESS, R.HCCL_E_TIMEOUT), \
        f"rank 0 waited out HCCL_CONNECT_TIMEOUT ({R(seen[0]).name}) instead of being aborted"


def test_a_thread_less_channel_wait_is_aborted_not_satisfied():
    """Atlas 350 host CPU RoCE: rank 0 blocks in HcommChannelNotifyWait for a record rank 1 never
    issues because it failed; the wait must fail, not report success."""
    seen = {}

    def body(comm):
        ch = _channel(comm, 1 - comm.rank, E.COMM_ENGINE_CPU, P.COMM_PROTOCOL_ROCE)
        assert HcclChannelGetHcclBuffer(comm.handle, ch)[0] == 0
        if comm.rank == 1:
            raise Boom()
        seen[0] = HcommChannelNotifyWait(ch, 0, 50)
        return seen[0]

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 2, product="Atlas 350", timeout=60)
    assert info.value.rank == 1
    assert seen[0] != R.HCCL_SUCCESS


# -- a cross-rank deadlock ----------------------------------------------------------------------------------------
@pytest.mark.timeout(60)
def test_a_cross_rank_deadlock_fails_with_a_report_naming_both_ranks_and_the_cycle():
    """Both ranks first wait on their own channel notify 1, then record the peer's: nobody can go."""
    def body(comm):
        ch = _channel(comm, 1 - comm.rank)
        t, stream = _host_thread(comm)
        assert HcommChannelNotifyWaitOnThread(t, ch, 1, 0) == 0
        assert HcommChannelNotifyRecordOnThread(t, ch, 1) == 0
        pyhcomm.Stream(stream, owned=False).synchronize()       # raises the stream's failure

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 2, timeout=60)
    err = info.value
    cause = err.__cause__
    assert isinstance(cause, pyhcomm.HcclError)
    msg = str(cause)
    assert "deadlock" in msg
    for rank, peer in ((0, 1), (1, 0)):
        assert f"rank {rank} thread" in msg
        assert f"notify 1 of rank {rank} channel" in msg and f"(to rank {peer})" in msg
    assert "ChannelNotifyWait" in msg
    cycle = [line for line in msg.splitlines() if "wait-for cycle" in line]
    assert len(cycle) == 1
    assert "rank 0" in cycle[0] and "rank 1" in cycle[0] and "back to rank" in cycle[0]
    assert os.path.basename(__file__) in msg                 # the call sites of the waits
    assert _rank_threads() == []


def test_a_deadlock_is_detected_while_another_rank_already_returned():
    """Rank 0 returns at once and waits for the others to finish; ranks 1 and 2 deadlock on their
    channel. The finished rank enqueues nothing more, so the deadlock is reported (not a launch
    timeout)."""
    def body(comm):
        if comm.rank == 0:
            return "done"
        ch = _channel(comm, 3 - comm.rank)
        t, stream = _host_thread(comm)
        assert HcommChannelNotifyWaitOnThread(t, ch, 0, 0) == 0
        assert HcommChannelNotifyRecordOnThread(t, ch, 0) == 0
        pyhcomm.Stream(stream, owned=False).synchronize()

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, 3, timeout=60)
    assert info.value.rank in (1, 2)
    msg = str(info.value.__cause__)
    assert "deadlock" in msg and "wait-for cycle" in msg
    assert "rank 1 thread" in msg and "rank 2 thread" in msg and "rank 0 thread" not in msg
    assert _rank_threads() == []


def test_a_deadlock_among_four_ranks_in_a_ring_names_every_rank():
    """Each rank waits for its left neighbour before recording its right neighbour."""
    n = 4

    def body(comm):
        left, right = (comm.rank - 1) % n, (comm.rank + 1) % n
        descs = []
        for p in (left, right):
            d = HcclChannelDesc()
            HcclChannelDescInit(d)
            d.remoteRank, d.channelProtocol, d.notifyNum = p, P.COMM_PROTOCOL_HCCS, 1
            descs.append(d)
        ret, (to_left, to_right) = HcclChannelAcquire(comm.handle, E.COMM_ENGINE_CPU_TS, descs)
        assert ret == 0
        t, stream = _host_thread(comm)
        assert HcommChannelNotifyWaitOnThread(t, to_left, 0, 0) == 0
        assert HcommChannelNotifyRecordOnThread(t, to_right, 0) == 0
        pyhcomm.Stream(stream, owned=False).synchronize()

    with pytest.raises(pyhcomm.RankError) as info:
        pyhcomm.launch(body, n, timeout=60)
    msg = str(info.value.__cause__)
    (cycle,) = [line for line in msg.splitlines() if "wait-for cycle" in line]
    for r in range(n):
        assert f"rank {r} thread" in cycle
    assert _rank_threads() == []


def test_no_rank_thread_outlives_a_launch_on_the_device_side():
    """Atlas 350: each rank launches a kernel that waits for the peer's channel record."""
    def body(comm):
        peer = 1 - comm.rank
        ch = _channel(comm, peer, E.COMM_ENGINE_AICPU_TS, P.COMM_PROTOCOL_UBC_CTP)
        assert HcclChannelGetHcclBuffer(comm.handle, ch)[0] == 0
        ret, (t,) = HcclThreadAcquire(comm.handle, E.COMM_ENGINE_AICPU_TS, 1, 0)
        stream, _ = acl.rt.create_stream()
        codes = []

        def kernel():
            codes.append(HcommChannelNotifyRecordOnThread(t, ch, 0))
            codes.append(HcommChannelNotifyWaitOnThread(t, ch, 0, 0))

        pyhcomm.Stream(stream, owned=False).launch(kernel)
        assert acl.rt.synchronize_device() == 0
        return codes

    assert pyhcomm.launch(body, 2, product="Atlas 350", timeout=60) == [[0, 0], [0, 0]]
    assert _rank_threads() == []


@pytest.mark.parametrize("scheduler", ["coop", "threaded"])
def test_comm_barrier_waits_for_every_rank(scheduler):
    """Comm.barrier is a host rendezvous that works on both schedulers (threading.Barrier would
    block the one OS thread the cooperative ranks share)."""
    order = []

    def body(comm):
        order.append(("before", comm.rank))
        comm.barrier()
        order.append(("after", comm.rank))
        comm.barrier()
        return comm.rank

    assert pyhcomm.launch(body, 4, timeout=60, scheduler=scheduler) == [0, 1, 2, 3]
    assert sorted(order[:4]) == [("before", r) for r in range(4)]
    assert sorted(order[4:]) == [("after", r) for r in range(4)]


def test_cooperative_pokes_recheck_each_waiting_rank_once_per_turn_not_once_per_poke():
    """Closing a communicator of n ranks withdraws n - 1 channel ends, each a poke; a scan of
    every waiting rank per poke made a mesh teardown cost n**3 predicate calls. Here rank 0
    waits for a flag (no stream to watch) while rank 1 pokes 500 times, sets the flag and
    pokes again: rank 0 is re-checked a few times, not 500, and still wakes."""
    checks = {"n": 0}
    flag = {"set": False}

    def body(comm):
        sched = pyhcomm.current_sim().scheduler
        comm.barrier()
        if comm.rank == 0:
            def done():
                checks["n"] += 1
                return flag["set"]
            assert sched.run_until(done, 30, "test wait", detect_stuck=False) == "done"
            return checks["n"]
        for _ in range(500):
            sched.poke()
        flag["set"] = True
        sched.poke()
        return None

    n, _ = pyhcomm.launch(body, 2, timeout=60, scheduler="coop")
    assert 1 <= n <= 5
