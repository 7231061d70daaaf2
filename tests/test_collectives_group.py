"""Group calls (HcclGroupStart / HcclGroupEnd / HcclGroupStatusGet / HcclGroupEnqueueOp) and
HcclBarrier: what runs when, what each product refuses, and the bytes."""
from __future__ import annotations

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from test_collectives_reduce import (SUM, assert_same, from_device, make_input, mesh_reduce_scatter_oracle,
                                     sentinel, to_device)

pytestmark = pytest.mark.timeout(120)

A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
R = pyhcomm.HcclResult
F32, I32 = pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCCL_DATA_TYPE_INT32


def launch(product, n, body, *args):
    def wrapped(comm):
        s, ret = acl.rt.create_stream()
        assert ret == 0
        return body(comm, s, *args)
    return pyhcomm.launch(wrapped, n, product=product, timeout=60, sim=pyhcomm.current_sim())


def sync(s):
    ret = acl.rt.synchronize_stream(s)
    assert ret == 0, acl.get_recent_err_msg()


def tasks_of(rank: int) -> int:
    return len(pyhcomm.record.tasks(rank=rank))


# -- point-to-point groups ---------------------------------------------------------------------------------
def all_pairs_body(comm, s):
    """HCCL's third group example: send to every other rank, then receive from every other rank;
    without the group the first Send of every rank would wait for a Recv nobody issued yet."""
    n, r = comm.size, comm.rank
    sends = {p: to_device(make_input("p2p", r * 100 + p, 5, I32, SUM)) for p in range(n) if p != r}
    recvs = {p: to_device(sentinel(5, np.int32)) for p in range(n) if p != r}
    assert pyhcomm.HcclGroupStart() == 0
    assert pyhcomm.HcclGroupStatusGet()[0] in (R.HCCL_SUCCESS, R.HCCL_E_NOT_SUPPORT)
    for p, buf in sends.items():
        assert pyhcomm.HcclSend(buf, 5, I32, p, comm.handle, s) == 0
    before = tasks_of(r)
    for p, buf in recvs.items():
        assert pyhcomm.HcclRecv(buf, 5, I32, p, comm.handle, s) == 0
    kept = tasks_of(r) == before
    assert pyhcomm.HcclGroupEnd() == 0
    sync(s)
    return kept, {p: from_device(buf, 5, np.int32) for p, buf in recvs.items()}


@pytest.mark.parametrize("product, n", [(A2, 2), (A2, 8), (A3, 4), (A350, 3)])
def test_a_group_of_sends_and_receives_runs_as_one_batch(product, n):
    res = launch(product, n, all_pairs_body)
    for r, (kept, got) in enumerate(res):
        assert kept, "a Recv inside the group enqueued tasks before HcclGroupEnd"
        for p, arr in got.items():
            assert_same(arr, make_input("p2p", p * 100 + r, 5, I32, SUM), f"{p} -> {r}")


# -- collective groups -------------------------------------------------------------------------------------
def rs_ag_body(comm, s):
    """HCCL's second group example (ReduceScatter then AllGather, independent buffers), nested once."""
    n, r = comm.size, comm.rank
    x = make_input("grp-rs", r, 3 * n, pyhcomm.HCCL_DATA_TYPE_FP16, SUM)
    rs_send, rs_recv = to_device(x), to_device(sentinel(3, np.float16))
    g = make_input("grp-ag", r, 2, pyhcomm.HCCL_DATA_TYPE_FP32, SUM)
    ag_send, ag_recv = to_device(g), to_device(sentinel(2 * n, np.float32))
    start = tasks_of(r)
    assert pyhcomm.HcclGroupStart() == 0
    assert pyhcomm.HcclGroupStart() == 0
    assert pyhcomm.HcclReduceScatter(rs_send, rs_recv, 3, pyhcomm.HCCL_DATA_TYPE_FP16, SUM, comm.handle, s) == 0
    assert pyhcomm.HcclAllGather(ag_send, ag_recv, 2, F32, comm.handle, s) == 0
    assert pyhcomm.HcclGroupEnd() == 0
    inner = tasks_of(r) - start
    assert pyhcomm.HcclGroupEnd() == 0
    outer = tasks_of(r) - start
    sync(s)
    return inner, outer, from_device(rs_recv, 3, np.float16), from_device(ag_recv, 2 * n, np.float32)


