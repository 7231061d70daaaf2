"""Ranks of the cooperative scheduler that wait in the OS: ``time.sleep`` made cooperative, and a
watch for a rank that blocks the OS thread.

Every rank of a cooperative launch is a greenlet of one OS thread (:mod:`.coop`), so a rank that
waits in the OS stops every rank. While a launch runs its ranks (:class:`LaunchGuard`, entered by
``run_programs``):

* ``time.sleep(s)``, called by a rank (or a kernel) as ``time.sleep``, blocks only that rank, for
  at least ``s`` seconds of real time, and the others run meanwhile: eight ranks that each sleep
  ``rank * 0.05`` s take about 0.35 s, not the 1.4 s of the sleeps one after the other. When every
  rank sleeps or waits, the scheduler sleeps until the first one wakes. ``time.sleep`` is replaced
  only while a rank runs (the hub and every other OS thread keep the one found when the launch
  began) and put back when the launch ends; a ``sleep`` imported with ``from time import sleep``
  is not seen (it blocks every rank, and the watch below reports it).
* A rank that blocks the OS thread itself (``threading.Barrier.wait``, a lock, ``queue.Queue.get``,
  an OS-level sleep ...) is seen by a watch thread: no rank switched for :data:`WINDOW` seconds,
  the OS thread used (almost) no CPU meanwhile, and the innermost frame outside the standard
  library is not pyhcomm's. It is reported (logged at ERROR) with the rank, the ``file:line`` and
  what it waits in, and the remedy (wait with pyhcomm's calls, or ``scheduler="threaded"``); when
  the launch runs on the main thread (and ``SIGUSR2`` has no handler of the program's), the wait
  is interrupted: it raises :class:`BlockedInOsError` in the rank, which fails the launch with
  the report. Elsewhere the report is all that can be done: the program stays blocked.
"""
from __future__ import annotations

import os
import signal
import sys
import sysconfig
import threading
import time

from ..errors import log

#: Seconds without a switch (and without CPU use) after which a blocked rank is reported.
WINDOW = 2.0
POLL = 0.25             # how often the watch looks
CPU_SHARE = 0.05        # less CPU than this share of the window: the OS thread is blocked, not computing
SIGNAL = getattr(signal, "SIGUSR2", None)

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep


class BlockedInOsError(RuntimeError):
    """A rank of a cooperative launch blocked the OS thread every rank runs on (see the module
    docstring); the message names the rank, where and the remedy."""


class LaunchGuard:
    """What a cooperative launch changes while its ranks run (see the module docstring), and
    puts back when it ends: a context manager around ``run_programs``."""

    def __init__(self, sched):
        self.sched = sched
        self.os_sleep = time.sleep          # the sleep found when the launch began
        self.pending = None                 # (switches, report) the signal raises in the blocked rank
        self._stop = threading.Event()
        self._watch = None
        self._handler = None                # the SIGUSR2 handler replaced (None: none replaced)
        self.owner = None

    def __enter__(self) -> "LaunchGuard":
        if SIGNAL is not None and threading.current_thread() is threading.main_thread() \
                and signal.getsignal(SIGNAL) in (signal.SIG_DFL, None):
            self._handler = signal.signal(SIGNAL, self._interrupted)
        self.owner = threading.get_ident()      # the OS thread of the hub and every rank
        if _cpu_clock(self.owner) is not None:
            self._watch = threading.Thread(target=self._look, name="pyhcomm-coop-watch", daemon=True)
            self._watch.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.join()
        if self._handler is not None:
            signal.signal(SIGNAL, self._handler)
        time.sleep = self.os_sleep

    # -- time.sleep ---------------------------------------------------------------------------------
    def sleep(self, seconds) -> None:
        """``time.sleep`` while a rank runs: the rank's own (cooperative) sleep when a rank calls
        it, the OS's for anyone else."""
        sched = self.sched
        if threading.get_ident() != self.owner or not sched.is_actor():
            return self.os_sleep(seconds)
        seconds = float(seconds)
        if seconds < 0 or seconds != seconds:
            raise ValueError("sleep length must be non-negative")
        sched.sleep(seconds)

    # -- the watch ----------------------------------------------------------------------------------
    def _look(self) -> None:
        """The watch thread's loop (see the module docstring)."""
        sched, owner = self.sched, self.owner
        clock = _cpu_clock(owner)
        seen, since, cpu0 = None, 0.0, 0.0
        while not self._stop.wait(POLL):
            now, switches = time.monotonic(), sched.switches
            if switches != seen:
                seen, since, cpu0 = switches, now, _cpu(clock)
                continue
            if now - since < (WINDOW if sched.abort_reason is None else POLL):     # (aborted: no rank waits long)
                continue
            cpu = _cpu(clock)
            report = None
            if cpu - cpu0 < CPU_SHARE * (now - since):
                report = blocked_report(sys._current_frames().get(owner), sched.current)
            since, cpu0 = now, cpu
            if report is None or (self.pending is not None and self.pending[0] == switches):
                continue
            if sched.abort_reason is None:
                log.error("%s", report)
            else:               # it follows from the abort (another rank failed): logged at INFO
                log.info("%s", report)
            if self._handler is not None:
                self.pending = (switches, report)
                signal.pthread_kill(owner, SIGNAL)

    def _interrupted(self, _signum, _frame) -> None:
        """The signal handler, on the blocked OS thread: raise the report in the blocked rank (when
        it is still blocked where the watch saw it)."""
        pending, self.pending = self.pending, None
        if pending is not None and pending[0] == self.sched.switches:
            raise BlockedInOsError(pending[1])


def blocked_report(frame, actor):
    """The report of ``actor`` (the rank running now) blocked in the OS at ``frame`` (the OS
    thread's innermost frame); None when it waits inside pyhcomm or no rank runs."""
    if frame is None or actor is None:
        return None
    api = None
    while frame is not None and in_stdlib(frame.f_code.co_filename):
        api = f"{frame.f_globals.get('__name__', '?')}.{getattr(frame.f_code, 'co_qualname', frame.f_code.co_name)}"
        frame = frame.f_back
    if frame is None or os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        return None
    where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
    what = f"in {api}" if api else "in a call that waits in the OS"
    return (f"{actor.name} is blocked {what} at {where}, outside pyhcomm, for {WINDOW:g} s: on the cooperative "
            "scheduler every rank runs on this one OS thread, so no other rank can run until it returns. Wait for "
            "the other ranks with pyhcomm's calls (comm.barrier(), HcclBarrier, a notify), or give each rank an OS "
            "thread: pyhcomm.launch(..., scheduler=\"threaded\")")


def in_stdlib(path: str) -> bool:
    """Whether ``path`` is a module of Python's standard library (not an installed package)."""
    path = os.path.abspath(path)
    return path.startswith(_STDLIB) and "site-packages" not in path and "dist-packages" not in path


def _cpu_clock(ident: int):
    """The CPU-time clock of OS thread ``ident`` (None where the OS has none)."""
    try:
        return time.pthread_getcpuclockid(ident)
    except (AttributeError, OSError, OverflowError):
        return None


def _cpu(clock) -> float:
    try:
        return time.clock_gettime(clock)
    except OSError:     # the thread ended
        return 0.0


__all__ = ["LaunchGuard", "BlockedInOsError", "blocked_report", "in_stdlib", "WINDOW"]
