"""Channel configs and the other channel calls of ``hccl_channel.h`` / ``hcomm_channel.h``:
``HcclChannelAcquireWithConfig``, ``HcclChannelQuery``, ``HcclChannelDestroy``.

A config (``HcclChannelConfigCreate`` / ``HcommChannelConfigCreate``) holds ``IS_SHARED_QUEUE``
(0 or 1) and, for HCCL, ``SHARED_QUEUE_TAG`` (a string, < 128 bytes). A shared queue is an AIV
feature on UB_CTP / UBC_TP channels (Atlas 350): other engines or protocols with
``IS_SHARED_QUEUE`` set are ``HCCL_E_NOT_SUPPORT``. pyhcomm keeps the tag and otherwise acquires
the channels as ``HcclChannelAcquire`` does (a shared queue changes no ordering pyhcomm models).

``HcclChannelQuery`` answers, per descriptor, the handle of the live channel end it describes, or
0, creating nothing. ``HcclChannelDestroy`` closes channel ends of the CCU engine (the only ones
the call is documented for; others: ``HCCL_E_NOT_SUPPORT``); the peer sees its end closed.
"""
from __future__ import annotations

from ...defs.hccl_channel import HcclChannelConfigType
from ...defs.res_defs import CommProtocol, HcommChannelConfigType
from ...errors import not_support, para, ptr
from ...sim import current_sim as _sim
from . import channel as ch_mod
from .owner import get_owner
from ...args import live_object
from .engines import check_engine

TAG_MAX = 128
SHARED_QUEUE_PROTOCOLS = {CommProtocol.COMM_PROTOCOL_UB_CTP, CommProtocol.COMM_PROTOCOL_UBC_TP}


class ChannelConfig:
    """An ``HcclChannelConfig`` or ``HcommChannelConfig`` (``kind`` "hccl" / "hcomm")."""

    def __init__(self, kind: str):
        self.kind = kind
        self.shared_queue = 0
        self.tag = ""
        self.handle = _sim().handles.misc.add(self)


def create(kind: str) -> int:
    return ChannelConfig(kind).handle


def get_config(handle, kind: str, api: str) -> ChannelConfig:
    maker = f"{'Hccl' if kind == 'hccl' else 'Hcomm'}ChannelConfigCreate"
    cfg = live_object(handle, ChannelConfig, api, "config", f"a config of {maker}", para)
    if cfg.kind != kind:
        raise para(api, f"config {handle!r} was made by another call than {maker}")
    return cfg


def destroy_config(handle, kind: str, api: str) -> None:
    get_config(handle, kind, api)
    _sim().handles.misc.remove(handle)


def set_int(handle, kind: str, which, value, api: str) -> None:
    cfg = get_config(handle, kind, api)
    shared = (HcclChannelConfigType.HCCL_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE if kind == "hccl"
              else HcommChannelConfigType.HCOMM_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE)
    if which != shared:
        raise para(api, f"type {which!r} is not an integer setting (IS_SHARED_QUEUE = {int(shared)})")
    if value not in (0, 1):
        raise para(api, f"IS_SHARED_QUEUE value {value!r} must be 0 or 1")
    cfg.shared_queue = int(value)


def set_str(handle, which, value) -> None:
    api = "HcclChannelConfigSetStr"
    cfg = get_config(handle, "hccl", api)
    if which != HcclChannelConfigType.HCCL_CHANNEL_CONFIG_TYPE_SHARED_QUEUE_TAG:
        raise para(api, f"type {which!r} is not a string setting (SHARED_QUEUE_TAG = 1)")
    if value is None:
        raise ptr(api, "value is NULL")
    if not isinstance(value, str) or len(value.encode()) >= TAG_MAX:
        raise para(api, f"SHARED_QUEUE_TAG must be a str of fewer than {TAG_MAX} bytes")
    cfg.tag = value


def check_shared_queue(cfg: ChannelConfig | None, engine, descs, api: str) -> None:
    """``IS_SHARED_QUEUE``: channels of an engine that has shared queues (AIV), over UB_CTP / UBC_TP only."""
    if cfg is None or not cfg.shared_queue:
        return
    if not engine.channels.shared_queue:
        raise not_support(api, f"a shared queue is an AIV feature, not {engine.name}")
    for i, d in enumerate(descs):
        protocol = getattr(d, "channelProtocol", getattr(getattr(d, "remoteEndpoint", None), "protocol", None))
        if protocol not in SHARED_QUEUE_PROTOCOLS:
            raise not_support(api, f"channelDescs[{i}]: a shared queue needs UB_CTP or UBC_TP, not {protocol!r}")


def acquire_with_config(comm_handle, engine, channel_descs, config):
    api = "HcclChannelAcquireWithConfig"
    descs = ch_mod.desc_list(channel_descs, api)
    cfg = get_config(config, "hccl", api) if config else None
    if descs is not None:
        check_shared_queue(cfg, check_engine(engine, api), descs, api)
    return ch_mod.acquire(comm_handle, engine, descs, None if descs is None else len(descs))


def query(comm_handle, engine, channel_descs) -> list[int]:
    api = "HcclChannelQuery"
    comm = get_owner(comm_handle, api)
    engine = check_engine(engine, api)
    descs = ch_mod.desc_list(channel_descs, api)
    if descs is None:
        raise ptr(api, "channelDescs is NULL")
    if not descs:
        raise para(api, "channelNum is 0")
    out = []
    for i, d in enumerate(descs):
        protocol, _n, _mems = ch_mod._check_desc(comm, engine, d, i, api)
        end = comm.channel_ends.get(ch_mod._key(comm, engine, protocol, comm.rank, d.remoteRank))
        out.append(0 if end is None or end.closed else end.handle)
    return out


def destroy_channels(comm_handle, channels) -> None:
    api = "HcclChannelDestroy"
    comm = get_owner(comm_handle, api)
    if channels is None:
        raise ptr(api, "channels is NULL")
    ends = [ch_mod.get_channel(h, api, f"channels[{i}]") for i, h in enumerate(list(channels))]
    if not ends:
        raise para(api, "channelNum is 0")
    for i, end in enumerate(ends):
        if end.comm is not comm:
            raise para(api, f"channels[{i}] belongs to another communicator")
        if not end.engine.channels.destroyable:
            raise not_support(api, f"channels[{i}] is a {end.engine.name} channel: only CCU channels are destroyed "
                                   "(the others live as long as their communicator)")
    sim = _sim()
    with sim.lock:
        for end in ends:
            sim.transport.withdraw(end)
            sim.handles.channels.remove(end.handle)
            comm.channels.remove(end)
            for key in [k for k, v in comm.channel_ends.items() if v is end]:
                del comm.channel_ends[key]
