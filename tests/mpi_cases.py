"""Rank bodies whose results must be the same bytes in one process and over MPI (tests/test_mpi.py).

Every body returns, per call, the SHA-256 of what the rank's output buffer holds after it (so the
results cross processes cheaply); :func:`every_collective` makes every HcclXxx collective in turn on
random data, seeded by rank and call, with several data types and reduce operations.
"""
from __future__ import annotations

import hashlib

import numpy as np

import pyhcomm
from pyhcomm import acl

T = pyhcomm
SIZE = pyhcomm.enums.DATA_TYPE_SIZE
F32, I32, BF16, I8 = T.HCCL_DATA_TYPE_FP32, T.HCCL_DATA_TYPE_INT32, T.HCCL_DATA_TYPE_BFP16, T.HCCL_DATA_TYPE_INT8
SUM, MAX, PROD, MIN = T.HCCL_REDUCE_SUM, T.HCCL_REDUCE_MAX, T.HCCL_REDUCE_PROD, T.HCCL_REDUCE_MIN


def _malloc(nbytes: int) -> int:
    ptr, ret = acl.rt.malloc(max(nbytes, 1), T.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0, ret
    return ptr


def _fill(ptr: int, seed: int, nbytes: int) -> None:
    data = np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
    if data.dtype == np.uint8 and nbytes:
        # keep floats finite: clear the exponent's top bit of every 4th/2nd byte cheaply
        data[3::4] &= 0x3F
    if nbytes:
        assert acl.rt.memcpy(ptr, nbytes, acl.util.numpy_to_ptr(data), nbytes, T.ACL_MEMCPY_HOST_TO_DEVICE) == 0


def _digest(ptr: int, nbytes: int) -> str:
    out = np.zeros(max(nbytes, 1), np.uint8)
    if nbytes:
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), nbytes, ptr, nbytes, T.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return hashlib.sha256(out[:nbytes].tobytes()).hexdigest()[:16]


def digest(out) -> str | None:
    """A short SHA-256 of an example's output array (None stays None)."""
    return None if out is None else hashlib.sha256(np.asarray(out).tobytes()).hexdigest()[:16]


