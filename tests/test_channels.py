"""Channels between ranks: descriptors, HcclChannelAcquire (pairing, engine/protocol legality per
product), exchanged memories, and the channel data plane (one-sided Write/Read and their reduce and
notify variants, NBI, batch transfers, fences, drain), ending with S2-like ACK/DATA exchanges
between two ranks (hcomm-api §1.6, §1.7, §2.2, §2.5-§2.8, §3.2, §3.4, §4.2, §5.2, §8 S2).

Most validation tests build every rank in one host thread with ``HcclCommInitAll`` (acquire does
not block, and both ends exist before any data-plane call); the exchanges run one host thread per
rank with ``pyhcomm.launch``.
"""
import struct

import numpy as np
import pytest
from ml_dtypes import bfloat16

import pyhcomm
from pyhcomm import (CommMem, HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer,
                     HcclChannelGetRemoteMems, HcclCommDestroy, HcclCommInitAll, HcclCommMemReg, HcclGetHcclBuffer,
                     HcclRankGraphGetLinks, HcclThreadAcquire, HcclThreadAcquireWithStream,
                     HcclThreadExportToCommEngine, HcommBatchModeEnd, HcommBatchModeStart, HcommBatchTransferDesc,
                     HcommBatchTransferOnThread, HcommChannelDrainOnThread, HcommChannelFence,
                     HcommChannelFenceOnThread, HcommChannelNotifyRecord, HcommChannelNotifyRecordOnThread,
                     HcommChannelNotifyWait, HcommChannelNotifyWaitOnThread,
                     HcommChannelNotifyWaitOnThreadWithDefaultTimeout, HcommFenceOnThread, HcommLocalCopyOnThread,
                     HcommReadNbi, HcommReadNbiOnThread, HcommReadOnThread, HcommReadReduceOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, HcommWriteNbi,
                     HcommWriteNbiOnThread, HcommWriteOnThread, HcommWriteReduceOnThread,
                     HcommWriteReduceWithNotifyOnThread, HcommWriteWithNotifyNbi, HcommWriteWithNotifyNbiOnThread,
                     HcommWriteWithNotifyOnThread, acl)
from hcomm_testutil import malloc, pattern, read, write

R = pyhcomm.HcclResult
E = pyhcomm.CommEngine
P = pyhcomm.CommProtocol
T = pyhcomm.HcommTransferType
DT = pyhcomm.HcommDataType
OP = pyhcomm.HcommReduceOp
CPU, CPU_TS, AICPU, AICPU_TS, AIV, CCU = (E.COMM_ENGINE_CPU, E.COMM_ENGINE_CPU_TS, E.COMM_ENGINE_AICPU,
                                          E.COMM_ENGINE_AICPU_TS, E.COMM_ENGINE_AIV, E.COMM_ENGINE_CCU)
HCCS, HCCS_ONLY, ROCE, SIO = P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE, P.COMM_PROTOCOL_SIO
UB_CTP, UB_TP, UB_MEM, UBOE = (P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM,
                               P.COMM_PROTOCOL_UBOE)
A2, A3, A350 = "Atlas 800T A2", "Atlas A3", "Atlas 350"
ACK, DATA = 0, 1
WAIT = 1836

pytestmark = pytest.mark.timeout(60)


# -- helpers -----------------------------------------------------------------------------------------------
def desc(peer, protocol, notify=2, mems=()):
    d = HcclChannelDesc()
    assert HcclChannelDescInit(d) == 0
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, protocol, notify
    d.memHandles, d.memHandleNum = list(mems), len(mems)
    return d


def acquire(comm, engine, peer, protocol, notify=2, mems=()):
    """``HcclChannelAcquire`` of one channel; returns ``(ret, handle)``."""
    ret, chans = HcclChannelAcquire(comm, engine, [desc(peer, protocol, notify, mems)])
    return ret, (chans[0] if chans else 0)


def world(product, devices=(0, 1)):
    """Every rank in this host thread (``HcclCommInitAll``); the current device is left at 0."""
    pyhcomm.set_product(product)
    assert acl.init() == 0
    ret, comms = HcclCommInitAll(list(devices))
    assert ret == 0
    assert acl.rt.set_device(devices[0]) == 0
    return comms


class Pair:
    """Two ranks (devices 0 and 1) with a connected channel: ``ch[r]`` is rank r's end."""

    def __init__(self, product=A2, engine=CPU_TS, protocol=HCCS, notify=(2, 2), mems=((), ())):
        self.comms = world(product)
        self.engine = engine
        self.ch = []
        for r in (0, 1):
            ret, ch = acquire(self.comms[r], engine, 1 - r, protocol, notify[r], mems[r])
            assert ret == 0, ret
            self.ch.append(ch)
        self.buf = []
        for r in (0, 1):
            ret, addr, size = HcclGetHcclBuffer(self.comms[r])
            assert ret == 0
            self.buf.append((addr, size))

    def host_thread(self, rank, notify=1):
        """A CPU_TS thread on a new stream of ``rank``'s device: ``(thread, stream)``."""
        assert acl.rt.set_device(rank) == 0
        stream, ret = acl.rt.create_stream()
        assert ret == 0
        ret, t = HcclThreadAcquireWithStream(self.comms[rank], CPU_TS, stream, notify)
        assert ret == 0
        assert acl.rt.set_device(0) == 0
        return t, stream

    def device_thread(self, rank, notify=1):
        ret, (t,) = HcclThreadAcquire(self.comms[rank], AICPU_TS, 1, notify)
        assert ret == 0
        return t


def on_device(fn, device=0, sync=True):
    """Run ``fn()`` inside an AI CPU kernel on ``device``; returns ``(what fn returned, sync ret)``.
    With ``sync=False`` the kernel is only launched: returns ``(list that will hold the result, None)``."""
    assert acl.rt.set_device(device) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    out = []
    pyhcomm.Stream(stream, owned=False).launch(lambda: out.append(fn()))
    if not sync:
        assert acl.rt.set_device(0) == 0
        return out, None
    ret = acl.rt.synchronize_device()
    assert acl.rt.set_device(0) == 0
    return (out[0] if out else None), ret


def batched(fn):
    """Wrap ``fn`` in HcommBatchModeStart/End (mandatory on the device side of Atlas A2/A3)."""
    def body():
        assert HcommBatchModeStart("t") == 0
        try:
            return fn()
        finally:
            assert HcommBatchModeEnd("t") == 0
    return body


def kinds():
    return [t.kind for t in pyhcomm.record.tasks()]


# -- HcclChannelDesc / HcclChannelDescInit -------------------------------------------------------------------
def test_desc_init_sets_the_documented_defaults():
    d = HcclChannelDesc()
    assert HcclChannelDescInit(d) == 0
    assert (d.header.version, d.header.magicWord) == (pyhcomm.HCCL_CHANNEL_VERSION, 0x0F0F0F0F)
    assert pyhcomm.HCCL_CHANNEL_MAGIC_WORD == 0x0F0F0F0F and pyhcomm.HCCL_CHANNEL_VERSION == 1
    assert d.remoteRank == 0xFFFFFFFF
    assert d.channelProtocol == P.COMM_PROTOCOL_RESERVED
    assert d.notifyNum == 0
    assert not d.memHandles and d.memHandleNum == 0
    for ep in (d.localEndpoint, d.remoteEndpoint):
        assert ep.protocol == P.COMM_PROTOCOL_RESERVED
        assert ep.commAddr.type == -1 and ep.loc.locType == -1
    # the union is left 0xFF ("not set"): every RoCE / UB_MEM member reads all ones
    assert d.raws == b"\xff" * 128
    assert (d.queueNum, d.retryCnt, d.retryInterval, d.tc, d.sl, d.pathMode) == \
        (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFF, 0xFF, 0xFF)
    assert d.localEndpoint.raws == b"\xff" * 52 and d.localEndpoint.loc.devPhyId == 0xFFFFFFFF


def test_desc_union_members_share_the_raw_bytes():
    d = HcclChannelDesc()
    assert d.raws == bytes(128) and (d.queueNum, d.tc, d.sl, d.pathMode) == (0, 0, 0, 0)   # pyhccl's zero default
    d.queueNum, d.retryCnt, d.retryInterval, d.tc, d.sl = 2, 7, 20, 132, 4
    assert d.raws[:14] == bytes([2, 0, 0, 0, 7, 0, 0, 0, 20, 0, 0, 0, 132, 4])
    assert d.pathMode == 2                                   # ubMemAttr.pathMode shares queueNum's first byte
    d.raws = bytes([1]) + bytes(12) + bytes([3])
    assert (d.pathMode, d.queueNum, d.sl, d.retryCnt) == (1, 1, 3, 0)
    with pytest.raises(ValueError):
        d.raws = bytes(129)
    with pytest.raises(ValueError):
        d.tc = 256


def test_desc_init_resets_a_used_descriptor_and_initialises_lists():
    d = desc(1, ROCE, 9)
    d.sl = 1
    assert HcclChannelDescInit(d) == 0
    assert (d.remoteRank, d.notifyNum, d.sl) == (0xFFFFFFFF, 0, 0xFF)
    ds = [HcclChannelDesc() for _ in range(3)]
    assert HcclChannelDescInit(ds) == 0
    assert all(x.header.magicWord == 0x0F0F0F0F for x in ds)


