"""The handshakes the collectives share, written once.

Everything here enqueues tasks through the raising implementations of :mod:`pyhcomm.hcomm` (an
``HcclError`` propagates; nothing returns codes). Notify indices on channels follow HCCL:
``ACK = 0`` ("my buffer is free" / "staged"), ``DATA = 1`` ("it landed" / "I have read it").

Ring step on thread ``t`` (``left``/``right``: the channels to the two neighbours)::

    grant(left)        record left.ACK       my receive slot is free: you may write it
    push(right, w)     wait own ACK (right)  right's slot is free
                       [Write w to right]
                       record right.DATA     it landed
    land(left, r)      wait own DATA (left)  left's write into my slot landed
                       [Read r from left]

A mesh exchange is the same step with ``left`` and ``right`` the one channel to the peer: record
peer ACK, wait own ACK, write, record peer DATA, wait own DATA (hcomm-api S3/S5).

:func:`mesh` runs one exchange per peer on the main thread and its slaves, in groups when there
are more peers than threads (see there).
"""
from __future__ import annotations

from contextvars import ContextVar

from ..enums import DATA_TYPE_SIZE
from ..errors import para
from ..hcomm import channel_ops as _ch
from ..hcomm import notify as _notify
from ..hcomm.local import local_copy
from ..hcomm.reduce import hccl_reduce

ACK, DATA, FIN = 0, 1, 2
WAIT_TIMEOUT = 1836


class Probe:
    """What a look at an algorithm's steps collects (:data:`PROBE`): the ranks they talk to and,
    when ``events`` is a list, the steps themselves (:mod:`pyhcomm.collectives.drive`)."""

    def __init__(self, events: bool = False, main=0):
        self.peers: set = set()
        self.events = [] if events else None
        self.main = main


#: While set (a :class:`Probe`): an algorithm's steps are only looked at, not issued
#: (:func:`pyhcomm.collectives.drive.probe_peers`, ``probe_schedule``); the fan-outs, transfers
#: and local operations issue nothing.
PROBE: ContextVar = ContextVar("pyhcomm_collective_probe", default=None)


def noted(*events) -> bool:
    """In a probe (:data:`PROBE`): note ``events`` (tasks as :class:`~.algorithm.Program` lists
    them; in a probe context a channel is its peer's rank) and return True: the caller issues
    nothing. False outside a probe."""
    probe = PROBE.get()
    if probe is None:
        return False
    for ev in events:
        if ev[0] in ("rec", "wait", "write", "read"):
            probe.peers.add(ev[2])
    if probe.events is not None:
        probe.events.extend(events)
    return True


# -- channel notifies -----------------------------------------------------------------------------
def record(t: int, ch: int, idx: int) -> None:
    """Record the peer's channel notify ``idx`` on thread ``t``."""
    if not noted(("rec", t, ch, idx)):
        _ch.notify_record(t, ch, idx)


def wait(t: int, ch: int, idx: int) -> None:
    """Wait on thread ``t`` for this end's channel notify ``idx``."""
    if not noted(("wait", t, ch, idx)):
        _ch.notify_wait(t, ch, idx, WAIT_TIMEOUT)


def read(t: int, ch: int, dst: int, src: int, nbytes: int) -> None:
    """Read ``nbytes`` from the peer on ``ch`` on thread ``t``."""
    if not noted(("read", t, ch, nbytes)):
        _ch.read(t, ch, dst, src, nbytes)


def copy_task(t: int, dst: int, src: int, nbytes: int) -> None:
    """One ``LocalCopy`` task of ``nbytes`` on thread ``t`` (issued as given, even of 0 bytes)."""
    if not noted(("local", t, "copy", [nbytes])):
        local_copy(t, dst, src, nbytes)


def reduce_task(t: int, dst: int, src: int, count: int, data_type: int, op: int) -> None:
    """One ``LocalReduce`` task of ``count`` elements on thread ``t``."""
    if not noted(("local", t, "reduce", [count * DATA_TYPE_SIZE[data_type]])):
        hccl_reduce(t, dst, src, count, data_type, op)


# (grant, push and land call the channel operations directly rather than through record/wait:
# every collective's steps go through them.)
def grant(t: int, ch: int) -> None:
    """Tell the peer on ``ch`` that this rank's slot for it is free (record its ACK)."""
    if not noted(("rec", t, ch, ACK)):
        _ch.notify_record(t, ch, ACK)


def push(t: int, ch: int, write=None) -> None:
    """Wait until the peer's slot is free, ``write = (dst, src, nbytes)`` into it (nothing when
    None or empty), tell the peer it landed (record its DATA)."""
    moves = write is not None and write[2]
    if PROBE.get() is not None:
        noted(("wait", t, ch, ACK), *((("write", t, ch, write[2]),) if moves else ()), ("rec", t, ch, DATA))
        return
    _ch.notify_wait(t, ch, ACK, WAIT_TIMEOUT)
    if moves:
        _ch.write(t, ch, *write)
    _ch.notify_record(t, ch, DATA)


def land(t: int, ch: int, read=None) -> None:
    """Wait until the peer's data for this rank landed (own DATA); then ``read = (dst, src,
    nbytes)`` from the peer (nothing when None or empty)."""
    moves = read is not None and read[2]
    if PROBE.get() is not None:
        noted(("wait", t, ch, DATA), *((("read", t, ch, read[2]),) if moves else ()))
        return
    _ch.notify_wait(t, ch, DATA, WAIT_TIMEOUT)
    if moves:
        _ch.read(t, ch, *read)


def ring_step(t: int, left: int, right: int, write=None, read=None) -> None:
    """One ring step (see the module docstring): grant left, push ``write`` right, land left."""
    grant(t, left)
    push(t, right, write)
    land(t, left, read)


