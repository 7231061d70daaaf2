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
into your slot landed", so after the fan-in every recv slot of this loop is full. Past 65 ranks
the peers go in groups of 64 (the main thread and at most 63 slaves), ascending, each group between
its own release and wait (:func:`.patterns.mesh`).

Slots: ``S = HCCL buffer / (2 * nranks)``, rounded down to 128 bytes (at most 256 MB). With the
default buffer (2 x HCCL_BUFFSIZE = 400 MB) 1024 ranks get 200 KiB slots; the smallest buffer
(HCCL_BUFFSIZE=1, 2 MB) still gives 1 KiB. A buffer too small for ``2 * nranks`` slots of 128
bytes is refused with ``HCCL_E_MEMORY`` before anything is enqueued.
"""
from __future__ import annotations

from ..hcomm.local import local_copy
from .context import buffer_parts, chunk_bytes
from .patterns import mesh, mesh_exchange


@buffer_parts(lambda n: 2 * n)
def alltoall(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the mesh AlltoAll of ``nbytes`` per rank pair (``send`` and ``recv`` hold
    ``nranks * nbytes``)."""
    n, me = ctx.nranks, ctx.rank
    main = ctx.main
    local_copy(main, recv + me * nbytes, send + me * nbytes, nbytes)
    if n == 1:
        return
    peers = [p for p in range(n) if p != me]
    slot = chunk_bytes(ctx, 2 * n)
    send_slot = lambda p: ctx.ccl + slot * p  # noqa: E731
    recv_slot = lambda base, q: base + slot * (n + q)  # noqa: E731
    for done in range(0, nbytes, slot):
        cur = min(slot, nbytes - done)
        for p in peers:
            local_copy(main, send_slot(p), send + p * nbytes + done, cur)
        mesh(ctx, lambda t, p: mesh_exchange(t, ctx.channel(p), recv_slot(ctx.peer_ccl(p), me), send_slot(p), cur))
        for q in peers:
            local_copy(main, recv + q * nbytes + done, recv_slot(ctx.ccl, q), cur)
