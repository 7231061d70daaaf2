"""Thread notifies: HcommThreadNotifyRecordOnThread / WaitOnThread / WaitOnThreadWithDefaultTimeout,
HcommSetNotifyWaitTimeOut (per OS thread) and HCCL_EXEC_TIMEOUT.

A notify is a 1-bit flag: a record sets it, a wait blocks its thread until it is set and then
clears it; two records before one wait coalesce (``pyhcomm.set_notify_counting(True)`` counts).
"""
import logging
import math
import sys

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (HcclError, HcclUsageError, HcommLocalCopyOnThread, HcommSetNotifyWaitTimeOut,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread,
                     HcommThreadNotifyWaitOnThreadWithDefaultTimeout, Thread, acl)
from hcomm_testutil import host_setup, malloc, pattern, read, run_threads, write

R = pyhcomm.HcclResult
E = pyhcomm.AclError
CPU_TS = pyhcomm.COMM_ENGINE_CPU_TS
AICPU_TS = pyhcomm.COMM_ENGINE_AICPU_TS
HOST_DEFAULT = 1836 + 27          # NOTIFY_WAIT_TIMEOUT_DEFAULT + the host build's offset
DEVICE_DEFAULT = 1836


def next_line() -> str:
    """``file:line`` of the caller's next line (where the call under test is)."""
    f = sys._getframe(1)
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


def _messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "pyhcomm"]


@pytest.fixture
def a2(monkeypatch):
    """Atlas 800T A2, host side: a CPU_TS thread on a user stream (2 notifies) and two CPU_TS
    threads with their own streams (1 notify each); HCCL_EXEC_TIMEOUT unset."""
    monkeypatch.delenv("HCCL_EXEC_TIMEOUT", raising=False)
    comm, stream, main = host_setup(notify=2)
    ret, (a, b) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)
    assert ret == 0
    return {"comm": comm, "stream": stream, "main": main, "a": a, "b": b}


def _waits():
    return pyhcomm.record.tasks(kind="ThreadNotifyWait")


# -- ordering ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("wait_first", [False, True])
def test_record_and_wait_order_a_copy_across_threads(a2, wait_first):
    """A copies src -> mid and records B; B waits, then copies mid -> dst. The program order of the
    calls does not matter: only execution is ordered."""
    a, b = a2["a"], a2["b"]
    src, mid, dst = malloc(4096), malloc(4096), malloc(4096)
    data = write(src, pattern(4096))

    def side_a():
        assert HcommLocalCopyOnThread(a, mid, src, 4096) == 0
        assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0

    def side_b():
        assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
        assert HcommLocalCopyOnThread(b, dst, mid, 4096) == 0

    for part in ((side_b, side_a) if wait_first else (side_a, side_b)):
        part()
    assert (read(dst, 4096) == 0).all()                        # enqueued, nothing ran
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 4096) == data).all()
    assert [t.state for t in pyhcomm.record.tasks()] == ["done"] * 4
    (rec,) = pyhcomm.record.tasks(kind="ThreadNotifyRecord")
    (wait,) = _waits()
    assert rec.thread == a and rec.detail == (b, 0) and rec.side == "host"
    assert wait.thread == b and wait.detail == (b, 0) and wait.timeout == 0


def test_wait_blocks_only_its_own_thread(a2):
    a, b = a2["a"], a2["b"]
    src, x, y = malloc(256), malloc(256), malloc(256)
    data = write(src, pattern(256))
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, y, src, 256) == 0
    assert HcommLocalCopyOnThread(a, x, src, 256) == 0
    _, a_stream = pyhcomm.HcclThreadResGetInfo(a2["comm"], a, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
    assert acl.rt.synchronize_stream(a_stream) == 0            # A runs while B is blocked
    assert (read(x, 256) == data).all()
    assert (read(y, 256) == 0).all()
    b_copy = pyhcomm.record.tasks(kind="LocalCopy")[0]
    assert b_copy.thread == b and b_copy.state == "pending"
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(y, 256) == data).all()


def test_a_thread_may_record_its_own_notify(a2):
    a = a2["a"]
    assert HcommThreadNotifyRecordOnThread(a, a, 0) == 0
    assert HcommThreadNotifyWaitOnThread(a, 0, 5) == 0
    assert acl.rt.synchronize_device() == 0
    assert [t.state for t in pyhcomm.record.tasks()] == ["done", "done"]


