"""What every scheduler does: keep the stream queues, run their tasks, fail hangs with a report.

The contract, the same for every implementation:

* ``submit(task)`` appends a task to its stream and never runs it (a queue deeper than
  ``DRAIN_DEPTH`` runs its runnable tasks at once, like a full hardware queue).
* Tasks run only while some host program blocks in ``run_until`` (a synchronize-style call), or,
  on the cooperative scheduler, yields because it issued its queue budget
  (``PYHCOMM_QUEUE_BUDGET`` tasks, default 1024, since it last blocked: a host thread whose
  hardware queue is full waits too): the scheduler then runs every runnable task, FIFO per
  stream, until what the caller waits for holds. So results are guaranteed only after a
  synchronisation, exactly as the contract of the real library says (a program that reads device
  memory without synchronising may see some of its tasks done, as on hardware).
* A task whose ``ready()`` is false (a notify wait) blocks its stream. When no host program can
  make progress and nothing can run, nothing ever will: the blocked streams fail at once with an
  :class:`HcclDeadlockError` whose text names each wait and who could have satisfied it.
* ``abort(reason)`` makes every blocking call return ``ABORTED`` (another rank failed).
* AI CPU kernels run as actors of their own (:meth:`spawn_kernel`): two kernels that wait for each
  other both progress.

Implementations: :class:`pyhcomm.sched.threaded.ThreadedScheduler` (host programs are OS threads)
and :class:`pyhcomm.sched.coop.CoopScheduler` (host programs and kernels are greenlets on one OS
thread, chosen by a seeded policy).
"""
from __future__ import annotations

import time

from ..errors import HcclDeadlockError, HcclError, HcclResult, HcclRuntimeError, HcclTimeoutError, HcclUsageError

#: The states of a task: queued, running, ran, failed (its stream failed with it), skipped (it
#: sat behind a failure, or in a stream that was dropped).
PENDING, RUNNING, DONE, FAILED, SKIPPED = "pending", "running", "done", "failed", "skipped"

#: Execution-log entries (``Record.xlog``): ``seq`` (it ran), ``-seq`` (it failed),
#: ``-(seq | SKIP_FLAG)`` (it was skipped).
SKIP_FLAG = 1 << 48

DRAIN_DEPTH = 1 << 16

DONE_OK, TIMED_OUT, STUCK, ABORTED = "done", "timeout", "stuck", "aborted"

_monotonic = time.monotonic


class HangReport:
    """Where the scheduler gets its hang explanations: the verifier installs them (tools are
    registered with the core, never imported by it). Without one, reports are short."""

    def __init__(self):
        self.deadlock = lambda heads, sched: "deadlock: every host thread is blocked and no queued task can run"
        self.wait = lambda task: "it can never become ready"
        self.snapshot = lambda sim, heads=None, proc=0: None

    def install(self, deadlock, wait, snapshot=None) -> None:
        """``deadlock(heads, scheduler) -> str``, ``wait(task) -> str``, ``snapshot(sim, heads=None,
        proc=0)``: this process's facts as values (for a report over several processes)."""
        self.deadlock, self.wait = deadlock, wait
        if snapshot is not None:
            self.snapshot = snapshot


hang_report = HangReport()


class Waitable:
    """Something host programs wait for that is neither a stream nor a channel end (a world's
    rendezvous): an object with ``waiters`` (the scheduler's), to pass in ``run_until``'s
    ``streams`` and to :meth:`Scheduler.settle` when it changes."""

    __slots__ = ("what", "waiters")

    def __init__(self, what: str):
        self.what = what
        self.waiters = None

    def __repr__(self):
        return f"<Waitable {self.what}>"


