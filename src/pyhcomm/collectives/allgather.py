"""AllGather: every rank's ``count`` elements end up, in rank order, in every rank's output.

``allgather_mesh`` is scenario S3 of hcomm-api §8 (the hccl custom-operator example): one thread
and one channel per peer, one-sided writes into the peers' HCCL buffers, ACK/DATA handshakes.
Per loop, ``S`` bytes (the HCCL buffer cut into ``nranks`` slots)::

    T0        : copy in ------> release T1..    [write to peer 0] ... wait T1.. -> copy out all slots
    Ti (i>=1) :                 wait T0 ------> [write to peer i] ------> record T0
    [write to peer p] on Ti/Ci: record p.ACK, wait own ACK, Write(p.ccl[S*me] <- ccl[S*me]),
                                record p.DATA, wait own DATA

The ACK handshake guarantees the peer copied the previous loop out of its buffer before it is
overwritten; DATA guarantees the write landed before the copy-out.
"""
from __future__ import annotations

from ..capi.hcomm_primitives import (HcommChannelNotifyRecordOnThread, HcommChannelNotifyWaitOnThread, HcommLocalCopyOnThread,
                    HcommWriteOnThread)
from .context import ACK, DATA, WAIT_TIMEOUT, chunk_bytes, fan_in, fan_out, ok


def allgather_mesh(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the mesh AllGather of ``nbytes`` per rank (``recv`` holds ``nranks * nbytes``)."""
    n, me = ctx.nranks, ctx.rank
    if n == 1:
        ok(HcommLocalCopyOnThread(ctx.main, recv, send, nbytes), "HcommLocalCopyOnThread")
        return
    peers = [p for p in range(n) if p != me]
    threads = [ctx.main] + ctx.slaves
    slot = chunk_bytes(ctx, n)
    done = 0
    while done < nbytes:
        cur = min(slot, nbytes - done)
        mine = ctx.ccl + slot * me
        ok(HcommLocalCopyOnThread(ctx.main, mine, send + done, cur), "HcommLocalCopyOnThread")
        fan_out(ctx)
        for t, p in zip(threads, peers):
            ch = ctx.channel(p)
            ok(HcommChannelNotifyRecordOnThread(t, ch, ACK), "HcommChannelNotifyRecordOnThread")
            ok(HcommChannelNotifyWaitOnThread(t, ch, ACK, WAIT_TIMEOUT), "HcommChannelNotifyWaitOnThread")
            ok(HcommWriteOnThread(t, ch, ctx.peer_ccl(p) + slot * me, mine, cur), "HcommWriteOnThread")
            ok(HcommChannelNotifyRecordOnThread(t, ch, DATA), "HcommChannelNotifyRecordOnThread")
            ok(HcommChannelNotifyWaitOnThread(t, ch, DATA, WAIT_TIMEOUT), "HcommChannelNotifyWaitOnThread")
        fan_in(ctx)
        for r in range(n):
            ok(HcommLocalCopyOnThread(ctx.main, recv + r * nbytes + done, ctx.ccl + slot * r, cur),
               "HcommLocalCopyOnThread")
        done += cur
