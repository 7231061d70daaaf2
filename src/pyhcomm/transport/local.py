"""The in-process transport: every rank lives in this Sim, so the values of the contract are
resolved to objects here.

Worlds are records of who joined; a root's key (what its root info carries) is made on first
demand, and a key made elsewhere in this process (another Sim: the process's default one, another
launch) gets a root of this Sim on first use, so a root info made outside a launch names a
communicator of the launch's ranks (one Sim cannot see another's: a root info used in two Sims
forms a communicator in each); a key of another process names nothing here. Pairing keeps, per
channel key, the ends published so far, and numbers every end (``PeerRef.end`` is that number);
bytes move with the Sim's backend; a remote notify is recorded directly. What a peer knows of an
end (:class:`~.base.PeerInfo`) is built when they pair and again when the end closes or memory it
exposes is freed.
"""
from __future__ import annotations

import itertools
import os

from .base import PeerInfo, PeerRef, RemoteNotify, RootKey, Transport, TransportError


class _World:
    """The rendezvous state of one root."""

    __slots__ = ("nranks", "members", "left", "arrived", "rounds")

    def __init__(self, nranks=None):
        self.nranks = nranks
        self.members: dict = {}     # rank -> device, in join order
        self.left: set = set()      # ranks that destroyed their communicator
        self.arrived = 0            # host barrier: ranks arrived in the current round
        self.rounds = 0             # host barrier: rounds complete


