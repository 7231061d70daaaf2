"""The threaded scheduler: host programs are OS threads (for programs that bring their own).

Tasks run on whichever host thread blocks in ``run_until``: that thread becomes the device and runs
every runnable task of every stream, FIFO per stream, until what it waits for holds. A single-
threaded program therefore gives the same order on every run. Execution happens under one lock;
enqueueing never takes it (a blocked acquire there would queue every enqueue behind the thread that
runs tasks). When nothing can run, a blocked thread sleeps on its own event until another thread
enqueues work, ``poke()`` reports a change (a rank joined, a channel paired), a wait task's timeout
passes, or a task it waits for settles.

An AI CPU kernel runs on an OS thread of its own (``pyhcomm-kernel-*``), registered as a host
program while it runs, so two kernels of different ranks that wait for each other both progress.
A kernel holds the execution lock while it runs and lets it go only while it blocks, and the
thread that reached its launch waits until it first blocks or ends, as if the kernel ran on that
thread: nothing else runs between two of its blocking calls, so a single host program with
kernels still gives the same order on every run.
When every registered host thread is blocked and nothing can run, the blocked streams fail with
the hang report (see :mod:`pyhcomm.sched.base`).
"""
from __future__ import annotations

import threading

from .base import ABORTED, DONE_OK, STUCK, TIMED_OUT, Scheduler, _monotonic

MAX_SLEEP = 1.0  # a sleeping host thread re-checks at least this often (belt and braces)
REMOTE_POLL = 0.005  # ... and this often when ranks of other processes may send messages


