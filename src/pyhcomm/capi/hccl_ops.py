"""``hccl.h`` collectives (stream last), built on :mod:`pyhcomm.collectives`.

Each call checks and converts its arguments, then hands the call to the collective library
(:mod:`pyhcomm.collectives.dispatch`: its selector chooses the algorithm, which declares its
threads and channels); the algorithm is enqueued on ``stream`` and the call returns at once;
synchronize ``stream`` for the result. Every rank of ``comm`` must make the same call.
Between ``HcclGroupStart`` and ``HcclGroupEnd`` a checked call is kept for the end of the group
(:mod:`pyhcomm.collectives.group`).

Checks, in order: the communicator, the product (``HCCL_E_NOT_SUPPORT`` where HCCL does not run
the call, :mod:`pyhcomm.collectives.support`), the stream, counts (``HCCL_E_PARA``), data types
and operations (``HCCL_E_NOT_SUPPORT`` outside the product's lists, as HCCL), ranks, then the
buffers (``HCCL_E_PTR`` when NULL, ``HCCL_E_PARA`` when not wholly inside device memory of the
rank's device). Nothing is enqueued when a check fails.
"""
from __future__ import annotations

from .. import args
from ..collectives import dispatch, support
from ..collectives.algorithm import Op
from ..sim import current_sim as _sim
from ..sim.runtime import program_ctx
from ..enums import DATA_TYPE_SIZE
from ..errors import not_support, para, ptr
from ..hccl import comm as _comm
from ..sim import memory
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


def check_comm(api: str, comm, stream):
    """The communicator, the product, the stream (a live stream of the rank's device, also when
    nothing is to be sent) and the side (collectives are host calls); returns the
    ``Communicator``."""
    c = _comm.get_comm(comm, api)
    support.check_product(api)
    stream = args.handle(stream, api, "stream")
    if not stream:
        raise ptr(api, "stream is NULL")
    st = _sim().handles.streams.get(stream)
    if st is None:
        raise para(api, f"stream 0x{stream:x} is not a live stream")
    if st.device != c.device:
        raise para(api, f"stream 0x{stream:x} is on device {st.device}, rank {c.rank} on device {c.device}")
    if program_ctx().kernels:
        raise not_support(api, "collectives are host calls: they cannot be issued inside an AI CPU kernel")
    return c


def check_count(api: str, count, name: str = "count") -> int:
    count = args.integer(count, api, name, -(1 << 64), args.UINT64_MAX)
    if count < 0:
        raise para(api, f"{name} {count!r} must be a non-negative int")
    return count


#: ``reduce_op`` of :func:`check_common` for a call that only moves bytes. A sentinel, not ``None``:
#: a caller's ``op=None`` is a wrong type (``TypeError``), never "no reduction".
MOVES_ONLY = object()


def check_common(api: str, comm, count, data_type, stream, reduce_op=MOVES_ONLY, count_name: str = "count"):
    """Check comm, product, stream, count and data type (and ``(data type, op)`` of a reducing
    call: any ``reduce_op`` but :data:`MOVES_ONLY`, ``None`` included); return
    ``(Communicator, element size)``."""
    c = check_comm(api, comm, stream)
    check_count(api, count, count_name)
    data_type = args.integer(data_type, api, "dataType", -(1 << 64), args.UINT64_MAX)
    if reduce_op is MOVES_ONLY:
        support.check_move_dtype(api, data_type)
    else:
        support.check_reduce_pair(api, data_type, args.integer(reduce_op, api, "op", -(1 << 64), args.UINT64_MAX))
    return c, DATA_TYPE_SIZE[data_type]


def not_same(api: str, send, recv) -> None:
    """``sendBuf`` and ``recvBuf`` must differ where HCCL forbids in-place operation."""
    if send and send == recv:
        raise para(api, f"sendBuf and recvBuf are the same address 0x{send:x}: {api} does not run in place")


@c_api(ints=True)
def HcclAllGather(sendBuf, recvBuf, sendCount, dataType, comm, stream):  # noqa: N803
    """Every rank's ``sendCount`` elements, in rank order, into every rank's ``recvBuf``."""
    api = "HcclAllGather"
    c, size = check_common(api, comm, sendCount, dataType, stream, count_name="sendCount")
    nbytes = sendCount * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes * c.nranks, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_ALLGATHER, (sendBuf, recvBuf, nbytes), nbytes=nbytes,
                            data_type=dataType)