def test_desc_init_null_is_ptr():
    assert HcclChannelDescInit(None) == R.HCCL_E_PTR


def test_acquire_with_an_uninitialised_descriptor_is_para():
    comms = world(A2)
    d = HcclChannelDesc()
    d.remoteRank, d.channelProtocol, d.notifyNum = 1, HCCS, 2
    ret, chans = HcclChannelAcquire(comms[0], CPU_TS, [d])
    assert ret == R.HCCL_E_PARA and chans == []
    d2 = desc(1, HCCS)
    d2.header.magicWord = 0x12345678
    assert HcclChannelAcquire(comms[0], CPU_TS, [d2])[0] == R.HCCL_E_PARA
    # initialised but remoteRank / protocol left at their defaults
    blank = HcclChannelDesc()
    HcclChannelDescInit(blank)
    assert HcclChannelAcquire(comms[0], CPU_TS, [blank])[0] == R.HCCL_E_PARA
    blank.remoteRank = 1
    assert HcclChannelAcquire(comms[0], CPU_TS, [blank])[0] == R.HCCL_E_PARA


def test_acquire_argument_errors():
    comms = world(A2)
    assert HcclChannelAcquire(comms[0], CPU_TS, None) == (R.HCCL_E_PTR, [])
    assert HcclChannelAcquire(0, CPU_TS, [desc(1, HCCS)])[0] == R.HCCL_E_PTR
    assert HcclChannelAcquire(comms[0], CPU_TS, []) == (R.HCCL_E_PARA, [])          # channelNum 0
    assert HcclChannelAcquire(comms[0], 6, [desc(1, HCCS)])[0] == R.HCCL_E_PARA
    assert HcclChannelAcquire(comms[0], -1, [desc(1, HCCS)])[0] == R.HCCL_E_PARA


# -- HcclChannelAcquire: pairing -----------------------------------------------------------------------------
def test_acquire_on_both_ends_pairs_them_and_exchanges_hccl_buffers():
    comms = world(A2)
    ret, c0 = acquire(comms[0], CPU_TS, 1, HCCS)
    assert ret == 0 and c0
    ret, c1 = acquire(comms[1], CPU_TS, 0, HCCS)
    assert ret == 0 and c1 and c1 != c0
    for me, ch in ((0, c0), (1, c1)):
        ret, addr, size = HcclChannelGetHcclBuffer(comms[me], ch)
        ret2, peer_addr, peer_size = HcclGetHcclBuffer(comms[1 - me])
        assert ret == ret2 == 0
        assert (addr, size) == (peer_addr, peer_size)
        assert size == 400 << 20
        assert HcclGetHcclBuffer(comms[me])[1] != addr


def test_acquire_is_get_or_create():
    comms = world(A2)
    ret, a = acquire(comms[0], CPU_TS, 1, HCCS)
    ret2, b = acquire(comms[0], CPU_TS, 1, HCCS, notify=5)
    assert ret == ret2 == 0 and a == b
    ret, (x, y) = HcclChannelAcquire(comms[0], CPU_TS, [desc(1, HCCS), desc(1, ROCE)])
    assert ret == 0 and x == a and y != a
    assert acquire(comms[0], AICPU_TS, 1, HCCS)[1] not in (a, y)   # another engine: another channel


def test_acquire_several_channels_in_one_call_to_several_peers():
    comms = world(A2, devices=(0, 1, 2, 3))
    ret, chans = HcclChannelAcquire(comms[0], CPU_TS, [desc(p, HCCS) for p in (1, 2, 3)])
    assert ret == 0 and len(set(chans)) == 3
    for p in (1, 2, 3):
        assert acquire(comms[p], CPU_TS, 0, HCCS)[0] == 0
    for p, ch in zip((1, 2, 3), chans):
        assert HcclChannelGetHcclBuffer(comms[0], ch)[1] == HcclGetHcclBuffer(comms[p])[1]


def test_a_bad_descriptor_fails_the_whole_call():
    comms = world(A2)
    ret, chans = HcclChannelAcquire(comms[0], CPU_TS, [desc(1, HCCS), desc(0, HCCS)])
    assert ret == R.HCCL_E_PARA and chans == []


# -- HcclChannelAcquire: engine / protocol legality ------------------------------------------------------------
@pytest.mark.parametrize("product,engine,protocol,expect", [
    (A2, CPU_TS, HCCS, R.HCCL_SUCCESS),
    (A2, CPU_TS, HCCS_ONLY, R.HCCL_SUCCESS),
    (A2, CPU_TS, ROCE, R.HCCL_SUCCESS),
    (A2, AICPU_TS, HCCS, R.HCCL_SUCCESS),
    (A2, AIV, HCCS, R.HCCL_E_NOT_SUPPORT),
    (A2, CCU, HCCS, R.HCCL_E_NOT_SUPPORT),
    (A2, CPU, ROCE, R.HCCL_E_NOT_SUPPORT),
    (A2, CPU_TS, SIO, R.HCCL_E_NOT_SUPPORT),
    (A2, CPU_TS, UB_CTP, R.HCCL_E_NOT_SUPPORT),
    (A3, AICPU_TS, HCCS, R.HCCL_SUCCESS),
    (A3, AICPU_TS, ROCE, R.HCCL_SUCCESS),
    (A3, AICPU_TS, HCCS_ONLY, R.HCCL_SUCCESS),
    (A3, CPU_TS, HCCS, R.HCCL_E_NOT_SUPPORT),
    (A3, AIV, HCCS, R.HCCL_E_NOT_SUPPORT),
    (A3, AICPU_TS, SIO, R.HCCL_E_NOT_SUPPORT),
    (A350, AICPU_TS, UB_CTP, R.HCCL_SUCCESS),
    (A350, AICPU_TS, UB_TP, R.HCCL_SUCCESS),
    (A350, AICPU_TS, UBOE, R.HCCL_SUCCESS),
    (A350, AICPU_TS, ROCE, R.HCCL_SUCCESS),
    (A350, AICPU_TS, HCCS, R.HCCL_E_NOT_SUPPORT),
    (A350, AICPU_TS, UB_MEM, R.HCCL_E_NOT_SUPPORT),
    (A350, CPU, ROCE, R.HCCL_SUCCESS),
    (A350, CPU, UB_CTP, R.HCCL_E_NOT_SUPPORT),
    (A350, CPU_TS, ROCE, R.HCCL_E_NOT_SUPPORT),
    (A350, AIV, UB_MEM, R.HCCL_SUCCESS),
    (A350, AIV, UBOE, R.HCCL_E_NOT_SUPPORT),
    (A350, CCU, UB_TP, R.HCCL_SUCCESS),
    (A350, CCU, ROCE, R.HCCL_E_NOT_SUPPORT),
])
def test_engine_and_protocol_legality_per_product(product, engine, protocol, expect):
    comms = world(product)
    ret, ch = acquire(comms[0], engine, 1, protocol)
    assert ret == expect
    assert bool(ch) == (expect == R.HCCL_SUCCESS)


def test_products_without_hcomm_have_no_channels():
    comms = world("Atlas training series")
    assert acquire(comms[0], CPU_TS, 1, ROCE)[0] == R.HCCL_E_NOT_SUPPORT


def test_hccs_across_a2_servers_is_not_found_roce_is_fine():
    comms = world(A2, devices=range(16))
    assert acquire(comms[0], CPU_TS, 8, HCCS) == (R.HCCL_E_NOT_FOUND, 0)
    assert acquire(comms[0], CPU_TS, 8, HCCS_ONLY)[0] == R.HCCL_E_NOT_FOUND
    assert acquire(comms[0], CPU_TS, 7, HCCS)[0] == 0
    assert acquire(comms[8], CPU_TS, 15, HCCS)[0] == 0
    ret, ch = acquire(comms[0], CPU_TS, 8, ROCE)
    assert ret == 0 and ch


def test_a3_hccs_across_super_pods_is_not_found(monkeypatch, env):
    env("PYHCOMM_SUPER_POD_SIZE", "2")
    comms = world(A3, devices=(0, 1, 2))
    assert acquire(comms[0], AICPU_TS, 1, HCCS)[0] == 0
    assert acquire(comms[0], AICPU_TS, 2, HCCS)[0] == R.HCCL_E_NOT_FOUND
    assert acquire(comms[0], AICPU_TS, 2, ROCE)[0] == 0


@pytest.mark.parametrize("notify,expect", [(0, 0), (1, 0), (64, 0), (65, R.HCCL_E_PARA), (-1, R.HCCL_E_PARA)])
def test_notify_num_range(notify, expect):
    comms = world(A2)
    assert acquire(comms[0], CPU_TS, 1, HCCS, notify)[0] == expect


def test_ccu_channels_have_four_notifies_whatever_the_descriptor_says():
    p = Pair(A350, CCU, UB_TP, notify=(0, 70))
    # both ends have 4 notifies; index 3 is legal, 4 is not (checked from the host, CCU is a host engine)
    t, _ = p.host_thread(0)
    assert HcommChannelNotifyRecordOnThread(t, p.ch[0], 3) == 0
    assert HcommChannelNotifyRecordOnThread(t, p.ch[0], 4) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(t, p.ch[0], 3, 0) == 0
    assert HcommChannelNotifyWaitOnThread(t, p.ch[0], 4, 0) == R.HCCL_E_PARA


