"""The Sim's hang report: why waits cannot be satisfied, who waits for what, and who could have helped.

Each Sim has one :class:`HangReport` (``sim.hang_report``): its scheduler asks it for the text of
a deadlock, a blocked wait asks it why it cannot run, the MPI transport asks it for this
process's facts as values.

A wait task (``task.waits``) waits on ``task.notify``; a recorder sets it: a notify record task,
or a transfer that sets a notify when it lands (``WriteWithNotify``, ``WriteReduceWithNotify``:
``task.notify`` with ``waits`` False). For a blocked wait this module finds every queued
recorder of the same notify (and those in batches never ended), says where each one sits, and
follows "waits for a record that sits behind another wait" edges to print a wait-for cycle when
there is one. A notify is known by its owner and index (a recorder on another rank holds a value
naming it, :class:`pyhcomm.transport.base.RemoteNotify`).

The facts come from the record (:mod:`pyhcomm.sim.record`): the tasks not yet run, per stream in
enqueue order (the first is the stream's head). Only when the record cannot say (recording
disabled, entries dropped) are the scheduler's stream queues read instead.

Ranks in several processes (the MPI transport): each process gives its facts as values
(:func:`snapshot`: :class:`TaskView` per task, picklable); a report over all of them
(:func:`explain_snapshots`) reads like the report of one process holding every rank, wait-for
cycles across processes included.
"""
from __future__ import annotations

from . import current_sim as _sim


def _label(task) -> str:
    who = f"rank {task.rank} " if task.rank is not None else ""
    thr = f"thread 0x{task.thread:x}" if task.thread else f"stream 0x{task.stream.handle:x}"
    return f"{who}{thr}"


class TaskView:
    """What a hang report says of a task, as a value that crosses processes: ``ident`` (process,
    seq) tells tasks apart, ``notify`` is ``(owner, index)`` or None."""

    __slots__ = ("ident", "rank", "thread", "stream", "where", "kind", "waits", "notify", "blocker")

    def __init__(self, task, proc: int = 0):
        self.ident = (proc, task.seq)
        self.rank, self.thread, self.where, self.kind = task.rank, task.thread, task.where, task.kind
        self.stream = _Handle(task.stream.handle)
        self.waits = bool(getattr(task, "waits", False))
        n = getattr(task, "notify", None)
        self.notify = None if n is None else _NotifyName(n.owner, n.index)
        self.blocker = None
        if task.blocker is not None and not (self.waits and self.notify is not None):
            why = task.blocker()
            self.blocker = lambda: why

    def __getstate__(self):
        state = {k: getattr(self, k) for k in self.__slots__}
        state["blocker"] = self.blocker() if self.blocker is not None else None
        return state

    def __setstate__(self, state):
        why = state.pop("blocker")
        for k, v in state.items():
            setattr(self, k, v)
        self.blocker = None if why is None else (lambda: why)


class _Handle:
    __slots__ = ("handle",)

    def __init__(self, handle):
        self.handle = handle

    def __getstate__(self):
        return self.handle

    def __setstate__(self, handle):
        self.handle = handle


class _NotifyName:
    __slots__ = ("owner", "index")

    def __init__(self, owner, index):
        self.owner, self.index = owner, index

    def __getstate__(self):
        return (self.owner, self.index)

    def __setstate__(self, state):
        self.owner, self.index = state


def _what(task) -> str:
    n = task.notify
    return f"notify {n.index} of {n.owner}"


class Facts:
    """A snapshot of who could record what: every queued recorder, with its stream's head task,
    and every recorder in a batch not yet ended (taken once per report)."""

    def __init__(self, sim=None):
        sim = sim or _sim()
        rec = sim.record
        self.from_record = rec.whole()
        queued = []      # (task, its stream's head)
        if self.from_record:
            heads = {}
            for task in rec.pending():
                head = heads.get(task.stream)
                if head is None:
                    head = heads[task.stream] = task
                queued.append((task, head))
        else:
            for stream in sim.scheduler.queued_streams():
                queue = list(stream.queue)
                queued += [(task, queue[0]) for task in queue]
        self.recorders: dict = {}   # (owner, index) -> [(task, head or None, batch or None)]
        for task, head in queued:
            n = getattr(task, "notify", None)
            if n is not None and not task.waits:
                self.recorders.setdefault((n.owner, n.index), []).append((task, head, None))
        for batch in list(sim.open_batches):
            for task in batch.tasks:
                n = getattr(task, "notify", None)
                if n is not None and not task.waits:
                    self.recorders.setdefault((n.owner, n.index), []).append((task, None, batch))

    def of(self, notify):
        """Queued or batched recorders of ``notify``: ``(task, stream head or None, batch or None)``."""
        return self.recorders.get((notify.owner, notify.index), [])

    @classmethod
    def merged(cls, snapshots):
        """The facts of several processes' :func:`snapshot` s, as one."""
        facts = cls.__new__(cls)
        facts.from_record = all(s["from_record"] for s in snapshots)
        facts.recorders = {}
        for s in snapshots:
            for rec, head, batch in s["recorders"]:
                facts.recorders.setdefault((rec.notify.owner, rec.notify.index), []).append(
                    (rec, head, _Batch(batch) if batch is not None else None))
        return facts


