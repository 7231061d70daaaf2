"""HCOMM channels made on endpoints, without a communicator: pairing, status, bytes moved by
one-sided writes into the peer's registered memory, channel notifies, destroy."""
import logging

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

from hcomm_testutil import malloc, pattern, read, write

E = pyhcomm.CommEngine
ROCE = 2                                            # index of the RoCE endpoint among an A2 device's three
READY, CONNECTING, FAILED = (pyhcomm.HCOMM_CHANNEL_STATUS_READY, pyhcomm.HCOMM_CHANNEL_STATUS_CONNECTING,
                             pyhcomm.HCOMM_CHANNEL_STATUS_FAILED_INTERNAL)


def endpoint(dev):
    assert acl.rt.set_device(dev) == 0
    descs = pyhcomm.HcommEndpointGetDescs(dev, 3)[1]
    return pyhcomm.HcommEndpointCreate(descs[ROCE])[1], descs[ROCE]


def channel_desc(remote, mems=(), name="ring", notify=2, **fields):
    d = pyhcomm.HcommChannelDesc()
    assert pyhcomm.HcommChannelDescInit(d) == 0
    d.remoteEndpoint, d.notifyNum, d.channelName = remote, notify, name
    d.memHandles, d.memHandleNum = list(mems), len(mems)
    d.role = pyhcomm.HCOMM_SOCKET_ROLE_CLIENT
    for k, v in fields.items():
        setattr(d, k, v)
    return d


def test_desc_init_defaults():
    d = pyhcomm.HcommChannelDesc()
    assert d.raws == bytes(128) and d.role == pyhcomm.HCOMM_SOCKET_ROLE_CLIENT        # pyhccl's zeros
    assert pyhcomm.HcommChannelDescInit(d) == 0
    assert (d.header.version, d.header.magicWord) == (4, 0x0FCF0F0F)
    assert (d.role, d.qos, d.notifyNum, d.raws) == (-1, 4, 0, b"\xff" * 128)
    assert d.remoteEndpoint.protocol == -1
    assert pyhcomm.HcommChannelDescInit(None) == R.HCCL_E_PTR


def test_write_into_the_peers_registered_memory_and_notify():
    assert acl.init() == 0
    ep0, d0 = endpoint(0)
    ep1, d1 = endpoint(1)
    dst = malloc(1024, fill=0)                                   # device 1's, registered on its endpoint
    ret, mem1 = pyhcomm.HcommMemReg(ep1, "inbox", pyhcomm.CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, dst, 1024))
    assert ret == 0
    ret, (c1,) = pyhcomm.HcommChannelCreate(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d0, [mem1])])
    assert ret == 0
    assert pyhcomm.HcommChannelGetStatus([c1]) == (0, [CONNECTING])
    assert acl.rt.set_device(0) == 0
    ret, (c0,) = pyhcomm.HcommChannelCreate(ep0, E.COMM_ENGINE_CPU_TS, [channel_desc(d1)])
    assert ret == 0
    assert pyhcomm.HcommChannelGetStatus([c0, c1]) == (0, [READY, READY])
    src = malloc(1024)
    data = write(src, pattern(1024))
    _, (t0,) = pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, [1])
    _, stream0 = pyhcomm.HcommThreadResGetInfo(t0, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
    assert pyhcomm.HcommWriteOnThread(t0, c0, dst + 512, src, 512) == 0
    assert pyhcomm.HcommChannelNotifyRecordOnThread(t0, c0, 1) == 0
    assert pyhcomm.HcommWriteOnThread(t0, c0, dst + 1000, src, 64) == R.HCCL_E_PARA      # past the registration
    assert acl.rt.synchronize_stream(stream0) == 0
    assert acl.rt.set_device(1) == 0
    assert np.array_equal(read(dst, 1024)[512:], data[:512]) and not read(dst, 512).any()
    _, (t1,) = pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, [0])
    _, stream1 = pyhcomm.HcommThreadResGetInfo(t1, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
    assert pyhcomm.HcommChannelNotifyWaitOnThread(t1, c1, 1, 10) == 0                  # recorded by device 0
    assert acl.rt.synchronize_stream(stream1) == 0
    assert pyhcomm.HcommChannelDestroy([c0]) == 0
    assert pyhcomm.HcommChannelGetStatus([c1]) == (0, [FAILED])


def test_create_errors(caplog):
    assert acl.init() == 0
    ep0, d0 = endpoint(0)
    ep1, d1 = endpoint(1)
    create = pyhcomm.HcommChannelCreate
    assert create(ep1, E.COMM_ENGINE_CPU_TS, [pyhcomm.HcommChannelDesc()]) == (R.HCCL_E_PARA, [])   # not initialised
    assert create(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d1)]) == (R.HCCL_E_PARA, [])          # its own device
    hccs0 = pyhcomm.HcommEndpointGetDescs(0, 3)[1][0]
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert create(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(hccs0)]) == (R.HCCL_E_PARA, [])    # HCCS vs RoCE
    assert "speaks COMM_PROTOCOL_HCCS" in caplog.text
    assert create(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d0, notify=65)]) == (R.HCCL_E_PARA, [])
    assert create(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d0, mems=[0x1234])]) == (R.HCCL_E_PARA, [])
    assert create(ep1, E.COMM_ENGINE_AIV, [channel_desc(d0)]) == (R.HCCL_E_NOT_SUPPORT, [])        # A2
    assert create(ep1, E.COMM_ENGINE_CPU_TS, []) == (R.HCCL_E_PARA, [])
    assert create(0, E.COMM_ENGINE_CPU_TS, [channel_desc(d0)]) == (R.HCCL_E_PTR, [])
    _, comms = pyhcomm.HcclCommInitAll([2, 3])
    d = pyhcomm.HcclChannelDesc()
    pyhcomm.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1, pyhcomm.COMM_PROTOCOL_HCCS, 1
    _, (acquired,) = pyhcomm.HcclChannelAcquire(comms[0], E.COMM_ENGINE_CPU_TS, [d])
    assert pyhcomm.HcommChannelGetStatus([acquired]) == (R.HCCL_E_PARA, [])        # a communicator's channel


