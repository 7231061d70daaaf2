"""Schedulers: who runs the queued tasks, and when (see :mod:`pyhcomm.sched.base` for the contract)."""
from __future__ import annotations

from .base import ABORTED, DONE_OK, DRAIN_DEPTH, STUCK, TIMED_OUT, DeviceWait, Scheduler, Waitable

SCHEDULERS = ("threaded", "coop")


def make_scheduler(name: str, sim) -> Scheduler:
    """The scheduler called ``name`` (``"threaded"`` or ``"coop"``) for ``sim``."""
    if name == "threaded":
        from .threaded import ThreadedScheduler
        return ThreadedScheduler(sim)
    if name == "coop":
        from .coop import CoopScheduler
        return CoopScheduler(sim)
    raise ValueError(f"unknown scheduler {name!r}; valid: {', '.join(SCHEDULERS)}")


__all__ = ["ABORTED", "DONE_OK", "DRAIN_DEPTH", "STUCK", "TIMED_OUT", "Scheduler", "DeviceWait", "Waitable", "SCHEDULERS",
           "make_scheduler"]
