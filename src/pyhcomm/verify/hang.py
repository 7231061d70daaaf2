"""Explain why blocked streams can never run: who waits for what, and who could have helped."""
from __future__ import annotations


def explain_deadlock(heads, scheduler) -> str:
    """Return a report for the blocked ``(stream, task)`` heads of a world that cannot progress."""
    lines = ["deadlock: every host thread is blocked and no queued task can run"]
    for _stream, task in heads:
        cause = task.blocker() if task.blocker else "nothing can make it ready"
        lines.append(f"  {task.describe()} waits: {cause}")
    return "\n".join(lines)
