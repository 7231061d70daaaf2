"""ReduceScatter: rank ``r`` receives ``op`` over all ranks of their ``r``-th slice of the input.

``reduce_scatter_mesh`` is scenario S5 of hcomm-api §8 (HCCL's ``ins_temp_reduce_scatter_mesh_1D``):
a main thread and one slave thread per peer, one-sided writes into the peers' HCCL buffers,
local reduces on the main thread. ``reduce_scatterv_ring`` is the ring the ring AllReduce
(:mod:`.all_reduce`) starts with: one thread, the two neighbours, slices of any size.

Reduction order (which matters for floats, not for integers, MAX or MIN):

* mesh: ``out = x[me]``, then ``out = op(out, x[t])`` for ``t = 0, 1, ... N-1`` skipping ``me``;
* ring: slice ``c`` starts on rank ``c+1`` and picks up one rank per step:
  ``((x[c+1] op x[c+2]) op ...) op x[c]`` (ranks mod N).

Each ``op`` is one backend reduce (16-bit floats: computed in FP32, rounded once per step).
Both algorithms use only Write, LocalCopy, LocalReduce and notifies (no WriteReduce).
"""
from __future__ import annotations

from ..enums import DATA_TYPE_SIZE
from .context import buffer_parts, chunk_bytes
from .patterns import copy_task, mesh, mesh_exchange, reduce_task, ring_step


