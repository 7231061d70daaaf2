"""AllReduce: every rank receives ``op`` over all ranks of their ``count`` elements.

``all_reduce_ring`` = ring ReduceScatter (:func:`.reduce_scatter.reduce_scatterv_ring`) followed
by ring AllGather (:func:`.allgather.allgatherv_ring`), both on the main thread with the channels
to the two neighbours. The ``count`` elements are cut into ``N`` slices whose sizes differ by at
most one element (the first ``count % N`` slices get one more; with ``count < N`` the last
slices are empty). Rank ``r`` reduces slice ``r`` into ``recv``, then the slices go round the
ring::

    N = 3, count = 7: slices [0:3] [3:5] [5:7]

                 reduce-scatter (2 steps)          all-gather (2 steps)
        rank 0 : recv[0:3] = x0+x1+x2 (slice 0)  -> recv[3:5], recv[5:7] from the ring
        rank 1 : recv[3:5] = x1+x2+x0 (slice 1)  -> recv[5:7], recv[0:3]
        rank 2 : recv[5:7] = x2+x0+x1 (slice 2)  -> recv[0:3], recv[3:5]

The all-gather runs in place: each rank's reduced slice is already at its place in ``recv``.
Reduction order of slice ``c``: ``((x[c+1] op x[c+2]) op ...) op x[c]`` (ranks mod N), the same
result on every rank (the gather only copies). ``send == recv`` (in place) is allowed.
"""
from __future__ import annotations

from ..enums import DATA_TYPE_SIZE
from .allgather import allgatherv_ring
from .context import buffer_parts
from .reduce_scatter import reduce_scatterv_ring


def slices(count: int, nranks: int) -> tuple[list[int], list[int]]:
    """``(counts, displs)`` of the ``nranks`` slices of ``count`` elements (sizes differ by <= 1)."""
    base, extra = divmod(count, nranks)
    counts = [base + (1 if r < extra else 0) for r in range(nranks)]
    displs = [sum(counts[:r]) for r in range(nranks)]
    return counts, displs


@buffer_parts(lambda n: n)  # the gather's n slots (the reduce-scatter needs 2)
def all_reduce_ring(ctx, send: int, recv: int, count: int, data_type: int, op: int) -> None:
    """Issue the ring AllReduce of ``count`` elements (ring ReduceScatter + ring AllGather)."""
    size = DATA_TYPE_SIZE[data_type]
    counts, displs = slices(count, ctx.nranks)
    mine = recv + displs[ctx.rank] * size
    reduce_scatterv_ring(ctx, send, mine, counts, displs, data_type, op)
    allgatherv_ring(ctx, mine, recv, [c * size for c in counts], [d * size for d in displs])
