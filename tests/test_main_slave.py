"""The main/slave pattern, both ways.

A main thread releases N slave threads by notify; each slave copies or reduces its slice and
records the main thread; the main thread waits for all of them.

* Host side, Atlas 800T A2: CPU_TS threads, the main one on the user's stream
  (HcclThreadAcquireWithStream), the slaves with their own streams (HcclThreadAcquire).
* Device side, Atlas 350: inside an AI CPU kernel in batch mode, with the host-to-device and
  device-to-host notify handshake of the custom-operator sample (hcomm-api.md section 5.6):

      host (user stream, CPU_TS thread)        AI CPU kernel (AICPU_TS threads)
      record main.notify[N]  ---------------\\
      launch kernel                          \\-> BatchModeStart; main waits notify[N]
                                                 main records slave[i].notify[0]
                                                 slave[i]: wait 0, copy/reduce slice i,
                                                           record main.notify[i]
                                                 main waits notify[0..N-1]
      wait own notify[0]  <--------------------- main records host.notify[0]; BatchModeEnd
      synchronize(user stream)
"""
import sys

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (COMM_ENGINE_AICPU_TS, COMM_ENGINE_CPU_TS, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM,
                     HcclThreadAcquire, HcclThreadAcquireWithStream, HcclThreadExportToCommEngine,
                     HcommBatchModeEnd, HcommBatchModeStart, HcommLocalCopyOnThread, HcommLocalReduceOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, acl)
from hcomm_testutil import host_setup, malloc, read, write

pytestmark = pytest.mark.timeout(60)

E = pyhcomm.AclError
R = pyhcomm.HcclResult
TIMEOUT_CFG = [{"id": int(pyhcomm.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT), "value": 1836}]
WAIT_S = 1836
ELEMS = 1000                       # fp32 elements per slice (not a power of two)
CHUNK = ELEMS * 4


def next_line() -> str:
    f = sys._getframe(1)
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


def _inputs(n_slaves, op):
    """Device buffers src, dst (and the host arrays) for ``n_slaves`` slices; the expected dst."""
    rng = np.random.default_rng(n_slaves)
    total = n_slaves * ELEMS
    src_h = rng.standard_normal(total).astype(np.float32)
    dst_h = rng.standard_normal(total).astype(np.float32) if op == "reduce" else np.zeros(total, np.float32)
    src, dst = malloc(total * 4), malloc(total * 4)
    write(src, src_h.view(np.uint8))
    write(dst, dst_h.view(np.uint8))
    expected = dst_h + src_h if op == "reduce" else src_h
    return src, dst, expected


def _slice_op(thread, op, dst, src, i):
    off = i * CHUNK
    if op == "copy":
        return HcommLocalCopyOnThread(thread, dst + off, src + off, CHUNK)
    return HcommLocalReduceOnThread(thread, dst + off, src + off, ELEMS, HCOMM_DATA_TYPE_FP32, HCOMM_REDUCE_SUM)


def _fan_out_fan_in(main, slaves, op, dst, src, timeout):
    """The main/slave body; returns the list of return codes (all 0 when it went right)."""
    rets = []
    for s in slaves:
        rets.append(HcommThreadNotifyRecordOnThread(main, s, 0))
    for i, s in enumerate(slaves):
        rets.append(HcommThreadNotifyWaitOnThread(s, 0, timeout))
        rets.append(_slice_op(s, op, dst, src, i))
        rets.append(HcommThreadNotifyRecordOnThread(s, main, i))
    for i in range(len(slaves)):
        rets.append(HcommThreadNotifyWaitOnThread(main, i, timeout))
    return rets


# -- host side, Atlas 800T A2 --------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [False, True], ids=["eager", "batch"])
@pytest.mark.parametrize("op", ["copy", "reduce"])
@pytest.mark.parametrize("n_slaves", [1, 3, 8])
def test_host_side_main_slave_on_atlas_a2(n_slaves, op, batch):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    ret, (comm,) = pyhcomm.HcclCommInitAll([0])
    assert ret == 0
    user_stream, ret = acl.rt.create_stream()
    ret, main = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, user_stream, n_slaves)
    assert ret == 0
    ret, slaves = HcclThreadAcquire(comm, COMM_ENGINE_CPU_TS, n_slaves, 1)
    assert ret == 0
    src, dst, expected = _inputs(n_slaves, op)
    gathered = malloc(n_slaves * CHUNK)

    if batch:
        assert HcommBatchModeStart("main_slave") == 0
    rets = _fan_out_fan_in(main, slaves, op, dst, src, 0)
    # after the fan-in, work on the main thread sees every slice complete
    rets.append(HcommLocalCopyOnThread(main, gathered, dst, n_slaves * CHUNK))
    if batch:
        assert pyhcomm.record.tasks() == []
        assert HcommBatchModeEnd("main_slave") == 0
    assert rets == [0] * len(rets)
    assert (read(dst, n_slaves * CHUNK).view(np.float32) != expected).any()    # nothing ran yet

    assert acl.rt.synchronize_stream(user_stream) == 0                          # the user stream only
    assert np.array_equal(read(dst, n_slaves * CHUNK).view(np.float32), expected)
    assert np.array_equal(read(gathered, n_slaves * CHUNK).view(np.float32), expected)
    tasks = pyhcomm.record.tasks()
    assert len(tasks) == 5 * n_slaves + 1
    assert {t.state for t in tasks} == {"done"}                                 # no slave task left behind
    kind = "LocalCopy" if op == "copy" else "LocalReduce"
    assert sorted(t.thread for t in tasks if t.kind == kind and t.thread != main) == sorted(slaves)
    assert acl.rt.synchronize_device() == 0
    assert pyhcomm.HcclCommDestroy(comm) == 0
    assert acl.rt.destroy_stream(user_stream) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