class LocalTransport(Transport):
    """Ranks of one process (see the module docstring)."""

    name = "local"

    def __init__(self, sim):
        super().__init__(sim)
        self.worlds: dict = {}              # root -> _World
        self._roots = itertools.count()
        self.named: dict = {}               # name -> its current root
        self.keys: dict = {}                # RootKey -> root (keys made here or first used here)
        self.key_of: dict = {}              # root -> its RootKey
        self.pairs: dict = {}               # channel key -> {rank: end}
        self.ends: list = []                # PeerRef.end -> the end
        self._spans: list = []              # PeerRef.end -> [(start, stop, allocation)] it exposes
        self._exposers: dict = {}           # allocation -> the ends exposing it

    # -- worlds ----------------------------------------------------------------------------------
    def new_root(self) -> int:
        root = next(self._roots)
        self.worlds[root] = _World()
        return root

    def root_key(self, root) -> RootKey:
        key = self.key_of.get(root)
        if key is None:
            self._world(root)
            key = self.key_of[root] = RootKey.fresh()
            self.keys[key] = root
        return key

    def root_of(self, key) -> int:
        root = self.keys.get(key)
        if root is None:
            if key.pid != os.getpid():
                raise TransportError(f"it was made in process {key.pid}, and ranks of another process "
                                     "join only over MPI (mpiexec)")
            root = self.keys[key] = self.new_root()
            self.key_of[root] = key
        return root

    def named_root(self, name: str, nranks: int) -> int:
        root = self.named.get(name)
        if root is None or len(self.worlds[root].members) >= nranks:
            root = self.named[name] = self.new_root()
            self.worlds[root].nranks = nranks
        return root

    def _world(self, root) -> _World:
        w = self.worlds.get(root)
        if w is None:
            raise TransportError(f"root {root} does not exist in this process")
        return w

    def join(self, root, nranks, rank, device) -> None:
        w = self._world(root)
        if w.nranks is None:
            w.nranks = nranks
        elif w.nranks != nranks:
            raise TransportError(f"nRanks {nranks} differs from {w.nranks} given by another rank")
        if rank in w.members:
            raise TransportError(f"rank {rank} already joined")
        for other, dev in w.members.items():
            if dev == device and other not in w.left:
                raise TransportError(f"rank {rank} and rank {other} are both on device {device}")
        w.members[rank] = device
        if len(w.members) >= w.nranks:   # the waits for the world to be complete are over
            sched = self.sim.scheduler
            sched.settle(sched.rendezvous(root))

    def members(self, root):
        return self._world(root).members

    def left(self, root):
        return self._world(root).left

    def leave(self, root, rank, joined=True) -> None:
        w = self._world(root)
        if joined:
            w.left.add(rank)
        else:
            w.members.pop(rank, None)
        sched = self.sim.scheduler
        sched.settle(sched.rendezvous(root))   # who waits to connect to ``rank`` gives up

    def barrier_arrive(self, root, rank) -> int:
        w = self._world(root)
        now = w.rounds
        w.arrived += 1
        if w.arrived >= w.nranks:
            w.arrived = 0
            w.rounds += 1
            sched = self.sim.scheduler
            sched.settle(sched.rendezvous(root))
        return now

    def barrier_rounds(self, root) -> int:
        return self._world(root).rounds

    # -- channels --------------------------------------------------------------------------------
    def publish(self, end, key) -> None:
        end.key = key
        end.tid = len(self.ends)
        self.ends.append(end)
        spans = []
        for region, alloc in end.exposed():
            spans.append((region.start, region.start + region.size, alloc))
            self._exposers.setdefault(alloc, []).append(end)
        self._spans.append(spans)
        ends = self.pairs.setdefault(key, {})
        ends[end.rank] = end
        other = ends.get(end.peer_rank)
        if other is not None and not other.closed:
            to_other = PeerRef(other.world_id, other.rank, key, other.tid)
            to_end = PeerRef(end.world_id, end.rank, key, end.tid)
            end.peer = self._describe(other, to_other)     # ``peer`` first: a host thread that sees
            other.peer = self._describe(end, to_end)       # ``peer_ref`` set finds ``peer`` set too
            end.peer_ref, other.peer_ref = to_other, to_end
            self.sim.scheduler.settle(other)   # who waits for ``other`` to connect goes on

    @staticmethod
    def _describe(end, ref) -> PeerInfo:
        """The value the peer of ``end`` sees of it (``ref`` names ``end``): its live exposed
        memory and its notifies; a closed end exposes nothing."""
        if end.closed:
            return PeerInfo(ref, (), (), True)
        regions = tuple(region for region, alloc in end.exposed() if not alloc.freed)
        notifies = tuple(RemoteNotify(ref, n.index, n.owner) for n in end.notifies)
        return PeerInfo(ref, notifies, regions, False)

    def _tell_peer(self, end) -> None:
        """``end`` changed (closed, memory freed): refresh what its peer sees of it."""
        ref = end.peer_ref
        if ref is not None:
            peer = self.ends[ref.end]
            if not peer.closed and peer.peer_ref is not None and peer.peer_ref.end == end.tid:
                peer.peer = self._describe(end, peer.peer_ref)

    def withdraw(self, end) -> None:
        end.closed = True
        self._tell_peer(end)
        self.sim.scheduler.settle(end)

    def memory_freed(self, alloc) -> None:
        for end in self._exposers.pop(alloc, ()):
            if not end.closed:   # a closed end's peer already sees nothing
                self._tell_peer(end)

    # -- data plane ------------------------------------------------------------------------------
    def _remote(self, peer, remote):
        """The peer's storage and the offset in it of address ``remote``."""
        for start, stop, alloc in self._spans[peer.end]:
            if start <= remote < stop:
                storage = alloc.storage
                if storage is None:
                    break
                return storage, remote - alloc.addr
        raise TransportError(f"0x{remote:x} is no longer memory rank {peer.rank} exposes (freed)")

    def put(self, peer, remote, alloc, off, n) -> None:
        for start, stop, theirs in self._spans[peer.end]:   # (_remote inlined: once per transfer)
            if start <= remote < stop:
                storage = theirs.storage
                if storage is not None:
                    self.sim.backend.copy(storage, remote - theirs.addr, alloc.storage, off, n)
                    return
                break
        self._remote(peer, remote)  # raises

    def get(self, peer, remote, alloc, off, n) -> None:
        for start, stop, theirs in self._spans[peer.end]:
            if start <= remote < stop:
                storage = theirs.storage
                if storage is not None:
                    self.sim.backend.copy(alloc.storage, off, storage, remote - theirs.addr, n)
                    return
                break
        self._remote(peer, remote)  # raises

    def accumulate(self, peer, remote, alloc, off, count, np_dtype, op, into_peer) -> None:
        storage, roff = self._remote(peer, remote)
        if into_peer:
            self.sim.backend.reduce(storage, roff, alloc.storage, off, count, np_dtype, op)
        else:
            self.sim.backend.reduce(alloc.storage, off, storage, roff, count, np_dtype, op)

    def remote_notify(self, peer, index):
        n = self.ends[peer.end].notifies[index]
        n.record()
        return n.gen

    def ccu_signal(self, peer, cke, mask, variable=None) -> tuple:
        end = self.ends[peer.end]
        regs = end.registers
        if end.closed or regs is None:
            raise TransportError(f"rank {peer.rank} closed its end of the channel" if end.closed
                                 else f"the channel end of rank {peer.rank} has no sync registers")
        if variable is not None:
            regs.variables[variable[0]] = variable[1]
        out = []
        for n in regs.bits(cke, mask):
            n.record()
            out.append((RemoteNotify(peer, n.index, n.owner), n.gen))
        return tuple(out)

    def ccu_move(self, peer, remote, alloc, off, n, write, np_dtype=None, op=None) -> None:
        device = self.members(peer.world).get(peer.rank)
        theirs = self.sim.memory.device_map.find(remote)
        if theirs is None or theirs.device != device or remote + n > theirs.end or theirs.storage is None:
            raise TransportError(f"0x{remote:x} + {n} is not live device memory of rank {peer.rank} (device {device})")
        backend, roff = self.sim.backend, remote - theirs.addr
        if np_dtype is None:
            if write:
                backend.copy(theirs.storage, roff, alloc.storage, off, n)
            else:
                backend.copy(alloc.storage, off, theirs.storage, roff, n)
        elif write:
            backend.reduce(theirs.storage, roff, alloc.storage, off, n, np_dtype, op)
        else:
            backend.reduce(alloc.storage, off, theirs.storage, roff, n, np_dtype, op)
