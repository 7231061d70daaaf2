"""Hangs become errors at once, with their cause.

When every host thread is blocked in a synchronize-style call and no queued task can run, the
synchronize returns ACL_ERROR_RT_TASK_TIMEOUT immediately, and the message (acl.get_recent_err_msg()
and the log) names the rank, the thread, the notify, the user's file:line that enqueued the wait
and who could have recorded it; a wait-for cycle is printed as a cycle. A wait with a timeout
fails by timeout while another host thread is still alive. Every wait here has timeout 0
(forever) or far beyond the test's own timeout, so a test that passes did not wait for a clock.
"""
import logging
import sys
import threading

import pytest

import pyhcomm
from pyhcomm import (HcommLocalCopyOnThread, HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread,
                     HcommThreadNotifyWaitOnThreadWithDefaultTimeout, HcommSetNotifyWaitTimeOut, acl)
from hcomm_testutil import JOIN_TIMEOUT, host_setup, malloc, pattern, read, run_threads, write

pytestmark = pytest.mark.timeout(30)

E = pyhcomm.AclError
R = pyhcomm.HcclResult
CPU_TS = pyhcomm.COMM_ENGINE_CPU_TS
AICPU_TS = pyhcomm.COMM_ENGINE_AICPU_TS
FOREVER = 0


def next_line() -> str:
    """``file:line`` of the caller's next line (where the call under test is)."""
    f = sys._getframe(1)
    return f"{f.f_code.co_filename}:{f.f_lineno + 1}"


@pytest.fixture
def a2():
    comm, stream, main = host_setup(notify=2)
    ret, threads = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 3, 1)
    assert ret == 0
    return {"comm": comm, "stream": stream, "main": main, "threads": threads}


def _thread_stream(comm, thread):
    ret, stream = pyhcomm.HcclThreadResGetInfo(comm, thread, pyhcomm.THREAD_RES_TYPE_STREAM, 8)
    assert ret == 0
    return stream


# -- one host thread -----------------------------------------------------------------------------------
def test_wait_that_nobody_records_returns_an_error_naming_the_notify(a2, caplog):
    main, s = a2["main"], a2["stream"]
    site = next_line()
    assert HcommThreadNotifyWaitOnThread(main, 1, FOREVER) == 0
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = acl.rt.synchronize_stream(s)
    assert ret == E.ACL_ERROR_RT_TASK_TIMEOUT == 107020
    msg = acl.get_recent_err_msg()
    assert msg.startswith("aclrtSynchronizeStream")
    assert "deadlock" in msg
    assert "rank 0" in msg and f"thread 0x{main:x}" in msg and "notify 1" in msg
    assert site in msg
    assert "nobody ever records it" in msg
    assert "host threads blocked in: aclrtSynchronizeStream" in msg
    assert site in caplog.text and "nobody ever records it" in caplog.text   # and in the log
    (w,) = pyhcomm.record.tasks(kind="ThreadNotifyWait")
    assert w.state == "failed"


def test_a_long_timeout_does_not_delay_the_report(a2):
    """1836 s (the default) is far beyond this test's 30 s: the report comes at once."""
    _, b, _ = a2["threads"]
    assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(b, 0) == 0
    assert HcommThreadNotifyWaitOnThread(a2["main"], 0, 1836) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert f"thread 0x{b:x}" in msg and f"thread 0x{a2['main']:x}" in msg


def test_tasks_behind_a_dead_wait_do_not_run(a2):
    main, s = a2["main"], a2["stream"]
    src, dst = malloc(64), malloc(64, fill=0x5A)
    write(src, pattern(64))
    assert HcommThreadNotifyWaitOnThread(main, 0, FOREVER) == 0
    assert HcommLocalCopyOnThread(main, dst, src, 64) == 0
    assert acl.rt.synchronize_stream(s) == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert (read(dst, 64) == 0x5A).all()
    (copy,) = pyhcomm.record.tasks(kind="LocalCopy")
    assert copy.state != "done"


def test_report_says_where_the_record_is_stuck(a2):
    """B's record exists but sits behind a wait of A that nobody records: the report names both."""
    a, b, _ = a2["threads"]
    a_wait = next_line()
    assert HcommThreadNotifyWaitOnThread(a, 0, FOREVER) == 0
    a_record = next_line()
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    b_wait = next_line()
    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    b_line = next(line for line in msg.splitlines() if f"waits at {b_wait}" in line)
    assert f"thread 0x{b:x}" in b_line
    assert f"the record at {a_record} is queued on rank 0 thread 0x{a:x}" in b_line
    assert f"behind ThreadNotifyWait enqueued at {a_wait}" in b_line
    a_line = next(line for line in msg.splitlines() if f"waits at {a_wait}" in line)
    assert "nobody ever records it" in a_line
    assert "wait-for cycle" not in msg


