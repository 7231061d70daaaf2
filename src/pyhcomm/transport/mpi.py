"""The MPI transport: the ranks of a world live in several processes (one MPI process per rank,
or more ranks per process), on one machine or many, joined by MPI (``mpi4py``).

Each process has its own Sim; its transport speaks to the other processes through the process's
:class:`~.mpi_link.Link`. What the contract of :mod:`.base` asks, done with messages:

* **Worlds.** A root id names the process that made it, and no two Sims of that process make the
  same one (``HcclGetRootInfo``: the id travels in the root info bytes the program broadcasts, e.g.
  with ``comm.bcast``, as the key's ``address``). A Sim of that process other than the one that
  made the root (a launch's) takes its world over on first use, with the joins already counted
  there. A rank's join goes to that process, which checks it (the number of ranks, a rank or device
  given twice) and, once the world is complete, sends every member process the table of ranks,
  devices and processes. A refused join is answered with the reason; the joining rank then fails
  at once. A rank-table world (``HcclCommInitClusterInfo``) belongs to a process chosen from the
  table's path. Host barriers count arrivals at the root's process.
* **Channels.** Publishing an end sends its description (rank, notifies, the memory it exposes:
  its HCCL buffer and registered memory) to the process of the peer rank; the two ends connect
  where both descriptions meet, on each side. Closing an end or freeing memory it exposes sends
  the change to the peer's process.
* **Exposed memory, one-sided transfers.** Every end exposes its memory to the transport under a
  process-wide id (``PeerRef.end``, whose high bits name the process). With processes on the same
  machine (the link's *near* processes, :mod:`.mpi_shm`), device memory is shared storage
  (:meth:`device_storage`): an end's description carries, per exposed region, the handle of the
  allocation behind it, the peer maps it on first use, and a write, read or reduce is a direct
  copy (or reduce) into or out of the target's storage, done when the task runs. Otherwise (other
  machines, ``PYHCOMM_MPI_SHM=0``, memory that could not be shared or mapped) a write sends the
  bytes (inline when small, else a second message received in place, straight into the target's
  device memory); a read sends a request answered with the bytes; a reduce sends the operands and
  the target reduces into its memory (a read-reduce reads, then reduces here). Transfers between
  ranks of this process are direct copies.
* **Notifies.** A remote record follows the writes before it: a ring of the target's doorbell
  (near processes) or a message, both handled by the target after every message sent to it
  before (MPI keeps the order per pair of processes; writes to a third process are fenced first);
  the 1-bit register of the peer is set when the target handles it. The generation it set is
  known only there (``remote_notify`` returns None; the target's record has it).
* **Progress, hangs, failures.** ``progress`` serves what arrived; ``world_idle`` is true only
  when every process of the job is idle with nothing in flight, and the hang report then holds
  the facts of every process. A process that raises tells the others (their blocking calls give
  up naming its ranks); one that dies is found by its silence (:mod:`.mpi_liveness`, :mod:`.mpi_failures`).
* **Start.** Making the transport (a Sim whose configuration says MPI) starts nothing; the
  process's link, and with it MPI and the heartbeat thread, starts at the transport's first use
  that needs another process (:meth:`MpiTransport.started`).
"""
from __future__ import annotations

import itertools
import zlib

import numpy as np

from .base import PeerInfo, PeerRef, RemoteNotify, RootKey, Transport, TransportError
from .mpi_failures import LinkError
from .mpi_link import LinkSettings, link
from .mpi_regions import PeerMemory, share_handles
from .mpi_wire import ACC, BULK, GET, GOT, NOTIFY, PUT

#: data types a reduce can carry (index in this table: word 7 of the header)
_DTYPE_NAMES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "float32",
                "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn",
                "int4", "uint4", "complex64", "complex128", "bool")


def _dtype_code(np_dtype) -> int:
    name = np.dtype(np_dtype).name
    try:
        return _DTYPE_NAMES.index(name)
    except ValueError:
        raise TransportError(f"the MPI transport cannot carry data type {name}") from None