@pytest.mark.parametrize("peer", [0, 2, 5, -1, 0xFFFFFFFF])
def test_remote_rank_self_or_out_of_range_is_para(peer):
    comms = world(A2)
    assert acquire(comms[0], CPU_TS, peer, HCCS) == (R.HCCL_E_PARA, 0)


# -- exchanged memories ----------------------------------------------------------------------------------------
def test_get_hccl_buffer_errors():
    p = Pair()
    assert HcclChannelGetHcclBuffer(0, p.ch[0]) == (R.HCCL_E_PTR, 0, 0)
    assert HcclChannelGetHcclBuffer(p.comms[0], 0) == (R.HCCL_E_PTR, 0, 0)
    assert HcclChannelGetHcclBuffer(p.comms[0], 0xDEAD0)[0] == R.HCCL_E_NOT_FOUND
    assert HcclChannelGetHcclBuffer(p.comms[0], p.ch[1])[0] == R.HCCL_E_PARA   # rank 1's end


def test_registered_memories_listed_in_the_descriptor_reach_the_peer():
    comms = world(A2)
    assert acl.rt.set_device(1) == 0
    a, b, c = malloc(4096), malloc(256), malloc(128)
    ret, ha = HcclCommMemReg(comms[1], "input", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, a, 4096))
    assert ret == 0 and ha
    ret, hb = HcclCommMemReg(comms[1], "output", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, b + 64, 128))
    assert ret == 0 and hb and hb != ha
    ret, hc = HcclCommMemReg(comms[1], "scratch", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, c, 128))
    assert ret == 0
    assert acl.rt.set_device(0) == 0
    ret, c1 = acquire(comms[1], CPU_TS, 0, HCCS, mems=[ha, hb])     # "scratch" is not exposed
    ret0, c0 = acquire(comms[0], CPU_TS, 1, HCCS)
    assert ret == ret0 == 0
    ret, num, mems, tags = HcclChannelGetRemoteMems(comms[0], c0)
    assert ret == 0 and num == 2
    assert tags == ["input", "output"]
    assert [(m.type, m.addr, m.size) for m in mems] == [(pyhcomm.COMM_MEM_TYPE_DEVICE, a, 4096),
                                                          (pyhcomm.COMM_MEM_TYPE_DEVICE, b + 64, 128)]
    ret, num, mems, tags = HcclChannelGetRemoteMems(comms[1], c1)       # rank 0 exposed nothing
    assert (ret, num, mems, tags) == (0, 0, [], [])
    assert HcclChannelGetRemoteMems(comms[1], c0)[0] == R.HCCL_E_PARA
    assert HcclChannelGetRemoteMems(comms[0], 0)[0] == R.HCCL_E_PTR


def test_descriptor_mem_handles_as_a_host_pointer():
    """As in C (and pyhccl), ``memHandles`` may be the address of ``memHandleNum`` 64-bit handles."""
    comms = world(A2)
    a = malloc(256)
    ret, h = HcclCommMemReg(comms[0], "in", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, a, 256))
    assert ret == 0
    handles = np.array([h], dtype=np.uint64)
    d = desc(1, HCCS)
    d.memHandles, d.memHandleNum = acl.util.numpy_to_ptr(handles), 1
    ret, (c0,) = HcclChannelAcquire(comms[0], CPU_TS, [d])
    assert ret == 0 and acquire(comms[1], CPU_TS, 0, HCCS)[0] == 0
    ret, (c1,) = HcclChannelAcquire(comms[1], CPU_TS, [desc(0, HCCS)])
    assert HcclChannelGetRemoteMems(comms[1], c1)[:3] == (0, 1, [CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, a, 256)])
    d2 = desc(1, ROCE)
    d2.memHandles, d2.memHandleNum = 0, 1                               # NULL array of one handle
    assert HcclChannelAcquire(comms[0], CPU_TS, [d2])[0] == R.HCCL_E_PTR


def test_mem_reg_errors():
    comms = world(A2)
    a = malloc(256)
    dev = pyhcomm.COMM_MEM_TYPE_DEVICE
    assert HcclCommMemReg(comms[0], "x", CommMem(dev, a, 256))[0] == 0
    assert HcclCommMemReg(comms[0], "x", CommMem(dev, a, 64))[0] == R.HCCL_E_PARA        # tag taken
    assert HcclCommMemReg(comms[0], None, CommMem(dev, a, 64))[0] == R.HCCL_E_PTR
    assert HcclCommMemReg(comms[0], "y", None)[0] == R.HCCL_E_PTR
    assert HcclCommMemReg(comms[0], "", CommMem(dev, a, 64))[0] == R.HCCL_E_PARA
    assert HcclCommMemReg(comms[0], "y", CommMem(dev, 0, 64))[0] == R.HCCL_E_PTR
    assert HcclCommMemReg(comms[0], "y", CommMem(dev, a, 0))[0] == R.HCCL_E_PARA
    assert HcclCommMemReg(comms[0], "y", CommMem(dev, a, 257))[0] == R.HCCL_E_PARA       # past the end
    assert HcclCommMemReg(comms[0], "y", CommMem(pyhcomm.COMM_MEM_TYPE_HOST, a, 64))[0] == R.HCCL_E_NOT_SUPPORT
    assert acl.rt.set_device(1) == 0
    other = malloc(64)
    assert HcclCommMemReg(comms[0], "y", CommMem(dev, other, 64))[0] == R.HCCL_E_PARA    # device 1's memory
    assert HcclCommMemReg(0, "y", CommMem(dev, other, 64))[0] == R.HCCL_E_PTR


def test_descriptor_mem_handles_must_match_and_belong_to_the_communicator():
    comms = world(A2)
    a = malloc(256)
    ret, h = HcclCommMemReg(comms[0], "x", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, a, 256))
    assert ret == 0
    d = desc(1, HCCS, mems=[h])
    d.memHandleNum = 2
    assert HcclChannelAcquire(comms[0], CPU_TS, [d])[0] == R.HCCL_E_PARA
    assert acquire(comms[1], CPU_TS, 0, HCCS, mems=[h])[0] == R.HCCL_E_PARA             # rank 0's handle
    assert acquire(comms[0], CPU_TS, 1, HCCS, mems=[0xBAD])[0] == R.HCCL_E_PARA


# -- channel data plane (host side, Atlas A2) -------------------------------------------------------------------
@pytest.fixture
def a2():
    p = Pair(A2, CPU_TS, HCCS)
    p.t, p.stream = p.host_thread(0)
    p.src = malloc(4096)
    p.data = write(p.src, pattern(4096, 3))
    return p


def test_write_copies_local_bytes_into_the_peer_hccl_buffer(a2):
    peer = a2.buf[1][0]
    assert HcommWriteOnThread(a2.t, a2.ch[0], peer + 1000, a2.src, 4096) == 0
    assert (read(peer + 1000, 4096) == 0).all()                 # enqueued, not run
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert (read(peer + 1000, 4096) == a2.data).all()
    assert (read(peer, 1000) == 0).all() and (read(peer + 5096, 64) == 0).all()
    (task,) = pyhcomm.record.tasks(kind="Write")
    assert task.rank == 0 and task.state == "done"


def test_read_copies_the_peer_hccl_buffer_into_local_memory(a2):
    peer = a2.buf[1][0]
    assert acl.rt.set_device(1) == 0
    theirs = write(peer + 64, pattern(512, 9))
    assert acl.rt.set_device(0) == 0
    dst = malloc(512)
    assert HcommReadOnThread(a2.t, a2.ch[0], dst, peer + 64, 512) == 0
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert (read(dst, 512) == theirs).all()


def test_a_transfer_task_is_one_object_and_reads_as_the_tuples_it_had(a2):
    """Write, Read and WriteReduce tasks keep their operands in slots: one object for the garbage
    collector, where a task with an argument tuple, spans and detail had eight; what the record's
    readers use reads as before."""
    import gc
    peer, dst = a2.buf[1][0], malloc(64)
    fp32, add = DT.HCOMM_DATA_TYPE_FP32, OP.HCOMM_REDUCE_SUM
    assert HcommWriteOnThread(a2.t, a2.ch[0], peer + 8, a2.src, 64) == 0
    assert HcommReadOnThread(a2.t, a2.ch[0], dst, peer + 8, 64) == 0
    assert HcommWriteReduceOnThread(a2.t, a2.ch[0], peer + 8, a2.src, 16, fp32, add) == 0
    w, r, wr = pyhcomm.record.tasks()[-3:]
    assert (w.kind, r.kind, wr.kind) == ("Write", "Read", "WriteReduce")
    assert w.args[2:] == (peer + 8, w.args[3], 0, 64, None, True) and w.args[0] == "HcommWriteOnThread"
    assert w.reads == ((a2.src, 64),) and w.writes == ((peer + 8, 64),) and w.detail == (a2.ch[0], 1)
    assert r.reads == ((peer + 8, 64),) and r.writes == ((dst, 64),) and r.args[2] == peer + 8
    assert r.args[5:] == (64, None, False)
    assert wr.args[5:] == (16, np.dtype(np.float32), int(add), None, True)
    assert wr.reads == ((a2.src, 64), (peer + 8, 64)) and wr.writes == ((peer + 8, 64),)
    assert getattr(w, "notify", None) is None and getattr(w, "gen", None) is None
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        for _ in range(200):
            assert HcommWriteOnThread(a2.t, a2.ch[0], peer + 8, a2.src, 64) == 0
        tracked = (len(gc.get_objects()) - before) / 200
    finally:
        gc.enable()
    assert tracked < 1.5, tracked
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert (read(peer + 8, 64) == a2.data[:64]).all()