class Scheduler:
    """The shared part: stream bookkeeping, task execution, failure, hang reports."""

    name = "base"

    def __init__(self, sim):
        self.sim = sim
        self.active: dict = {}          # streams with queued tasks, in the order they got work
        self.ready: dict = {}           # streams hinted runnable since the last step
        self.last_deadlock = None       # the report of the most recent deadlock
        self.blocked_calls: dict = {}   # host program -> the blocking call it is in (for reports)
        self.abort_reason = None        # set when a rank fails: blocking calls give up
        self._record = sim.record
        self._rendezvous: dict = {}     # world root -> its Waitable (see rendezvous)

    # -- to implement ----------------------------------------------------------------------------
    def submit(self, task) -> None:
        raise NotImplementedError(f"{self.name}: needs submit")

    def run_until(self, done, timeout: float | None = None, what: str = "", streams=None,
                  detect_stuck: bool = True) -> str:
        """Block the calling host program until ``done()`` holds, running tasks meanwhile.

        ``streams``: the streams whose progress can make ``done()`` hold, or other objects with
        ``waiters`` (None at first; the scheduler's) that are :meth:`settle`-d when they change (a
        channel end when it pairs, a notify when it is recorded, a world's :meth:`rendezvous`);
        their waiters are re-checked then, and only then (a wait that names none is re-checked at
        every change, and at :meth:`poke`). ``detect_stuck`` False: never return ``STUCK`` (a
        rendezvous, where a rank that has not started yet may still come).

        Returns ``DONE_OK``, ``TIMED_OUT`` (``timeout`` seconds passed first), ``STUCK`` (nothing
        can ever make ``done()`` true; blocked streams were failed first) or ``ABORTED``.
        """
        raise NotImplementedError(f"{self.name}: needs run_until")

    def poke(self) -> None:
        """State that a host program may wait for changed outside any task, and the caller cannot
        name the object (a message of another process): blocked callers re-check. A change to a
        known object is :meth:`settle`-d instead (re-checks its waiters only)."""
        raise NotImplementedError(f"{self.name}: needs poke")

    def rendezvous(self, root) -> "Waitable":
        """The object that the waits on world ``root``'s rendezvous watch (joins complete, a rank
        left, a host-barrier round complete): pass it in ``run_until``'s ``streams``; the
        transport :meth:`settle`-s it when that state changes."""
        w = self._rendezvous.get(root)
        if w is None:
            w = self._rendezvous.setdefault(root, Waitable(f"world {root}"))
        return w

    def settle(self, obj) -> None:
        """``obj`` (an object with ``waiters``, e.g. a channel end) changed: re-check who
        waits on it. By default everyone is re-checked (:meth:`poke`)."""
        self.poke()

    def spawn_kernel(self, stream, body) -> None:
        """Run ``body()`` (an AI CPU kernel) as an actor of its own; ``stream`` stays busy until it ends."""
        raise NotImplementedError(f"{self.name}: needs spawn_kernel")

    def abort(self, reason: str) -> None:
        """Make every blocking call return ``ABORTED``; the first reason given stays."""
        raise NotImplementedError(f"{self.name}: needs abort")

    def register_host(self) -> None:
        """Count the calling host program as one that may still enqueue work."""

    def unregister_host(self) -> None:
        """The calling host program will enqueue nothing more."""

    # -- shared ----------------------------------------------------------------------------------
    def enqueue(self, task) -> bool:
        """Number, record and append ``task``; True when its queue is past ``DRAIN_DEPTH``."""
        rec = self._record
        task.seq = next(rec.counter)
        if rec.enabled:
            rec.append(task)
        stream = task.stream
        q = stream.queue
        q.append(task)
        if stream not in self.active:
            self.active[stream] = None
        self.hint(stream)
        return len(q) >= DRAIN_DEPTH

    def hint(self, stream) -> None:
        """Say that ``stream`` may be able to run (only a hint: a missed one costs time)."""
        self.ready[stream] = None

    def _run_streams(self, streams) -> bool:
        """Run the runnable prefix of each of ``streams``; return whether any task ran or was dropped."""
        progressed = False
        active = self.active
        rec = self._record
        log = rec.xlog.append if rec.enabled else None   # the execution log (pyhcomm.sim.record)
        for stream in streams:
            q = stream.queue
            while q and not stream.busy:
                task = q[0]
                if stream.error is not None:
                    q.popleft()
                    task.state = SKIPPED
                    if log is not None:
                        log(-(task.seq | SKIP_FLAG))
                    progressed = True
                    continue
                ready = task.ready
                if ready is not None and not ready():
                    if task.t_head is None:
                        self._blocked_head(stream, task)
                    break
                q.popleft()
                progressed = True
                task.state = RUNNING
                if log is not None:
                    log(task.seq)
                try:
                    task.run()
                except HcclError as exc:
                    self._fail(stream, task, exc)
                except Exception as exc:  # a bug in a task body must not kill the host program
                    self._fail(stream, task, HcclRuntimeError(
                        HcclResult.HCCL_E_INTERNAL, task.kind, f"{task.describe()} raised {exc!r}"))
                else:
                    task.state = DONE
            if not q and not stream.busy:
                active.pop(stream, None)
                if q:  # a task was appended while we dropped the stream: keep it active
                    active[stream] = None
                if stream.waiters:
                    self._stream_settled(stream)
        if log is not None and rec.capacity and len(rec.xlog) > 2 * rec.capacity:
            rec.trim()
        return progressed

    def _blocked_head(self, stream, task) -> None:
        """``task`` is the head of ``stream`` and cannot run yet (seen the first time): note when
        it blocked (its timeout counts from then), and let the notify it waits for, if any,
        hint this stream ready when it is recorded."""
        task.t_head = _monotonic()
        notify = getattr(task, "notify", None)
        if notify is not None:
            notify.waiter = stream

    def _stream_settled(self, stream) -> None:
        """``stream`` went idle or failed: its waiters may be done (implementations override)."""

    def _fail(self, stream, task, exc) -> None:
        """Fail ``task`` (running, or blocked at the head) and drop what its stream still queues."""
        task.state = FAILED
        rec = self._record
        rec.failed(task)
        if stream.error is None:
            stream.error = exc
        q = stream.queue
        if q and q[0] is task:
            q.popleft()
        while q:
            t = q.popleft()
            t.state = SKIPPED
            rec.skipped(t)
        if stream.waiters:
            self._stream_settled(stream)

    def blocked_heads(self):
        """The (stream, task) pairs whose head task cannot run now."""
        out = []
        for stream in list(self.active):
            if stream.queue and not stream.busy and stream.error is None:
                task = stream.queue[0]
                if task.ready is not None and not task.ready():
                    out.append((stream, task))
        return out

    def _expire(self, now) -> bool:
        """Fail the blocked waits whose timeout passed; return whether any did."""
        expired = False
        for stream, task in self.blocked_heads():
            if task.timeout and task.t_head is not None and now - task.t_head >= task.timeout:
                self._time_out(stream, task)
                expired = True
        return expired

    def _time_out(self, stream, task) -> None:
        """Fail ``task``, a wait blocked at the head of ``stream`` past its timeout."""
        msg = (f"{task.describe()} timed out after {task.timeout:g} s"
               + (f": {task.blocker()}" if task.blocker else ""))
        self._fail(stream, task, HcclTimeoutError(HcclResult.HCCL_E_TIMEOUT, task.kind, msg))

    def _next_expiry(self, deadline):
        wake = deadline
        for _stream, task in self.blocked_heads():
            if task.timeout and task.t_head is not None:
                t = task.t_head + task.timeout
                wake = t if wake is None else min(wake, t)
        return wake

    def _fail_deadlock(self) -> bool:
        """Fail every blocked head with the hang report; False when nothing is blocked."""
        heads = self.blocked_heads()
        if not heads:
            return False
        report = hang_report.deadlock(heads, self)
        self.last_deadlock = report
        for stream, task in heads:
            self._fail(stream, task, HcclDeadlockError(HcclResult.HCCL_E_TIMEOUT, "", report))
        return True

    def _drop(self, stream) -> None:
        rec = self._record
        for task in stream.queue:
            task.state = SKIPPED
            rec.skipped(task)
        stream.queue.clear()
        self.active.pop(stream, None)
        if stream.waiters:
            self._stream_settled(stream)

    def drop_stream(self, stream) -> None:
        """Forget a destroyed stream and skip whatever it still had queued, or is queued on it
        later: a task that reaches it afterwards (launched by another host thread that checked
        the stream just before it was destroyed) is skipped, never run."""
        stream.destroyed = True
        if stream.error is None:
            stream.error = HcclUsageError(HcclResult.HCCL_E_NOT_FOUND, "",
                                          f"stream 0x{stream.handle:x} was destroyed")
        self._drop(stream)

    def fail_stream(self, stream, exc) -> None:
        """Fail ``stream`` with ``exc``: its queued tasks will be skipped."""
        if stream.error is None:
            stream.error = exc
        if stream.queue and stream not in self.active:
            self.active[stream] = None
        self.hint(stream)
        if stream.waiters:
            self._stream_settled(stream)

    def reset(self) -> None:
        """Drop every queued task (runtime finalisation)."""
        for stream in list(self.active):
            self._drop(stream)
        self.active.clear()
