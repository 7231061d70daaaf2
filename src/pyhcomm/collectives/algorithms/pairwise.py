"""Pairwise AlltoAll / AlltoAllV / AlltoAllVC: ``p - 1`` steps, one peer each way per step.

HCCL's ``alltoallv_pairwise.cc`` (Pairwise.md): in step ``k`` (``1 .. p-1``) rank ``r`` sends its
block for ``r + k`` and receives the block of ``r - k``, so no port sends or receives more than
one stream at once (a mesh on RoCE would be many-to-many). The own block is one local copy first.
A block larger than the HCCL buffer goes in pieces: piece ``i`` of the block to ``r + k`` and
piece ``i`` of the block from ``r - k`` share an ACK / DATA round; a rank runs as many rounds as
the larger of its two blocks needs, each round's sides only when that block has a piece ``i``
(both ends of a pair count the same pieces: the sender's size is the receiver's).

Cost (Pairwise.md): ``(p-1) alpha + beta sum_k max_i n(i, i+k)``.
"""
from __future__ import annotations

from ..algorithm import Algorithm, Implementation, Op
from ..context import buffer_parts
from ..algorithm import MIN_SLOT
from ..drive import fit, schedule_of
from ..segments import EMPTY, copy, exchange, seg, whole


def step_peers(call) -> None:
    """Every rank, over ``p - 1`` steps."""
    return None


@buffer_parts(lambda n: 2)
def alltoallv(ctx, send, send_sizes, send_displs, recv, recv_sizes, recv_displs):
    p, r, t = ctx.nranks, ctx.rank, ctx.main
    copy(t, recv + recv_displs[r], send + send_displs[r], send_sizes[r])
    if p == 1:
        return
    g = whole(ctx)
    cap = fit(ctx, 1.0, MIN_SLOT)
    for k in range(1, p):
        to, frm = (r + k) % p, (r - k) % p
        out_n, in_n = send_sizes[to], recv_sizes[frm]
        rounds = max(1, -(-out_n // cap), -(-in_n // cap))
        for i in range(rounds):
            o = i * cap
            sending, receiving = (i == 0 or o < out_n), (i == 0 or o < in_n)
            exchange(g, t, to if sending else None, frm if receiving else None,
                     seg(send + send_displs[to] + o, min(cap, out_n - o)) if sending else EMPTY,
                     seg(recv + recv_displs[frm] + o, min(cap, in_n - o)) if receiving else EMPTY, 0)


@buffer_parts(lambda n: 2)
def alltoall(ctx, send, recv, nbytes):
    p = ctx.nranks
    sizes, displs = [nbytes] * p, [i * nbytes for i in range(p)]
    alltoallv(ctx, send, sizes, displs, recv, sizes, displs)


PAIRWISE = Algorithm("pairwise", "AlltoAll in p - 1 steps: step k sends to r + k and receives from r - k", tuple(
    Implementation(op, fn, peers=step_peers, schedule=schedule_of(fn, op))
    for op, fn in ((Op.HCCL_CMD_ALLTOALL, alltoall), (Op.HCCL_CMD_ALLTOALLV, alltoallv),
                   (Op.HCCL_CMD_ALLTOALLVC, alltoallv))))
