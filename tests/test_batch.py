"""Batch mode: HcommBatchModeStart(tag) / HcommBatchModeEnd(tag), per OS thread (or per kernel).

Tasks issued between Start and End are kept and submitted at End: until then they have not even
reached their stream (not in pyhcomm.record, not run by a synchronize). Unpaired or mismatched
calls are HCCL_E_PARA. On Atlas A2/A3, device-side code must use batch mode: a primitive issued
in a kernel outside a batch is HCCL_E_NOT_SUPPORT, and a kernel that ends with its batch open
fails its stream with ACL_ERROR_RT_AICPU_EXCEPTION. Atlas 350 runs eager or batch.
"""
import logging
import sys
import threading

import numpy as np
import pytest

import pyhcomm
from pyhcomm import (HcommBatchModeEnd, HcommBatchModeStart, HcommLocalCopyOnThread, HcommLocalReduceOnThread,
                     HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread, acl)
from pyhcomm.sim.runtime import program_ctx
from hcomm_testutil import JOIN_TIMEOUT, host_setup, malloc, pattern, read, run_threads, write

R = pyhcomm.HcclResult
E = pyhcomm.AclError
CPU_TS = pyhcomm.COMM_ENGINE_CPU_TS
AICPU_TS = pyhcomm.COMM_ENGINE_AICPU_TS
FP32, SUM = pyhcomm.HCOMM_DATA_TYPE_FP32, pyhcomm.HCOMM_REDUCE_SUM


def next_line() -> str:
    f = sys._getframe(1)
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


@pytest.fixture(autouse=True)
def no_batch_left_open():
    """Batch state belongs to the OS thread and outlives aclFinalize: a test must close its batches."""
    yield
    leaked, program_ctx().batch = program_ctx().batch, None
    assert leaked is None, f"batch {leaked.tag!r} left open on the test's thread"


@pytest.fixture
def a2():
    comm, stream, main = host_setup(notify=2)
    ret, (a, b) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)
    assert ret == 0
    return {"comm": comm, "stream": stream, "main": main, "a": a, "b": b}


def _launch(stream, fn, *args):
    pyhcomm.Stream(stream, owned=False).launch(fn, *args)


# -- host side -----------------------------------------------------------------------------------------
def test_a_copy_in_an_open_batch_has_not_reached_the_stream(a2):
    t, s = a2["main"], a2["stream"]
    src, dst = malloc(256), malloc(256)
    data = write(src, pattern(256))
    assert HcommBatchModeStart("copy") == 0
    assert HcommLocalCopyOnThread(t, dst, src, 256) == 0
    assert pyhcomm.record.tasks() == []                   # not on the stream, not even recorded
    assert acl.rt.synchronize_stream(s) == 0              # nothing to run
    assert acl.rt.synchronize_device() == 0
    assert (read(dst, 256) == 0).all()
    assert HcommBatchModeEnd("copy") == 0
    (task,) = pyhcomm.record.tasks(kind="LocalCopy")      # submitted at End ...
    assert task.state == "pending"                         # ... and still asynchronous
    assert (read(dst, 256) == 0).all()
    assert acl.rt.synchronize_stream(s) == 0
    assert task.state == "done"
    assert (read(dst, 256) == data).all()


def test_end_submits_in_issue_order_across_threads(a2):
    """A batch holds tasks of several threads; End submits them in the order they were issued."""
    a, b, main = a2["a"], a2["b"], a2["main"]
    src, mid, dst, red = malloc(1024), malloc(1024), malloc(1024), malloc(1024)
    data = write(src, pattern(1024))
    ones = np.ones(256, np.float32)
    write(red, ones.view(np.uint8))
    assert HcommBatchModeStart("chain") == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, 0) == 0
    assert HcommLocalCopyOnThread(b, dst, mid, 1024) == 0
    assert HcommLocalReduceOnThread(b, red, dst, 256, FP32, SUM) == 0
    assert HcommThreadNotifyRecordOnThread(b, main, 0) == 0
    assert HcommLocalCopyOnThread(a, mid, src, 1024) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyWaitOnThread(main, 0, 0) == 0
    assert pyhcomm.record.tasks() == []
    assert HcommBatchModeEnd("chain") == 0
    kinds = [(t.kind, t.thread) for t in pyhcomm.record.tasks()]
    assert kinds == [("ThreadNotifyWait", b), ("LocalCopy", b), ("LocalReduce", b), ("ThreadNotifyRecord", b),
                     ("LocalCopy", a), ("ThreadNotifyRecord", a), ("ThreadNotifyWait", main)]
    seqs = [t.seq for t in pyhcomm.record.tasks()]
    assert seqs == sorted(seqs)
    assert acl.rt.synchronize_stream(a2["stream"]) == 0   # the user stream waits for the chain
    assert (read(dst, 1024) == data).all()
    expected = ones + data.view(np.float32)
    assert np.array_equal(read(red, 1024).view(np.float32), expected)


