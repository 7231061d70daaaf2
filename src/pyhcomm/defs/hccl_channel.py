"""``hccl_channel.h``: the channel descriptor of ``HcclChannelAcquire`` and channel configs.

``HcclChannelDesc`` ends in a 128-byte union: ``roceAttr`` (``queueNum``, ``retryCnt``,
``retryInterval``, ``tc``, ``sl``) or ``ubMemAttr`` (``pathMode``, which shares its byte with
``queueNum``). ``HcclChannelDescInit`` fills the descriptor with 0xFF, as the C inline does, so a
member left alone reads all ones: "not set, use the default".
"""
from __future__ import annotations

from enum import IntEnum

from .cstruct import CStruct, RawField, raw_bytes
from .res_defs import CommAbiHeader, CommProtocol, EndpointDesc, endpoint_desc_init

HCCL_CHANNEL_MAGIC_WORD = 0x0F0F0F0F
HCCL_CHANNEL_VERSION = 1
HCCL_CHANNEL_DESC_RAW_MAX_LEN = 128
#: ``~0U``: the remote rank of an initialised descriptor.
RANK_NOT_SET = 0xFFFFFFFF
#: ``sizeof(HcclChannelDesc)`` on a 64-bit host.
HCCL_CHANNEL_DESC_SIZE = 496


class HcclChannelConfigType(IntEnum):
    HCCL_CHANNEL_CONFIG_TYPE_INVALID = -1
    HCCL_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE = 0
    HCCL_CHANNEL_CONFIG_TYPE_SHARED_QUEUE_TAG = 1


class HcclChannelDesc(CStruct):
    """``HcclChannelDesc`` with the C field names; initialise it with ``HcclChannelDescInit``.

    ``memHandles`` is a list of ``HcclMemHandle`` ints (pyhcomm's) or, as in C, a host pointer to
    ``memHandleNum`` 64-bit handles (0 = NULL)."""

    _raws_ = (("raws", HCCL_CHANNEL_DESC_RAW_MAX_LEN),)
    _fields_ = (("header", CommAbiHeader), ("remoteRank", 0), ("channelProtocol", CommProtocol.COMM_PROTOCOL_HCCS),
                ("localEndpoint", EndpointDesc), ("remoteEndpoint", EndpointDesc), ("notifyNum", 0),
                ("memHandles", 0), ("memHandleNum", 0))
    raws = raw_bytes("raws", HCCL_CHANNEL_DESC_RAW_MAX_LEN)
    queueNum = RawField("raws", 0, "I")
    retryCnt = RawField("raws", 4, "I")
    retryInterval = RawField("raws", 8, "I")
    tc = RawField("raws", 12, "B")
    sl = RawField("raws", 13, "B")
    pathMode = RawField("raws", 0, "B")


def channel_desc_init(desc: HcclChannelDesc) -> None:
    """``HcclChannelDescInit`` for one descriptor (see the module docstring)."""
    desc.fill(0xFF)
    desc.header = CommAbiHeader(version=HCCL_CHANNEL_VERSION, magicWord=HCCL_CHANNEL_MAGIC_WORD,
                                size=HCCL_CHANNEL_DESC_SIZE, reserved=0)
    desc.remoteRank = RANK_NOT_SET
    desc.channelProtocol = CommProtocol.COMM_PROTOCOL_RESERVED
    desc.notifyNum = 0
    desc.memHandles = 0
    desc.memHandleNum = 0
    desc.localEndpoint = EndpointDesc()
    desc.remoteEndpoint = EndpointDesc()
    endpoint_desc_init(desc.localEndpoint)
    endpoint_desc_init(desc.remoteEndpoint)