class ThreadedScheduler(Scheduler):
    """See the module docstring."""

    name = "threaded"

    def __init__(self, sim):
        super().__init__(sim)
        self.lock = threading.RLock()   # a kernel thread holds it twice while it drives (see _acquire)
        self._levels: dict = {}         # thread ident -> how many times it holds ``lock``
        self._parked: dict = {}         # kernel thread ident -> Event set when it first blocks or ends
        self.sleepers: dict = {}        # thread ident -> threading.Event it sleeps on (= blocked)
        self._events: dict = {}         # thread ident -> its reusable Event
        self.drivers = 0                # host threads in run_until that are not asleep
        self.gen = 0                    # bumped at every wake-up: progress others must look at
        self.sleep_gen: dict = {}       # thread ident -> ``gen`` when it went to sleep
        self.preds: dict = {}           # thread ident -> the predicate of a sleeper that names no stream
        self.hosts: dict = {}           # thread ident -> threading.Thread using the runtime
        self._kernel_ids = 0

    def _wake(self) -> None:
        """Wake every sleeper: something they wait for may be done. Needs no lock: a sleeper
        registers its event before its last look at the queues (see ``_loop``)."""
        self.gen += 1
        for ev in list(self.sleepers.values()):
            if not ev.is_set():  # setting takes the event's lock: skip the ones already woken
                ev.set()

    poke = _wake

    # -- host threads --------------------------------------------------------------------------
    def register_host(self) -> None:
        t = threading.current_thread()
        self.hosts[t.ident] = t

    def unregister_host(self) -> None:
        ident = threading.get_ident()
        self.hosts.pop(ident, None)
        self._events.pop(ident, None)
        self._wake()

    # -- enqueue -------------------------------------------------------------------------------
    def submit(self, task) -> None:
        """Append ``task`` to its stream; never runs it (except past ``DRAIN_DEPTH``)."""
        # No lock: deque.append and the dict inserts are atomic under the GIL, _run_streams
        # re-checks a queue after dropping it from ``active``, and a sleeper registers its event
        # before its last look at the queues, so no wake-up is lost.
        deep = self.enqueue(task)
        if self.sleepers and not self.drivers:  # a running driver finds the task by itself
            self._wake()
        if deep:
            self.run_ready()

    # -- execution -----------------------------------------------------------------------------
    def run_ready(self) -> bool:
        """Run every task that can run now, without waiting; return whether any ran."""
        ran = False
        with self.lock:
            while self._step():
                ran = True
        return ran

    def _step(self) -> bool:
        """Run what can run. Looks first at the streams hinted ready (new work, a recorded notify
        they wait on, a finished kernel); only when they give nothing, at every active stream, so
        a missed hint costs time, never progress."""
        progressed = False
        if self.ready:
            hinted = list(self.ready)
            self.ready.clear()
            progressed = self._run_streams(hinted)
        if not progressed:
            progressed = self._run_streams(list(self.active))
        if progressed and self.preds and any(p() for p in list(self.preds.values())):
            self._wake()  # only when a sleeper's wait is over: no thundering herd on every step
        return progressed

    def _stream_settled(self, stream) -> None:
        """``stream`` went idle or failed: wake the sleepers waiting on it whose wait is over."""
        for ev, done in list(stream.waiters):
            if not ev.is_set() and done():
                self.gen += 1
                ev.set()

    def settle(self, obj) -> None:
        """``obj`` (a channel end that paired, ...) changed: wake only the sleepers waiting on it
        whose wait is over. (Waking every sleeper at each of a mesh's n**2 pairings made the
        host threads convoy on the lock.) No lock needed: a sleeper registers on ``obj`` before
        its last look at ``done``."""
        if obj.waiters:
            self._stream_settled(obj)

    def fail_stream(self, stream, exc) -> None:
        with self.lock:
            super().fail_stream(stream, exc)
        self._wake()

    def spawn_kernel(self, stream, body) -> None:
        """Start ``body`` on a new OS thread (called by the driver, under the lock)."""
        stream.busy = True
        self._kernel_ids += 1

        parked = threading.Event()

        def run():
            me = threading.get_ident()
            self._parked[me] = parked
            self._acquire(me)
            try:
                body()
            finally:
                stream.busy = False
                self.ready[stream] = None
                self._release(me)
                self._parked.pop(me, None)
                parked.set()
                self.unregister_host()  # also wakes the sleepers

        t = threading.Thread(target=self.sim.context().run, args=(run,), daemon=True,
                             name=f"pyhcomm-kernel-{self._kernel_ids}")
        me = threading.get_ident()
        levels = self._levels.get(me, 0)
        t.start()
        self.hosts[t.ident] = t
        for _ in range(levels):     # hand over until the kernel first blocks or ends
            self.lock.release()
        try:
            parked.wait()
        finally:
            for _ in range(levels):
                self.lock.acquire()

    # -- blocking ------------------------------------------------------------------------------
    def run_until(self, done, timeout: float | None = None, what: str = "", streams=None,
                  detect_stuck: bool = True) -> str:
        """See :meth:`pyhcomm.sched.base.Scheduler.run_until`. Blocks the calling OS thread."""
        deadline = None if timeout is None else _monotonic() + timeout
        me = threading.get_ident()
        if what:
            self.blocked_calls[me] = what
        try:
            self._acquire(me)
            try:
                self.drivers += 1
                try:
                    return self._loop(done, deadline, me, detect_stuck, streams)
                finally:
                    self.drivers -= 1  # first: a submitter that still saw this driver is covered below
                    if self.sleepers:
                        self._wake()  # hand over: others may have work that this thread left runnable
            finally:
                self._release(me)
        finally:
            if what:
                self.blocked_calls.pop(me, None)

    def _loop(self, done, deadline, me, detect_stuck, streams) -> str:
        watched = [st for st in streams if not getattr(st, "destroyed", False)] if streams else None
        while True:
            if done():
                return DONE_OK
            if self.abort_reason is not None:
                return ABORTED
            if self._step():
                continue
            if done():
                return DONE_OK
            if self.sim.transport.progress():   # messages of other processes (local: none)
                continue
            now = _monotonic()
            if self._expire(now):
                self._wake()
                continue
            if deadline is not None and now >= deadline:
                return TIMED_OUT
            if self._world_stuck(me):
                if not self.sim.transport.world_idle():   # another process may still send something
                    continue
                if self._fail_deadlock():
                    self._wake()
                    continue
                if detect_stuck:
                    return STUCK
            wake = self._next_expiry(deadline)
            ev = self._events.get(me)
            if ev is None:
                ev = self._events[me] = threading.Event()
            ev.clear()
            self.sleepers[me] = ev        # (a sleeping thread runs nothing else: never nested)
            entry = (ev, done)
            if watched:                   # woken by the streams it waits on (see _stream_settled)
                for st in watched:
                    if st.waiters is None:
                        st.waiters = []
                    st.waiters.append(entry)
            else:                         # woken when any step makes ``done`` hold
                self.preds[me] = done
            self.sleep_gen[me] = self.gen
            self.drivers -= 1
            try:
                # A submitter that saw no sleeper or a running driver appended before this
                # step, so this step runs its task; any later one sets the event. The same for
                # a change outside the queues (a peer connected, a rank joined): one made before
                # this thread was a sleeper was not seen by its poke, so look again now.
                if done() or self._step():
                    continue
                wait = MAX_SLEEP if wake is None else min(MAX_SLEEP, max(0.0, wake - now))
                if self.sim.transport.remote:   # messages of other processes wake nobody
                    wait = min(wait, REMOTE_POLL)
                levels = self._levels[me]
                handover = self._parked.pop(me, None)
                if handover is not None:  # a kernel's first block: the thread that started it goes on
                    handover.set()
                for _ in range(levels):  # every level: a kernel thread also holds it for its body
                    self.lock.release()
                try:
                    ev.wait(wait)
                finally:
                    for _ in range(levels):
                        self.lock.acquire()
            finally:
                self.drivers += 1
                del self.sleepers[me]
                if watched:
                    for st in watched:
                        st.waiters.remove(entry)
                else:
                    del self.preds[me]

    def _acquire(self, me) -> None:
        self.lock.acquire()
        self._levels[me] = self._levels.get(me, 0) + 1

    def _release(self, me) -> None:
        n = self._levels[me] - 1
        if n:
            self._levels[me] = n
        else:
            del self._levels[me]
        self.lock.release()

    def _world_stuck(self, me) -> bool:
        for ident, t in tuple(self.hosts.copy().items()):  # copy(): atomic, hosts change without the lock
            if ident == me:
                continue
            if ident in self.sleepers:
                if self.sleep_gen.get(ident) != self.gen:
                    return False  # woken since it slept: it has not looked at the progress yet
                continue
            if not t.is_alive():
                self.hosts.pop(ident, None)
                continue
            return False
        return True

    def abort(self, reason: str) -> None:
        """Make every blocking call return ``ABORTED`` (another rank failed)."""
        if self.abort_reason is None:
            self.abort_reason = reason
        self._wake()

    def drop_stream(self, stream) -> None:
        with self.lock:
            super().drop_stream(stream)
        self._wake()

    def reset(self) -> None:
        with self.lock:
            super().reset()
        self._wake()