def mesh_exchange(t: int, ch: int, dst: int, src: int, nbytes: int) -> None:
    """One mesh exchange on ``ch``: record peer ACK, wait own ACK, ``Write(dst <- src, nbytes)``,
    record peer DATA, wait own DATA."""
    ring_step(t, ch, ch, (dst, src, nbytes))


def pull(t: int, ch: int, dst: int, src: int, nbytes: int) -> None:
    """The receiving side of S2: wait until the peer staged (own ACK), ``Read(dst <- src)``, tell
    the peer it was read (record its DATA)."""
    wait(t, ch, ACK)
    read(t, ch, dst, src, nbytes)
    record(t, ch, DATA)


# -- main thread and slaves -------------------------------------------------------------------------
def fan_out(main: int, slaves) -> None:
    """``main`` releases each of ``slaves`` (a slave waits for its notify 0)."""
    if PROBE.get() is not None:
        noted(*(ev for s in slaves for ev in (("trec", main, s, 0), ("twait", s, 0))))
        return
    for s in slaves:
        _notify.record(main, s, 0)
        _notify.wait(s, 0, WAIT_TIMEOUT)


def fan_in(main: int, slaves) -> None:
    """Slave ``i`` of ``slaves`` records ``main``'s notify ``i``; ``main`` waits for all of them."""
    if PROBE.get() is not None:
        noted(*(ev for i, s in enumerate(slaves) for ev in (("trec", s, main, i), ("twait", main, i))))
        return
    for i, s in enumerate(slaves):
        _notify.record(s, main, i)
        _notify.wait(main, i, WAIT_TIMEOUT)


def ring_peers(rank: int, nranks: int) -> list[int]:
    """The ranks a ring algorithm talks to: ``[left, right]`` (one peer for 2 ranks, none for 1)."""
    return sorted({(rank - 1) % nranks, (rank + 1) % nranks} - {rank})


def pairing_round(a: int, b: int, n: int) -> int:
    """The round in which ranks ``a`` and ``b`` (``a != b``) of ``n`` meet in a round-robin
    schedule (the circle method): in every round each rank meets at most one peer, and every pair
    meets once; ``n - 1`` rounds when ``n`` is even, ``n`` when it is odd (each rank sits one out).
    Symmetric: ``pairing_round(a, b, n) == pairing_round(b, a, n)``."""
    k = n - 1 if n % 2 == 0 else n             # rounds; with n even, rank n - 1 is the circle's centre
    if n % 2 == 0 and n - 1 in (a, b):
        return (2 * (b if a == n - 1 else a)) % k
    return (a + b) % k


def mesh_groups(me: int, n: int, peers, width: int, order=None) -> list[list[int]]:
    """Cut rank ``me``'s ``peers`` (of ``n`` ranks) into groups of at most ``width`` (every rank
    gets the same number of groups; a group may be empty); within a group the peers are sorted
    by ``order`` (default: ascending). With ``n - 1 <= width``: one group, every peer.

    Past that, group ``g`` holds the peers ``me`` meets in rounds ``g * width .. (g + 1) * width -
    1`` of a round-robin schedule (:func:`pairing_round`). A pair meets in the same group on both
    sides, so the world cannot deadlock (every rank finishes group ``g`` once every rank reached
    it: each exchange of group ``g`` has both ends there), and in each group a rank writes to and
    is written by the same number of peers, at most ``width``: no port receives more at once than
    one sends. (Consecutive groups of the ascending peers, the earlier cut, made ranks ``0 .. n -
    2`` all write to rank ``n - 1`` in their last group, an ``n - 1``-fold incast, and made a pair
    meet in groups of different positions, a wavefront of groups. Groups of the rotated order
    ``me + 1, me + 2, ...`` deadlock: three ranks in groups of one wait for each other in a
    cycle.)
    """
    peers = sorted(peers)
    if n - 1 <= width:
        groups = [list(peers)]
    else:
        rounds = n - 1 if n % 2 == 0 else n
        groups = [[] for _ in range(-(-rounds // width))]
        for p in peers:
            groups[pairing_round(me, p, n) // width].append(p)
    if order is not None:
        for g in groups:
            g.sort(key=order)
    return groups


def mesh(ctx, exchange, main_too: bool = True, order=None, peers=None) -> None:
    """Run ``exchange(thread, peer)`` once for every peer of this rank (or for ``peers``, ascending:
    every rank must then pass a set in which ``b`` names ``a`` exactly when ``a``'s names ``b``).

    ``main_too``: the main thread serves the first peer of each group (S3: threads ``T0..``),
    else slaves only (S5: the main thread reduces afterwards). With ``k`` threads the peers go in
    groups of at most ``k`` (:func:`mesh_groups`); around each group the main thread releases the slaves
    the group uses and waits for them (fan-out, fan-in), so one pool of at most 63 slaves serves
    any number of ranks, and the main thread never needs more than 63 notifies (64 with the AI
    CPU's host-sync notify). With ``nranks - 1`` peers and enough slaves that is one group: the
    original one-thread-per-peer algorithm.
    """
    n, me = ctx.nranks, ctx.rank
    peers = [p for p in range(n) if p != me] if peers is None else sorted(peers)
    threads = ([ctx.main] if main_too else []) + list(ctx.slaves)
    if not threads:
        raise para("collective", "this mesh algorithm runs on slave threads: run it with nslaves >= 1")
    for group in mesh_groups(me, n, peers, len(threads), order):
        if not group:
            continue
        used = ctx.slaves[:len(group) - (1 if main_too else 0)]
        fan_out(ctx.main, used)
        for t, p in zip(threads, group):
            exchange(t, p)
        fan_in(ctx.main, used)
