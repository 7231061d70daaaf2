"""The mesh family: every rank exchanges with every peer at once, a thread per peer (the main
thread and its slaves, in groups of at most 64 past 65 ranks: :func:`..patterns.mesh`).

AllGather (hcomm-api S3, :func:`..allgather.allgather_mesh`), ReduceScatter (S5,
:func:`..reduce_scatter.reduce_scatter_mesh`), AlltoAll / AlltoAllV / AlltoAllVC (the pairwise
plans of :mod:`..pairwise`, exchanged over the mesh) and Barrier (the handshakes alone,
:func:`..reduce.barrier`). The schedules are the steps those functions issue per loop of the HCCL
buffer; the width of a pass is the threads the implementation asks for.
"""
from __future__ import annotations

from .. import drive, patterns
from ..algorithm import Algorithm, Call, Implementation, Level, Local, MeshPass, Op, slot_size
from ..allgather import allgather_mesh
from ..context import MAX_SLAVES
from ..pairwise import alltoall, alltoallv
from ..reduce import barrier
from ..reduce_scatter import reduce_scatter_mesh
from ..segments import EMPTY, copy_into, exchange, reduce_into, seg, size, split


def all_but_two(call) -> int:
    """The main thread serves one peer, a slave each of the others."""
    return max(0, call.nranks - 2)


def all_but_one(call) -> int:
    """A slave per peer (the main thread reduces afterwards)."""
    return call.nranks - 1


def _threads(nranks: int, main_too: bool) -> int:
    """Threads a pass runs on: the slaves the implementation asks for, at most
    :data:`MAX_SLAVES` (a call gets no more), and the main thread when it serves a peer too."""
    slaves = (all_but_two if main_too else all_but_one)(Call(Op.HCCL_CMD_INVALID, nranks))
    return min(MAX_SLAVES, slaves) + (1 if main_too else 0)


def allgather_schedule(nranks: int, nbytes: int, ccl: int, elem: int = 1):
    """Per loop: stage the own piece, one pass of writes into every peer's slot, copy out every slot."""
    p = nranks
    if p == 1:
        yield Local("copy", nbytes)
        return
    per, width = slot_size(ccl, p), _threads(p, True)
    for done in range(0, nbytes, per):
        cur = min(per, nbytes - done)
        yield Local("copy", cur)
        yield MeshPass(cur, width)
        yield Local("copy", cur, p)


def reduce_scatter_schedule(nranks: int, nbytes: int, ccl: int, elem: int = 4):
    """Per loop: copy the own slice, one pass on the slaves (stage the peer's slice, write it into
    the peer's slot), reduce the ``p - 1`` landed slices."""
    p = nranks
    if p == 1:
        yield Local("copy", nbytes)
        return
    per, width = slot_size(ccl, 2 * p) // elem * elem, _threads(p, False)
    for done in range(0, nbytes, per):
        cur = min(per, nbytes - done)
        yield Local("copy", cur)
        yield MeshPass(cur, width, main_too=False, stage=True, rotated=True)
        yield Local("reduce", cur, p - 1)


def barrier_schedule(nranks: int, nbytes: int = 0, ccl: int = 0, elem: int = 1):
    """One pass of handshakes, nothing written."""
    if nranks > 1:
        yield MeshPass(0, _threads(nranks, True))




# -- the mesh as a level (segments; one exchange with every peer at once) ------------------------------
def _offsets(slices) -> list:
    """Where each rank's slice lands in a peer's landing area: the slices packed in rank order."""
    out, pos = [], 0
    for s in slices:
        out.append(pos)
        pos += size(s)
    return out


def level_rs(g, slices, red, land):
    """Every rank writes each peer its input of the peer's slice (into the peer's landing area, at
    the writer's place), then the main thread reduces the landed slices into its own, in rank
    order (HCCL's mesh ReduceScatter, S5)."""
    r = g.rank
    mine = size(slices[r])
    patterns.mesh(g, lambda t, q: exchange(g, t, q, q, slices[q], EMPTY, land + r * size(slices[q]),
                                           land_rx=land + q * mine))
    for q in range(g.nranks):
        if q != r:
            reduce_into(g.main, slices[r], seg(g.ccl + land + q * mine, mine), red)


def level_ag(g, slices, land):
    """Every rank writes its slice to every peer, each thread copying out what its peer wrote (S3)."""
    r = g.rank
    at = _offsets(slices)
    patterns.mesh(g, lambda t, q: exchange(g, t, q, q, slices[r], slices[q], land + at[r], land_rx=land + at[q]))


def level_ar(g, s, red, land):
    """ReduceScatter then AllGather of ``p`` slices (two shots)."""
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_ag(g, slices, land)


