"""The pieces of memory an algorithm step moves, the ranks a level of it runs among, and the step.

A *segment* (:data:`Seg`) is a tuple of ``(address, nbytes)`` pieces taken in order: one slice of
a collective's vector, the pieces of one server's block, the part of a buffer one step sends. The
algorithms of the catalogue are written with segments, so one step sends any set of slices and a
level of a hierarchical collective treats a server's block as one slice.

:class:`Group` is a collective context (:class:`.context.CollectiveContext`) seen by the ranks of
one level (the ranks of a server, the same local rank of every server, ...): local ranks
``0 .. nranks-1``, the channels and HCCL buffers of those ranks; the threads are the call's.

:func:`exchange` is the one step every algorithm here is built of (HCCL's Tx/Rx with ACK and DATA
signals): on one thread, record ACK to the rank it receives from ("my landing area is free"), wait
for the ACK of the rank it sends to, write the sent segment packed into that rank's landing area
of the HCCL buffer (one ``Write`` per contiguous run), record its DATA; wait for the DATA of the
rank it receives from, then copy or reduce the landed bytes into the received segment (one task
per contiguous run). Both ends compute the same segment sizes, so the packing agrees. A step with
``to`` or ``frm`` None skips that side and its signals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from ..hcomm import channel_ops as _ch
from ..hcomm.local import local_copy
from ..hcomm.reduce import hccl_reduce
from .patterns import ACK, DATA, PROBE, WAIT_TIMEOUT

Seg = tuple      # ((address, nbytes), ...)
EMPTY: Seg = ()


def seg(addr: int, nbytes: int) -> Seg:
    """The segment of ``nbytes`` at ``addr`` (empty for 0 bytes)."""
    return ((addr, nbytes),) if nbytes > 0 else EMPTY


def size(s: Seg) -> int:
    """Bytes of a segment."""
    return sum(n for _a, n in s)


def concat(segs) -> Seg:
    """One segment of several, in order."""
    return tuple(piece for s in segs for piece in s)


def cut(s: Seg, sizes: Sequence[int]) -> list:
    """``s`` cut into consecutive segments of ``sizes`` bytes (their sum is at most ``size(s)``)."""
    out, pieces, i, off = [], list(s), 0, 0
    for want in sizes:
        part = []
        while want > 0:
            addr, n = pieces[i]
            take = min(want, n - off)
            part.append((addr + off, take))
            want -= take
            off += take
            if off == n:
                i, off = i + 1, 0
        out.append(tuple(part))
    return out


def shares(count: int, parts: int) -> list:
    """``count`` split into ``parts`` whole numbers that differ by at most one (the first ones larger)."""
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def split(s: Seg, parts: int, elem: int = 1) -> list:
    """``s`` cut into ``parts`` segments of whole ``elem``-byte elements, as equal as can be."""
    return cut(s, [c * elem for c in shares(size(s) // elem, parts)])


def pack(slices, indices) -> Seg:
    """The slices ``indices`` as one segment, in the order of their addresses (the same order on
    every rank: the ranks lay their vectors out alike), so adjacent slices merge into one transfer."""
    def first(i):
        return slices[i][0][0] if slices[i] else -1
    return concat(slices[i] for i in sorted(indices, key=first))


def runs(s: Seg) -> list:
    """The contiguous runs of a segment (adjacent pieces merged)."""
    out: list = []
    for addr, n in s:
        if out and out[-1][0] + out[-1][1] == addr:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((addr, n))
    return out


@dataclass(frozen=True)
class Red:
    """A reduction: data type, operation, element size."""

    data_type: int
    op: int
    elem: int


def paired(dst: Seg, src: Seg) -> list:
    """``(d, s, n)``: the runs of ``dst`` and ``src`` (same sizes) walked together, cut where either ends."""
    a, b, out = runs(dst), runs(src), []
    i = j = 0
    da = db = 0
    while i < len(a) and j < len(b):
        n = min(a[i][1] - da, b[j][1] - db)
        out.append((a[i][0] + da, b[j][0] + db, n))
        da, db = da + n, db + n
        if da == a[i][1]:
            i, da = i + 1, 0
        if db == b[j][1]:
            j, db = j + 1, 0
    return out


def _looked_at(t, what: str, pieces) -> bool:
    """In a probe (:data:`~.patterns.PROBE`): note a local step of ``pieces`` byte counts; True."""
    probe = PROBE.get()
    if probe is None:
        return False
    if probe.events is not None:
        probe.events.append(("local", t, what, [n for n in pieces if n]))
    return True


def copy_into(t: int, dst: Seg, src: Seg) -> None:
    """Copy the bytes of ``src`` into ``dst`` (same sizes): one task per run both share."""
    runs_ = [(d, s, n) for d, s, n in paired(dst, src) if d != s]
    if _looked_at(t, "copy", [n for _d, _s, n in runs_]):
        return
    for d, s, n in runs_:
        local_copy(t, d, s, n)


def copy(t: int, dst: int, src: int, nbytes: int) -> None:
    """One local copy of ``nbytes`` (none for 0 bytes or ``dst == src``)."""
    copy_into(t, seg(dst, nbytes), seg(src, nbytes))


def reduce_into(t: int, dst: Seg, src: Seg, red: Red) -> None:
    """``dst = dst op src`` element by element (same sizes)."""
    runs_ = paired(dst, src)
    if _looked_at(t, "reduce", [n for _d, _s, n in runs_]):
        return
    for d, s, n in runs_:
        hccl_reduce(t, d, s, n // red.elem, red.data_type, red.op)


class Group:
    """A collective context seen by the ranks ``members`` (global ranks of the communicator, in
    this level's order): ``rank`` and ``nranks`` local, ``channel`` / ``peer_ccl`` / ``protocol``
    by local rank; the threads and the HCCL buffer are the context's."""

    def __init__(self, ctx, members):
        self.ctx = ctx
        self.members = tuple(members)
        self.rank = self.members.index(ctx.rank)
        self.nranks = len(self.members)

    @property
    def main(self) -> int:
        return self.ctx.main

    @property
    def slaves(self) -> list:
        return self.ctx.slaves

    @property
    def ccl(self) -> int:
        return self.ctx.ccl

    @property
    def ccl_size(self) -> int:
        return self.ctx.ccl_size

    def channel(self, q: int) -> int:
        return self.ctx.channel(self.members[q])

    def peer_ccl(self, q: int) -> int:
        return self.ctx.peer_ccl(self.members[q])

    def protocol(self, q: int):
        return self.ctx.protocol(self.members[q])

    def sub(self, local_ranks) -> "Group":
        """The group of some of this group's ranks (local ranks of this group, in order)."""
        return Group(self.ctx, [self.members[q] for q in local_ranks])


def whole(ctx) -> Group:
    """Every rank of the communicator."""
    return Group(ctx, range(ctx.nranks))


def idle(g: Group, t=None) -> None:
    """A step this rank sits out: nothing is issued (a probe of the schedule notes it, so that the
    ranks' steps line up)."""
    exchange(g, g.main if t is None else t, None, None, EMPTY, EMPTY, 0)


def exchange(g: Group, t: int, to: Optional[int], frm: Optional[int], tx: Seg, rx: Seg, land: int,
             red: Optional[Red] = None, merge: bool = True, land_rx: Optional[int] = None) -> None:
    """One step on thread ``t`` (see the module docstring): send ``tx`` to local rank ``to``,
    receive ``rx`` from local rank ``frm`` through the landing area at offset ``land`` of the HCCL
    buffers (``land_rx``: this rank's, when it differs from the one written), then copy the landed
    bytes into ``rx`` (``red``: reduce them into it). ``merge``: one transfer per contiguous run
    (else one per piece, as HCCL's NB sends slice by slice)."""
    probe = PROBE.get()
    if probe is not None:
        probe.peers.update(g.members[q] for q in (to, frm) if q is not None)
        if probe.events is not None:
            sent = [n for _a, n in (runs(tx) if merge else tx) if n] if to is not None else []
            got = [n for _d, _s, n in paired(rx, seg(0, size(rx)))] if frm is not None else []
            probe.events.append(("exchange", t, g.members[to] if to is not None else -1,
                                 g.members[frm] if frm is not None else -1, sent, got,
                                 "reduce" if red is not None else "copy"))
        return
    if frm is not None:
        _ch.notify_record(t, g.channel(frm), ACK)
    if to is not None:
        ch = g.channel(to)
        _ch.notify_wait(t, ch, ACK, WAIT_TIMEOUT)
        base, pos = g.peer_ccl(to) + land, 0
        for src, n in (runs(tx) if merge else tx):
            _ch.write(t, ch, base + pos, src, n)
            pos += n
        _ch.notify_record(t, ch, DATA)
    if frm is not None:
        _ch.notify_wait(t, g.channel(frm), DATA, WAIT_TIMEOUT)
        landed = seg(g.ccl + (land if land_rx is None else land_rx), size(rx))
        if red is None:
            copy_into(t, rx, landed)
        else:
            reduce_into(t, rx, landed, red)
