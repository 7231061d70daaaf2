"""Cluster topology per product: servers of NPUs, super pods, and the links between two devices.

Simulated device ``d`` sits in server ``d // devices_per_server`` (``PYHCOMM_DEVICES_PER_SERVER``
overrides the product's number). Links, as each product has them:

* Atlas A2: 8 NPUs a server joined by HCCS (also HCCS_ONLY); RoCE between servers (and inside).
* Atlas A3: NPUs of two dies (devices ``2k``, ``2k+1``) joined by SIO; HCCS inside a super node
  (``PYHCOMM_SUPER_POD_SIZE`` devices, default 768 dies = 384 NPUs); RoCE everywhere.
* Atlas 350: UB links inside a super node (UBC_CTP, UBC_TP, UB_MEM, UBoE); RoCE everywhere.
* Products without HCOMM: PCIe inside a server, RoCE between servers.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import IntEnum

from .core.runtime import runtime


class CommProtocol(IntEnum):
    COMM_PROTOCOL_RESERVED = -1
    COMM_PROTOCOL_HCCS = 0
    COMM_PROTOCOL_ROCE = 1
    COMM_PROTOCOL_PCIE = 2
    COMM_PROTOCOL_SIO = 3
    COMM_PROTOCOL_UBC_CTP = 4
    COMM_PROTOCOL_UBC_TP = 5
    COMM_PROTOCOL_UB_MEM = 6
    COMM_PROTOCOL_UBOE = 7
    COMM_PROTOCOL_HCCS_ONLY = 8


COMM_PROTOCOL_UB_CTP = CommProtocol.COMM_PROTOCOL_UBC_CTP  # the newer spelling of value 4
P = CommProtocol


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


@dataclass
class CommAddr:
    type: int = CommAddrType.COMM_ADDR_TYPE_RESERVED
    addr: str = ""
    id: int = 0


@dataclass
class EndpointLoc:
    locType: int = EndpointLocType.ENDPOINT_LOC_TYPE_RESERVED
    devPhyId: int = -1
    superDevId: int = -1
    serverIdx: int = -1
    superPodIdx: int = -1


@dataclass
class EndpointDesc:
    """``EndpointDesc``: protocol, address and location of one end of a link."""

    protocol: int = P.COMM_PROTOCOL_RESERVED
    commAddr: CommAddr = field(default_factory=CommAddr)
    loc: EndpointLoc = field(default_factory=EndpointLoc)


@dataclass
class LinkAttr:
    linkProtocol: int = P.COMM_PROTOCOL_RESERVED


@dataclass
class CommLink:
    """``CommLink`` of ``HcclRankGraphGetLinks``."""

    srcEndpointDesc: EndpointDesc
    dstEndpointDesc: EndpointDesc
    linkAttr: LinkAttr


def devices_per_server() -> int:
    env = os.environ.get("PYHCOMM_DEVICES_PER_SERVER")
    return max(1, int(env)) if env else runtime.product.devices_per_server


def super_pod_size() -> int:
    env = os.environ.get("PYHCOMM_SUPER_POD_SIZE")
    return max(1, int(env)) if env else 768


def server_of(device: int) -> int:
    return device // devices_per_server()


def protocols_between(dev_a: int, dev_b: int) -> list[CommProtocol]:
    """The protocols of the links between two devices, best first (empty for a device and itself)."""
    if dev_a == dev_b:
        return []
    product = runtime.product
    same_server = server_of(dev_a) == server_of(dev_b)
    if product.family == "A2":
        return [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE] if same_server \
            else [P.COMM_PROTOCOL_ROCE]
    if product.family == "A3":
        out = []
        if dev_a // 2 == dev_b // 2:
            out.append(P.COMM_PROTOCOL_SIO)
        if dev_a // super_pod_size() == dev_b // super_pod_size():
            out += [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY]
        return out + [P.COMM_PROTOCOL_ROCE]
    if product.family == "950":
        out = []
        if dev_a // super_pod_size() == dev_b // super_pod_size():
            out += [P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM, P.COMM_PROTOCOL_UBOE]
        return out + [P.COMM_PROTOCOL_ROCE]
    return ([P.COMM_PROTOCOL_PCIE] if same_server else []) + [P.COMM_PROTOCOL_ROCE]


def endpoint(device: int, protocol: int) -> EndpointDesc:
    """The endpoint of ``device`` for ``protocol`` (deterministic synthetic addresses)."""
    per = devices_per_server()
    server = device // per
    loc = EndpointLoc(EndpointLocType.ENDPOINT_LOC_TYPE_DEVICE, device % per, device,
                      server, device // super_pod_size())
    if protocol in (P.COMM_PROTOCOL_ROCE, P.COMM_PROTOCOL_UBOE):
        addr = CommAddr(CommAddrType.COMM_ADDR_TYPE_IP_V4, f"192.168.{server}.{device % per + 1}")
    elif protocol in (P.COMM_PROTOCOL_UBC_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM):
        addr = CommAddr(CommAddrType.COMM_ADDR_TYPE_EID, f"eid:{device:04x}")
    else:
        addr = CommAddr(CommAddrType.COMM_ADDR_TYPE_ID, "", device)
    return EndpointDesc(int(protocol), addr, loc)


def links(dev_a: int, dev_b: int) -> list[CommLink]:
    """``CommLink`` objects for every protocol between two devices."""
    return [CommLink(endpoint(dev_a, p), endpoint(dev_b, p), LinkAttr(int(p))) for p in protocols_between(dev_a, dev_b)]
