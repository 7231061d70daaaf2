"""The threaded scheduler: host programs are OS threads (for programs that bring their own).

Tasks run on whichever host thread blocks in ``run_until``: that thread becomes the device and runs
every runnable task of every stream, FIFO per stream, until what it waits for holds. A single-
threaded program therefore gives the same order on every run. Execution happens under one lock;
enqueueing never takes it (a blocked acquire there would queue every enqueue behind the thread that
runs tasks).

Wake-ups are targeted; no change wakes every sleeper. A blocked thread with nothing to run sleeps
on its own event, registered as a waiter of each object it waits for (a stream, a notify, a
channel end, a world's rendezvous: ``run_until``'s ``streams``); a change to an object wakes the
waiters of that object whose wait is over, nobody else. Work that may run (a task enqueued, a
notify recorded, a kernel ended) while no thread drives wakes one sleeper, the *baton*, which
runs it; a thread that leaves ``run_until`` with hinted work left hands the baton on. (Waking
every sleeper at each enqueue, join and return from ``run_until`` made the 64 threads of a mesh
AllGather queue on the lock, each scanning every stream and host, and a run take 2-4x as long
now and then.) A wait that names no object is re-checked at every change the scheduler hears
of, and :meth:`ThreadedScheduler.poke` (a change it is not told the object of) re-checks every
sleeper's wait. A sleeper also wakes when a wait task's timeout or its own deadline passes, and
at least every ``MAX_SLEEP`` seconds.

An AI CPU kernel runs on an OS thread of its own (``pyhcomm-kernel-*``), registered as a host
program while it runs, so two kernels of different ranks that wait for each other both progress.
A kernel holds the execution lock while it runs and lets it go only while it blocks, and the
thread that reached its launch waits until it first blocks or ends, as if the kernel ran on that
thread: nothing else runs between two of its blocking calls, so a single host program with
kernels still gives the same order on every run. Each block of an AIV kernel is such a thread
(``pyhcomm-kernel-*.<block>``), started in block order.

When every registered host thread is blocked and nothing can run, the blocked streams fail with
the hang report (see :mod:`pyhcomm.sched.base`). Then a thread asleep in a timed wait (a timeout
its caller chose) is progress, not a hang: it will wake and go on. Only then do the blocked calls
get ``STUCK``, a kernel's first (it holds its stream busy: when its wait fails it ends, and its
stream goes on). The set of host threads that are not asleep is
kept as threads sleep and wake, so the last thread to fall asleep sees the hang; a host thread
that ends while every other one sleeps wakes one sleeper to look, and a sleeper that sees the
hang but may not report it (a rendezvous) wakes one that may.
"""
from __future__ import annotations

import heapq
import threading

from .base import ABORTED, DONE_OK, STUCK, TIMED_OUT, Scheduler, _monotonic

MAX_SLEEP = 1.0  # a sleeping host thread re-checks at least this often (belt and braces)
REMOTE_POLL = 0.005  # ... and this often when ranks of other processes may send messages


class Sleeper:
    """A host thread blocked in ``run_until``: the event it sleeps on and what it waits for.
    A key of the ``waiters`` of each object it watches."""

    __slots__ = ("ident", "ev", "done", "detect", "timed")

    def __init__(self, ident):
        self.ident = ident
        self.ev = threading.Event()
        self.done = None        # its predicate while it sleeps
        self.detect = True      # it may return STUCK
        self.timed = False      # it waits with a timeout its caller chose (it will wake: progress)

    def __repr__(self):
        return f"<Sleeper {self.ident}{' woken' if self.ev.is_set() else ''}>"


