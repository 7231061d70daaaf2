"""Programs the verifier tests run: every collective of the library, correct (zero findings
expected), as ``pyhcomm.launch`` rank bodies.

``collective(op, count)`` is a rank body that stages ``count`` floats per rank with
``aclrtMemcpy``, calls the collective ``op`` on a stream of its own, synchronizes the stream and
reads the result back with ``aclrtMemcpy`` (so that the host's accesses are in the record too).
"""
from __future__ import annotations

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.collectives import allgather_ring, ring_peers, run

F32 = pyhcomm.HcclDataType.HCCL_DATA_TYPE_FP32
SUM = pyhcomm.HcclReduceOp.HCCL_REDUCE_SUM
H2D, D2H = pyhcomm.ACL_MEMCPY_HOST_TO_DEVICE, pyhcomm.ACL_MEMCPY_DEVICE_TO_HOST
SUCCESS, NOT_SUPPORT = pyhcomm.HcclResult.HCCL_SUCCESS, pyhcomm.HcclResult.HCCL_E_NOT_SUPPORT
NOT_FOUND = pyhcomm.HcclResult.HCCL_E_NOT_FOUND
#: Products whose collectives run (every product of the catalogue has them, at least host-side).
PRODUCTS = [p.name for p in pyhcomm.PRODUCTS]


def _v_counts(n: int, count: int) -> list:
    return [count + (r % 3) for r in range(n)]


def _call(op, comm, stream, send, recv, count):
    """Issue collective ``op``; returns its code."""
    n, me, h = comm.size, comm.rank, comm.handle
    if op == "allgather":
        return pyhcomm.HcclAllGather(send, recv, count, F32, h, stream)
    if op == "allreduce":
        return pyhcomm.HcclAllReduce(send, recv, count, F32, SUM, h, stream)
    if op == "reduce_scatter":
        return pyhcomm.HcclReduceScatter(send, recv, count, F32, SUM, h, stream)
    if op == "broadcast":
        return pyhcomm.HcclBroadcast(send, count, F32, 0, h, stream)
    if op == "reduce":
        return pyhcomm.HcclReduce(send, recv, count, F32, SUM, 0, h, stream)
    if op == "scatter":
        return pyhcomm.HcclScatter(send, recv, count, F32, 0, h, stream)
    if op == "alltoall":
        return pyhcomm.HcclAlltoAll(send, count, F32, recv, count, F32, h, stream)
    if op == "barrier":
        return pyhcomm.HcclBarrier(h, stream)
    if op == "allgatherv":
        counts = _v_counts(n, count)
        return pyhcomm.HcclAllGatherV(send, counts[me], recv, counts, [sum(counts[:r]) for r in range(n)], F32, h,
                                      stream)
    if op == "reduce_scatterv":
        counts = _v_counts(n, count)
        return pyhcomm.HcclReduceScatterV(send, counts, [sum(counts[:r]) for r in range(n)], recv, counts[me], F32,
                                          SUM, h, stream)
    if op == "alltoallv":
        counts = [count] * n
        displs = [r * count for r in range(n)]
        return pyhcomm.HcclAlltoAllV(send, counts, displs, F32, recv, counts, displs, F32, h, stream)
    if op == "sendrecv":        # a chain: 0 -> 1 -> ... -> n-1 (each receives before it sends on)
        if n == 1:
            return 0
        if me > 0:
            ret = pyhcomm.HcclRecv(recv, count, F32, me - 1, h, stream)
            if ret:
                return ret
        return pyhcomm.HcclSend(send, count, F32, me + 1, h, stream) if me < n - 1 else 0
    if op == "alltoallvc":          # rank i sends count - (i + j) % 3 elements to rank j
        matrix = [count - (i + j) % 3 for i in range(n) for j in range(n)]
        return pyhcomm.HcclAlltoAllVC(send, matrix, F32, recv, F32, h, stream)
    if op == "batch_sendrecv":      # both neighbours at once: send to the next, receive from the previous
        if n == 1:
            return 0
        items = [pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_SEND, send, count, F32, (me + 1) % n),
                 pyhcomm.HcclSendRecvItem(pyhcomm.HCCL_RECV, recv, count, F32, (me - 1) % n)]
        return pyhcomm.HcclBatchSendRecv(items, h, stream)
    if op == "group":               # a group of sends to and receives from every peer
        ret = pyhcomm.HcclGroupStart()
        if ret:
            return ret
        for p in range(n):
            if p != me:
                ret = ret or pyhcomm.HcclSend(send, count, F32, p, h, stream)
                ret = ret or pyhcomm.HcclRecv(recv + 4 * count * p, count, F32, p, h, stream)
        end = pyhcomm.HcclGroupEnd()
        return ret or end
    if op == "ring_allgather":     # the library's algorithm through collectives.run (raises)
        try:
            run(h, stream, 0, allgather_ring, send, recv, count * 4, peers=ring_peers(me, n))
        except pyhcomm.HcclError as exc:    # a product without links between its devices
            return int(exc.code)
        return 0
    raise ValueError(op)


