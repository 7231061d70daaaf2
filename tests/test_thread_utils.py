"""Thread utilities: HcclThreadExportToCommEngine, HcclThreadResGetInfo, and the device-side
communicator lock HcommAcquireComm / HcommReleaseComm."""
import logging

import numpy as np
import pytest

import pyhcomm
from pyhcomm import *  # noqa: F403
from pyhcomm import Comm, Device, Thread, acl
from pyhcomm.errors import HcclNotSupportedError, HcclUsageError
from pyhcomm.hcomm import comm_lock


def _obj(handle):
    return pyhcomm.current_sim().handles.threads.get(handle)


def _buffers(dev, n=256):
    src, dst = dev.malloc(n), dev.malloc(n)
    data = (np.arange(n) * 5 % 256).astype(np.uint8)
    src.write(data)
    return src, dst, data


# -- HcclThreadExportToCommEngine ------------------------------------------------------------------

def test_export_gives_a_new_handle_on_the_same_stream_and_notifies(dev, comm):
    ret, cpu = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, dev.default_stream.handle, 3)
    assert ret == HCCL_SUCCESS
    ret, exported = HcclThreadExportToCommEngine(comm, 1, [cpu], COMM_ENGINE_AICPU_TS)
    assert ret == HCCL_SUCCESS and len(exported) == 1
    e, o = _obj(exported[0]), _obj(cpu)
    assert exported[0] != cpu
    assert e.engine == COMM_ENGINE_AICPU_TS and o.engine == COMM_ENGINE_CPU_TS
    assert e.origin is o and o.origin is None
    assert e.stream is o.stream and e.notifies is o.notifies and len(e.notifies) == 3


def test_export_is_cached_per_thread_and_engine(comm):
    _, threads = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 3, 1)
    _, first = HcclThreadExportToCommEngine(comm, 3, threads, COMM_ENGINE_CPU_TS)
    _, again = HcclThreadExportToCommEngine(comm, 2, threads[1:], COMM_ENGINE_CPU_TS)
    assert again == first[1:]
    assert len(set(first)) == 3 and not set(first) & set(threads)
    for t, e in zip(threads, first):
        assert _obj(e).stream is _obj(t).stream
    _, other = HcclThreadExportToCommEngine(comm, 1, threads[:1], COMM_ENGINE_CPU)
    assert other[0] not in first and _obj(other[0]).stream is _obj(threads[0]).stream


def test_export_to_the_own_engine_or_of_an_export_resolves_to_the_original(comm):
    _, (t,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1)
    assert HcclThreadExportToCommEngine(comm, 1, [t], COMM_ENGINE_AICPU_TS) == (HCCL_SUCCESS, [t])
    _, (e,) = HcclThreadExportToCommEngine(comm, 1, [t], COMM_ENGINE_CPU_TS)
    assert HcclThreadExportToCommEngine(comm, 1, [e], COMM_ENGINE_AICPU_TS) == (HCCL_SUCCESS, [t])
    assert HcclThreadExportToCommEngine(comm, 1, [e], COMM_ENGINE_CPU_TS) == (HCCL_SUCCESS, [e])
    _, (c,) = HcclThreadExportToCommEngine(comm, 1, [e], COMM_ENGINE_CPU)
    assert _obj(c).origin is _obj(t)


def test_export_takes_only_thread_num_handles(comm):
    _, threads = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 3, 0)
    ret, exported = HcclThreadExportToCommEngine(comm, 2, threads, COMM_ENGINE_CPU_TS)
    assert ret == HCCL_SUCCESS and len(exported) == 2
    assert _obj(threads[2]).exports == {}


def test_export_thread_num_limits(comm):
    _, threads = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 41, 0)
    assert HcclThreadExportToCommEngine(comm, 0, threads, COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, [])
    assert HcclThreadExportToCommEngine(comm, 41, threads, COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, [])
    ret, exported = HcclThreadExportToCommEngine(comm, 40, threads, COMM_ENGINE_CPU_TS)
    assert ret == HCCL_SUCCESS and len(exported) == 40
    assert HcclThreadExportToCommEngine(comm, 2, threads[:1], COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, [])


