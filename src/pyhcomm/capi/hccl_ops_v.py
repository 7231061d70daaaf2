"""``hccl.h`` collectives with per-rank counts, and batched point-to-point.

``HcclAllGatherV``, ``HcclReduceScatterV``, ``HcclAlltoAllV``, ``HcclAlltoAllVC`` and
``HcclBatchSendRecv`` with pyhccl's parameters: count and displacement arrays are sequences of
``rankSize`` non-negative ints (numpy arrays too), ``sendCountMatrix`` a ``rankSize x rankSize``
one (nested or flat, row ``i`` = what rank ``i`` sends), ``sendRecvInfo`` a list of
:class:`~pyhcomm.defs.hccl_types.HcclSendRecvItem`. Checks and return codes as :mod:`.hccl_ops`; a NULL (None) array is
``HCCL_E_PTR``, a wrong length or a negative value ``HCCL_E_PARA``, something that is not a
sequence a ``TypeError`` (as the binding). Displacements are in elements of the data type.

The rules of HCCL's API reference that pyhcomm checks: a rank's own ``sendCount`` must equal its
entry of ``recvCounts`` (AllGatherV) and its ``recvCount`` its entry of ``sendCounts``
(ReduceScatterV); ``sendBuf`` and ``recvBuf`` must differ; a buffer may be NULL only when its
counts are all zero; send and receive types of an all-to-all must be the same. The rules that
need the other ranks' arguments (every rank passes the same ``recvCounts``, ``sendCountMatrix``;
the ``k``-th send to a peer has the size of the peer's ``k``-th receive) are the caller's: HCCL
leaves a violation undefined, and here the blocked streams then report the waits (or the
receiver gets the bytes it asked for, of which only those sent are meaningful).
"""
from __future__ import annotations

import numpy as np

from ..collectives import dispatch, group
from ..collectives.algorithm import Op
from ..defs.hccl_types import HcclSendRecvItem, HcclSendRecvType
from ..errors import para, ptr
from ._wrap import c_api
from .hccl_ops import check_buffer, check_comm, check_common, check_rank, not_same

__all__ = ["HcclAllGatherV", "HcclReduceScatterV", "HcclAlltoAllV", "HcclAlltoAllVC",
           "HcclBatchSendRecv"]


def counts(api: str, values, n: int, name: str) -> list[int]:
    """A ``uint64`` array argument of ``n`` entries as a list of ints."""
    if values is None:
        raise ptr(api, f"{name} is NULL")
    if isinstance(values, np.ndarray):
        values = values.reshape(-1).tolist()
    try:
        out = list(values)
    except TypeError:
        raise TypeError(f"{api}: {name} must be a sequence of ints, not {type(values).__name__}") from None
    if len(out) != n:
        raise para(api, f"{name} has {len(out)} entries; the communicator has {n} ranks")
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v < 1 << 64:
            raise para(api, f"{name}[{i}] = {v!r} is not a uint64")
    return [int(v) for v in out]


def extent(sizes, displs) -> int:
    """Elements a buffer must hold for blocks of ``sizes`` at ``displs`` (0 when all are empty)."""
    return max((d + s for s, d in zip(sizes, displs) if s), default=0)


def check_array_buffer(api: str, buf, elems: int, size: int, device: int, name: str) -> None:
    """A buffer addressed by count arrays: may be NULL (or anything) when it holds nothing."""
    if elems:
        check_buffer(api, buf, elems * size, device, name)


def matrix(api: str, values, n: int) -> list[int]:
    """``sendCountMatrix`` (``n`` rows of ``n``, or ``n * n`` flat) as a flat list of ints."""
    if values is None:
        raise ptr(api, "sendCountMatrix is NULL")
    if isinstance(values, np.ndarray):
        return counts(api, values.reshape(-1), n * n, "sendCountMatrix")
    try:
        rows = list(values)
    except TypeError:
        raise TypeError(f"{api}: sendCountMatrix must be a sequence, not {type(values).__name__}") from None
    if rows and all(isinstance(r, (list, tuple, np.ndarray)) for r in rows):
        if len(rows) != n:
            raise para(api, f"sendCountMatrix has {len(rows)} rows; the communicator has {n} ranks")
        return [x for i, r in enumerate(rows) for x in counts(api, r, n, f"sendCountMatrix[{i}]")]
    return counts(api, rows, n * n, "sendCountMatrix")


