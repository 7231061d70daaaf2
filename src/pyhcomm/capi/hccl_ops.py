"""``hccl.h`` collectives (stream last), built on :mod:`pyhcomm.collectives`.

Each call checks its arguments, enqueues the algorithm on ``stream`` and returns at once;
synchronize ``stream`` for the result. Every rank of ``comm`` must make the same call.
"""
from __future__ import annotations

from .. import args
from ..sim import current_sim as _sim
from ..sim.runtime import host_ctx
from ..collectives import allgather_mesh, run
from ..collectives.all_reduce import all_reduce_ring as _all_reduce_ring
from ..collectives.allgather import ring_peers as _ring_peers
from ..collectives.alltoall import alltoall as _alltoall
from ..collectives.broadcast import broadcast as _broadcast
from ..collectives.broadcast import broadcast_peers as _broadcast_peers
from ..collectives.context import device_mode as _device_mode
from ..collectives.reduce_scatter import reduce_scatter_mesh as _reduce_scatter_mesh
from ..collectives.scatter import scatter_ring as _scatter_ring
from ..collectives.send_recv import recv as _recv
from ..collectives.send_recv import send as _send
from ..sim import memory
from ..enums import DATA_TYPE_SIZE
from ..errors import not_support, para, ptr
from ..hccl import comm as _comm
from ..hcomm.reduce import check_dtype_op as _check_dtype_op
from ._wrap import c_api

__all__ = ["HcclAllGather"]


def check_buffer(api: str, addr, nbytes: int, device: int, name: str) -> None:
    """A user buffer of a collective: non-NULL, wholly inside device memory of the rank's device."""
    addr = args.pointer(addr, api, name)
    if not addr:
        raise ptr(api, f"{name} is NULL")
    try:
        memory.resolve(addr, nbytes, memory.DEVICE, device)
    except memory.BadRange as why:
        raise para(api, f"{name} 0x{addr:x} + {nbytes} is not device memory of this rank's device {device} "
                        f"({why})") from None


def check_common(api: str, comm, count, data_type, stream):
    """Check comm, count, data type and stream (a live stream of the rank's device, also when
    nothing is to be sent), and that the call comes from the host; return ``(Communicator,
    element size)``."""
    c = _comm.get_comm(comm, api)
    stream = args.handle(stream, api, "stream")
    if not stream:
        raise ptr(api, "stream is NULL")
    st = _sim().handles.streams.get(stream)
    if st is None:
        raise para(api, f"stream 0x{stream:x} is not a live stream")
    if st.device != c.device:
        raise para(api, f"stream 0x{stream:x} is on device {st.device}, rank {c.rank} on device {c.device}")
    if host_ctx().kernels:
        raise not_support(api, "collectives are host calls: they cannot be issued inside an AI CPU kernel")
    count = args.integer(count, api, "count")
    data_type = args.integer(data_type, api, "dataType", -(1 << 64), args.UINT64_MAX)
    if data_type not in DATA_TYPE_SIZE:
        raise para(api, f"dataType {data_type!r} is not an HcclDataType")
    return c, DATA_TYPE_SIZE[data_type]


@c_api()
def HcclAllGather(sendBuf, recvBuf, sendCount, dataType, comm, stream):  # noqa: N803
    """Every rank's ``sendCount`` elements, in rank order, into every rank's ``recvBuf``."""
    api = "HcclAllGather"
    c, size = check_common(api, comm, sendCount, dataType, stream)
    nbytes = sendCount * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes * c.nranks, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, max(0, c.nranks - 2), allgather_mesh, sendBuf, recvBuf, nbytes, tag=api)


# -- Broadcast, Scatter, AlltoAll, Send/Recv -------------------------------------------------------

__all__ += ["HcclBroadcast", "HcclScatter", "HcclAlltoAll", "HcclSend", "HcclRecv"]


def check_rank(api: str, c, rank, name: str, other_than_self: bool = False) -> int:
    """A rank argument (``root``, ``destRank``, ``srcRank``): an int in ``[0, rankSize)``."""
    if type(rank) is not int or not 0 <= rank < c.nranks:
        raise para(api, f"{name} {rank!r} is not a rank of this communicator (0..{c.nranks - 1})")
    if other_than_self and rank == c.rank:
        raise para(api, f"{name} {rank} is this rank: a rank cannot send to or receive from itself")
    return rank


@c_api()
def HcclBroadcast(buf, count, dataType, root, comm, stream):  # noqa: N803
    """Rank ``root``'s ``count`` elements at ``buf`` into every rank's ``buf``."""
    api = "HcclBroadcast"
    c, size = check_common(api, comm, count, dataType, stream)
    check_rank(api, c, root, "root")
    nbytes = count * size
    check_buffer(api, buf, nbytes, c.device, "buf")
    if nbytes and c.nranks > 1:
        run(comm, stream, 0, _broadcast, buf, nbytes, root, tag=api,
            peers=_broadcast_peers(c.nranks, c.rank, root))


