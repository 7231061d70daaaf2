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
    r, h = comm.rank, comm.handle
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


def custom_allgather(comm, fault=None, loops: int = 2):
    """The verifier's hand-written AllGather (tests/mutation_suite.py), with ``fault`` put in, as a
    body ``launch(..., mpi=True)`` can name."""
    import mutation_suite
    return mutation_suite.custom_allgather(fault, loops=loops)(comm)


def _channel(comm, engine, protocol, notifies, mems=()):
    d = T.HcclChannelDesc()
    T.HcclChannelDescInit(d)
    d.remoteRank, d.channelProtocol, d.notifyNum = 1 - comm.rank, protocol, notifies
    d.memHandles, d.memHandleNum = list(mems), len(mems)
    ret, (ch,) = T.HcclChannelAcquire(comm.handle, engine, [d])
    assert ret == 0, acl.get_recent_err_msg()
    return ch


def one_sided(comm, n: int = 256) -> list:
    """Two ranks, Atlas 800T A2, host CPU_TS threads: rank 1 registers memory (``HcclCommMemReg``,
    exposed in its channel description); rank 0 writes into rank 1's HCCL buffer, reads its
    registered memory, reduces into it (sum) and out of its HCCL buffer, then records notify 1
    twice before a notify 0: rank 1's single wait on notify 1 consumes both (a 1-bit register).
    Returns the digests of every buffer each rank holds at the end."""
    F, S = T.HCOMM_DATA_TYPE_FP32, T.HCOMM_REDUCE_SUM
    me = comm.rank
    stream, _ = acl.rt.create_stream()
    _, t = T.HcclThreadAcquireWithStream(comm.handle, T.COMM_ENGINE_CPU_TS, stream, 1)
    local, mine = _malloc(n), _malloc(n)
    _fill(local, 10 + me, n)
    _fill(mine, 20 + me, n)
    mems = ()
    if me == 1:
        ret, h = T.HcclCommMemReg(comm.handle, "user", T.CommMem(T.COMM_MEM_TYPE_DEVICE, mine, n))
        assert ret == 0
        mems = (h,)
    ch = _channel(comm, T.COMM_ENGINE_CPU_TS, T.COMM_PROTOCOL_HCCS, 2, mems)
    _, ccl, _size = T.HcclGetHcclBuffer(comm.handle)
    _fill(ccl, 30 + me, n)
    rec, wait = T.HcommChannelNotifyRecordOnThread, T.HcommChannelNotifyWaitOnThread
    if me == 0:
        _, remote_ccl, _ = T.HcclChannelGetHcclBuffer(comm.handle, ch)
        ret, num, remote_mems, tags = T.HcclChannelGetRemoteMems(comm.handle, ch)
        assert ret == 0 and num == 1 and tags == ["user"], (ret, num, tags)
        user = remote_mems[0].addr
        assert wait(t, ch, 0, 0) == 0                                     # rank 1 filled its memory
        assert T.HcommWriteOnThread(t, ch, remote_ccl, local, n // 2) == 0
        assert T.HcommReadOnThread(t, ch, mine, user, n // 2) == 0
        assert T.HcommWriteReduceOnThread(t, ch, user + n // 2, local + n // 2, n // 8, F, S) == 0
        assert T.HcommReadReduceOnThread(t, ch, local + n // 2, remote_ccl + n // 2, n // 8, F, S) == 0
        assert rec(t, ch, 1) == 0 and rec(t, ch, 1) == 0                  # two records of notify 1 ...
        assert rec(t, ch, 0) == 0                                         # ... then notify 0
    else:
        assert rec(t, ch, 0) == 0
        assert wait(t, ch, 0, 0) == 0                                     # after both records of 1
        assert wait(t, ch, 1, 0) == 0                                     # one wait takes both
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    out = [_digest(p, n) for p in (local, mine, ccl)]
    comm.barrier()          # rank 1's memory stays until rank 0 is done with it
    return out


def nbi_fence(comm, n: int = 256) -> list:
    """Two ranks, Atlas 350, host CPU RoCE channels: rank 0 writes (``HcommWriteNbi``) into rank
    1's HCCL buffer and reads (``HcommReadNbi``) back from it, fences, and tells rank 1 with a
    thread-less channel notify; rank 1 waits. Returns the digests of both buffers of each rank."""
    me = comm.rank
    ch = _channel(comm, T.COMM_ENGINE_CPU, T.COMM_PROTOCOL_ROCE, 1)
    local = _malloc(n)
    _fill(local, 40 + me, n)
    ccl = comm.hccl_buffer().addr
    _fill(ccl, 50 + me, n)
    comm.barrier()
    if me == 0:
        _, remote, _ = T.HcclChannelGetHcclBuffer(comm.handle, ch)
        assert T.HcommWriteNbi(ch, remote, local, n // 2) == 0
        assert T.HcommReadNbi(ch, local + n // 2, remote + n // 2, n // 2) == 0
        assert T.HcommChannelFence(ch) == 0
        assert T.HcommChannelNotifyRecord(ch, 0) == 0
    else:
        assert T.HcommChannelNotifyWait(ch, 0, 60) == 0
    out = [_digest(p, n) for p in (local, ccl)]
    comm.barrier()
    return out


def ring_overflow(comm, extra: int = 300) -> list:
    """Over MPI only, two ranks: rank 0 records notify 0 of rank 1 ``RING + extra`` times, then
    notify 1, while rank 1 is held in a barrier of mpi4py's (it handles nothing): the doorbell
    fills, the records after it go as messages (none waits for room), then rank 1 waits for
    notify 1 and notify 0. Returns, per rank, ``[rings it wrote, arrivals of notify 0, the
    generations the arrivals of notify 1 set]``."""
    from mpi4py import MPI
    from pyhcomm.transport.mpi_shm import RING
    stream, _ = acl.rt.create_stream()
    _, t = T.HcclThreadAcquireWithStream(comm.handle, T.COMM_ENGINE_CPU_TS, stream, 1)
    ch = _channel(comm, T.COMM_ENGINE_CPU_TS, T.COMM_PROTOCOL_HCCS, 2)
    sim = pyhcomm.current_sim()
    rung = sim.transport.link.near.rung
    if comm.rank == 0:
        for _ in range(RING + extra):
            assert T.HcommChannelNotifyRecordOnThread(t, ch, 0) == 0
        assert T.HcommChannelNotifyRecordOnThread(t, ch, 1) == 0
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
        MPI.COMM_WORLD.Barrier()
    else:
        MPI.COMM_WORLD.Barrier()
        assert T.HcommChannelNotifyWaitOnThread(t, ch, 1, 0) == 0
        assert T.HcommChannelNotifyWaitOnThread(t, ch, 0, 0) == 0
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    gens = [[g for (_src, _tid, i), gs in sim.transport.arrivals.items() if i == k for g in gs] for k in (0, 1)]
    comm.barrier()
    return [sim.transport.link.near.rung - rung, len(gens[0]), gens[1]]
