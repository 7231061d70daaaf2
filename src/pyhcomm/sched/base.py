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
  other both progress. The blocks of an AIV kernel run as one actor each (:meth:`spawn_blocks`),
  concurrently: a block that waits (a flag, the block barrier) lets the others run.
* ``run_programs(programs, timeout)`` runs host programs (the ranks of ``pyhcomm.launch``) to
  their ends, however the scheduler runs them (greenlets, OS threads): a caller never needs to
  know which scheduler it has.
* The order of choices is the scheduler's: a scheduler that makes them by a replaceable policy
  (``explorable``) takes one with :meth:`set_policy` (the verifier's schedule exploration).

A scheduler is handed its Sim and uses only what the Sim offers it: ``sim.record`` (the issue and
execution logs: ``failed`` / ``skipped`` entries), ``sim.task_states`` (the values of
``task.state``, owned by the simulated machine), ``sim.hang_report`` (the text of a deadlock),
``sim.transport`` (progress of other processes) and ``sim.context()``; it never imports the
simulated machine, which sits above it.

Implementations: :class:`pyhcomm.sched.threaded.ThreadedScheduler` (host programs are OS threads)
and :class:`pyhcomm.sched.coop.CoopScheduler` (host programs and kernels are greenlets on one OS
thread, chosen by a seeded policy).
"""
from __future__ import annotations

import time

from ..errors import HcclDeadlockError, HcclError, HcclResult, HcclRuntimeError, HcclTimeoutError, HcclUsageError

DRAIN_DEPTH = 1 << 16

DONE_OK, TIMED_OUT, STUCK, ABORTED = "done", "timeout", "stuck", "aborted"

_monotonic = time.monotonic


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


class DeviceWait(Waitable):
    """A wait inside a kernel that its kernel's timeout ends (an AIV block spinning on a flag):
    registered with :meth:`Scheduler.expire_on_hang` while it lasts, it is ``expired`` (and
    settled) when the world cannot progress, as if the timeout had passed then: the kernel fails
    with its own report, before the streams and host programs that wait for it."""

    __slots__ = ("expired",)

    def __init__(self, what: str):
        super().__init__(what)
        self.expired = False


class Scheduler:
    """The shared part: stream bookkeeping, task execution, failure, hang reports."""

    name = "base"

    #: Whether the order of its choices is made by a policy that :meth:`set_policy` replaces.
    explorable = False

    def __init__(self, sim):
        self.sim = sim
        self.active: dict = {}          # streams with queued tasks, in the order they got work
        self.ready: dict = {}           # streams hinted runnable since the last step
        self.last_deadlock = None       # the report of the most recent deadlock
        self.abort_reason = None        # set when a rank fails: blocking calls give up
        self.abort_told = False         # a failure that follows the abort was reported (abort_follow_on)
        self._calls: dict = {}          # host program -> the blocking call it is in (see waits)
        self._record = sim.record
        states = sim.task_states        # the simulated machine's values of task.state
        self._pending, self._running, self._done = states.PENDING, states.RUNNING, states.DONE
        self._failed, self._skipped = states.FAILED, states.SKIPPED
        self._rendezvous: dict = {}     # world root -> its Waitable (see rendezvous)
        self._device_waits: dict = {}   # DeviceWait -> None: kernel waits a hang ends (expire_on_hang)

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
        self.spawn_blocks(stream, (body,))

    def spawn_blocks(self, stream, bodies) -> None:
        """Run each of ``bodies`` (the blocks of a kernel) as an actor of its own, concurrently;
        ``stream`` stays busy until every one ended."""
        raise NotImplementedError(f"{self.name}: needs spawn_blocks")

    def abort(self, reason: str) -> None:
        """Make every blocking call return ``ABORTED``; the first reason given stays."""
        raise NotImplementedError(f"{self.name}: needs abort")

    def register_host(self) -> None:
        """Count the calling host program as one that may still enqueue work."""

    def unregister_host(self) -> None:
        """The calling host program will enqueue nothing more."""

    def run_programs(self, programs, timeout: float | None = None) -> list:
        """Run each ``(name, body)`` of ``programs`` as a host program of its own (``body()`` in a
        fresh context of this Sim) and block the caller until every one returned.

        A body reports its own failures (it must not raise) and calls :meth:`unregister_host`
        once it will enqueue nothing more. ``timeout`` (seconds; None: no limit) bounds the whole
        run: when it passes first, or when the programs can never end (every one waits and
        nothing can run), every blocking call is aborted (:meth:`abort`) and the programs get a
        last chance to reach their ends. Returns the names of the programs that had not ended
        then, in the order given ([]: all ended in time).
        """
        raise NotImplementedError(f"{self.name}: needs run_programs")

    # -- what tools may ask and set ------------------------------------------------------------
    @property
    def policy(self):
        """The policy making this scheduler's choices (None: the OS makes them)."""
        return None

    def set_policy(self, policy) -> None:
        """Make ``policy`` choose from now on (see :class:`pyhcomm.sched.coop.SeededPolicy` for the
        interface). Only an :attr:`explorable` scheduler takes one.

        Raises:
            ValueError: this scheduler's order is not a policy's (the threaded one: the OS's).
        """
        raise ValueError(f"the {self.name} scheduler takes no scheduling policy: the OS orders its threads "
                         "(use the cooperative scheduler)")

    def waits(self) -> list:
        """The blocking calls the host programs are in now (``"aclrtSynchronizeStream"`` ...),
        oldest first: what a hang report says of them."""
        return [what for what in list(self._calls.values()) if what]  # (changed without a lock: a copy)

    def queued_streams(self) -> list:
        """The streams that have tasks queued (or running), in the order they got work."""
        return list(self.active)

    def clear_abort(self) -> None:
        """End an abort (:meth:`abort`): blocking calls block again (the next launch in this Sim)."""
        self.abort_reason = None
        self.abort_told = False

    def abort_follow_on(self) -> bool:
        """A call failed while an abort is in force (it gave up, or met what the abort left
        behind): True for the first such failure of the abort (its caller reports the abort, in
        one line), False for the others and when no abort is in force."""
        if self.abort_reason is None or self.abort_told:
            return False
        self.abort_told = True
        return True

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
        running, done, skipped = self._running, self._done, self._skipped
        for stream in streams:
            q = stream.queue
            while q and not stream.busy:
                task = q[0]
                if stream.error is not None:
                    q.popleft()
                    task.state = skipped
                    rec.skipped(task)
                    progressed = True
                    continue
                ready = task.ready
                if ready is not None and not ready():
                    if task.t_head is None:
                        self._blocked_head(stream, task)
                    break
                q.popleft()
                progressed = True
                task.state = running
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
                    task.state = done
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
        task.state = self._failed
        rec = self._record
        rec.failed(task)
        if stream.error is None:
            stream.error = exc
        q = stream.queue
        if q and q[0] is task:
            q.popleft()
        while q:
            t = q.popleft()
            t.state = self._skipped
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

    def expire_on_hang(self, wait: DeviceWait, on: bool = True) -> None:
        """While ``on``, ``wait`` (a kernel's wait, watched in ``run_until``) ends when nothing can
        progress any more (see :class:`DeviceWait`); ``on`` False: it is over."""
        if on:
            self._device_waits[wait] = None
        else:
            self._device_waits.pop(wait, None)

    def _expire_device_waits(self) -> bool:
        """Expire the kernel waits of :meth:`expire_on_hang`; False when there was none."""
        waits = [w for w in list(self._device_waits) if not w.expired]
        for w in waits:
            w.expired = True
            self.settle(w)
        return bool(waits)

    def _fail_deadlock(self) -> bool:
        """Fail every blocked head with the hang report; False when nothing is blocked. Kernel
        waits a hang ends (:meth:`expire_on_hang`) end first: their kernels fail with reports of
        their own, which may unblock the rest."""
        if self._expire_device_waits():
            return True
        heads = self.blocked_heads()
        if not heads:
            return False
        report = self.sim.hang_report.deadlock(heads, self)
        self.last_deadlock = report
        for stream, task in heads:
            self._fail(stream, task, HcclDeadlockError(HcclResult.HCCL_E_TIMEOUT, "", report))
        return True

    def _drop(self, stream) -> None:
        rec = self._record
        for task in stream.queue:
            task.state = self._skipped
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
