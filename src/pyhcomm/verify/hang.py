"""Explain why waits cannot be satisfied: who waits for what, and who could have helped.

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
"""
from __future__ import annotations

from ..sched.base import hang_report
from ..sim import current_sim as _sim


def _label(task) -> str:
    who = f"rank {task.rank} " if task.rank is not None else ""
    thr = f"thread 0x{task.thread:x}" if task.thread else f"stream 0x{task.stream.handle:x}"
    return f"{who}{thr}"


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
            for stream in list(sim.scheduler.active):
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
    path, seen = [start], {id(start)}
    cur = start
    while True:
        nxt = None
        for rec, head, batch in facts.of(cur.notify):
            if batch is None and head is not None and head is not rec and getattr(head, "waits", False):
                nxt = head
                break
        if nxt is None:
            return None
        if id(nxt) in seen:
            i = next(k for k, t in enumerate(path) if t is nxt)
            return path[i:]
        path.append(nxt)
        seen.add(id(nxt))
        cur = nxt


def explain_deadlock(heads, scheduler) -> str:
    """The report for blocked ``(stream, task)`` heads of a world that cannot progress."""
    facts = Facts(scheduler.sim)
    lines = ["deadlock: every host thread is blocked and no queued task can run"]
    for _stream, task in heads:
        if getattr(task, "waits", False) and getattr(task, "notify", None) is not None:
            why = explain_wait(task, facts)
        else:
            why = task.blocker() if task.blocker else "it can never become ready"
        lines.append(f"  {_label(task)} waits at {task.where} ({task.kind}): {why}")
    printed = set()
    for _stream, task in heads:
        if not getattr(task, "waits", False):
            continue
        cyc = _cycle(task, facts)
        if cyc and not (frozenset(id(t) for t in cyc) & printed):
            printed |= {id(t) for t in cyc}
            steps = [f"{_label(t)} waits for {_what(t)} at {t.where}" for t in cyc]
            lines.append("  wait-for cycle: " + " -> ".join(steps) + f" -> back to {_label(cyc[0])}")
    hosts = [what for what in list(scheduler.blocked_calls.values()) if what]  # changed without the lock
    if hosts:
        lines.append("  host threads blocked in: " + "; ".join(hosts))
    return "\n".join(lines)


hang_report.install(explain_deadlock, explain_wait)