@c_api()
def HcclScatter(sendBuf, recvBuf, recvCount, dataType, root, comm, stream):  # noqa: N803
    """Slice ``r`` (``recvCount`` elements) of rank ``root``'s ``sendBuf`` into rank ``r``'s
    ``recvBuf``; ``sendBuf`` is ignored (may be NULL) on the other ranks."""
    api = "HcclScatter"
    c, size = check_common(api, comm, recvCount, dataType, stream)
    check_rank(api, c, root, "root")
    nbytes = recvCount * size
    if c.rank == root:
        check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        ring = sorted({(c.rank - 1) % c.nranks, (c.rank + 1) % c.nranks})
        run(comm, stream, 0, _scatter_ring, sendBuf if c.rank == root else 0, recvBuf, nbytes, root,
            tag=api, peers=ring)


@c_api()
def HcclAlltoAll(sendBuf, sendCount, sendType, recvBuf, recvCount, recvType, comm, stream):  # noqa: N803
    """Slice ``j`` (``sendCount`` elements) of every rank's ``sendBuf`` to rank ``j``, where it lands
    as slice ``i`` (the sender's rank) of ``recvBuf``."""
    api = "HcclAlltoAll"
    c, send_size = check_common(api, comm, sendCount, sendType, stream)
    _, recv_size = check_common(api, comm, recvCount, recvType, stream)
    nbytes = sendCount * send_size
    if recvCount * recv_size != nbytes:
        raise para(api, f"sendCount {sendCount} x {send_size} B != recvCount {recvCount} x {recv_size} B: "
                        "every rank must receive from each rank what it sends to each")
    check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes * c.nranks, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, max(0, c.nranks - 2), _alltoall, sendBuf, recvBuf, nbytes, tag=api)


@c_api()
def HcclSend(sendBuf, count, dataType, destRank, comm, stream):  # noqa: N803
    """Send ``count`` elements at ``sendBuf`` to ``destRank`` (which calls :func:`HcclRecv`); the
    stream completes once the receiver has read them."""
    api = "HcclSend"
    c, size = check_common(api, comm, count, dataType, stream)
    check_rank(api, c, destRank, "destRank", other_than_self=True)
    nbytes = count * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    if nbytes:
        run(comm, stream, 0, _send, sendBuf, nbytes, destRank, tag=api, peers=[destRank])


@c_api()
def HcclRecv(recvBuf, count, dataType, srcRank, comm, stream):  # noqa: N803
    """Receive ``count`` elements from ``srcRank`` (which calls :func:`HcclSend`) into ``recvBuf``."""
    api = "HcclRecv"
    c, size = check_common(api, comm, count, dataType, stream)
    check_rank(api, c, srcRank, "srcRank", other_than_self=True)
    nbytes = count * size
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, 0, _recv, recvBuf, nbytes, srcRank, tag=api, peers=[srcRank])


# -- ReduceScatter, AllReduce ----------------------------------------------------------------------
# Where the local reduces run decides the supported (dataType, op) pairs: on the host path (A2)
# and the A3 device path FP32, FP16, INT8, INT16, INT32, BFP16 x SUM, MAX, MIN; on the Atlas 350
# device path the wider set of pyhcomm.hcomm.reduce. A pair outside it fails the call with
# HCCL_E_PARA (HCCL_E_NOT_SUPPORT for types Atlas 350 maps but cannot reduce) before anything is
# enqueued. HcclAllGather keeps the mesh on every product; the ring (collectives.allgather_ring)
# is what HcclAllReduce gathers with.

__all__ += ["HcclReduceScatter", "HcclAllReduce"]


def check_reduce(api: str, data_type, op) -> None:
    """``(dataType, op)`` must be reducible where this product's collectives reduce."""
    _check_dtype_op(data_type, op, _device_mode(), api)


@c_api()
def HcclReduceScatter(sendBuf, recvBuf, recvCount, dataType, op, comm, stream):  # noqa: N803
    """``op`` over all ranks of their slice ``r`` (``recvCount`` elements of ``sendBuf``) into rank
    ``r``'s ``recvBuf`` (mesh, hcomm-api S5). ``recvBuf == sendBuf + r * recvCount`` runs in place."""
    api = "HcclReduceScatter"
    c, size = check_common(api, comm, recvCount, dataType, stream)
    check_reduce(api, dataType, op)
    nbytes = recvCount * size
    check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, c.nranks - 1, _reduce_scatter_mesh, sendBuf, recvBuf, recvCount, dataType, op, tag=api)


@c_api()
def HcclAllReduce(sendBuf, recvBuf, count, dataType, op, comm, stream):  # noqa: N803
    """``op`` over all ranks of their ``count`` elements into every rank's ``recvBuf`` (ring
    ReduceScatter + ring AllGather; ``count`` need not divide by the rank count). In place allowed."""
    api = "HcclAllReduce"
    c, size = check_common(api, comm, count, dataType, stream)
    check_reduce(api, dataType, op)
    nbytes = count * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        run(comm, stream, 0, _all_reduce_ring, sendBuf, recvBuf, count, dataType, op, tag=api,
            peers=_ring_peers(c.rank, c.nranks))
