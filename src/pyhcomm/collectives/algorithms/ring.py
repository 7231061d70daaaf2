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

from .. import drive
from ..algorithm import Algorithm, Implementation, Level, Local, Op, RingStep, ring_peers, slot_size
from ..all_reduce import all_reduce_ring, slices
from ..allgather import allgather_ring, allgatherv_ring
from ..reduce_scatter import reduce_scatter_ring, reduce_scatterv_ring
from ..scatter import scatter_ring
from ..segments import EMPTY, exchange, split


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




# -- the ring as a level (segments; any slice sizes) ----------------------------------------------------
def level_rs(g, slices, red, land, t=None):
    """``p - 1`` steps: send the partial of slice ``r - s - 1`` right, reduce the left one's partial
    of slice ``r - s - 2`` into this rank's; the last one received is this rank's, complete."""
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    for s in range(p - 1):
        exchange(g, t, (r + 1) % p, (r - 1) % p, slices[(r - s - 1) % p], slices[(r - s - 2) % p], land, red)


def level_ag(g, slices, land, t=None):
    """``p - 1`` steps: forward slice ``r - s`` right, receive slice ``r - s - 1`` from the left."""
    p, r = g.nranks, g.rank
    t = g.main if t is None else t
    for s in range(p - 1):
        exchange(g, t, (r + 1) % p, (r - 1) % p, slices[(r - s) % p], slices[(r - s - 1) % p], land)


def level_ar(g, s, red, land):
    """ReduceScatter then AllGather of ``p`` slices of ``s`` (HCCL's ring AllReduce)."""
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_ag(g, slices, land)


def level_scatter(g, slices, root, land):
    """The slices leave the root along the ring, the farthest one first, each rank forwarding what
    is not its own (HCCL's ring scatter): ``p - 1`` steps; at step ``j`` the rank ``k`` hops from
    the root sends the slice of the rank ``p - 1 + k - j`` hops away (when ``k <= j``) and receives
    the slice of the rank ``p - 2 + k - j`` hops away (when ``k >= 1`` and ``j >= k - 1``)."""
    p, r = g.nranks, g.rank
    k = (r - root) % p
    for j in range(p - 1):
        send = k <= j and k <= p - 2
        recv = k >= 1 and j >= k - 1
        exchange(g, g.main, (r + 1) % p if send else None, (r - 1) % p if recv else None,
                 slices[(root + p - 1 + k - j) % p] if send else EMPTY,
                 slices[(root + p - 2 + k - j) % p] if recv else EMPTY, land)


def level_gather(g, slices, root, land):
    """The scatter reversed: the slice of the rank ``D`` hops from the root leaves it at step 0 and
    reaches the root at step ``D - 1``, one hop towards the root per step (``p - 1`` steps)."""
    p, r = g.nranks, g.rank
    k = (r - root) % p
    for j in range(p - 1):
        send = k >= 1 and k + j <= p - 1
        recv = k + 1 + j <= p - 1
        exchange(g, g.main, (r - 1) % p if send else None, (r + 1) % p if recv else None,
                 slices[(root + k + j) % p] if send else EMPTY,
                 slices[(root + k + 1 + j) % p] if recv else EMPTY, land)


def level_bcast(g, s, root, land):
    """A pipelined chain from the root (HCCL's ring broadcast): ``s`` cut into ``p`` pieces; piece
    ``i`` leaves the root at step ``i`` and moves one hop per step (``2p - 2`` steps)."""
    p, r = g.nranks, g.rank
    k = (r - root) % p
    pieces = split(s, p)
    for j in range(2 * p - 2):
        i_send, i_recv = j - k, j - k + 1
        send = k <= p - 2 and 0 <= i_send < p
        recv = k >= 1 and 0 <= i_recv < p
        exchange(g, g.main, (r + 1) % p if send else None, (r - 1) % p if recv else None,
                 pieces[i_send] if send else EMPTY, pieces[i_recv] if recv else EMPTY, land)


def level_reduce(g, s, root, red, land):
    """ReduceScatter of ``p`` slices, then the slices gathered to the root."""
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_gather(g, slices, root, land)


LEVEL = Level("ring", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, scatter=level_scatter,
              gather=level_gather, reduce=level_reduce)


RING = Algorithm("ring", "each slice travels round the ring of ranks: one thread, the two neighbours, p - 1 steps", (
    Implementation(Op.HCCL_CMD_ALLGATHER, allgather_ring, peers=ring_peers,
                   schedule=drive.on_servers(allgather_schedule, allgather_ring, Op.HCCL_CMD_ALLGATHER)),
    Implementation(Op.HCCL_CMD_ALLGATHER_V, allgatherv_ring, peers=ring_peers,
                   schedule=drive.on_servers(allgather_schedule, allgatherv_ring, Op.HCCL_CMD_ALLGATHER_V)),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER, reduce_scatter_ring, peers=ring_peers,
                   schedule=drive.on_servers(reduce_scatter_schedule, reduce_scatter_ring, Op.HCCL_CMD_REDUCE_SCATTER)),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER_V, reduce_scatterv_ring, peers=ring_peers,
                   schedule=drive.on_servers(reduce_scatter_schedule, reduce_scatterv_ring,
                                             Op.HCCL_CMD_REDUCE_SCATTER_V)),
    Implementation(Op.HCCL_CMD_ALLREDUCE, all_reduce_ring, peers=ring_peers,
                   schedule=drive.on_servers(all_reduce_schedule, all_reduce_ring, Op.HCCL_CMD_ALLREDUCE)),
    Implementation(Op.HCCL_CMD_SCATTER, scatter_ring, peers=ring_peers,
                   schedule=drive.schedule_of(scatter_ring, Op.HCCL_CMD_SCATTER)),
) + drive.implementations(LEVEL, {Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_REDUCE}), level=LEVEL)