def test_export_argument_errors(dev, comm):
    _, (t,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 0)
    assert HcclThreadExportToCommEngine(0, 1, [t], COMM_ENGINE_CPU_TS) == (HCCL_E_PTR, [])
    assert HcclThreadExportToCommEngine(0xDEAD, 1, [t], COMM_ENGINE_CPU_TS) == (HCCL_E_NOT_FOUND, [])
    assert HcclThreadExportToCommEngine(comm, 1, None, COMM_ENGINE_CPU_TS) == (HCCL_E_PTR, [])
    assert HcclThreadExportToCommEngine(comm, 1, [0], COMM_ENGINE_CPU_TS) == (HCCL_E_PTR, [])
    assert HcclThreadExportToCommEngine(comm, 1, [0x7777], COMM_ENGINE_CPU_TS) == (HCCL_E_NOT_FOUND, [])
    for engine in (COMM_ENGINE_RESERVED, 6):
        assert HcclThreadExportToCommEngine(comm, 1, [t], engine) == (HCCL_E_PARA, [])
    assert _obj(t).exports == {}


def test_export_of_another_communicators_thread_is_para(dev):
    _, (c0, c1) = HcclCommInitAll([0, 1])
    _, (t1,) = HcclThreadAcquire(c1, COMM_ENGINE_AICPU_TS, 1, 0)
    assert HcclThreadExportToCommEngine(c0, 1, [t1], COMM_ENGINE_CPU_TS) == (HCCL_E_PARA, [])
    assert HcclThreadExportToCommEngine(c1, 1, [t1], COMM_ENGINE_CPU_TS)[0] == HCCL_SUCCESS


def test_exported_device_thread_is_usable_from_the_host(dev, comm):
    _, (t,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1)
    _, (e,) = HcclThreadExportToCommEngine(comm, 1, [t], COMM_ENGINE_CPU_TS)
    src, dst, data = _buffers(dev)
    assert HcommLocalCopyOnThread(t, dst.addr, src.addr, 256) == HCCL_E_NOT_SUPPORT
    pyhcomm.record.clear()
    assert HcommLocalCopyOnThread(e, dst.addr, src.addr, 256) == HCCL_SUCCESS
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    _, stream = HcclThreadResGetInfo(comm, t, THREAD_RES_TYPE_STREAM, 8)
    assert task.stream.handle == stream and task.stream is _obj(t).stream
    assert not dst.read().any()  # enqueued only
    acl.rt.synchronize_stream(stream)
    assert dst.read().tobytes() == data.tobytes()


def test_exported_host_thread_is_usable_inside_a_kernel(dev, comm):
    """EX05: the user-stream thread (CPU_TS) exported to AICPU_TS and used by the kernel."""
    user = dev.stream()
    _, cpu = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, user.handle, 1)
    _, (on_aicpu,) = HcclThreadExportToCommEngine(comm, 1, [cpu], COMM_ENGINE_AICPU_TS)
    src, dst, data = _buffers(dev)
    rets = []

    def kernel(original, exported):
        HcommBatchModeStart("export")  # Atlas A2 device-side code must use batch mode
        rets.append(HcommLocalCopyOnThread(original, dst.addr, src.addr, 256))
        rets.append(HcommLocalCopyOnThread(exported, dst.addr, src.addr, 256))
        HcommBatchModeEnd("export")

    pyhcomm.record.clear()
    dev.stream().launch(kernel, cpu, on_aicpu)
    dev.synchronize()
    assert rets == [HCCL_E_NOT_SUPPORT, HCCL_SUCCESS]
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert task.stream.handle == user.handle  # the task landed on the user's stream
    assert dst.read().tobytes() == data.tobytes()


def test_export_on_atlas_350_lets_a_kernel_use_a_host_thread(product):
    product("Atlas 350")
    with Device(0) as dev:
        _, (comm,) = HcclCommInitAll([0])
        user = dev.stream()
        _, cpu = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, user.handle, 1)
        _, (e,) = HcclThreadExportToCommEngine(comm, 1, [cpu], COMM_ENGINE_AICPU_TS)
        src, dst, data = _buffers(dev)
        rets = []
        dev.stream().launch(lambda: rets.append(HcommLocalCopyOnThread(e, dst.addr, src.addr, 256)))
        dev.synchronize()
        assert rets == [HCCL_SUCCESS]
        assert dst.read().tobytes() == data.tobytes()


