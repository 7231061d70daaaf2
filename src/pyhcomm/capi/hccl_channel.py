"""``hccl_channel.h`` (with the rank graph and memory registration), in the flat C tier."""
from __future__ import annotations

from ..defs.hccl_channel import HcclChannelConfigType  # noqa: F401
from ..hcomm.resources import channel as _ch
from ..hcomm.resources import channel_config as _cfg
from ._wrap import c_api

__all__ = ["HcclChannelDesc", "HcclChannelDescInit", "HcclChannelAcquire", "HcclChannelGetHcclBuffer",
           "HcclCommMemReg", "HcclChannelGetRemoteMems", "CommMem", "CommMemType",
           "CommProtocol", "CommLink", "EndpointDesc", "HCCL_CHANNEL_MAGIC_WORD", "HCCL_CHANNEL_VERSION"]

from ..defs.hccl_channel import HCCL_CHANNEL_MAGIC_WORD, HCCL_CHANNEL_VERSION, HcclChannelDesc  # noqa: E402
from ..defs.rank_graph import CommLink  # noqa: E402
from ..defs.res_defs import CommMem, CommMemType, CommProtocol, EndpointDesc  # noqa: E402


@c_api()
def HcclChannelDescInit(channelDesc):  # noqa: N803
    """Initialise a descriptor (or, pyhcomm's extension, a list of them) to the C defaults:
    0xFF everywhere, the ABI header, remote rank ``~0``, reserved protocol and endpoints."""
    _ch.desc_init(channelDesc)


@c_api([])
def HcclChannelAcquire(comm, engine, channelDescs):  # noqa: N803
    """``ret, channels = HcclChannelAcquire(comm, engine, channelDescs)``: get or create this
    rank's end of each described channel (a list of descriptors, or one)."""
    descs = _ch.desc_list(channelDescs, "HcclChannelAcquire")
    return [c.handle for c in _ch.acquire(comm, engine, descs, None if descs is None else len(descs))]


@c_api(0, 0)
def HcclChannelGetHcclBuffer(comm, channel):
    """``ret, addr, size``: the peer's HCCL buffer as seen through ``channel`` (waits for the peer)."""
    return _ch.peer_hccl_buffer(comm, channel)


@c_api(0)
def HcclCommMemReg(comm, memTag, mem):  # noqa: N803
    """``ret, memHandle = HcclCommMemReg(comm, tag, CommMem(...))``."""
    return _ch.mem_reg(comm, memTag, mem)


@c_api(0, [], [])
def HcclChannelGetRemoteMems(comm, channel):
    """``ret, memNum, mems, tags``: the memories the peer registered and exposed on ``channel``."""
    return _ch.remote_mems(comm, channel)


# -- channel configs, query, destroy ----------------------------------------------------------

__all__ += ["HcclChannelConfigCreate", "HcclChannelConfigDestroy", "HcclChannelConfigSetInt", "HcclChannelConfigSetStr",
            "HcclChannelAcquireWithConfig", "HcclChannelQuery", "HcclChannelDestroy", "HcclChannelConfigType"]


@c_api(0)
def HcclChannelConfigCreate():
    """``ret, config``: a channel config (``IS_SHARED_QUEUE`` 0, no tag)."""
    return _cfg.create("hccl")


@c_api()
def HcclChannelConfigDestroy(config):
    _cfg.destroy_config(config, "hccl", "HcclChannelConfigDestroy")


@c_api()
def HcclChannelConfigSetInt(config, type, value):  # noqa: A002
    _cfg.set_int(config, "hccl", type, value, "HcclChannelConfigSetInt")


@c_api()
def HcclChannelConfigSetStr(config, type, value):  # noqa: A002
    _cfg.set_str(config, type, value)


@c_api([])
def HcclChannelAcquireWithConfig(comm, engine, channelDescs, config):  # noqa: N803
    """``ret, channels``: ``HcclChannelAcquire`` with a channel config (0: none)."""
    return [c.handle for c in _cfg.acquire_with_config(comm, engine, channelDescs, config)]


@c_api([])
def HcclChannelQuery(comm, engine, channelDescs):  # noqa: N803
    """``ret, channels``: each described channel's handle if this rank acquired it, else 0."""
    return _cfg.query(comm, engine, channelDescs)


@c_api()
def HcclChannelDestroy(comm, channels):
    """Close CCU channel ends (the peer sees them closed)."""
    _cfg.destroy_channels(comm, channels)