@pytest.mark.parametrize("tag", [None, "", "t", "x" * 255])
def test_tags_none_empty_and_long_are_valid(a2, tag):
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommBatchModeStart(tag) == 0
    assert HcommLocalCopyOnThread(a2["main"], dst, src, 64) == 0
    assert HcommBatchModeEnd(tag) == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == 0
    assert (read(dst, 64) == data).all()


def test_an_empty_batch_is_fine(a2):
    assert HcommBatchModeStart("empty") == 0
    assert HcommBatchModeEnd("empty") == 0
    assert pyhcomm.record.tasks() == []


def test_batches_can_follow_each_other(a2):
    src, dst = malloc(64), malloc(64)
    write(src, pattern(64))
    for i in range(3):
        assert HcommBatchModeStart(f"b{i}") == 0
        assert HcommLocalCopyOnThread(a2["main"], dst, src, 64) == 0
        assert HcommBatchModeEnd(f"b{i}") == 0
    assert len(pyhcomm.record.tasks(kind="LocalCopy")) == 3
    assert acl.rt.synchronize_stream(a2["stream"]) == 0


def test_end_without_start_is_para(a2, caplog):
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommBatchModeEnd("never") == R.HCCL_E_PARA == 1
    assert "HcommBatchModeEnd" in caplog.text and "no batch is open" in caplog.text


def test_start_twice_is_para_and_keeps_the_first_batch(a2, caplog):
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    site = next_line()
    assert HcommBatchModeStart("outer") == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommBatchModeStart("inner") == R.HCCL_E_PARA
    assert "'outer' is already open" in caplog.text and site in caplog.text
    assert HcommLocalCopyOnThread(a2["main"], dst, src, 64) == 0
    assert pyhcomm.record.tasks() == []                    # still batched in "outer"
    assert HcommBatchModeEnd("inner") == R.HCCL_E_PARA
    assert HcommBatchModeEnd("outer") == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == 0
    assert (read(dst, 64) == data).all()


def test_mismatched_tag_is_para_and_the_batch_stays_open(a2, caplog):
    src, dst = malloc(64), malloc(64)
    write(src, pattern(64))
    assert HcommBatchModeStart("a") == 0
    assert HcommLocalCopyOnThread(a2["main"], dst, src, 64) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert HcommBatchModeEnd("b") == R.HCCL_E_PARA
        assert HcommBatchModeEnd(None) == R.HCCL_E_PARA
    assert "'b'" in caplog.text and "'a'" in caplog.text
    assert pyhcomm.record.tasks() == []
    assert HcommBatchModeEnd("a") == 0
    assert len(pyhcomm.record.tasks()) == 1


def test_tag_too_long_is_para(a2):
    assert HcommBatchModeStart("x" * 256) == R.HCCL_E_PARA
    assert HcommBatchModeEnd("x" * 256) == R.HCCL_E_PARA


def test_tag_of_the_wrong_type_is_a_type_error(a2):
    with pytest.raises(TypeError):
        HcommBatchModeStart(5)


def test_batch_mode_is_per_os_thread(a2):
    """X opens a batch; Y's copies are eager and Y cannot end X's batch; X's End submits X's copy."""
    main, a = a2["main"], a2["a"]
    src, dx, dy = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    opened, y_done = threading.Event(), threading.Event()
    seen = {}

    def x():
        assert HcommBatchModeStart("x") == 0
        assert HcommLocalCopyOnThread(main, dx, src, 64) == 0
        opened.set()
        assert y_done.wait(JOIN_TIMEOUT)
        seen["before_end"] = [t.thread for t in pyhcomm.record.tasks(kind="LocalCopy")]
        assert HcommBatchModeEnd("x") == 0

    def y():
        assert opened.wait(JOIN_TIMEOUT)
        assert HcommLocalCopyOnThread(a, dy, src, 64) == 0     # eager: no batch on this OS thread
        seen["y_record"] = [t.thread for t in pyhcomm.record.tasks(kind="LocalCopy")]
        seen["y_end"] = HcommBatchModeEnd("x")
        y_done.set()

    run_threads([x, y])
    assert seen == {"y_record": [a], "y_end": R.HCCL_E_PARA, "before_end": [a]}
    assert [t.thread for t in pyhcomm.record.tasks(kind="LocalCopy")] == [a, main]
    assert acl.rt.synchronize_device() == 0
    assert (read(dx, 64) == data).all() and (read(dy, 64) == data).all()