# -- Broadcast, Scatter, AlltoAll, Send/Recv -------------------------------------------------------

__all__ += ["HcclBroadcast", "HcclScatter", "HcclAlltoAll", "HcclSend", "HcclRecv"]


def check_rank(api: str, c, rank, name: str, other_than_self: bool = False) -> int:
    """A rank argument (``root``, ``destRank``, ``srcRank``): an int in ``[0, rankSize)``."""
    rank = args.integer(rank, api, name, -(1 << 64), args.UINT64_MAX)
    if not 0 <= rank < c.nranks:
        raise para(api, f"{name} {rank!r} is not a rank of this communicator (0..{c.nranks - 1})")
    if other_than_self and rank == c.rank:
        raise para(api, f"{name} {rank} is this rank: a rank cannot send to or receive from itself")
    return rank


@c_api(ints=True)
def HcclBroadcast(buf, count, dataType, root, comm, stream):  # noqa: N803
    """Rank ``root``'s ``count`` elements at ``buf`` into every rank's ``buf``."""
    api = "HcclBroadcast"
    c, size = check_common(api, comm, count, dataType, stream)
    check_rank(api, c, root, "root")
    nbytes = count * size
    check_buffer(api, buf, nbytes, c.device, "buf")
    if nbytes and c.nranks > 1:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_BROADCAST, (buf, nbytes, root), nbytes=nbytes, root=root,
                            data_type=dataType)


@c_api(ints=True)
def HcclScatter(sendBuf, recvBuf, recvCount, dataType, root, comm, stream):  # noqa: N803
    """Slice ``r`` (``recvCount`` elements) of rank ``root``'s ``sendBuf`` into rank ``r``'s
    ``recvBuf``; ``sendBuf`` is ignored (may be NULL) on the other ranks."""
    api = "HcclScatter"
    c, size = check_common(api, comm, recvCount, dataType, stream, count_name="recvCount")
    check_rank(api, c, root, "root")
    nbytes = recvCount * size
    if c.rank == root:
        check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_SCATTER, (sendBuf if c.rank == root else 0, recvBuf, nbytes,
                                                                     root), nbytes=nbytes, root=root, data_type=dataType)


@c_api(ints=True)
def HcclAlltoAll(sendBuf, sendCount, sendType, recvBuf, recvCount, recvType, comm, stream):  # noqa: N803
    """Slice ``j`` (``sendCount`` elements) of every rank's ``sendBuf`` to rank ``j``, where it lands
    as slice ``i`` (the sender's rank) of ``recvBuf``. ``recvCount`` and ``recvType`` must equal
    ``sendCount`` and ``sendType`` (HCCL's rule); no in-place operation."""
    api = "HcclAlltoAll"
    c, size = check_common(api, comm, sendCount, sendType, stream, count_name="sendCount")
    check_common(api, comm, recvCount, recvType, stream, count_name="recvCount")
    if (recvCount, recvType) != (sendCount, sendType):
        raise para(api, f"recvCount {recvCount} / recvType {recvType!r} must equal sendCount {sendCount} / "
                        f"sendType {sendType!r}")
    nbytes = sendCount * size
    not_same(api, sendBuf, recvBuf)
    check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes * c.nranks, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_ALLTOALL, (sendBuf, recvBuf, nbytes), nbytes=nbytes,
                            data_type=sendType)


def _p2p(api, buf, count, dataType, rank, comm, stream, is_send: bool) -> None:
    name = "destRank" if is_send else "srcRank"
    c, size = check_common(api, comm, count, dataType, stream)
    check_rank(api, c, rank, name, other_than_self=True)
    nbytes = count * size
    check_buffer(api, buf, nbytes, c.device, "sendBuf" if is_send else "recvBuf")
    dispatch.point_to_point(api, comm, stream, is_send, buf, nbytes, rank)


