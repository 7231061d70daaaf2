"""Where every data-plane task goes: straight to its stream (eager mode)."""
from __future__ import annotations

from ..core.scheduler import scheduler


def enqueue(task) -> None:
    """Hand ``task`` to the scheduler; it runs when its stream reaches it."""
    scheduler.submit(task)
