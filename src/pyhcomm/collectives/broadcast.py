"""Broadcast: the root's ``nbytes`` end up in every rank's buffer.

``broadcast`` stages the root's data in its HCCL buffer and lets every other rank pull it with a
one-sided read (scenario S2 of hcomm-api §8, fanned out from the root). One thread per rank (the
main thread), one channel between the root and each peer; each peer reads on its own stream, so
the reads run in parallel. Per loop, ``S`` bytes (the whole HCCL buffer)::

    root   : copy buf[k] -> ccl | record p1.ACK, p2.ACK, ... | wait DATA from p1, p2, ...  | loop k+1
    rank p :                      wait ACK --> Read(buf[k] <- root.ccl) --> record root.DATA | loop k+1

ACK says "chunk k is staged"; DATA says "I have read it": the root does not overwrite its HCCL
buffer with chunk k+1 (nor let its stream complete) before every peer has read chunk k. As in S2,
a peer reads straight into its user buffer.
"""
from __future__ import annotations

from .context import buffer_parts, chunk_bytes
from .patterns import ACK, DATA, copy_task, pull, record, wait


@buffer_parts(lambda n: 1)
def broadcast(ctx, buf: int, nbytes: int, root: int) -> None:
    """Issue the Broadcast of ``nbytes`` at ``buf`` from ``root`` (run with ``peers``: the root
    connects to every rank, the others to the root only)."""
    n, me = ctx.nranks, ctx.rank
    if n == 1:
        return
    t = ctx.main
    chunk = chunk_bytes(ctx, 1)
    peers = [p for p in range(n) if p != root]
    for done in range(0, nbytes, chunk):
        cur = min(chunk, nbytes - done)
        if me == root:
            copy_task(t, ctx.ccl, buf + done, cur)
            for p in peers:
                record(t, ctx.channel(p), ACK)
            for p in peers:
                wait(t, ctx.channel(p), DATA)
        else:
            pull(t, ctx.channel(root), buf + done, ctx.peer_ccl(root), cur)

