"""The HcclXxx collectives on every product where HCCL runs them, over that product's links, and
refused (HCCL_E_NOT_SUPPORT, nothing enqueued) where it does not; the public HCOMM primitives keep
the seed's support table on those products."""
from __future__ import annotations

import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import support
from pyhcomm.hcomm.resources import channel as channel_mod
from pyhcomm.hcomm.resources.channel import HcclChannelDesc
from pyhcomm.topology import CommProtocol as P
from test_collectives_reduce import (MAX, SUM, check_all_reduce, check_reduce, check_reduce_scatter, from_device,
                                     make_input, sentinel, to_device)
from test_collectives_v import A2AV_CASES, a2av_body, check_a2av
from test_collectives_v import launch as launch_v

pytestmark = pytest.mark.timeout(120)

TRAINING, INFERENCE = "Atlas training series", "Atlas inference series"
A2I, A200I = "Atlas 800I A2", "Atlas 200I/500 A2"
D = pyhcomm.HcclDataType
R = pyhcomm.HcclResult


def pairs(family):
    return sorted(support.REDUCE_PAIRS[family])


# -- what runs, with the bytes ---------------------------------------------------------------------------------
def test_training_series_reduces_every_pair_hccl_lists_on_a_full_server():
    """8 NPUs: two HCCS groups of four, PCIe between them; every (dataType, op) of the product."""
    cases = [(5, dt, op) for dt, op in pairs("910")]
    check_all_reduce(TRAINING, 8, cases)
    protocols = {(e.rank, e.peer): e.protocol for e in pyhcomm.record.events(kind="Write")}
    assert protocols[(0, 1)] == protocols[(5, 6)] == P.COMM_PROTOCOL_HCCS.name
    assert protocols[(3, 4)] == protocols[(7, 0)] == P.COMM_PROTOCOL_PCIE.name


@pytest.mark.parametrize("product, family, n, link", [(TRAINING, "910", 4, P.COMM_PROTOCOL_HCCS),
                                                     (INFERENCE, "310P", 4, P.COMM_PROTOCOL_PCIE),
                                                     (A2I, "A2", 4, P.COMM_PROTOCOL_HCCS)])
def test_reduce_scatter_and_reduce_where_hccl_runs_them(product, family, n, link):
    """Four NPUs of one server: one HCCS group on the training series, PCIe on the inference series."""
    check_reduce_scatter(product, n, [(3, dt, op) for dt, op in pairs(family)][:8])
    if family != "310P":
        check_reduce(product, n, [(4, dt, op, k % n) for k, (dt, op) in enumerate(pairs(family)[:6])])
    writes = pyhcomm.record.events(kind="Write")
    assert writes and {e.protocol for e in writes} == {link.name}


@pytest.mark.parametrize("product, n", [(TRAINING, 8), (INFERENCE, 4), (A2I, 2)])
def test_alltoallv_and_allgather_where_hccl_runs_them(product, n):
    cases = [c for c in A2AV_CASES if c[0] in support.MOVE_DTYPES[pyhcomm.find_product(product).family]]
    check_a2av(launch_v((product, n), a2av_body, cases, False), cases, n, f"AlltoAllV {product}")

    def gather(comm, s):
        x = make_input("prod-ag", comm.rank, 3, D.HCCL_DATA_TYPE_INT16, SUM)
        send, recv = to_device(x), to_device(sentinel(3 * comm.size, np.int16))
        assert pyhcomm.HcclAllGather(send, recv, 3, D.HCCL_DATA_TYPE_INT16, comm.handle, s) == 0
        return [lambda: from_device(recv, 3 * comm.size, np.int16)]
    want = np.concatenate([make_input("prod-ag", r, 3, D.HCCL_DATA_TYPE_INT16, SUM) for r in range(n)])
    for out in launch_v((product, n), gather):
        np.testing.assert_array_equal(out[0], want)


def test_training_series_point_to_point_broadcast_and_scatter():
    n = 8

    def body(comm, s):
        r = comm.rank
        buf = to_device(make_input("prod-bc", r, 6, D.HCCL_DATA_TYPE_FP32, SUM))
        assert pyhcomm.HcclBroadcast(buf, 6, D.HCCL_DATA_TYPE_FP32, 5, comm.handle, s) == 0
        whole = to_device(make_input("prod-sc", r, 2 * n, D.HCCL_DATA_TYPE_UINT8, SUM))
        part = to_device(sentinel(2, np.uint8))
        assert pyhcomm.HcclScatter(whole, part, 2, D.HCCL_DATA_TYPE_UINT8, 2, comm.handle, s) == 0
        mine, theirs = to_device(np.full(4, r, np.int64)), to_device(sentinel(4, np.int64))
        call = [lambda: pyhcomm.HcclSend(mine, 4, D.HCCL_DATA_TYPE_INT64, r ^ 4, comm.handle, s),
                lambda: pyhcomm.HcclRecv(theirs, 4, D.HCCL_DATA_TYPE_INT64, r ^ 4, comm.handle, s)]
        for c in call if r < 4 else call[::-1]:     # ranks 0-3 and 4-7 talk over PCIe
            assert c() == 0
        assert pyhcomm.HcclBarrier(comm.handle, s) == 0
        return [lambda: from_device(buf, 6, np.float32), lambda: from_device(part, 2, np.uint8),
                lambda: from_device(theirs, 4, np.int64)]

    res = launch_v((TRAINING, n), body)
    root_in = make_input("prod-sc", 2, 2 * n, D.HCCL_DATA_TYPE_UINT8, SUM)
    for r, (bc, sc, p2p) in enumerate(res):
        np.testing.assert_array_equal(bc, make_input("prod-bc", 5, 6, D.HCCL_DATA_TYPE_FP32, SUM))
        np.testing.assert_array_equal(sc, root_in[2 * r:2 * r + 2])
        np.testing.assert_array_equal(p2p, np.full(4, r ^ 4, np.int64))