def test_wait_for_cycle_is_printed_as_a_cycle(a2):
    """A waits for B's record, which sits behind B's wait for A's record, which sits behind A's wait."""
    a, b, c = a2["threads"]
    a_wait = next_line()
    assert HcommThreadNotifyWaitOnThread(a, 0, FOREVER) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    b_wait = next_line()
    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0
    assert HcommThreadNotifyRecordOnThread(b, c, 0) == 0
    c_wait = next_line()
    assert HcommThreadNotifyWaitOnThread(c, 0, FOREVER) == 0
    assert HcommThreadNotifyRecordOnThread(c, a, 0) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    (cycle,) = [line for line in msg.splitlines() if "wait-for cycle:" in line]
    steps = cycle.split("wait-for cycle: ", 1)[1].split(" -> ")
    assert len(steps) == 4
    sites = {a: a_wait, b: b_wait, c: c_wait}
    assert set(steps[:3]) == {f"rank 0 thread 0x{t:x} waits for notify 0 of rank 0 thread 0x{t:x} at {site}"
                              for t, site in sites.items()}
    assert steps[3] == "back to " + steps[0].split(" waits for")[0]
    # each thread waits for the one that records it: a for c, c for b, b for a
    order = [next(t for t in sites if step.startswith(f"rank 0 thread 0x{t:x} ")) for step in steps[:3]]
    assert order in ([a, c, b], [c, b, a], [b, a, c])


def test_a_thread_waiting_for_its_own_later_record_is_a_cycle_of_one(a2):
    a, _, _ = a2["threads"]
    wait_site = next_line()
    assert HcommThreadNotifyWaitOnThread(a, 0, FOREVER) == 0
    record_site = next_line()
    assert HcommThreadNotifyRecordOnThread(a, a, 0) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert f"the record at {record_site} is queued on rank 0 thread 0x{a:x} behind ThreadNotifyWait enqueued at " \
           f"{wait_site}" in msg
    assert (f"wait-for cycle: rank 0 thread 0x{a:x} waits for notify 0 of rank 0 thread 0x{a:x} at {wait_site}"
            f" -> back to rank 0 thread 0x{a:x}") in msg


def test_synchronize_device_reports_an_error_of_any_stream(a2):
    """A failure on a library-owned thread stream is reported by aclrtSynchronizeDevice even when
    the user's own stream is fine; the user's stream alone synchronises cleanly."""
    main, s = a2["main"], a2["stream"]
    a, _, _ = a2["threads"]
    src, dst = malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommLocalCopyOnThread(main, dst, src, 64) == 0
    assert HcommThreadNotifyWaitOnThread(a, 0, FOREVER) == 0
    assert acl.rt.synchronize_stream(s) == 0
    assert (read(dst, 64) == data).all()
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert f"thread 0x{a:x}" in acl.get_recent_err_msg()


def test_synchronize_device_reports_a_copy_failure_of_a_thread_stream(a2):
    _, b, _ = a2["threads"]
    dst, gone = malloc(64), malloc(64)
    assert HcommLocalCopyOnThread(b, dst, gone, 64) == 0
    assert acl.rt.free(gone) == 0
    assert acl.rt.synchronize_stream(a2["stream"]) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_DEVICE_MEM_ERROR


def test_a_failed_wait_is_reported_once_and_the_stream_works_again(a2):
    """As for any other task failure: the synchronize that reports it returns the error once; the
    failed wait and the tasks behind it are dropped; the stream then works again. A record issued
    later must not revive the failed wait (its state stays "failed") but stays set for the next wait."""
    a, b, _ = a2["threads"]
    src, x, y = malloc(64), malloc(64), malloc(64)
    data = write(src, pattern(64))
    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0
    assert HcommLocalCopyOnThread(b, x, src, 64) == 0
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    (dead,) = pyhcomm.record.tasks(kind="ThreadNotifyWait")
    assert acl.rt.synchronize_device() == 0, "the same deadlock was reported twice"
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert acl.rt.synchronize_device() == 0
    assert dead.state == "failed", "a later record revived a wait that had already failed"
    assert (read(x, 64) == 0).all(), "a copy queued behind the failed wait ran later"
    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0   # the record is still there for this one
    assert HcommLocalCopyOnThread(b, y, src, 64) == 0
    assert acl.rt.synchronize_device() == 0
    assert (read(y, 64) == data).all()