def test_transfers_on_one_thread_run_in_fifo_order(a2):
    peer = a2.buf[1][0]
    dst = malloc(256)
    assert HcommWriteOnThread(a2.t, a2.ch[0], peer, a2.src, 256) == 0
    assert HcommReadOnThread(a2.t, a2.ch[0], dst, peer, 256) == 0       # reads what the write put there
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert (read(dst, 256) == a2.data[:256]).all()


REDUCE_CASES = [
    (DT.HCOMM_DATA_TYPE_FP32, np.float32, OP.HCOMM_REDUCE_SUM, np.add),
    (DT.HCOMM_DATA_TYPE_INT32, np.int32, OP.HCOMM_REDUCE_MAX, np.maximum),
    (DT.HCOMM_DATA_TYPE_FP16, np.float16, OP.HCOMM_REDUCE_MIN, np.minimum),
    (DT.HCOMM_DATA_TYPE_INT8, np.int8, OP.HCOMM_REDUCE_SUM, np.add),
    (DT.HCOMM_DATA_TYPE_BFP16, bfloat16, OP.HCOMM_REDUCE_SUM, np.add),
]


def _operands(np_dtype, n):
    rng = np.random.default_rng(5)
    a = rng.integers(-20, 20, n).astype(np_dtype)
    b = rng.integers(-20, 20, n).astype(np_dtype)
    return a, b


@pytest.mark.parametrize("dt,np_dtype,op,fn", REDUCE_CASES)
def test_write_reduce_combines_into_the_peer(a2, dt, np_dtype, op, fn):
    n = 300
    a, b = _operands(np_dtype, n)
    peer = a2.buf[1][0] + 128
    assert acl.rt.set_device(1) == 0
    write(peer, a.view(np.uint8))
    assert acl.rt.set_device(0) == 0
    src = malloc(b.nbytes)
    write(src, b.view(np.uint8))
    assert HcommWriteReduceOnThread(a2.t, a2.ch[0], peer, src, n, dt, op) == 0
    assert acl.rt.synchronize_stream(a2.stream) == 0
    got = read(peer, a.nbytes).view(np_dtype)
    np.testing.assert_array_equal(got, fn(a, b).astype(np_dtype))
    assert (read(src, b.nbytes).view(np_dtype) == b).all()


@pytest.mark.parametrize("dt,np_dtype,op,fn", REDUCE_CASES)
def test_read_reduce_combines_into_local_memory(a2, dt, np_dtype, op, fn):
    n = 257
    a, b = _operands(np_dtype, n)
    remote = a2.buf[1][0] + 4096
    assert acl.rt.set_device(1) == 0
    write(remote, b.view(np.uint8))
    assert acl.rt.set_device(0) == 0
    dst = malloc(a.nbytes)
    write(dst, a.view(np.uint8))
    assert HcommReadReduceOnThread(a2.t, a2.ch[0], dst, remote, n, dt, op) == 0
    assert acl.rt.synchronize_stream(a2.stream) == 0
    np.testing.assert_array_equal(read(dst, a.nbytes).view(np_dtype), fn(a, b).astype(np_dtype))
    assert (read(remote, b.nbytes).view(np_dtype) == b).all()


def test_reduce_dtype_and_op_checks_on_a2(a2):
    peer = a2.buf[1][0]
    assert HcommWriteReduceOnThread(a2.t, a2.ch[0], peer, a2.src, 4, DT.HCOMM_DATA_TYPE_FP32,
                                    OP.HCOMM_REDUCE_PROD) == R.HCCL_E_PARA
    assert HcommReadReduceOnThread(a2.t, a2.ch[0], a2.src, peer, 4, DT.HCOMM_DATA_TYPE_UINT8,
                                   OP.HCOMM_REDUCE_SUM) == R.HCCL_E_PARA
    assert HcommWriteReduceOnThread(a2.t, a2.ch[0], peer, a2.src, 4, DT.HCOMM_DATA_TYPE_FP64,
                                    OP.HCOMM_REDUCE_SUM) == R.HCCL_E_PARA
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert kinds() == []


def test_write_into_registered_and_exposed_user_memory():
    comms = world(A2)
    assert acl.rt.set_device(1) == 0
    user = malloc(1024)
    ret, h = HcclCommMemReg(comms[1], "user", CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, user, 1024))
    assert ret == 0
    assert acquire(comms[1], CPU_TS, 0, HCCS, mems=[h])[0] == 0
    assert acl.rt.set_device(0) == 0
    ret, ch = acquire(comms[0], CPU_TS, 1, HCCS)
    ret, num, (mem,), tags = HcclChannelGetRemoteMems(comms[0], ch)
    assert ret == 0 and mem.addr == user
    stream, _ = acl.rt.create_stream()
    ret, t = HcclThreadAcquireWithStream(comms[0], CPU_TS, stream, 0)
    src = malloc(1024)
    data = write(src, pattern(1024, 4))
    assert HcommWriteOnThread(t, ch, mem.addr, src, mem.size) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(user, 1024) == data).all()
    # only the registered range is exposed, and only while it lives
    assert HcommWriteOnThread(t, ch, mem.addr + 1000, src, 25) == R.HCCL_E_PARA
    assert acl.rt.set_device(1) == 0
    assert acl.rt.free(user) == 0
    assert acl.rt.set_device(0) == 0
    assert HcommWriteOnThread(t, ch, mem.addr, src, 16) == R.HCCL_E_PARA
    assert HcommReadOnThread(t, ch, src, mem.addr, 16) == R.HCCL_E_PARA


def test_remote_addresses_the_peer_did_not_expose_are_para_and_nothing_is_written(a2):
    peer, size = a2.buf[1]
    mine = a2.buf[0][0]
    assert acl.rt.set_device(1) == 0
    unregistered = malloc(4096)
    assert acl.rt.set_device(0) == 0
    dst = malloc(4096)
    bad = [
        (unregistered, 64),          # the peer's user memory, not registered
        (peer + size - 32, 64),      # runs past the end of its HCCL buffer
        (peer + size, 1),            # just past its HCCL buffer
        (peer - 64, 64),             # just before it
        (mine, 64),                  # my own HCCL buffer is not the peer's
        (a2.src, 64),                # my own memory
        (0x7000_0000_0000, 64),      # no memory at all
    ]
    for addr, n in bad:
        assert HcommWriteOnThread(a2.t, a2.ch[0], addr, a2.src, n) == R.HCCL_E_PARA, hex(addr)
        assert HcommReadOnThread(a2.t, a2.ch[0], dst, addr, n) == R.HCCL_E_PARA, hex(addr)
        assert HcommWriteReduceOnThread(a2.t, a2.ch[0], addr, a2.src, n // 4 or 1, DT.HCOMM_DATA_TYPE_FP32,
                                        OP.HCOMM_REDUCE_SUM) == R.HCCL_E_PARA, hex(addr)
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert kinds() == []
    assert (read(unregistered, 4096) == 0).all()
    assert (read(peer + size - 4096, 4096) == 0).all()
    assert (read(mine, 64) == 0).all()


def test_local_addresses_must_be_memory_of_the_caller(a2):
    peer = a2.buf[1][0]
    assert acl.rt.set_device(1) == 0
    theirs = malloc(64)
    assert acl.rt.set_device(0) == 0
    assert HcommWriteOnThread(a2.t, a2.ch[0], peer, theirs, 64) == R.HCCL_E_PARA
    assert HcommReadOnThread(a2.t, a2.ch[0], theirs, peer, 64) == R.HCCL_E_PARA
    assert HcommWriteOnThread(a2.t, a2.ch[0], peer, a2.src, 4097) == R.HCCL_E_PARA
    assert HcommWriteOnThread(a2.t, a2.ch[0], 0, a2.src, 64) == R.HCCL_E_PTR
    assert HcommReadOnThread(a2.t, a2.ch[0], a2.src, 0, 64) == R.HCCL_E_PTR
    assert kinds() == []


def test_channel_and_thread_handle_errors(a2):
    peer = a2.buf[1][0]
    assert HcommWriteOnThread(a2.t, 0, peer, a2.src, 64) == R.HCCL_E_PTR
    assert HcommWriteOnThread(a2.t, 0xDEAD0, peer, a2.src, 64) == R.HCCL_E_NOT_FOUND
    assert HcommWriteOnThread(a2.t, a2.ch[1], peer, a2.src, 64) == R.HCCL_E_PARA          # rank 1's end
    assert HcommWriteOnThread(0, a2.ch[0], peer, a2.src, 64) == R.HCCL_E_PTR
    assert HcommChannelNotifyRecordOnThread(a2.t, a2.ch[1], 0) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(a2.t, 0xDEAD0, 0, 0) == R.HCCL_E_NOT_FOUND
    t1, _ = a2.host_thread(1)
    assert HcommWriteOnThread(t1, a2.ch[0], peer, a2.src, 64) == R.HCCL_E_PARA            # rank 1's thread
    assert kinds() == []