def level_scatter(g, slices, root, land):
    """The root writes each peer its slice, every peer at once (one step)."""
    r = g.rank
    if r == root:
        patterns.mesh(g, lambda t, q: exchange(g, t, q, None, slices[q], EMPTY, land),
                      peers=[q for q in range(g.nranks) if q != root])
    else:
        patterns.mesh(g, lambda t, q: exchange(g, t, None, q, EMPTY, slices[r], land), peers=[root])


def level_gather(g, slices, root, land):
    """Every peer writes the root its slice (at its place of the root's landing area), at once."""
    r = g.rank
    at = _offsets(slices)
    if r == root:
        patterns.mesh(g, lambda t, q: exchange(g, t, None, q, EMPTY, slices[q], land, land_rx=land + at[q]),
                      peers=[q for q in range(g.nranks) if q != root])
    else:
        patterns.mesh(g, lambda t, q: exchange(g, t, q, None, slices[r], EMPTY, land + at[r]), peers=[root])


def level_bcast(g, s, root, land):
    """Scatter then AllGather (HCCL's BroadCastMeshExecutor inside a server)."""
    slices = split(s, g.nranks)
    level_scatter(g, slices, root, land)
    level_ag(g, slices, land)


def level_reduce(g, s, root, red, land):
    """ReduceScatter then the slices gathered to the root."""
    slices = split(s, g.nranks, red.elem)
    level_rs(g, slices, red, land)
    level_gather(g, slices, root, land)


def oneshot_ar(g, s, red, land):
    """Every rank writes its whole vector to every peer, then reduces what it received (HCCL's
    small-count mesh AllReduce: one step of ``n``). Every rank reduces in rank order (rank 0's
    vector, then rank 1's, ...), so every rank gets the same bytes: its own vector goes to its
    place of the landing area first."""
    r, n = g.rank, size(s)
    patterns.mesh(g, lambda t, q: exchange(g, t, q, q, s, EMPTY, land + r * n, land_rx=land + q * n))
    if r != 0:
        copy_into(g.main, seg(g.ccl + land + r * n, n), s)
        copy_into(g.main, s, seg(g.ccl + land, n))
    for q in range(1, g.nranks):
        reduce_into(g.main, s, seg(g.ccl + land + q * n, n), red)


def mesh_slaves(nranks: int) -> int:
    """The main thread and a slave serve one peer each (at most 63 slaves: groups past 65 ranks)."""
    return max(0, nranks - 2)


LEVEL = Level("mesh", rs=level_rs, ag=level_ag, ar=level_ar, bcast=level_bcast, scatter=level_scatter,
              gather=level_gather, reduce=level_reduce, slaves=mesh_slaves)
ONESHOT = Level("mesh_oneshot", ar=oneshot_ar, slaves=mesh_slaves, land_per_byte=lambda p: float(p))


MESH = Algorithm("mesh", "every rank exchanges with every peer at once, a thread per peer (groups of 64 past 65 ranks)", (
    Implementation(Op.HCCL_CMD_ALLGATHER, allgather_mesh, slaves=all_but_two,
                   schedule=drive.on_servers(allgather_schedule, allgather_mesh, Op.HCCL_CMD_ALLGATHER, all_but_two)),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER, reduce_scatter_mesh, slaves=all_but_one,
                   schedule=drive.on_servers(reduce_scatter_schedule, reduce_scatter_mesh, Op.HCCL_CMD_REDUCE_SCATTER,
                                             all_but_one)),
    Implementation(Op.HCCL_CMD_ALLTOALL, alltoall, slaves=all_but_two,
                   schedule=drive.schedule_of(alltoall, Op.HCCL_CMD_ALLTOALL, all_but_two)),
    Implementation(Op.HCCL_CMD_ALLTOALLV, alltoallv, slaves=all_but_two,
                   schedule=drive.schedule_of(alltoallv, Op.HCCL_CMD_ALLTOALLV, all_but_two)),
    Implementation(Op.HCCL_CMD_ALLTOALLVC, alltoallv, slaves=all_but_two,
                   schedule=drive.schedule_of(alltoallv, Op.HCCL_CMD_ALLTOALLVC, all_but_two)),
    Implementation(Op.HCCL_CMD_BARRIER, barrier, slaves=all_but_two,
                   schedule=drive.on_servers(barrier_schedule, barrier, Op.HCCL_CMD_BARRIER, all_but_two)),
) + drive.implementations(LEVEL, {Op.HCCL_CMD_ALLREDUCE, Op.HCCL_CMD_ALLGATHER_V, Op.HCCL_CMD_REDUCE_SCATTER_V,
                                   Op.HCCL_CMD_BROADCAST, Op.HCCL_CMD_SCATTER, Op.HCCL_CMD_REDUCE}), level=LEVEL)

MESH_ONESHOT = Algorithm("mesh_oneshot", "small-message mesh AllReduce: every rank writes its whole vector to "
                         "every peer and reduces what it received (one step)", drive.implementations(ONESHOT),
                         level=ONESHOT)