def test_exports_die_with_the_communicator_and_leave_user_streams(dev, comm):
    user = dev.stream()
    _, cpu = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, user.handle, 1)
    _, (own,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1)
    _, (e_cpu,) = HcclThreadExportToCommEngine(comm, 1, [cpu], COMM_ENGINE_AICPU_TS)
    _, (e_own,) = HcclThreadExportToCommEngine(comm, 1, [own], COMM_ENGINE_CPU_TS)
    own_stream = _obj(own).stream.handle
    assert HcclCommDestroy(comm) == HCCL_SUCCESS
    for h in (cpu, own, e_cpu, e_own):
        assert _obj(h) is None
    src, dst, _ = _buffers(dev)
    assert HcommLocalCopyOnThread(e_own, dst.addr, src.addr, 16) == HCCL_E_NOT_FOUND
    assert pyhcomm.current_sim().handles.streams.get(own_stream) is None        # library-owned stream went with the thread
    assert pyhcomm.current_sim().handles.streams.get(user.handle) is not None   # the user's stream was never destroyed
    user.synchronize()
    user.close()


def test_pythonic_export(dev):
    comm = Comm.init_all([0])[0]
    t = comm.thread(COMM_ENGINE_CPU_TS, stream=dev.default_stream, notify_num=2)
    e = t.export(COMM_ENGINE_AICPU_TS)
    assert isinstance(e, Thread) and e.engine == COMM_ENGINE_AICPU_TS and e.handle != t.handle
    assert e.stream.handle == t.stream.handle and e.notify_num == 2
    assert t.export(COMM_ENGINE_AICPU_TS).handle == e.handle
    assert e.export(COMM_ENGINE_CPU_TS).handle == t.handle
    with pytest.raises(HcclUsageError) as err:
        t.export(9)
    assert err.value.code == HCCL_E_PARA and err.value.api == "HcclThreadExportToCommEngine"
    comm.close()


# -- HcclThreadResGetInfo --------------------------------------------------------------------------

def test_res_get_info_gives_the_stream(dev, comm):
    user = dev.stream()
    _, t = HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, user.handle, 0)
    assert HcclThreadResGetInfo(comm, t, THREAD_RES_TYPE_STREAM, 8) == (HCCL_SUCCESS, user.handle)
    _, (own,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 0)
    ret, stream = HcclThreadResGetInfo(comm, own, THREAD_RES_TYPE_STREAM, 8)
    assert ret == HCCL_SUCCESS and stream == _obj(own).stream.handle and stream != user.handle
    assert acl.rt.synchronize_stream(stream) == 0  # a real aclrtStream
    _, (e,) = HcclThreadExportToCommEngine(comm, 1, [own], COMM_ENGINE_CPU_TS)
    assert HcclThreadResGetInfo(comm, e, THREAD_RES_TYPE_STREAM, 8) == (HCCL_SUCCESS, stream)


@pytest.mark.parametrize("info_len", [0, 4, 7, 9, 16])
def test_res_get_info_needs_info_len_of_a_stream(comm, info_len):
    _, (t,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 0)
    assert HcclThreadResGetInfo(comm, t, THREAD_RES_TYPE_STREAM, info_len) == (HCCL_E_PARA, 0)


@pytest.mark.parametrize("res_type", [THREAD_RES_TYPE_INVALID, 1, 99])
def test_res_get_info_other_res_types_are_para(comm, res_type):
    _, (t,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 0)
    assert HcclThreadResGetInfo(comm, t, res_type, 8) == (HCCL_E_PARA, 0)


def test_res_get_info_handle_errors(dev):
    _, (c0, c1) = HcclCommInitAll([0, 1])
    _, (t,) = HcclThreadAcquire(c0, COMM_ENGINE_AICPU_TS, 1, 0)
    assert HcclThreadResGetInfo(0, t, THREAD_RES_TYPE_STREAM, 8) == (HCCL_E_PTR, 0)
    assert HcclThreadResGetInfo(0xBAD, t, THREAD_RES_TYPE_STREAM, 8) == (HCCL_E_NOT_FOUND, 0)
    assert HcclThreadResGetInfo(c0, 0, THREAD_RES_TYPE_STREAM, 8) == (HCCL_E_PTR, 0)
    assert HcclThreadResGetInfo(c0, 0x1234, THREAD_RES_TYPE_STREAM, 8) == (HCCL_E_NOT_FOUND, 0)
    assert HcclThreadResGetInfo(c1, t, THREAD_RES_TYPE_STREAM, 8) == (HCCL_E_PARA, 0)