# -- device side ---------------------------------------------------------------------------------------
def test_a_wait_enqueued_inside_a_kernel_names_the_kernels_line(product):
    product("Atlas 350")
    comm, stream, _ = host_setup(notify=1)
    _, (t,) = pyhcomm.HcclThreadAcquire(comm, AICPU_TS, 1, 1)
    where = []

    def kernel():
        where.append(next_line())
        assert HcommThreadNotifyWaitOnThread(t, 0, FOREVER) == 0   # Atlas 350: eager on the device

    pyhcomm.Stream(stream, owned=False).launch(kernel)
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    msg = acl.get_recent_err_msg()
    assert where[0] in msg and f"thread 0x{t:x}" in msg and "nobody ever records it" in msg


# -- several host threads ------------------------------------------------------------------------------
def test_deadlocked_ranks_on_two_host_threads_return_errors_naming_their_notifies():
    """Two Python threads each drive one rank on its own device and synchronise it; both ranks are
    deadlocked. Neither hangs: each synchronize returns an error that names its rank's notify."""
    assert acl.init() == 0
    _, root = pyhcomm.HcclGetRootInfo()
    results = {}

    def rank_main(rank):
        def body():
            assert acl.rt.set_device(rank) == 0
            ret, comm = pyhcomm.HcclCommInitRootInfo(2, root, rank)
            assert ret == 0
            ret, (p, q) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)
            assert ret == 0
            sites = []
            if rank == 0:                        # a cycle: p waits for q, q waits for p
                sites.append(next_line())
                assert HcommThreadNotifyWaitOnThread(p, 0, FOREVER) == 0
                assert HcommThreadNotifyRecordOnThread(p, q, 0) == 0
                sites.append(next_line())
                assert HcommThreadNotifyWaitOnThread(q, 0, FOREVER) == 0
                assert HcommThreadNotifyRecordOnThread(q, p, 0) == 0
            else:                                # a wait that nobody records
                sites.append(next_line())
                assert HcommThreadNotifyWaitOnThread(q, 0, FOREVER) == 0
            ret = acl.rt.synchronize_device()
            results[rank] = (ret, acl.get_recent_err_msg(), sites, (p, q))
            assert pyhcomm.HcclCommDestroy(comm) == 0
            assert acl.rt.reset_device(rank) == 0
        return body

    run_threads([rank_main(0), rank_main(1)], timeout=JOIN_TIMEOUT)
    for rank, (ret, msg, sites, (p, q)) in results.items():
        assert ret == E.ACL_ERROR_RT_TASK_TIMEOUT, (rank, ret)
        assert f"rank {rank} thread" in msg
        for site in sites:
            assert site in msg
    msg0, (p0, q0) = results[0][1], results[0][3]
    assert "wait-for cycle" in msg0 and f"0x{p0:x}" in msg0 and f"0x{q0:x}" in msg0
    assert "nobody ever records it" in results[1][1] and f"0x{results[1][3][1]:x}" in results[1][1]


def test_wait_for_cycle_across_two_host_threads_of_one_device():
    """Host thread X drives HCOMM thread tx, host thread Y drives ty, each synchronising its own
    stream; tx waits for ty and ty for tx. Both synchronize calls fail with the cycle."""
    assert acl.init() == 0
    shared = {}
    ready = threading.Barrier(2, timeout=JOIN_TIMEOUT)
    results = {}

    def x_main():
        assert acl.rt.set_device(0) == 0
        _, (comm,) = pyhcomm.HcclCommInitAll([0])
        _, (tx, ty) = pyhcomm.HcclThreadAcquire(comm, CPU_TS, 2, 1)
        shared.update(comm=comm, tx=tx, ty=ty)
        ready.wait()                             # Y is a host thread before anyone blocks
        shared["x_site"] = next_line()
        assert HcommThreadNotifyWaitOnThread(tx, 0, FOREVER) == 0
        assert HcommThreadNotifyRecordOnThread(tx, ty, 0) == 0
        ret = acl.rt.synchronize_stream(_thread_stream(comm, tx))
        results["x"] = (ret, acl.get_recent_err_msg())

    def y_main():
        assert acl.rt.set_device(0) == 0
        ready.wait()
        tx, ty = shared["tx"], shared["ty"]
        shared["y_site"] = next_line()
        assert HcommThreadNotifyWaitOnThread(ty, 0, FOREVER) == 0
        assert HcommThreadNotifyRecordOnThread(ty, tx, 0) == 0
        ret = acl.rt.synchronize_stream(_thread_stream(shared["comm"], ty))
        results["y"] = (ret, acl.get_recent_err_msg())

    run_threads([x_main, y_main])
    for who in ("x", "y"):
        ret, msg = results[who]
        assert ret == E.ACL_ERROR_RT_TASK_TIMEOUT, (who, ret)
        assert "wait-for cycle" in msg
        assert shared["x_site"] in msg and shared["y_site"] in msg
    report = pyhcomm.current_sim().scheduler.last_deadlock
    assert report.count("aclrtSynchronizeStream") == 2      # both host threads were blocked in it


