"""The transport contract: every effect that crosses from one rank to another.

A transport forms worlds (the rendezvous of ``HcclCommInitRootInfo``, ``HcclCommInitClusterInfo``
and ``HcclCommInitAll``; a root info carries a :class:`RootKey`, which names one root in every Sim
of the process and every process of the job), pairs the two ends of a channel, moves bytes
one-sidedly into and out of memory a peer exposed, records a peer's notify and makes progress on
what is in flight; it also
chooses the storage of device memory (:meth:`Transport.device_storage`: memory another process can
map, where its peers do). The in-process transport (:mod:`.local`) does this with the objects of
the one Sim that holds every rank; an MPI transport does it with messages between processes and
with memory shared by the processes of one machine.

**Values only.** Nothing handed to a rank through this interface is an object of another rank: a
peer is a :class:`PeerRef`, what a rank knows of its peer's channel end is a :class:`PeerInfo`
(its rank, its notify count, the memory it exposed as :class:`Region` values, closed or not), a
remote range is ``(peer, remote address)``, a remote notify is ``(peer, index)``. A transport
receives this rank's own objects (its channel end, its local allocation) and may keep them; it
must never give them to another rank.

**Blocking.** No hook blocks waiting for another rank. A hook that needs the other side (a join,
a publish) only announces; the caller then waits through the scheduler (``run_until``) for the
state to change (:meth:`members` complete, ``end.peer`` set, :meth:`barrier_rounds` past its
round). The scheduler calls :meth:`progress` whenever nothing else can run, and declares a hang
only when it returns False (a transport with messages in flight must say so) and then
:meth:`world_idle` returns True (no other process can progress either). ``put``/``get``/
``accumulate``/``remote_notify`` run as a task of the issuing stream: they model the transfer
landing (the local transport completes them in the call; a transport whose transfers complete
later must complete them, in issue order per peer, before :meth:`fence` returns, and before a
later ``remote_notify`` to the same peer lands, as a notify on the hardware follows the writes
before it).

**Callers.** The control-plane hooks (worlds, publish, withdraw) are called with ``sim.lock``
held, except ``leave`` and ``memory_freed``; the data-plane hooks are called by the scheduler
while it runs a task (one task at a time per Sim), and directly by the NBI host calls and
``HcommChannelNotifyRecord``.

**Whole-job services.** Launching ranks (``pyhcomm.launch``), merging records
(:mod:`pyhcomm.sim.merge`) and the hang report call :meth:`processes`, :meth:`abort_all`,
:meth:`abort_origin`, :meth:`gather_results`, :meth:`gather`, :meth:`record_facts` and
:meth:`remote_hang_facts` on any transport: the base class answers for one process (every
rank here), so no caller asks which transport it has.

Errors: a hook raises :class:`TransportError` (a refused join, a freed or closed remote range at
run time); callers turn it into the HCCL code of the API (``HCCL_E_PARA`` for a join,
``HCCL_E_MEMORY`` for a transfer, which fails its stream).
"""
from __future__ import annotations

import os
import struct
from typing import NamedTuple


class TransportError(Exception):
    """What the transport refuses, in words (the caller adds the API and the HCCL code)."""