class ThreadedScheduler(Scheduler):
    """See the module docstring."""

    name = "threaded"

    def __init__(self, sim):
        super().__init__(sim)
        self.lock = threading.RLock()   # a kernel thread holds it twice while it drives (see _acquire)
        self._levels: dict = {}         # thread ident -> how many times it holds ``lock``
        self._parked: dict = {}         # kernel thread ident -> Event set when it first blocks or ends
        self.sleepers: dict = {}        # thread ident -> its Sleeper while it sleeps (= blocked)
        self.generic: dict = {}         # thread ident -> Sleeper of a wait that names no object
        self._own: dict = {}            # thread ident -> its reusable Sleeper
        self.drivers = 0                # threads in run_until that are not asleep (under ``lock``)
        self.baton = None               # ident of the sleeper woken to drive, until it runs
        self._baton_lock = threading.Lock()   # orders choosing the baton with its holder resuming
        self.hosts: dict = {}           # thread ident -> threading.Thread using the runtime
        self.awake: set = set()         # idents of the hosts not asleep (woken counts as awake)
        self._timers: list = []         # heap of (expiry, seq, stream, task): blocked waits that time out
        self._kernel_ids = 0
        self.kernel_threads: set = set()   # idents of the OS threads running a kernel now

    # -- waking ----------------------------------------------------------------------------------
    def _wake_one(self, s: Sleeper) -> None:
        """Wake ``s``: it counts as awake at once (hang detection), then its event is set."""
        if s.ident in self.hosts:
            self.awake.add(s.ident)
        s.ev.set()

    def _wake_all(self) -> None:
        """Wake every sleeper (an abort, a reset: every wait must look again)."""
        for s in list(self.sleepers.values()):
            self._wake_one(s)

    def _recheck(self, sleepers) -> None:
        """Wake those of ``sleepers`` whose wait is over. No lock needed: a sleeper registers
        before its last look at what it waits for (see ``_loop``)."""
        for s in sleepers:
            done = s.done   # (None once it resumed)
            if done is not None and not s.ev.is_set() and done():
                self._wake_one(s)

    def _stream_settled(self, obj) -> None:
        """``obj`` (a stream that went idle or failed, an object settled) changed: wake its
        waiters whose wait is over, and those of the waits that name no object."""
        if obj.waiters:
            self._recheck(list(obj.waiters))
        if self.generic:
            self._recheck(list(self.generic.values()))

    def settle(self, obj) -> None:
        """``obj`` (a channel end that paired, a notify recorded, a rendezvous that completed)
        changed: wake only the sleepers waiting on it whose wait is over."""
        self._stream_settled(obj)

    def poke(self) -> None:
        """A change the scheduler is not told the object of (messages of other processes):
        wake every sleeper whose wait is over. The library's own changes name their object
        (:meth:`settle`); this looks at every sleeper's wait, but wakes only those it ends."""
        if self.sleepers:
            self._recheck(list(self.sleepers.values()))

    def hint(self, stream) -> None:
        """``stream`` may be able to run: when no thread drives, wake one sleeper to run it."""
        self.ready[stream] = None
        if not self.drivers and self.baton is None and self.sleepers:
            self._pass_baton()

    def _pass_baton(self) -> None:
        """Wake one sleeper to drive: there may be work to run and no thread runs it. A sleeper
        woken already and not yet resumed drives when it does: it takes the baton, nobody else
        wakes. (Chosen under ``_baton_lock`` from the sleepers of that moment: the one chosen has
        not passed :meth:`_resumed` yet, which takes the same lock, so it clears the baton.)"""
        with self._baton_lock:
            if self.baton is not None:
                return
            for s in list(self.sleepers.values()):
                self.baton = s.ident
                if not s.ev.is_set():
                    self._wake_one(s)
                return

    def _resumed(self, me) -> None:
        """``me`` woke and left the sleepers: if it held the baton, it drives now."""
        with self._baton_lock:  # (always: a baton chosen from an older list of sleepers may name it)
            if self.baton == me:
                self.baton = None

    def _wake_detector(self, me) -> bool:
        """Every host is asleep and nothing can run, but ``me`` may not report it: wake a sleeper
        that may (it will see the hang). False when none sleeps."""
        for s in list(self.sleepers.values()):
            if s.detect and s.ident != me and not s.ev.is_set():
                self._wake_one(s)
                return True
        return False

    # -- host threads --------------------------------------------------------------------------
    def register_host(self) -> None:
        t = threading.current_thread()
        self.hosts[t.ident] = t
        self.awake.add(t.ident)

    def unregister_host(self) -> None:
        """The calling thread enqueues nothing more. When every other host sleeps, one sleeper
        wakes to look whether the world can still progress (hang detection)."""
        ident = threading.get_ident()
        self.hosts.pop(ident, None)
        self.awake.discard(ident)
        self._own.pop(ident, None)
        if self.sleepers and not self.awake:
            self._wake_detector(ident) or self._pass_baton()

    # -- enqueue -------------------------------------------------------------------------------
    def submit(self, task) -> None:
        """Append ``task`` to its stream; never runs it (except past ``DRAIN_DEPTH``). When no
        thread drives, one sleeper wakes to run it (see :meth:`hint`)."""
        # No lock: deque.append and the dict inserts are atomic under the GIL, _run_streams
        # re-checks a queue after dropping it from ``active``, and a sleeper registers before its
        # last look at the queues, so no wake-up is lost.
        if self.enqueue(task):
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
        if progressed and self.generic:
            self._recheck(list(self.generic.values()))
        return progressed

    def _blocked_head(self, stream, task) -> None:
        """``task`` is the blocked head of ``stream``: time it (see :meth:`_expire`)."""
        super()._blocked_head(stream, task)
        if task.timeout:
            heapq.heappush(self._timers, (task.t_head + task.timeout, task.seq, stream, task))

    def _timer_heads(self):
        """Drop the timers of waits that are no longer blocked at their stream's head."""
        timers = self._timers
        while timers:
            _, _, stream, task = timers[0]
            if (task.state == self._pending and stream.error is None and stream.queue
                    and stream.queue[0] is task and not stream.busy):
                return timers[0]
            heapq.heappop(timers)
        return None

    def _expire(self, now) -> bool:
        """Fail the blocked waits whose timeout passed; return whether any did (the earliest
        first: a heap of the blocked waits with a timeout, not a scan of every stream)."""
        expired = False
        while True:
            head = self._timer_heads()
            if head is None or head[0] > now:
                return expired
            heapq.heappop(self._timers)
            _, _, stream, task = head
            if not task.ready():
                self._time_out(stream, task)
                expired = True

    def _next_expiry(self, deadline):
        head = self._timer_heads()
        if head is None:
            return deadline
        return head[0] if deadline is None else min(deadline, head[0])

    def fail_stream(self, stream, exc) -> None:
        with self.lock:
            super().fail_stream(stream, exc)

    def spawn_blocks(self, stream, bodies) -> None:
        """Start each of ``bodies`` on a new OS thread (called by the driver, under the lock), one
        after another: the next starts when the one before first blocks or ends, so nothing else
        runs between two of a block's blocking calls."""
        stream.busy = True
        self._kernel_ids += 1
        left = [len(bodies)]
        me = threading.get_ident()
        levels = self._levels.get(me, 0)
        for i, body in enumerate(bodies):
            name = f"pyhcomm-kernel-{self._kernel_ids}" + (f".{i}" if len(bodies) > 1 else "")
            self._start_block(stream, body, name, left, levels)

    def _start_block(self, stream, body, name, left, levels) -> None:
        parked = threading.Event()

        def run():
            me = threading.get_ident()
            self.kernel_threads.add(me)
            self._parked[me] = parked
            self._acquire(me)
            try:
                body()
            finally:
                left[0] -= 1
                if not left[0]:
                    stream.busy = False
                    self.hint(stream)    # its next tasks, its waiters: a driver settles them
                self._release(me)
                self._parked.pop(me, None)
                self.kernel_threads.discard(me)
                parked.set()
                self.unregister_host()

        t = threading.Thread(target=self.sim.context().run, args=(run,), daemon=True, name=name)
        t.start()
        self.hosts[t.ident] = t
        self.awake.add(t.ident)
        for _ in range(levels):     # hand over until the block first blocks or ends
            self.lock.release()
        try:
            parked.wait()
        finally:
            for _ in range(levels):
                self.lock.acquire()

    # -- host programs ---------------------------------------------------------------------------
    def run_programs(self, programs, timeout: float | None = None) -> list:
        """See :meth:`pyhcomm.sched.base.Scheduler.run_programs`: one OS thread per program
        (``pyhcomm-<name>``, daemon); a thread still running after the abort is left behind
        after five more seconds (it is stuck outside the library)."""
        threads = [threading.Thread(target=self.sim.context().run, args=(body,), daemon=True,
                                    name="pyhcomm-" + name.replace(" ", "")) for name, body in programs]
        for t in threads:
            t.start()
        deadline = None if timeout is None else _monotonic() + timeout
        for t in threads:  # the timeout bounds the whole run, not each join
            t.join(None if deadline is None else max(0.0, deadline - _monotonic()))
        unfinished = [name for (name, _body), t in zip(programs, threads) if t.is_alive()]
        if unfinished:
            self.abort(f"the host programs still ran after {timeout} s")
            for t in threads:
                t.join(5.0)
        return unfinished

    # -- blocking ------------------------------------------------------------------------------
    def run_until(self, done, timeout: float | None = None, what: str = "", streams=None,
                  detect_stuck: bool = True) -> str:
        """See :meth:`pyhcomm.sched.base.Scheduler.run_until`. Blocks the calling OS thread."""
        deadline = None if timeout is None else _monotonic() + timeout
        me = threading.get_ident()
        if what:
            self._calls[me] = what
        try:
            self._acquire(me)
            try:
                self.drivers += 1
                try:
                    return self._loop(done, deadline, me, detect_stuck, streams)
                finally:
                    self.drivers -= 1
                    if self.ready and not self.drivers and self.sleepers:
                        self._pass_baton()  # hinted work this thread leaves: one sleeper runs it
            finally:
                self._release(me)
        finally:
            if what:
                self._calls.pop(me, None)

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
            if self.sim.transport.watch():      # ... or about to come
                continue
            now = _monotonic()
            if self._expire(now):
                continue
            if deadline is not None and now >= deadline:
                return TIMED_OUT
            if self._world_stuck(me):
                if not self.sim.transport.world_idle():   # another process may still send something
                    continue
                if self._fail_deadlock():
                    continue
                if self._stuck_for(me, detect_stuck):
                    return STUCK
            wake = self._next_expiry(deadline)
            s = self._own.get(me)
            if s is None:
                s = self._own[me] = Sleeper(me)
            s.done, s.detect, s.timed = done, detect_stuck, detect_stuck and deadline is not None
            s.ev.clear()
            self.sleepers[me] = s         # (a sleeping thread runs nothing else: never nested)
            if watched:                   # woken when an object it waits on settles
                for st in watched:
                    if st.waiters is None:
                        st.waiters = {}   # (a dict: a world's rendezvous may have a waiter per rank)
                    st.waiters[s] = None
            else:                         # woken when any change makes ``done`` hold
                self.generic[me] = s
            self.awake.discard(me)
            self.drivers -= 1
            try:
                # A submitter that saw a driver appended before this step, so this step runs
                # its task; a later one sees no driver and wakes a sleeper. The same for a
                # change outside the queues (a peer connected, a rank joined): one made before
                # this thread was registered was not seen by its settle, so look again now.
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
                    s.ev.wait(wait)
                finally:
                    if me in self.hosts:  # (woken by its timeout: nobody marked it awake)
                        self.awake.add(me)
                    for _ in range(levels):
                        self.lock.acquire()
            finally:
                self.drivers += 1
                if me in self.hosts:
                    self.awake.add(me)
                del self.sleepers[me]
                s.done, s.timed = None, False
                if watched:
                    for st in watched:
                        st.waiters.pop(s, None)
                else:
                    del self.generic[me]
                self._resumed(me)

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

    def _stuck_for(self, me, detect_stuck: bool) -> bool:
        """Nothing can progress and no stream head is blocked: whether ``me`` returns ``STUCK`` now.
        Not while another thread sleeps in a timed wait (it will wake and go on: progress); a
        kernel asleep in a wait gets it first (it holds its stream busy: woken, it sees the hang
        itself); a wait that may not report it (a rendezvous) wakes one that may (it needs the
        lock: it looks after ``me`` sleeps)."""
        if any(s.timed and s.ident != me for s in list(self.sleepers.values())):
            return False
        if not detect_stuck:
            self._wake_detector(me)
            return False
        return me in self.kernel_threads or not self._wake_kernel(me)

    def _world_stuck(self, me) -> bool:
        """True when every host thread but ``me`` sleeps and was not woken since (a host that
        ended without saying so is forgotten). Looks at the hosts that are awake only."""
        for ident in list(self.awake):
            if ident == me:
                continue
            t = self.hosts.get(ident)
            if t is None:                  # unregistered meanwhile
                self.awake.discard(ident)
                continue
            if t.is_alive():
                return False
            self.hosts.pop(ident, None)
            self.awake.discard(ident)
        return True

    def _wake_kernel(self, me) -> bool:
        """Nothing can progress and no stream head is blocked: a kernel asleep in a wait holds its
        stream busy, so failing that wait is progress. Wake one such kernel (the oldest asleep) to
        see the hang and return ``STUCK`` itself; False when no kernel sleeps."""
        for s in list(self.sleepers.values()):
            if s.detect and s.ident != me and s.ident in self.kernel_threads:
                if not s.ev.is_set():
                    self._wake_one(s)
                return True
        return False

    def abort(self, reason: str) -> None:
        """Make every blocking call return ``ABORTED`` (another rank failed)."""
        if self.abort_reason is None:
            self.abort_reason = reason
        self._wake_all()

    def drop_stream(self, stream) -> None:
        with self.lock:
            super().drop_stream(stream)

    def reset(self) -> None:
        with self.lock:
            super().reset()
            self._timers.clear()
        self._wake_all()