def test_ping_pong_between_two_threads(a2):
    """A records B.0, B waits 0, B records A.0, A waits 0, for many rounds, then one synchronize."""
    a, b = a2["a"], a2["b"]
    rounds = 50
    for _ in range(rounds):
        assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
        assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
        assert HcommThreadNotifyRecordOnThread(b, a, 0) == 0
        assert HcommThreadNotifyWaitOnThread(a, 0, 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert len(pyhcomm.record.tasks()) == 4 * rounds
    assert {t.state for t in pyhcomm.record.tasks()} == {"done"}


def test_main_thread_on_the_user_stream_waits_for_a_library_thread(a2):
    """The user stream completes only after the work the main thread waits for."""
    main, a, s = a2["main"], a2["a"], a2["stream"]
    src, dst = malloc(1024), malloc(1024)
    data = write(src, pattern(1024, 3))
    assert HcommThreadNotifyRecordOnThread(main, a, 0) == 0
    assert HcommThreadNotifyWaitOnThread(a, 0, 0) == 0
    assert HcommLocalCopyOnThread(a, dst, src, 1024) == 0
    assert HcommThreadNotifyRecordOnThread(a, main, 1) == 0
    assert HcommThreadNotifyWaitOnThread(main, 1, 0) == 0
    assert acl.rt.synchronize_stream(s) == 0                   # the user stream only
    assert (read(dst, 1024) == data).all()
    assert {t.state for t in pyhcomm.record.tasks()} == {"done"}


# -- 1-bit semantics -----------------------------------------------------------------------------------
def test_a_wait_clears_the_notify(a2, caplog):
    """One record satisfies one wait: a second wait on the same notify can never run."""
    a, b = a2["a"], a2["b"]
    src, x, y = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, x, src, 64) == 0
    site = next_line()
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, y, src, 64) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert (read(x, 64) == data).all()
    assert (read(y, 64) == 0).all()
    first, second = _waits()
    assert first.state == "done" and second.state == "failed"
    msg = acl.get_recent_err_msg()
    assert site in msg and "notify 0" in msg and f"0x{b:x}" in msg


def test_two_records_before_a_wait_coalesce(a2):
    a, b = a2["a"], a2["b"]
    src, x, y = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert acl.rt.synchronize_device() == 0                    # both records ran: the flag is 1, not 2
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, x, src, 64) == 0
    site = next_line()
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, y, src, 64) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert site in acl.get_recent_err_msg()
    assert (read(x, 64) == data).all()
    assert (read(y, 64) == 0).all()


def test_counting_option_keeps_every_record():
    comm, _stream, _main = host_setup()
    _, (old_a, old_b) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)   # created 1-bit
    pyhcomm.set_notify_counting(True)
    _, (a, b) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)           # created counting
    src, x, y = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    for t in (a, old_a):
        dst = b if t == a else old_b
        assert HcommThreadNotifyRecordOnThread(t, dst, 0) == 0
        assert HcommThreadNotifyRecordOnThread(t, dst, 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, x, src, 64) == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, y, src, 64) == 0
    assert acl.rt.synchronize_device() == 0                    # two records satisfy two waits
    assert (read(x, 64) == data).all() and (read(y, 64) == data).all()
    # the threads acquired before the option was turned on keep the hardware's 1-bit flags
    assert HcommThreadNotifyWaitOnThread(old_b, 0, 0) == 0
    assert HcommThreadNotifyWaitOnThread(old_b, 0, 0) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT


def test_counting_is_off_by_default():
    assert pyhcomm.current_sim().runtime.notify_counting is False


# -- argument errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("idx", [1, 2, 64, 1 << 32, -1])
def test_record_index_out_of_range_is_ptr(a2, caplog, idx):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommThreadNotifyRecordOnThread(a2["a"], a2["b"], idx) == R.HCCL_E_PTR == 2
    (msg,) = _messages(caplog)
    assert msg.startswith("HcommThreadNotifyRecordOnThread") and "dstNotifyIdx" in msg
    assert not pyhcomm.record.tasks()


@pytest.mark.parametrize("idx", [2, 3, 1 << 31, -1])
def test_wait_index_out_of_range_is_ptr(a2, caplog, idx):
    main = a2["main"]                                           # 2 notifies: 0 and 1 are valid
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommThreadNotifyWaitOnThread(main, idx, 0) == R.HCCL_E_PTR
        assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(main, idx) == R.HCCL_E_PTR
    msgs = _messages(caplog)
    assert msgs[0].startswith("HcommThreadNotifyWaitOnThread:") and "notifyIdx" in msgs[0]
    assert msgs[1].startswith("HcommThreadNotifyWaitOnThreadWithDefaultTimeout:")
    assert not pyhcomm.record.tasks()


