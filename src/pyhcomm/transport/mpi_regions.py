"""Exposed memory of near processes, mapped into this one: where a one-sided transfer is a copy.

With processes on the same machine (the link's near processes, :mod:`.mpi_shm`), device memory
is shared storage; a channel end's description carries, per exposed region, the address of the
allocation behind it and the backend's handle of its storage. :class:`PeerMemory` keeps, per
peer channel end, the regions this process may write directly, maps a handle on first use
(``backend.attach``) and unmaps storage no region names any more. Memory that could not be
mapped is never tried again: its transfers go by messages.
"""
from __future__ import annotations


def share_handles(backend, exposed, shares: bool) -> tuple:
    """Per ``(region, allocation)`` of ``exposed``: ``(allocation address, the backend's share
    handle)``, or None where the storage is not shared (or gone, or ``shares`` is False)."""
    out = []
    for _region, alloc in exposed:
        h = backend.share(alloc.storage) if shares and alloc.storage is not None else None
        out.append(None if h is None else (alloc.addr, h))
    return tuple(out)


class PeerMemory:
    """The memory of near processes' channel ends, as mapped here (see the module docstring)."""

    def __init__(self, backend):
        self.backend = backend
        self.spans: dict = {}       # peer end id -> [(start, stop, allocation address, handle)]
        self.attached: dict = {}    # handle -> the mapped storage (False: it could not be mapped)

    def note(self, tid: int, regions, handles, near: bool) -> None:
        """The peer end ``tid`` exposes ``regions`` now (with the ``handles`` of its description;
        ``near``: its process shares memory with this one); storage no region names any more is
        unmapped."""
        spans = []
        if near:
            spans = [(r.start, r.start + r.size, h[0], h[1]) for r, h in zip(regions, handles) if h is not None]
        if spans:
            self.spans[tid] = spans
        elif self.spans.pop(tid, None) is None:
            return
        live = {s[3] for spans_ in self.spans.values() for s in spans_}
        for handle in [h for h in self.attached if h not in live]:
            del self.attached[handle]

    def find(self, tid: int, remote: int, n: int):
        """``(storage, offset)`` of the peer end ``tid``'s ``remote`` range of ``n`` bytes in memory
        mapped here, or None (then messages carry the transfer)."""
        spans = self.spans.get(tid)
        if spans is not None:
            for start, stop, base, handle in spans:
                if start <= remote and remote + n <= stop:
                    storage = self.attached.get(handle)
                    if storage is None:
                        try:
                            storage = self.backend.attach(handle)
                        except (OSError, NotImplementedError):
                            storage = False     # never again: this memory goes by messages
                        self.attached[handle] = storage
                    return (storage, remote - base) if storage is not False else None
        return None