def test_synchronize_inside_an_open_batch_does_not_run_it(a2):
    """A wait on the user stream, satisfied by a record kept in a batch that is not yet ended,
    cannot run; the report names the batch."""
    a, main = a2["a"], a2["main"]
    assert HcommThreadNotifyWaitOnThread(main, 0, 0) == 0     # eager
    assert HcommBatchModeStart("late") == 0
    site = next_line()
    assert HcommThreadNotifyRecordOnThread(a, main, 0) == 0   # kept in the batch
    try:
        assert acl.rt.synchronize_stream(a2["stream"]) == E.ACL_ERROR_RT_TASK_TIMEOUT
    finally:
        assert HcommBatchModeEnd("late") == 0
    msg = acl.get_recent_err_msg()
    assert f"the record at {site} sits in batch 'late', which was never ended" in msg


# -- device side, Atlas A2 / A3: batch mode is mandatory --------------------------------------------------
@pytest.fixture(params=["Atlas 800T A2", "Atlas A3"])
def device_a2a3(request, product):
    product(request.param)
    comm, stream, _ = host_setup(notify=1)
    _, (t, u) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 2, 1)
    return {"comm": comm, "stream": stream, "t": t, "u": u}


def test_device_side_primitives_outside_a_batch_are_not_supported(device_a2a3, caplog):
    t, u = device_a2a3["t"], device_a2a3["u"]
    src, dst = malloc(64), malloc(64, fill=0x11)
    rets = []

    def kernel():
        rets.append(HcommLocalCopyOnThread(t, dst, src, 64))
        rets.append(HcommLocalReduceOnThread(t, dst, src, 16, FP32, SUM))
        rets.append(HcommThreadNotifyRecordOnThread(t, u, 0))
        rets.append(HcommThreadNotifyWaitOnThread(u, 0, 0))
        rets.append(pyhcomm.HcommThreadNotifyWaitOnThreadWithDefaultTimeout(u, 0))

    _launch(device_a2a3["stream"], kernel)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == 0             # the kernel itself returns normally
    assert rets == [R.HCCL_E_NOT_SUPPORT] * 5
    assert "HcommBatchModeStart" in caplog.text
    assert pyhcomm.record.tasks(kind="LocalCopy") == [] and pyhcomm.record.tasks(kind="ThreadNotifyWait") == []
    assert (read(dst, 64) == 0x11).all()


def test_device_side_primitives_inside_a_batch_run_at_end(device_a2a3):
    t, u = device_a2a3["t"], device_a2a3["u"]
    src, mid, dst = malloc(512), malloc(512), malloc(512)
    data = write(src, pattern(512))
    seen = []

    def kernel():
        assert HcommBatchModeStart("dev") == 0
        assert HcommLocalCopyOnThread(t, mid, src, 512) == 0
        assert HcommThreadNotifyRecordOnThread(t, u, 0) == 0
        assert HcommThreadNotifyWaitOnThread(u, 0, 0) == 0
        assert HcommLocalCopyOnThread(u, dst, mid, 512) == 0
        seen.append(len(pyhcomm.record.tasks()))            # still kept in the kernel's batch
        assert HcommBatchModeEnd("dev") == 0
        seen.append(len(pyhcomm.record.tasks()))

    _launch(device_a2a3["stream"], kernel)
    assert acl.rt.synchronize_device() == 0
    assert seen[1] - seen[0] == 4
    assert (read(dst, 512) == data).all()
    assert {t.side for t in pyhcomm.record.tasks() if t.kind != "KernelLaunch"} == {"device"}


