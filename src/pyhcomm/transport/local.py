"""The in-process transport: every rank lives in this Sim, so a peer is an object here.

Pairing keeps, per channel key, the ends published so far; bytes move with the Sim's backend;
a remote notify is recorded directly.
"""
from __future__ import annotations

from .base import PeerRef, Transport


class LocalTransport(Transport):
    """Ranks of one process (see the module docstring)."""

    name = "local"

    def __init__(self, sim):
        super().__init__(sim)
        self.pairs: dict = {}   # channel key -> {rank: end}

    def publish(self, end, key) -> None:
        ends = self.pairs.setdefault(key, {})
        ends[end.comm.rank] = end
        end.key = key
        other = ends.get(end.peer_rank)
        if other is not None and not other.closed:
            end.peer_ref = PeerRef(other.comm.world.id, other.comm.rank, key)
            other.peer_ref = PeerRef(end.comm.world.id, end.comm.rank, key)
            self.sim.scheduler.settle(other)   # who waits for ``other`` to connect goes on

    def peer_of(self, end):
        ref = end.peer_ref
        if ref is None:
            return None
        return self.pairs[ref.key].get(ref.rank)  # a closed end stays until its rank acquires anew

    def withdraw(self, end) -> None:
        end.closed = True
        self.sim.scheduler.poke()

    def put(self, dst_alloc, dst_off, src_alloc, src_off, n) -> None:
        self.sim.backend.copy(dst_alloc.storage, dst_off, src_alloc.storage, src_off, n)

    get = put

    def accumulate(self, dst_alloc, dst_off, src_alloc, src_off, count, np_dtype, op) -> None:
        self.sim.backend.reduce(dst_alloc.storage, dst_off, src_alloc.storage, src_off, count, np_dtype, op)

    def remote_notify(self, notify) -> None:
        notify.record()
