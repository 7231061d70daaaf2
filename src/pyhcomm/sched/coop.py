"""The cooperative scheduler: every host program and every kernel (each block of an AIV kernel) is a
greenlet on one OS thread.

Each rank's host program (``pyhcomm.launch``) and each AI CPU kernel runs as an *actor*, a greenlet
(the ``greenlet`` package). An actor runs until it blocks in ``run_until`` (every blocking call of
the library goes there: synchronize, join, rendezvous, channel connect, host-side notify waits);
then control returns to the *hub*, the greenlet that drives the Sim (the caller of ``launch``, or a
plain program's main greenlet while it waits). The hub:

1. runs queued tasks: it picks one of the streams that may run and runs its runnable prefix;
2. otherwise resumes an actor: a new one, or a blocked one whose wait is over (an actor blocked
   without a stream to watch is re-checked after a ``poke``, when no other actor is runnable or
   after as many resumptions as actors wait, however many pokes came meanwhile);
3. otherwise the transport makes progress (``sim.transport.progress()``: messages of other
   processes); when it has none, waits whose timeout passed fail; then, once the transport says
   that no process can progress (``world_idle``; in one process: at once), the blocked streams
   fail with the hang report. Then a blocked actor's timed wait (a timeout its caller chose: a
   synchronize with a timeout, ``HcommThreadJoin``'s) is progress, not a hang: it will expire and
   its caller go on, so the hub sleeps until it expires (or a blocked stream's wait times out).
   Blocked actors that still cannot go on get ``STUCK``, a blocked kernel first (it holds its
   stream busy: when its wait fails it ends, and its stream goes on).

Queue budget: an actor that has submitted ``PYHCOMM_QUEUE_BUDGET`` tasks (default 1024; 0:
unbounded) since the hub last resumed it yields to the hub, as a host thread waits when its
hardware queue is full: it becomes runnable again behind the actors already waiting, and the hub
runs what can run first. A program that issues everything before its first synchronize so keeps
about a budget of tasks queued per actor instead of all of them (a 1024-rank AllReduce: about a
million, not 12.6 million); the yield points depend only on the counts, so the order stays a
function of the program and the seed.

Every choice among runnable streams and among runnable actors is made by a seeded policy
(:class:`SeededPolicy`; ``PYHCOMM_SEED`` or ``launch(seed=...)``), so the same program with the
same seed runs the same way, and gives a byte-identical record, on every run. The verifier's
schedule exploration drives this policy.

Time: nothing runs concurrently, so a timeout can only matter when the world cannot progress;
timeouts are checked then (against the real clock). Where it differs from the threaded scheduler:
a wait never times out while other work can still run.

Python's cyclic garbage collector is paused while the hub drives: tasks form no reference
cycles, and each collection would scan every recorded task again (a fifth of the time at 512
ranks); it runs again as soon as the drive returns.

Only the OS thread that first used the Sim may call into it: a program that starts its own OS
threads needs the threaded scheduler (``PYHCOMM_SCHEDULER=threaded``, the default outside launch).

Waiting in the OS (:mod:`.os_waits`): while ``run_programs`` runs the ranks, ``time.sleep`` in a
rank blocks only that rank (real time; the others run meanwhile, and the hub sleeps until the first
sleeper wakes when nothing else can run), and a rank that blocks the OS thread itself (a
``threading.Barrier``, a lock) is reported within seconds with its ``file:line`` and the remedy.
"""
from __future__ import annotations

import gc
import random
import threading
import time as _time
from collections import deque

from greenlet import getcurrent, greenlet

from .base import ABORTED, DONE_OK, DRAIN_DEPTH, STUCK, TIMED_OUT, Scheduler, _monotonic
from .os_waits import LaunchGuard


class SeededPolicy:
    """Chooses among the runnable choices. Seed 0 always takes the oldest (first-come, first
    served: the cheapest and the most readable order); any other seed chooses pseudo-randomly.

    The policy interface (what the verifier's schedule exploration replaces): ``pick(choices)``
    gets the runnable choices, oldest first, and returns the index of the one to run. The
    choices are all streams (:class:`pyhcomm.sim.stream.Stream`: runnable tasks) or all actors
    (:class:`Actor`: host programs and kernels to resume); a policy tells them apart by
    ``stream.handle`` and ``actor.name``, which are the same on every run of a program. It must
    not change ``choices``.
    """

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._rng = random.Random(seed) if seed else None

    def pick(self, choices) -> int:
        n = len(choices)
        if n == 1 or self._rng is None:
            return 0
        return self._rng.randrange(n)