def test_engine_of_the_channel_must_match_the_side(a2):
    ret, dch = acquire(a2.comms[0], AICPU_TS, 1, HCCS)
    assert acquire(a2.comms[1], AICPU_TS, 0, HCCS)[0] == 0
    # a device (AICPU_TS) channel used from the host
    assert HcommWriteOnThread(a2.t, dch, a2.buf[1][0], a2.src, 64) == R.HCCL_E_NOT_SUPPORT
    # a host (CPU_TS) channel used inside a kernel, with a device thread
    t = a2.device_thread(0)
    codes, ret = on_device(batched(lambda: HcommWriteOnThread(t, a2.ch[0], a2.buf[1][0], a2.src, 64)))
    assert (codes, ret) == (R.HCCL_E_NOT_SUPPORT, 0)


def test_after_the_peer_destroyed_its_communicator_transfers_are_para(a2):
    assert HcclCommDestroy(a2.comms[1]) == 0
    assert HcommWriteOnThread(a2.t, a2.ch[0], a2.buf[1][0], a2.src, 64) == R.HCCL_E_PARA
    assert HcommChannelNotifyRecordOnThread(a2.t, a2.ch[0], 0) == R.HCCL_E_PARA
    assert HcommWriteOnThread(a2.t, a2.ch[1], a2.buf[1][0], a2.src, 64) == R.HCCL_E_NOT_FOUND


# -- channel notifies ------------------------------------------------------------------------------------------
def test_record_sets_the_peers_notify_and_wait_clears_its_own():
    p = Pair(A2, CPU_TS, HCCS)
    t0, s0 = p.host_thread(0)
    t1, s1 = p.host_thread(1)
    src = malloc(64)
    data = write(src, pattern(64))
    assert acl.rt.set_device(1) == 0
    out = malloc(64)
    assert acl.rt.set_device(0) == 0
    # rank 1 waits for DATA, then copies what rank 0 wrote into its HCCL buffer
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], DATA, 0) == 0
    assert HcommLocalCopyOnThread(t1, out, p.buf[1][0], 64) == 0
    assert HcommWriteOnThread(t0, p.ch[0], p.buf[1][0], src, 64) == 0
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], DATA) == 0
    assert acl.rt.synchronize_stream(s1) == 0
    assert acl.rt.synchronize_stream(s0) == 0
    assert (read(out, 64) == data).all()


def test_notify_indices_address_the_peers_set_for_record_and_the_own_set_for_wait():
    p = Pair(A2, CPU_TS, HCCS, notify=(1, 3))
    t0, s0 = p.host_thread(0)
    t1, s1 = p.host_thread(1)
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], 2) == 0          # rank 1's end has 3
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], 3) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(t0, p.ch[0], 1, 0) == R.HCCL_E_PARA      # rank 0's end has 1
    assert HcommChannelNotifyWaitOnThread(t0, p.ch[0], -1, 0) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThreadWithDefaultTimeout(t0, p.ch[0], 1) == R.HCCL_E_PARA
    assert HcommChannelNotifyRecordOnThread(t1, p.ch[1], 1) == R.HCCL_E_PARA
    assert HcommChannelNotifyRecordOnThread(t1, p.ch[1], -1) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], 2, 0) == 0
    assert HcommChannelNotifyRecordOnThread(t1, p.ch[1], 0) == 0
    assert HcommChannelNotifyWaitOnThreadWithDefaultTimeout(t0, p.ch[0], 0) == 0
    assert acl.rt.synchronize_stream(s1) == 0
    assert acl.rt.synchronize_stream(s0) == 0
    assert [t.state for t in pyhcomm.record.tasks()] == ["done"] * 4


def test_channel_with_no_notifies_refuses_every_index():
    p = Pair(A2, CPU_TS, HCCS, notify=(0, 0))
    t0, _ = p.host_thread(0)
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], 0) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(t0, p.ch[0], 0, 0) == R.HCCL_E_PARA


def test_channel_notifies_are_one_bit_two_records_satisfy_one_wait():
    p = Pair(A2, CPU_TS, HCCS)
    t0, s0 = p.host_thread(0)
    t1, s1 = p.host_thread(1)
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], ACK) == 0
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], ACK) == 0
    assert acl.rt.synchronize_stream(s0) == 0
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], ACK, 0) == 0
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], ACK, 0) == 0
    assert acl.rt.synchronize_stream(s1) != 0           # the second wait can never be satisfied
    assert [t.state for t in pyhcomm.record.tasks(kind="ChannelNotifyWait")] == ["done", "failed"]


def test_channel_notifies_count_in_counting_mode():
    """``pyhcomm.set_notify_counting(True)``: notifies created from then on count records; channel
    notifies as well as thread notifies."""
    pyhcomm.set_notify_counting(True)
    p = Pair(A2, CPU_TS, HCCS)
    t0, s0 = p.host_thread(0)
    t1, s1 = p.host_thread(1)
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], ACK) == 0
    assert HcommChannelNotifyRecordOnThread(t0, p.ch[0], ACK) == 0
    assert acl.rt.synchronize_stream(s0) == 0
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], ACK, 0) == 0
    assert HcommChannelNotifyWaitOnThread(t1, p.ch[1], ACK, 0) == 0
    assert acl.rt.synchronize_stream(s1) == 0, "the second record was lost: channel notifies do not count"


# -- product rules of the notify, NBI and fence variants ------------------------------------------------------
def test_write_with_notify_is_not_supported_on_a2(a2):
    peer = a2.buf[1][0]
    assert HcommWriteWithNotifyOnThread(a2.t, a2.ch[0], peer, a2.src, 64, DATA) == R.HCCL_E_NOT_SUPPORT
    assert HcommWriteReduceWithNotifyOnThread(a2.t, a2.ch[0], peer, a2.src, 16, DT.HCOMM_DATA_TYPE_FP32,
                                              OP.HCOMM_REDUCE_SUM, DATA) == R.HCCL_E_NOT_SUPPORT
    assert acl.rt.synchronize_stream(a2.stream) == 0
    assert kinds() == []
    assert (read(peer, 64) == 0).all()


def test_write_with_notify_is_not_supported_on_a3_device_side():
    p = Pair(A3, AICPU_TS, HCCS)
    t = p.device_thread(0)
    src = malloc(64)
    codes, ret = on_device(batched(lambda: HcommWriteWithNotifyOnThread(t, p.ch[0], p.buf[1][0], src, 64, 0)))
    assert (codes, ret) == (R.HCCL_E_NOT_SUPPORT, 0)


