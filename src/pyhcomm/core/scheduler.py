"""The scheduler: runs queued tasks, and turns hangs into errors.

Execution model. Enqueueing never runs a task; tasks run when a host thread blocks in a
synchronize-style call (``aclrtSynchronizeStream``, ``HcommThreadJoin``, ...): that thread becomes
the device and runs every runnable task of every stream, in FIFO order per stream, until what it
waits for is done. So results appear only after a synchronisation, on a laptop exactly as the
contract says, and a single-threaded program gives the same order on every run. A stream whose queue grows past
``DRAIN_DEPTH`` runs its runnable tasks at enqueue time, like a full hardware queue.

A task whose ``ready()`` is false (a notify wait) blocks its stream. When nothing can run, the
blocked host thread sleeps until another host thread enqueues work, or a wait task's timeout
passes (the stream then fails with ``HCCL_E_TIMEOUT``). When every host thread that uses the
runtime is blocked and nothing can run, nothing ever will: the blocked streams fail at once with
an :class:`HcclDeadlockError` that names each wait and who could have satisfied it.

Execution happens under one re-entrant lock: an AI CPU kernel runs inline on the thread that
reached its launch task and may enqueue tasks or wait (re-entering the scheduler).
"""
from __future__ import annotations

import threading
import time

from ..errors import HcclDeadlockError, HcclError, HcclResult, HcclRuntimeError, HcclTimeoutError
from . import notify as notify_mod
from .task import DONE, FAILED, RUNNING, SKIPPED, record

DRAIN_DEPTH = 1 << 16

DONE_OK, TIMED_OUT, STUCK, ABORTED = "done", "timeout", "stuck", "aborted"
MAX_SLEEP = 1.0  # a sleeping host thread re-checks at least this often (belt and braces)

_monotonic = time.monotonic