def _dtype_of(code: int):
    name = _DTYPE_NAMES[code]
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))


def _bytes_of(backend, storage, off: int, n: int):
    """The live uint8 array of ``n`` bytes at ``off`` in ``storage``, through the backend's view
    (host-addressable storage only)."""
    try:
        return backend.view(storage, off, n)
    except NotImplementedError:
        raise TransportError("the MPI transport moves host-addressable storage only (the CPU backend)") from None


class _World:
    """What this process knows of one root's world."""

    __slots__ = ("nranks", "members", "procs", "left", "rounds", "arrived", "complete", "refused")

    def __init__(self, nranks=None):
        self.nranks = nranks
        self.members: dict = {}     # rank -> device (this process's joins at once; all when complete)
        self.procs: dict = {}       # rank -> process (complete worlds; the root's process: as they join)
        self.left: set = set()
        self.rounds = 0             # host-barrier rounds complete
        self.arrived: dict = {}     # root's process: round -> arrivals
        self.complete = False
        self.refused: dict = {}     # rank (of this process) -> why its join was refused


class _Desc:
    """A channel end of another process, as it described itself."""

    __slots__ = ("key", "world", "rank", "peer_rank", "tid", "owners", "regions", "handles", "closed")

    def __init__(self, key, world, rank, peer_rank, tid, owners, regions, handles):
        self.key, self.world, self.rank, self.peer_rank, self.tid = key, world, rank, peer_rank, tid
        self.owners, self.regions, self.handles, self.closed = owners, regions, handles, False


