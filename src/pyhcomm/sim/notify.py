"""Notifies: the 1-bit flag registers that order tasks across streams.

Models the NPU notify register: a record sets it to 1, a wait blocks its stream until it is 1 and
then clears it; two records before one wait therefore coalesce into one. ``counting=True`` (an
option, off by default) makes a notify count records instead, so that none is lost.
"""
from __future__ import annotations

from . import current_sim
from .task import PENDING, SiteTask, site_var


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


class NotifyRecordTask(SiteTask):
    """Set ``notify`` (a record of a thread notify, a runtime notify or a channel notify: ``kind``
    says which, a :class:`~pyhcomm.sim.kinds.Kind` of role ``RECORD``); ``engine``: the issuing
    HCOMM thread's engine (None for a runtime task)."""

    __slots__ = ("kind", "notify", "target", "gen")   # gen: the generation set (or consumed), once run
    waits = False

    def __init__(self, kind, stream, thread, rank, side, notify, target, depth=3, engine=None):
        self.kind = kind
        self.stream = stream
        self.device = stream.device
        self.thread = thread
        self.rank = rank
        self.engine = engine
        self.t_head = None
        self.state = PENDING
        self.side = side
        self.notify = notify
        self.target = target
        fixed = site_var.get()     # (set_site inlined for the attributed case: every task of a collective)
        if fixed is not None:
            self.code, self.lasti = fixed
        else:
            self.set_site(depth)

    @property
    def detail(self):
        return self.target

    def run(self) -> None:
        n = self.notify
        n.record()
        self.gen = n.gen


class NotifyWaitTask(NotifyRecordTask):
    """Wait until ``notify`` is set, then clear it; fails its stream after ``timeout`` seconds."""

    __slots__ = ("timeout",)
    waits = True

    def __init__(self, kind, stream, thread, rank, side, notify, target, timeout, depth=3, engine=None):
        self.kind = kind            # (NotifyRecordTask.__init__ inlined: one call less per wait)
        self.stream = stream
        self.device = stream.device
        self.thread = thread
        self.rank = rank
        self.engine = engine
        self.t_head = None
        self.state = PENDING
        self.side = side
        self.notify = notify
        self.target = target
        fixed = site_var.get()
        if fixed is not None:
            self.code, self.lasti = fixed
        else:
            self.set_site(depth)
        self.timeout = float(timeout)

    def ready(self) -> bool:
        return self.notify.value > 0

    def blocker(self) -> str:
        return current_sim().hang_report.wait(self)

    def run(self) -> None:
        n = self.notify
        self.gen = n.gen
        n.consume()