@c_api(ints=True)
def HcclSend(sendBuf, count, dataType, destRank, comm, stream):  # noqa: N803
    """Send ``count`` elements at ``sendBuf`` to ``destRank`` (which receives them with
    :func:`HcclRecv`, an ``HcclBatchSendRecv`` item or a grouped receive); the stream completes
    once the receiver has read them (:func:`pyhcomm.collectives.pairwise.transfer`)."""
    _p2p("HcclSend", sendBuf, count, dataType, destRank, comm, stream, True)


@c_api(ints=True)
def HcclRecv(recvBuf, count, dataType, srcRank, comm, stream):  # noqa: N803
    """Receive ``count`` elements from ``srcRank`` (sent with :func:`HcclSend`, an
    ``HcclBatchSendRecv`` item or a grouped send) into ``recvBuf``."""
    _p2p("HcclRecv", recvBuf, count, dataType, srcRank, comm, stream, False)


# -- ReduceScatter, AllReduce, Reduce --------------------------------------------------------------
# The (dataType, op) pairs are HCCL's per product (collectives.support). A reduce step the HCOMM
# primitive takes on this path is an HcommLocalReduceOnThread; the others (64-bit types, PROD) are
# HCCL's own reduce, recorded as the same task (hcomm.reduce.hccl_reduce).

__all__ += ["HcclReduceScatter", "HcclAllReduce", "HcclReduce"]


@c_api(ints=True)
def HcclReduceScatter(sendBuf, recvBuf, recvCount, dataType, op, comm, stream):  # noqa: N803
    """``op`` over all ranks of their slice ``r`` (``recvCount`` elements of ``sendBuf``) into rank
    ``r``'s ``recvBuf`` (mesh, hcomm-api S5). ``recvBuf == sendBuf + r * recvCount`` runs in place."""
    api = "HcclReduceScatter"
    c, size = check_common(api, comm, recvCount, dataType, stream, op, count_name="recvCount")
    nbytes = recvCount * size
    check_buffer(api, sendBuf, nbytes * c.nranks, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_REDUCE_SCATTER, (sendBuf, recvBuf, recvCount, dataType, op),
                            nbytes=nbytes, data_type=dataType, reduce_op=op)


@c_api(ints=True)
def HcclAllReduce(sendBuf, recvBuf, count, dataType, op, comm, stream):  # noqa: N803
    """``op`` over all ranks of their ``count`` elements into every rank's ``recvBuf`` (ring
    ReduceScatter + ring AllGather; ``count`` need not divide by the rank count). In place allowed."""
    api = "HcclAllReduce"
    c, size = check_common(api, comm, count, dataType, stream, op)
    nbytes = count * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_ALLREDUCE, (sendBuf, recvBuf, count, dataType, op),
                            nbytes=nbytes, data_type=dataType, reduce_op=op)


@c_api(ints=True)
def HcclReduce(sendBuf, recvBuf, count, dataType, op, root, comm, stream):  # noqa: N803
    """``op`` over all ranks of their ``count`` elements into rank ``root``'s ``recvBuf``
    (:mod:`pyhcomm.collectives.reduce`); ``recvBuf`` is ignored (may be NULL) on the other ranks.
    ``recvBuf == sendBuf`` on the root runs in place."""
    api = "HcclReduce"
    c, size = check_common(api, comm, count, dataType, stream, op)
    check_rank(api, c, root, "root")
    nbytes = count * size
    check_buffer(api, sendBuf, nbytes, c.device, "sendBuf")
    if c.rank == root:
        check_buffer(api, recvBuf, nbytes, c.device, "recvBuf")
    if nbytes:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_REDUCE,
                            (sendBuf, recvBuf if c.rank == root else 0, count, dataType, op, root), nbytes=nbytes,
                            root=root, data_type=dataType, reduce_op=op)


# -- Barrier ---------------------------------------------------------------------------------------

__all__ += ["HcclBarrier"]


@c_api(ints=True)
def HcclBarrier(comm, stream):  # noqa: N803
    """Hold every rank's ``stream`` until every rank of ``comm`` has reached the barrier on its
    stream (a notify-only mesh; nothing moves)."""
    api = "HcclBarrier"
    c = check_comm(api, comm, stream)
    if c.nranks > 1:
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_BARRIER, (), nbytes=0)