def test_no_deadlock_while_another_host_thread_can_still_record(a2):
    """The main host thread synchronises while a wait is unsatisfied; another host thread, alive,
    records the notify during that synchronize (released by a kernel that runs inside it)."""
    a, b, _ = a2["threads"]
    src, dst = malloc(256), malloc(256)
    data = write(src, pattern(256, 4))
    go = threading.Event()
    registered = threading.Event()

    def helper():
        assert acl.rt.set_device(0) == 0        # a host thread from now on
        registered.set()
        assert go.wait(JOIN_TIMEOUT)
        assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
        assert acl.rt.synchronize_stream(_thread_stream(a2["comm"], a)) == 0

    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0
    assert HcommLocalCopyOnThread(b, dst, src, 256) == 0
    pyhcomm.Stream(a2["stream"], owned=False).launch(lambda: go.set())
    worker = threading.Thread(target=helper, daemon=True)
    worker.start()
    try:
        assert registered.wait(JOIN_TIMEOUT)
        assert acl.rt.synchronize_device() == 0
    finally:
        go.set()
        worker.join(JOIN_TIMEOUT)
    assert not worker.is_alive()
    assert (read(dst, 256) == data).all()


def test_short_timeout_while_another_host_thread_is_busy_fails_by_timeout(a2, caplog):
    """No deadlock can be declared while another host thread is alive and not blocked (it could
    still record): a wait with a 1 s timeout fails by timeout, with a message. A default-timeout
    wait after HcommSetNotifyWaitTimeOut(1) fails the same way. Here the busy host thread is
    pytest's own (it called aclrtSetDevice in the fixture and now sits in Thread.join); the waits
    are synchronised from a second OS thread."""
    main, s = a2["main"], a2["stream"]
    a, _, _ = a2["threads"]
    out = {}

    def waiter():
        assert acl.rt.set_device(0) == 0
        out["site"] = next_line()
        assert HcommThreadNotifyWaitOnThread(main, 1, 1) == 0
        assert HcommSetNotifyWaitTimeOut(1) == 0            # this OS thread's default
        out["default_site"] = next_line()
        assert HcommThreadNotifyWaitOnThreadWithDefaultTimeout(a, 0) == 0
        out["stream"] = (acl.rt.synchronize_stream(s), acl.get_recent_err_msg())
        out["a"] = (acl.rt.synchronize_stream(_thread_stream(a2["comm"], a)), acl.get_recent_err_msg())

    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        run_threads([waiter])
    ret, msg = out["stream"]
    assert ret == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert "timed out after 1 s" in msg and "deadlock" not in msg
    assert out["site"] in msg and f"thread 0x{main:x}" in msg and "notify 1" in msg
    assert "nobody ever records it" in msg
    ret, msg = out["a"]
    assert ret == E.ACL_ERROR_RT_TASK_TIMEOUT
    assert "timed out after 1 s" in msg and out["default_site"] in msg
    assert "timed out after 1 s" in caplog.text
    assert [w.timeout for w in pyhcomm.record.tasks(kind="ThreadNotifyWait")] == [1, 1]
    assert [w.state for w in pyhcomm.record.tasks(kind="ThreadNotifyWait")] == ["failed", "failed"]


# -- acl.get_recent_err_msg: per calling thread, cleared when read (pyACL's documented behaviour) ------
def test_recent_error_message_belongs_to_the_calling_thread():
    """pyACL: get_recent_err_msg "obtains and clears the error messages returned by other failed
    pyACL API calls in the calling thread" (thread level by default). With several host threads,
    each must read its own report (here: not another thread's failure)."""
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    seen = {}

    def failing_host():
        assert acl.rt.set_device(0) == 0
        assert acl.rt.free(0x1234) != 0
        seen["own"] = acl.get_recent_err_msg()

    run_threads([failing_host])
    assert seen["own"] and "aclrtFree" in seen["own"]
    other = acl.get_recent_err_msg()
    assert not other or "aclrtFree" not in other, f"another host thread's error was returned: {other!r}"


def test_recent_error_message_is_cleared_when_read():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    assert acl.rt.free(0x1234) != 0
    first = acl.get_recent_err_msg()
    assert first and "aclrtFree" in first
    second = acl.get_recent_err_msg()
    assert not second, f"the message was not cleared: {second!r}"