def _take(queue: deque, pick):
    """Remove and return the entry of ``queue`` the policy picks (the oldest for index 0)."""
    i = pick(queue)
    if not i:
        return queue.popleft()
    queue.rotate(-i)
    item = queue.popleft()
    queue.rotate(i)
    return item


class Actor:
    """A host program or kernel: its greenlet and what it waits for."""

    __slots__ = ("name", "glet", "done", "deadline", "timed", "status", "started", "finished", "queued", "issued",
                 "kernel")

    def __init__(self, name, glet):
        self.name = name
        self.glet = glet
        self.done = None        # the predicate it blocks on (None: runnable)
        self.deadline = None
        self.timed = False      # its deadline is its caller's timeout (it will expire: progress)
        self.status = None      # what run_until returns when it is resumed
        self.started = False
        self.finished = False
        self.queued = False     # in the runnable queue
        self.issued = 0         # tasks submitted since the hub last resumed it (the queue budget)
        self.kernel = False     # an AI CPU kernel (it holds its stream busy until it ends)

    def __repr__(self):
        return f"<Actor {self.name}{' waiting' if self.done else ''}>"


class CoopScheduler(Scheduler):
    """See the module docstring."""

    name = "coop"
    explorable = True

    def __init__(self, sim):
        super().__init__(sim)
        self._policy = SeededPolicy(sim.config.seed)
        self.actors: dict = {}          # greenlet -> Actor (alive)
        self.runnable: deque = deque()  # actors to resume, in the order they became runnable
        self.waiting: dict = {}         # actors blocked without a stream to watch -> None
        self.hub = None                 # the greenlet driving now
        self.current = None             # the actor the hub resumed and that runs now (else None)
        self.budget = sim.config.queue_budget or (1 << 62)   # see submit (0: unbounded)
        self.owner = None               # the OS thread this Sim runs on
        self._kernel_ids = 0
        self.ready = deque()            # streams that may run (each at most once: ``stream.hinted``)
        self._poked = False             # a poke since the waiting actors were last checked
        self._turns = 0                 # actors resumed since then (see poke)
        self.switches = 0               # actors resumed so far (the OS-wait watch reads it)
        self.sleepers: dict = {}        # actor -> when its time.sleep ends (see sleep)
        self.guard = None               # the LaunchGuard while run_programs runs

    def hint(self, stream) -> None:
        if not stream.hinted:
            stream.hinted = True
            self.ready.append(stream)

    # -- the policy ---------------------------------------------------------------------------
    @property
    def policy(self):
        """The policy making the choices (:class:`SeededPolicy` unless :meth:`set_policy` gave another)."""
        return self._policy

    def set_policy(self, policy) -> None:
        """Make ``policy`` choose from the next drive on (the verifier's schedule exploration)."""
        self._policy = policy

    # -- actors -------------------------------------------------------------------------------
    def run_programs(self, programs, timeout: float | None = None) -> list:
        """See :meth:`pyhcomm.sched.base.Scheduler.run_programs`: each program is an actor named
        ``name`` (the policy tells them apart by it), and the caller is the hub."""
        left = len(programs)

        def program(body):
            nonlocal left
            try:
                body()
            finally:
                left -= 1

        actors = [self.spawn(name, program, body) for name, body in programs]
        deadline = None if timeout is None else _monotonic() + timeout
        outer = self.guard
        with LaunchGuard(self) as self.guard:
            try:
                status = self.drive(lambda: not left, deadline)
                if status == DONE_OK or not left:
                    return []
                unfinished = [a.name for a in actors if not a.finished]
                if status != ABORTED:
                    self.abort(f"the host programs still ran after {timeout} s" if status == TIMED_OUT
                               else "the host programs can never finish")
                self.drive(lambda: not left or not self.actors)
                return unfinished
            finally:
                self.guard = outer

    def is_actor(self) -> bool:
        """Whether the caller is an actor of this scheduler (a rank's program, a kernel)."""
        return self.hub is not None and getcurrent() in self.actors

    def sleep(self, seconds: float) -> None:
        """``time.sleep(seconds)`` of the calling actor (see :mod:`.os_waits`): it blocks for at
        least that long (real time) while the others run; an abort ends it at once."""
        actor = self.actors[getcurrent()]
        wake = _monotonic() + seconds
        self.sleepers[actor] = wake
        try:
            self.run_until(lambda: _monotonic() >= wake, None, f"time.sleep({seconds:g})")
        finally:
            self.sleepers.pop(actor, None)

    def spawn(self, name: str, fn, *args) -> Actor:
        """Create an actor running ``fn(*args)`` in a context of this Sim; it starts when the
        hub resumes it."""
        ctx = self.sim.context()
        g = greenlet(lambda: ctx.run(fn, *args))
        actor = Actor(name, g)
        self.actors[g] = actor
        self._make_runnable(actor)
        return actor

    def spawn_blocks(self, stream, bodies) -> None:
        """One actor per block, named ``kernel-<k>`` (one block) or ``kernel-<k>.<block>``: the
        names are the same on every run of a program, for the policy."""
        stream.busy = True
        self._kernel_ids += 1
        left = [len(bodies)]

        def run(body):
            try:
                body()
            finally:
                left[0] -= 1
                if not left[0]:
                    stream.busy = False
                    self.hint(stream)

        name = f"kernel-{self._kernel_ids}"
        for i, body in enumerate(bodies):
            self.spawn(name if len(bodies) == 1 else f"{name}.{i}", run, body).kernel = True

    def _make_runnable(self, actor) -> None:
        if not actor.queued:
            actor.queued = True
            self.runnable.append(actor)

    def _stream_settled(self, stream) -> None:
        for actor in stream.waiters:
            if actor.done is not None and not actor.queued and actor.done():
                self._make_runnable(actor)

    def settle(self, obj) -> None:
        if obj.waiters:
            self._stream_settled(obj)

    def poke(self) -> None:
        """Something a blocked actor without streams may wait for changed. The waiting actors are
        re-checked after pokes (:meth:`_flush_pokes`), not at every poke: when the hub has no
        runnable actor left, when it has resumed as many actors as are waiting since the last
        check, or after an abort. Closing a communicator withdraws every channel end and pokes
        each time (a scan per poke made the teardown of ``n`` ranks cost ``n**3`` predicate
        calls); every rank's join pokes (a scan per hub turn made ``n`` joins cost ``n**2``)."""
        if self.waiting:
            self._poked = True

    def _flush_pokes(self) -> None:
        """Make runnable every waiting actor whose wait is over (after pokes)."""
        self._poked = False
        self._turns = 0
        runnable = self.runnable
        for actor in list(self.waiting):
            if not actor.queued and actor.done():
                actor.queued = True
                runnable.append(actor)

    # -- enqueue ------------------------------------------------------------------------------
    def submit(self, task) -> None:
        """Append ``task`` to its stream; never runs it (except past ``DRAIN_DEPTH``). The actor
        that submits its ``budget``-th task since the hub last resumed it yields to the hub (see
        :meth:`_yield`). (``Scheduler.enqueue`` inlined: this runs for every task.)"""
        rec = self._record
        task.seq = next(rec.counter)
        if rec.enabled:
            rec.task_log.append(task)
        stream = task.stream
        q = stream.queue
        q.append(task)
        if stream not in self.active:
            self.active[stream] = None
        if not stream.hinted:
            stream.hinted = True
            self.ready.append(stream)
        if len(q) >= DRAIN_DEPTH:
            self._drain_deep(stream)
        actor = self.current
        if actor is not None:
            actor.issued += 1
            if actor.issued >= self.budget:
                self._yield(actor)

    def _yield(self, actor) -> None:
        """The queue budget: ``actor`` issued ``budget`` tasks without blocking. Like a host thread
        whose hardware queue is full, it stops issuing: it goes to the back of the runnable actors
        and switches to the hub, which runs the tasks that can run and resumes the actors queued
        before it first. So the tasks queued at once stay near ``budget`` per actor, even for a
        program that issues everything before its first synchronize; the order stays a function of
        the program and the seed."""
        self._make_runnable(actor)
        self.hub.switch()

    def _drain_deep(self, stream) -> None:
        self._run_streams([stream])

    # -- blocking -----------------------------------------------------------------------------
    def _check_thread(self) -> None:
        me = threading.get_ident()
        if self.owner is None:
            self.owner = me
        elif self.owner != me:
            raise RuntimeError("pyhcomm: this simulation runs on the cooperative scheduler, which is bound to "
                               "one OS thread; a program that starts OS threads of its own needs "
                               "PYHCOMM_SCHEDULER=threaded (or launch(..., scheduler='threaded'))")

    def run_until(self, done, timeout: float | None = None, what: str = "", streams=None,
                  detect_stuck: bool = True) -> str:
        """See :meth:`pyhcomm.sched.base.Scheduler.run_until`; switches to the hub when blocked."""
        if done():
            return DONE_OK
        if self.abort_reason is not None:
            return ABORTED
        self._check_thread()
        deadline = None if timeout is None else _monotonic() + timeout
        actor = self.actors.get(getcurrent())
        if actor is None or self.hub is None:
            me = getcurrent()
            if what:
                self._calls[me] = what
            try:
                return self.drive(done, deadline)
            finally:
                self._calls.pop(me, None)
        if what:
            self._calls[actor] = what
        watched = [st for st in streams if not getattr(st, "destroyed", False)] if streams else None
        try:
            while True:
                status = self._block(actor, done, deadline, watched, detect_stuck and deadline is not None)
                if status != DONE_OK or done():
                    return status
        finally:
            self._calls.pop(actor, None)

    def _block(self, actor, done, deadline, watched, timed=False) -> str:
        """Park ``actor`` until the hub resumes it; return the status the hub gives. ``timed``: the
        deadline is a timeout the caller chose (not a rendezvous' safety net)."""
        actor.done, actor.deadline, actor.timed = done, deadline, timed
        if watched:
            for st in watched:
                if st.waiters is None:
                    st.waiters = {}   # (a dict: a world's rendezvous may have a waiter per rank)
                st.waiters[actor] = None
        else:
            self.waiting[actor] = None
        try:
            return self.hub.switch()
        finally:
            actor.done = actor.deadline = None
            actor.timed = False
            if watched:
                for st in watched:
                    st.waiters.pop(actor, None)
            else:
                self.waiting.pop(actor, None)

    def drive(self, done, deadline=None) -> str:
        """Run tasks and actors until ``done()`` holds (the calling greenlet is the hub)."""
        self._check_thread()
        outer = self.hub
        self.hub = getcurrent()
        paused = outer is None and gc.isenabled()
        if paused:  # see the module docstring: collections would rescan every recorded task
            gc.disable()
        try:
            return self._drive(done, deadline)
        finally:
            self.hub = outer
            if paused:
                gc.enable()

    def _drive(self, done, deadline) -> str:
        ready, active, runnable, pick = self.ready, self.active, self.runnable, self._policy.pick
        spins = 0
        while True:
            if done():
                return DONE_OK
            if self.abort_reason is not None:
                if self._wind_down():
                    continue
                return ABORTED
            spins += 1
            if deadline is not None and not spins & 1023 and _monotonic() >= deadline:
                return TIMED_OUT
            # 1. tasks
            if ready:
                stream = _take(ready, pick)
                stream.hinted = False
                if not stream.busy:
                    if stream.queue:
                        self._run_streams((stream,))
                    elif stream.waiters:
                        self._stream_settled(stream)
                continue
            # 2. actors (the waiting ones a poke concerns join them: see poke)
            if self._poked and (not runnable or self._turns >= len(self.waiting)):
                self._flush_pokes()
            if runnable:
                self._turns += 1
                actor = _take(runnable, pick)
                actor.queued = False
                self._resume(actor, DONE_OK)
                continue
            # 3. nothing hinted: look at every active stream (a missed hint costs time only)
            if any(s.queue and not s.busy and (s.queue[0].ready is None or s.queue[0].ready()) for s in active):
                for s in list(active):
                    self.hint(s)
                continue
            if self._recheck_blocked() or self.sim.transport.progress():
                continue
            # 4. the world cannot progress
            now = _monotonic()
            if self._expire(now):
                continue
            if deadline is not None and now >= deadline:
                return TIMED_OUT
            if self._expire_actors(now):
                continue
            if self.sleepers:       # a sleeping actor wakes by itself: sleep until the first does
                self._sleep_hub(now, deadline)
                continue
            if not self.sim.transport.world_idle():   # another process may still send something
                continue
            if self._fail_deadlock():
                continue
            if self._await_timed(now, deadline):
                continue
            if self._release_kernel():
                continue
            if self._release_all(STUCK):
                continue
            return STUCK

    def _wind_down(self) -> bool:
        """After an abort: let one actor go on (a wait that is over still completes; its next
        blocking calls return ``ABORTED`` at once, so it runs to its end); False when no actor is
        left to run."""
        if self._poked:
            self._flush_pokes()
        if self.runnable:
            actor = self.runnable.popleft()
            actor.queued = False
            self._resume(actor, DONE_OK)
            return True
        return self._release_all(ABORTED)

    def _sleep_hub(self, now, deadline) -> None:
        """Nothing can run until a sleeping actor wakes: sleep (the OS's sleep, 50 ms at most, so
        that messages of other processes are served) until the first does, or ``deadline``."""
        until = min(self.sleepers.values())
        if deadline is not None:
            until = min(until, deadline)
        self.guard.os_sleep(min(0.05, max(0.0, until - now)))

    def _resume(self, actor, status) -> None:
        actor.issued = 0
        self.current = actor
        self.switches += 1
        guard = self.guard
        if guard is not None:       # time.sleep is the actors' own while one runs (os_waits)
            _time.sleep = guard.sleep
        try:
            if actor.started:
                actor.glet.switch(status)
            else:
                actor.started = True
                actor.glet.switch()
        finally:
            self.current = None
            if guard is not None:
                _time.sleep = guard.os_sleep
        if actor.glet.dead:
            actor.finished = True
            self.actors.pop(actor.glet, None)

    def _recheck_blocked(self) -> bool:
        """Make runnable every blocked actor whose wait is over (a missed wake-up costs time,
        never progress); True when there was one."""
        found = False
        for a in self._blocked_actors():
            if not a.queued and a.done():
                self._make_runnable(a)
                found = True
        return found

    def _blocked_actors(self):
        return [a for a in self.actors.values() if a.done is not None]

    def _expire_actors(self, now) -> bool:
        late = [a for a in self._blocked_actors() if a.deadline is not None and now >= a.deadline]
        for a in late:
            self._give(a, TIMED_OUT)
        return bool(late)

    def _await_timed(self, now, deadline) -> bool:
        """A blocked actor's timed wait will expire and its caller go on: progress, not a hang.
        Sleep until the first expires (or this drive's own ``deadline``, or a blocked stream's
        wait times out); False when no actor waits so."""
        wake = min((a.deadline for a in self._blocked_actors() if a.timed), default=None)
        if wake is None:
            return False
        if deadline is not None:
            wake = min(wake, deadline)
        _time.sleep(max(0.0, self._next_expiry(wake) - now))   # (the OS's: the hub runs, no actor)
        return True

    def _release_kernel(self) -> bool:
        """Give ``STUCK`` to the oldest blocked kernel: it holds its stream busy, so failing its wait
        lets it end and its stream go on (a kernel synchronizing its own stream, two kernels joining
        each other's threads). False when no kernel is blocked."""
        for a in self._blocked_actors():
            if a.kernel:
                self._give(a, STUCK)
                return True
        return False

    def _release_all(self, status) -> bool:
        """Resume every blocked actor with ``status`` (stuck or aborted), the kernels first (a kernel
        that gives up fails its stream: the host programs then see why); False when none was."""
        blocked = sorted(self._blocked_actors(), key=lambda a: not a.kernel)
        for a in blocked:
            self._give(a, status)
        return bool(blocked)

    def _give(self, actor, status) -> None:
        actor.done = None
        if actor.queued:
            self.runnable.remove(actor)
            actor.queued = False
        self._resume(actor, status)

    def reset(self) -> None:
        """Drop every queued task and end every actor (runtime finalisation): a suspended actor
        left to the garbage collector would unwind at some random later point."""
        super().reset()
        if self.actors and self.hub is None and self.owner in (None, threading.get_ident()):
            saved, self.abort_reason = self.abort_reason, "the runtime was finalised"
            try:
                self.drive(lambda: not self.actors)
            finally:
                self.abort_reason = saved
            self.runnable.clear()

    def abort(self, reason: str) -> None:
        if self.abort_reason is None:
            self.abort_reason = reason

    def fail_stream(self, stream, exc) -> None:
        super().fail_stream(stream, exc)
