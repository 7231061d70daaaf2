"""``hcomm_channel.h``: HCOMM channels on endpoints, without a communicator, in the flat C tier
(model: :mod:`pyhcomm.hcomm.resources.hcomm_channel`)."""
from __future__ import annotations

from ..defs.res_defs import HcommChannelConfigType, HcommChannelDesc, HcommChannelStatus  # noqa: F401
from ..hcomm.resources import channel_config as _cfg
from ..hcomm.resources import hcomm_channel as _hch
from ._wrap import c_api

__all__ = ["HcommChannelDescInit", "HcommChannelCreate", "HcommChannelCreateWithConfig", "HcommChannelGetStatus",
           "HcommChannelDestroy", "HcommChannelConfigCreate", "HcommChannelConfigDestroy", "HcommChannelConfigSetInt",
           "HcommChannelDesc", "HcommChannelStatus", "HcommChannelConfigType"]


@c_api()
def HcommChannelDescInit(channelDesc):  # noqa: N803
    """Set an ``HcommChannelDesc`` to the C defaults (see :func:`pyhcomm.hcomm.resources.hcomm_channel.desc_init`)."""
    _hch.desc_init(channelDesc)


@c_api([])
def HcommChannelCreate(endpointHandle, engine, channelDescs):  # noqa: N803
    """``ret, channels``: this device's end of each described channel (pairs with the peer's)."""
    return [c.handle for c in _hch.create(endpointHandle, engine, channelDescs)]


@c_api([])
def HcommChannelCreateWithConfig(endpointHandle, engine, channelDescs, config):  # noqa: N803
    """``ret, channels``: ``HcommChannelCreate`` with a channel config (0: none)."""
    return [c.handle for c in _hch.create(endpointHandle, engine, channelDescs, config,
                                          "HcommChannelCreateWithConfig")]


@c_api([])
def HcommChannelGetStatus(channelList):  # noqa: N803
    """``ret, statusList``: ``HcommChannelStatus`` of each channel (ready, connecting, failed)."""
    return _hch.status(channelList)


@c_api()
def HcommChannelDestroy(channels):
    _hch.destroy(channels)


@c_api(0)
def HcommChannelConfigCreate():
    return _cfg.create("hcomm")


@c_api()
def HcommChannelConfigDestroy(config):
    _cfg.destroy_config(config, "hcomm", "HcommChannelConfigDestroy")


@c_api()
def HcommChannelConfigSetInt(config, type, value):  # noqa: A002
    _cfg.set_int(config, "hcomm", type, value, "HcommChannelConfigSetInt")
