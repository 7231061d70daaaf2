"""What a replay gives: every entry of the record with its times on the virtual clock.

A :class:`Timeline` holds the record's typed events (:mod:`pyhcomm.sim.events`) and, aligned with
them, when each was issued by its program, started and ended (seconds from the first issue), plus
the arrows worth drawing (a notify record to the wait that consumed it, a transfer to where its
bytes landed) and the modeled time of each collective call (:class:`CallTime`). The trace writers
(:mod:`.trace`, :mod:`.png`) read only this.
"""
from __future__ import annotations

from typing import NamedTuple


class CallTime(NamedTuple):
    """One collective call: its name (the ``hccl.h`` API), the ranks' entries, and its modeled
    span: from the first entry's issue to the last entry's end over every rank (seconds)."""

    name: str
    ranks: tuple
    begin: float
    end: float
    entries: tuple          # indices into the timeline

    @property
    def seconds(self) -> float:
        return self.end - self.begin


class Arrow(NamedTuple):
    """An arrow from entry ``src`` to entry ``dst`` (indices): ``kind`` is ``"notify"`` (a record
    to the wait that consumed it) or ``"transfer"`` (a transfer to the bytes' destination rank)."""

    src: int
    dst: int
    kind: str


class Timeline:
    """Events with times. ``issue[i]``, ``start[i]``, ``end[i]``: seconds of ``events[i]``."""

    def __init__(self, events, issue, start, end, arrows=(), calls=(), model=None, destinations=None):
        self.events = events
        self.issue = issue
        self.start = start
        self.end = end
        self.arrows = list(arrows)
        self.calls = list(calls)
        self.model = model
        #: transfers: index -> (destination rank, destination device), where known
        self.destinations = destinations or {}

    def __len__(self):
        return len(self.events)

    @property
    def makespan(self) -> float:
        """Seconds from the first issue to the last end."""
        ends = [e for e in self.end if e == e and e != float("inf")]
        return max(ends, default=0.0)

    def of(self, seq: int) -> int:
        """The index of the entry with ``seq``; ``KeyError`` if the timeline has none."""
        index = getattr(self, "_by_seq", None)
        if index is None:
            index = self._by_seq = {ev.seq: i for i, ev in enumerate(self.events)}
        return index[seq]
