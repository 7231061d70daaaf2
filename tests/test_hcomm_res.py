"""Threads with configs, dedicated threads, and HCOMM resources without a communicator: threads
of HcommThreadAlloc, endpoints, registered / exported / imported memory, HcommMemAlloc."""
import logging

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm import HcclResult as R

from hcomm_testutil import host_setup, malloc, pattern, read, write

E = pyhcomm.CommEngine


def configs(*counts, init=True):
    out = []
    for n in counts:
        cfg = pyhcomm.ThreadConfig()
        if init:
            assert pyhcomm.ThreadConfigInit(cfg) == 0
        cfg.notifyNumPerThread = n
        out.append(cfg)
    return out


def test_thread_acquire_with_config_gives_each_thread_its_notifies():
    comm, _stream, _thread = host_setup()
    ret, threads = pyhcomm.HcclThreadAcquireWithConfig(comm, E.COMM_ENGINE_CPU, 3, pyhcomm.THREAD_TYPE_TS,
                                                       configs(5, 0, 100))
    assert ret == 0 and len(threads) == 3
    objs = [pyhcomm.current_sim().handles.threads.get(t) for t in threads]
    assert [len(t.notifies) for t in objs] == [5, 0, 100]            # > 64 is allowed with a config
    assert {t.engine for t in objs} == {E.COMM_ENGINE_CPU_TS}
    acquire = pyhcomm.HcclThreadAcquireWithConfig
    assert acquire(comm, E.COMM_ENGINE_CPU, 1, pyhcomm.THREAD_TYPE_TS, configs(1, init=False)) == (R.HCCL_E_PARA, [])
    assert acquire(comm, E.COMM_ENGINE_CPU, 2, pyhcomm.THREAD_TYPE_TS, configs(1)) == (R.HCCL_E_PARA, [])
    assert acquire(comm, E.COMM_ENGINE_AIV, 1, pyhcomm.THREAD_TYPE_TS, configs(1)) == (R.HCCL_E_PARA, [])
    assert acquire(comm, E.COMM_ENGINE_CPU, 1, pyhcomm.THREAD_TYPE_CPU, configs(1)) == (R.HCCL_E_NOT_SUPPORT, [])  # A2
    assert acquire(comm, E.COMM_ENGINE_CPU, 1, pyhcomm.THREAD_TYPE_TS, None) == (R.HCCL_E_PTR, [])


def test_dedicated_thread_is_made_once():
    comm, _stream, _thread = host_setup()
    ret, t = pyhcomm.HcclDedicatedThreadAcquire(comm, pyhcomm.HCCL_DED_THREAD_TYPE_AICPU_LAUNCH, 2)
    assert ret == 0
    assert pyhcomm.HcclDedicatedThreadAcquire(comm, pyhcomm.HCCL_DED_THREAD_TYPE_AICPU_LAUNCH, 7) == (0, t)
    other = pyhcomm.HcclDedicatedThreadAcquire(comm, pyhcomm.HCCL_DED_THREAD_TYPE_AICPU_LAUNCH_GE, 1)[1]
    assert other not in (0, t)
    assert pyhcomm.current_sim().handles.threads.get(t).engine == E.COMM_ENGINE_AICPU_TS
    assert pyhcomm.HcclDedicatedThreadAcquire(comm, pyhcomm.HCCL_DED_THREAD_TYPE_INVALID, 1) == (R.HCCL_E_PARA, 0)


def test_alloced_threads_copy_bytes_and_are_freed():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ret, (t, u) = pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, [1, 0])
    assert ret == 0
    ret, stream = pyhcomm.HcommThreadResGetInfo(t, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
    assert ret == 0 and stream
    src, dst = malloc(256), malloc(256, fill=0)
    data = write(src, pattern(256))
    assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 256) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert np.array_equal(read(dst, 256), data)
    assert pyhcomm.HcommThreadResGetInfo(t, pyhcomm.THREAD_RES_TYPE_STREAM, 4)[0] == R.HCCL_E_PARA
    assert pyhcomm.HcommThreadFree([t, u]) == 0
    assert pyhcomm.HcommLocalCopyOnThread(t, dst, src, 256) == R.HCCL_E_NOT_FOUND
    assert pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, [65]) == (R.HCCL_E_PARA, [])
    assert pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, []) == (R.HCCL_E_PARA, [])
    assert pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CCU, [1]) == (R.HCCL_E_NOT_SUPPORT, [])


def test_a_communicators_thread_is_not_freed_by_hcomm_thread_free(caplog):
    _comm, _stream, thread = host_setup()
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcommThreadFree([thread]) == R.HCCL_E_PARA
    assert "released with the communicator" in caplog.text


def test_thread_alloc_needs_a_device():
    assert pyhcomm.HcommThreadAlloc(E.COMM_ENGINE_CPU_TS, [1]) == (R.HCCL_E_RUNTIME, [])


# -- endpoints and memory ------------------------------------------------------------------------