@pytest.mark.timeout(30)
def test_host_side_slave_that_never_records_back_is_reported():
    """A slave forgets to record the main thread: the user stream's synchronize fails at once and
    names the main thread's notify that nobody records."""
    comm, user_stream, main = host_setup(notify=2)
    _, slaves = HcclThreadAcquire(comm, COMM_ENGINE_CPU_TS, 2, 1)
    src, dst, _ = _inputs(2, "copy")
    for s in slaves:
        assert HcommThreadNotifyRecordOnThread(main, s, 0) == 0
    for i, s in enumerate(slaves):
        assert HcommThreadNotifyWaitOnThread(s, 0, 0) == 0
        assert _slice_op(s, "copy", dst, src, i) == 0
    assert HcommThreadNotifyRecordOnThread(slaves[0], main, 0) == 0          # slave 1 forgets
    assert HcommThreadNotifyWaitOnThread(main, 0, 0) == 0
    site = next_line()
    assert HcommThreadNotifyWaitOnThread(main, 1, 0) == 0
    assert acl.rt.synchronize_stream(user_stream) == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert f"thread 0x{main:x}" in msg and "notify 1" in msg and site in msg and "nobody ever records it" in msg


# -- device side, Atlas 350 ----------------------------------------------------------------------------
def MainSlaveKernel(main, slaves, host_on_aicpu, sync_idx, op, dst, src, tag, record_host=True):
    """AI CPU kernel: wait for the host, fan out / fan in, release the host (hcomm-api.md 5.6)."""
    rets = [HcommBatchModeStart(tag)]
    rets.append(HcommThreadNotifyWaitOnThread(main, sync_idx, WAIT_S))
    rets += _fan_out_fan_in(main, slaves, op, dst, src, WAIT_S)
    if record_host:
        rets.append(HcommThreadNotifyRecordOnThread(main, host_on_aicpu, 0))
    rets.append(HcommBatchModeEnd(tag))
    return 0 if all(r == 0 for r in rets) else 1


class DeviceSetup:
    """The host side of the custom operator on Atlas 350, up to (not including) the launch."""

    def __init__(self, n_slaves):
        pyhcomm.set_product("Atlas 350")
        assert acl.init() == 0
        assert acl.rt.set_device(0) == 0
        assert acl.get_soc_name().startswith("Ascend950")
        ret, (self.comm,) = pyhcomm.HcclCommInitAll([0])
        assert ret == 0
        self.user_stream, ret = acl.rt.create_stream()
        assert ret == 0
        # the user-stream thread on the host, and its handle for the kernel
        ret, self.cpu = HcclThreadAcquireWithStream(self.comm, COMM_ENGINE_CPU_TS, self.user_stream, 1)
        assert ret == 0
        ret, (self.cpu_on_aicpu,) = HcclThreadExportToCommEngine(self.comm, 1, [self.cpu], COMM_ENGINE_AICPU_TS)
        assert ret == 0
        # main + slaves on the AI CPU; the main thread's notify n_slaves is the host -> device sync
        self.sync_idx = n_slaves
        ret, threads = HcclThreadAcquire(self.comm, COMM_ENGINE_AICPU_TS, n_slaves + 1, n_slaves + 1)
        assert ret == 0
        self.main, self.slaves = threads[0], threads[1:]
        ret, (self.main_on_cpu,) = HcclThreadExportToCommEngine(self.comm, 1, [self.main], COMM_ENGINE_CPU_TS)
        assert ret == 0
        binary, ret = acl.rt.binary_load_from_file(sys.modules[__name__], [])
        assert ret == 0
        self.func, ret = acl.rt.binary_get_function(binary, "MainSlaveKernel")
        assert ret == 0

    def launch(self, *args):
        handle, ret = acl.rt.kernel_args_init(self.func)
        assert ret == 0
        for a in args:
            assert acl.rt.kernel_args_append(handle, a)[1] == 0
        assert acl.rt.kernel_args_finalize(handle) == 0
        return acl.rt.launch_kernel_with_config(self.func, 1, self.user_stream, TIMEOUT_CFG, handle, 0)


