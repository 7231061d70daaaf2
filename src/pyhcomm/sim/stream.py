"""Streams: FIFO task queues of one device (``aclrtStream``)."""
from __future__ import annotations

from collections import deque

from . import current_sim


class Stream:
    """A task queue of ``device``; tasks run in FIFO order, asynchronously to the host.

    ``error`` holds the first execution failure as an exception; synchronize-style calls report it
    once and clear it. ``busy`` is set while the head task runs and may not be overtaken (a
    kernel).
    """

    __slots__ = ("handle", "device", "queue", "error", "busy", "label", "destroyed", "waiters", "hinted", "__weakref__")

    def __init__(self, device: int, label: str = "stream"):
        self.device = device
        self.queue = deque()
        self.error = None
        self.busy = False
        self.label = label
        self.destroyed = False
        self.waiters = None     # the scheduler's: who waits for this stream to be idle
        self.hinted = False     # the scheduler's: in its queue of streams that may run
        self.handle = current_sim().handles.streams.add(self)

    @property
    def idle(self) -> bool:
        return not self.queue and not self.busy

    def __repr__(self):
        return f"<Stream 0x{self.handle:x} {self.label} device={self.device} queued={len(self.queue)}>"