def test_thread_without_notifies_has_no_valid_index(a2):
    _, (bare,) = pyhcomm.HcclThreadAcquire(a2["comm"], CPU_TS, 1, 0)
    assert HcommThreadNotifyRecordOnThread(a2["a"], bare, 0) == R.HCCL_E_PTR
    assert HcommThreadNotifyWaitOnThread(bare, 0, 0) == R.HCCL_E_PTR


def test_null_dst_thread_is_ptr(a2, caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommThreadNotifyRecordOnThread(a2["a"], 0, 0) == R.HCCL_E_PTR
        assert HcommThreadNotifyRecordOnThread(a2["a"], None, 0) == R.HCCL_E_PTR
    assert all("dstThread" in m for m in _messages(caplog))
    assert not pyhcomm.record.tasks()


def test_null_thread_is_ptr(a2):
    assert HcommThreadNotifyRecordOnThread(0, a2["b"], 0) == R.HCCL_E_PTR
    assert HcommThreadNotifyWaitOnThread(0, 0, 0) == R.HCCL_E_PTR
    assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(0, 0) == R.HCCL_E_PTR


def test_unknown_threads_are_not_found(a2):
    assert HcommThreadNotifyRecordOnThread(0x1234, a2["b"], 0) == R.HCCL_E_NOT_FOUND
    assert HcommThreadNotifyRecordOnThread(a2["a"], 0x1234, 0) == R.HCCL_E_NOT_FOUND
    assert HcommThreadNotifyWaitOnThread(0x1234, 0, 0) == R.HCCL_E_NOT_FOUND
    assert HcommThreadNotifyRecordOnThread(a2["a"], a2["stream"], 0) == R.HCCL_E_NOT_FOUND


@pytest.mark.parametrize("timeout", [-1, 1 << 32, 1 << 40])
def test_wait_timeout_outside_uint32_is_para(a2, timeout):
    assert HcommThreadNotifyWaitOnThread(a2["b"], 0, timeout) == R.HCCL_E_PARA
    assert not pyhcomm.record.tasks()


@pytest.mark.parametrize("timeout", [0, 1, 1836, (1 << 32) - 1])
def test_wait_timeout_in_seconds_is_kept(a2, timeout):
    assert HcommThreadNotifyWaitOnThread(a2["b"], 0, timeout) == 0
    (w,) = _waits()
    assert w.timeout == timeout


def test_record_of_a_thread_on_another_device_is_para(caplog):
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    _, (c0, c1) = pyhcomm.HcclCommInitAll([0, 1])
    _, (t0,) = pyhcomm.HcclThreadAcquire(c0, CPU_TS, 1, 1)
    _, (t1,) = pyhcomm.HcclThreadAcquire(c1, CPU_TS, 1, 1)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommThreadNotifyRecordOnThread(t0, t1, 0) == R.HCCL_E_PARA
    assert "device 1" in caplog.text
    assert not pyhcomm.record.tasks()


def test_device_engine_thread_from_the_host_is_not_supported(a2):
    _, (dev_thread,) = pyhcomm.HcclThreadAcquire(a2["comm"], AICPU_TS, 1, 1)
    assert HcommThreadNotifyWaitOnThread(dev_thread, 0, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommThreadNotifyRecordOnThread(dev_thread, a2["a"], 0) == R.HCCL_E_NOT_SUPPORT
    # as a destination it is fine: the host thread records it
    assert HcommThreadNotifyRecordOnThread(a2["a"], dev_thread, 0) == 0


def test_unsupported_product_is_not_supported(product):
    product("Atlas 800I A2")
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    _, (comm,) = pyhcomm.HcclCommInitAll([0])
    _, (a, b) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == R.HCCL_E_NOT_SUPPORT
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == R.HCCL_E_NOT_SUPPORT


def test_atlas_350_host_engine_threads_record_and_wait_on_the_host(product):
    """The custom-operator handshake of Atlas 350 records and waits from a host CPU_TS thread."""
    product("Atlas 350")
    comm, stream, main = host_setup(notify=1)
    _, (dev_main,) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 1, 1)
    _, (on_cpu,) = pyhcomm.HcclThreadExportToCommEngine(comm, 1, [dev_main], CPU_TS)
    assert HcommThreadNotifyRecordOnThread(main, on_cpu, 0) == 0
    assert HcommThreadNotifyRecordOnThread(main, main, 0) == 0
    assert HcommThreadNotifyWaitOnThread(main, 0, 10) == 0
    assert acl.rt.synchronize_stream(stream) == 0
    assert HcommThreadNotifyWaitOnThread(dev_main, 0, 0) == R.HCCL_E_NOT_SUPPORT   # device thread


# -- default timeouts: HcommSetNotifyWaitTimeOut (per OS thread), HCCL_EXEC_TIMEOUT ---------------------
def _in_fresh_os_thread(fn):
    """Run ``fn`` on a new OS thread: HcommSetNotifyWaitTimeOut is per OS thread, so a setting made
    there cannot leak into later tests."""
    out = {}
    run_threads([lambda: out.setdefault("v", fn())])
    return out.get("v")


def _default_wait_timeout(thread):
    pyhcomm.record.clear()
    assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(thread, 0) == 0
    (w,) = _waits()
    return w.timeout


def test_default_timeout_on_the_host_is_1836_plus_27(a2, monkeypatch):
    monkeypatch.delenv("HCCL_EXEC_TIMEOUT", raising=False)
    assert _default_wait_timeout(a2["b"]) == HOST_DEFAULT


@pytest.mark.parametrize("value,expected", [("100", 127), ("1", 28), ("0", 0)])
def test_hccl_exec_timeout_sets_the_default(a2, env, value, expected):
    env("HCCL_EXEC_TIMEOUT", value)
    assert _default_wait_timeout(a2["b"]) == expected


def test_a_bad_hccl_exec_timeout_is_a_parameter_error_naming_it(a2, env, caplog):
    env("HCCL_EXEC_TIMEOUT", "not a number")
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(a2["b"], 0) == pyhcomm.HCCL_E_PARA
    assert "HCCL_EXEC_TIMEOUT='not a number'" in caplog.text
    assert not _waits()


def test_set_notify_wait_timeout_sets_this_os_threads_default(a2, monkeypatch, env):
    env("HCCL_EXEC_TIMEOUT", "100")
    b = a2["b"]

    def body():
        assert HcommSetNotifyWaitTimeOut(7) == 0
        first = _default_wait_timeout(b)
        assert HcommSetNotifyWaitTimeOut(2.9) == 0             # truncated to whole seconds
        second = _default_wait_timeout(b)
        assert HcommSetNotifyWaitTimeOut(0) == 0               # 0 = wait forever
        third = _default_wait_timeout(b)
        assert HcommThreadNotifyWaitOnThread(b, 0, 9) == 0     # an explicit timeout ignores the default
        explicit = pyhcomm.record.tasks(kind="ThreadNotifyWait")[-1].timeout
        return first, second, third, explicit

    assert _in_fresh_os_thread(body) == (7, 2, 0, 9)
    assert _default_wait_timeout(b) == 127                     # this OS thread never set it


def test_set_notify_wait_timeout_in_one_os_thread_does_not_change_another(a2):
    b = a2["b"]
    seen = {}

    def setter():
        assert HcommSetNotifyWaitTimeOut(3) == 0
        seen["setter"] = _default_wait_timeout(b)

    def other():
        seen["other"] = _default_wait_timeout(b)

    _in_fresh_os_thread(setter)
    _in_fresh_os_thread(other)
    assert seen == {"setter": 3, "other": HOST_DEFAULT}


@pytest.mark.parametrize("value", [-1, -0.5, math.nan, float(1 << 32), 1e30])
def test_set_notify_wait_timeout_rejects_bad_values(a2, value):
    b = a2["b"]

    def body():
        assert HcommSetNotifyWaitTimeOut(11) == 0
        assert HcommSetNotifyWaitTimeOut(value) == R.HCCL_E_PARA
        return _default_wait_timeout(b)                        # the previous setting is kept

    assert _in_fresh_os_thread(body) == 11


def test_default_timeout_inside_a_kernel_is_the_kernels_own(a2, monkeypatch, env):
    """An AI CPU kernel has its own launch context: it does not inherit the launching host
    thread's HcommSetNotifyWaitTimeOut, its default has no host offset, and its own setting does
    not leak out to the host thread."""
    env("HCCL_EXEC_TIMEOUT", "100")
    _, (dev_thread,) = pyhcomm.HcclThreadAcquire(a2["comm"], AICPU_TS, 1, 1)
    b = a2["b"]
    rets = []

    def kernel():
        pyhcomm.HcommBatchModeStart("timeouts")                # A2 device side: batch mode
        rets.append(HcommThreadNotifyRecordOnThread(dev_thread, dev_thread, 0))
        rets.append(HcommThreadNotifyWaitOnThreadWithDefaultTimeout(dev_thread, 0))
        rets.append(HcommSetNotifyWaitTimeOut(4))
        rets.append(HcommThreadNotifyRecordOnThread(dev_thread, dev_thread, 0))
        rets.append(HcommThreadNotifyWaitOnThreadWithDefaultTimeout(dev_thread, 0))
        pyhcomm.HcommBatchModeEnd("timeouts")

    def host():
        assert acl.rt.set_device(0) == 0
        assert HcommSetNotifyWaitTimeOut(5) == 0
        user, _ = acl.rt.create_stream()
        pyhcomm.Stream(user, owned=False).launch(kernel)
        assert acl.rt.synchronize_stream(user) == 0
        return _default_wait_timeout(b)                        # still 5 after the kernel set 4

    assert _in_fresh_os_thread(host) == 5
    assert rets == [0] * 5


def test_device_side_waits_record_their_timeouts(a2, monkeypatch, env):
    env("HCCL_EXEC_TIMEOUT", "100")
    _, (dev_thread,) = pyhcomm.HcclThreadAcquire(a2["comm"], AICPU_TS, 1, 1)

    def kernel():
        pyhcomm.HcommBatchModeStart("t")
        for timeout in (None, 4, None):
            if timeout is not None:
                assert HcommSetNotifyWaitTimeOut(timeout) == 0
            assert HcommThreadNotifyRecordOnThread(dev_thread, dev_thread, 0) == 0
            assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(dev_thread, 0) == 0
        assert HcommThreadNotifyRecordOnThread(dev_thread, dev_thread, 0) == 0
        assert HcommThreadNotifyWaitOnThread(dev_thread, 0, 0) == 0
        pyhcomm.HcommBatchModeEnd("t")

    user, _ = acl.rt.create_stream()
    pyhcomm.Stream(user, owned=False).launch(kernel)
    assert acl.rt.synchronize_stream(user) == 0
    assert acl.rt.synchronize_device() == 0
    assert [(w.side, w.timeout, w.state) for w in _waits()] == [
        ("device", 100, "done"), ("device", 4, "done"), ("device", 4, "done"), ("device", 0, "done")]


# -- the Pythonic tier ---------------------------------------------------------------------------------
def test_pythonic_record_and_wait(a2):
    a, b = Thread(a2["a"]), Thread(a2["b"])
    src, dst = malloc(512), malloc(512)
    data = write(src, pattern(512, 9))
    b.wait(0, timeout=30)
    b.local_copy(dst, src, 512)
    a.record(b, 0)
    b.record(a.handle, 0)                                      # a handle works too
    a.wait(0)                                                  # the default timeout
    assert [w.timeout for w in _waits()] == [30, HOST_DEFAULT]
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 512) == data).all()