def test_endpoints_of_a_device():
    assert acl.init() == 0 and acl.rt.set_device(1) == 0
    ret, n = pyhcomm.HcommEndpointGetDescNum(1)
    assert (ret, n) == (0, 3)                                     # A2: HCCS, HCCS_ONLY, RoCE
    ret, descs = pyhcomm.HcommEndpointGetDescs(1, n)
    assert ret == 0 and [d.protocol for d in descs] == [0, 8, 1]
    assert pyhcomm.HcommEndpointGetDescs(1, 2) == (R.HCCL_E_PARA, [])
    ret, ep = pyhcomm.HcommEndpointCreate(descs[2])
    assert ret == 0 and ep
    ret2, ep2 = pyhcomm.HcommEndpointCreate(descs[0])
    assert pyhcomm.HcommEndpointGetListenPort(ep) == (0, 60000)
    assert pyhcomm.HcommEndpointGetListenPort(ep2) == (0, 60001)
    assert pyhcomm.HcommEndpointCheckFeature(pyhcomm.HCOMM_ENDPOINT_FEATURE_NDA, descs[2]) == (0, False)
    assert pyhcomm.HcommEndpointCreate(pyhcomm.HcommEndpointGetDescs(0, 3)[1][0]) == (R.HCCL_E_PARA, 0)  # device 0's
    assert pyhcomm.HcommEndpointDestroy(ep) == 0
    assert pyhcomm.HcommEndpointGetListenPort(ep) == (R.HCCL_E_NOT_FOUND, 0)
    blank = pyhcomm.EndpointDesc()
    assert pyhcomm.EndpointDescInit(blank) == 0
    assert blank.protocol == -1 and blank.raws == b"\xff" * 52 and blank.commAddr.type == -1


def test_memory_registered_exported_and_imported():
    assert acl.init() == 0
    eps = []
    for dev in (0, 1):
        assert acl.rt.set_device(dev) == 0
        descs = pyhcomm.HcommEndpointGetDescs(dev, 3)[1]
        eps.append(pyhcomm.HcommEndpointCreate(descs[2])[1])
    assert acl.rt.set_device(0) == 0
    buf = malloc(4096)
    mem = pyhcomm.CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, buf, 4096)
    ret, h = pyhcomm.HcommMemReg(eps[0], "weights", mem)
    assert ret == 0
    assert pyhcomm.HcommMemReg(eps[0], "weights", mem) == (R.HCCL_E_PARA, 0)            # tag taken
    assert pyhcomm.HcommMemReg(eps[1], "w", mem) == (R.HCCL_E_PARA, 0)                 # device 0's memory
    ret, desc, length = pyhcomm.HcommMemExport(eps[0], h)
    assert ret == 0 and desc and length > 0
    ret, remote = pyhcomm.HcommMemImport(eps[1], desc, length)
    assert ret == 0 and (remote.type, remote.addr, remote.size) == (pyhcomm.COMM_MEM_TYPE_DEVICE, buf, 4096)
    assert pyhcomm.HcommMemImport(eps[1], desc, length - 1) == (R.HCCL_E_PARA, pyhcomm.CommMem())
    assert pyhcomm.HcommMemUnimport(eps[1], desc, length) == 0
    assert pyhcomm.HcommMemUnimport(eps[1], desc, length) == R.HCCL_E_NOT_FOUND
    assert pyhcomm.HcommMemUnreg(eps[0], h) == 0
    assert pyhcomm.HcommMemImport(eps[1], desc, length)[0] == R.HCCL_E_NOT_FOUND     # no longer registered


def test_mem_alloc_is_an_atlas_a3_call():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    assert pyhcomm.HcommMemAlloc(1024) == (R.HCCL_E_NOT_SUPPORT, 0)
    pyhcomm.reset()
    pyhcomm.set_product("Atlas A3")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    ret, ptr = pyhcomm.HcommMemAlloc(1024)
    assert ret == 0 and ptr
    alloc = pyhcomm.current_sim().memory.device_map.exact(ptr)
    assert alloc.size == 2 << 20                                   # rounded up to 2 MB
    assert acl.rt.free(ptr) != 0                                   # not aclrtMalloc's
    assert pyhcomm.HcommMemFree(ptr) == 0
    assert pyhcomm.HcommMemFree(ptr) == R.HCCL_E_PARA
    assert pyhcomm.HcommMemAlloc(0) == (R.HCCL_E_PARA, 0)


def test_host_endpoints_are_not_modelled_and_say_so(caplog):
    """README's "partly modelled" list: a host endpoint is HCCL_E_NOT_SUPPORT with its reason."""
    assert acl.init() == 0 and acl.rt.set_device(1) == 0
    desc = pyhcomm.HcommEndpointGetDescs(1, 3)[1][2]
    desc.loc.locType = pyhcomm.ENDPOINT_LOC_TYPE_HOST
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcommEndpointCreate(desc) == (R.HCCL_E_NOT_SUPPORT, 0)
    assert "HcommEndpointCreate: host endpoints (host NICs) are not modelled" in caplog.text