@pytest.mark.parametrize("product, n", [(A2, 3), (A3, 2)])
def test_a_group_of_collectives_is_enqueued_at_the_outermost_end(product, n):
    res = launch(product, n, rs_ag_body)
    xs = [make_input("grp-rs", r, 3 * n, pyhcomm.HCCL_DATA_TYPE_FP16, SUM) for r in range(n)]
    ag = np.concatenate([make_input("grp-ag", r, 2, pyhcomm.HCCL_DATA_TYPE_FP32, SUM) for r in range(n)])
    for r, (inner, outer, rs, got) in enumerate(res):
        assert inner == 0 and outer > 0, (inner, outer)
        assert_same(rs, mesh_reduce_scatter_oracle(xs, r, 3, SUM), f"ReduceScatter rank {r}")
        assert_same(got, ag, f"AllGather rank {r}")


# -- refusals ----------------------------------------------------------------------------------------------
def refusals_body(comm, s):
    r = comm.rank
    buf = to_device(np.zeros(16, np.float32))
    h, peer = comm.handle, 1 - r
    codes = {"end without start": pyhcomm.HcclGroupEnd()}
    assert pyhcomm.HcclGroupStart() == 0
    codes["status inside"] = pyhcomm.HcclGroupStatusGet()
    codes["send"] = pyhcomm.HcclSend(buf, 4, F32, peer, h, s)
    codes["collective in p2p group"] = pyhcomm.HcclAllReduce(buf, buf, 4, F32, SUM, h, s)
    codes["bad send (kept nothing)"] = pyhcomm.HcclSend(buf, 4, F32, r, h, s)
    item = pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_SEND, buf, 4, F32, peer)
    codes["batch in group"] = pyhcomm.HcclBatchSendRecv([item], h, s)
    codes["recv"] = pyhcomm.HcclRecv(buf + 16, 4, F32, peer, h, s)
    before = tasks_of(r)
    codes["end"] = pyhcomm.HcclGroupEnd()
    codes["status outside"] = pyhcomm.HcclGroupStatusGet()
    ran = []
    codes["enqueue op"] = pyhcomm.HcclGroupEnqueueOp(h, None, s, lambda c, d, st: ran.append((c, st)) or 0)
    codes["enqueue C address"] = pyhcomm.HcclGroupEnqueueOp(h, None, s, 0x1234)
    sync(s)
    return codes, tasks_of(r) > before, ran == [(h, s)], from_device(buf, 16, np.float32)


def test_group_rules_and_refusals_on_atlas_a2():
    res = launch(A2, 2, refusals_body)
    for r, (codes, ran_at_end, op_ran, buf) in enumerate(res):
        assert codes == {
            "end without start": R.HCCL_E_PARA, "status inside": (R.HCCL_E_NOT_SUPPORT, False),
            "send": R.HCCL_SUCCESS, "collective in p2p group": R.HCCL_E_PARA,
            "bad send (kept nothing)": R.HCCL_E_PARA, "batch in group": R.HCCL_E_NOT_SUPPORT,
            "recv": R.HCCL_SUCCESS, "end": R.HCCL_SUCCESS, "status outside": (R.HCCL_E_NOT_SUPPORT, False),
            "enqueue op": R.HCCL_SUCCESS, "enqueue C address": R.HCCL_E_NOT_SUPPORT}, r
        assert ran_at_end and op_ran
        np.testing.assert_array_equal(buf[4:8], buf[:4])   # each rank received the other's zeros


