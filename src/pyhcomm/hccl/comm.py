"""Communicators: root info, the rendezvous of N ranks (through the Sim's transport), the HCCL buffer.

Each rank is a :class:`Communicator` on its own simulated device, normally driven by its own host
OS thread. ``HcclCommInitRootInfo`` is collective: it blocks until all ``nRanks`` ranks have
joined, or ``HCCL_CONNECT_TIMEOUT`` seconds (default 120) pass.
"""
from __future__ import annotations

import json
import os
import struct
import zlib

from .. import args
from ..sim import current_sim as _sim
from ..sched import ABORTED, DONE_OK, TIMED_OUT
from ..sim.runtime import program_ctx
from .. import topology
from ..sim import kinds
from ..enums import HCCL_ROOT_INFO_BYTES
from ..errors import HcclResult, hccl_error, para, ptr
from ..transport.base import RootKey, TransportError
from ..hcomm import comm_lock
from ..hcomm.resources import teardown
from ..hcomm.resources.owner import ResourceOwner, get_owner, hccl_buffer  # noqa: F401  (hccl_buffer re-exported)
from . import comm_config
from .state import hccl_state

ROOT_MAGIC = b"PYHCOMM-ROOT\0"
_ROOT_CRC = struct.Struct("<I")
ENV_BUFFSIZE = "HCCL_BUFFSIZE"
ENV_CONNECT_TIMEOUT = "HCCL_CONNECT_TIMEOUT"


def check_comm_config(api: str) -> None:
    """``HCCL_E_PARA`` when ``HCCL_BUFFSIZE``, ``HCCL_CONNECT_TIMEOUT`` or ``HCCL_ALGO`` has a value
    that does not parse (HCCL parses ``HCCL_ALGO`` when it initialises a communicator)."""
    cfg = _sim().config
    cfg.check(ENV_BUFFSIZE, api)
    cfg.check(ENV_CONNECT_TIMEOUT, api)
    cfg.check("HCCL_ALGO", api)


class World:
    """This process's view of the ranks of one communicator: the root of the transport that formed
    it (its id), its size and name, the ranks that live here. Who joined, on which device, who
    left, and the host barrier are the transport's (``sim.transport``: the ranks of a world may
    live in other processes)."""

    def __init__(self, root: int, nranks: int | None = None):
        self.id = root
        self.name = f"hccl_world_{root}"
        self.nranks = nranks
        self.comms: dict[int, "Communicator"] = {}   # the ranks of this process
        self.rank_table = None          # topology.RankTable from HcclCommInitClusterInfo, else None
        self.programs: dict = {}        # rank -> its host program, in the rendezvous now forming
        self._transport = _sim().transport

    def place(self, rank: int):
        """Where ``rank`` sits (rank table, else its device's default place); None if unknown."""
        if self.rank_table is not None:
            return self.rank_table.places[rank] if 0 <= rank < self.rank_table.nranks else None
        device = self._transport.members(self.id).get(rank)
        return None if device is None else topology.default_place(device)

    def root_info(self) -> bytes:
        """The bytes of an ``HcclRootInfo`` naming this world (see :func:`root_info_bytes`)."""
        return root_info_bytes(self._transport.root_key(self.id))


class Communicator(ResourceOwner):
    """One rank of a communicator (``HcclComm``): the owner of its HCOMM resources
    (:class:`~pyhcomm.hcomm.resources.owner.ResourceOwner`) in a world of ranks."""

    def __init__(self, world: World, rank: int, device: int):
        super().__init__(device, 2 * _sim().config.buffsize_mb * (1 << 20))
        self.world = world
        self.rank = rank
        self.holds_device = False       # HcclCommInitAll opened the device for it: close it on destroy
        self.settings = None            # comm_config.CommSettings of a ...Config init, else None
        self.suspended = False          # HcclCommSuspend (comm_state)
        sim = _sim()
        hccl_state(sim)                 # (made with the first communicator: it destroys them at device release)
        self.handle = sim.handles.comms.add(self)

    def check_usable(self, api: str) -> None:
        """A suspended communicator answers ``HCCL_E_SUSPENDING`` (but for :data:`USABLE_WHILE_SUSPENDED`)."""
        if self.suspended and api not in USABLE_WHILE_SUSPENDED:
            raise hccl_error(HcclResult.HCCL_E_SUSPENDING, api, f"{self.name} rank {self.rank} is suspended "
                                                                "(HcclCommResume first)")

    @property
    def nranks(self) -> int:
        return self.world.nranks

    @property
    def name(self) -> str:
        return self.world.name

    def __repr__(self):
        return f"<Communicator {self.name} rank {self.rank}/{self.nranks} device {self.device}>"


