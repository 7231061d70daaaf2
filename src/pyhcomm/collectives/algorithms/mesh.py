"""The mesh family: every rank exchanges with every peer at once, a thread per peer (the main
thread and its slaves, in groups of at most 64 past 65 ranks: :func:`..patterns.mesh`).

AllGather (hcomm-api S3, :func:`..allgather.allgather_mesh`), ReduceScatter (S5,
:func:`..reduce_scatter.reduce_scatter_mesh`), AlltoAll / AlltoAllV / AlltoAllVC (the pairwise
plans of :mod:`..pairwise`, exchanged over the mesh) and Barrier (the handshakes alone,
:func:`..reduce.barrier`). The schedules are the steps those functions issue per loop of the HCCL
buffer; the width of a pass is the threads the implementation asks for.
"""
from __future__ import annotations

from ..algorithm import Algorithm, Call, Implementation, Local, MeshPass, Op, slot_size
from ..allgather import allgather_mesh
from ..context import MAX_SLAVES
from ..pairwise import alltoall, alltoallv
from ..reduce import barrier
from ..reduce_scatter import reduce_scatter_mesh


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


MESH = Algorithm("mesh", "every rank exchanges with every peer at once, a thread per peer (groups of 64 past 65 ranks)", (
    Implementation(Op.HCCL_CMD_ALLGATHER, allgather_mesh, slaves=all_but_two, schedule=allgather_schedule),
    Implementation(Op.HCCL_CMD_REDUCE_SCATTER, reduce_scatter_mesh, slaves=all_but_one,
                   schedule=reduce_scatter_schedule),
    Implementation(Op.HCCL_CMD_ALLTOALL, alltoall, slaves=all_but_two),
    Implementation(Op.HCCL_CMD_ALLTOALLV, alltoallv, slaves=all_but_two),
    Implementation(Op.HCCL_CMD_ALLTOALLVC, alltoallv, slaves=all_but_two),
    Implementation(Op.HCCL_CMD_BARRIER, barrier, slaves=all_but_two, schedule=barrier_schedule),
))