def test_pythonic_errors_raise_with_code_and_api(a2):
    a, b = Thread(a2["a"]), Thread(a2["b"])
    with pytest.raises(HcclUsageError) as exc:
        a.record(b, 5)
    assert exc.value.code == R.HCCL_E_PTR and exc.value.api == "HcommThreadNotifyRecordOnThread"
    with pytest.raises(HcclError) as exc:
        b.wait(1)
    assert exc.value.code == R.HCCL_E_PTR and exc.value.api == "HcommThreadNotifyWaitOnThreadWithDefaultTimeout"
    with pytest.raises(HcclUsageError) as exc:
        b.wait(0, timeout=-3)
    assert exc.value.code == R.HCCL_E_PARA
    with pytest.raises(HcclUsageError) as exc:
        a.record(0, 0)
    assert exc.value.code == R.HCCL_E_PTR and "dstThread" in str(exc.value)


def test_pythonic_notify_num(a2):
    assert Thread(a2["main"]).notify_num == 2 and Thread(a2["a"]).notify_num == 1


def test_copy_bytes_after_many_hops(a2):
    """A relay of copies over three threads, each step released by a notify: bytes arrive intact."""
    comm = a2["comm"]
    _, threads = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 3, 1)
    n = 1 << 16
    bufs = [malloc(n) for _ in range(len(threads) + 1)]
    data = write(bufs[0], np.random.default_rng(5).integers(0, 256, n, dtype=np.uint8))
    for i, t in enumerate(threads):
        if i:
            assert HcommThreadNotifyWaitOnThread(t, 0, 0) == 0
        assert HcommLocalCopyOnThread(t, bufs[i + 1], bufs[i], n) == 0
        if i + 1 < len(threads):
            assert HcommThreadNotifyRecordOnThread(t, threads[i + 1], 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(bufs[-1], n) == data).all()
