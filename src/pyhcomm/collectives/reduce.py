"""Reduce: ``op`` over every rank's ``count`` elements, into the root's output only.

``reduce_to_root`` is the gathering half of the mesh (the S3/S5 handshakes towards one rank):
the root and each other rank share one channel; every other rank writes its input into its own
slot of the root's HCCL buffer, the root reduces the slots into its output. The HCCL buffer is
cut into ``nranks`` slots of ``S`` bytes (slot ``p`` receives rank ``p``). Per loop::

    root   : copy out <- in | record p.ACK, every p | wait own DATA, every p | reduce slot p, p ascending
    rank p :                  wait own ACK --> Write(root.ccl[slot p] <- in) --> record root.DATA

ACK says "my slot for you is free" (the previous loop was reduced); DATA says "it landed". One
thread per rank: the root's waits are independent, so its queue never blocks a peer.

Reduction order (floats): ``out = x[root]``, then ``out = op(out, x[p])`` for ``p = 0, 1, ...``
skipping the root, each step one backend reduce. ``send == recv`` on the root runs in place; the
other ranks' ``recv`` is not touched (it may be NULL).
"""
from __future__ import annotations

from ..enums import DATA_TYPE_SIZE
from .context import buffer_parts, chunk_bytes
from .patterns import copy_task, grant, land, push, mesh, reduce_task, ring_step


@buffer_parts(lambda n: n)
def reduce_to_root(ctx, send: int, recv: int, count: int, data_type: int, op: int, root: int) -> None:
    """Issue the Reduce of ``count`` elements to ``root`` (run with ``peers``: the root connects
    to every rank, the others to the root only)."""
    n, me = ctx.nranks, ctx.rank
    size = DATA_TYPE_SIZE[data_type]
    nbytes = count * size
    t = ctx.main
    if n == 1:
        if nbytes and recv != send:
            copy_task(t, recv, send, nbytes)
        return
    slot = chunk_bytes(ctx, n) // size * size
    peers = [p for p in range(n) if p != root]
    for done in range(0, nbytes, slot):
        cur = min(slot, nbytes - done)
        if me != root:
            push(t, ctx.channel(root), (ctx.peer_ccl(root) + slot * me, send + done, cur))
            continue
        if recv != send:
            copy_task(t, recv + done, send + done, cur)
        for p in peers:
            grant(t, ctx.channel(p))
        for p in peers:
            land(t, ctx.channel(p))
        for p in peers:
            reduce_task(t, recv + done, ctx.ccl + slot * p, cur // size, data_type, op)


def barrier(ctx) -> None:
    """Issue a barrier: with every peer, record its ACK, wait for own ACK, record its DATA, wait
    for own DATA (no data moves). The stream passes once every rank has reached the barrier on its
    stream (HCCL's barrier is the same notify-only mesh)."""
    if ctx.nranks > 1:
        mesh(ctx, lambda t, p: ring_step(t, ctx.channel(p), ctx.channel(p)))