class _Value:
    """A small value, never changed once made; equal when its fields are. (Plain slotted classes,
    not frozen dataclasses or named tuples: they are made per channel end and read on every
    transfer, and a plain ``__init__`` and slot reads are the cheapest.)"""

    __slots__ = ()

    def _fields(self):
        return tuple(getattr(self, f) for f in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and other._fields() == self._fields()

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{f}={getattr(self, f)!r}' for f in self.__slots__)})"


class PeerRef(_Value):
    """Who is at the other end of a channel: a value, never a pointer to the peer's objects.

    ``world`` and ``rank`` name the peer, ``key`` the channel (both ends give the same one),
    ``end`` is the transport's own number for the peer's end (what it looks up first).
    """

    __slots__ = ("world", "rank", "key", "end")

    def __init__(self, world: int, rank: int, key: tuple, end: int = 0):
        self.world = world
        self.rank = rank
        self.key = key
        self.end = end


class RootKey(NamedTuple):
    """What names a root wherever it is used (the body of an ``HcclRootInfo``): the process that
    made it (``pid``), an id no other root has (``uid``, 16 random bytes), and ``address``, the
    root's id in every process of a job (a transport whose worlds span processes; 0: none, every
    rank of the root lives in the process that made it)."""

    pid: int
    uid: bytes
    address: int = 0

    FORMAT = struct.Struct("<Q16sQ")

    @classmethod
    def fresh(cls, address: int = 0) -> "RootKey":
        """A key made now in this process."""
        return cls(os.getpid(), os.urandom(16), address)

    def pack(self) -> bytes:
        return self.FORMAT.pack(self.pid, self.uid, self.address)

    @classmethod
    def unpack(cls, raw: bytes) -> "RootKey":
        return cls(*cls.FORMAT.unpack(raw))


class Region(NamedTuple):
    """A range of memory a channel end exposes to its peer: ``[start, start + size)``; ``label``
    says what it is in messages, ``tag`` is the ``HcclCommMemReg`` tag (None: its HCCL buffer)."""

    start: int
    size: int
    label: str
    tag: str | None = None


class RemoteNotify(_Value):
    """A notify of another rank's channel end, as a value (a task's ``notify`` field): ``owner``
    and ``index`` name it as its own rank does."""

    __slots__ = ("peer", "index", "owner")

    def __init__(self, peer: PeerRef, index: int, owner: str):
        self.peer = peer
        self.index = index
        self.owner = owner


class PeerInfo(_Value):
    """What one end knows of its peer's end once connected: ``ref`` (a :class:`PeerRef`),
    ``notifies`` (a :class:`RemoteNotify` per channel notify), ``regions`` (the :class:`Region`
    values it exposes now, its HCCL buffer first), ``closed`` (its rank destroyed its end)."""

    __slots__ = ("ref", "notifies", "regions", "closed")

    def __init__(self, ref: PeerRef, notifies: tuple, regions: tuple, closed: bool):
        self.ref = ref
        self.notifies = notifies
        self.regions = regions
        self.closed = closed

    @property
    def rank(self) -> int:
        return self.ref.rank


class Transport:
    """Base class; every hook raises ``NotImplementedError`` naming the transport and the hook."""

    name = "base"

    def __init__(self, sim):
        self.sim = sim
        self.launches = 0               # launches whose world this transport named (launch_world)

    def _missing(self, hook: str):
        return NotImplementedError(f"{self.name} transport: needs {hook}")

    # -- worlds (rendezvous) ---------------------------------------------------------------------
    def new_root(self) -> int:
        """A fresh root id (``HcclGetRootInfo``; ``HcclCommInitAll`` takes one too): a value every
        process can pass on in the root info bytes. Never blocks."""
        raise self._missing("new_root")

    def root_key(self, root: int) -> RootKey:
        """The :class:`RootKey` naming ``root`` in every Sim and process that may join it (what
        ``HcclGetRootInfo``'s bytes carry); the same key on every call. Never blocks."""
        raise self._missing("root_key")

    def root_of(self, key: RootKey) -> int:
        """This transport's root that ``key`` names: the root it made the key for, else (a key of
        another Sim of this process, or of another process) a root made on first use, the same for
        every later use of ``key``. Raises :class:`TransportError` when ``key`` can name no root
        here (the ranks of the process that made it cannot reach this one). Never blocks."""
        raise self._missing("root_of")

    def named_root(self, name: str, nranks: int) -> int:
        """The root every rank that names ``name`` (a rank-table path) joins: the same one until
        ``nranks`` ranks joined it, then a new one. Never blocks."""
        raise self._missing("named_root")

    def launch_world(self) -> str:
        """The name of the world of the next ``pyhcomm.launch`` whose ranks span this job's
        processes: each process's n-th launch gets the same name, so every process joins the same
        world without a root info to pass on. One process: the n-th launch of this transport."""
        self.launches += 1
        return f"pyhcomm.launch#{self.launches}"

    def join(self, root: int, nranks: int, rank: int, device: int) -> None:
        """Announce ``rank`` (on simulated ``device``) as a member of ``root``'s world of
        ``nranks``. Raises :class:`TransportError` when it is refused now (unknown root, another
        ``nranks``, the rank already joined, its device taken). Never blocks: wait for
        :meth:`members` to hold ``nranks`` ranks."""
        raise self._missing("join")

    def refused(self, root: int, rank: int):
        """Why the join of ``rank`` (of this process) to ``root``'s world was refused after
        :meth:`join` returned, else None (a transport that checks joins elsewhere answers later;
        in one process :meth:`join` refuses at once)."""
        return None

    def members(self, root: int):
        """``{rank: device}`` of the ranks joined so far (read only; a live view is fine)."""
        raise self._missing("members")

    def left(self, root: int):
        """The ranks that joined and then left (destroyed their communicator)."""
        raise self._missing("left")

    def leave(self, root: int, rank: int, joined: bool = True) -> None:
        """``rank`` is gone: it destroyed its communicator (``joined``), or its join gave up before
        the world was complete (``joined`` False: as if it never joined, it may join again)."""
        raise self._missing("leave")

    def barrier_arrive(self, root: int, rank: int) -> int:
        """``rank`` reached a host barrier of ``root``'s world; returns the round it arrived in
        (the barrier is over when :meth:`barrier_rounds` is past it). Never blocks."""
        raise self._missing("barrier_arrive")

    def barrier_rounds(self, root: int) -> int:
        """How many host-barrier rounds of ``root``'s world are complete."""
        raise self._missing("barrier_rounds")

    # -- channels --------------------------------------------------------------------------------
    def publish(self, end, key) -> None:
        """Offer this rank's channel ``end`` under ``key`` (both ends give the same key); connect
        it when the other end is there. Connecting sets ``end.peer`` (a :class:`PeerInfo`), then
        ``end.peer_ref`` (a :class:`PeerRef`), and settles the scheduler's waiters of the end
        (``sim.scheduler.settle(end)``). From ``end`` the transport reads values only: its
        ``rank``, ``peer_rank``, ``notifies`` (count and owner name) and what it exposes
        (``end.exposed()``: regions and their allocations, which stay in this process). Never
        blocks."""
        raise self._missing("publish")

    def peer_of(self, end) -> PeerInfo | None:
        """What this side knows of the peer's end of ``end`` once connected, else None. The
        transport keeps it current in ``end.peer`` (the peer closed, exposed memory was freed),
        which the data plane reads on every transfer's issue; this returns it."""
        return end.peer

    def withdraw(self, end) -> None:
        """This rank's ``end`` is gone (communicator destroyed): its peer sees it closed."""
        raise self._missing("withdraw")

    def device_storage(self, size: int):
        """The storage of a new device allocation of ``size`` bytes (``aclrtMalloc``, an HCCL
        buffer: what a channel end may expose): the backend's plain storage. A transport whose
        peers in other processes map exposed memory asks the backend for memory they can map
        (:meth:`~pyhcomm.backend.Backend.allocate_shared`). Called under no lock; never blocks."""
        return self.sim.backend.allocate(size)

    def memory_freed(self, alloc) -> None:
        """Local device memory ``alloc`` was freed: a peer it was exposed to no longer sees it
        (its ``PeerInfo.regions`` lose it). Called on every device free; never blocks."""

    # -- data plane ------------------------------------------------------------------------------
    def put(self, peer: PeerRef, remote: int, alloc, off: int, n: int) -> None:
        """Copy ``n`` bytes of the local allocation ``alloc`` at ``off`` to the peer's address
        ``remote`` (a range it exposed, checked at issue)."""
        raise self._missing("put")

    def get(self, peer: PeerRef, remote: int, alloc, off: int, n: int) -> None:
        """Copy ``n`` bytes at the peer's address ``remote`` into ``alloc`` at ``off``."""
        raise self._missing("get")

    def accumulate(self, peer: PeerRef, remote: int, alloc, off: int, count: int, np_dtype, op: int,
                   into_peer: bool) -> None:
        """Reduce ``count`` elements: the local ones into the peer's (``into_peer``, a
        WriteReduce), or the peer's into the local ones (a ReadReduce)."""
        raise self._missing("accumulate")

    def remote_notify(self, peer: PeerRef, index: int):
        """Record notify ``index`` of the peer's end; returns the generation it set when known
        (else None)."""
        raise self._missing("remote_notify")

    def fence(self, peer: PeerRef) -> None:
        """Every transfer issued to ``peer`` so far has landed (local: they land when issued)."""

    def ccu_signal(self, peer: PeerRef, cke: int, mask: int, variable=None) -> tuple:
        """A CCU's signal to the peer's end (``NotifyRecord``, ``WriteVariableWithNotify``): write
        ``variable`` (``(slot, value)``) into the end's variable slot first, when given, then set the
        bits of ``mask`` in its sync register ``cke`` (:mod:`pyhcomm.hcomm.resources.channel_registers`).
        Returns ``(RemoteNotify, generation or None)`` per bit set, lowest first."""
        raise self._missing("ccu_signal")

    def ccu_move(self, peer: PeerRef, remote: int, alloc, off: int, n: int, write: bool, np_dtype=None,
                 op=None) -> None:
        """A CCU's move between local ``alloc + off`` and ``remote``: device memory of the peer's device,
        exposed or not (the peer's memory token grants the CCU access, checked at issue). ``write``:
        local -> peer (else back); with ``np_dtype``, ``n`` elements reduced with ``op`` into the
        destination."""
        raise self._missing("ccu_move")

    def progress(self) -> bool:
        """Make progress on anything in flight; True when something happened (local: nothing to do).
        May wait a short poll interval, never longer."""
        return False

    def watch(self) -> bool:
        """Called by a scheduler that can run nothing and found nothing to progress: wait a few
        microseconds at most, cheaply, for something to arrive, and progress it; True when
        something happened (local: nothing will come, False at once)."""
        return False

    #: True when ranks of other processes may send messages (schedulers then poll: they never
    #: sleep long waiting for a wake-up nobody in this process will give)
    remote = False

    def world_idle(self) -> bool:
        """Called by a scheduler that can run nothing and has nothing to progress: True when no
        process can progress any more (then it fails the blocked waits with the hang report),
        False when another process may still send something (it polls again; this may wait a
        short poll interval). One process: True at once."""
        return True

    # -- whole-job services: launching ranks, merging records, hang reports -----------------------
    # (one process holds every rank: the defaults are what that means; a transport whose ranks
    # live in several processes answers for the whole job)
    def processes(self) -> tuple:
        """``(number of processes of the job, this one's)``: one process, ``(1, 0)``."""
        return 1, 0

    def abort_all(self, reason: str, rank=None) -> None:
        """``rank`` of this process failed: every blocking call of the job gives up with
        ``reason`` (here: this Sim's, through its scheduler)."""
        self.sim.scheduler.abort(reason)

    def abort_origin(self):
        """``(reason, rank)`` when an abort began in another process (or with a process's
        death), else None (one process: always None)."""
        return None

    def gather_results(self, root: int, nranks: int, mine: dict) -> list:
        """Every rank's result of ``root``'s world in rank order, given this process's ``mine``
        (rank -> result); blocks until every process sent its own (one process: ``mine`` holds
        them all)."""
        return [mine[r] for r in range(nranks)]

    def gather(self, value, root: int = 0):
        """Every process's ``value``, in process order, at process ``root`` (None elsewhere);
        every process of the job calls it, in the same order. One process: ``[value]`` (it is
        every root)."""
        return [value]

    def record_facts(self):
        """What the record of this process's Sim needs to be merged with the other processes'
        (:mod:`pyhcomm.sim.merge`: the process, the remote notify records sent per target
        notify, the generation each remote record that arrived here set, the rendezvous
        arrivals), or None: one process, nothing to merge."""
        return None

    def remote_hang_facts(self):
        """Every process's hang facts (``{process: facts}``) when the last hang detection spanned
        processes, else None (one process: the hang report reads this Sim)."""
        return None
