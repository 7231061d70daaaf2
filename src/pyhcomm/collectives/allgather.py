"""AllGather: every rank's ``count`` elements end up, in rank order, in every rank's output.

``allgather_mesh`` is scenario S3 of hcomm-api §8 (the hccl custom-operator example): one thread
and one channel per peer, one-sided writes into the peers' HCCL buffers, ACK/DATA handshakes.
Per loop, ``S`` bytes (the HCCL buffer cut into ``nranks`` slots)::

    T0        : copy in ------> release T1..    [write to peer 0] ... wait T1.. -> copy out all slots
    Ti (i>=1) :                 wait T0 ------> [write to peer i] ------> record T0
    [write to peer p] on Ti/Ci: record p.ACK, wait own ACK, Write(p.ccl[S*me] <- ccl[S*me]),
                                record p.DATA, wait own DATA

The ACK handshake guarantees the peer copied the previous loop out of its buffer before it is
overwritten; DATA guarantees the write landed before the copy-out. Past 65 ranks (more peers than
the main thread and its at most 63 slaves) the peers go in groups of at most 64, the rounds of a
round-robin schedule (a pair meets in the same group on both sides), each group between its own
release and wait (:func:`.patterns.mesh`); the slots and the result are the same.

``allgather_ring`` (and ``allgatherv_ring``, segments of any size) needs one thread and the
channels to the two neighbours only: every slice travels round the ring in ``N - 1`` steps (see
its docstring). Which one runs ``HcclAllGather`` is the selector's (:mod:`.selector`: the mesh
today); the ring serves the ring AllReduce and AllGatherV.
"""
from __future__ import annotations

from .context import buffer_parts, chunk_bytes
from .patterns import copy_task, mesh, mesh_exchange, ring_peers, ring_step  # noqa: F401  (ring_peers re-exported)


@buffer_parts(lambda n: n)
def allgather_mesh(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the mesh AllGather of ``nbytes`` per rank (``recv`` holds ``nranks * nbytes``).

    With more peers than threads (over 64 ranks) the exchanges go in groups (:func:`.patterns.mesh`).
    """
    n, me = ctx.nranks, ctx.rank
    if n == 1:
        copy_task(ctx.main, recv, send, nbytes)
        return
    slot = chunk_bytes(ctx, n)
    mine = ctx.ccl + slot * me
    for done in range(0, nbytes, slot):
        cur = min(slot, nbytes - done)
        copy_task(ctx.main, mine, send + done, cur)
        mesh(ctx, lambda t, p: mesh_exchange(t, ctx.channel(p), ctx.peer_ccl(p) + slot * me, mine, cur))
        for r in range(n):
            copy_task(ctx.main, recv + r * nbytes + done, ctx.ccl + slot * r, cur)


# -- ring -------------------------------------------------------------------------------------------
@buffer_parts(lambda n: n)
def allgather_ring(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the ring AllGather of ``nbytes`` per rank (``recv`` holds ``nranks * nbytes``).

    Equal segments of :func:`allgatherv_ring`: rank ``r``'s bytes land at ``recv + r * nbytes``.
    """
    n = ctx.nranks
    allgatherv_ring(ctx, send, recv, [nbytes] * n, [r * nbytes for r in range(n)])


@buffer_parts(lambda n: n)
def allgatherv_ring(ctx, send: int, recv: int, sizes, displs) -> None:
    """Issue a ring AllGather of ``sizes[r]`` bytes from every rank ``r`` into ``recv + displs[r]``.

    One thread (``ctx.main``) and the channels to the left and right neighbours. Per loop the
    HCCL buffer is cut into ``nranks`` slots of ``S`` bytes; slot ``k`` carries the next ``S``
    bytes of rank ``k``'s segment (segments may differ in size: a rank with nothing left in this
    loop sends nothing but keeps the handshakes). In step ``s`` (``0 .. N-2``) rank ``r`` forwards
    slot ``(r - s) % N`` to its right neighbour and receives slot ``(r - s - 1) % N`` from its left
    one, so after ``N - 1`` steps every slot has gone round the ring. ``send`` may be
    ``recv + displs[rank]`` (in place): this rank's own segment is then not copied out.

    Timeline, N = 4, one loop (``k>`` = write slot k to the right neighbour, ``<k`` = slot k
    landed from the left one and is copied out)::

                 stage        step 0         step 1         step 2
        rank 0 : send->[0]    0>  <3         3>  <2         2>  <1
        rank 1 : send->[1]    1>  <0         0>  <3         3>  <2
        rank 2 : send->[2]    2>  <1         1>  <0         0>  <3
        rank 3 : send->[3]    3>  <2         2>  <1         1>  <0

    One step on rank r::

        record left.ACK            my slot (r-s-1) is free: you may write it
        wait   own ACK (right)     right's slot (r-s) is free
        Write(right.ccl[slot r-s] <- ccl[slot r-s])
        record right.DATA          it landed
        wait   own DATA (left)     left's write into my slot (r-s-1) landed
        LocalCopy(recv[r-s-1] <- ccl[slot r-s-1])

    Each rank records its left neighbour's ACK only after everything it did before on its one
    thread (the previous loop's copy-out included), so a slot is never overwritten while it is
    still needed; DATA orders the copy-out (and the next step's forward) after the write.
    """
    n, me = ctx.nranks, ctx.rank
    mine = recv + displs[me]
    if n == 1:
        if sizes[0] and mine != send:
            copy_task(ctx.main, mine, send, sizes[0])
        return
    t = ctx.main
    left, right = ctx.channel((me - 1) % n), ctx.channel((me + 1) % n)
    right_ccl = ctx.peer_ccl((me + 1) % n)
    slot = chunk_bytes(ctx, n)
    for done in range(0, max(sizes), slot):
        def piece(k):
            return max(0, min(slot, sizes[k] - done))

        if piece(me):
            copy_task(t, ctx.ccl + slot * me, send + done, piece(me))
        for s in range(n - 1):
            fwd, got = (me - s) % n, (me - s - 1) % n
            ring_step(t, left, right, (right_ccl + slot * fwd, ctx.ccl + slot * fwd, piece(fwd)))
            if piece(got):
                copy_task(t, recv + displs[got] + done, ctx.ccl + slot * got, piece(got))
        if piece(me) and mine != send:
            copy_task(t, mine + done, send + done, piece(me))
