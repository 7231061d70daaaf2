"""``hcomm_res_defs.h``: protocols, addresses, endpoints, memories and the ABI header.

The structs have pyhccl's fields and zero defaults; their C unions are byte arrays (``raws``)
read and written through the named members (see :mod:`.cstruct`). ``EndpointDescInit`` fills a
descriptor with 0xFF and marks protocol, address type and location type reserved, as the C
inline does.
"""
from __future__ import annotations

import ipaddress
from enum import IntEnum

from .cstruct import CStruct, RawField, raw_bytes


class CommProtocol(IntEnum):
    COMM_PROTOCOL_RESERVED = -1
    COMM_PROTOCOL_HCCS = 0
    COMM_PROTOCOL_ROCE = 1
    COMM_PROTOCOL_PCIE = 2
    COMM_PROTOCOL_SIO = 3
    COMM_PROTOCOL_UB_CTP = 4
    COMM_PROTOCOL_UBC_CTP = 4      # the older spelling of value 4
    COMM_PROTOCOL_UBC_TP = 5
    COMM_PROTOCOL_UB_MEM = 6
    COMM_PROTOCOL_UBOE = 7
    COMM_PROTOCOL_HCCS_ONLY = 8
    COMM_PROTOCOL_UB_RTP = 9


class CommAddrType(IntEnum):
    COMM_ADDR_TYPE_RESERVED = -1
    COMM_ADDR_TYPE_IP_V4 = 0
    COMM_ADDR_TYPE_IP_V6 = 1
    COMM_ADDR_TYPE_ID = 2
    COMM_ADDR_TYPE_EID = 3


class EndpointLocType(IntEnum):
    ENDPOINT_LOC_TYPE_RESERVED = -1
    ENDPOINT_LOC_TYPE_DEVICE = 0
    ENDPOINT_LOC_TYPE_HOST = 1


class CommMemType(IntEnum):
    COMM_MEM_TYPE_INVALID = -1
    COMM_MEM_TYPE_DEVICE = 0
    COMM_MEM_TYPE_HOST = 1
    COMM_MEM_TYPE_CCU = 2


class HcommSocketRole(IntEnum):
    HCOMM_SOCKET_ROLE_RESERVED = -1
    HCOMM_SOCKET_ROLE_CLIENT = 0
    HCOMM_SOCKET_ROLE_SERVER = 1


class ThreadType(IntEnum):
    THREAD_TYPE_INVALID = -1
    THREAD_TYPE_TS = 0
    THREAD_TYPE_CPU = 1


class HcommChannelStatus(IntEnum):
    HCOMM_CHANNEL_STATUS_READY = 0
    HCOMM_CHANNEL_STATUS_CONNECTING = 1
    HCOMM_CHANNEL_STATUS_FAILED_INTERNAL = 2


class HcommEndpointFeatureType(IntEnum):
    HCOMM_ENDPOINT_FEATURE_INVALID = -1
    HCOMM_ENDPOINT_FEATURE_NDA = 0


class HcommChannelConfigType(IntEnum):
    HCOMM_CHANNEL_CONFIG_TYPE_INVALID = -1
    HCOMM_CHANNEL_CONFIG_TYPE_IS_SHARED_QUEUE = 0


COMM_ADDR_EID_LEN = 16
HCOMM_CHANNEL_MAGIC_WORD = 0x0FCF0F0F
HCOMM_CHANNEL_VERSION = 4
HCOMM_UB_QOS_DEFAULT = 4
HCOMM_THREAD_CONFIG_MAGIC_WORD = 0x0F0F0F2F
HCOMM_THREAD_CONFIG_VERSION = 1


class CommAbiHeader(CStruct):
    """``CommAbiHeader``: version, magic word, size and a reserved word of an ABI struct."""

    _fields_ = (("version", 0), ("magicWord", 0), ("size", 0), ("reserved", 0))


