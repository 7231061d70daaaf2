"""Liveness of the processes of an MPI job: heartbeats, and who fell silent.

A daemon thread sends an 8-byte heartbeat (:data:`~.mpi_wire.TAG_BEAT`) to every other process
every quarter of ``liveness`` seconds (``PYHCOMM_MPI_LIVENESS``); the link takes the heartbeats
that arrived when it serves (at most every :data:`HEAR_EVERY` seconds) and notes every message
too. A process heard from once and then silent for ``liveness`` seconds is dead
(:meth:`Heartbeat.silent`; the link aborts naming its ranks). A process never heard from is not
judged (it may not have started its link yet). The thread runs only where MPI allows calls from
several threads (``MPI_THREAD_MULTIPLE``) and the job has more than one process.
"""
from __future__ import annotations

import threading
import time

import numpy as np

from .mpi_wire import TAG_BEAT

HEAR_EVERY = 0.01       # heartbeats are taken at most this often (seconds)


class Heartbeat:
    """This process's heartbeats and what it heard of the others."""

    def __init__(self, MPI, comm, me: int, nprocs: int, liveness: float, quiet):
        self.MPI, self.comm, self.me, self.nprocs = MPI, comm, me, nprocs
        self.liveness = liveness
        self.quiet = quiet              # callable p -> True: send p no heartbeat (it left or died)
        self.last_seen: dict = {}       # process -> monotonic time of its last message or heartbeat
        self.heard = 0.0                # when heartbeats were last taken
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="pyhcomm-mpi-heartbeat", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls, MPI, comm, me: int, nprocs: int, liveness: float, quiet):
        """A running heartbeat, or None where there is none (``liveness`` 0, one process, or MPI
        without ``MPI_THREAD_MULTIPLE``)."""
        if liveness and nprocs > 1 and MPI.Query_thread() == MPI.THREAD_MULTIPLE:
            return cls(MPI, comm, me, nprocs, liveness, quiet)
        return None

    def hear(self) -> None:
        """Take every heartbeat that arrived (the link calls it when it serves)."""
        self.heard = time.monotonic()
        take_beats(self.MPI, self.comm, self.last_seen)

    def silent(self, byes, dead) -> list:
        """The processes heard from once and silent for ``liveness`` seconds since, except those
        that said goodbye (``byes``) or are known ``dead``."""
        now = time.monotonic()
        return [p for p, seen in list(self.last_seen.items())
                if p not in byes and p not in dead and now - seen >= self.liveness]

    def stop(self) -> None:
        """Stop sending (the thread ends within a period; waited for a few seconds at most)."""
        self.stop_event.set()
        self.thread.join(5.0)

    def _beat(self) -> None:
        buf = np.zeros(8, np.uint8)
        period = max(0.05, self.liveness / 4)
        reqs = []
        while not self.stop_event.wait(period):
            reqs = [r for r in reqs if not r.Test()]
            for p in range(self.nprocs):
                if p != self.me and not self.quiet(p):
                    reqs.append(self.comm.Isend(buf, p, TAG_BEAT))
        for r in reqs:
            r.Test()


def take_beats(MPI, comm, seen=None) -> None:
    """Receive every heartbeat that arrived (also without a heartbeat of this process's: before
    leaving, none may be left unreceived), noting the time in ``seen`` (process -> time)."""
    st, one = MPI.Status(), np.empty(8, np.uint8)
    while True:
        msg = comm.Improbe(MPI.ANY_SOURCE, TAG_BEAT, st)
        if msg is None:
            return
        msg.Recv([one, 8, MPI.BYTE])
        if seen is not None:
            seen[st.Get_source()] = time.monotonic()