def local_world(root: int, nranks: int | None = None) -> World:
    """This Sim's World for the transport's ``root`` (made on first use: a root may come from
    another Sim or another process); call it under the Sim's lock."""
    sim = _sim()
    world = sim.roots.get(root)
    if world is None:
        world = sim.roots[root] = World(root, nranks)
    return world


def new_world(nranks: int | None = None) -> World:
    """A World on a fresh root of the transport (under the Sim's lock)."""
    return local_world(_sim().transport.new_root(), nranks)


def named_world(name, nranks: int) -> World:
    """The World every rank that names ``name`` joins, until ``nranks`` joined it (then a new one;
    under the Sim's lock). A fresh one has no rank table yet."""
    return local_world(_sim().transport.named_root(name, nranks), nranks)


def root_info_bytes(key: RootKey) -> bytes:
    """An ``HcclRootInfo``'s bytes: :data:`ROOT_MAGIC`, the root's key (:class:`RootKey`: the
    process that made it, an id no other root has, its address in a job of processes), a CRC-32
    of the two, zeros. The key makes a root info mean one communicator wherever it is used: in
    any Sim of the process (a launch's Sim makes its world on first use) and in every process of
    an MPI job."""
    body = ROOT_MAGIC + key.pack()
    body += _ROOT_CRC.pack(zlib.crc32(body))
    return body + b"\0" * (HCCL_ROOT_INFO_BYTES - len(body))


def _root_key(raw: bytes, api: str) -> RootKey:
    """The key ``raw`` carries; ``HCCL_E_PARA`` saying what is wrong when it is no root info."""
    if not raw.strip(b"\0"):
        raise para(api, "rootInfo is all zeros: it was not filled by HcclGetRootInfo")
    if not raw.startswith(ROOT_MAGIC):
        raise para(api, "rootInfo was not produced by HcclGetRootInfo")
    end = len(ROOT_MAGIC) + RootKey.FORMAT.size
    if len(raw) < end + _ROOT_CRC.size or _ROOT_CRC.unpack_from(raw, end)[0] != zlib.crc32(raw[:end]):
        raise para(api, "rootInfo is corrupted (its checksum does not match)")
    return RootKey.unpack(raw[len(ROOT_MAGIC):end])


def get_root_info() -> bytes:
    """``HcclGetRootInfo``: a fresh root, as the bytes of an ``HcclRootInfo`` (usable in any Sim
    of the process and, over MPI, in every process of the job)."""
    sim = _sim()
    with sim.lock:
        return new_world().root_info()


def _root_bytes(root_info, api: str) -> bytes:
    """The bytes of an ``HcclRootInfo`` given as bytes-like, or as any object that exports its
    bytes (a buffer, or ``bytes()`` of it). NULL (None, 0) is ``HCCL_E_PTR``; anything else,
    an int included, is ``HCCL_E_PARA`` (never ``bytes(int)``, which would build a zero block)."""
    if root_info is None or (type(root_info) is int and root_info == 0):
        raise ptr(api, "rootInfo is NULL")
    if isinstance(root_info, (int, float, str, bool)):
        raise para(api, f"rootInfo must be the HcclRootInfo from HcclGetRootInfo, not {type(root_info).__name__}")
    try:
        return bytes(memoryview(root_info).cast("B"))
    except (TypeError, ValueError):
        pass
    convert = getattr(type(root_info), "__bytes__", None)
    if convert is not None:
        try:
            raw = convert(root_info)
        except Exception:  # noqa: BLE001 - whatever the object raises, it is no root info
            raw = None
        if isinstance(raw, bytes):
            return raw
    raise para(api, f"rootInfo must be the HcclRootInfo from HcclGetRootInfo, not {type(root_info).__name__}")


def world_of(root_info, api: str) -> World:
    """The World of this Sim that ``root_info`` names (made on first use)."""
    key = _root_key(_root_bytes(root_info, api), api)
    sim = _sim()
    with sim.lock:
        try:
            root = sim.transport.root_of(key)
        except TransportError as why:
            raise para(api, f"rootInfo names no communicator here: {why}") from None
        return local_world(root)


def init_root_info(nranks: int, root_info, rank: int, settings=None,
                   api: str = "HcclCommInitRootInfo", wait: bool = True) -> Communicator:
    """``HcclCommInitRootInfo``: join rank ``rank`` of ``nranks``; collective, blocks the host
    (unless ``wait`` is False: then :func:`wait_joined` completes it, at ``HcclGroupEnd``).
    ``settings``: a :class:`.comm_config.CommSettings` (``HcclCommInitRootInfoConfig``)."""
    world = world_of(root_info, api)
    nranks = args.integer(nranks, api, "nRanks", -(1 << 64), args.UINT64_MAX)
    if nranks < 1:
        raise para(api, f"nRanks {nranks} must be at least 1")
    return _join(world, nranks, rank, api, settings, wait=wait)


