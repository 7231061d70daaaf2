"""The threaded scheduler wakes only whom a change concerns: an enqueue wakes one sleeping host
thread (to run it), a settled object wakes its own waiters whose wait is over, a join wakes the
ranks waiting for their world only once it is complete.

Each test puts host threads to sleep in ``run_until`` and then, holding the execution lock (so
that no woken thread can resume and leave the sleepers), makes a change and counts the sleepers
whose event is set."""
import threading

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.sched.base import DONE_OK, Waitable
from hcomm_testutil import read

pytestmark = pytest.mark.threads


class _Waiter:
    """A host thread blocked in ``run_until`` on ``objs`` until ``flag`` is set; ``asleep`` is
    set once it is registered as a sleeper (its last look before it sleeps)."""

    def __init__(self, sched, objs, pred=None):
        self.sched, self.objs = sched, objs
        self.flag = False
        self.pred = pred or (lambda: self.flag)
        self.asleep = threading.Event()
        self.status = None
        self.ident = None
        self.thread = threading.Thread(target=pyhcomm.current_sim().context().run, args=(self.run,))

    def done(self):
        if threading.get_ident() == self.ident and self.ident in self.sched.sleepers:
            self.asleep.set()
        return self.pred()

    def run(self):
        self.ident = threading.get_ident()
        self.status = self.sched.run_until(self.done, 30, "test wait", self.objs, detect_stuck=False)

    def start(self):
        self.thread.start()
        return self


def _sleeping(sched, waiters):
    for w in waiters:
        assert w.asleep.wait(30), "a waiter never went to sleep"


def _woken(sched):
    return sorted(s.ident for s in sched.sleepers.values() if s.ev.is_set())


def _finish(sched, waiters):
    """End every waiter (also after a failed assertion: no thread outlives the test)."""
    for w in waiters:
        w.flag = True
        for obj in w.objs:
            sched.settle(obj)
    for w in waiters:
        w.thread.join(30)
    assert [w.status for w in waiters] == [DONE_OK] * len(waiters)


def test_an_enqueue_wakes_one_sleeping_thread_to_run_it_not_every_sleeper():
    sched = pyhcomm.current_sim().scheduler
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    buf, ret = acl.rt.malloc(64, 0)
    assert ret == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    waiters = [_Waiter(sched, (Waitable(f"w{i}"),)).start() for i in range(4)]
    try:
        _sleeping(sched, waiters)
        with sched.lock:
            assert _woken(sched) == []
            for i in range(20):
                assert acl.rt.memset_async(buf, 64, i, 64, stream) == 0
            woken = _woken(sched)
            assert len(woken) == 1 and sched.baton == woken[0]
    finally:
        _finish(sched, waiters)
    assert acl.rt.synchronize_stream(stream) == 0
    assert read(buf, 64).tolist() == [19] * 64


def test_a_settle_wakes_only_the_waiters_of_that_object_whose_wait_is_over():
    sched = pyhcomm.current_sim().scheduler
    objs = [Waitable(f"w{i}") for i in range(3)]
    waiters = [_Waiter(sched, (objs[i],)).start() for i in range(3)]
    try:
        _sleeping(sched, waiters)
        with sched.lock:
            sched.settle(objs[0])                 # its wait is not over yet
            assert _woken(sched) == []
            waiters[0].flag = True
            sched.settle(objs[1])                 # not the object waiter 0 waits on
            assert _woken(sched) == []
            sched.settle(objs[0])
            assert _woken(sched) == [waiters[0].ident]
    finally:
        _finish(sched, waiters)


def test_a_join_wakes_the_waiting_ranks_only_once_their_world_is_complete():
    sim = pyhcomm.current_sim()
    sched, transport = sim.scheduler, sim.transport
    root, n = transport.new_root(), 5
    waiters = [_Waiter(sched, (sched.rendezvous(root),), lambda: len(transport.members(root)) >= n)
               for _ in range(3)]
    for w in waiters:
        w.start()
    try:
        _sleeping(sched, waiters)
        with sched.lock:
            for rank in range(n - 1):
                transport.join(root, n, rank, rank)
                assert _woken(sched) == []
            transport.join(root, n, n - 1, n - 1)
            assert _woken(sched) == sorted(w.ident for w in waiters)
    finally:
        _finish(sched, waiters)


def test_a_recorded_notify_wakes_the_host_thread_waiting_for_it():
    """``HcommChannelNotifyWait`` without a thread waits on the notify itself."""
    from pyhcomm.sim.notify import Notify
    sched = pyhcomm.current_sim().scheduler
    n = Notify("test", 0)
    other = Waitable("other")
    waiters = [_Waiter(sched, (n,), lambda: n.value > 0).start(), _Waiter(sched, (other,)).start()]
    try:
        _sleeping(sched, waiters)
        with sched.lock:
            n.record()
            assert _woken(sched) == [waiters[0].ident]
    finally:
        _finish(sched, waiters)
