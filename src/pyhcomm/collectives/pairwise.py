"""Pairwise exchanges: AlltoAll, AlltoAllV, AlltoAllVC, and every point-to-point call (HcclSend,
HcclRecv, HcclBatchSendRecv, grouped sends and receives), one engine.

Every call is a *plan*: for each peer ``p``, a list of rounds ``(src, sbytes, dst, rbytes)``:
in round ``k`` this rank sends ``sbytes`` at ``src`` to ``p`` and receives ``rbytes`` from ``p``
into ``dst``. Round ``k`` of ``a``'s plan for ``b`` must mirror round ``k`` of ``b``'s plan for
``a`` (``a``'s ``sbytes`` is ``b``'s ``rbytes`` and the other way round); an all-to-all gives
each pair one round, point-to-point calls one round per send or receive (the ``k``-th send to a
peer meets that peer's ``k``-th receive from this rank, whichever call issued either).

A round of ``max(sbytes, rbytes)`` bytes takes ``ceil(max / S)`` loops of ``S``-byte pieces (``S``
a slot of the HCCL buffer); both ends of a pair compute the same number. Loop ``i`` of the whole
call serves the pairs that still have a loop ``i`` (a symmetric set), in groups of the main
thread and its slaves (:func:`.patterns.mesh`), one exchange per peer on one thread. The groups
keep the world deadlock-free for any plan (the argument of :func:`.patterns.mesh_groups` holds
loop by loop).

**All-to-all** (:func:`exchange`, push): the buffer is cut into ``2 * nranks`` slots, ``out[p]``
stages what goes to ``p``, ``in[q]`` receives what ``q`` sends::

    on thread t, peer p:  LocalCopy(out[p] <- src piece)          (when this rank sends)
                          record p.ACK; wait own ACK                my in[p] is free / p's in[me] is
                          Write(p.in[me] <- out[p])                 (when this rank sends)
                          record p.DATA; wait own DATA              both writes landed
                          LocalCopy(dst piece <- in[p])             (when this rank receives)

The copy-out runs on the same thread before that thread's next ACK, so a slot is never
overwritten while it is still needed.

**Point-to-point** (:func:`transfer`, pull: scenario S2 of hcomm-api §8): ``nranks`` slots,
``out[p]`` stages what goes to ``p``; the receiver reads it straight into its buffer::

    sender   : LocalCopy(out[p] <- src piece); record p.ACK ........................ wait own DATA
    receiver :                         wait own ACK; Read(dst piece <- p.out[me]); record p.DATA

ACK says "staged", DATA "read": a send completes once its receiver read it (a rendezvous, as
HCCL's synchronous HcclSend), the sender's slot is not reused before. A round in both directions
does both halves on one thread (record ACK, wait ACK, read, record DATA, wait DATA), so two ranks
sending each other in one batch (or one group) do not wait for each other; two plain HcclSend
calls facing each other do, and the blocked streams report it.

Counts that do not mirror each other (a send of 100 bytes met by a receive of 60) are a user
error HCCL leaves undefined; here the pair then disagrees on its loop count and the blocked
streams report the wait, or the receiver gets ``rbytes`` bytes (of which only what was sent is
meaningful). Nothing outside the named ranges is written either way.
"""
from __future__ import annotations

from ..hcomm import channel_ops as _ch
from ..hcomm.local import local_copy
from .context import buffer_parts, chunk_bytes
from .patterns import ACK, DATA, copy_task, mesh, mesh_exchange, record, wait


def loops(rounds, slot: int) -> list[tuple]:
    """The loops of one pair: ``(src, spiece, dst, rpiece)`` per loop, every round cut into
    ``slot``-byte pieces (a round of nothing at all takes no loop)."""
    out = []
    for src, sbytes, dst, rbytes in rounds:
        for done in range(0, max(sbytes, rbytes), slot):
            out.append((src + done, max(0, min(slot, sbytes - done)), dst + done, max(0, min(slot, rbytes - done))))
    return out


def _run_loops(ctx, plan: dict, slots: int, step) -> None:
    """Run ``plan``'s loops: in loop ``i``, ``step(thread, peer, (src, spiece, dst, rpiece), slot)``
    for every peer with a loop ``i``, on the main thread and its slaves (:func:`.patterns.mesh`)."""
    me = ctx.rank
    slot = chunk_bytes(ctx, slots)
    todo = {p: loops(rounds, slot) for p, rounds in plan.items() if p != me}
    for i in range(max((len(v) for v in todo.values()), default=0)):
        active = [p for p, v in todo.items() if len(v) > i]
        mesh(ctx, lambda t, p: step(t, p, todo[p][i], slot), peers=active)


@buffer_parts(lambda n: 2 * n)
def exchange(ctx, plan: dict, local=None) -> None:
    """Issue the all-to-all exchange ``plan`` (``{peer: [(src, sbytes, dst, rbytes), ...]}``, push,
    see the module docstring); ``local = (dst, src, nbytes)`` is this rank's own part, one copy on
    the main thread first."""
    n, me = ctx.nranks, ctx.rank
    if local is not None and local[2] and local[0] != local[1]:
        copy_task(ctx.main, *local)
    if n == 1 or not plan:
        return

    def step(t, p, piece, slot):
        src, spiece, dst, rpiece = piece
        out_slot, in_slot = ctx.ccl + slot * p, ctx.ccl + slot * (n + p)
        if spiece:
            copy_task(t, out_slot, src, spiece)
        mesh_exchange(t, ctx.channel(p), ctx.peer_ccl(p) + slot * (n + me), out_slot, spiece)
        if rpiece:
            copy_task(t, dst, in_slot, rpiece)

    _run_loops(ctx, plan, 2 * n, step)


@buffer_parts(lambda n: n)
def transfer(ctx, plan: dict) -> None:
    """Issue the point-to-point transfers ``plan`` (pull, see the module docstring)."""
    me = ctx.rank

    def step(t, p, piece, slot):
        src, spiece, dst, rpiece = piece
        ch = ctx.channel(p)
        if spiece:
            local_copy(t, ctx.ccl + slot * p, src, spiece)
            record(t, ch, ACK)
        if rpiece:
            wait(t, ch, ACK)
            _ch.read(t, ch, dst, ctx.peer_ccl(p) + slot * me, rpiece)
            record(t, ch, DATA)
        if spiece:
            wait(t, ch, DATA)

    if ctx.nranks > 1 and plan:
        _run_loops(ctx, plan, ctx.nranks, step)


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


@buffer_parts(lambda n: n)
def batch_send_recv(ctx, items) -> None:
    """Issue sends and receives (``(is_send, buf, nbytes, peer)`` items) together: no item waits
    for another item of this rank (:func:`batch_plan`, :func:`transfer`). A plain HcclSend or
    HcclRecv is a batch of one item."""
    transfer(ctx, batch_plan(items))
