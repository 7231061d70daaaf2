"""Timing a caller's own collective: a region of a rank's program marked as one call.

    from pyhcomm import timing

    def body(comm):
        ...
        with timing.region("my_allgather", bytes=nbytes * comm.size, op="allgather", comm=comm):
            my_allgather(comm, ...)          # HCOMM primitives, threads, channels, kernels ...

Leaving the block records the same marker the collective library records when a call returns (a
``Collective`` host effect, role ``MARKER``: docs/record.md), with the region's name, the seq it
started at, and what the caller says of it: ``op``, the collective it is (for nccl-tests' bus
bandwidth factor: :mod:`.bandwidth`), and ``bytes``, its data size as hccl_test counts it (an
AllGather's gathered output, an AllReduce's buffer). So the replay's :class:`~.timeline.CallTime`
of the region, ``python -m pyhcomm trace`` and ``python -m pyhcomm bench --custom`` report it as
they report a library call: its modeled time, algbw and busbw. The n-th region of one name on
every rank is one call; its entries are what the rank's program issued inside the block (kernels
it launched included), its time from the first one's issue to the last one's end on any rank.

A block left by an exception records nothing. Regions nest, and a library call inside one is a
call of its own as well.
"""
from __future__ import annotations

import contextlib

from ..sim import current_sim, kinds
from ..sim.runtime import program_ctx
from .bandwidth import OPS


def _rank(comm) -> int | None:
    """The rank ``comm`` names: a :class:`pyhcomm.Comm` (its ``rank``), a communicator handle, or
    None (the calling program's device: its rank under ``pyhcomm.launch``'s default placement)."""
    if comm is None:
        return program_ctx().device
    rank = getattr(comm, "rank", None)
    if isinstance(rank, int):
        return rank
    from ..hccl import comm as comm_mod
    return comm_mod.get_comm(comm, "timing.region").rank


@contextlib.contextmanager
def region(name: str, bytes: int | None = None, op: str | None = None, comm=None):  # noqa: A002
    """Mark the block as one call named ``name`` of the calling rank (see the module docstring).

    ``bytes``: the data size (an int >= 0, or None: no bandwidth); ``op``: one of
    :data:`.bandwidth.OPS` or None (bus bandwidth factor 1); ``comm``: the rank's communicator
    (a :class:`pyhcomm.Comm` or its handle; default: the program's device as its rank).
    ``ValueError`` / ``TypeError`` for a bad argument, before the block runs.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"timing.region: name must be a non-empty str, not {name!r}")
    if bytes is not None and (not isinstance(bytes, int) or isinstance(bytes, bool) or bytes < 0):
        raise ValueError(f"timing.region: bytes must be an int >= 0 or None, not {bytes!r}")
    if op is not None and op not in OPS:
        raise ValueError(f"timing.region: op {op!r} is not a collective the bandwidth knows "
                         f"({', '.join(sorted(OPS))})")
    rank = _rank(comm)
    record = current_sim().record
    first = record.next_seq()
    yield
    record.host_effect(kinds.COLLECTIVE, name, rank=rank, name=name, first=first, op=op, nbytes=bytes)


__all__ = ["region"]