def test_a_kernel_ending_with_an_open_batch_fails_its_stream(device_a2a3, caplog):
    t = device_a2a3["t"]
    src, dst = malloc(64), malloc(64, fill=0x22)
    write(src, pattern(64))

    def kernel():
        assert HcommBatchModeStart("forgot") == 0
        assert HcommLocalCopyOnThread(t, dst, src, 64) == 0   # never launched

    _launch(device_a2a3["stream"], kernel)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_stream(device_a2a3["stream"]) == E.ACL_ERROR_RT_AICPU_EXCEPTION == 507018
    msg = acl.get_recent_err_msg()
    assert "'forgot'" in msg and "HcommBatchModeEnd was never called" in msg and "1 task" in msg
    assert acl.rt.synchronize_device() == 0
    assert pyhcomm.record.tasks(kind="LocalCopy") == []
    assert (read(dst, 64) == 0x22).all()
    # the host thread that ran the kernel has no batch open afterwards
    assert HcommBatchModeEnd("forgot") == R.HCCL_E_PARA


def test_the_kernels_batch_is_not_the_host_threads(device_a2a3):
    """Kernel and host keep separate batch state: the kernel cannot end the host's batch, the
    host's open batch does not hold the kernel's tasks, and each ends its own."""
    comm = device_a2a3["comm"]
    t = device_a2a3["t"]
    _, (h,) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 1, 1)
    src, d_dev, d_host = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    rets = []

    def kernel():
        rets.append(HcommBatchModeEnd("host"))
        rets.append(HcommBatchModeStart("kernel"))
        rets.append(HcommLocalCopyOnThread(t, d_dev, src, 64))
        rets.append(HcommBatchModeEnd("kernel"))

    assert HcommBatchModeStart("host") == 0
    try:
        assert HcommLocalCopyOnThread(h, d_host, src, 64) == 0
        _launch(device_a2a3["stream"], kernel)           # a launch is not a batched primitive
        assert acl.rt.synchronize_stream(device_a2a3["stream"]) == 0
        assert acl.rt.synchronize_device() == 0
        assert rets == [R.HCCL_E_PARA, 0, 0, 0]
        assert (read(d_dev, 64) == data).all()
        assert (read(d_host, 64) == 0).all()
    finally:
        assert HcommBatchModeEnd("host") == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(d_host, 64) == data).all()


# -- Atlas 350: eager or batch ---------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [False, True])
def test_atlas_350_runs_device_side_code_eager_or_batched(product, batch):
    product("Atlas 350")
    comm, stream, _ = host_setup(notify=1)
    _, (t, u) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 2, 1)
    src, mid, dst = malloc(256), malloc(256), malloc(256)
    data = write(src, pattern(256))
    counts = []

    def kernel():
        if batch:
            assert HcommBatchModeStart("350") == 0
        assert HcommLocalCopyOnThread(t, mid, src, 256) == 0
        assert HcommThreadNotifyRecordOnThread(t, u, 0) == 0
        assert HcommThreadNotifyWaitOnThread(u, 0, 0) == 0
        assert HcommLocalCopyOnThread(u, dst, mid, 256) == 0
        counts.append(len(pyhcomm.record.tasks(kind="LocalCopy")))
        if batch:
            assert HcommBatchModeEnd("350") == 0

    _launch(stream, kernel)
    assert acl.rt.synchronize_device() == 0
    assert counts == [0 if batch else 2]
    assert (read(dst, 256) == data).all()


# -- HcommThreadJoin (Atlas 350, device side), HcommFenceOnThread, HcommThreadResAcquireTimeOut -----------
@pytest.fixture
def on_350(product):
    product("Atlas 350")
    comm, stream, user = host_setup(notify=1)
    _, (t, u) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 2, 1)
    return {"comm": comm, "stream": stream, "user": user, "t": t, "u": u}