@buffer_parts(lambda n: 2 * n)
def reduce_scatter_mesh(ctx, send: int, recv: int, count: int, data_type: int, op: int) -> None:
    """Issue the mesh ReduceScatter: ``recv = op over ranks of their send[rank*count : (rank+1)*count]``.

    Asks for ``nranks - 1`` slaves (``ctx.slaves[k-1]`` serves peer ``(rank + k) % N``); past 64
    ranks it gets 63 and serves the peers in groups of at most 63 (the rounds of a round-robin
    schedule, :func:`.patterns.mesh_groups`), each group in that rotated order (cutting the
    rotated order itself could deadlock). Per loop the
    HCCL buffer is cut into ``2N`` slots of ``S`` bytes: the first ``N`` (``in[p]``) stage what
    this rank sends to peer ``p``, the last ``N`` (``out[t]``) receive what rank ``t`` sends here::

        main      : copy out <- input[me] -> release slaves ......... wait slaves -> reduce out[t], t != me
        slave k   :                          wait main -> [send to p = me+k] -> record main
        [send to p] on slave k, channel to p:
                    LocalCopy(in[p] <- input[p]); record p.ACK; wait own ACK;
                    Write(p.ccl out[me] <- in[p]); record p.DATA; wait own DATA

    ACK: peer ``p`` finished reducing the previous loop out of ``out[me]`` before it is
    overwritten (its slave records ACK only after its main released it). DATA: every write into
    this rank's ``out`` slots landed before the main thread reduces them. ``recv`` may be
    ``send + rank * count * size`` (in place): the first copy is then skipped.
    """
    n, me = ctx.nranks, ctx.rank
    size = DATA_TYPE_SIZE[data_type]
    nbytes = count * size
    own = send + me * nbytes
    if n == 1:
        if nbytes and recv != own:
            copy_task(ctx.main, recv, own, nbytes)
        return
    slot = chunk_bytes(ctx, 2 * n) // size * size
    staged = [ctx.ccl + slot * p for p in range(n)]           # in[p]
    landed = [ctx.ccl + slot * (n + t) for t in range(n)]     # out[t]
    for done in range(0, nbytes, slot):
        cur = min(slot, nbytes - done)
        if recv != own:
            copy_task(ctx.main, recv + done, own + done, cur)

        def send_to(t, p):
            copy_task(t, staged[p], send + p * nbytes + done, cur)
            mesh_exchange(t, ctx.channel(p), ctx.peer_ccl(p) + slot * (n + me), staged[p], cur)

        mesh(ctx, send_to, main_too=False, order=lambda p: (p - me) % n)
        for t in range(n):
            if t != me:
                reduce_task(ctx.main, recv + done, landed[t], cur // size, data_type, op)


@buffer_parts(lambda n: 2)
def reduce_scatter_ring(ctx, send: int, recv: int, count: int, data_type: int, op: int) -> None:
    """Issue the ring ReduceScatter of equal slices (same result as :func:`reduce_scatter_mesh`)."""
    n = ctx.nranks
    reduce_scatterv_ring(ctx, send, recv, [count] * n, [r * count for r in range(n)], data_type, op)


@buffer_parts(lambda n: 2)
def reduce_scatterv_ring(ctx, send: int, recv: int, counts, displs, data_type: int, op: int) -> None:
    """Issue a ring ReduceScatter: ``recv = op over ranks of send[displs[me] : displs[me] + counts[me]]``.

    ``counts``/``displs`` are in elements and may differ per slice (zero too). One thread
    (``ctx.main``) and the channels to the two neighbours. Per loop the HCCL buffer holds two
    slots of ``S`` bytes used alternately: in step ``s`` (``0 .. N-2``) rank ``r`` sends the
    partial result of slice ``(r - s - 1) % N`` from slot ``(s + 1) % 2`` and receives the partial
    of slice ``(r - s - 2) % N`` into slot ``s % 2``, then adds its own input of that slice. The
    partial a rank receives in the last step is its own slice, complete: it is copied to ``recv``.

    Timeline, N = 3 (``x_r[c]`` = rank r's input of slice c; ``+`` = LocalReduce)::

                 stage              step 0                    step 1
        rank 0 : [1] <- x0[2]       [1]>  <[0]; [0] += x0[1]   [0]>  <[1]; [1] += x0[0] -> recv
        rank 1 : [1] <- x1[0]       [1]>  <[0]; [0] += x1[2]   [0]>  <[1]; [1] += x1[1] -> recv
        rank 2 : [1] <- x2[1]       [1]>  <[0]; [0] += x2[0]   [0]>  <[1]; [1] += x2[2] -> recv

    One step on rank r (``[k]>`` = write my slot k into the right neighbour's slot s % 2)::

        record left.ACK          my slot s % 2 is free: you may write it
        wait   own ACK (right)   right's slot s % 2 is free (its previous send from it is done)
        Write(right.ccl[slot s%2] <- ccl[slot (s+1)%2])
        record right.DATA; wait own DATA (left)
        LocalReduce(ccl[slot s%2], input slice (r-s-2)%N)     (last step: then copy it to recv)

    ``send`` and ``recv`` may be the same buffer (in place): this rank's input of its own slice is
    read before the result is written over it, and other slices are never written.
    """
    n, me = ctx.nranks, ctx.rank
    size = DATA_TYPE_SIZE[data_type]
    if n == 1:
        src = send + displs[0] * size
        if counts[0] and recv != src:
            copy_task(ctx.main, recv, src, counts[0] * size)
        return
    t = ctx.main
    left, right = ctx.channel((me - 1) % n), ctx.channel((me + 1) % n)
    right_ccl = ctx.peer_ccl((me + 1) % n)
    elems = chunk_bytes(ctx, 2) // size
    buf = (ctx.ccl, ctx.ccl + elems * size)
    for done in range(0, max(counts), elems):
        def piece(c):
            return max(0, min(elems, counts[c] - done))

        def source(c):
            return send + (displs[c] + done) * size

        first = (me - 1) % n
        if piece(first):
            copy_task(t, buf[1], source(first), piece(first) * size)
        for s in range(n - 1):
            fwd, got = (me - s - 1) % n, (me - s - 2) % n
            tx, rx = (s + 1) % 2, s % 2
            ring_step(t, left, right, (right_ccl + rx * elems * size, buf[tx], piece(fwd) * size))
            if piece(got):
                reduce_task(t, buf[rx], source(got), piece(got), data_type, op)
        if piece(me):  # the last step received this rank's own slice
            copy_task(t, recv + done * size, buf[(n - 2) % 2], piece(me) * size)
