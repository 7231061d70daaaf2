"""Failures of an MPI job: aborts and deaths, as one process of it sees them.

A process that fails (a rank raised, or an exception nobody caught ends it) tells every other
process with an ``abort`` message naming the reason and the failing rank; each of them aborts its
blocking calls with that reason (its transports' :meth:`on_abort`). A process found dead (silent,
:mod:`.mpi_liveness`) is aborted the same way, and its death is passed on with the next abort
(every process then knows whom not to wait for when it leaves). The first cause wins: a rank that
gives up because another one died is not the origin.
"""
from __future__ import annotations

import os
import sys


class LinkError(RuntimeError):
    """The link cannot go on: the job was aborted, or a process died."""


def unlink_mpi_segments() -> None:
    """Remove the shared-memory files of MPICH this process maps (``/dev/shm/mpich_shm_*``):
    leaving without ``MPI_Finalize`` (after a death) would leave them behind. Linux only."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "/dev/shm/mpich_shm_" in line}
    except OSError:
        return
    for path in paths:
        if not path.endswith("(deleted)"):
            try:
                os.unlink(path)
            except OSError:
                pass


class Failures:
    """What the link of one process knows of the job's failures (see the module docstring)."""

    def __init__(self, link):
        self.link = link
        self.reason = None              # why the job is aborted (None: it is not)
        self.rank = None                # the rank whose failure began the abort (None: unknown)
        self.remote = False             # the abort began in another process (or with a death)
        self.dead: dict = {}            # process -> why it is considered dead
        self.owners: dict = {}          # process -> the ranks it hosts (for messages)
        self._hook = None

    def ranks_of(self, proc: int) -> str:
        """``proc`` named by its ranks, for messages."""
        ranks = sorted(self.owners.get(proc, ()))
        if not ranks:
            return f"MPI process {proc}"
        return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))} (MPI process {proc})"

    def check(self) -> None:
        """Raise :class:`LinkError` when the job is aborted."""
        if self.reason is not None:
            raise LinkError(self.reason)

    def abort_all(self, reason: str, rank=None) -> None:
        """This process failed (``rank`` of it, when known): tell every other process (their
        blocking calls give up naming it). A failure that follows an abort passes the first cause
        on instead."""
        if self.reason is None:
            self.reason, self.rank = reason, rank
        else:
            reason, rank = self.reason, self.rank
        link = self.link
        for p in range(link.nprocs):
            if p != link.me and p not in self.dead:
                try:
                    link.send_ctrl(p, ("abort", reason, rank, tuple(self.dead)), counted=False, fence=False)
                except Exception:  # noqa: BLE001 - best effort: the job is failing anyway
                    pass

    def on_abort_message(self, src: int, msg: tuple) -> None:
        """Another process aborted the job (``("abort", reason, rank, processes it found dead)``)."""
        for p in msg[3] if len(msg) > 3 else ():
            if p != self.link.me and p not in self.dead:
                self.dead[p] = msg[1]
        self.aborted(msg[1], msg[2])

    def aborted(self, reason: str, rank=None) -> None:
        """The job is aborted from elsewhere (another process, or a death): every transport of this
        process aborts its blocking calls (the first cause only)."""
        if self.reason is not None:
            return
        self.reason, self.rank, self.remote = reason, rank, True
        link = self.link
        for t in set(link.routes_root.values()) | ({link.handlers} - {None}):
            t.on_abort(reason)

    def died(self, proc: int, liveness: float) -> None:
        """``proc`` fell silent for ``liveness`` seconds: it is dead, and the job aborted."""
        why = f"{self.ranks_of(proc)} died: no sign of life for {liveness:g} s (PYHCOMM_MPI_LIVENESS)"
        self.dead[proc] = why
        ranks = sorted(self.owners.get(proc, ()))
        self.aborted(why, ranks[0] if ranks else None)

    def watch_uncaught(self) -> None:
        """From now on an exception nobody catches aborts the job before it ends this process."""
        self._hook = sys.excepthook
        sys.excepthook = self._uncaught

    def _uncaught(self, kind, exc, tb) -> None:
        if self.reason is None and not issubclass(kind, KeyboardInterrupt):
            self.abort_all(f"{self.ranks_of(self.link.me)} failed: {exc!r}")
        self._hook(kind, exc, tb)
