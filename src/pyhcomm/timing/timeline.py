"""What a replay gives: every entry of the record with its times on the virtual clock.

A :class:`Timeline` holds, for every entry of the record (in issue order), when its program
(a host thread, an AI CPU kernel) issued it, when it started and when it ended (seconds of the
virtual clock; ``nan`` for entries that never ran), plus the modeled time of each collective call
(:class:`CallTime`). The typed events (:mod:`pyhcomm.sim.events`), the arrows worth drawing (a
notify record to the wait that consumed it, a transfer from where its bytes left to where they
landed) are built on
first use: a large replay that only wants the call times never builds them. The trace writers
(:mod:`.trace`, :mod:`.png`) read only this.
"""
from __future__ import annotations

from array import array
from typing import NamedTuple

from . import bandwidth


class CallTime(NamedTuple):
    """One collective call: its name (the ``hccl.h`` API or the caller's tag), the ranks taking
    part, and its modeled span: from the first entry's issue to the last entry's end over every
    rank (seconds). ``entries``: indices into the timeline, in increasing order, as an
    ``array('q')`` (a large call has millions: 8 bytes each, against some 40 for a tuple of ints;
    ``np.frombuffer(call.entries, np.int64)`` views them as a numpy array). ``algorithm``: the
    collective library's algorithm it ran (its marker's; None for a caller's own algorithm).
    ``op``: the collective (``allreduce``, ``allgather`` ...; None when not said) and ``nbytes``
    its data size as hccl_test counts it (None when not said), whence :attr:`algbw` and
    :attr:`busbw` (:mod:`.bandwidth`)."""

    name: str
    ranks: tuple
    begin: float
    end: float
    entries: array
    algorithm: str | None = None
    op: str | None = None
    nbytes: int | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.begin

    @property
    def algbw(self) -> float | None:
        """Algorithm bandwidth, bytes per second (None without a data size)."""
        return bandwidth.algbw(self.nbytes, self.seconds)

    @property
    def busbw(self) -> float | None:
        """Bus bandwidth, bytes per second: :attr:`algbw` times nccl-tests' factor of :attr:`op`."""
        return bandwidth.busbw(self.op, len(self.ranks), self.nbytes, self.seconds)


class Arrow(NamedTuple):
    """An arrow from entry ``src`` to entry ``dst`` (indices): ``kind`` is ``"notify"`` (a record
    to the wait that consumed it)."""

    src: int
    dst: int
    kind: str


class Timeline:
    """Times of entries. ``issue[i]``, ``start[i]``, ``end[i]``: seconds of entry ``i``.

    ``events``, ``arrows``, ``destinations``, ``sources`` may be given as lists, or as functions that
    build them on first use."""

    def __init__(self, events, issue, start, end, arrows=(), calls=(), model=None, destinations=None,
                 sources=None):
        self._events = events
        self.issue = issue
        self.start = start
        self.end = end
        self._arrows = arrows
        self.calls = list(calls)
        self.model = model
        self._destinations = destinations if destinations is not None else {}
        self._sources = sources if sources is not None else {}

    @staticmethod
    def _get(value):
        return value() if callable(value) else value

    @property
    def events(self) -> list:
        """The typed events, aligned with the times."""
        if callable(self._events):
            self._events = self._events()
        return self._events

    @property
    def arrows(self) -> list:
        """:class:`Arrow` values (notify record -> the wait that consumed it)."""
        if callable(self._arrows):
            self._arrows = self._arrows()
        return list(self._arrows)

    @property
    def destinations(self) -> dict:
        """transfers: index -> (destination rank, destination device), where known."""
        if callable(self._destinations):
            self._destinations = self._destinations()
        return self._destinations

    @property
    def sources(self) -> dict:
        """reads: index -> (source rank, source device) the bytes came from, where known."""
        if callable(self._sources):
            self._sources = self._sources()
        return self._sources

    def __len__(self):
        return len(self.end)

    @property
    def makespan(self) -> float:
        """Seconds from the first issue to the last end."""
        return max((e for e in self.end if e == e), default=0.0)
