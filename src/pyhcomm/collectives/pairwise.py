"""Pairwise exchanges: AlltoAll, AlltoAllV, AlltoAllVC and batched send/receive, one engine.

Every call is a *plan*: for each peer ``p``, a list of rounds ``(src, sbytes, dst, rbytes)``:
in round ``k`` this rank sends ``sbytes`` at ``src`` to ``p`` and receives ``rbytes`` from ``p``
into ``dst``. Round ``k`` of ``a``'s plan for ``b`` must mirror round ``k`` of ``b``'s plan for
``a`` (``a``'s ``sbytes`` is ``b``'s ``rbytes`` and the other way round); an all-to-all gives
each pair one round, a batch of sends and receives one round per item (the ``k``-th send to a
peer meets that peer's ``k``-th receive from this rank).

The HCCL buffer is cut into ``2 * nranks`` slots of ``S`` bytes: ``out[p]`` stages what goes to
peer ``p``, ``in[q]`` receives what peer ``q`` sends. A round of ``max(sbytes, rbytes)`` bytes
takes ``ceil(max / S)`` loops; both ends of a pair compute the same number. Loop ``i`` of the
whole call serves the pairs that still have a loop ``i`` (a symmetric set), in groups of the
main thread and its slaves (:func:`.patterns.mesh`), one exchange per peer::

    on thread t, peer p:  LocalCopy(out[p] <- src piece)          (when this rank sends)
                          record p.ACK; wait own ACK                my in[p] is free / p's in[me] is
                          Write(p.in[me] <- out[p])                 (when this rank sends)
                          record p.DATA; wait own DATA              both writes landed
                          LocalCopy(dst piece <- in[p])             (when this rank receives)

The copy-out runs on the same thread before that thread's next ACK, so a slot is never
overwritten while it is still needed; the groups keep the world deadlock-free for any plan
(the argument of :func:`.patterns.mesh_groups` holds loop by loop).

Counts that do not mirror each other (a send of 100 bytes met by a receive of 60) are a user
error HCCL leaves undefined; here the pair then disagrees on its loop count and the blocked
streams report the wait, or the receiver gets ``rbytes`` bytes (of which only what was sent is
meaningful). Nothing outside the named ranges is written either way.
"""
from __future__ import annotations

from ..hcomm.local import local_copy
from .context import buffer_parts, chunk_bytes
from .patterns import mesh, mesh_exchange


def loops(rounds, slot: int) -> list[tuple]:
    """The loops of one pair: ``(src, spiece, dst, rpiece)`` per loop, every round cut into
    ``slot``-byte pieces (a round of nothing at all takes no loop)."""
    out = []
    for src, sbytes, dst, rbytes in rounds:
        for done in range(0, max(sbytes, rbytes), slot):
            out.append((src + done, max(0, min(slot, sbytes - done)), dst + done, max(0, min(slot, rbytes - done))))
    return out


@buffer_parts(lambda n: 2 * n)
def exchange(ctx, plan: dict, local=None) -> None:
    """Issue the pairwise exchange ``plan`` (``{peer: [(src, sbytes, dst, rbytes), ...]}``, see
    the module docstring); ``local = (dst, src, nbytes)`` is this rank's own part, one copy on the
    main thread first."""
    n, me = ctx.nranks, ctx.rank
    if local is not None and local[2] and local[0] != local[1]:
        local_copy(ctx.main, *local)
    if n == 1 or not plan:
        return
    slot = chunk_bytes(ctx, 2 * n)
    todo = {p: loops(rounds, slot) for p, rounds in plan.items() if p != me}
    out_slot = lambda p: ctx.ccl + slot * p            # noqa: E731  what goes to p
    in_slot = lambda base, q: base + slot * (n + q)    # noqa: E731  what q sent, in a buffer at base
    for i in range(max((len(v) for v in todo.values()), default=0)):
        active = [p for p, v in todo.items() if len(v) > i]

        def one(t, p):
            src, spiece, dst, rpiece = todo[p][i]
            if spiece:
                local_copy(t, out_slot(p), src, spiece)
            mesh_exchange(t, ctx.channel(p), in_slot(ctx.peer_ccl(p), me), out_slot(p), spiece)
            if rpiece:
                local_copy(t, dst, in_slot(ctx.ccl, p), rpiece)

        mesh(ctx, one, peers=active)


@buffer_parts(lambda n: 2 * n)
def alltoall(ctx, send: int, recv: int, nbytes: int) -> None:
    """Issue the AlltoAll of ``nbytes`` per rank pair (``send`` and ``recv`` hold ``nranks * nbytes``):
    slice ``j`` of rank ``i``'s input becomes slice ``i`` of rank ``j``'s output."""
    n = ctx.nranks
    sizes, displs = [nbytes] * n, [r * nbytes for r in range(n)]
    alltoallv(ctx, send, sizes, displs, recv, sizes, displs)


@buffer_parts(lambda n: 2 * n)
def alltoallv(ctx, send: int, send_sizes, send_displs, recv: int, recv_sizes, recv_displs) -> None:
    """Issue an AlltoAllV in bytes: ``send_sizes[p]`` bytes at ``send + send_displs[p]`` to rank
    ``p``, ``recv_sizes[q]`` bytes from rank ``q`` into ``recv + recv_displs[q]``."""
    me = ctx.rank
    plan = {p: [(send + send_displs[p], send_sizes[p], recv + recv_displs[p], recv_sizes[p])]
            for p in range(ctx.nranks) if p != me and (send_sizes[p] or recv_sizes[p])}
    exchange(ctx, plan, (recv + recv_displs[me], send + send_displs[me], send_sizes[me]))


def batch_plan(items) -> dict:
    """The plan of a batch of ``(is_send, buf, nbytes, peer)`` items: the ``k``-th send to a peer
    and the ``k``-th receive from it share round ``k``."""
    sends: dict = {}
    recvs: dict = {}
    for is_send, buf, nbytes, peer in items:
        (sends if is_send else recvs).setdefault(peer, []).append((buf, nbytes))
    plan = {}
    for p in set(sends) | set(recvs):
        s, r = sends.get(p, []), recvs.get(p, [])
        plan[p] = [(*(s[k] if k < len(s) else (0, 0)), *(r[k] if k < len(r) else (0, 0)))
                   for k in range(max(len(s), len(r)))]
    return plan


@buffer_parts(lambda n: 2 * n)
def batch_send_recv(ctx, items) -> None:
    """Issue a batch of sends and receives (``(is_send, buf, nbytes, peer)`` items) together: no
    item waits for another item of this rank (:func:`batch_plan`)."""
    exchange(ctx, batch_plan(items))
