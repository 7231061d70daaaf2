"""The transport contract: what ranks need from whatever joins them.

A transport pairs the two ends of a channel (``publish``), tells an end who its peer is, moves
bytes one-sidedly into and out of memory a peer exposed, and records a peer's notify. The
in-process transport (:mod:`.local`) does this with the Sim's own objects; an MPI transport does it
with messages between processes, driven by ``progress``.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeerRef:
    """Who is at the other end of a channel: a value (the peer's world, rank and the channel's key),
    never a pointer to the peer's objects; the transport resolves it (:meth:`Transport.peer_of`)."""

    world: int
    rank: int
    key: tuple


class Transport:
    """Base class; every hook raises ``NotImplementedError`` naming the transport and the hook."""

    name = "base"

    def __init__(self, sim):
        self.sim = sim

    def _missing(self, hook: str):
        return NotImplementedError(f"{self.name} transport: needs {hook}")

    # -- control plane -------------------------------------------------------------------------
    def publish(self, end, key) -> None:
        """Offer this rank's channel ``end`` under ``key`` (both ends give the same key); connect
        it when the other end is there. Never blocks."""
        raise self._missing("publish")

    def peer_of(self, end):
        """What this side knows of the peer's end of ``end`` (its notifies, the memory it exposed,
        whether it closed) once connected, else None."""
        raise self._missing("peer_of")

    def withdraw(self, end) -> None:
        """This rank's end is gone (communicator destroyed): its peer sees it closed."""
        raise self._missing("withdraw")

    # -- data plane ----------------------------------------------------------------------------
    def put(self, dst_alloc, dst_off, src_alloc, src_off, n) -> None:
        """Copy ``n`` local bytes into the peer memory ``dst_alloc + dst_off``."""
        raise self._missing("put")

    def get(self, dst_alloc, dst_off, src_alloc, src_off, n) -> None:
        """Copy ``n`` bytes of the peer memory ``src_alloc + src_off`` into local memory."""
        raise self._missing("get")

    def accumulate(self, dst_alloc, dst_off, src_alloc, src_off, count, np_dtype, op) -> None:
        """Reduce ``count`` elements into ``dst`` (one side local, the other the peer's)."""
        raise self._missing("accumulate")

    def remote_notify(self, notify) -> None:
        """Record the peer's ``notify``."""
        raise self._missing("remote_notify")

    def progress(self) -> bool:
        """Make progress on anything in flight; True when something happened (local: nothing to do)."""
        return False
