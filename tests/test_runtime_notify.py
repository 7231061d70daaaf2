"""Runtime notifies: acl.rt.create_notify / get_notify_id / record_notify / wait_and_reset_notify /
destroy_notify, and HcommAclrtNotifyRecordOnThread / HcommAclrtNotifyWaitOnThread, which address a
runtime notify by its numeric id (not supported on Atlas 350)."""
import logging
import sys

import pytest

import pyhcomm
from pyhcomm import (HcommAclrtNotifyRecordOnThread, HcommAclrtNotifyWaitOnThread, HcommBatchModeEnd,
                     HcommBatchModeStart, HcommLocalCopyOnThread, acl)
from hcomm_testutil import D2D, host_setup, malloc, pattern, read, write

R = pyhcomm.HcclResult
E = pyhcomm.AclError
CPU_TS = pyhcomm.COMM_ENGINE_CPU_TS
AICPU_TS = pyhcomm.COMM_ENGINE_AICPU_TS


def next_line() -> str:
    f = sys._getframe(1)
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


@pytest.fixture
def a2():
    comm, stream, thread = host_setup(notify=1)
    other, ret = acl.rt.create_stream()
    assert ret == 0
    notify, ret = acl.rt.create_notify(0)
    assert ret == 0 and notify
    notify_id, ret = acl.rt.get_notify_id(notify)
    assert ret == 0
    return {"comm": comm, "stream": stream, "thread": thread, "other": other, "notify": notify, "id": notify_id}


# -- the acl facade ------------------------------------------------------------------------------------
def test_create_get_id_destroy(a2):
    n2, ret = acl.rt.create_notify(1)                          # ACL_NOTIFY_DEVICE_USE_ONLY
    assert ret == 0
    id2, ret = acl.rt.get_notify_id(n2)
    assert ret == 0 and isinstance(id2, int) and id2 != a2["id"]
    assert acl.rt.destroy_notify(n2) == 0
    assert acl.rt.destroy_notify(n2) != 0                      # no longer a live notify
    assert acl.rt.get_notify_id(n2)[1] != 0
    assert acl.rt.destroy_notify(0) == E.ACL_ERROR_INVALID_PARAM


def test_create_notify_errors():
    assert acl.init() == 0
    assert acl.rt.create_notify(0) == (0, E.ACL_ERROR_RT_CONTEXT_NULL)   # no current device
    assert acl.rt.set_device(0) == 0
    assert acl.rt.create_notify(7)[1] == E.ACL_ERROR_INVALID_PARAM


def test_record_notify_and_wait_and_reset_order_two_streams(a2):
    s, other, n = a2["stream"], a2["other"], a2["notify"]
    src, mid, dst = malloc(128), malloc(128), malloc(128)
    data = write(src, pattern(128))
    assert acl.rt.wait_and_reset_notify(n, other, 0) == 0
    assert acl.rt.memcpy_async(dst, 128, mid, 128, D2D, other) == 0
    assert acl.rt.memcpy_async(mid, 128, src, 128, D2D, s) == 0
    assert acl.rt.record_notify(n, s) == 0
    assert acl.rt.synchronize_stream(other) == 0
    assert (read(dst, 128) == data).all()


@pytest.mark.parametrize("timeout", [-1, 1 << 32])
def test_wait_and_reset_notify_bad_timeout(a2, timeout):
    assert acl.rt.wait_and_reset_notify(a2["notify"], a2["other"], timeout) == E.ACL_ERROR_INVALID_PARAM


def test_wait_and_reset_notify_float_timeout_is_a_type_error(a2):
    """Seconds are an int, as every integer argument (docs/errors.md)."""
    with pytest.raises(TypeError):
        acl.rt.wait_and_reset_notify(a2["notify"], a2["other"], 1.5)


def test_record_on_a_stream_of_another_device_is_a_stream_context_error(a2):
    assert acl.rt.set_device(1) == 0
    far, _ = acl.rt.create_stream()
    assert acl.rt.record_notify(a2["notify"], far) == E.ACL_ERROR_RT_STREAM_CONTEXT
    assert acl.rt.wait_and_reset_notify(a2["notify"], far, 0) == E.ACL_ERROR_RT_STREAM_CONTEXT
    assert acl.rt.set_device(0) == 0


