"""What a collective algorithm is: a descriptor the selector chooses from and the timing model reads.

An :class:`Algorithm` (``ring``, ``mesh``, ...) is a family of :class:`Implementation` values, one
per collective it runs (an ``HcclCMDType``). An implementation declares everything a caller needs
to run it and everything the timing model needs to cost it:

* ``issue(ctx, *args)``: the function that enqueues it with HCOMM primitives (:mod:`.context`);
  every implementation of one collective takes the arguments of :data:`ARGUMENTS`;
* ``slaves(call)``: the slave threads a rank asks for (the main thread is always there; a call
  gets at most :data:`~.context.MAX_SLAVES`);
* ``peers(call)``: the ranks a rank needs channels to (None: every rank);
* ``schedule(nranks, nbytes, ccl, elem[, per_server, per_pod])``: its steps with their bytes, as
  data (:class:`Local`, :class:`RingStep`, :class:`MeshPass`, :class:`Exchange`,
  :class:`Program`), from which :mod:`pyhcomm.timing.closed_form` derives its time; None where
  there is none (point-to-point).

A :class:`Call` is the call as the library sees it: the collective, the communicator's size and
this rank, the message size, the root or the point-to-point peers, and the facts a selection rule
may read (product, expansion mode, topology, data type, configuration). The selector
(:mod:`.selector`) maps a call to an algorithm; the catalogue (:mod:`.algorithms`) lists them.
docs/algorithms.md shows how to add an algorithm and a rule.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..defs.hccl_types import HcclCMDType, HcclOpExpansionMode
from . import patterns

Op = HcclCMDType
HOST = HcclOpExpansionMode.HCCL_OP_EXPANSION_MODE_HOST
AI_CPU = HcclOpExpansionMode.HCCL_OP_EXPANSION_MODE_AI_CPU

#: The arguments after ``ctx`` every implementation of a collective takes (bytes and addresses as
#: ints; counts in elements where a data type is given; sizes and displacements lists per rank).
ARGUMENTS = {
    Op.HCCL_CMD_ALLGATHER: "send, recv, nbytes",
    Op.HCCL_CMD_ALLGATHER_V: "send, recv, sizes, displs (bytes)",
    Op.HCCL_CMD_REDUCE_SCATTER: "send, recv, count, data_type, op",
    Op.HCCL_CMD_REDUCE_SCATTER_V: "send, recv, counts, displs, data_type, op",
    Op.HCCL_CMD_ALLREDUCE: "send, recv, count, data_type, op",
    Op.HCCL_CMD_REDUCE: "send, recv, count, data_type, op, root",
    Op.HCCL_CMD_BROADCAST: "buf, nbytes, root",
    Op.HCCL_CMD_SCATTER: "send, recv, nbytes, root",
    Op.HCCL_CMD_ALLTOALL: "send, recv, nbytes",
    Op.HCCL_CMD_ALLTOALLV: "send, send_sizes, send_displs, recv, recv_sizes, recv_displs (bytes)",
    Op.HCCL_CMD_ALLTOALLVC: "send, send_sizes, send_displs, recv, recv_sizes, recv_displs (bytes)",
    Op.HCCL_CMD_BARRIER: "",
    Op.HCCL_CMD_SEND: "items: (is_send, buf, nbytes, peer) tuples",
    Op.HCCL_CMD_RECEIVE: "items: (is_send, buf, nbytes, peer) tuples",
    Op.HCCL_CMD_BATCH_SEND_RECV: "items: (is_send, buf, nbytes, peer) tuples",
}


class Layout:
    """Where a communicator's ranks sit, as the algorithms group them: ``servers`` (each a tuple
    of its ranks, ascending; servers ordered by super pod, then server), ``pods`` (each a tuple of
    server indices). ``server_of[r]`` and ``pos[r]``: rank ``r``'s server and its position there;
    ``pod_of[s]`` and ``spos[s]``: server ``s``'s super pod and its position there."""

    def __init__(self, places):
        groups: dict = {}
        for r, pl in enumerate(places):
            key = (pl.super_pod, pl.server) if pl is not None else (0, -1 - r)
            groups.setdefault(key, []).append(r)
        keys = sorted(groups)
        self.servers = tuple(tuple(groups[k]) for k in keys)
        pods: dict = {}
        for i, k in enumerate(keys):
            pods.setdefault(k[0], []).append(i)
        self.pods = tuple(tuple(v) for _k, v in sorted(pods.items()))
        self.server_of, self.pos = {}, {}
        for i, ranks in enumerate(self.servers):
            for j, r in enumerate(ranks):
                self.server_of[r], self.pos[r] = i, j
        self.pod_of, self.spos = {}, {}
        for i, servers in enumerate(self.pods):
            for j, s in enumerate(servers):
                self.pod_of[s], self.spos[s] = i, j
        local = {}
        for r, pl in enumerate(places):
            local.setdefault(self.server_of[r], set()).add(getattr(pl, "local", self.pos[r]))
        #: every server's ranks are whole pairs of dies (devices 2k, 2k+1: one SIO link each), four or more
        self.paired = all(len(ds) >= 4 and all(x ^ 1 in ds for x in ds) for ds in local.values())
        #: the most ranks in one server; every server holds as many ranks, every super pod as many servers
        self.per_server = max((len(s) for s in self.servers), default=0)
        self.symmetric = len({len(s) for s in self.servers}) <= 1 and len({len(p) for p in self.pods}) <= 1

    @classmethod
    def regular(cls, servers: int, per_server: int, super_pods: int = 1) -> "Layout":
        """Ranks filled server by server (``servers`` split evenly among ``super_pods``)."""
        per_pod = max(1, -(-servers // super_pods))

        class _P:
            def __init__(self, server):
                self.server, self.super_pod = server, server // per_pod
        return cls([_P(r // per_server) for r in range(servers * per_server)])



_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def layout_of(world, nranks: int) -> Layout:
    """The :class:`Layout` of a communicator's world (computed once per world: its ranks' places
    do not change)."""
    got = _LAYOUTS.get(world)
    if got is None or len(got.server_of) != nranks:
        got = _LAYOUTS[world] = Layout([world.place(r) for r in range(nranks)])
    return got


def layout_for(ctx) -> Layout:
    """The :class:`Layout` of the communicator of a collective context (or the one a probe of the
    algorithm's peers carries: ``ctx.layout``)."""
    got = getattr(ctx, "layout", None)
    return got if got is not None else layout_of(ctx.comm.world, ctx.nranks)


class Topology:
    """Where a communicator's ranks sit, as selection rules read it: ``servers``, ``super_pods``,
    ``per_server`` (the most ranks in one server), ``symmetric`` and the :class:`Layout`. Built
    from a communicator's world (computed on first read), or given outright (:meth:`fixed`, for
    tables and tests)."""

    __slots__ = ("_world", "_nranks", "_layout")

    def __init__(self, world, nranks: int):
        self._world, self._nranks, self._layout = world, nranks, None

    @classmethod
    def fixed(cls, servers: int = 1, per_server: int = 1, super_pods: int = 1) -> "Topology":
        t = cls(None, 0)
        t._layout = Layout.regular(servers, per_server, super_pods)
        return t

    @classmethod
    def of(cls, layout: Layout) -> "Topology":
        """The topology of a given :class:`Layout`."""
        t = cls(None, 0)
        t._layout = layout
        return t

    @property
    def layout(self) -> Layout:
        if self._layout is None:
            self._layout = layout_of(self._world, self._nranks)
        return self._layout

    @property
    def servers(self) -> int:
        return len(self.layout.servers)

    @property
    def per_server(self) -> int:
        return self.layout.per_server

    @property
    def super_pods(self) -> int:
        return len(self.layout.pods)

    @property
    def symmetric(self) -> bool:
        return self.layout.symmetric

    def __repr__(self):
        return f"Topology(servers={self.servers}, per_server={self.per_server}, super_pods={self.super_pods})"


@dataclass(frozen=True)
class Call:
    """One collective call as the library sees it (one rank's view; every rank sees the same
    facts but ``rank``). ``nbytes``: the count argument times the element size, as HCCL's
    selection counts a call (AllGather: ``sendCount``; ReduceScatter, Scatter: ``recvCount``;
    AllReduce, Reduce, Broadcast: ``count``; AlltoAll: ``sendCount`` per peer; the ``V`` calls:
    the largest count; point-to-point: the bytes of this rank's items)."""

    op: HcclCMDType
    nranks: int
    nbytes: int = 0
    rank: int = 0
    root: Optional[int] = None
    peers: tuple = ()                   # point-to-point: the ranks this rank's items name
    family: str = "A2"                  # the product family (pyhcomm.products)
    product: str = ""                   # the product's name
    expansion: HcclOpExpansionMode = HOST   # where the call is orchestrated (HOST: Atlas A2; AI_CPU: A3, 350)
    topology: Topology = field(default_factory=Topology.fixed)
    data_type: Optional[int] = None     # HcclDataType of a call that has one
    reduce_op: Optional[int] = None     # HcclReduceOp of a reducing call
    deterministic: int = 0              # the communicator's HCCL_DETERMINISTIC
    algo_config: str = ""               # the communicator's hcclAlgo configuration (HCCL_ALGO syntax), as given
    algo: tuple = ("", "", "", "")      # this collective's level0..level3 of hcclAlgo, else HCCL_ALGO ("": not set)


def every_rank(call: Call) -> None:
    """The peers of an algorithm that connects every rank to every other."""
    return None


def ring_peers(call: Call) -> list:
    """``[left, right]`` (one peer for 2 ranks, none for 1)."""
    return patterns.ring_peers(call.rank, call.nranks)


def root_peers(call: Call) -> list:
    """A star around the root: every rank for the root, the root for the others."""
    return list(range(call.nranks)) if call.rank == call.root else [call.root]


def item_peers(call: Call) -> list:
    """Point-to-point: the ranks this rank's items name."""
    return sorted(set(call.peers))


def no_slaves(call: Call) -> int:
    return 0


@dataclass(frozen=True)
class Implementation:
    """One algorithm's implementation of one collective (see the module docstring)."""

    op: HcclCMDType
    issue: Callable
    slaves: Callable[[Call], int] = no_slaves
    peers: Callable[[Call], Optional[list]] = every_rank
    schedule: Optional[Callable] = None


def one_thread(nranks: int) -> int:
    """A level that runs on the main thread only: no slave."""
    return 0


@dataclass(frozen=True)
class Level:
    """An algorithm as one level of a collective runs it: one loop, among the ranks of a
    :class:`~.segments.Group` ``g``, on segments (:mod:`.segments`), landing what it receives at
    offset ``land`` of the HCCL buffers. The drivers (:mod:`.drive`) run a flat collective with it;
    the hierarchy (:mod:`.algorithms.hierarchy`) composes levels of different algorithms.

    * ``rs(g, slices, red, land)``: ``slices[i]`` (one segment per rank, modifiable) end reduced
      over the group in ``slices[g.rank]``;
    * ``ag(g, slices, land)``: ``slices[g.rank]`` ends in every rank's ``slices[g.rank]``;
    * ``ar(g, seg, red, land)``: ``seg`` ends reduced over the group on every rank;
    * ``bcast(g, seg, root, land)``, ``scatter(g, slices, root, land)`` (the root's slices are read
      only; the others' are work space), ``gather(g, slices, root, land)``,
      ``reduce(g, seg, root, red, land)`` (``seg`` modifiable work space; the result on the root).

    ``slaves(nranks)``: the slave threads it runs on (the ranks it talks to are its steps'
    own: :func:`.drive.probe_peers`); ``land_per_byte(nranks)``: landing bytes it needs per byte of the vector.
    Its steps give every collective it drives a schedule (:func:`.drive.schedule_of`)."""

    name: str
    rs: Optional[Callable] = None
    ag: Optional[Callable] = None
    ar: Optional[Callable] = None
    bcast: Optional[Callable] = None
    scatter: Optional[Callable] = None
    gather: Optional[Callable] = None
    reduce: Optional[Callable] = None
    slaves: Callable = one_thread
    land_per_byte: Callable = lambda nranks: 1.0


@dataclass(frozen=True)
class Algorithm:
    """A family of implementations under one name (the name goes into the record: the
    ``algorithm`` of a ``Collective`` marker); ``level``: how it runs as one level of a
    hierarchical collective (None: it does not)."""

    name: str
    summary: str
    implementations: tuple
    level: Optional[Level] = None

    def __post_init__(self):
        ops = [i.op for i in self.implementations]
        if len(set(ops)) != len(ops):
            raise ValueError(f"algorithm {self.name!r} implements a collective twice")

    @property
    def ops(self) -> frozenset:
        return frozenset(i.op for i in self.implementations)

    def implementation(self, op) -> Implementation:
        for i in self.implementations:
            if i.op == op:
                return i
        raise KeyError(f"algorithm {self.name!r} does not implement {Op(op).name}")


# -- steps: what an implementation does, as data (the closed forms read them) ---------------------
# Sizes are bytes: an int (the same on every rank) or a numpy array over the ranks (rank r's entry:
# what rank r moves; 0: rank r issues no task for it, but keeps every handshake).

@dataclass(frozen=True)
class Local:
    """``times`` local tasks on every rank's main thread: a ``LocalCopy`` (``what == "copy"``) or a
    ``LocalReduce`` (``"reduce"``) of ``nbytes``."""

    what: str
    nbytes: object
    times: int = 1


@dataclass(frozen=True)
class RingStep:
    """One ring step on the main thread (:func:`.patterns.ring_step`): record the left
    neighbour's ACK, wait for its own ACK (the right neighbour's record), write ``write`` bytes
    to the right neighbour, record its DATA, wait for its own DATA (the left neighbour's); then a
    local ``after`` (``"copy"`` or ``"reduce"``) of ``local`` bytes."""

    write: object
    local: object
    after: str


@dataclass(frozen=True)
class MeshPass:
    """One exchange with every peer (:func:`.patterns.mesh`): the peers in groups of at most
    ``width`` threads (the main thread among them when ``main_too``); per group the main thread
    releases the slaves it uses (a record each, the slave waits), every thread runs one exchange
    (a staging ``LocalCopy`` of ``nbytes`` first when ``stage``; record the peer's ACK, wait for
    its own, write ``nbytes``, record the peer's DATA, wait for its own), and the main thread waits
    for each slave. ``rotated``: each group ordered from ``rank + 1`` on."""

    nbytes: int
    width: int
    main_too: bool = True
    stage: bool = False
    rotated: bool = False

    def groups(self, rank: int, nranks: int) -> list:
        """Rank ``rank``'s peers, group by group (the cut every rank makes: pairs meet in the
        same group on both sides)."""
        peers = [q for q in range(nranks) if q != rank]
        order = (lambda q: (q - rank) % nranks) if self.rotated else None
        return patterns.mesh_groups(rank, nranks, peers, self.width, order)


@dataclass(frozen=True)
class Exchange:
    """One step of every rank's main thread, rank by rank (:func:`.segments.exchange`; arrays over
    the ranks): rank ``r`` records the ACK of ``frm[r]``, waits for the ACK of ``to[r]``, writes
    ``writes[r]`` (one transfer per byte count) to it and records its DATA, waits for the DATA of
    ``frm[r]``, then runs ``locals[r]`` (one ``after`` task per byte count: ``"copy"`` or
    ``"reduce"``). ``-1``: no such peer (that side and its signals are skipped); a step of local
    tasks alone has neither."""

    to: tuple
    frm: tuple
    writes: tuple
    locals: tuple
    after: str = "copy"


@dataclass(frozen=True)
class Program:
    """Every rank's tasks in the order its program issues them, on any of its threads: the
    schedule of a collective whose steps run on several threads, or differ between the ranks
    (:func:`.drive.probe_schedule`). ``ranks[r]`` is rank ``r``'s tasks, each a tuple:

    * ``("rec", t, q, idx)``: thread ``t`` records rank ``q``'s channel notify ``idx``;
      ``("wait", t, q, idx)``: thread ``t`` waits for its notify ``idx`` of the channel to ``q``
      (the ``k``-th wait for ``(q, idx)`` consumes ``q``'s ``k``-th record of it);
    * ``("trec", t, u, idx)``: thread ``t`` records thread ``u``'s notify ``idx`` (same rank);
      ``("twait", t, idx)``: thread ``t`` waits for its own notify ``idx``;
    * ``("write", t, q, n)`` / ``("read", t, q, n)``: ``n`` bytes to / from rank ``q``;
    * ``("local", t, what, n)``: a ``LocalCopy`` (``what == "copy"``) or ``LocalReduce``
      (``"reduce"``) of ``n`` bytes.

    Threads are numbers: 0 the main thread, 1.. its slaves."""

    ranks: tuple


#: The smallest slot the HCCL buffer is cut into (EX05 aligns slots to 128 bytes).
MIN_SLOT = 128
#: The largest slot a collective uses.
SLOT_CAP = 256 << 20


def slot_size(ccl: int, parts: int, cap: int = SLOT_CAP) -> int:
    """Bytes per slot when an HCCL buffer of ``ccl`` bytes is cut into ``parts`` slots: a multiple
    of :data:`MIN_SLOT`, at most ``cap`` (0 when not even one fits; :func:`.context.slot_bytes`
    refuses that)."""
    return min(cap, ccl // parts // MIN_SLOT * MIN_SLOT)