@c_api(ints=True)
def HcclAllGatherV(sendBuf, sendCount, recvBuf, recvCounts, recvDispls, dataType, comm, stream):  # noqa: N803
    """Every rank ``r``'s ``recvCounts[r]`` elements into every rank's ``recvBuf`` at
    ``recvDispls[r]`` (ring, :func:`pyhcomm.collectives.allgatherv_ring`)."""
    api = "HcclAllGatherV"
    c, size = check_common(api, comm, sendCount, dataType, stream, count_name="sendCount")
    rc = counts(api, recvCounts, c.nranks, "recvCounts")
    rd = counts(api, recvDispls, c.nranks, "recvDispls")
    if rc[c.rank] != sendCount:
        raise para(api, f"recvCounts[{c.rank}] = {rc[c.rank]} must equal this rank's sendCount {sendCount}")
    not_same(api, sendBuf, recvBuf)
    check_array_buffer(api, sendBuf, sendCount, size, c.device, "sendBuf")
    check_array_buffer(api, recvBuf, extent(rc, rd), size, c.device, "recvBuf")
    if any(rc):
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_ALLGATHER_V,
                            (sendBuf, recvBuf, [x * size for x in rc], [d * size for d in rd]), nbytes=max(rc) * size,
                            data_type=dataType)


@c_api(ints=True)
def HcclReduceScatterV(sendBuf, sendCounts, sendDispls, recvBuf, recvCount, dataType, op, comm, stream):  # noqa: N803
    """``op`` over all ranks of their block ``r`` (``sendCounts[r]`` elements at ``sendDispls[r]``)
    into rank ``r``'s ``recvBuf`` (ring, :func:`pyhcomm.collectives.reduce_scatterv_ring`)."""
    api = "HcclReduceScatterV"
    c, size = check_common(api, comm, recvCount, dataType, stream, op, count_name="recvCount")
    sc = counts(api, sendCounts, c.nranks, "sendCounts")
    sd = counts(api, sendDispls, c.nranks, "sendDispls")
    if sc[c.rank] != recvCount:
        raise para(api, f"sendCounts[{c.rank}] = {sc[c.rank]} must equal this rank's recvCount {recvCount}")
    not_same(api, sendBuf, recvBuf)
    check_array_buffer(api, sendBuf, extent(sc, sd), size, c.device, "sendBuf")
    check_array_buffer(api, recvBuf, recvCount, size, c.device, "recvBuf")
    if any(sc):
        dispatch.collective(api, comm, stream, Op.HCCL_CMD_REDUCE_SCATTER_V, (sendBuf, recvBuf, sc, sd, dataType, op),
                            nbytes=max(sc) * size, data_type=dataType, reduce_op=op)


def _checked_alltoallv(api, op, c, comm, stream, sendBuf, sc, sd, sendType, recvBuf, rc, rd, recvType, size) -> None:
    if sendType != recvType:
        raise para(api, f"sendType {sendType!r} and recvType {recvType!r} must be the same")
    if sc[c.rank] != rc[c.rank]:
        raise para(api, f"this rank sends itself {sc[c.rank]} elements but receives {rc[c.rank]} from itself")
    not_same(api, sendBuf, recvBuf)
    check_array_buffer(api, sendBuf, extent(sc, sd), size, c.device, "sendBuf")
    check_array_buffer(api, recvBuf, extent(rc, rd), size, c.device, "recvBuf")
    if any(sc) or any(rc):
        dispatch.collective(api, comm, stream, op, (sendBuf, [x * size for x in sc], [x * size for x in sd], recvBuf,
                                                    [x * size for x in rc], [x * size for x in rd]),
                            nbytes=max(sc + rc) * size, data_type=sendType)