def test_nbi_and_threadless_channel_calls_are_not_supported_on_a2(a2):
    peer, ch = a2.buf[1][0], a2.ch[0]
    assert HcommWriteNbi(ch, peer, a2.src, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommWriteNbiOnThread(0, ch, peer, a2.src, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommReadNbi(ch, a2.src, peer, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommReadNbiOnThread(0, ch, a2.src, peer, 64) == R.HCCL_E_NOT_SUPPORT
    assert HcommWriteWithNotifyNbi(ch, peer, a2.src, 64, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommWriteWithNotifyNbiOnThread(0, ch, peer, a2.src, 64, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommChannelNotifyRecord(ch, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommChannelNotifyWait(a2.ch[1], 0, 5) == R.HCCL_E_NOT_SUPPORT
    assert HcommChannelFence(ch) == R.HCCL_E_NOT_SUPPORT
    assert (read(peer, 64) == 0).all()
    # NULL pointers are checked first
    assert HcommWriteNbi(ch, 0, a2.src, 64) == R.HCCL_E_PTR
    assert HcommReadNbi(ch, a2.src, 0, 64) == R.HCCL_E_PTR


def test_fences_on_a2(a2):
    assert HcommChannelFenceOnThread(a2.t, a2.ch[0]) == R.HCCL_E_NOT_SUPPORT        # host side
    assert HcommFenceOnThread(a2.t) == R.HCCL_E_NOT_SUPPORT                          # CPU_TS, not CPU
    assert HcommChannelDrainOnThread(a2.t, a2.ch[0]) == R.HCCL_E_NOT_SUPPORT        # host side
    ret, dch = acquire(a2.comms[0], AICPU_TS, 1, ROCE)
    assert acquire(a2.comms[1], AICPU_TS, 0, ROCE)[0] == 0
    t = a2.device_thread(0)
    codes, ret = on_device(batched(lambda: (HcommChannelFenceOnThread(t, dch), HcommFenceOnThread(t))))
    assert ret == 0
    assert codes == (0, R.HCCL_E_NOT_SUPPORT)     # device path: channel fence is a no-op; global fence host only


# -- Atlas 350: NBI on COMM_ENGINE_CPU RoCE channels -----------------------------------------------------------
@pytest.fixture
def nbi():
    p = Pair(A350, CPU, ROCE)
    p.src = malloc(256)
    p.data = write(p.src, pattern(256, 6))
    return p


def test_nbi_write_then_fence_lands_in_the_peer(nbi):
    peer = nbi.buf[1][0]
    assert HcommWriteNbi(nbi.ch[0], peer + 8, nbi.src, 256) == 0
    assert HcommChannelFence(nbi.ch[0]) == 0
    assert (read(peer + 8, 256) == nbi.data).all()


def test_nbi_on_thread_variants_ignore_the_thread(nbi):
    peer = nbi.buf[1][0]
    assert HcommWriteNbiOnThread(0, nbi.ch[0], peer, nbi.src, 128) == 0
    assert HcommChannelFenceOnThread(0, nbi.ch[0]) == 0
    dst = malloc(128)
    assert HcommReadNbiOnThread(0, nbi.ch[0], dst, peer, 128) == 0
    assert HcommChannelFence(nbi.ch[0]) == 0
    assert (read(dst, 128) == nbi.data[:128]).all()


def test_nbi_read_fetches_the_peer_buffer(nbi):
    peer = nbi.buf[1][0]
    assert acl.rt.set_device(1) == 0
    theirs = write(peer, pattern(100, 8))
    assert acl.rt.set_device(0) == 0
    dst = malloc(100)
    assert HcommReadNbi(nbi.ch[0], dst, peer, 100) == 0
    assert HcommChannelFence(nbi.ch[0]) == 0
    assert (read(dst, 100) == theirs).all()


def test_nbi_write_with_notify_sets_the_peers_notify(nbi):
    peer = nbi.buf[1][0]
    assert HcommWriteWithNotifyNbi(nbi.ch[0], peer, nbi.src, 256, DATA) == 0
    assert HcommChannelNotifyWait(nbi.ch[1], DATA, 5) == 0
    assert (read(peer, 256) == nbi.data).all()
    assert HcommWriteWithNotifyNbiOnThread(0, nbi.ch[0], peer, nbi.src, 16, 2) == R.HCCL_E_PARA   # 2 notifies


def test_threadless_channel_notifies_on_atlas_350(nbi):
    assert HcommChannelNotifyRecord(nbi.ch[0], ACK) == 0
    assert HcommChannelNotifyWait(nbi.ch[1], ACK, 5) == 0
    assert HcommChannelNotifyRecord(nbi.ch[0], 2) == R.HCCL_E_PARA
    assert HcommChannelNotifyWait(nbi.ch[1], 2, 5) == R.HCCL_E_PARA
    assert HcommChannelNotifyWait(nbi.ch[1], ACK, 0) == R.HCCL_E_PARA    # host RoCE path needs timeOut > 0


def test_threadless_wait_for_a_record_nobody_issues_fails(nbi):
    """The only host thread blocks in HcommChannelNotifyWait and nobody can ever record the notify:
    the wait must fail (hang detection), not return success with the notify unset."""
    assert HcommChannelNotifyWait(nbi.ch[1], ACK, 30) != R.HCCL_SUCCESS
    assert HcommChannelNotifyRecord(nbi.ch[0], ACK) == 0             # a later record still works
    assert HcommChannelNotifyWait(nbi.ch[1], ACK, 30) == 0


def test_on_thread_wait_on_the_host_cpu_roce_path_needs_a_timeout(nbi):
    """hcomm-api §2.7: the wait's timeOut is seconds, 0 = forever, but the host CPU RoCE path
    requires timeOut > 0 (as HcommChannelNotifyWait does)."""
    ret, (t,) = HcclThreadAcquire(nbi.comms[0], CPU, 1, 0)
    assert ret == 0
    assert HcommChannelNotifyWaitOnThread(t, nbi.ch[0], ACK, 0) == R.HCCL_E_PARA
    assert HcommChannelNotifyWaitOnThread(t, nbi.ch[0], ACK, 5) == 0


def test_nbi_argument_and_channel_rules(nbi):
    peer = nbi.buf[1][0]
    assert HcommWriteNbi(nbi.ch[0], peer, nbi.src, 0) == R.HCCL_E_PARA
    assert HcommWriteNbi(nbi.ch[0], peer + (400 << 20), nbi.src, 16) == R.HCCL_E_PARA
    assert HcommWriteNbi(0, peer, nbi.src, 16) == R.HCCL_E_PTR
    # an AICPU_TS UB channel is not a host CPU RoCE channel
    ret, ub = acquire(nbi.comms[0], AICPU_TS, 1, UB_CTP)
    assert acquire(nbi.comms[1], AICPU_TS, 0, UB_CTP)[0] == 0
    assert HcommWriteNbi(ub, peer, nbi.src, 16) == R.HCCL_E_NOT_SUPPORT
    assert HcommChannelFence(ub) == R.HCCL_E_NOT_SUPPORT
    # inside a kernel the NBI family is not supported
    codes, ret = on_device(lambda: (HcommWriteNbi(nbi.ch[0], peer, nbi.src, 16), HcommChannelFence(nbi.ch[0])))
    assert ret == 0 and codes == (R.HCCL_E_NOT_SUPPORT, R.HCCL_E_NOT_SUPPORT)
    assert (read(peer, 16) == 0).all()


def test_host_fence_on_a_cpu_thread_of_atlas_350(nbi):
    ret, (t,) = HcclThreadAcquire(nbi.comms[0], CPU, 1, 0)
    assert ret == 0
    assert HcommFenceOnThread(t) == 0


# -- Atlas 350 device side: WithNotify, fences, drain, batch transfer ------------------------------------------
@pytest.fixture
def ub():
    p = Pair(A350, AICPU_TS, UB_CTP)
    p.t = [p.device_thread(0), p.device_thread(1)]
    p.src = malloc(512)
    p.data = write(p.src, pattern(512, 2))
    assert acl.rt.set_device(1) == 0
    p.out = malloc(512)
    assert acl.rt.set_device(0) == 0
    return p


def test_write_with_notify_in_a_kernel_writes_then_sets_the_peers_notify(ub):
    peer = ub.buf[1][0]
    # rank 1 first: its kernel queues "wait DATA, copy out" on its AICPU_TS thread
    codes1, _ = on_device(lambda: (HcommChannelNotifyWaitOnThread(ub.t[1], ub.ch[1], DATA, 0),
                                   HcommLocalCopyOnThread(ub.t[1], ub.out, peer, 512)), device=1, sync=False)
    codes0, ret0 = on_device(lambda: HcommWriteWithNotifyOnThread(ub.t[0], ub.ch[0], peer, ub.src, 512, DATA))
    assert (codes0, ret0) == (0, 0)
    assert acl.rt.set_device(1) == 0
    assert acl.rt.synchronize_device() == 0
    assert codes1 == [(0, 0)]
    assert (read(ub.out, 512) == ub.data).all()
    assert [t.kind for t in pyhcomm.record.tasks() if t.kind != "KernelLaunch"] == \
        ["ChannelNotifyWait", "LocalCopy", "WriteWithNotify"]


def test_write_reduce_with_notify_in_a_kernel(ub):
    peer = ub.buf[1][0]
    a = np.arange(64, dtype=np.float32)
    b = np.full(64, 0.5, dtype=np.float32)
    assert acl.rt.set_device(1) == 0
    write(peer, a.view(np.uint8))
    assert acl.rt.set_device(0) == 0
    write(ub.src, b.view(np.uint8))
    codes, ret = on_device(lambda: (HcommWriteReduceWithNotifyOnThread(
        ub.t[0], ub.ch[0], peer, ub.src, 64, DT.HCOMM_DATA_TYPE_FP32, OP.HCOMM_REDUCE_SUM, ACK),
        HcommWriteWithNotifyOnThread(ub.t[0], ub.ch[0], peer, ub.src, 4, 2)))
    assert ret == 0 and codes == (0, R.HCCL_E_PARA)              # the peer's end has 2 notifies
    codes, ret = on_device(lambda: HcommChannelNotifyWaitOnThread(ub.t[1], ub.ch[1], ACK, 0), device=1)
    assert (codes, ret) == (0, 0)
    np.testing.assert_array_equal(read(peer, 256).view(np.float32), a + b)


@pytest.mark.parametrize("dt,np_dtype,op,fn", [
    (DT.HCOMM_DATA_TYPE_UINT8, np.uint8, OP.HCOMM_REDUCE_SUM, np.add),
    (DT.HCOMM_DATA_TYPE_UINT16, np.uint16, OP.HCOMM_REDUCE_MAX, np.maximum),
    (DT.HCOMM_DATA_TYPE_FP32, np.float32, OP.HCOMM_REDUCE_MIN, np.minimum),
])
def test_atlas_350_reduce_transfers_in_a_kernel(ub, dt, np_dtype, op, fn):
    """Atlas 350 adds the unsigned types (hcomm-api §2.2)."""
    n = 64
    rng = np.random.default_rng(3)
    a, b, c = (rng.integers(0, 100, n).astype(np_dtype) for _ in range(3))
    peer = ub.buf[1][0]
    assert acl.rt.set_device(1) == 0
    write(peer, a.view(np.uint8))
    write(peer + 4096, c.view(np.uint8))
    assert acl.rt.set_device(0) == 0
    write(ub.src, b.view(np.uint8))
    dst = malloc(b.nbytes)
    write(dst, b.view(np.uint8))
    codes, ret = on_device(lambda: (HcommWriteReduceOnThread(ub.t[0], ub.ch[0], peer, ub.src, n, dt, op),
                                    HcommReadReduceOnThread(ub.t[0], ub.ch[0], dst, peer + 4096, n, dt, op)))
    assert (codes, ret) == ((0, 0), 0)
    np.testing.assert_array_equal(read(peer, a.nbytes).view(np_dtype), fn(a, b).astype(np_dtype))
    np.testing.assert_array_equal(read(dst, b.nbytes).view(np_dtype), fn(b, c).astype(np_dtype))


def test_write_with_notify_from_the_host_on_atlas_350_is_not_supported(ub):
    ret, (ht,) = HcclThreadAcquire(ub.comms[0], CPU_TS, 1, 0)
    assert HcommWriteWithNotifyOnThread(ht, ub.ch[0], ub.buf[1][0], ub.src, 64, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommWriteWithNotifyOnThread(ub.t[0], ub.ch[0], ub.buf[1][0], ub.src, 64, 0) == R.HCCL_E_NOT_SUPPORT


def test_atlas_350_write_needs_a_ub_data_protocol():
    p = Pair(A350, AICPU_TS, ROCE)
    t = p.device_thread(0)
    src = malloc(64)
    codes, ret = on_device(lambda: (HcommWriteOnThread(t, p.ch[0], p.buf[1][0], src, 64),
                                    HcommReadOnThread(t, p.ch[0], src, p.buf[1][0], 64)))
    assert ret == 0 and codes == (R.HCCL_E_NOT_SUPPORT, R.HCCL_E_NOT_SUPPORT)


def test_drain_in_a_kernel_waits_for_the_threads_transfers(ub):
    peer = ub.buf[1][0]
    seen = []

    def kernel():
        codes = (HcommWriteOnThread(ub.t[0], ub.ch[0], peer, ub.src, 512),
                 HcommChannelFenceOnThread(ub.t[0], ub.ch[0]),
                 HcommChannelDrainOnThread(ub.t[0], ub.ch[0]))
        seen.append(read(peer, 512))          # after the drain, inside the kernel
        return codes

    codes, ret = on_device(kernel)
    assert (codes, ret) == ((0, 0, 0), 0)
    assert (seen[0] == ub.data).all()


def test_drain_on_the_kernels_own_stream_is_para(ub):
    def kernel():
        from pyhcomm.sim.kernel import current_kernel
        ret, t = HcclThreadAcquireWithStream(ub.comms[0], CPU_TS, current_kernel().stream.handle, 0)
        ret, (dt,) = HcclThreadExportToCommEngine(ub.comms[0], 1, [t], AICPU_TS)
        return HcommChannelDrainOnThread(dt, ub.ch[0])

    codes, ret = on_device(kernel)
    assert (codes, ret) == (R.HCCL_E_PARA, 0)


def test_device_side_call_on_an_unconnected_channel_is_para():
    comms = world(A350)
    ret, ch = acquire(comms[0], AICPU_TS, 1, UB_CTP)      # rank 1 never acquires its end
    ret, (t,) = HcclThreadAcquire(comms[0], AICPU_TS, 1, 0)
    src = malloc(64)
    ret, buf, _ = HcclGetHcclBuffer(comms[1])
    codes, ret = on_device(lambda: (HcommWriteOnThread(t, ch, buf, src, 64),
                                    HcommChannelNotifyRecordOnThread(t, ch, 0)))
    assert ret == 0 and codes == (R.HCCL_E_PARA, R.HCCL_E_PARA)


def _w(dst, src, n):
    return HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE, dst=dst, src=src, len=n)


def _r(dst, src, n):
    return HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_READ, dst=dst, src=src, len=n)


def test_batch_transfer_desc_is_the_c_union():
    """``transferInfoRaws`` holds the union at its C offsets, so a descriptor packed byte by byte
    (as with pyhccl) reads back through the named members, and the other way round."""
    d = HcommBatchTransferDesc()
    assert d.transType == T.HCOMM_TRANSFER_TYPE_WRITE and d.transferInfoRaws == bytes(56)   # pyhccl's default
    d.transferInfoRaws = struct.pack("<QQQ", 64, 0x1000, 0x2000)
    assert (d.len, d.dst, d.src) == (64, 0x1000, 0x2000)
    r = HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE_WITH_NOTIFY, count=8, dst=1, src=2,
                               reduceOp=3, dataType=4, notifyIdx=5)
    assert r.transferInfoRaws[:36] == struct.pack("<QQQIII", 8, 1, 2, 3, 4, 5)
    n = HcommBatchTransferDesc(notifyIdx=7, transType=T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD)   # any order
    assert n.transferInfoRaws[:4] == struct.pack("<I", 7)
    w = HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE_WITH_NOTIFY, notifyIdx=1)
    assert w.transferInfoRaws[24:28] == struct.pack("<I", 1)


def test_batch_transfer_on_atlas_350_issues_every_kind_in_order(ub):
    peer = ub.buf[1][0]
    a = np.full(16, 2, dtype=np.int32)
    assert acl.rt.set_device(1) == 0
    write(peer + 1024, a.view(np.uint8))
    assert acl.rt.set_device(0) == 0
    back = malloc(64)
    descs = [
        _w(peer, ub.src, 256),
        _r(back, peer, 64),                                       # reads what the first write put there
        HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE, dst=peer + 1024, src=ub.src,
                               count=16, dataType=DT.HCOMM_DATA_TYPE_INT32, reduceOp=OP.HCOMM_REDUCE_MAX),
        HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE_WITH_NOTIFY, dst=peer + 2048,
                               src=ub.src, len=32, notifyIdx=DATA),
        HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD, notifyIdx=ACK),
    ]
    codes, ret = on_device(lambda: HcommBatchTransferOnThread(ub.t[0], ub.ch[0], descs))
    assert (codes, ret) == (0, 0)
    assert [t.kind for t in pyhcomm.record.tasks() if t.kind != "KernelLaunch"] == \
        ["Write", "Read", "WriteReduce", "WriteWithNotify", "ChannelNotifyRecord"]
    assert (read(peer, 256) == ub.data[:256]).all()
    assert (read(back, 64) == ub.data[:64]).all()
    expect = np.maximum(a, ub.data[:64].view(np.int32))
    np.testing.assert_array_equal(read(peer + 1024, 64).view(np.int32), expect)
    codes, ret = on_device(lambda: (HcommChannelNotifyWaitOnThread(ub.t[1], ub.ch[1], DATA, 0),
                                    HcommChannelNotifyWaitOnThread(ub.t[1], ub.ch[1], ACK, 0)), device=1)
    assert (codes, ret) == ((0, 0), 0)


