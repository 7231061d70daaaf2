"""Channels: the two ends of a link between two ranks, and what each end exposes to the other.

``HcclChannelAcquire`` creates (or returns) this rank's end for ``(engine, remoteRank,
protocol)``; the pair is matched on communicator, engine, the two ranks and the protocol. When
both ends exist they are connected: each knows the other's HCCL buffer, the memories the other
registered and listed in its descriptor, and the other's notifies. Acquire does not block; calls
that need the peer (``HcclChannelGetHcclBuffer``, data-plane calls from the host) wait for it up
to ``HCCL_CONNECT_TIMEOUT`` seconds; device-side calls on an unconnected channel are refused.

Engine/protocol legality is each engine's :class:`~.engines.Channels` on the product
(``HcclChannelAcquire``'s table, hcomm-api §3.4, plus the AICPU engine the custom-operator samples
use; see the engine modules). An engine without channels on the product is
``HCCL_E_NOT_SUPPORT``, so is a protocol the engine does not speak; a protocol with no link between
the two devices is ``HCCL_E_NOT_FOUND``.
"""
from __future__ import annotations

from ... import args
from ...sched import ABORTED, TIMED_OUT
from ...sim import current_sim as _sim
from ...sim import memory
from ...sim.aiv import aiv_state
from ...sim.notify import Notify
from ...sim.runtime import in_library
from ...enums import HCCL_RES_TAG_MAX_LEN
from ...errors import HcclResult, hccl_error, not_found, not_support, para, ptr
from ...defs.hccl_channel import (HCCL_CHANNEL_MAGIC_WORD, HCCL_CHANNEL_VERSION, HcclChannelDesc,  # noqa: F401
                                 channel_desc_init)
from ...defs.res_defs import CommMem, CommMemType, CommProtocol
from ...topology import protocols_between
from ...transport.base import PeerInfo, Region
from .owner import get_owner, hccl_buffer
from .channel_registers import ChannelRegisters
from ...args import int_array
from .engines import Engine, check_engine
from .thread import HCOMM_NOTIFY_MAX_NUM

CHANNEL_NUM_MAX = 1048576
P = CommProtocol


def channel_protocols(engine: Engine) -> frozenset:
    """The protocols of the channels of ``engine`` callers may open on this product now (HCCL's
    own collectives, inside :class:`pyhcomm.sim.runtime.library_calls`, open the engine's
    ``library`` channels on products outside the HCOMM support table; users get its ``protocols``)."""
    if not _sim().runtime.product.hcomm and in_library():
        return engine.channels.library
    return engine.channels.protocols


def check_has_channels(engine: Engine, api: str) -> None:
    """``HCCL_E_NOT_SUPPORT`` when ``engine`` has no channels on this product now."""
    if not channel_protocols(engine):
        raise not_support(api, f"{engine.name} channels are not supported on {_sim().runtime.product.name}")


def desc_init(descs) -> None:
    """``HcclChannelDescInit``: set every descriptor (one, or a list) to the C defaults. Anything
    but descriptors is ``HCCL_E_PARA``; every element is checked before any is changed."""
    api = "HcclChannelDescInit"
    if descs is None:
        raise ptr(api, "channelDesc is NULL")
    if isinstance(descs, HcclChannelDesc):
        descs = [descs]
    elif not isinstance(descs, (list, tuple)):
        raise para(api, f"channelDesc must be an HcclChannelDesc or a list of them, not {type(descs).__name__}")
    for i, d in enumerate(descs):
        if not isinstance(d, HcclChannelDesc):
            raise para(api, f"channelDesc[{i}] must be an HcclChannelDesc, not {type(d).__name__}")
    for d in descs:
        channel_desc_init(d)


class MemHandle:
    """A memory registered with ``HcclCommMemReg`` (``HcclMemHandle``)."""

    def __init__(self, comm, tag: str, alloc, addr: int, size: int):
        self.comm, self.tag, self.alloc, self.addr, self.size = comm, tag, alloc, addr, size
        self.handle = _sim().handles.kernels.add(self)