class CommAddr(CStruct):
    """``CommAddr``: an address type and a 36-byte union (IPv4 / IPv6 / ``id`` / 16-byte EID).

    ``addr`` (pyhcomm's) reads and writes the union as text for the type: dotted IPv4, IPv6,
    hex EID, decimal id."""

    _raws_ = (("raws", 36),)
    _fields_ = (("type", CommAddrType.COMM_ADDR_TYPE_IP_V4),)
    raws = raw_bytes("raws", 36)
    id = RawField("raws", 0, "I")

    @property
    def addr(self) -> str:
        raw = self._raws
        if self.type == CommAddrType.COMM_ADDR_TYPE_IP_V4:
            return str(ipaddress.IPv4Address(bytes(raw[:4])))
        if self.type == CommAddrType.COMM_ADDR_TYPE_IP_V6:
            return str(ipaddress.IPv6Address(bytes(raw[:16])))
        if self.type == CommAddrType.COMM_ADDR_TYPE_EID:
            return bytes(raw[:COMM_ADDR_EID_LEN]).hex()
        return str(self.id)

    @addr.setter
    def addr(self, text: str) -> None:
        if self.type == CommAddrType.COMM_ADDR_TYPE_IP_V4:
            self.raws = ipaddress.IPv4Address(text).packed
        elif self.type == CommAddrType.COMM_ADDR_TYPE_IP_V6:
            self.raws = ipaddress.IPv6Address(text).packed
        elif self.type == CommAddrType.COMM_ADDR_TYPE_EID:
            self.raws = bytes.fromhex(text)[:COMM_ADDR_EID_LEN]
        else:
            self.raws = b""
            self.id = int(text)


class EndpointLoc(CStruct):
    """``EndpointLoc``: a location type and a 60-byte union (device: ``devPhyId``,
    ``superDevId``, ``serverIdx``, ``superPodIdx``; host: ``hostId``)."""

    _raws_ = (("raws", 60),)
    _fields_ = (("locType", EndpointLocType.ENDPOINT_LOC_TYPE_DEVICE),)
    raws = raw_bytes("raws", 60)
    devPhyId = RawField("raws", 0, "I")
    superDevId = RawField("raws", 4, "I")
    serverIdx = RawField("raws", 8, "I")
    superPodIdx = RawField("raws", 12, "I")
    hostId = RawField("raws", 0, "I")


class EndpointDesc(CStruct):
    """``EndpointDesc``: protocol, address and location of one end of a link (52 raw bytes)."""

    _raws_ = (("raws", 52),)
    _fields_ = (("protocol", CommProtocol.COMM_PROTOCOL_HCCS), ("commAddr", CommAddr), ("loc", EndpointLoc))
    raws = raw_bytes("raws", 52)

    def key(self) -> tuple:
        """What identifies the endpoint: protocol, address type and bytes, location."""
        return (int(self.protocol), int(self.commAddr.type), self.commAddr.raws, int(self.loc.locType),
                self.loc.raws)


def endpoint_desc_init(desc: EndpointDesc) -> None:
    """``EndpointDescInit``: 0xFF everywhere, protocol / address type / location type reserved."""
    desc.fill(0xFF)
    desc.commAddr.fill(0xFF)
    desc.loc.fill(0xFF)
    desc.protocol = CommProtocol.COMM_PROTOCOL_RESERVED
    desc.commAddr.type = CommAddrType.COMM_ADDR_TYPE_RESERVED
    desc.loc.locType = EndpointLocType.ENDPOINT_LOC_TYPE_RESERVED


class CommMem(CStruct):
    """``CommMem``: a memory range to register (``HcclCommMemReg``) or one a peer exposed."""

    _fields_ = (("type", CommMemType.COMM_MEM_TYPE_DEVICE), ("addr", 0), ("size", 0))


class HcommChannelDesc(CStruct):
    """``HcommChannelDesc`` (``hcomm_channel.h``) for ``HcommChannelCreate``: the remote
    endpoint, notifies, memories to exchange, socket role and port, a 128-byte protocol union,
    QoS and a channel name (``channelName``: a host pointer to a C string, or a str)."""

    _raws_ = (("raws", 128),)
    _fields_ = (("header", CommAbiHeader), ("remoteEndpoint", EndpointDesc), ("notifyNum", 0),
                ("exchangeAllMems", False), ("memHandles", 0), ("memHandleNum", 0), ("socket", 0),
                ("role", HcommSocketRole.HCOMM_SOCKET_ROLE_CLIENT), ("port", 0), ("qos", 0), ("channelName", 0))
    raws = raw_bytes("raws", 128)


class ThreadConfig(CStruct):
    """``ThreadConfig``: the notify count of one thread of ``HcclThreadAcquireWithConfig``;
    initialise it with ``ThreadConfigInit``."""

    _fields_ = (("header", CommAbiHeader), ("notifyNumPerThread", 0))