def test_channels_pair_by_name():
    assert acl.init() == 0
    ep0, d0 = endpoint(0)
    ep1, d1 = endpoint(1)
    _, (a1,) = pyhcomm.HcommChannelCreate(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d0, name="a")])
    assert acl.rt.set_device(0) == 0
    name = np.frombuffer(b"b\0", dtype=np.uint8).copy()                 # a C string through a host pointer
    _, (b0,) = pyhcomm.HcommChannelCreate(ep0, E.COMM_ENGINE_CPU_TS, [channel_desc(d1, name=acl.util.numpy_to_ptr(name))])
    assert pyhcomm.HcommChannelGetStatus([a1, b0]) == (0, [CONNECTING, CONNECTING])
    _, (a0,) = pyhcomm.HcommChannelCreate(ep0, E.COMM_ENGINE_CPU_TS, [channel_desc(d1, name="a")])
    assert pyhcomm.HcommChannelGetStatus([a1, a0, b0]) == (0, [READY, READY, CONNECTING])
    assert pyhcomm.HcommEndpointDestroy(ep0) == 0                        # its channels close with it
    assert pyhcomm.HcommChannelGetStatus([a1]) == (0, [FAILED])


def test_channel_config_of_hcomm():
    ret, cfg = pyhcomm.HcommChannelConfigCreate()
    assert ret == 0
    assert pyhcomm.HcommChannelConfigSetInt(cfg, pyhcomm.HCOMM_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE, 1) == 0
    assert pyhcomm.HcommChannelConfigSetInt(cfg, pyhcomm.HCOMM_CHANNEL_CONFIG_TYPE_INVALID, 1) == R.HCCL_E_PARA
    _, hccl_cfg = pyhcomm.HcclChannelConfigCreate()
    assert pyhcomm.HcommChannelConfigDestroy(hccl_cfg) == R.HCCL_E_PARA             # an HCCL config
    assert acl.init() == 0
    ep0, d0 = endpoint(0)
    ep1, _d1 = endpoint(1)
    assert pyhcomm.HcommChannelCreateWithConfig(ep1, E.COMM_ENGINE_CPU_TS, [channel_desc(d0)], cfg) == \
        (R.HCCL_E_NOT_SUPPORT, [])                                   # a shared queue is an AIV feature
    assert pyhcomm.HcommChannelConfigDestroy(cfg) == 0