def status_body(comm, s):
    outside = pyhcomm.HcclGroupStatusGet()
    assert pyhcomm.HcclGroupStart() == 0
    inside = pyhcomm.HcclGroupStatusGet()
    buf = to_device(np.zeros(4, np.float32))
    merged = pyhcomm.HcclAllReduce(buf, buf, 4, F32, SUM, comm.handle, s)
    ran = []
    operator = pyhcomm.HcclGroupEnqueueOp(comm.handle, None, s, lambda c, d, st: ran.append(c) or 0)
    kept = not ran
    assert pyhcomm.HcclGroupEnd() == 0
    return outside, inside, merged, (operator, kept, ran == [comm.handle])


def test_atlas_350_reports_the_group_status_and_merges_no_collectives():
    for outside, inside, merged, operator in launch(A350, 2, status_body):
        assert outside == (R.HCCL_SUCCESS, False) and inside == (R.HCCL_SUCCESS, True)
        assert merged == R.HCCL_E_NOT_SUPPORT
        assert operator == (R.HCCL_SUCCESS, True, True)   # an enqueued operator runs at the end


@pytest.mark.parametrize("product", ["Atlas training series", "Atlas inference series"])
def test_products_without_group_calls_refuse_them(product):
    pyhcomm.set_product(product)
    assert pyhcomm.HcclGroupStart() == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclGroupEnd() == R.HCCL_E_NOT_SUPPORT


# -- HcclBarrier -------------------------------------------------------------------------------------------
def barrier_body(comm, s, with_barrier: bool):
    """A memset before and after the barrier on each rank's stream."""
    a, _ = acl.rt.malloc(64, 0)
    assert acl.rt.memset_async(a, 64, 1, 64, s) == 0
    if with_barrier:
        assert pyhcomm.HcclBarrier(comm.handle, s) == 0
    assert acl.rt.memset_async(a, 64, 2, 64, s) == 0
    sync(s)


@pytest.mark.parametrize("product, n", [(A2, 2), (A2, 5), (A3, 3), (A350, 4), ("Atlas training series", 8)])
def test_barrier_holds_every_stream_until_every_rank_reached_it(product, n):
    launch(product, n, barrier_body, True)
    steps = {}
    for e in pyhcomm.record.events(kind="MemsetAsync"):   # per device (= rank), in issue order
        steps.setdefault(e.device, []).append(e.step)
    first, last = [v[0] for v in steps.values()], [v[1] for v in steps.values()]
    assert len(first) == len(last) == n
    assert min(last) > max(first), (first, last)


def test_without_the_barrier_the_first_rank_runs_ahead():
    """The control: one rank runs its whole stream before the other's starts."""
    launch(A2, 2, barrier_body, False)
    steps = {}
    for e in pyhcomm.record.events(kind="MemsetAsync"):
        steps.setdefault(e.device, []).append(e.step)
    ahead, behind = sorted(steps.values())
    assert ahead[1] < behind[0], steps


def test_barrier_checks_comm_and_stream_and_is_refused_on_the_inference_series():
    def body(comm, s):
        return [pyhcomm.HcclBarrier(comm.handle, 0), pyhcomm.HcclBarrier(0, s), pyhcomm.HcclBarrier(comm.handle, s)]
    assert launch(A2, 1, body) == [[R.HCCL_E_PTR, R.HCCL_E_PTR, R.HCCL_SUCCESS]]
    assert launch("Atlas inference series", 2, body)[0][2] == R.HCCL_E_NOT_SUPPORT