def test_batch_transfer_argument_errors(ub):
    peer = ub.buf[1][0]
    good = [_w(peer, ub.src, 64)]
    assert HcommBatchTransferOnThread(ub.t[0], ub.ch[0], None) == R.HCCL_E_PTR
    assert HcommBatchTransferOnThread(ub.t[0], ub.ch[0], []) == R.HCCL_E_PARA
    assert HcommBatchTransferOnThread(ub.t[0], ub.ch[0], good) == R.HCCL_E_NOT_SUPPORT   # host
    invalid = HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_INVALID)
    codes, ret = on_device(lambda: (HcommBatchTransferOnThread(ub.t[0], ub.ch[0], None),
                                    HcommBatchTransferOnThread(ub.t[0], ub.ch[0], []),
                                    HcommBatchTransferOnThread(ub.t[0], ub.ch[0], [invalid])))
    assert ret == 0 and codes == (R.HCCL_E_PTR, R.HCCL_E_PARA, R.HCCL_E_PARA)
    assert kinds() == ["KernelLaunch"]


@pytest.mark.parametrize("bad", [
    lambda p: _w(p.buf[1][0] + p.buf[1][1] - 8, p.src, 64),     # past the peer's HCCL buffer
    lambda p: _r(p.out, p.buf[1][0], 64),                        # local dst on the peer's device
    lambda p: _w(p.buf[1][0], 0, 64),                            # NULL src
    lambda p: HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD, notifyIdx=9),
    lambda p: HcommBatchTransferDesc(transType=99),
], ids=["remote-oob", "local-not-mine", "null", "notify-idx", "bad-type"])
def test_a_bad_descriptor_in_the_middle_leaves_nothing_enqueued(ub, bad):
    peer = ub.buf[1][0]
    descs = [_w(peer, ub.src, 64), bad(ub), _w(peer + 64, ub.src, 64)]
    codes, ret = on_device(lambda: HcommBatchTransferOnThread(ub.t[0], ub.ch[0], descs))
    assert ret == 0
    assert codes in (R.HCCL_E_PARA, R.HCCL_E_PTR)
    assert kinds() == ["KernelLaunch"]
    assert (read(peer, 128) == 0).all()