class ChannelEnd:
    """This rank's end of a channel (``ChannelHandle``)."""

    # (slots: a mesh of 1024 ranks has a million ends)
    __slots__ = ("comm", "rank", "world_id", "engine", "protocol", "peer_rank", "mems", "host_side", "_exposed",
                 "peer_ref", "peer", "waiters", "key", "tid", "closed", "handle", "notifies", "registers",
                 "__weakref__")

    def __init__(self, comm, engine, protocol, peer_rank, notify_num, mems):
        self.comm = comm
        self.rank = comm.rank
        self.world_id = comm.world.id
        self.engine = engine           # its Engine
        self.protocol = CommProtocol(protocol)
        self.peer_rank = peer_rank
        self.mems = mems               # MemHandle list exposed to the peer
        self.host_side = engine.host_side    # used from the host (else inside a kernel)
        self._exposed = None
        self.peer_ref = None    # transport.PeerRef, set by the transport when both ends exist
        self.peer = None        # transport.PeerInfo: what this end knows of its peer's (the
                                # transport's, kept current; None until connected)
        self.waiters = None     # the scheduler's: who waits for this end to connect
        self.key = None         # the channel key and the transport's number of this end (publish)
        self.tid = None
        self.closed = False
        self.handle = _sim().handles.channels.add(self)
        _sim().record.note_channel(self)       # the record names the protocol and peer of its tasks
        owner = f"rank {comm.rank} channel 0x{self.handle:x} (to rank {peer_rank})"   # one string for all
        counting = _sim().runtime.notify_counting
        self.notifies = [Notify(owner, i, counting) for i in range(notify_num)]
        bits = engine.channels.cke_bits      # a CCU end: its notifies are also sync registers of that many bits
        self.registers = (ChannelRegisters(owner, notify_num, bits, engine.channels.variables, counting) if bits
                          else None)

    def exposed(self):
        """``(Region, allocation)`` of every range this end exposes to its peer (fixed when the end
        is acquired: its HCCL buffer and the memories its descriptor listed); for the transport,
        which tells the peer the :class:`~pyhcomm.transport.base.Region` values only."""
        out = self._exposed
        if out is None:
            out = []
            if not getattr(self.comm, "l3", False):   # an HCOMM channel (no communicator) has no HCCL buffer
                buf = hccl_buffer(self.comm, "HcclChannelAcquire")
                region = self.comm.buffer_region     # one value per buffer, not per end
                if region is None or region.start != buf.addr or region.size != buf.size:
                    region = self.comm.buffer_region = Region(buf.addr, buf.size, "its HCCL buffer")
                out.append((region, buf))
            out += [(Region(m.addr, m.size, f"memory {m.tag!r}", m.tag), m.alloc) for m in self.mems]
            self._exposed = out
        return out

    def __repr__(self):
        return (f"<Channel 0x{self.handle:x} rank {self.comm.rank}->{self.peer_rank} {self.engine.name} "
                f"{self.protocol.name} {'connected' if self.peer else 'waiting'}>")


def _key(comm, engine, protocol, a, b):
    return (comm.world.id, int(engine), int(protocol), min(a, b), max(a, b))


def _check_desc(comm, engine, d, i, api):
    if not isinstance(d, HcclChannelDesc):
        raise para(api, f"channelDescs[{i}] must be an HcclChannelDesc, not {type(d).__name__}")
    version = getattr(d.header, "version", None)
    if (getattr(d.header, "magicWord", None) != HCCL_CHANNEL_MAGIC_WORD or type(version) is not int
            or version < 1):
        raise para(api, f"channelDescs[{i}] was not initialised with HcclChannelDescInit")
    if not isinstance(d.remoteRank, int) or not 0 <= d.remoteRank < comm.nranks:
        raise para(api, f"channelDescs[{i}].remoteRank {d.remoteRank} is outside [0, {comm.nranks})")
    if d.remoteRank == comm.rank:
        raise para(api, f"channelDescs[{i}].remoteRank {d.remoteRank} is this rank")
    try:
        protocol = CommProtocol(d.channelProtocol)
    except ValueError:
        raise para(api, f"channelDescs[{i}].channelProtocol {d.channelProtocol} is not a CommProtocol") from None
    allowed = channel_protocols(engine)
    if protocol == P.COMM_PROTOCOL_RESERVED:
        raise para(api, f"channelDescs[{i}].channelProtocol is not set")
    if protocol not in allowed:
        names = ", ".join(sorted(p.name for p in allowed))
        raise not_support(api, f"channelDescs[{i}]: {engine.name} channels on {_sim().runtime.product.name} speak "
                               f"{names}, not {protocol.name}")
    mine, theirs = comm.world.place(comm.rank), comm.world.place(d.remoteRank)
    if theirs is not None and protocol not in protocols_between(mine, theirs):
        raise not_found(api, f"channelDescs[{i}]: no {protocol.name} link between rank {comm.rank} "
                             f"(server {mine.server}) and rank {d.remoteRank} (server {theirs.server})")
    notify_num = d.notifyNum
    if engine.channels.notifies is not None:
        notify_num = engine.channels.notifies
    elif not isinstance(notify_num, int) or not 0 <= notify_num <= HCOMM_NOTIFY_MAX_NUM:
        raise para(api, f"channelDescs[{i}].notifyNum {notify_num} is outside [0, {HCOMM_NOTIFY_MAX_NUM}]")
    if isinstance(d.memHandles, (list, tuple)) and d.memHandleNum != len(d.memHandles):
        raise para(api, f"channelDescs[{i}].memHandleNum {d.memHandleNum} but {len(d.memHandles)} memHandles")
    mems = int_array(d.memHandles, d.memHandleNum, api, f"channelDescs[{i}].memHandles")
    resolved = []
    for h in mems:
        m = _sim().handles.kernels.get(h) if type(h) is int else None
        if not isinstance(m, MemHandle) or m.comm is not comm:
            raise para(api, f"channelDescs[{i}]: memHandle {h!r} was not registered on this communicator")
        resolved.append(m)
    return protocol, notify_num, resolved