# -- communicator management in a group ------------------------------------------------------------------------
def test_one_host_thread_inits_and_destroys_the_communicators_of_four_devices_in_a_group():
    """HCCL's first group example: per device, aclrtSetDevice + HcclCommInitRootInfo, between
    HcclGroupStart and HcclGroupEnd, on one thread (outside a group the first init would wait
    for the other three ranks forever)."""
    n = 4
    assert acl.init() == 0
    ret, root = pyhcomm.HcclGetRootInfo()
    assert ret == 0
    assert pyhcomm.HcclGroupStart() == 0
    comms = []
    for d in range(n):
        assert acl.rt.set_device(d) == 0
        ret, comm = pyhcomm.HcclCommInitRootInfo(n, root, d)
        assert ret == 0 and comm
        comms.append(comm)
    mixed = pyhcomm.HcclBarrier(comms[0], 1)           # a collective cannot join this group
    assert pyhcomm.HcclGroupEnd() == 0
    assert mixed == R.HCCL_E_PARA
    assert [pyhcomm.HcclGetRankId(c) for c in comms] == [(0, d) for d in range(n)]
    assert all(pyhcomm.HcclGetRankSize(c) == (0, n) for c in comms)
    assert pyhcomm.HcclGroupStart() == 0
    for c in comms:
        assert pyhcomm.HcclCommDestroy(c) == 0
    assert pyhcomm.HcclGetRankId(comms[0])[0] == R.HCCL_SUCCESS   # destroyed at the end only
    assert pyhcomm.HcclGroupEnd() == 0
    assert pyhcomm.HcclGetRankId(comms[0])[0] != R.HCCL_SUCCESS


def test_a_group_end_whose_ranks_never_all_join_times_out(env):
    env("HCCL_CONNECT_TIMEOUT", "1")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ret, root = pyhcomm.HcclGetRootInfo()
    assert pyhcomm.HcclGroupStart() == 0
    ret, comm = pyhcomm.HcclCommInitRootInfo(2, root, 0)   # rank 1 never comes
    assert ret == 0
    assert pyhcomm.HcclGroupEnd() == R.HCCL_E_TIMEOUT
    assert pyhcomm.HcclGetRankId(comm)[0] != R.HCCL_SUCCESS


# -- every point-to-point call meets every other ----------------------------------------------------------------
def mixed_p2p_body(comm, s):
    """Rank 0: a grouped Send, then a batch (a receive and a send); rank 1: a plain Recv, then a
    plain Send and a grouped Recv. The k-th send to a peer meets the peer's k-th receive."""
    r, h = comm.rank, comm.handle
    bufs = [to_device(make_input("mix-p2p", 10 * r + k, 6, I32, SUM)) for k in range(3)]
    got = [to_device(sentinel(6, np.int32)) for _ in range(3)]
    item = pyhcomm.HcclSendRecvItem
    if r == 0:
        assert pyhcomm.HcclGroupStart() == 0
        assert pyhcomm.HcclSend(bufs[0], 6, I32, 1, h, s) == 0
        assert pyhcomm.HcclGroupEnd() == 0
        assert pyhcomm.HcclBatchSendRecv([item(pyhcomm.HCCL_RECV, got[0], 6, I32, 1),
                                          item(pyhcomm.HCCL_SEND, bufs[1], 6, I32, 1)], h, s) == 0
    else:
        assert pyhcomm.HcclRecv(got[0], 6, I32, 0, h, s) == 0
        assert pyhcomm.HcclSend(bufs[0], 6, I32, 0, h, s) == 0
        assert pyhcomm.HcclGroupStart() == 0
        assert pyhcomm.HcclRecv(got[1], 6, I32, 0, h, s) == 0
        assert pyhcomm.HcclGroupEnd() == 0
    sync(s)
    return [from_device(g, 6, np.int32) for g in got[:2]]


@pytest.mark.parametrize("product", [A2, A350])
def test_plain_grouped_and_batched_point_to_point_calls_meet_each_other(product):
    (r0, _), (r1_first, r1_second) = launch(product, 2, mixed_p2p_body)
    assert_same(r1_first, make_input("mix-p2p", 0, 6, I32, SUM), "rank 0's grouped send")
    assert_same(r0, make_input("mix-p2p", 10, 6, I32, SUM), "rank 1's plain send")
    assert_same(r1_second, make_input("mix-p2p", 1, 6, I32, SUM), "rank 0's batched send")