def every_collective(comm, count: int = 257) -> list:
    """Every collective once or more on rank ``comm.rank``; returns ``[(call, digest)]``."""
    n, r, h = comm.size, comm.rank, comm.handle
    s, ret = acl.rt.create_stream()
    assert ret == 0
    out = []
    seed = iter(range(1000 * r, 1000 * r + 1000))

    def run(name, ret, buf, nbytes):
        assert ret == 0, (name, ret, acl.get_recent_err_msg())
        assert acl.rt.synchronize_stream(s) == 0, (name, acl.get_recent_err_msg())
        out.append((name, _digest(buf, nbytes)))

    for dt, op in ((F32, SUM), (I32, MAX), (BF16, SUM), (I8, MIN)):
        nb = count * SIZE[dt]
        a, b = _malloc(nb), _malloc(nb)
        _fill(a, next(seed), nb)
        run(f"AllReduce/{dt}/{op}", T.HcclAllReduce(a, b, count, dt, op, h, s), b, nb)
        run(f"Reduce/{dt}/{op}", T.HcclReduce(a, b, count, dt, op, n - 1, h, s), b, nb if r == n - 1 else 0)
    nb = count * 4
    big, small = _malloc(n * nb), _malloc(nb)
    _fill(big, next(seed), n * nb)
    run("ReduceScatter", T.HcclReduceScatter(big, small, count, F32, SUM, h, s), small, nb)
    _fill(small, next(seed), nb)
    run("AllGather", T.HcclAllGather(small, big, count, F32, h, s), big, n * nb)
    _fill(big, next(seed), n * nb)
    run("Broadcast", T.HcclBroadcast(big, n * count, F32, 0, h, s), big, n * nb)
    _fill(big, next(seed), n * nb)
    run("Scatter", T.HcclScatter(big, small, count, F32, n // 2, h, s), small, nb)
    src, dst = _malloc(n * nb), _malloc(n * nb)
    _fill(src, next(seed), n * nb)
    run("AlltoAll", T.HcclAlltoAll(src, count, F32, dst, count, F32, h, s), dst, n * nb)
    counts = [(k + r) % 3 + 1 for k in range(n)]                 # what this rank sends to rank k
    recv_counts = [(r + k) % 3 + 1 for k in range(n)]            # what rank k sends to this one
    sd = list(np.cumsum([0] + counts[:-1]))
    rd = list(np.cumsum([0] + recv_counts[:-1]))
    _fill(src, next(seed), n * nb)
    run("AlltoAllV", T.HcclAlltoAllV(src, counts, [int(x) for x in sd], F32, dst, recv_counts,
                                     [int(x) for x in rd], F32, h, s), dst, sum(recv_counts) * 4)
    matrix = [(i + j) % 3 + 1 for i in range(n) for j in range(n)]
    _fill(src, next(seed), n * nb)
    run("AlltoAllVC", T.HcclAlltoAllVC(src, matrix, F32, dst, F32, h, s), dst, sum(matrix[j * n + r] for j in range(n)) * 4)
    vcounts = [k + 1 for k in range(n)]
    vdispls = [int(x) for x in np.cumsum([0] + vcounts[:-1])]
    _fill(small, next(seed), nb)
    run("AllGatherV", T.HcclAllGatherV(small, vcounts[r], big, vcounts, vdispls, F32, h, s), big, sum(vcounts) * 4)
    _fill(big, next(seed), n * nb)
    run("ReduceScatterV", T.HcclReduceScatterV(big, vcounts, vdispls, small, vcounts[r], F32, SUM, h, s),
        small, vcounts[r] * 4)
    # a ring of Send/Recv, then a batch exchanging with both neighbours
    _fill(src, next(seed), nb)
    nxt, prv = (r + 1) % n, (r - 1) % n
    if r % 2 == 0:
        assert T.HcclSend(src, count, F32, nxt, h, s) == 0
        run("Recv", T.HcclRecv(dst, count, F32, prv, h, s), dst, nb)
    else:
        assert T.HcclRecv(dst, count, F32, prv, h, s) == 0
        run("Send", T.HcclSend(src, count, F32, nxt, h, s), dst, nb)
    items = [T.HcclSendRecvItem(T.HCCL_SEND, src, count, F32, nxt),
             T.HcclSendRecvItem(T.HCCL_RECV, dst, count, F32, prv)]
    run("BatchSendRecv", T.HcclBatchSendRecv(items, h, s), dst, nb)
    run("Barrier", T.HcclBarrier(h, s), dst, nb)
    for p in (a, b, big, small, src, dst):
        acl.rt.free(p)
    acl.rt.destroy_stream(s)
    return out


def allreduce_mib(comm, mib: int = 1) -> list:
    """One AllReduce of ``mib`` MiB of float32 (``benchmarks/mpi.py``, the 16-process goal)."""
    count = (mib << 20) // 4
    n, r, h = comm.size, comm.rank, comm.handle
    s, ret = acl.rt.create_stream()
    assert ret == 0
    a, b = _malloc(count * 4), _malloc(count * 4)
    _fill(a, 77 + r, count * 4)
    assert T.HcclAllReduce(a, b, count, F32, SUM, h, s) == 0
    assert acl.rt.synchronize_stream(s) == 0, acl.get_recent_err_msg()
    return [("AllReduce", _digest(b, count * 4))]


def fails_on(comm, rank: int) -> str:
    """Rank ``rank`` raises; the others wait for a notify it never sends (they must fail naming it)."""
    if comm.rank == rank:
        raise RuntimeError(f"rank {rank} gives up")
    s, _ = acl.rt.create_stream()
    buf = _malloc(64)
    assert T.HcclAllReduce(buf, buf, 16, F32, SUM, comm.handle, s) == 0
    ret = acl.rt.synchronize_stream(s)
    return f"synchronize returned {ret}"


def dies_on(comm, rank: int) -> str:
    """Rank ``rank``'s process ends at once (no exception, no goodbye)."""
    import os
    if comm.rank == rank:
        os._exit(3)
    return fails_on(comm, -1)


def two_receivers(comm) -> str:
    """A hang across processes: ranks 0 and 1 both receive from each other first (a wait-for
    cycle); the other ranks have nothing to do."""
    s, _ = acl.rt.create_stream()
    buf = _malloc(64)
    if comm.rank < 2:
        assert T.HcclRecv(buf, 4, F32, 1 - comm.rank, comm.handle, s) == 0
        assert T.HcclSend(buf, 4, F32, 1 - comm.rank, comm.handle, s) == 0
    ret = acl.rt.synchronize_stream(s)
    return f"{ret}: {acl.get_recent_err_msg()}"


def custom_allgather(comm, fault=None):
    """The verifier's hand-written AllGather (tests/mutation_suite.py), with ``fault`` put in, as a
    body ``launch(..., mpi=True)`` can name."""
    import mutation_suite
    return mutation_suite.custom_allgather(fault)(comm)