# -- HcommAclrtNotify*OnThread -------------------------------------------------------------------------
def test_thread_records_a_runtime_notify_a_stream_waits_for(a2):
    t, other = a2["thread"], a2["other"]
    src, mid, dst = malloc(256), malloc(256), malloc(256)
    data = write(src, pattern(256, 2))
    assert acl.rt.wait_and_reset_notify(a2["notify"], other, 0) == 0
    assert acl.rt.memcpy_async(dst, 256, mid, 256, D2D, other) == 0
    assert HcommLocalCopyOnThread(t, mid, src, 256) == 0
    assert HcommAclrtNotifyRecordOnThread(t, a2["id"]) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 256) == data).all()
    (rec,) = pyhcomm.record.tasks(kind="AclrtNotifyRecord")
    assert rec.thread == t and rec.detail == a2["id"] and rec.state == "done"


def test_thread_waits_for_a_runtime_notify_a_stream_records(a2):
    t, other = a2["thread"], a2["other"]
    src, mid, dst = malloc(256), malloc(256), malloc(256)
    data = write(src, pattern(256, 3))
    assert HcommAclrtNotifyWaitOnThread(t, a2["id"], 0) == 0
    assert HcommLocalCopyOnThread(t, dst, mid, 256) == 0
    assert acl.rt.memcpy_async(mid, 256, src, 256, D2D, other) == 0
    assert acl.rt.record_notify(a2["notify"], other) == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == 0
    assert (read(dst, 256) == data).all()
    (w,) = pyhcomm.record.tasks(kind="AclrtNotifyWait")
    assert w.thread == t and w.timeout == 0 and w.state == "done"


def test_runtime_notify_between_two_threads(a2):
    _, (a, b) = pyhcomm.HcclThreadAcquire(a2["comm"], CPU_TS, 2, 0)   # no thread notifies needed
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommAclrtNotifyWaitOnThread(b, a2["id"], 30) == 0
    assert HcommLocalCopyOnThread(b, dst, src, 64) == 0
    assert HcommAclrtNotifyRecordOnThread(a, a2["id"]) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 64) == data).all()


def test_a_runtime_notify_is_one_bit_too(a2):
    t = a2["thread"]
    assert HcommAclrtNotifyRecordOnThread(t, a2["id"]) == 0
    assert HcommAclrtNotifyRecordOnThread(t, a2["id"]) == 0
    assert acl.rt.synchronize_device() == 0
    assert acl.rt.wait_and_reset_notify(a2["notify"], a2["other"], 0) == 0
    site = next_line()
    assert acl.rt.wait_and_reset_notify(a2["notify"], a2["other"], 0) == 0
    assert acl.rt.synchronize_stream(a2["other"]) == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert site in msg and f"runtime notify id {a2['id']}" in msg and "nobody ever records it" in msg


@pytest.mark.timeout(30)
def test_hang_on_a_runtime_notify_names_it(a2):
    t = a2["thread"]
    site = next_line()
    assert HcommAclrtNotifyWaitOnThread(t, a2["id"], 0) == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert site in msg and f"thread 0x{t:x}" in msg and f"runtime notify id {a2['id']}" in msg


@pytest.mark.timeout(30)
def test_wait_for_cycle_between_two_plain_streams(a2):
    s1, s2 = a2["stream"], a2["other"]
    n2, _ = acl.rt.create_notify(0)
    id2, _ = acl.rt.get_notify_id(n2)
    site1 = next_line()
    assert acl.rt.wait_and_reset_notify(a2["notify"], s1, 0) == 0
    assert acl.rt.record_notify(n2, s1) == 0
    site2 = next_line()
    assert acl.rt.wait_and_reset_notify(n2, s2, 0) == 0
    assert acl.rt.record_notify(a2["notify"], s2) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    (cycle,) = [line for line in msg.splitlines() if "wait-for cycle:" in line]
    assert f"stream 0x{s1:x} waits for notify 0 of runtime notify id {a2['id']} (device 0) at {site1}" in cycle
    assert f"stream 0x{s2:x} waits for notify 0 of runtime notify id {id2} (device 0) at {site2}" in cycle


