"""Explain why waits cannot be satisfied: who waits for what, and who could have helped.

A wait task (``task.waits``) waits on ``task.notify``; a record task sets it. For a blocked wait
this module finds every queued record of the same notify (in stream queues and in batches never
ended), says where each one sits, and follows "waits for a record that sits behind another wait"
edges to print a wait-for cycle when there is one.
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


def _recorders(notify):
    """Queued or batched records of ``notify``: ``(task, stream head or None, batch or None)``."""
    sim = _sim()
    out = []
    for stream in list(sim.scheduler.active):
        queue = list(stream.queue)
        for task in queue:
            if getattr(task, "notify", None) is notify and not task.waits:
                out.append((task, queue[0], None))
    for batch in list(sim.open_batches):
        for task in batch.tasks:
            if getattr(task, "notify", None) is notify and not task.waits:
                out.append((task, None, batch))
    return out


def explain_wait(task) -> str:
    """One line: why ``task`` (a wait) cannot run."""
    recs = _recorders(task.notify)
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


def _cycle(start):
    """Follow wait -> record -> blocked head edges from ``start``; return the cycle or None."""
    path, seen = [start], {id(start)}
    cur = start
    while True:
        nxt = None
        for rec, head, batch in _recorders(cur.notify):
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
    lines = ["deadlock: every host thread is blocked and no queued task can run"]
    for _stream, task in heads:
        lines.append(f"  {_label(task)} waits at {task.where} ({task.kind}): "
                     + (task.blocker() if task.blocker else "it can never become ready"))
    printed = set()
    for _stream, task in heads:
        if not getattr(task, "waits", False):
            continue
        cyc = _cycle(task)
        if cyc and not (frozenset(id(t) for t in cyc) & printed):
            printed |= {id(t) for t in cyc}
            steps = [f"{_label(t)} waits for {_what(t)} at {t.where}" for t in cyc]
            lines.append("  wait-for cycle: " + " -> ".join(steps) + f" -> back to {_label(cyc[0])}")
    hosts = [what for what in list(_sim().scheduler.blocked_calls.values()) if what]  # changed without the lock
    if hosts:
        lines.append("  host threads blocked in: " + "; ".join(hosts))
    return "\n".join(lines)


hang_report.install(explain_deadlock, explain_wait)