def _kernel_read(ptr, n):
    out = np.zeros(n, np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out


def test_thread_join_waits_for_the_threads_tasks_inside_the_kernel(on_350):
    """The idiom for "prior tasks must be complete mid-kernel": end the batch, join, restart."""
    t, u = on_350["t"], on_350["u"]
    src, mid, dst = malloc(256), malloc(256), malloc(256)
    data = write(src, pattern(256))
    seen = {}

    def kernel():
        assert HcommBatchModeStart("join") == 0
        assert HcommLocalCopyOnThread(u, mid, src, 256) == 0
        assert HcommBatchModeEnd("join") == 0
        seen["before"] = _kernel_read(mid, 256)              # submitted, not run
        seen["join"] = pyhcomm.HcommThreadJoin(u, 10)
        seen["after"] = _kernel_read(mid, 256)
        assert HcommBatchModeStart("join") == 0
        assert HcommLocalCopyOnThread(t, dst, mid, 256) == 0
        assert HcommBatchModeEnd("join") == 0

    _launch(on_350["stream"], kernel)
    assert acl.rt.synchronize_device() == 0
    assert seen["join"] == 0
    assert (seen["before"] == 0).all()
    assert (seen["after"] == data).all()
    assert (read(dst, 256) == data).all()


def test_thread_join_of_an_idle_thread_returns_at_once(on_350):
    rets = []
    _launch(on_350["stream"], lambda: rets.append(pyhcomm.HcommThreadJoin(on_350["t"], 0)))
    assert acl.rt.synchronize_device() == 0
    assert rets == [0]


@pytest.mark.timeout(30)
def test_thread_join_of_a_thread_that_can_never_finish_is_timeout_at_once(on_350):
    """Nothing can record u's notify: the join does not sit out its timeout, it fails with
    HCCL_E_TIMEOUT, and the host's synchronize reports the deadlock."""
    u = on_350["u"]
    rets = []
    site = []

    def kernel():
        site.append(next_line())
        assert HcommThreadNotifyWaitOnThread(u, 0, 0) == 0
        rets.append(pyhcomm.HcommThreadJoin(u, 1836))

    _launch(on_350["stream"], kernel)
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert rets == [R.HCCL_E_TIMEOUT]
    assert site[0] in acl.get_recent_err_msg()


@pytest.mark.timeout(30)
def test_thread_join_timeout_while_another_host_thread_is_busy(on_350, caplog):
    """With another host thread alive (pytest's, in Thread.join) the join runs out its 1 s timeout."""
    t, u = on_350["t"], on_350["u"]
    rets = []

    def kernel():
        assert HcommThreadNotifyWaitOnThread(u, 0, 0) == 0
        rets.append(pyhcomm.HcommThreadJoin(u, 1))
        assert HcommThreadNotifyRecordOnThread(t, u, 0) == 0   # now let u finish
        rets.append(pyhcomm.HcommThreadJoin(u, 0))

    def host():
        assert acl.rt.set_device(0) == 0
        _launch(on_350["stream"], kernel)
        rets.append(acl.rt.synchronize_device())

    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        run_threads([host])
    assert rets == [R.HCCL_E_TIMEOUT, 0, 0]
    assert "HcommThreadJoin" in caplog.text and "after 1 s" in caplog.text


def test_thread_join_reports_a_failure_of_the_thread(on_350, caplog):
    """The thread's wait can never be satisfied: its stream fails (a deadlock) and the join, which
    would wait for ever (timeout 0), returns that failure's code."""
    u = on_350["u"]
    rets = []

    def kernel():
        assert pyhcomm.HcommThreadNotifyWaitOnThread(u, 0, 0) == 0     # no record will come
        rets.append(pyhcomm.HcommThreadJoin(u, 0))

    _launch(on_350["stream"], kernel)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT   # kept for the host
    assert rets == [R.HCCL_E_TIMEOUT]
    assert f"HcommThreadJoin: thread 0x{u:x} failed: " in caplog.text


def test_thread_join_argument_errors(on_350):
    t = on_350["t"]
    _, (own,) = pyhcomm.HcclThreadExportToCommEngine(on_350["comm"], 1, [on_350["user"]], AICPU_TS)
    rets = []

    def kernel():
        rets.append(pyhcomm.HcommThreadJoin(0, 1))
        rets.append(pyhcomm.HcommThreadJoin(0x4242, 1))
        rets.append(pyhcomm.HcommThreadJoin(t, -1))
        rets.append(pyhcomm.HcommThreadJoin(own, 1))          # the kernel's own stream: never idle

    _launch(on_350["stream"], kernel)
    assert acl.rt.synchronize_device() == 0
    assert rets == [R.HCCL_E_PTR, R.HCCL_E_NOT_FOUND, R.HCCL_E_PARA, R.HCCL_E_PARA]


def test_thread_join_on_the_host_is_not_supported(on_350):
    assert pyhcomm.HcommThreadJoin(on_350["t"], 1) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcommThreadJoin(on_350["user"], 1) == R.HCCL_E_NOT_SUPPORT


def test_thread_join_is_atlas_350_only(device_a2a3, caplog):
    rets = []
    _launch(device_a2a3["stream"], lambda: rets.append(pyhcomm.HcommThreadJoin(device_a2a3["t"], 1)))
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert acl.rt.synchronize_device() == 0
    assert rets == [R.HCCL_E_NOT_SUPPORT]
    assert "Atlas 350" in caplog.text


def test_fence_on_a_cpu_engine_thread_on_the_host(on_350):
    ret, (cpu,) = pyhcomm.HcclThreadAcquire(on_350["comm"], pyhcomm.COMM_ENGINE_CPU, 1, 0)
    assert ret == 0
    assert pyhcomm.HcommFenceOnThread(cpu) == 0
    assert pyhcomm.HcommFenceOnThread(cpu) == 0


def test_fence_on_other_engines_or_inside_a_kernel_is_not_supported(on_350, caplog):
    _, (cpu,) = pyhcomm.HcclThreadAcquire(on_350["comm"], pyhcomm.COMM_ENGINE_CPU, 1, 0)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcommFenceOnThread(on_350["user"]) == R.HCCL_E_NOT_SUPPORT   # CPU_TS
        assert pyhcomm.HcommFenceOnThread(on_350["t"]) == R.HCCL_E_NOT_SUPPORT      # AICPU_TS
    assert "COMM_ENGINE_CPU_TS" in caplog.text
    rets = []

    def kernel():
        rets.append(pyhcomm.HcommFenceOnThread(cpu))
        rets.append(pyhcomm.HcommFenceOnThread(on_350["t"]))

    _launch(on_350["stream"], kernel)
    assert acl.rt.synchronize_device() == 0
    assert rets == [R.HCCL_E_NOT_SUPPORT] * 2


def test_fence_argument_errors(on_350):
    assert pyhcomm.HcommFenceOnThread(0) == R.HCCL_E_PTR
    assert pyhcomm.HcommFenceOnThread(0x4242) == R.HCCL_E_NOT_FOUND


def test_fence_on_atlas_a2_is_not_supported(a2):
    """CPU engine threads exist only on Atlas 350, so an A2 host thread can never be fenced."""
    assert pyhcomm.HcclThreadAcquire(a2["comm"], pyhcomm.COMM_ENGINE_CPU, 1, 0) == (R.HCCL_E_NOT_SUPPORT, [])
    assert pyhcomm.HcommFenceOnThread(a2["main"]) == R.HCCL_E_NOT_SUPPORT
    assert pyhcomm.HcommFenceOnThread(a2["a"]) == R.HCCL_E_NOT_SUPPORT


@pytest.mark.parametrize("name", ["Atlas 800T A2", "Atlas 350"])
def test_thread_res_acquire_timeout_is_device_side_only(product, name):
    product(name)
    _comm, stream, _ = host_setup()
    assert pyhcomm.HcommThreadResAcquireTimeOut(1856) == R.HCCL_E_NOT_SUPPORT
    rets = []

    def kernel():
        for value in (0, 1856, 2.5, -1, float("nan"), float(1 << 32)):
            rets.append(pyhcomm.HcommThreadResAcquireTimeOut(value))

    _launch(stream, kernel)
    assert acl.rt.synchronize_device() == 0
    assert rets == [0, 0, 0, R.HCCL_E_PARA, R.HCCL_E_PARA, R.HCCL_E_PARA]


def test_a_kernel_that_raises_inside_a_batch_launches_nothing_and_leaves_no_batch_open(device_a2a3):
    open_batches = pyhcomm.current_sim().open_batches
    t = device_a2a3["t"]
    src, dst = malloc(64), malloc(64, fill=0x22)

    def kernel():
        HcommBatchModeStart("doomed")
        assert HcommLocalCopyOnThread(t, dst, src, 64) == 0
        raise RuntimeError("kernel bug")

    _launch(device_a2a3["stream"], kernel)
    assert acl.rt.synchronize_device() == pyhcomm.ACL_ERROR_RT_AICPU_EXCEPTION
    assert "kernel bug" in acl.get_recent_err_msg()
    assert not open_batches
    assert [x.state for x in pyhcomm.record.tasks(kind="LocalCopy")] == []   # never launched
    assert (read(dst, 64) == 0x22).all()
