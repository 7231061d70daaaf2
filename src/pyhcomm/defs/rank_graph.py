"""``hccl_rank_graph.h``: links between ranks, topology types, endpoint attributes.

``CommLink.linkAttrRaws`` is the 128-byte ``linkAttr`` union: ``linkProtocol`` (int32 at 0) and
``hop`` (uint8 at 4); ``CommLink.linkAttr`` (pyhcomm's) is a view with those two members.
"""
from __future__ import annotations

from enum import IntEnum

from .cstruct import CStruct, RawField, raw_bytes
from .res_defs import CommAbiHeader, CommProtocol, EndpointDesc, endpoint_desc_init

COMM_LINK_MAGIC_WORD = 0x0F0E0F0F
COMM_LINK_VERSION = 1
#: ``sizeof(CommLink)``.
COMM_LINK_SIZE = 464


class EndpointAttr(IntEnum):
    ENDPOINT_ATTR_INVALID = -1
    ENDPOINT_ATTR_BW_COEFF = 0
    ENDPOINT_ATTR_DIE_ID = 1
    ENDPOINT_ATTR_LOCATION = 2


class CommTopo(IntEnum):
    COMM_TOPO_RESERVED = -1
    COMM_TOPO_CLOS = 0
    COMM_TOPO_1DMESH = 1
    COMM_TOPO_910_93 = 2
    COMM_TOPO_310P = 3
    COMM_TOPO_A2AXSERVER = 4
    COMM_TOPO_CUSTOM = 5


class HcclHeterogMode(IntEnum):
    HCCL_HETEROG_MODE_INVALID = -1
    HCCL_HETEROG_MODE_HOMOGENEOUS = 0
    HCCL_HETEROG_MODE_MIX_A2_A3 = 1


class LinkAttr:
    """The members of a ``CommLink``'s ``linkAttr`` union, read from and written to its bytes."""

    __slots__ = ("_raws",)
    linkProtocol = RawField("raws", 0, "i")
    hop = RawField("raws", 4, "B")

    def __init__(self, raws: bytearray):
        self._raws = raws

    def __repr__(self):
        return f"LinkAttr(linkProtocol={self.linkProtocol}, hop={self.hop})"


class CommLink(CStruct):
    """``CommLink`` of ``HcclRankGraphGetLinks``: source and destination endpoints and the link's
    attributes (``linkAttrRaws``, or ``linkAttr.linkProtocol`` / ``linkAttr.hop``)."""

    _raws_ = (("linkAttrRaws", 128),)
    _fields_ = (("header", CommAbiHeader), ("srcEndpointDesc", EndpointDesc), ("dstEndpointDesc", EndpointDesc))
    linkAttrRaws = raw_bytes("linkAttrRaws", 128)

    @property
    def linkAttr(self) -> LinkAttr:
        return LinkAttr(self._linkAttrRaws)


def comm_link_init(link: CommLink) -> None:
    """``CommLinkInit``: 0xFF everywhere, the ABI header, reserved endpoints and protocol, one hop."""
    link.fill(0xFF)
    link.header = CommAbiHeader(version=COMM_LINK_VERSION, magicWord=COMM_LINK_MAGIC_WORD, size=COMM_LINK_SIZE, reserved=0)
    link.srcEndpointDesc, link.dstEndpointDesc = EndpointDesc(), EndpointDesc()
    endpoint_desc_init(link.srcEndpointDesc)
    endpoint_desc_init(link.dstEndpointDesc)
    link.linkAttr.linkProtocol = CommProtocol.COMM_PROTOCOL_RESERVED
    link.linkAttr.hop = 1
