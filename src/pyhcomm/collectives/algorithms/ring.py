"""The ring family: every rank talks to its two neighbours only, one thread, ``p - 1`` steps per
pass (:func:`.patterns.ring_step`); each slice travels round the ring.

AllGather / AllGatherV (:func:`..allgather.allgatherv_ring`), ReduceScatter / ReduceScatterV
(:func:`..reduce_scatter.reduce_scatterv_ring`), AllReduce (the two in one call,
:func:`..all_reduce.all_reduce_ring`) and Scatter (hcomm-api S4, :func:`..scatter.scatter_ring`).
The schedules below are the steps those functions issue, loop by loop of the HCCL buffer, with
the bytes each rank moves (numpy arrays over the ranks: slices may differ, an empty one issues no
task but keeps its handshakes). The ``V`` calls' schedules are those of equal segments.
"""
from __future__ import annotations

import numpy as np

from ..algorithm import Algorithm, Implementation, Local, Op, RingStep, ring_peers, slot_size
from ..all_reduce import all_reduce_ring, slices
from ..allgather import allgather_ring, allgatherv_ring
from ..reduce_scatter import reduce_scatter_ring, reduce_scatterv_ring
from ..scatter import scatter_ring


class _Pieces:
    """The bytes of one loop's slices (slice ``k``: ``piece[k]``), as the ranks see them:
    :meth:`of` ``(shift)`` is what rank ``r`` moves of slice ``r - shift`` (an array over the
    ranks; an int when every slice has the same bytes)."""

    def __init__(self, piece):
        self.piece, self.p = piece, len(piece)
        self.same = int(piece[0]) if (piece == piece[0]).all() else None
        self.r = np.arange(self.p)

    def of(self, shift: int):
        return self.same if self.same is not None else self.piece[(self.r - shift) % self.p]


def gather_steps(sizes, ccl: int, in_place: bool = False):
    """The steps of :func:`..allgather.allgatherv_ring` for segments of ``sizes`` bytes (rank r's
    ``sizes[r]``); ``in_place``: the own segment is already in place (no copy at the end)."""
    p = len(sizes)
    if p == 1:
        if not in_place:
            yield Local("copy", sizes)
        return
    per = slot_size(ccl, p)
    for done in range(0, int(sizes.max()), per):
        piece = _Pieces(np.clip(sizes - done, 0, per))
        yield Local("copy", piece.of(0))                # stage the own piece in its slot
        for s in range(p - 1):                          # forward slot r - s, copy out slot r - s - 1
            yield RingStep(piece.of(s), piece.of(s + 1), "copy")
        if not in_place:
            yield Local("copy", piece.of(0))            # the own piece into the output


def reduce_scatter_steps(counts, elem: int, ccl: int):
    """The steps of :func:`..reduce_scatter.reduce_scatterv_ring` for slices of ``counts``
    elements of ``elem`` bytes."""
    p = len(counts)
    if p == 1:
        yield Local("copy", counts * elem)
        return
    elems = slot_size(ccl, 2) // elem
    for done in range(0, int(counts.max()), elems):
        piece = _Pieces(np.clip(counts - done, 0, elems) * elem)
        yield Local("copy", piece.of(1))                # stage slice r - 1
        for s in range(p - 1):                          # send slice r - s - 1, reduce into r - s - 2
            yield RingStep(piece.of(s + 1), piece.of(s + 2), "reduce")
        yield Local("copy", piece.of(0))                # the own slice, complete, into the output


def allgather_schedule(nranks: int, nbytes: int, ccl: int, elem: int = 1):
    return gather_steps(np.full(nranks, nbytes, dtype=np.int64), ccl)


def reduce_scatter_schedule(nranks: int, nbytes: int, ccl: int, elem: int = 4):
    return reduce_scatter_steps(np.full(nranks, nbytes // elem, dtype=np.int64), elem, ccl)


def all_reduce_schedule(nranks: int, nbytes: int, ccl: int, elem: int = 4):
    """Ring ReduceScatter of the slices, then ring AllGather of the reduced slices in place."""
    counts = np.array(slices(nbytes // elem, nranks)[0], dtype=np.int64)
    yield from reduce_scatter_steps(counts, elem, ccl)
    yield from gather_steps(counts * elem, ccl, in_place=True)


RING = Algorithm("ring", "each slice travels round the ring of ranks: one thread, the two neighbours, p - 1 steps", (
    Implementation(Op.HCCL_CMD_ALLGATHER, allgather_ring, peers=ring_peers, schedule=allgather_schedule),
    Implementation(Op.HCCL_CMD_ALLGATHER_V, allgatherv_ring, peers=ring_peers, schedule=allgather_schedule),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER, reduce_scatter_ring, peers=ring_peers,
                   schedule=reduce_scatter_schedule),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER_V, reduce_scatterv_ring, peers=ring_peers,
                   schedule=reduce_scatter_schedule),
    Implementation(Op.HCCL_CMD_ALLREDUCE, all_reduce_ring, peers=ring_peers, schedule=all_reduce_schedule),
    Implementation(Op.HCCL_CMD_SCATTER, scatter_ring, peers=ring_peers),
))