def init_cluster_info(cluster_info, rank: int, settings=None, api: str = "HcclCommInitClusterInfo",
                      wait: bool = True) -> Communicator:
    """``HcclCommInitClusterInfo``: join rank ``rank`` of the cluster a rank-table file describes.

    Ranks passing the same file join the same communicator (a new one once the previous is
    complete). The rank table gives each rank's server and super pod; the rank's simulated device
    is the calling thread's current one. Collective: blocks until every rank joined.
    """
    if cluster_info is None:
        raise ptr(api, "clusterInfo is NULL")
    path = os.path.abspath(str(cluster_info))
    if not os.path.isfile(path):
        raise hccl_error(HcclResult.HCCL_E_OPEN_FILE_FAILURE, api, f"cannot open rank table {cluster_info!r}")
    table = _read_rank_table(path, cluster_info, api)
    sim = _sim()
    with sim.lock:
        world = named_world(("rank table", path), table.nranks)
        if world.rank_table is None:
            world.rank_table = table
    return _join(world, table.nranks, rank, api, settings, wait=wait)


def _read_rank_table(path: str, cluster_info, api: str):
    """The rank table in the file ``path``, parsed once per content and Sim (every rank of a
    cluster reads the file: parsing it per rank made a 4096-rank init quadratic)."""
    with open(path, "rb") as f:
        text = f.read()
    cache = hccl_state().rank_tables
    key = (text, topology.devices_per_server())
    table = cache.get(key)
    if table is None:
        try:
            table = topology.RankTable.from_json(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise para(api, f"rank table {cluster_info!r} is malformed: {exc}") from None
        cache[key] = table
    return table


def _join(world: World, nranks: int, rank: int, api: str, settings=None, device=None,
          wait: bool = True) -> Communicator:
    """Join ``world`` as ``rank`` and wait for the other ranks (``HCCL_CONNECT_TIMEOUT``); the
    rank runs on ``device`` (an open device; default: the calling thread's current one). With
    ``wait`` False, return the joined communicator at once (:func:`wait_joined` waits later)."""
    rank = args.integer(rank, api, "rank", -(1 << 64), args.UINT64_MAX)
    if not 0 <= rank < nranks:
        raise para(api, f"rank {rank} is outside [0, {nranks})")
    sim = _sim()
    check_comm_config(api)
    dev = sim.runtime.current_device() if device is None else sim.runtime.devices.get(device)
    if dev is None:
        raise hccl_error(HcclResult.HCCL_E_RUNTIME, api, "no current device: call aclrtSetDevice first")
    transport = sim.transport
    with sim.lock:
        if settings is not None and settings.name:
            comm_config.claim_name(world, settings.name, api)
        try:
            transport.join(world.id, nranks, rank, dev.id)
        except TransportError as why:
            raise para(api, f"{why} ({world.name})") from None
        world.nranks = nranks
        comm = Communicator(world, rank, dev.id)
        if settings is not None:
            comm_config.apply(comm, settings)
        world.comms[rank] = comm
        _arrive(world, rank, len(transport.members(world.id)) >= nranks, api)
    if wait:
        wait_joined(comm, api)
    return comm


def wait_joined(comm: Communicator, api: str = "HcclGroupEnd") -> None:
    """Wait until every rank of ``comm``'s communicator joined (``HCCL_CONNECT_TIMEOUT``); on a
    timeout, ``comm`` leaves its communicator again and is released."""
    sim, world, rank, nranks = _sim(), comm.world, comm.rank, comm.world.nranks
    timeout = sim.config.connect_timeout
    sched, transport, root = sim.scheduler, sim.transport, world.id
    status = sched.run_until(lambda: len(transport.members(root)) >= nranks or transport.refused(root, rank),
                             timeout, f"{api}(rank {rank} of {world.name})", (sched.rendezvous(root),),
                             detect_stuck=False)
    refused = transport.refused(root, rank)   # checked elsewhere (ranks in other processes)
    if status == DONE_OK and refused is None:
        return
    with sim.lock:
        missing = sorted(set(range(nranks)) - set(transport.members(root)))
        del world.comms[rank]
        transport.leave(root, rank, joined=False)
        world.programs.pop(rank, None)
        sim.handles.comms.remove(comm.handle)
    if refused is not None:
        raise para(api, f"{refused} ({world.name})")
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {sched.abort_reason}")
    why = (f"within {timeout:g} s ({ENV_CONNECT_TIMEOUT})" if status == TIMED_OUT
           else "and no other rank can run any more")
    raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"ranks {missing} of {world.name} did not join {why}")