@c_api(ints=True)
def HcclAlltoAllV(sendBuf, sendCounts, sdispls, sendType, recvBuf, recvCounts, rdispls, recvType, comm,  # noqa: N803
                  stream):
    """``sendCounts[p]`` elements at ``sdispls[p]`` of ``sendBuf`` to rank ``p``; ``recvCounts[q]``
    elements from rank ``q`` into ``recvBuf`` at ``rdispls[q]`` (:mod:`pyhcomm.collectives.pairwise`)."""
    api = "HcclAlltoAllV"
    c, size = check_common(api, comm, 0, sendType, stream)
    check_common(api, comm, 0, recvType, stream)
    sc = counts(api, sendCounts, c.nranks, "sendCounts")
    sd = counts(api, sdispls, c.nranks, "sdispls")
    rc = counts(api, recvCounts, c.nranks, "recvCounts")
    rd = counts(api, rdispls, c.nranks, "rdispls")
    _checked_alltoallv(api, Op.HCCL_CMD_ALLTOALLV, c, comm, stream, sendBuf, sc, sd, sendType, recvBuf, rc, rd,
                       recvType, size)


@c_api(ints=True)
def HcclAlltoAllVC(sendBuf, sendCountMatrix, sendType, recvBuf, recvType, comm, stream):  # noqa: N803
    """An AlltoAllV whose counts every rank reads from one matrix: rank ``i`` sends
    ``sendCountMatrix[i][j]`` elements to rank ``j``; blocks lie back to back in rank order in
    ``sendBuf`` and ``recvBuf``."""
    api = "HcclAlltoAllVC"
    c, size = check_common(api, comm, 0, sendType, stream)
    check_common(api, comm, 0, recvType, stream)
    n, me = c.nranks, c.rank
    m = matrix(api, sendCountMatrix, n)
    sc = m[me * n:(me + 1) * n]
    rc = [m[q * n + me] for q in range(n)]
    sd = [sum(sc[:p]) for p in range(n)]
    rd = [sum(rc[:q]) for q in range(n)]
    _checked_alltoallv(api, Op.HCCL_CMD_ALLTOALLVC, c, comm, stream, sendBuf, sc, sd, sendType, recvBuf, rc, rd,
                       recvType, size)


@c_api(ints=True)
def HcclBatchSendRecv(sendRecvInfo, comm, stream):  # noqa: N803
    """Issue every send and receive of ``sendRecvInfo`` together: none of this rank's items waits
    for another (each still meets its peer's matching item, in order per peer). Not inside a group."""
    api = "HcclBatchSendRecv"
    c = check_comm(api, comm, stream)
    group.refuse_batch(api)
    if sendRecvInfo is None:
        raise ptr(api, "sendRecvInfo is NULL")
    items = []
    for i, it in enumerate(sendRecvInfo):
        if not isinstance(it, HcclSendRecvItem):
            raise TypeError(f"{api}: sendRecvInfo[{i}] must be an HcclSendRecvItem, not {type(it).__name__}")
        if it.sendRecvType not in (HcclSendRecvType.HCCL_SEND, HcclSendRecvType.HCCL_RECV):
            raise para(api, f"sendRecvInfo[{i}].sendRecvType {it.sendRecvType!r} is neither HCCL_SEND nor HCCL_RECV")
        _, size = check_common(api, comm, it.count, it.dataType, stream, count_name=f"sendRecvInfo[{i}].count")
        check_rank(api, c, it.remoteRank, f"sendRecvInfo[{i}].remoteRank", other_than_self=True)
        nbytes = it.count * size
        check_buffer(api, it.buf, nbytes, c.device, f"sendRecvInfo[{i}].buf")
        items.append((it.sendRecvType == HcclSendRecvType.HCCL_SEND, it.buf, nbytes, it.remoteRank))
    if any(nbytes for _s, _b, nbytes, _p in items):
        dispatch.batch(api, comm, stream, items)
