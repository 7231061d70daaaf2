"""HCOMM channels made on endpoints, without a communicator (``hcomm_channel.h``).

``HcommChannelCreate(endpointHandle, engine, channelDescs)`` makes this device's end of one
channel per ``HcommChannelDesc`` (initialised with ``HcommChannelDescInit``): to the endpoint
``remoteEndpoint`` describes (an endpoint of another device, with the local endpoint's protocol,
joined to it by a link of that protocol: ``HCCL_E_NOT_FOUND`` otherwise). The two ends pair when
both devices created the channel with the same engine and ``channelName`` (a str, a host pointer
to a C string, or 0 for an anonymous channel); until then ``HcommChannelGetStatus`` says
``HCOMM_CHANNEL_STATUS_CONNECTING``, then ``..._READY`` (``..._FAILED_INTERNAL`` once the peer
destroyed its end). Creation never blocks; host-side data calls on an unpaired channel wait for
the peer as for ``HcclChannelAcquire`` channels.

What an end exposes to its peer is the memory registered on its endpoint that its descriptor lists
(``memHandles``, ``memHandleNum``) or, with ``exchangeAllMems``, all of it at creation; there is
no HCCL buffer. Engines and protocols follow ``HcclChannelAcquire``'s table. ``socket``, ``port``,
``role`` and ``qos`` are checked (a role of the enum, a 16-bit port) and otherwise not used: the
simulated link needs no handshake. ``HcommChannelDestroy`` closes ends (the peer sees them closed).
"""
from __future__ import annotations

from ... import topology
from ...defs.cstruct import struct_arg
from ...defs.res_defs import (HCOMM_CHANNEL_MAGIC_WORD, HCOMM_CHANNEL_VERSION, HCOMM_UB_QOS_DEFAULT, CommAbiHeader,
                             CommProtocol, EndpointLocType, HcommChannelDesc, HcommChannelStatus, HcommSocketRole,
                             endpoint_desc_init)
from ...errors import not_found, not_support, para, ptr
from ...sim import current_sim as _sim
from ...sim import memory
from . import channel as ch_mod
from . import channel_config
from ...args import int_array, sequence
from .endpoint import RegisteredMem, get_endpoint
from .engines import check_engine
from .state import resources_state
from .thread import HCOMM_NOTIFY_MAX_NUM

NAME_MAX = 191


class PairWorld:
    """What the two ends of one HCOMM channel share: a root of the transport (its id: who created
    an end joins it, rank = device; who destroyed one leaves it), the ends of this process."""

    def __init__(self):
        self.id = _sim().transport.new_root()
        self.comms: dict = {}

    def place(self, rank):
        return topology.default_place(rank)


class EndOwner:
    """The owner of one HCOMM channel end: its endpoint's device, in the pair's world (the
    communicator's stand-in for :class:`pyhcomm.hcomm.resources.channel.ChannelEnd`)."""

    l3 = True

    def __init__(self, endpoint, world: PairWorld):
        self.endpoint, self.world = endpoint, world
        self.device = self.rank = endpoint.device
        self.name = f"endpoint of device {self.device}"
        self.suspended = self.destroyed = False


def desc_init(desc) -> None:
    """``HcommChannelDescInit``: 0xFF in the union, the ABI header, no notifies or memories,
    reserved role, port 0, QoS 4, a reserved remote endpoint, no name."""
    struct_arg(desc, HcommChannelDesc, "HcommChannelDescInit", "channelDesc")
    desc.fill(0xFF)
    desc.header = CommAbiHeader(version=HCOMM_CHANNEL_VERSION, magicWord=HCOMM_CHANNEL_MAGIC_WORD, size=472, reserved=0)
    desc.notifyNum, desc.exchangeAllMems, desc.memHandles, desc.memHandleNum = 0, False, 0, 0
    desc.socket, desc.role, desc.port, desc.qos, desc.channelName = 0, HcommSocketRole.HCOMM_SOCKET_ROLE_RESERVED, 0, \
        HCOMM_UB_QOS_DEFAULT, 0
    desc.remoteEndpoint = type(desc.remoteEndpoint)()
    endpoint_desc_init(desc.remoteEndpoint)


def _name(value, api: str, i: int) -> str:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value == 0):
        return ""
    if isinstance(value, int):
        try:
            alloc = memory.resolve(value, 1, memory.HOST)
            raw = memory.read_host(value, min(NAME_MAX + 1, alloc.end - value))
        except memory.BadRange as why:
            raise para(api, f"channelDescs[{i}].channelName: {why}") from None
        value = raw.split(b"\0", 1)[0].decode("utf-8", "replace")
    if not isinstance(value, str) or len(value.encode()) > NAME_MAX:
        raise para(api, f"channelDescs[{i}].channelName must be a str of at most {NAME_MAX} bytes")
    return value


def _remote_device(ep, desc, i: int, api: str) -> int:
    remote = desc.remoteEndpoint
    if remote.loc.locType != EndpointLocType.ENDPOINT_LOC_TYPE_DEVICE:
        raise not_support(api, f"channelDescs[{i}].remoteEndpoint: only device endpoints are modelled")
    if remote.protocol != ep.desc.protocol:
        raise para(api, f"channelDescs[{i}].remoteEndpoint speaks {CommProtocol(remote.protocol).name}, the local "
                        f"endpoint {CommProtocol(ep.desc.protocol).name}")
    device = remote.loc.superDevId
    if not 0 <= device < _sim().runtime.device_count or \
            topology.endpoint(topology.default_place(device), remote.protocol).key() != remote.key():
        raise para(api, f"channelDescs[{i}].remoteEndpoint is not an endpoint of a device (HcommEndpointGetDescs)")
    if device == ep.device:
        raise para(api, f"channelDescs[{i}].remoteEndpoint is on the local device {device}")
    if remote.protocol not in topology.protocols_between(ep.device, device):
        raise not_found(api, f"channelDescs[{i}]: no {CommProtocol(remote.protocol).name} link between device "
                             f"{ep.device} and device {device}")
    return device