def test_unknown_or_destroyed_notify_id_is_para(a2, caplog):
    t = a2["thread"]
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommAclrtNotifyRecordOnThread(t, a2["id"] + 1000) == R.HCCL_E_PARA
        assert HcommAclrtNotifyWaitOnThread(t, a2["id"] + 1000, 0) == R.HCCL_E_PARA
    assert "aclrtCreateNotify" in caplog.text
    assert acl.rt.destroy_notify(a2["notify"]) == 0
    assert HcommAclrtNotifyRecordOnThread(t, a2["id"]) == R.HCCL_E_PARA
    assert HcommAclrtNotifyWaitOnThread(t, a2["id"], 0) == R.HCCL_E_PARA
    assert pyhcomm.record.tasks() == []


def test_null_or_unknown_thread(a2):
    assert HcommAclrtNotifyRecordOnThread(0, a2["id"]) == R.HCCL_E_PTR
    assert HcommAclrtNotifyWaitOnThread(0, a2["id"], 0) == R.HCCL_E_PTR
    assert HcommAclrtNotifyRecordOnThread(0x4242, a2["id"]) == R.HCCL_E_NOT_FOUND


@pytest.mark.parametrize("timeout", [-1, 1 << 32])
def test_wait_timeout_outside_uint32_is_para(a2, timeout):
    assert HcommAclrtNotifyWaitOnThread(a2["thread"], a2["id"], timeout) == R.HCCL_E_PARA


def test_notify_of_another_device_is_para(a2):
    assert acl.rt.set_device(1) == 0
    far, _ = acl.rt.create_notify(0)
    far_id, _ = acl.rt.get_notify_id(far)
    assert acl.rt.set_device(0) == 0
    assert HcommAclrtNotifyRecordOnThread(a2["thread"], far_id) == R.HCCL_E_PARA
    assert HcommAclrtNotifyWaitOnThread(a2["thread"], far_id, 0) == R.HCCL_E_PARA


def test_device_side_on_a2_in_batch_mode(a2):
    """A kernel's AICPU_TS thread releases the host's stream through a runtime notify."""
    _, (dev,) = pyhcomm.HcclThreadAcquire(a2["comm"], AICPU_TS, 1, 0)
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64, 8))
    rets = []

    def kernel():
        rets.append(HcommAclrtNotifyRecordOnThread(dev, a2["id"]))        # outside a batch: refused
        assert HcommBatchModeStart("rt") == 0
        rets.append(HcommLocalCopyOnThread(dev, dst, src, 64))
        rets.append(HcommAclrtNotifyRecordOnThread(dev, a2["id"]))
        assert HcommBatchModeEnd("rt") == 0

    pyhcomm.Stream(a2["other"], owned=False).launch(kernel)
    assert acl.rt.wait_and_reset_notify(a2["notify"], a2["stream"], 0) == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == 0
    assert rets == [R.HCCL_E_NOT_SUPPORT, 0, 0]
    assert (read(dst, 64) == data).all()


def test_atlas_350_does_not_support_runtime_notifies_on_threads(product, caplog):
    product("Atlas 350")
    comm, stream, host_thread = host_setup(notify=1)
    _, (dev,) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 1, 1)
    notify, _ = acl.rt.create_notify(0)
    notify_id, _ = acl.rt.get_notify_id(notify)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommAclrtNotifyRecordOnThread(host_thread, notify_id) == R.HCCL_E_NOT_SUPPORT
        assert HcommAclrtNotifyWaitOnThread(host_thread, notify_id, 0) == R.HCCL_E_NOT_SUPPORT
    assert "Atlas 350" in caplog.text
    rets = []

    def kernel():
        rets.append(HcommAclrtNotifyRecordOnThread(dev, notify_id))
        rets.append(HcommAclrtNotifyWaitOnThread(dev, notify_id, 0))

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.synchronize_device() == 0
    assert rets == [R.HCCL_E_NOT_SUPPORT] * 2
    assert pyhcomm.record.tasks(kind="AclrtNotifyRecord") == []
    # the runtime calls themselves work on Atlas 350
    assert acl.rt.record_notify(notify, stream) == 0
    assert acl.rt.wait_and_reset_notify(notify, stream, 0) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert acl.rt.destroy_notify(notify) == 0
