"""The record of one Sim: every enqueued task, in enqueue order."""
from __future__ import annotations

from collections import deque
from itertools import count


class Record:
    """The ordered record of every enqueued task (bounded; ``capacity`` 0 = unbounded).

    ``PYHCOMM_RECORD_CAPACITY`` sets the default capacity (1,000,000 tasks).
    """

    def __init__(self, capacity: int = 1_000_000):
        self.capacity = capacity
        self._tasks = deque(maxlen=capacity or None)
        self.counter = count(1)   # the global enqueue order (``Task.seq``), also while disabled
        self.enabled = True

    def append(self, task: TaskBase) -> None:
        self._tasks.append(task)

    def tasks(self, *, rank=None, device=None, kind=None):
        """Return the recorded tasks in enqueue order, optionally filtered."""
        out = list(self._tasks)
        if rank is not None:
            out = [t for t in out if t.rank == rank]
        if device is not None:
            out = [t for t in out if t.device == device]
        if kind is not None:
            out = [t for t in out if t.kind == kind]
        return out

    def clear(self) -> None:
        self._tasks.clear()

    def set_capacity(self, capacity: int) -> None:
        """Keep at most ``capacity`` tasks (0 = unbounded); keeps the newest."""
        self.capacity = capacity
        self._tasks = deque(self._tasks, maxlen=capacity or None)

    def __len__(self):
        return len(self._tasks)
