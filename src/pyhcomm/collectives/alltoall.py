"""AlltoAll: slice ``j`` of rank ``i``'s input ends up as slice ``i`` of rank ``j``'s output.

``alltoall`` follows the AllGather mesh (scenario S3 of hcomm-api §8): one thread and one channel
per peer, one-sided writes into the peers' HCCL buffers, ACK/DATA handshakes. The HCCL buffer is
cut into ``2 * nranks`` slots of ``S`` bytes: ``send[p]`` stages what goes to peer ``p``,
``recv[q]`` receives what peer ``q`` sends. The own slice is one local copy, input to output.
Per loop (before the first, T0 copies the own slice)::

    T0        : stage send[*] -> release T1.. -> [to peer 0] ...... wait T1.. -> copy out recv[*]
    Ti (i>=1) :                  wait T0 -----> [to peer i] -> record T0
    [to peer p] on Ti/Ci: record p.ACK, wait own ACK, Write(p.recv[me] <- send[p]),
                          record p.DATA, wait own DATA

ACK says "my recv slot for you is free" (the previous loop was copied out); DATA says "my write
into your slot landed", so after the fan-in every recv slot of this loop is full.
"""
from __future__ import annotations

from ..capi.hcomm_primitives import (HcommChannelNotifyRecordOnThread, HcommChannelNotifyWaitOnThread,
                                     HcommLocalCopyOnThread, HcommWriteOnThread)
from .context import ACK, DATA, WAIT_TIMEOUT, chunk_bytes, fan_in, fan_out, ok


def alltoall(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the mesh AlltoAll of ``nbytes`` per rank pair (``send`` and ``recv`` hold
    ``nranks * nbytes``)."""
    n, me = ctx.nranks, ctx.rank
    main = ctx.main
    ok(HcommLocalCopyOnThread(main, recv + me * nbytes, send + me * nbytes, nbytes), "HcommLocalCopyOnThread")
    if n == 1:
        return
    peers = [p for p in range(n) if p != me]
    threads = [main] + ctx.slaves
    slot = chunk_bytes(ctx, 2 * n)
    send_slot = lambda p: ctx.ccl + slot * p  # noqa: E731
    recv_slot = lambda base, q: base + slot * (n + q)  # noqa: E731
    done = 0
    while done < nbytes:
        cur = min(slot, nbytes - done)
        for p in peers:
            ok(HcommLocalCopyOnThread(main, send_slot(p), send + p * nbytes + done, cur), "HcommLocalCopyOnThread")
        fan_out(ctx)
        for t, p in zip(threads, peers):
            ch = ctx.channel(p)
            ok(HcommChannelNotifyRecordOnThread(t, ch, ACK), "HcommChannelNotifyRecordOnThread")
            ok(HcommChannelNotifyWaitOnThread(t, ch, ACK, WAIT_TIMEOUT), "HcommChannelNotifyWaitOnThread")
            ok(HcommWriteOnThread(t, ch, recv_slot(ctx.peer_ccl(p), me), send_slot(p), cur), "HcommWriteOnThread")
            ok(HcommChannelNotifyRecordOnThread(t, ch, DATA), "HcommChannelNotifyRecordOnThread")
            ok(HcommChannelNotifyWaitOnThread(t, ch, DATA, WAIT_TIMEOUT), "HcommChannelNotifyWaitOnThread")
        fan_in(ctx)
        for q in peers:
            ok(HcommLocalCopyOnThread(main, recv + q * nbytes + done, recv_slot(ctx.ccl, q), cur),
               "HcommLocalCopyOnThread")
        done += cur