# -- HcommAcquireComm / HcommReleaseComm -----------------------------------------------------------

def _run(dev, fn, *args):
    """Launch ``fn(*args)`` as an AI CPU kernel on a new stream of ``dev`` and wait for it."""
    dev.stream().launch(fn, *args)
    dev.synchronize()


def test_acquire_and_release_inside_a_kernel(dev, comm):
    _, name = HcclGetCommName(comm)
    rets = []

    def kernel():
        rets.append(HcommAcquireComm(name))
        rets.append(comm_lock.holder(pyhcomm.current_sim().handles.comms.get(comm)) is not None)
        rets.append(HcommReleaseComm(name))

    _run(dev, kernel)
    assert rets == [HCCL_SUCCESS, True, HCCL_SUCCESS]
    assert comm_lock.holder(pyhcomm.current_sim().handles.comms.get(comm)) is None


def test_lock_calls_from_the_host_are_not_supported(comm):
    _, name = HcclGetCommName(comm)
    assert HcommAcquireComm(name) == HCCL_E_NOT_SUPPORT
    assert HcommReleaseComm(name) == HCCL_E_NOT_SUPPORT
    assert HcommAcquireComm(None) == HCCL_E_NOT_SUPPORT  # the side is checked first


def test_lock_is_not_supported_on_products_without_hcomm(product):
    product("Atlas 800I A2")
    with Device(0) as dev:
        _, (comm,) = HcclCommInitAll([0])
        _, name = HcclGetCommName(comm)
        rets = []
        _run(dev, lambda: rets.append(HcommAcquireComm(name)))
        assert rets == [HCCL_E_NOT_SUPPORT]


def test_lock_null_and_unknown_comm_are_ptr(dev):
    _, (c0,) = HcclCommInitAll([0])
    _, (c3,) = HcclCommInitAll([3])
    _, name3 = HcclGetCommName(c3)
    rets = []

    def kernel():
        rets.append(HcommAcquireComm(None))
        rets.append(HcommReleaseComm(None))
        rets.append(HcommAcquireComm("no_such_comm"))
        rets.append(HcommReleaseComm("no_such_comm"))
        rets.append(HcommAcquireComm(name3))  # exists, but has no rank on this kernel's device

    _run(dev, kernel)
    assert rets == [HCCL_E_PTR] * 5
    with pytest.raises(TypeError):
        comm_lock._comm_name(42, "HcommAcquireComm")


def test_destroyed_comm_is_unknown(dev, comm):
    _, name = HcclGetCommName(comm)
    HcclCommDestroy(comm)
    rets = []
    _run(dev, lambda: rets.append(HcommAcquireComm(name)))
    assert rets == [HCCL_E_PTR]


def test_the_rank_on_the_kernel_device_is_locked(dev):
    _, (c0, c1) = HcclCommInitAll([0, 1])
    _, name = HcclGetCommName(c0)
    assert HcclGetCommName(c1) == (HCCL_SUCCESS, name)
    rets = []

    def kernel():
        rets.append(HcommAcquireComm(name))
        rets.append(comm_lock.holder(pyhcomm.current_sim().handles.comms.get(c1)) is not None)
        rets.append(comm_lock.holder(pyhcomm.current_sim().handles.comms.get(c0)))  # rank 0 (device 0) is not locked
        rets.append(HcommReleaseComm(name))

    with Device(1) as dev1:
        _run(dev1, kernel)
    assert rets == [HCCL_SUCCESS, True, None, HCCL_SUCCESS]


def test_unpaired_calls_are_para(dev, comm):
    _, name = HcclGetCommName(comm)
    rets = []

    def kernel():
        rets.append(HcommReleaseComm(name))   # release without acquire
        rets.append(HcommAcquireComm(name))
        rets.append(HcommAcquireComm(name))   # acquire twice
        rets.append(HcommReleaseComm(name))
        rets.append(HcommReleaseComm(name))   # release twice

    _run(dev, kernel)
    assert rets == [HCCL_E_PARA, HCCL_SUCCESS, HCCL_E_PARA, HCCL_SUCCESS, HCCL_E_PARA]