def _arrive(world: World, rank: int, last: bool, api: str) -> None:
    """Note the calling host program at a rendezvous of ``world`` (under the Sim's lock); the
    ``last`` to arrive records it (a ``Rendezvous`` in the record: everything each program did
    before it happens before what every one of them does after)."""
    world.programs[rank] = program_ctx().program
    if last:
        ranks = tuple(sorted(world.programs))
        _sim().record.host_effect(kinds.RENDEZVOUS, api, group=world.name, ranks=ranks,   # of no one rank
                                  programs=tuple(world.programs[r] for r in ranks))
        world.programs = {}


def host_barrier(comm: Communicator, api: str = "Comm.barrier") -> None:
    """Block the calling host program until every rank of ``comm``'s communicator called this
    (a host-side rendezvous through the scheduler, not an HCCL collective: nothing is enqueued).
    Works on both schedulers; ``HCCL_CONNECT_TIMEOUT`` bounds the wait."""
    sim = _sim()
    world, transport = comm.world, sim.transport
    with sim.lock:
        round_ = transport.barrier_arrive(world.id, comm.rank)
        _arrive(world, comm.rank, transport.barrier_rounds(world.id) > round_, api)
    sched = sim.scheduler
    status = sched.run_until(lambda: transport.barrier_rounds(world.id) > round_, sim.config.connect_timeout,
                             f"{api}(rank {comm.rank} of {world.name})", (sched.rendezvous(world.id),),
                             detect_stuck=False)
    if status == DONE_OK:
        return
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {sched.abort_reason}")
    raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api, f"not every rank of {world.name} reached the barrier")


def init_all(devices) -> list[Communicator]:
    """``HcclCommInitAll``: one communicator per device, all in this call."""
    api = "HcclCommInitAll"
    if devices is None:
        raise ptr(api, "devices is NULL")
    if not isinstance(devices, (list, tuple, range)):
        raise para(api, f"devices must be a list of device ids, not {type(devices).__name__}")
    devices = list(devices)
    if not devices:
        raise para(api, "ndev must be at least 1")
    count = _sim().runtime.device_count
    for i, d in enumerate(devices):
        try:
            devices[i] = args.integer(d, api, f"devices[{i}]", 0, count - 1)
        except TypeError:  # an element of a list: a code, as for every other bad element
            raise para(api, f"devices[{i}] {d!r} is not a device id in [0, {count})") from None
    if len(set(devices)) != len(devices):
        raise para(api, f"devices {devices} repeat a device")
    check_comm_config(api)
    sim = _sim()
    with sim.lock:
        world = new_world(len(devices))
        for rank, d in enumerate(devices):
            sim.transport.join(world.id, len(devices), rank, d)
    saved = program_ctx().device
    comms = []
    for rank, d in enumerate(devices):
        sim.runtime.open_device(d)
        comm = Communicator(world, rank, d)
        comm.holds_device = True
        world.comms[rank] = comm
        comms.append(comm)
    program_ctx().device = saved
    return comms


#: Calls a suspended communicator still answers (``HcclCommSuspend``; the others: HCCL_E_SUSPENDING).
USABLE_WHILE_SUSPENDED = frozenset({
    "HcclCommResume", "HcclCommDestroy", "HcclCommSuspend", "HcclGetRankSize", "HcclGetRankId", "HcclGetCommName",
    "HcclGetCommAsyncError", "HcclConfigGetInfo", "HcclGetHeterogMode"})


def get_comm(handle, api: str) -> Communicator:
    """Look a communicator up: NULL is ``HCCL_E_PTR``, unknown or destroyed ``HCCL_E_NOT_FOUND``,
    suspended ``HCCL_E_SUSPENDING`` (but for :data:`USABLE_WHILE_SUSPENDED`)."""
    return get_owner(handle, api)


def destroy(comm: Communicator, device_released: bool = False) -> None:
    """``HcclCommDestroy``: release threads, engine contexts and the HCCL buffer (and the device
    reference ``HcclCommInitAll`` took)."""
    if comm.destroyed:
        return
    teardown.release(comm)
    comm_lock.forget(comm)
    comm.destroyed = True
    _sim().handles.comms.remove(comm.handle)
    comm.world.comms.pop(comm.rank, None)
    _sim().transport.leave(comm.world.id, comm.rank)
    if comm.holds_device and not device_released:
        comm.holds_device = False
        _sim().runtime.close_device(comm.device)