def desc_list(descs, api: str):
    """``channelDescs`` as a list: one ``HcclChannelDesc`` or a list / tuple of them (None, NULL,
    stays None); anything else is ``HCCL_E_PARA``."""
    if descs is None or isinstance(descs, list):
        return descs
    if isinstance(descs, (HcclChannelDesc, tuple)):
        return [descs] if isinstance(descs, HcclChannelDesc) else list(descs)
    raise para(api, f"channelDescs must be a list of HcclChannelDesc, not {type(descs).__name__}")


def acquire(comm_handle, engine, descs, channel_num) -> list[ChannelEnd]:
    """``HcclChannelAcquire``: get or create this rank's end of each described channel."""
    api = "HcclChannelAcquire"
    comm = get_owner(comm_handle, api)
    engine = check_engine(engine, api)
    if descs is None:
        raise ptr(api, "channelDescs is NULL")
    descs = desc_list(descs, api)
    if not isinstance(channel_num, int) or not 0 < channel_num <= CHANNEL_NUM_MAX:
        raise para(api, f"channelNum {channel_num} is outside (0, {CHANNEL_NUM_MAX}]")
    if len(descs) < channel_num:
        raise para(api, f"channelNum {channel_num} but only {len(descs)} descriptors")
    check_has_channels(engine, api)
    checked = [_check_desc(comm, engine, descs[i], i, api) for i in range(channel_num)]
    hccl_buffer(comm, api)  # exchanged at connection
    out = []
    sim = _sim()
    with sim.lock:
        for d, (protocol, notify_num, mems) in zip(descs, checked):
            key = _key(comm, engine, protocol, comm.rank, d.remoteRank)
            end = comm.channel_ends.get(key)
            if end is None or end.closed:
                end = ChannelEnd(comm, engine, protocol, d.remoteRank, notify_num, mems)
                comm.channel_ends[key] = end
                comm.channels.append(end)
                sim.transport.publish(end, key)
                if engine.channels.load_store:   # its kernels reach the peer's exposed memory
                    aiv_state(sim).grant(comm.device, end)
            out.append(end)
    return out


def get_channel(handle, api: str, name: str = "channel") -> ChannelEnd:
    """Look a channel up: 0 is ``HCCL_E_PTR``, unknown or released ``HCCL_E_NOT_FOUND``."""
    handle = args.handle(handle, api, name)
    if not handle:
        raise ptr(api, f"{name} is 0 (NULL)")
    ch = _sim().handles.channels.get(handle)
    if ch is None:
        raise not_found(api, f"{name} 0x{handle:x} is not a live channel handle")
    return ch


