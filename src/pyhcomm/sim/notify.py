"""Notifies: the 1-bit flag registers that order tasks across streams.

Models the NPU notify register: a record sets it to 1, a wait blocks its stream until it is 1 and
then clears it; two records before one wait therefore coalesce into one. ``counting=True`` (an
option, off by default) makes a notify count records instead, so that none is lost.
"""
from __future__ import annotations

from . import current_sim


class Notify:
    """One notify register. ``owner`` describes who waits on it (for hang reports).

    ``gen`` counts the records so far: a record task stores the generation it set, a wait the
    generation it consumed (the current one when it ran), so the record pairs them.
    """

    __slots__ = ("value", "counting", "owner", "index", "waiter", "sched", "gen", "waiters")

    def __init__(self, owner: str, index: int, counting: bool = False):
        self.sched = current_sim().scheduler
        self.gen = 0            # records so far (the generation a record sets, a wait consumes)
        self.value = 0
        self.counting = counting
        self.owner = owner
        self.index = index
        self.waiter = None      # the stream last seen blocked on this notify (a scheduling hint)
        self.waiters = None     # the scheduler's: host programs waiting for it to be set

    def is_set(self) -> bool:
        return self.value > 0

    def record(self) -> None:
        self.value = self.value + 1 if self.counting else 1
        self.gen += 1
        if self.waiter is not None:
            self.sched.hint(self.waiter)
        if self.waiters:
            self.sched.settle(self)

    def consume(self) -> None:
        self.value -= 1

    def __repr__(self):
        return f"<Notify {self.owner}[{self.index}]={self.value}>"