#: Every collective :func:`collective` knows.
OPS = ("allgather", "allreduce", "reduce_scatter", "broadcast", "reduce", "scatter", "alltoall", "barrier",
       "allgatherv", "reduce_scatterv", "alltoallv", "alltoallvc", "sendrecv", "batch_sendrecv", "group",
       "ring_allgather")


#: The HCCL calls each collective of :func:`collective` makes (on two ranks and more): what the support
#: tables (:mod:`pyhcomm.collectives.support`) decide. ``ring_allgather`` calls none: it is the library's
#: algorithm, over the channels HCCL's collectives use.
CALLS = {"allgather": ("HcclAllGather",), "allreduce": ("HcclAllReduce",), "reduce_scatter": ("HcclReduceScatter",),
         "broadcast": ("HcclBroadcast",), "reduce": ("HcclReduce",), "scatter": ("HcclScatter",),
         "alltoall": ("HcclAlltoAll",), "barrier": ("HcclBarrier",), "allgatherv": ("HcclAllGatherV",),
         "reduce_scatterv": ("HcclReduceScatterV",), "alltoallv": ("HcclAlltoAllV",),
         "alltoallvc": ("HcclAlltoAllVC",), "sendrecv": ("HcclSend", "HcclRecv"),
         "batch_sendrecv": ("HcclBatchSendRecv",), "group": ("HcclGroupStart", "HcclSend", "HcclRecv"),
         "ring_allgather": ()}


def expected_code(op: str, product: str):
    """What :func:`collective` ``(op)`` returns on two ranks and more of ``product``, read from the
    support tables: ``HCCL_E_NOT_SUPPORT`` when HCCL does not run one of its calls there (none at all
    on a product outside every table: its engines have no collective link, so the library's own ring
    finds none, ``HCCL_E_NOT_FOUND``), else ``HCCL_SUCCESS``."""
    from pyhcomm.collectives import support
    family = pyhcomm.find_product(product).family
    if family not in support.ALL:
        return NOT_FOUND if op == "ring_allgather" else NOT_SUPPORT
    for api in CALLS[op]:
        if family not in support.PRODUCTS.get(api, support.ALL) or (product == "Atlas 800I A2"
                                                                     and api in support.NOT_ON_800I_A2):
            return NOT_SUPPORT
    return SUCCESS


def _named(algorithm: str, op: str, comm, stream, send, recv, count):
    """Collective ``op`` on the catalogue's ``algorithm`` by name (AllReduce and Broadcast)."""
    from pyhcomm.collectives import dispatch
    h = comm.handle
    if op == "allreduce":
        what, args = pyhcomm.HCCL_CMD_ALLREDUCE, (send, recv, count, F32, SUM)
    elif op == "broadcast":
        what, args = pyhcomm.HCCL_CMD_BROADCAST, (send, count * 4, 0)
    else:
        raise ValueError(op)
    dispatch.run_algorithm(f"{algorithm}_{op}", h, stream, algorithm, dispatch.describe(h, what, count * 4, root=0),
                           args)
    return 0


def collective(op: str, count: int = 64, calls: int = 1, algorithm: str = ""):
    """A rank body running collective ``op`` ``calls`` times (see the module docstring), on the
    algorithm HCCL's selection chooses or, given ``algorithm``, on that one of the catalogue;
    returns the code of the first call that failed (0 when all succeeded)."""
    def body(comm):
        n, me = comm.size, comm.rank
        total = 4 * count * n + 64
        send, _ = acl.rt.malloc(total, 0)
        recv, _ = acl.rt.malloc(total, 0)
        x = np.full(total // 4, me + 1, np.float32)
        assert acl.rt.memcpy(send, total, acl.util.numpy_to_ptr(x), x.nbytes, H2D) == 0
        stream, _ = acl.rt.create_stream()
        for _ in range(calls):
            ret = (_named(algorithm, op, comm, stream, send, recv, count) if algorithm
                   else _call(op, comm, stream, send, recv, count))
            if ret:
                acl.rt.destroy_stream(stream)
                return int(ret)
        assert acl.rt.synchronize_stream(stream) == 0
        out = np.zeros(total // 4, np.float32)
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), total, recv, total, D2H) == 0
        assert acl.rt.destroy_stream(stream) == 0
        return 0
    body.__qualname__ = f"collective_{op}" + (f"_{algorithm}" if algorithm else "")
    return body
