"""Small helpers shared by the foundation tests (plain functions, no fixtures)."""
from __future__ import annotations

import os
import threading

import numpy as np

import pyhcomm
from pyhcomm import acl

H2H = pyhcomm.ACL_MEMCPY_HOST_TO_HOST
H2D = pyhcomm.ACL_MEMCPY_HOST_TO_DEVICE
D2H = pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST
D2D = pyhcomm.ACL_MEMCPY_DEVICE_TO_DEVICE
HBW_HUGE = int(pyhcomm.ACL_MEM_TYPE_HIGH_BAND_WIDTH | pyhcomm.ACL_MEM_MALLOC_HUGE_FIRST)
HCCL_CFG = {"numAttrs": 1, "attrs": [{"attr": pyhcomm.ACL_RT_MEM_ATTR_MODULE_ID,
                                      "value": {"moduleId": pyhcomm.HCCL}}]}

KERNEL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
KERNELS_PY = os.path.join(KERNEL_DIR, "foundation_kernels.py")

JOIN_TIMEOUT = 30.0


def malloc(size: int, fill: int | None = None) -> int:
    """Allocate device memory on the current device (seed policy and cfg); optionally fill it."""
    ptr, ret = acl.rt.malloc_with_cfg(size, HBW_HUGE, HCCL_CFG)
    assert ret == 0 and ptr, (ptr, ret)
    if fill is not None:
        assert acl.rt.memset(ptr, size, fill, size) == 0
    return ptr


def write(ptr: int, data) -> np.ndarray:
    """Copy host data into device memory now; returns the host array written."""
    arr = np.ascontiguousarray(data, dtype=np.uint8)
    assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes, H2D) == 0
    return arr


def read(ptr: int, n: int) -> np.ndarray:
    """Copy ``n`` bytes of device memory to a new host array now."""
    out = np.zeros(n, dtype=np.uint8)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, D2H)
    assert ret == 0, ret
    return out


def pattern(n: int, seed: int = 1) -> np.ndarray:
    return ((np.arange(n) * 7 + seed * 13) % 251 + 1).astype(np.uint8)


def host_setup(device: int = 0, notify: int = 2):
    """acl.init + set_device + one-rank communicator + user stream + CPU_TS thread (seed example 1)."""
    assert acl.init() == 0
    assert acl.rt.set_device(device) == 0
    ret, comms = pyhcomm.HcclCommInitAll([device])
    assert ret == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    ret, thread = pyhcomm.HcclThreadAcquireWithStream(comms[0], pyhcomm.COMM_ENGINE_CPU_TS, stream, notify)
    assert ret == 0
    return comms[0], stream, thread


def device_thread_setup(notify: int = 1):
    """:func:`host_setup`, and one AICPU_TS thread for kernels: ``(comm, user stream, thread)``."""
    comm, stream, _ = host_setup()
    ret, (thread,) = pyhcomm.HcclThreadAcquire(comm, pyhcomm.COMM_ENGINE_AICPU_TS, 1, notify)
    assert ret == 0
    return comm, stream, thread


def two_rank_channels(engine, protocol, notify_num: int = 1):
    """``HcclCommInitAll([0, 1])`` and one channel between the two ranks; device 0 is current
    after. Returns ``(comms, [rank 0's channel end, rank 1's], rank 1's HCCL buffer address)``."""
    from pyhcomm import HcclChannelAcquire, HcclChannelDesc, HcclChannelDescInit, HcclChannelGetHcclBuffer
    assert acl.init() == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    chans = []
    for r in (0, 1):
        d = HcclChannelDesc()
        HcclChannelDescInit(d)
        d.remoteRank, d.channelProtocol, d.notifyNum = 1 - r, protocol, notify_num
        _, (ch,) = HcclChannelAcquire(comms[r], engine, [d])
        chans.append(ch)
    assert acl.rt.set_device(0) == 0
    _, remote, _ = HcclChannelGetHcclBuffer(comms[0], chans[0])
    return comms, chans, remote


def run_threads(targets, timeout: float = JOIN_TIMEOUT):
    """Run each callable on its own OS thread; join with a timeout; re-raise the first failure."""
    errors = [None] * len(targets)

    def wrap(i, fn):
        def body():
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - reported in the main thread
                errors[i] = exc
        return body

    threads = [threading.Thread(target=wrap(i, fn), name=f"test-host-{i}", daemon=True)
               for i, fn in enumerate(targets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"host threads still running after {timeout} s: {alive}"
    for exc in errors:
        if exc is not None:
            raise exc
