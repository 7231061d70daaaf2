"""Scatter: slice ``r`` of the root's input ends up in rank ``r``'s output.

``scatter_ring`` is scenario S4 of hcomm-api §8 (HCCL's ``scatter_ring.cc``, the host CPU_TS
template of Atlas A2; on A3/350 :func:`~.context.run` runs it in an AI CPU kernel). One thread per
rank; ``left`` is the channel to rank ``r-1``, ``right`` the channel to rank ``r+1``. The slices
travel the ring ``root -> root+1 -> ... -> root-1``, the farthest one first. A RoCE link pushes
(the sender writes into the receiver's output); any other link (HCCS, UB) pulls (the receiver
reads from the sender). Each HCCL buffer is cut in two halves: ``input`` (the root's staged
input) and ``output``; slice ``k`` lies at ``off(k) = k * S`` in each, ``S`` bytes per loop.

Ring of 4, root 0 (slices 3, 2, 1 leave the root in that order; ``>k`` = hop of slice ``k``)::

    rank 0 (root) : copy in->out | >3 | >2 | >1 |
    rank 1        :               rcv3 | >3,rcv2 | >2,rcv1 |
    rank 2        :                      rcv3    | >3,rcv2 |
    rank 3 (end)  :                                rcv3    |
    all           : barrier (record left ACK, wait right ACK, record right DATA, wait left DATA)

One hop of slice ``k`` over a link ``s -> s+1``::

    receiver : record left ACK ........................ wait left DATA -> [HCCS: Read(out[k] <- left.out[k])]
    sender   :                 wait right ACK -> [RoCE: Write(right.out[k] <- out[k])] -> record right DATA

The closing barrier makes every rank's stream wait until its right neighbour has finished
reading from it, so the next loop (or the next collective) may overwrite the HCCL buffer.
"""
from __future__ import annotations

from ..topology import CommProtocol
from .context import buffer_parts, chunk_bytes
from .patterns import copy_task, grant, land, push, ring_step

ROCE = CommProtocol.COMM_PROTOCOL_ROCE


@buffer_parts(lambda n: 2 * n)
def scatter_ring(ctx, send: int, recv: int, nbytes: int, root: int) -> None:
    """Issue the ring Scatter: ``nbytes`` per rank; the root's ``send`` holds ``nranks * nbytes``
    (``send`` is ignored on the other ranks)."""
    n, me = ctx.nranks, ctx.rank
    t = ctx.main
    if n == 1:
        copy_task(t, recv, send, nbytes)
        return
    half = chunk_bytes(ctx, 2 * n) * n
    size = min(half // n, nbytes)  # slice stride per loop: small scatters stay packed
    ring = _Ring(ctx, root, ctx.ccl, ctx.ccl + half, half)
    for done in range(0, nbytes, size):
        cur = min(size, nbytes - done)
        if me == root:  # stage this loop's piece of every slice in the input half
            for k in range(n):
                copy_task(t, ring.input + k * size, send + k * nbytes + done, cur)
        ring.run(size, cur)
        copy_task(t, recv + done, ring.output + me * size, cur)


class _Ring:
    """The S4 template on the HCCL buffers' ``input``/``output`` halves of one rank."""

    def __init__(self, ctx, root: int, input_: int, output: int, half: int):
        n, r = ctx.nranks, ctx.rank
        self.t, self.n, self.r, self.root = ctx.main, n, r, root
        self.input, self.output = input_, output
        lp, rp = (r - 1 + n) % n, (r + 1) % n
        self.left, self.right = ctx.channel(lp), ctx.channel(rp)
        self.left_roce = ctx.protocol(lp) == ROCE
        self.right_roce = ctx.protocol(rp) == ROCE
        self.left_input = ctx.peer_ccl(lp)           # the left neighbour's input half
        self.left_output = ctx.peer_ccl(lp) + half   # ... and output half
        self.right_output = ctx.peer_ccl(rp) + half  # the right neighbour's output half

    def run(self, size: int, cur: int) -> None:
        """Scatter ``n`` slices of ``cur`` bytes, slice ``k`` at ``k * size``; then the barrier."""
        n, r, root, t = self.n, self.r, self.root, self.t
        off = lambda k: k * size  # noqa: E731
        if r == root:
            whole = (n - 1) * size + cur  # up to the end of the last slice
            copy_task(t, self.output, self.input, whole)
            for i in range(1, n):
                pre = (root - i + n) % n
                push(t, self.right, self._write(self.input + off(pre), off(pre), cur))
        elif (r + 1) % n == root:  # the end rank
            grant(t, self.left)
            land(t, self.left, self._read(self.left_output, off(r), cur))
        else:  # a middle rank: receive `rounds` slices, forward all but the last (its own)
            rounds = (root + n - r) % n
            src = self.left_input if r == (root + 1) % n else self.left_output
            for i in range(1, rounds + 1):
                d = (r + rounds - i) % n
                fwd = (d + 1) % n
                grant(t, self.left)
                if i != 1:
                    push(t, self.right, self._write(self.output + off(fwd), off(fwd), cur))
                land(t, self.left, self._read(src, off(d), cur))
        ring_step(t, self.left, self.right)   # barrier

    def _write(self, src: int, offset: int, nbytes: int):
        """The push to the right neighbour's output at ``offset``: a Write over RoCE, else none
        (the neighbour reads)."""
        return (self.right_output + offset, src, nbytes) if self.right_roce else None

    def _read(self, base: int, offset: int, nbytes: int):
        """The pull from the left neighbour's ``base + offset`` into this output: a Read unless
        the link is RoCE (the neighbour wrote)."""
        return None if self.left_roce else (self.output + offset, base + offset, nbytes)