def connected_peer(ch: ChannelEnd, api: str, wait: bool = True) -> PeerInfo:
    """What ``ch`` knows of the peer's end (a transport value); waits for the peer to connect
    (host calls) up to ``HCCL_CONNECT_TIMEOUT`` seconds."""
    peer = ch.peer
    if peer is not None and not peer.closed:
        return peer
    if peer is not None and peer.closed:
        raise para(api, f"channel 0x{ch.handle:x}: rank {ch.peer_rank} destroyed its end")
    if not wait:
        raise para(api, f"channel 0x{ch.handle:x} is not connected: rank {ch.peer_rank} has not acquired "
                        f"the matching {ch.engine.name} {ch.protocol.name} channel")
    sim = _sim()
    timeout = sim.config.connect_timeout
    transport, root = sim.transport, ch.world_id

    def settled():
        return ch.peer is not None or ch.peer_rank in transport.left(root)

    status = sim.scheduler.run_until(settled, timeout, f"{api}(channel 0x{ch.handle:x} to rank {ch.peer_rank})",
                                     (ch, sim.scheduler.rendezvous(root)), detect_stuck=False)
    peer = ch.peer
    if peer is not None:
        if peer.closed:
            raise para(api, f"channel 0x{ch.handle:x}: rank {ch.peer_rank} destroyed its end")
        return peer
    if status == ABORTED:
        raise hccl_error(HcclResult.HCCL_E_INTERNAL, api, f"aborted: {sim.scheduler.abort_reason}")
    if ch.peer_rank in transport.left(root):
        raise para(api, f"channel 0x{ch.handle:x}: rank {ch.peer_rank} destroyed its communicator")
    why = f"within {timeout:g} s" if status == TIMED_OUT else "and no other rank can run any more"
    raise hccl_error(HcclResult.HCCL_E_TIMEOUT, api,
                     f"channel 0x{ch.handle:x}: rank {ch.peer_rank} did not acquire the matching "
                     f"{ch.engine.name} {ch.protocol.name} channel {why}")


def peer_hccl_buffer(comm_handle, channel):
    """``HcclChannelGetHcclBuffer``: the peer's HCCL buffer ``(addr, size)``."""
    api = "HcclChannelGetHcclBuffer"
    comm = get_owner(comm_handle, api)
    ch = _own(comm, channel, api)
    buf = connected_peer(ch, api).regions[0]   # its HCCL buffer comes first
    return buf.start, buf.size


def _own(comm, channel, api):
    ch = get_channel(channel, api)
    if ch.comm is not comm:
        raise para(api, f"channel 0x{ch.handle:x} belongs to rank {ch.comm.rank} of {ch.comm.name}, "
                        f"not rank {comm.rank} of {comm.name}")
    return ch


def remote_mems(comm_handle, channel):
    """``HcclChannelGetRemoteMems``: ``(memNum, [CommMem], [tags])`` the peer exposed."""
    api = "HcclChannelGetRemoteMems"
    comm = get_owner(comm_handle, api)
    peer = connected_peer(_own(comm, channel, api), api)
    regs = [r for r in peer.regions if r.tag is not None]
    mems = [CommMem(type=CommMemType.COMM_MEM_TYPE_DEVICE, addr=r.start, size=r.size) for r in regs]
    return len(mems), mems, [r.tag for r in regs]


def mem_reg(comm_handle, tag, mem) -> int:
    """``HcclCommMemReg``: register device memory of this rank under ``tag``."""
    api = "HcclCommMemReg"
    comm = get_owner(comm_handle, api)
    if tag is None:
        raise ptr(api, "memTag is NULL")
    if mem is None:
        raise ptr(api, "mem is NULL")
    if not isinstance(tag, str) or not 0 < len(tag) <= HCCL_RES_TAG_MAX_LEN:
        raise para(api, f"memTag must be 1..{HCCL_RES_TAG_MAX_LEN} characters")
    if any(m.tag == tag for m in comm.mems):
        raise para(api, f"memTag {tag!r} is already registered on rank {comm.rank}")
    if not isinstance(mem, CommMem):
        raise para(api, f"mem must be a CommMem, not {type(mem).__name__}")
    if mem.type != CommMemType.COMM_MEM_TYPE_DEVICE:
        raise not_support(api, "only device memory (COMM_MEM_TYPE_DEVICE) can be registered")
    addr = args.pointer(mem.addr, api, "mem.addr")
    if not addr:
        raise ptr(api, "mem.addr is NULL")
    size = args.integer(mem.size, api, "mem.size", -(1 << 64), args.UINT64_MAX)
    if size <= 0:
        raise para(api, f"mem.size {size} must be positive")
    try:
        alloc = memory.resolve(addr, size, memory.DEVICE, comm.device)
    except memory.BadRange as why:
        raise para(api, f"mem 0x{addr:x} + {size} is not device memory of rank {comm.rank} "
                        f"(device {comm.device}): {why}") from None
    m = MemHandle(comm, tag, alloc, addr, size)
    comm.mems.append(m)
    return m.handle


def release_comm_channels(comm) -> None:
    """Close the channel ends of a destroyed communicator (peers see them as gone)."""
    sim = _sim()
    with sim.lock:
        for ch in comm.channels:
            sim.transport.withdraw(ch)
            sim.handles.channels.remove(ch.handle)
        comm.channels.clear()
        comm.channel_ends.clear()
        for m in comm.mems:
            sim.handles.kernels.remove(m.handle)
        comm.mems.clear()