# -- what is refused ----------------------------------------------------------------------------------------------
def call_all(comm, s):
    """Every collective once, with valid arguments: ``{name: (code, tasks it enqueued)}``."""
    n, r, h = comm.size, comm.rank, comm.handle
    f32, i32 = D.HCCL_DATA_TYPE_FP32, D.HCCL_DATA_TYPE_INT32
    a = to_device(np.zeros(8 * n, np.float32))
    b = to_device(np.zeros(8 * n, np.float32))
    ones, disp = [1] * n, list(range(n))
    item = pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_SEND if r == 0 else pyhcomm.HCCL_RECV, a, 1, f32, 1 - r)
    calls = {
        "HcclReduce": lambda: pyhcomm.HcclReduce(a, b, 2, f32, SUM, 0, h, s),
        "HcclBroadcast": lambda: pyhcomm.HcclBroadcast(a, 2, f32, 0, h, s),
        "HcclScatter": lambda: pyhcomm.HcclScatter(a, b, 2, f32, 0, h, s),
        "HcclSend": lambda: (pyhcomm.HcclSend(a, 2, f32, 1, h, s) if r == 0 else pyhcomm.HcclRecv(b, 2, f32, 0, h, s)),
        "HcclBatchSendRecv": lambda: pyhcomm.HcclBatchSendRecv([item], h, s),
        "HcclBarrier": lambda: pyhcomm.HcclBarrier(h, s),
        "HcclAllGatherV": lambda: pyhcomm.HcclAllGatherV(a, 1, b, ones, disp, f32, h, s),
        "HcclReduceScatterV": lambda: pyhcomm.HcclReduceScatterV(a, ones, disp, b, 1, f32, SUM, h, s),
        "HcclAlltoAllVC": lambda: pyhcomm.HcclAlltoAllVC(a, [ones] * n, f32, b, f32, h, s),
        "HcclAlltoAll": lambda: pyhcomm.HcclAlltoAll(a, 1, i32, b, 1, i32, h, s),
    }
    out = {}
    for name, call in calls.items():
        before = len(pyhcomm.record.tasks(rank=r))
        code = call()
        out[name] = (code, len(pyhcomm.record.tasks(rank=r)) - before)
    assert acl.rt.synchronize_stream(s) == 0
    return out


@pytest.mark.parametrize("product, refused", [
    (INFERENCE, {"HcclReduce", "HcclBroadcast", "HcclScatter", "HcclSend", "HcclBatchSendRecv", "HcclBarrier",
                 "HcclAlltoAllVC"}),
    (TRAINING, {"HcclAllGatherV", "HcclReduceScatterV", "HcclAlltoAllVC"}),
    (A2I, {"HcclAlltoAll", "HcclAlltoAllVC"}),
])
def test_collectives_hccl_does_not_run_on_a_product_are_not_supported(product, refused):
    for (codes,) in launch_v((product, 2), lambda comm, s: [call_all(comm, s)]):
        for api, (code, tasks) in codes.items():
            if api in refused:
                assert (code, tasks) == (R.HCCL_E_NOT_SUPPORT, 0), (product, api)
            else:
                assert code == R.HCCL_SUCCESS and tasks > 0, (product, api, code)


def test_atlas_200i_500_a2_runs_no_collective():
    pyhcomm.set_product(A200I)
    assert acl.rt.set_device(0) == 0
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == 0
    s, _ = acl.rt.create_stream()
    a = to_device(np.zeros(4, np.float32))
    assert pyhcomm.HcclAllReduce(a, a, 4, D.HCCL_DATA_TYPE_FP32, SUM, comms[0], s) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcclBarrier(comms[0], s) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.record.tasks() == []


def test_the_public_primitives_keep_the_seed_table_where_hccl_runs_collectives():
    """On the training series a user's own thread and channel are still refused, while HCCL's
    AllReduce on the same communicator works."""
    def body(comm, s):
        ret, thread = pyhcomm.HcclThreadAcquireWithStream(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, s, 1)
        assert ret == 0
        a = to_device(np.ones(4, np.float32))
        user_copy = pyhcomm.HcommLocalCopyOnThread(thread, a, a + 8, 8)
        descs = [HcclChannelDesc()]
        channel_mod.desc_init(descs)
        descs[0].remoteRank, descs[0].channelProtocol = 1 - comm.rank, P.COMM_PROTOCOL_HCCS
        with pytest.raises(pyhcomm.HcclError) as refused:
            channel_mod.acquire(comm.handle, pyhcomm.COMM_ENGINE_CPU_TS, descs, 1)
        assert refused.value.code == R.HCCL_E_NOT_SUPPORT
        assert pyhcomm.HcclAllReduce(a, a, 4, D.HCCL_DATA_TYPE_FP32, MAX, comm.handle, s) == 0
        assert acl.rt.synchronize_stream(s) == 0
        return [user_copy, from_device(a, 4, np.float32)]
    for user_copy, got in launch_v((TRAINING, 2), body):
        assert user_copy == R.HCCL_E_NOT_SUPPORT
        np.testing.assert_array_equal(got, np.ones(4, np.float32))