# -- recorders that are transfers: WriteWithNotify sets the peer's notify ------------------------------
def _ub_pair():
    """Atlas 350: two ranks on devices 0 and 1 with an AICPU_TS UBC_CTP channel, one AICPU_TS
    thread each; the current device is left at 0."""
    pyhcomm.set_product("Atlas 350")
    assert acl.init() == 0
    _, comms = pyhcomm.HcclCommInitAll([0, 1])
    chans = []
    for r in (0, 1):
        d = pyhcomm.HcclChannelDesc()
        assert pyhcomm.HcclChannelDescInit(d) == 0
        d.remoteRank, d.channelProtocol, d.notifyNum = 1 - r, pyhcomm.COMM_PROTOCOL_UBC_CTP, 2
        ret, (ch,) = pyhcomm.HcclChannelAcquire(comms[r], AICPU_TS, [d])
        assert ret == 0
        chans.append(ch)
    threads = []
    for r in (0, 1):
        ret, (t,) = pyhcomm.HcclThreadAcquire(comms[r], AICPU_TS, 1, 1)
        assert ret == 0
        threads.append(t)
    assert acl.rt.set_device(0) == 0
    ret, remote, _ = pyhcomm.HcclChannelGetHcclBuffer(comms[0], chans[0])
    assert ret == 0
    return comms, chans, threads, remote


def _in_kernel(device, fn):
    assert acl.rt.set_device(device) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    pyhcomm.Stream(stream, owned=False).launch(fn)
    assert acl.rt.set_device(0) == 0


def test_a_queued_write_with_notify_is_named_as_the_record_of_its_notify():
    """Rank 1 waits for its DATA notify, which rank 0's WriteWithNotify sets; that write sits behind
    a wait of rank 0 that nobody records. The report names the write as the record, stuck behind
    rank 0's wait; only rank 0's wait is one that nobody ever records."""
    _comms, (ch0, ch1), (t0, t1), remote = _ub_pair()
    src = malloc(64)
    sites = {}

    def rank0():
        sites["wait0"] = next_line()
        assert pyhcomm.HcommChannelNotifyWaitOnThread(t0, ch0, 0, FOREVER) == 0
        sites["write"] = next_line()
        assert pyhcomm.HcommWriteWithNotifyOnThread(t0, ch0, remote, src, 64, 1) == 0

    def rank1():
        sites["wait1"] = next_line()
        assert pyhcomm.HcommChannelNotifyWaitOnThread(t1, ch1, 1, FOREVER) == 0

    _in_kernel(1, rank1)
    _in_kernel(0, rank0)
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
    report = pyhcomm.current_sim().scheduler.last_deadlock
    line1 = next(line for line in report.splitlines() if f"waits at {sites['wait1']}" in line)
    line0 = next(line for line in report.splitlines() if f"waits at {sites['wait0']}" in line)
    assert f"thread 0x{t1:x}" in line1 and "(ChannelNotifyWait)" in line1
    assert "nobody ever records it" not in line1
    assert (f"the record at {sites['write']} is queued on rank 0 thread 0x{t0:x} behind ChannelNotifyWait "
            f"enqueued at {sites['wait0']} (waiting for notify 0 of rank 0 channel 0x{ch0:x}") in line1
    assert "nobody ever records it" in line0
    assert "wait-for cycle" not in report
    (w,) = pyhcomm.record.tasks(kind="WriteWithNotify")
    assert w.notify is not None and w.waits is False and w.state == "skipped"


def test_the_report_is_the_same_from_the_record_and_from_the_stream_queues(a2):
    """Facts come from the record; with recording disabled the scheduler's queues give the same text."""
    from pyhcomm.sim.hang import Facts, explain_wait
    a, b, _ = a2["threads"]
    assert HcommThreadNotifyWaitOnThread(a, 0, FOREVER) == 0
    assert HcommThreadNotifyRecordOnThread(a, b, 0) == 0
    assert HcommThreadNotifyWaitOnThread(b, 0, FOREVER) == 0
    wait_a, _rec, wait_b = pyhcomm.record.tasks()
    assert Facts().from_record
    texts = [explain_wait(wait_a), explain_wait(wait_b)]
    assert "nobody ever records it" in texts[0] and "is queued on" in texts[1]
    pyhcomm.record.enabled = False
    try:
        assert not Facts().from_record
        assert [explain_wait(wait_a), explain_wait(wait_b)] == texts
    finally:
        pyhcomm.record.enabled = True
    assert acl.rt.synchronize_device() == E.ACL_ERROR_RT_TASK_TIMEOUT