class MpiTransport(Transport):
    """Ranks in many processes (see the module docstring). ``sim.config`` says how the process's
    link runs (:class:`~.mpi_link.LinkSettings`: ``PYHCOMM_MPI_LIVENESS``, ``PYHCOMM_MPI_SHM``).

    Made, it starts nothing: the link (MPI, the heartbeat thread) starts at the first use that
    needs another process (:meth:`started`: a root, a join, a channel, the job's processes, a
    gather); until then the transport is one process's (:meth:`progress` has nothing to do,
    :meth:`world_idle` is true, nothing can come from elsewhere)."""

    name = "mpi"
    remote = True           # ranks may live in other processes (schedulers poll, never sleep long)

    def __init__(self, sim):
        super().__init__(sim)
        cfg = sim.config
        self.settings = LinkSettings.of(cfg)
        self.link = None                # the process's link, once started
        self.me = None                  # this process's number in the job, once started
        #: device memory is shared storage (processes of this machine map what an end exposes);
        #: before the link starts, as the launcher's variables say it will be
        self.shares = cfg.mpi_shm and cfg.launcher_size > 1 and (cfg.launcher_local_size or cfg.launcher_size) > 1
        self._ends = itertools.count(1)
        self.worlds: dict = {}          # root -> _World
        self.named: dict = {}           # rank-table path -> [generation, root]
        self.keys: dict = {}            # root -> its RootKey (root_key)
        self.ends: dict = {}            # tid -> this process's end
        self.spans: dict = {}           # tid -> [(start, stop, allocation)] it exposes
        self.exposers: dict = {}        # allocation -> the ends exposing it
        self.local: dict = {}           # channel key -> {rank: end of this process}
        self.remote_descs: dict = {}    # channel key -> {rank: _Desc of another process}
        self.results: dict = {}         # root -> {rank: result} (pyhcomm.launch)
        # what merging the records of the processes needs (pyhcomm.sim.merge)
        self.notifies_sent: dict = {}   # (end id, notify index) of another process -> records sent
        self.arrivals: dict = {}        # (origin process, end id, index) -> the generation each arrival set
        self.meetings: list = []        # rendezvous arrivals of this process's ranks (see _meet)
        self.peer_memory = PeerMemory(sim.backend)     # memory of near processes, mapped here
        self.direct = 0                 # transfers done directly in a near process's memory

    def started(self):
        """The process's link, started on the first call (MPI initialised unless the program did,
        the heartbeat thread, the hellos to the other processes); this transport then receives
        what has no other route (the newest to start in the process). Raises ``ValueError`` when
        the link already runs with other settings (another Sim's)."""
        ln = self.link
        if ln is None:
            ln = link(self.settings)
            self.me = ln.me
            self.shares = self.settings.shm and ln.near.mailbox is not None
            ln.snapshotter = self._snapshot
            ln.handlers = self
            self.link = ln
        return ln

    # -- worlds ----------------------------------------------------------------------------------
    def _route(self, root) -> _World:
        w = self.worlds.get(root)
        if w is None:
            w = self.worlds[root] = _World()
            self.started().routes_root[root] = self
        return w

    def launch_world(self) -> str:
        """The n-th launch of this process, whichever of its Sims makes it (the link counts them:
        one per process, as the job's other processes count theirs)."""
        return f"pyhcomm.launch#{self.started().launch_number()}"

    def new_root(self) -> int:
        ln = self.started()
        root = (ln.me << 32) | ln.root_number()
        self._route(root)
        return root

    def root_key(self, root) -> RootKey:
        key = self.keys.get(root)
        if key is None:
            self._route(root)
            key = self.keys[root] = RootKey.fresh(root)
        return key

    def root_of(self, key) -> int:
        root = key.address
        if root == 0:
            raise TransportError(f"it was made without MPI (in process {key.pid}): ranks of other processes "
                                 "cannot join it")
        owner, nprocs = root >> 32, self.started().nprocs
        if owner >= nprocs:
            raise TransportError(f"it names MPI process {owner}, and this job has {nprocs} (0..{nprocs - 1})")
        if root not in self.worlds:
            other = self.link.routes_root.get(root)
            if other is not None and other is not self and root in other.worlds:
                # another Sim of this process made or used it: the same world, and what arrives
                # for it (joins to count, the table of members) comes here from now on
                self.worlds[root] = other.worlds[root]
                self.link.routes_root[root] = self
            else:
                self._route(root)
        return root

    def named_root(self, name: str, nranks: int) -> int:
        entry = self.named.get(name)
        if entry is None:
            entry = self.named[name] = [0, None]
        elif entry[1] is not None and self.worlds[entry[1]].complete:
            entry[0] += 1
            entry[1] = None
        if entry[1] is None:
            crc = zlib.crc32(str(name).encode())
            owner = crc % self.started().nprocs
            entry[1] = (owner << 32) | (1 << 31) | ((crc & 0x7FFFF) << 12) | (entry[0] & 0xFFF)
            self._route(entry[1]).nranks = nranks
        return entry[1]

    def join(self, root, nranks, rank, device) -> None:
        w = self._route(root)
        if w.nranks is not None and w.nranks != nranks:
            raise TransportError(f"nRanks {nranks} differs from {w.nranks} given by another rank")
        if rank in w.members:
            raise TransportError(f"rank {rank} already joined")
        w.refused.pop(rank, None)
        w.members[rank] = device
        self.link.failures.owners.setdefault(self.me, set()).add(rank)
        self.link.send_ctrl(root >> 32, ("join", root, nranks, rank, device))
        if rank in w.refused:   # the root is this process: refused at once
            why = w.refused.pop(rank)
            w.members.pop(rank, None)
            raise TransportError(why)
        self._meet(("init", root), nranks, rank, device)

    def members(self, root):
        w = self.worlds.get(root)
        if w is None:
            raise TransportError(f"root {root} is unknown to this process")
        return w.members

    def refused(self, root, rank):
        w = self.worlds.get(root)
        return None if w is None else w.refused.get(rank)

    def left(self, root):
        return self._route(root).left

    def leave(self, root, rank, joined=True) -> None:
        w = self._route(root)
        if joined:
            w.left.add(rank)
            for p in set(w.procs.values()):
                if p != self.me:
                    self.link.send_ctrl(p, ("left", root, rank))
        else:
            w.members.pop(rank, None)
            self.meetings = [m for m in self.meetings if m[:2] != (("init", root), rank)]
            if w.refused.pop(rank, None) is None:   # a refused join was never counted there
                self.link.send_ctrl(root >> 32, ("unjoin", root, rank))
        self.sim.scheduler.poke()

    def barrier_arrive(self, root, rank) -> int:
        w = self._route(root)
        now = w.rounds
        self.link.send_ctrl(root >> 32, ("arrive", root, now))
        self._meet(("barrier", root, now), w.nranks, rank, w.members.get(rank))
        return now

    def _meet(self, key, nranks, rank, device) -> None:
        """Note that ``rank``'s host program (the caller) arrives at rendezvous ``key`` of a world of
        ``nranks`` now: before the record's next seq and after its steps so far. One process records
        no ``Rendezvous`` of a world that spans processes; :mod:`pyhcomm.sim.merge` makes it from these."""
        rec = self.sim.record
        if rec.enabled:
            world = self.sim.roots.get(key[1])
            self.meetings.append((key, rank, nranks, device) + rec.position()
                                 + (world.name if world is not None else f"hccl_world_{key[1]}",))

    def barrier_rounds(self, root) -> int:
        return self._route(root).rounds

    def _on_join(self, src, root, nranks, rank, device) -> None:
        w = self._route(root)
        why = None
        if w.nranks is None:
            w.nranks = nranks
        if w.nranks != nranks:
            why = f"nRanks {nranks} differs from {w.nranks} given by another rank"
        elif rank in w.procs and not (w.complete and rank in w.left):
            why = f"rank {rank} already joined"
        else:
            for other, dev in w.members.items():
                if dev == device and other != rank and other in w.procs and other not in w.left:
                    why = f"rank {rank} and rank {other} are both on device {device}"
                    break
        if why is not None:
            if src == self.me:
                w.refused[rank] = why
            else:
                self.link.send_ctrl(src, ("refused", root, rank, why))
            return
        w.members[rank] = device
        w.procs[rank] = src
        if len(w.procs) >= w.nranks:
            table = ("members", root, w.nranks, dict(w.members), dict(w.procs))
            for p in sorted(set(w.procs.values())):
                self.link.send_ctrl(p, table)

    def on_ctrl(self, src, msg) -> None:
        kind = msg[0]
        handler = getattr(self, "_ctrl_" + kind, None)
        if handler is None:
            raise TransportError(f"unknown control message {kind!r} from MPI process {src}")
        handler(src, *msg[1:])
        self.sim.scheduler.poke()

    def _ctrl_join(self, src, root, nranks, rank, device):
        self._on_join(src, root, nranks, rank, device)

    def _ctrl_refused(self, src, root, rank, why):
        w = self._route(root)
        w.members.pop(rank, None)
        w.refused[rank] = why

    def _ctrl_unjoin(self, src, root, rank):
        w = self._route(root)
        if not w.complete:
            w.members.pop(rank, None)
            w.procs.pop(rank, None)

    def _ctrl_members(self, src, root, nranks, members, procs):
        w = self._route(root)
        w.nranks = nranks
        w.members.clear()
        w.members.update(members)
        w.procs = dict(procs)
        w.complete = True
        for rank, p in procs.items():
            self.link.failures.owners.setdefault(p, set()).add(rank)

    def _ctrl_left(self, src, root, rank):
        self._route(root).left.add(rank)

    def _ctrl_arrive(self, src, root, round_):
        w = self._route(root)
        w.arrived[round_] = w.arrived.get(round_, 0) + 1
        if w.arrived[round_] >= w.nranks:
            del w.arrived[round_]
            for p in sorted(set(w.procs.values())):
                self.link.send_ctrl(p, ("rounds", root, round_ + 1))

    def _ctrl_rounds(self, src, root, rounds):
        w = self._route(root)
        w.rounds = max(w.rounds, rounds)

    # -- channels --------------------------------------------------------------------------------
    def publish(self, end, key) -> None:
        self.started()
        tid = (self.me << 32) | next(self._ends)
        end.key, end.tid = key, tid
        self.ends[tid] = end
        self.link.routes_end[tid] = self
        spans, regions = [], []
        for region, alloc in end.exposed():
            spans.append((region.start, region.start + region.size, alloc))
            regions.append(region)
            self.exposers.setdefault(alloc, []).append(end)
        handles = share_handles(self.sim.backend, end.exposed(), self.shares)
        self.spans[tid] = spans
        self.local.setdefault(key, {})[end.rank] = end
        proc = self._proc_of(end.world_id, end.peer_rank)
        owners = tuple(n.owner for n in end.notifies)
        desc = ("publish", key, end.world_id, end.rank, end.peer_rank, tid, owners, tuple(regions), handles)
        if proc == self.me:
            other = self.local[key].get(end.peer_rank)
            if other is not None and other is not end and not other.closed:
                self._pair_local(end, other)
        else:
            self.link.send_ctrl(proc, desc)
            d = self.remote_descs.get(key, {}).get(end.peer_rank)
            if d is not None and not d.closed and d.peer_rank == end.rank:
                self._connect(end, d)

    def device_storage(self, size: int):
        """Shared storage where processes of this machine may map it (see the module docstring);
        the backend's plain storage when it has none to give."""
        if self.shares:
            storage = self.sim.backend.allocate_shared(size)
            if storage is not None:
                return storage
        return self.sim.backend.allocate(size)

    def _proc_of(self, root, rank) -> int:
        w = self.worlds.get(root)
        if w is None or rank not in w.procs:
            if w is not None and rank in w.members and root >> 32 == self.me:
                return self.me
            raise TransportError(f"rank {rank} of world {root} is not a known member")
        return w.procs[rank]

    def _pair_local(self, end, other) -> None:
        end.peer_ref = PeerRef(other.world_id, other.rank, other.key, other.tid)
        other.peer_ref = PeerRef(end.world_id, end.rank, end.key, end.tid)
        end.peer = self._describe_local(other, end.peer_ref)
        other.peer = self._describe_local(end, other.peer_ref)
        self.sim.scheduler.settle(other)
        self.sim.scheduler.settle(end)

    @staticmethod
    def _describe_local(end, ref) -> PeerInfo:
        if end.closed:
            return PeerInfo(ref, (), (), True)
        regions = tuple(region for region, alloc in end.exposed() if not alloc.freed)
        return PeerInfo(ref, tuple(RemoteNotify(ref, n.index, n.owner) for n in end.notifies), regions, False)

    def _connect(self, end, d: _Desc) -> None:
        ref = PeerRef(d.world, d.rank, d.key, d.tid)
        end.peer_ref = ref
        end.peer = PeerInfo(ref, tuple(RemoteNotify(ref, i, o) for i, o in enumerate(d.owners)), d.regions, False)
        self._map_spans(d.tid, d.regions, d.handles)
        self.sim.scheduler.settle(end)

    def _map_spans(self, tid, regions, handles) -> None:
        """Note which regions of the peer end ``tid`` this process may write directly (a near
        process's shared storage, :mod:`.mpi_regions`)."""
        near = self.shares and (tid >> 32) in self.link.near.procs
        self.peer_memory.note(tid, regions, handles, near)

    def _ctrl_publish(self, src, key, world, rank, peer_rank, tid, owners, regions, handles=()):
        d = _Desc(key, world, rank, peer_rank, tid, owners, regions, handles)
        self.remote_descs.setdefault(key, {})[rank] = d
        end = self.local.get(key, {}).get(peer_rank)
        if end is not None and not end.closed and end.peer_rank == rank:
            self._connect(end, d)

    def _facing(self, key, rank):
        """This process's end of channel ``key`` whose peer is ``rank``, or None."""
        for end in self.local.get(key, {}).values():
            if end.peer_rank == rank:
                return end
        return None

    def _ctrl_closed(self, src, key, rank, tid):
        d = self.remote_descs.get(key, {}).get(rank)
        if d is not None and d.tid == tid:
            d.closed = True
        end = self._facing(key, rank)
        if end is not None and end.peer_ref is not None and end.peer_ref.end == tid:
            end.peer = PeerInfo(end.peer_ref, (), (), True)
        self._map_spans(tid, (), ())

    def _ctrl_regions(self, src, key, rank, tid, regions, handles=()):
        d = self.remote_descs.get(key, {}).get(rank)
        if d is not None and d.tid == tid:
            d.regions, d.handles = regions, handles
        end = self._facing(key, rank)
        if end is not None and end.peer_ref is not None and end.peer_ref.end == tid and not end.peer.closed:
            p = end.peer
            end.peer = PeerInfo(p.ref, p.notifies, regions, False)
            self._map_spans(tid, regions, handles)

    def _tell_peer(self, end, msg) -> None:
        proc = self._proc_of(end.world_id, end.peer_rank)
        if proc == self.me:
            ref = end.peer_ref
            if ref is not None:
                peer = self.ends.get(ref.end)
                if peer is not None and not peer.closed and peer.peer_ref is not None and peer.peer_ref.end == end.tid:
                    peer.peer = self._describe_local(end, peer.peer_ref)
        else:
            self.link.send_ctrl(proc, msg)

    def withdraw(self, end) -> None:
        end.closed = True
        if end.peer_ref is not None:
            self._map_spans(end.peer_ref.end, (), ())   # nothing writes through this end any more
        if end.tid is not None:
            self._tell_peer(end, ("closed", end.key, end.rank, end.tid))
        self.sim.scheduler.poke()

    def memory_freed(self, alloc) -> None:
        for end in self.exposers.pop(alloc, ()):
            if not end.closed:
                kept = [(region, a) for region, a in end.exposed() if not a.freed]
                self._tell_peer(end, ("regions", end.key, end.rank, end.tid, tuple(r for r, _a in kept),
                                      share_handles(self.sim.backend, kept, self.shares)))

    # -- data plane: origin ----------------------------------------------------------------------
    def _local_target(self, tid, remote, n):
        """Storage and offset of ``remote`` in the memory end ``tid`` of this process exposes."""
        for start, stop, alloc in self.spans.get(tid, ()):
            if start <= remote < stop:
                if alloc.storage is None:
                    break
                return alloc.storage, remote - alloc.addr
        raise TransportError(f"0x{remote:x} is no longer exposed memory (freed)")

    def _send(self, peer, op, remote, alloc, off, n, aux=0, extra=0):
        payload = _bytes_of(self.sim.backend, alloc.storage, off, n) if self.sim.data else None
        proc = peer.end >> 32
        try:
            self.link.send_data(proc, op, peer.end, remote, n, aux, 0, extra, payload)
        except LinkError as why:
            raise TransportError(str(why)) from None
        self.link.dirty.add(proc)

    def put(self, peer, remote, alloc, off, n) -> None:
        if peer.end >> 32 == self.me:
            storage, roff = self._local_target(peer.end, remote, n)
            self.sim.backend.copy(storage, roff, alloc.storage, off, n)
            return
        mapped = self.peer_memory.find(peer.end, remote, n)
        if mapped is not None:
            self.sim.backend.copy(mapped[0], mapped[1], alloc.storage, off, n)
            self.direct += 1
            return
        self._send(peer, PUT, remote, alloc, off, n)

    def _read(self, peer, remote, n):
        """Read ``n`` bytes of the peer's ``remote`` into a fresh array (None in data-less mode)."""
        link_ = self.link
        rid = link_.request_id()
        into = np.empty(n, np.uint8) if self.sim.data else None
        if into is not None:
            link_.reads[rid] = into
        try:
            link_.send_data(peer.end >> 32, GET, peer.end, remote, n, 0, rid, int(self.sim.data))
            link_.wait(lambda: rid in link_.done, "a read to be answered")
        except LinkError as why:
            link_.reads.pop(rid, None)
            raise TransportError(str(why)) from None
        link_.done.discard(rid)
        return into

    def get(self, peer, remote, alloc, off, n) -> None:
        if peer.end >> 32 == self.me:
            storage, roff = self._local_target(peer.end, remote, n)
            self.sim.backend.copy(alloc.storage, off, storage, roff, n)
            return
        mapped = self.peer_memory.find(peer.end, remote, n)
        if mapped is not None:
            self.sim.backend.copy(alloc.storage, off, mapped[0], mapped[1], n)
            self.direct += 1
            return
        data = self._read(peer, remote, n)
        if data is not None:
            _bytes_of(self.sim.backend, alloc.storage, off, n)[:] = data

    def accumulate(self, peer, remote, alloc, off, count, np_dtype, op, into_peer) -> None:
        n = count * np.dtype(np_dtype).itemsize
        backend = self.sim.backend
        if peer.end >> 32 == self.me:
            storage, roff = self._local_target(peer.end, remote, n)
        else:
            storage, roff = self.peer_memory.find(peer.end, remote, n) or (None, 0)
            self.direct += storage is not None
        if storage is not None:
            if into_peer:
                backend.reduce(storage, roff, alloc.storage, off, count, np_dtype, op)
            else:
                backend.reduce(alloc.storage, off, storage, roff, count, np_dtype, op)
            return
        if into_peer:
            self._send(peer, ACC, remote, alloc, off, n, aux=int(op), extra=_dtype_code(np_dtype))
            return
        data = self._read(peer, remote, n)
        if data is not None:
            tmp = backend.allocate(n)
            _bytes_of(backend, tmp, 0, n)[:] = data
            backend.reduce(alloc.storage, off, tmp, 0, count, np_dtype, op)

    def remote_notify(self, peer, index):
        if peer.end >> 32 == self.me:
            n = self.ends[peer.end].notifies[index]
            n.record()
            return n.gen
        proc = peer.end >> 32
        link_ = self.link
        try:
            link_.fence_others(proc)
            if not link_.ring(proc, peer.end, index):
                link_.send_data(proc, NOTIFY, peer.end, 0, 0, index)
        except LinkError as why:
            raise TransportError(str(why)) from None
        key = (peer.end, index)
        self.notifies_sent[key] = self.notifies_sent.get(key, 0) + 1
        return None

    def fence(self, peer) -> None:
        proc = peer.end >> 32
        if proc in self.link.dirty:     # (direct writes and rings landed already)
            try:
                self.link.fence([proc])
            except LinkError as why:
                raise TransportError(str(why)) from None

    # -- data plane: target ----------------------------------------------------------------------
    def _target_bytes(self, tid, addr, size):
        """The bytes of this process's exposed memory that a transfer names; None when the end is
        closed or the memory was freed since the origin looked (the transfer is dropped)."""
        end = self.ends.get(tid)
        if end is None or end.closed:
            return None
        for start, stop, alloc in self.spans.get(tid, ()):
            if start <= addr and addr + size <= stop:
                if alloc.storage is None:
                    return None
                if not self.sim.data:
                    return False
                return _bytes_of(self.sim.backend, alloc.storage, addr - alloc.addr, size)
        return None

    def on_ring(self, src, tid, index) -> None:
        """A remote notify of process ``src`` for notify ``index`` of end ``tid`` (a ring of this
        process's doorbell, or a NOTIFY message): set it (an end closed meanwhile drops it)."""
        end = self.ends.get(tid)
        if end is not None and not end.closed:
            n = end.notifies[index]
            n.record()
            self.arrivals.setdefault((src, tid, index), []).append(n.gen)
            self.sim.scheduler.poke()

    def on_data(self, src, op, tid, addr, size, aux, reqid, where, extra, inline) -> None:
        link_ = self.link
        if op == NOTIFY:
            self.on_ring(src, tid, aux)
            return
        if op == GET:
            dst = self._target_bytes(tid, addr, size)
            if extra and dst is not None and dst is not False:
                link_.send_data(src, GOT, 0, 0, size, reqid=reqid, payload=dst.copy(), owned=True)
            else:
                link_.send_data(src, GOT, 0, 0, size, reqid=reqid)
            return
        dst = self._target_bytes(tid, addr, size)
        if where == BULK:
            data = np.empty(size, np.uint8) if (dst is None or dst is False or op == ACC) else dst
            link_.recv_bulk(src, data)
        else:
            data = inline
        if dst is None or dst is False or data is None:
            return
        if op == PUT:
            if data is not dst:
                dst[:] = data
        elif op == ACC:
            dtype = _dtype_of(extra)
            backend = self.sim.backend
            tmp = backend.allocate(size)
            _bytes_of(backend, tmp, 0, size)[:] = data
            end_storage, roff = self._local_target(tid, addr, size)
            backend.reduce(end_storage, roff, tmp, 0, size // dtype.itemsize, dtype, aux)

    def on_abort(self, reason: str) -> None:
        self.sim.scheduler.abort(reason)
        self.sim.scheduler.poke()

    # -- progress --------------------------------------------------------------------------------
    def progress(self) -> bool:
        ln = self.link
        return ln is not None and ln.serve() > 0

    def watch(self) -> bool:
        ln = self.link
        return ln is not None and ln.watch() > 0

    def world_idle(self) -> bool:
        ln = self.link
        return ln is None or ln.world_idle()

    def remote_hang_facts(self):
        ln = self.link
        v = None if ln is None else ln.termination.verdict
        return None if v is None else v[1]

    def _snapshot(self):
        return self.sim.hang_report.snapshot(proc=self.me)

    # -- whole-job services (pyhcomm.launch) -----------------------------------------------------
    def processes(self):
        ln = self.started()
        return ln.nprocs, ln.me

    def abort_all(self, reason: str, rank=None) -> None:
        self.sim.scheduler.abort(reason)
        if self.link is not None:
            self.link.failures.abort_all(reason, rank)

    def abort_origin(self):
        failures = None if self.link is None else self.link.failures
        return (failures.reason, failures.rank) if failures is not None and failures.remote else None

    def gather_results(self, root: int, nranks: int, mine: dict) -> list:
        """Raises :class:`~.mpi_failures.LinkError` when the job is aborted or a process dies first."""
        got = self.results.setdefault(root, {})
        got.update(mine)
        for p in sorted(set(self.worlds[root].procs.values()) - {self.me}):
            self.link.send_ctrl(p, ("results", root, mine))
        self.link.wait(lambda: len(got) >= nranks, "every rank's result")
        del self.results[root]
        return [got[r] for r in range(nranks)]

    def _ctrl_results(self, src, root, theirs):
        self.results.setdefault(root, {}).update(theirs)

    def record_facts(self) -> dict:
        """The process, the remote notify records sent per target notify, the generation each
        remote record that arrived here set, the rendezvous arrivals (see the base class)."""
        ln = self.started()
        return {"process": ln.me, "processes": ln.nprocs, "sent": dict(self.notifies_sent),
                "arrivals": {k: list(v) for k, v in self.arrivals.items()}, "meetings": list(self.meetings)}

    def gather(self, value, root: int = 0):
        try:
            return self.started().gather(value, root)
        except LinkError as why:
            raise TransportError(str(why)) from None