def test_a_comm_held_by_an_unfinished_kernel_is_unavail(product):
    """Kernel A holds the lock and blocks (joins thread B, on whose stream kernel B waits); kernel B
    runs meanwhile (Atlas 350: HcommThreadJoin is the device side's blocking call).

        stream A: [kernel A: acquire ... join(B) ........ release]
        stream B:                 [kernel B: acquire -> UNAVAIL; release -> PARA]
    """
    product("Atlas 350")
    dev = Device(0)
    _, (comm,) = HcclCommInitAll([0])
    _, name = HcclGetCommName(comm)
    _, (thread_b,) = HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, 1, 1)
    _, stream_b = HcclThreadResGetInfo(comm, thread_b, THREAD_RES_TYPE_STREAM, 8)
    log = []

    def kernel_b():
        log.append(("B acquire", HcommAcquireComm(name)))
        log.append(("B release", HcommReleaseComm(name)))

    def kernel_a():
        log.append(("A acquire", HcommAcquireComm(name)))
        assert HcommThreadJoin(thread_b, 0) == HCCL_SUCCESS
        log.append(("A release", HcommReleaseComm(name)))

    dev.stream().launch(kernel_a)
    pyhcomm.Stream(stream_b, owned=False).launch(kernel_b)
    dev.synchronize()
    assert log == [("A acquire", HCCL_SUCCESS), ("B acquire", HCCL_E_UNAVAIL), ("B release", HCCL_E_PARA),
                   ("A release", HCCL_SUCCESS)]
    # once A finished, another kernel gets the lock
    _run(dev, kernel_b)
    assert log[-2:] == [("B acquire", HCCL_SUCCESS), ("B release", HCCL_SUCCESS)]


def test_a_kernel_ending_with_the_lock_releases_it_and_warns(dev, comm, caplog):
    _, name = HcclGetCommName(comm)
    rets = []
    with caplog.at_level(logging.WARNING, logger="pyhcomm"):
        _run(dev, lambda: rets.append(HcommAcquireComm(name)))
    assert rets == [HCCL_SUCCESS]
    assert any("ended still holding" in r.getMessage() and name in r.getMessage() for r in caplog.records)
    assert comm_lock.holder(pyhcomm.current_sim().handles.comms.get(comm)) is None

    def paired():
        rets.append(HcommAcquireComm(name))
        rets.append(HcommReleaseComm(name))

    _run(dev, paired)
    assert rets == [HCCL_SUCCESS] * 3


def test_a_failing_kernel_releases_its_lock(dev, comm):
    _, name = HcclGetCommName(comm)

    def kernel():
        assert HcommAcquireComm(name) == HCCL_SUCCESS
        raise RuntimeError("kernel bug")

    dev.stream().launch(kernel)
    with pytest.raises(pyhcomm.AclRuntimeError) as err:
        dev.synchronize()
    assert err.value.code == ACL_ERROR_RT_AICPU_EXCEPTION
    assert comm_lock.holder(pyhcomm.current_sim().handles.comms.get(comm)) is None


def test_comm_destroy_drops_the_lock(dev, comm):
    _, name = HcclGetCommName(comm)
    c = pyhcomm.current_sim().handles.comms.get(comm)
    seen = []

    def kernel():
        HcommAcquireComm(name)
        seen.append(comm_lock.holder(c) is not None)
        HcclCommDestroy(comm)
        seen.append(comm_lock.holder(c))
        seen.append(HcommReleaseComm(name))

    _run(dev, kernel)
    assert seen == [True, None, HCCL_E_PTR]


def test_pythonic_comm_lock(dev):
    comm = Comm.init_all([0])[0]
    seen = []

    def kernel():
        with comm.lock():
            seen.append(comm_lock.holder(comm._c) is not None)
        seen.append(comm_lock.holder(comm._c))

    _run(dev, kernel)
    assert seen == [True, None]
    with pytest.raises(HcclNotSupportedError) as err:
        with comm.lock():
            pass
    assert err.value.api == "HcommAcquireComm"
    comm.close()


def test_raising_implementations_are_exposed(comm):
    with pytest.raises(HcclNotSupportedError):
        HcommAcquireComm.raising("x")
    with pytest.raises(HcclUsageError) as err:
        HcclThreadExportToCommEngine.raising(comm, 0, [], COMM_ENGINE_CPU_TS)
    assert err.value.code == HCCL_E_PARA
    with pytest.raises(HcclUsageError) as err:
        HcclThreadResGetInfo.raising(comm, 0, THREAD_RES_TYPE_STREAM, 8)
    assert err.value.code == HCCL_E_PTR