@pytest.mark.parametrize("op", ["copy", "reduce"])
@pytest.mark.parametrize("n_slaves", [1, 3, 8])
def test_device_side_main_slave_on_atlas_350(n_slaves, op):
    d = DeviceSetup(n_slaves)
    src, dst, expected = _inputs(n_slaves, op)
    before = read(dst, n_slaves * CHUNK)

    # host: release the AI CPU main thread, launch, wait for the device
    assert HcommThreadNotifyRecordOnThread(d.cpu, d.main_on_cpu, d.sync_idx) == 0
    assert d.launch(d.main, d.slaves, d.cpu_on_aicpu, d.sync_idx, op, dst, src, "main_slave") == 0
    assert HcommThreadNotifyWaitOnThread(d.cpu, 0, WAIT_S) == 0

    host_tasks = pyhcomm.record.tasks()
    assert [t.kind for t in host_tasks] == ["ThreadNotifyRecord", "KernelLaunch", "ThreadNotifyWait"]
    assert {t.stream.handle for t in host_tasks} == {d.user_stream}
    assert {t.state for t in host_tasks} == {"pending"}
    assert (read(dst, n_slaves * CHUNK) == before).all()

    assert acl.rt.synchronize_stream(d.user_stream) == 0                      # the user stream only
    assert np.array_equal(read(dst, n_slaves * CHUNK).view(np.float32), expected)

    # the user stream could not complete before the kernel's work: every task of the kernel ran,
    # the last of them the main thread's record of the host thread's notify 0
    tasks = pyhcomm.record.tasks()
    assert {t.state for t in tasks} == {"done"}
    device_tasks = [t for t in tasks if t.side == "device"]
    assert len(device_tasks) == 1 + 5 * n_slaves + 1
    assert min(t.seq for t in device_tasks) > max(t.seq for t in host_tasks)   # issued while the host waited
    kind = "LocalCopy" if op == "copy" else "LocalReduce"
    assert sorted(t.thread for t in device_tasks if t.kind == kind) == sorted(d.slaves)
    release = device_tasks[-1]
    assert release.kind == "ThreadNotifyRecord" and release.thread == d.main and release.detail == (d.cpu_on_aicpu, 0)
    host_wait = host_tasks[-1]
    assert host_wait.thread == d.cpu and host_wait.detail == (d.cpu, 0)

    assert acl.rt.synchronize_device() == 0
    assert pyhcomm.HcclCommDestroy(d.comm) == 0
    assert acl.rt.destroy_stream(d.user_stream) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0


def test_device_side_kernel_launched_twice_on_one_user_stream():
    """The resources are reused; each launch has its own handshake."""
    d = DeviceSetup(2)
    for round_ in range(2):
        src, dst, expected = _inputs(2, "reduce")
        assert HcommThreadNotifyRecordOnThread(d.cpu, d.main_on_cpu, d.sync_idx) == 0
        assert d.launch(d.main, d.slaves, d.cpu_on_aicpu, d.sync_idx, "reduce", dst, src, "again") == 0
        assert HcommThreadNotifyWaitOnThread(d.cpu, 0, WAIT_S) == 0
        assert acl.rt.synchronize_stream(d.user_stream) == 0, round_
        assert np.array_equal(read(dst, 2 * CHUNK).view(np.float32), expected)


@pytest.mark.timeout(30)
def test_device_side_without_the_host_to_device_record_is_reported():
    """The host forgets to release the AI CPU main thread: the kernel's first wait can never run,
    and the host's wait for the device names the record stuck behind it."""
    d = DeviceSetup(2)
    src, dst, _ = _inputs(2, "copy")
    assert d.launch(d.main, d.slaves, d.cpu_on_aicpu, d.sync_idx, "copy", dst, src, "no_h2d") == 0
    host_site = next_line()
    assert HcommThreadNotifyWaitOnThread(d.cpu, 0, WAIT_S) == 0
    assert acl.rt.synchronize_stream(d.user_stream) == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert f"notify {d.sync_idx} of rank 0 thread 0x{d.main:x} is never recorded: nobody ever records it" in msg
    host_line = next(line for line in msg.splitlines() if f"waits at {host_site}" in line)
    assert f"is queued on rank 0 thread 0x{d.main:x}" in host_line
    assert f"(waiting for notify {d.sync_idx} of rank 0 thread 0x{d.main:x})" in host_line
    assert (read(dst, 2 * CHUNK) == 0).all()


@pytest.mark.timeout(30)
def test_device_side_without_the_device_to_host_record_is_reported():
    d = DeviceSetup(2)
    src, dst, expected = _inputs(2, "copy")
    assert HcommThreadNotifyRecordOnThread(d.cpu, d.main_on_cpu, d.sync_idx) == 0
    assert d.launch(d.main, d.slaves, d.cpu_on_aicpu, d.sync_idx, "copy", dst, src, "no_d2h", False) == 0
    host_site = next_line()
    assert HcommThreadNotifyWaitOnThread(d.cpu, 0, WAIT_S) == 0
    assert acl.rt.synchronize_stream(d.user_stream) == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert host_site in msg and f"notify 0 of rank 0 thread 0x{d.cpu:x}" in msg and "nobody ever records it" in msg
    assert np.array_equal(read(dst, 2 * CHUNK).view(np.float32), expected)    # the kernel's work did run