class _Batch:
    __slots__ = ("tag",)

    def __init__(self, tag):
        self.tag = tag


def snapshot(sim, heads=None, proc: int = 0) -> dict:
    """This process's hang facts as values (:class:`TaskView`): the blocked heads (``heads``, else
    the scheduler's), every queued or batched recorder with its stream's head, the blocking calls
    of the host programs."""
    facts = Facts(sim)
    heads = sim.scheduler.blocked_heads() if heads is None else heads
    views: dict = {}

    def view(task):
        v = views.get(id(task))
        if v is None:
            v = views[id(task)] = TaskView(task, proc)
        return v

    recorders = []
    for recs in facts.recorders.values():
        for rec, head, batch in recs:
            recorders.append((view(rec), view(head) if head is not None else None,
                              batch.tag if batch is not None else None))
    return {"proc": proc, "from_record": facts.from_record, "heads": [view(t) for _s, t in heads],
            "recorders": recorders, "hosts": sim.scheduler.waits()}


def _recorders(notify, facts=None):
    return (facts or Facts()).of(notify)


def explain_wait(task, facts=None) -> str:
    """One line: why ``task`` (a wait) cannot run."""
    recs = _recorders(task.notify, facts)
    if not recs:
        return f"{_what(task)} is never recorded: nobody ever records it"
    parts = []
    for rec, head, batch in recs:
        if batch is not None:
            parts.append(f"the record at {rec.where} sits in batch {batch.tag!r}, which was never ended "
                         "(HcommBatchModeEnd)")
        elif head is rec:
            parts.append(f"the record at {rec.where} is ready to run")
        else:
            head_why = f"{head.kind} enqueued at {head.where}"
            if getattr(head, "waits", False):
                head_why += f" (waiting for {_what(head)})"
            parts.append(f"the record at {rec.where} is queued on {_label(rec)} behind {head_why}")
    return f"{_what(task)}: " + "; ".join(parts)


def _cycle(start, facts):
    """Follow wait -> record -> blocked head edges from ``start``; return the cycle or None."""
    key = _key
    path, seen = [start], {key(start)}
    cur = start
    while True:
        nxt = None
        for rec, head, batch in facts.of(cur.notify):
            if batch is None and head is not None and key(head) != key(rec) and getattr(head, "waits", False):
                nxt = head
                break
        if nxt is None:
            return None
        if key(nxt) in seen:
            i = next(k for k, t in enumerate(path) if key(t) == key(nxt))
            return path[i:]
        path.append(nxt)
        seen.add(key(nxt))
        cur = nxt


def _key(task):
    """What tells tasks apart: a view's ident, else the task object itself."""
    return task.ident if type(task) is TaskView else id(task)


def explain_deadlock(heads, scheduler) -> str:
    """The report for blocked ``(stream, task)`` heads of a world that cannot progress; with ranks
    in other processes, the report over every process's facts (the transport's)."""
    everyone = scheduler.sim.transport.remote_hang_facts()
    if everyone:
        return explain_snapshots([everyone[p] for p in sorted(everyone)])
    facts = Facts(scheduler.sim)
    return _report([t for _s, t in heads], facts, scheduler.waits())


def explain_snapshots(snapshots) -> str:
    """The report over the :func:`snapshot` s of several processes, as if one held every rank."""
    facts = Facts.merged(snapshots)
    heads = [t for s in snapshots for t in s["heads"]]
    hosts = [h for s in snapshots for h in s["hosts"]]
    return _report(heads, facts, hosts)


def _report(heads, facts, hosts) -> str:
    lines = ["deadlock: every host thread is blocked and no queued task can run"]
    for task in heads:
        if getattr(task, "waits", False) and getattr(task, "notify", None) is not None:
            why = explain_wait(task, facts)
        else:
            why = task.blocker() if task.blocker else "it can never become ready"
        lines.append(f"  {_label(task)} waits at {task.where} ({task.kind}): {why}")
    printed = set()
    for task in heads:
        if not getattr(task, "waits", False):
            continue
        cyc = _cycle(task, facts)
        if cyc and not (frozenset(_key(t) for t in cyc) & printed):
            printed |= {_key(t) for t in cyc}
            steps = [f"{_label(t)} waits for {_what(t)} at {t.where}" for t in cyc]
            lines.append("  wait-for cycle: " + " -> ".join(steps) + f" -> back to {_label(cyc[0])}")
    if hosts:
        lines.append("  host threads blocked in: " + "; ".join(hosts))
    return "\n".join(lines)


class HangReport:
    """The hang report of one Sim (``sim.hang_report``)."""

    __slots__ = ("sim",)

    def __init__(self, sim):
        self.sim = sim

    def deadlock(self, heads, scheduler) -> str:
        """The report for the blocked ``(stream, task)`` heads of a world that cannot progress."""
        return explain_deadlock(heads, scheduler)

    def wait(self, task) -> str:
        """Why ``task`` (a wait blocked at its stream's head) cannot run."""
        return explain_wait(task, Facts(self.sim))

    def snapshot(self, heads=None, proc: int = 0) -> dict:
        """This process's facts as values (for a report over several processes)."""
        return snapshot(self.sim, heads, proc)