def _check(ep, engine, desc, i: int, api: str):
    if not isinstance(desc, HcommChannelDesc):
        raise TypeError(f"{api}: channelDescs[{i}] must be an HcommChannelDesc, not {type(desc).__name__}")
    if desc.header.magicWord != HCOMM_CHANNEL_MAGIC_WORD:
        raise para(api, f"channelDescs[{i}] was not initialised with HcommChannelDescInit")
    device = _remote_device(ep, desc, i, api)
    allowed = ch_mod.channel_protocols(engine)
    if desc.remoteEndpoint.protocol not in allowed:
        raise not_support(api, f"channelDescs[{i}]: {engine.name} channels on {_sim().runtime.product.name} do not "
                               f"speak {CommProtocol(desc.remoteEndpoint.protocol).name}")
    n = desc.notifyNum
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= HCOMM_NOTIFY_MAX_NUM:
        raise para(api, f"channelDescs[{i}].notifyNum {n!r} is outside [0, {HCOMM_NOTIFY_MAX_NUM}]")
    if desc.role not in set(HcommSocketRole):
        raise para(api, f"channelDescs[{i}].role {desc.role!r} is not an HcommSocketRole")
    if isinstance(desc.port, bool) or not isinstance(desc.port, int) or not 0 <= desc.port < 1 << 16:
        raise para(api, f"channelDescs[{i}].port {desc.port!r} is not a 16-bit port")
    if desc.exchangeAllMems:
        mems = list(ep.mems.values())
    else:
        handles = int_array(desc.memHandles, desc.memHandleNum, api, f"channelDescs[{i}].memHandles")
        mems = []
        for h in handles:
            m = ep.mems.get(h)
            if not isinstance(m, RegisteredMem):
                raise para(api, f"channelDescs[{i}]: memHandle {h!r} is not registered on this endpoint")
            mems.append(m)
    return device, n, mems, _name(desc.channelName, api, i)


def create(endpoint_handle, engine, channel_descs, config=None, api: str = "HcommChannelCreate"):
    """``HcommChannelCreate``: this device's ends of the described channels (see the module docstring)."""
    ep = get_endpoint(endpoint_handle, api)
    engine = check_engine(engine, api)
    if channel_descs is None:
        raise ptr(api, "channelDescs is NULL")
    descs = [channel_descs] if isinstance(channel_descs, HcommChannelDesc) else list(channel_descs)
    if not descs:
        raise para(api, "channelNum is 0")
    ch_mod.check_has_channels(engine, api)
    cfg = channel_config.get_config(config, "hcomm", api) if config else None
    checked = [_check(ep, engine, d, i, api) for i, d in enumerate(descs)]
    channel_config.check_shared_queue(cfg, engine, descs, api)
    sim = _sim()
    worlds = resources_state(sim).channel_worlds
    out = []
    with sim.lock:
        for d, (device, notify_num, mems, name) in zip(descs, checked):
            key = ("hcomm", int(engine), int(d.remoteEndpoint.protocol), min(ep.device, device),
                   max(ep.device, device), name)
            pending = worlds.setdefault(key, [])       # the n-th creation on a device pairs with the peer's n-th
            world = next((w for w in pending if ep.device not in sim.transport.members(w.id)), None)
            if world is None:
                world = PairWorld()
                pending.append(world)
            owner = EndOwner(ep, world)
            end = ch_mod.ChannelEnd(owner, engine, d.remoteEndpoint.protocol, device, notify_num, mems)
            sim.transport.join(world.id, 2, ep.device, ep.device)
            world.comms[ep.device] = end
            ep.channels = getattr(ep, "channels", []) + [end]
            sim.transport.publish(end, key + (world.id,))
            out.append(end)
    return out


def _end(handle, api: str, i: int):
    end = ch_mod.get_channel(handle, api, f"channels[{i}]")
    if not getattr(end.comm, "l3", False):
        raise para(api, f"channels[{i}] 0x{handle:x} was acquired on a communicator (HcclChannelAcquire)")
    return end


def status(channels) -> list[int]:
    api = "HcommChannelGetStatus"
    if channels is None:
        raise ptr(api, "channelList is NULL")
    out = []
    for i, h in enumerate(sequence(channels, api, "channelList")):
        end = _end(h, api, i)
        peer = end.peer
        if peer is not None and peer.closed:
            out.append(int(HcommChannelStatus.HCOMM_CHANNEL_STATUS_FAILED_INTERNAL))
        elif peer is None:
            out.append(int(HcommChannelStatus.HCOMM_CHANNEL_STATUS_CONNECTING))
        else:
            out.append(int(HcommChannelStatus.HCOMM_CHANNEL_STATUS_READY))
    return out


def destroy(channels) -> None:
    api = "HcommChannelDestroy"
    if channels is None:
        raise ptr(api, "channels is NULL")
    ends = [_end(h, api, i) for i, h in enumerate(sequence(channels, api, "channels"))]
    if not ends:
        raise para(api, "channelNum is 0")
    sim = _sim()
    with sim.lock:
        for end in ends:
            sim.transport.withdraw(end)
            sim.handles.channels.remove(end.handle)
            end.comm.world.comms.pop(end.comm.rank, None)
            sim.transport.leave(end.comm.world.id, end.comm.rank)