class Scheduler:
    """Process-wide task execution (see the module docstring)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.sleepers: dict = {}        # thread ident -> threading.Event it sleeps on (= blocked)
        self._events: dict = {}         # thread ident -> its reusable Event
        self.active: dict = {}          # streams with queued tasks, in the order they got work
        self.ready: dict = {}           # streams hinted runnable since the last step
        self.drivers = 0                # host threads in run_until that are not asleep
        self.gen = 0                    # bumped at every wake-up: progress others must look at
        self.sleep_gen: dict = {}       # thread ident -> ``gen`` when it went to sleep
        self.preds: dict = {}           # thread ident -> the ``done`` predicate it sleeps on
        self.hosts: dict = {}           # thread ident -> threading.Thread using the runtime
        self.last_deadlock = None       # the report of the most recent deadlock
        self.blocked_calls: dict = {}   # thread ident -> the blocking call it is in (for reports)
        self.abort_reason = None        # set by pyhcomm.launch when a rank fails: blocking calls give up

    def _wake(self) -> None:
        """Wake every sleeper: something they wait for may be done. Needs no lock: a sleeper
        registers its event before its last look at the queues (see ``_loop``)."""
        self.gen += 1
        for ev in list(self.sleepers.values()):
            if not ev.is_set():  # setting takes the event's lock: skip the ones already woken
                ev.set()

    # -- host threads --------------------------------------------------------------------------
    def register_host(self) -> None:
        """Count the calling OS thread as one that may still enqueue work."""
        t = threading.current_thread()
        self.hosts[t.ident] = t

    def unregister_host(self) -> None:
        """The calling OS thread will enqueue nothing more: sleepers may now find the world stuck."""
        ident = threading.get_ident()
        self.hosts.pop(ident, None)
        self._events.pop(ident, None)
        self._wake()

    # -- enqueue -------------------------------------------------------------------------------
    def submit(self, task) -> None:
        """Append ``task`` to its stream; never runs it (except past ``DRAIN_DEPTH``)."""
        task.seq = next(_seq)
        if record.enabled:
            _record_append(task)
        stream = task.stream
        q = stream.queue
        # No lock on this path (a blocked acquire here would queue every enqueue behind the
        # thread running tasks): deque.append and the dict insert are atomic under the GIL, _step
        # re-checks a queue after dropping it from ``active``, and a sleeper registers its event
        # before its last look at the queues, so no wake-up is lost.
        q.append(task)
        if stream not in self.active:
            self.active[stream] = None
        self.ready[stream] = None
        if self.sleepers and not self.drivers:  # a running driver finds the task by itself
            self._wake()
        if len(q) >= DRAIN_DEPTH:
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
        if progressed and self.sleepers and any(p() for p in list(self.preds.values())):
            self._wake()  # only when a sleeper's wait is over: no thundering herd on every step
        return progressed

    def _run_streams(self, streams) -> bool:
        progressed = False
        active = self.active
        for stream in streams:
            q = stream.queue
            while q and not stream.busy:
                task = q[0]
                if stream.error is not None:
                    q.popleft()
                    task.state = SKIPPED
                    progressed = True
                    continue
                ready = task.ready
                if ready is not None and not ready():
                    if task.t_head is None:
                        task.t_head = _monotonic()
                        notify = getattr(task, "notify", None)
                        if notify is not None:
                            notify.waiter = stream  # its record hints this stream ready
                    break
                q.popleft()
                progressed = True
                task.state = RUNNING
                try:
                    task.run()
                except HcclError as exc:
                    self._fail(stream, task, exc)
                except Exception as exc:  # a bug in a task body must not kill the host thread
                    self._fail(stream, task, HcclRuntimeError(
                        HcclResult.HCCL_E_INTERNAL, task.kind, f"{task.describe()} raised {exc!r}"))
                else:
                    task.state = DONE
            if not q and not stream.busy:
                active.pop(stream, None)
                if q:  # a task was appended while we dropped the stream: keep it active
                    active[stream] = None
        return progressed

    def hint(self, stream) -> None:
        """Say that ``stream`` may be able to run (lock-free; only a hint, see ``_step``)."""
        self.ready[stream] = None

    def _fail(self, stream, task, exc) -> None:
        """Fail ``task`` (running, or blocked at the head) and drop what its stream still queues."""
        task.state = FAILED
        if stream.error is None:
            stream.error = exc
        q = stream.queue
        if q and q[0] is task:
            q.popleft()
        while q:
            q.popleft().state = SKIPPED

    def fail_stream(self, stream, exc) -> None:
        """Fail ``stream`` with ``exc``: its queued tasks will be skipped."""
        with self.lock:
            if stream.error is None:
                stream.error = exc
            if stream.queue and stream not in self.active:
                self.active[stream] = None
            self._wake()

    # -- blocking ------------------------------------------------------------------------------
    def run_until(self, done, timeout: float | None = None, what: str = "") -> str:
        """Run tasks until ``done()`` holds. Blocks the calling host thread.

        Returns ``DONE_OK``; ``TIMED_OUT`` when ``timeout`` seconds passed first; ``STUCK`` when
        nothing can ever make ``done()`` true (after failing the blocked streams, if any).
        """
        deadline = None if timeout is None else _monotonic() + timeout
        me = threading.get_ident()
        if what:
            self.blocked_calls[me] = what
        try:
            return self._run_until(done, deadline, me)
        finally:
            if what:
                self.blocked_calls.pop(me, None)

    def _run_until(self, done, deadline, me) -> str:
        with self.lock:
            self.drivers += 1
            try:
                return self._loop(done, deadline, me)
            finally:
                self.drivers -= 1  # first: a submitter that still saw this driver is covered below
                if self.sleepers:
                    self._wake()  # hand over: others may have work that this thread left runnable

    def _loop(self, done, deadline, me) -> str:
        while True:
            if done():
                return DONE_OK
            if self.abort_reason is not None:
                return ABORTED
            if self._step():
                continue
            if done():
                return DONE_OK
            now = _monotonic()
            if self._expire(now):
                continue
            if deadline is not None and now >= deadline:
                return TIMED_OUT
            if self._world_stuck(me):
                if self._fail_deadlock():
                    continue
                return STUCK
            wake = self._next_expiry(deadline)
            ev = self._events.get(me)
            if ev is None:
                ev = self._events[me] = threading.Event()
            ev.clear()
            self.sleepers[me] = ev        # (a sleeping thread runs nothing else: never nested)
            self.preds[me] = done
            self.sleep_gen[me] = self.gen
            self.drivers -= 1
            try:
                # A submitter that saw no sleeper or a running driver appended before this
                # step, so this step runs its task; any later one sets the event.
                if self._step():
                    continue
                wait = MAX_SLEEP if wake is None else min(MAX_SLEEP, max(0.0, wake - now))
                state = self.lock._release_save()  # release every level (a kernel may nest)
                try:
                    ev.wait(wait)
                finally:
                    self.lock._acquire_restore(state)
            finally:
                self.drivers += 1
                del self.sleepers[me]
                del self.preds[me]

    def _world_stuck(self, me) -> bool:
        for ident, t in list(self.hosts.items()):
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

    def blocked_heads(self):
        """The (stream, task) pairs whose head task cannot run now."""
        out = []
        for stream in list(self.active):  # submit() inserts without the lock
            if stream.queue and not stream.busy and stream.error is None:
                task = stream.queue[0]
                if task.ready is not None and not task.ready():
                    out.append((stream, task))
        return out

    def _expire(self, now) -> bool:
        expired = False
        for stream, task in self.blocked_heads():
            if task.timeout and task.t_head is not None and now - task.t_head >= task.timeout:
                msg = (f"{task.describe()} timed out after {task.timeout:g} s"
                       + (f": {task.blocker()}" if task.blocker else ""))
                self._fail(stream, task, HcclTimeoutError(HcclResult.HCCL_E_TIMEOUT, task.kind, msg))
                expired = True
        if expired:
            self._wake()
        return expired

    def _next_expiry(self, deadline):
        wake = deadline
        for _stream, task in self.blocked_heads():
            if task.timeout and task.t_head is not None:
                t = task.t_head + task.timeout
                wake = t if wake is None else min(wake, t)
        return wake

    def _fail_deadlock(self) -> bool:
        heads = self.blocked_heads()
        if not heads:
            return False
        from ..verify.hang import explain_deadlock  # the hang report lives with the verifier
        report = explain_deadlock(heads, self)
        self.last_deadlock = report
        for stream, task in heads:
            self._fail(stream, task, HcclDeadlockError(HcclResult.HCCL_E_TIMEOUT, "", report))
        self._wake()
        return True

    def abort(self, reason: str) -> None:
        """Make every blocking call return ``ABORTED`` (another rank failed)."""
        with self.lock:
            self.abort_reason = reason
            self._wake()

    def drop_stream(self, stream) -> None:
        """Forget a destroyed stream and skip whatever it still had queued."""
        with self.lock:
            for task in stream.queue:
                task.state = SKIPPED
            stream.queue.clear()
            stream.destroyed = True
            self.active.pop(stream, None)
            self._wake()

    def reset(self) -> None:
        """Drop every queued task (runtime finalisation)."""
        with self.lock:
            for stream in list(self.active):
                for task in stream.queue:
                    task.state = SKIPPED
                stream.queue.clear()
            self.active.clear()
            self._wake()


_seq = record.counter
_record_append = record.append
scheduler = Scheduler()
notify_mod.on_record = scheduler.hint