def test_batch_transfer_on_a2_needs_roce_and_write_or_read():
    comms = world(A2)
    chans = {}
    for proto in (HCCS, ROCE):
        ret, chans[proto] = acquire(comms[0], AICPU_TS, 1, proto)
        assert acquire(comms[1], AICPU_TS, 0, proto)[0] == 0
    ret, (t,) = HcclThreadAcquire(comms[0], AICPU_TS, 1, 0)
    src = malloc(128)
    data = write(src, pattern(128, 5))
    dst = malloc(64)
    peer = HcclGetHcclBuffer(comms[1])[1]
    reduce = HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_WRITE_REDUCE, dst=peer, src=src, count=4,
                                    dataType=DT.HCOMM_DATA_TYPE_FP32, reduceOp=OP.HCOMM_REDUCE_SUM)
    record = HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD, notifyIdx=0)

    def kernel():
        return (HcommBatchTransferOnThread(t, chans[HCCS], [_w(peer, src, 128)]),
                HcommBatchTransferOnThread(t, chans[ROCE], [_w(peer, src, 128), reduce]),
                HcommBatchTransferOnThread(t, chans[ROCE], [record]),
                HcommBatchTransferOnThread(t, chans[ROCE], [_w(peer, src, 128), _r(dst, peer, 64)]))

    codes, ret = on_device(batched(kernel))
    assert ret == 0
    assert codes == (R.HCCL_E_NOT_SUPPORT, R.HCCL_E_NOT_SUPPORT, R.HCCL_E_NOT_SUPPORT, 0)
    assert [t.kind for t in pyhcomm.record.tasks() if t.kind != "KernelLaunch"] == ["Write", "Read"]
    assert (read(peer, 128) == data).all() and (read(dst, 64) == data[:64]).all()


def test_a3_device_side_transfers_must_be_batched():
    p = Pair(A3, AICPU_TS, ROCE)
    t = p.device_thread(0)
    src = malloc(64)
    data = write(src, pattern(64, 12))
    codes, ret = on_device(lambda: HcommWriteOnThread(t, p.ch[0], p.buf[1][0], src, 64))
    assert (codes, ret) == (R.HCCL_E_NOT_SUPPORT, 0)
    assert kinds() == ["KernelLaunch"]
    codes, ret = on_device(batched(lambda: HcommWriteOnThread(t, p.ch[0], p.buf[1][0], src, 64)))
    assert (codes, ret) == (0, 0)
    assert (read(p.buf[1][0], 64) == data).all()


# -- two ranks exchanging with ACK / DATA handshakes (S2-like) ---------------------------------------------
ROUNDS, CHUNK = 3, 64 << 10


def _round_data(rank, r):
    return pattern(CHUNK, seed=10 * rank + r)


def _exchange_host(comm):
    """A2 host side: each round, stage my chunk in my HCCL buffer, tell the peer (ACK), wait for the
    peer's ACK, read the peer's chunk, tell the peer I am done (DATA), wait for its DATA."""
    me, peer = comm.rank, 1 - comm.rank
    ret, ch = acquire(comm.handle, CPU_TS, peer, HCCS)
    assert ret == 0
    ret, remote, _ = HcclChannelGetHcclBuffer(comm.handle, ch)
    ret2, local, _ = HcclGetHcclBuffer(comm.handle)
    assert ret == ret2 == 0
    stream, ret = acl.rt.create_stream()
    ret, t = HcclThreadAcquireWithStream(comm.handle, CPU_TS, stream, 1)
    assert ret == 0
    ins = [malloc(CHUNK) for _ in range(ROUNDS)]
    outs = [malloc(CHUNK) for _ in range(ROUNDS)]
    for r in range(ROUNDS):
        write(ins[r], _round_data(me, r))
    for r in range(ROUNDS):                     # everything is enqueued before anything runs
        assert HcommLocalCopyOnThread(t, local, ins[r], CHUNK) == 0
        assert HcommChannelNotifyRecordOnThread(t, ch, ACK) == 0
        assert HcommChannelNotifyWaitOnThread(t, ch, ACK, WAIT) == 0
        assert HcommReadOnThread(t, ch, outs[r], remote, CHUNK) == 0
        assert HcommChannelNotifyRecordOnThread(t, ch, DATA) == 0
        assert HcommChannelNotifyWaitOnThread(t, ch, DATA, WAIT) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    return [read(o, CHUNK) for o in outs]


def test_two_ranks_exchange_with_ack_data_handshakes_a2_host():
    results = pyhcomm.launch(_exchange_host, 2, product=A2, timeout=60)
    for me in (0, 1):
        for r in range(ROUNDS):
            assert (results[me][r] == _round_data(1 - me, r)).all(), (me, r)


def _s2_device(comm, batch_transfer):
    """Atlas 350 device side, as EX04: the channel from the rank graph's UB_CTP link; the host
    records the AI CPU thread's notify, launches the kernel and waits for the kernel's record; the
    kernel, in batch mode, sends (rank 0: stage + ACK, wait DATA) or receives (rank 1: wait ACK,
    read, DATA)."""
    me, peer = comm.rank, 1 - comm.rank
    h = comm.handle
    ret, links = HcclRankGraphGetLinks(h, 0, me, peer)
    (link,) = [lk for lk in links if lk.linkAttr.linkProtocol == pyhcomm.topology.COMM_PROTOCOL_UB_CTP]
    d = desc(peer, link.linkAttr.linkProtocol)
    d.localEndpoint, d.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
    ret, (ch,) = HcclChannelAcquire(h, AICPU_TS, [d])
    assert ret == 0
    ret, remote, _ = HcclChannelGetHcclBuffer(h, ch)
    ret2, local, _ = HcclGetHcclBuffer(h)
    assert ret == ret2 == 0
    stream, ret = acl.rt.create_stream()
    ret, host_t = HcclThreadAcquireWithStream(h, CPU_TS, stream, 1)
    ret, (host_on_aicpu,) = HcclThreadExportToCommEngine(h, 1, [host_t], AICPU_TS)
    ret, (aicpu_t,) = HcclThreadAcquire(h, AICPU_TS, 1, 1)
    ret, (aicpu_on_host,) = HcclThreadExportToCommEngine(h, 1, [aicpu_t], CPU_TS)
    assert ret == 0
    size = 32 << 10
    buf = malloc(size)
    sent = write(buf, pattern(size, 40 + me)) if me == 0 else None
    codes = []

    def kernel():
        codes.append(HcommBatchModeStart("s2"))
        codes.append(HcommThreadNotifyWaitOnThread(aicpu_t, 0, WAIT))
        if me == 0:
            codes.append(HcommLocalCopyOnThread(aicpu_t, local, buf, size))
            codes.append(HcommChannelNotifyRecordOnThread(aicpu_t, ch, ACK))
            codes.append(HcommChannelNotifyWaitOnThread(aicpu_t, ch, DATA, WAIT))
        else:
            codes.append(HcommChannelNotifyWaitOnThread(aicpu_t, ch, ACK, WAIT))
            if batch_transfer:
                half = size // 2
                descs = [_r(buf, remote, half), _r(buf + half, remote + half, half),
                         HcommBatchTransferDesc(transType=T.HCOMM_TRANSFER_TYPE_NOTIFY_RECORD, notifyIdx=DATA)]
                codes.append(HcommBatchTransferOnThread(aicpu_t, ch, descs))
            else:
                codes.append(HcommReadOnThread(aicpu_t, ch, buf, remote, size))
                codes.append(HcommChannelNotifyRecordOnThread(aicpu_t, ch, DATA))
        codes.append(HcommThreadNotifyRecordOnThread(aicpu_t, host_on_aicpu, 0))
        codes.append(HcommBatchModeEnd("s2"))

    assert HcommThreadNotifyRecordOnThread(host_t, aicpu_on_host, 0) == 0
    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert HcommThreadNotifyWaitOnThread(host_t, 0, WAIT) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert codes and all(c == 0 for c in codes), codes
    return sent if me == 0 else read(buf, size)


@pytest.mark.parametrize("batch_transfer", [False, True], ids=["read", "batch-transfer"])
def test_two_ranks_s2_on_atlas_350_device_side(batch_transfer):
    sent, got = pyhcomm.launch(_s2_device, 2, batch_transfer, product=A350, timeout=60)
    assert (got == sent).all()


def _nbi_exchange(comm):
    """Atlas 350 host CPU RoCE: write with NBI, fence, then tell the peer with a thread-less record."""
    me, peer = comm.rank, 1 - comm.rank
    ret, ch = acquire(comm.handle, CPU, peer, ROCE)
    ret, remote, _ = HcclChannelGetHcclBuffer(comm.handle, ch)
    ret2, local, _ = HcclGetHcclBuffer(comm.handle)
    assert ret == ret2 == 0
    src = malloc(4096)
    write(src, pattern(4096, 70 + me))
    assert HcommWriteNbi(ch, remote + 4096 * me, src, 4096) == 0
    assert HcommChannelFence(ch) == 0
    assert HcommChannelNotifyRecord(ch, DATA) == 0
    assert HcommChannelNotifyWait(ch, DATA, 60) == 0
    return read(local + 4096 * peer, 4096)


def test_two_ranks_exchange_with_nbi_on_atlas_350_host():
    got = pyhcomm.launch(_nbi_exchange, 2, product=A350, timeout=60)
    for me in (0, 1):
        assert (got[me] == pattern(4096, 70 + (1 - me))).all()
