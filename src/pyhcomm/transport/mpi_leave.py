"""Leaving an MPI job: the last messages of a process's link, so that ``MPI_Finalize`` returns.

MPICH's ``MPI_Finalize`` never returns while a message to or from the process is left
unreceived, so a process leaves in two phases (:meth:`Leaving.close`, at exit): it says ``exit``
(with its message counts: a final report to the termination detection) and serves until every
other process said it too (this process's memory stays readable meanwhile, for the others' last
reads); then it stops its heartbeats, says ``bye`` and takes everything until each other
process's ``bye``. A dead process is not waited for; after a death, the process leaves at once
without ``MPI_Finalize`` (it would wait for the dead process forever), removing MPICH's
shared-memory files first.
"""
from __future__ import annotations

import os
import sys
import time

from .mpi_failures import unlink_mpi_segments
from .mpi_liveness import take_beats


class Leaving:
    """Who is leaving the job, and this process's own leave (see the module docstring)."""

    def __init__(self, link):
        self.link = link
        self.gone: set = set()          # processes that are leaving the job (said ``exit``)
        self.byes: set = set()          # processes that sent their last message (said ``bye``)
        self.closed = False

    def on_exit(self, src: int, msg: tuple) -> None:
        term = self.link.termination
        if src == term.coordinator():
            term.forget()               # the next coordinator has not heard this process yet
        self.gone.add(src)
        term.on_exit(src, msg[1])

    def on_bye(self, src: int, msg: tuple) -> None:
        self.byes.add(src)

    def close(self) -> None:
        """Leave the job (registered at exit; see the module docstring). Never raises."""
        if self.closed:
            return
        self.closed = True
        link = self.link
        try:
            self._say_exit()
            if link.heartbeat is not None:
                link.heartbeat.stop()
            for p in link.others():
                link.send_ctrl(p, ("bye",), counted=False, fence=False)
            while not all(p in self.byes for p in link.others()):
                self._idle_wait()
            while link.serve():     # (one call may leave messages for the next: see Link.serve)
                pass
            take_beats(link.MPI, link.comm)
            link.sends_done(5.0)
        except Exception:  # noqa: BLE001 - leaving anyway
            pass
        if link.heartbeat is not None:
            link.heartbeat.stop_event.set()     # (also when leaving failed half-way)
        if link.failures.dead:
            sys.stdout.flush()
            sys.stderr.flush()
            unlink_mpi_segments()
            os._exit(1)

    def _say_exit(self) -> None:
        """Phase one: ``exit`` to every live process (again whenever the counts change), until
        every one of them said it too; in an aborted job, who is still silent after a while is
        taken for gone (it may have died before this process ever heard from it)."""
        link = self.link
        failures = link.failures
        told = None
        since = time.monotonic()
        while True:
            others = link.others()
            counts = (link.sent, link.received)
            if told != counts:
                told = counts
                for p in others:
                    link.send_ctrl(p, ("exit", counts), counted=False, fence=False)
            if all(p in self.gone for p in others):
                return
            if failures.reason is not None and time.monotonic() - since > max(link.settings.liveness, 5.0):
                for p in others:
                    if p not in self.gone:
                        failures.dead[p] = f"{failures.ranks_of(p)} did not leave with the others"
                return
            self._idle_wait()

    def _idle_wait(self) -> None:
        link = self.link
        if not link.serve():
            link.check_liveness()
            time.sleep(0.002)
