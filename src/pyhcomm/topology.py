"""Cluster topology per product: servers of NPUs, super pods, and the links between two ranks.

Where a rank sits (:class:`RankPlace`: server, device in the server, super pod) comes from the
communicator's rank table (``HcclCommInitClusterInfo``, :class:`RankTable`) or, by default, from
its simulated device: device ``d`` is device ``d % P`` of server ``d // P`` with ``P`` the product's
devices per server (``PYHCOMM_DEVICES_PER_SERVER`` overrides it). Links, as each product has them:

* Atlas A2: 8 NPUs a server joined by HCCS (also HCCS_ONLY); RoCE between servers (and inside).
* Atlas A3: NPUs of two dies (devices ``2k``, ``2k+1``) joined by SIO; HCCS inside a super node
  (``PYHCOMM_SUPER_POD_SIZE`` devices, default 768 dies = 384 NPUs); RoCE everywhere.
* Atlas 350: UB links inside a super node (UB_CTP, UBC_TP, UB_MEM, UBoE); RoCE everywhere.
* Atlas training series (Atlas 800 training server): two groups of four NPUs (devices 0-3, 4-7
  of a server), HCCS inside a group, PCIe between the groups; RoCE between servers.
* Other products without HCOMM (Atlas inference series, ...): PCIe inside a server, RoCE between
  servers.
"""
from __future__ import annotations

from .sim import current_sim as _sim

import json
import os
from dataclasses import dataclass

from .defs.rank_graph import CommLink, LinkAttr, comm_link_init  # noqa: F401  (re-exported)
from .defs.res_defs import (CommAddr, CommAddrType, CommProtocol, EndpointDesc, EndpointLoc,  # noqa: F401
                            EndpointLocType)


P = CommProtocol
COMM_PROTOCOL_UB_CTP = CommProtocol.COMM_PROTOCOL_UB_CTP
#: NPUs per HCCS group of an Atlas training series server (two groups of four).
TRAINING_GROUP = 4


#: The network layers of every communicator: 0, the fabric inside a node (a server, or a super pod on
#: Atlas A3 / 350); 1, RoCE between every rank (see :mod:`pyhcomm.hccl.rank_graph`).
LAYERS = (0, 1)
_NODE_PROTOCOLS = {
    "A2": (P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY),
    "A3": (P.COMM_PROTOCOL_SIO, P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY),
    "950": (P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM, P.COMM_PROTOCOL_UBOE),
}


def layer_protocols(layer: int) -> tuple:
    """The protocols of a layer's fabric on this product."""
    if layer == 1:
        return (P.COMM_PROTOCOL_ROCE,)
    return _NODE_PROTOCOLS.get(_sim().runtime.product.family, (P.COMM_PROTOCOL_PCIE,))


def devices_per_server() -> int:
    """Devices per server: ``PYHCOMM_DEVICES_PER_SERVER``, else the product's."""
    sim = _sim()
    return sim.config.devices_per_server or sim.runtime.product.devices_per_server


def super_pod_size() -> int:
    """Devices per super pod: ``PYHCOMM_SUPER_POD_SIZE`` (default 768)."""
    return _sim().config.super_pod_size


@dataclass(frozen=True)
class RankPlace:
    """Where one rank sits: server index, device index in the server, super pod, global device."""

    server: int
    local: int
    super_pod: int
    device: int


def default_place(device: int) -> RankPlace:
    """The default place of simulated device ``device``."""
    per = devices_per_server()
    return RankPlace(device // per, device % per, device // super_pod_size(), device)


def server_of(device: int) -> int:
    """The server of simulated device ``device`` in the default placement."""
    return device // devices_per_server()


def _place(x) -> RankPlace:
    return x if isinstance(x, RankPlace) else default_place(x)


def protocols_between(a, b) -> list[CommProtocol]:
    """The protocols of the links between two ranks (places, or devices in the default placement),
    best first (empty for a rank and itself)."""
    a, b = _place(a), _place(b)
    if a == b:
        return []
    product = _sim().runtime.product
    same_server = a.server == b.server
    if product.family == "A2":
        return [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY, P.COMM_PROTOCOL_ROCE] if same_server \
            else [P.COMM_PROTOCOL_ROCE]
    if product.family == "A3":
        out = []
        if same_server and a.local // 2 == b.local // 2:
            out.append(P.COMM_PROTOCOL_SIO)
        if a.super_pod == b.super_pod:
            out += [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_HCCS_ONLY]
        return out + [P.COMM_PROTOCOL_ROCE]
    if product.family == "950":
        out = []
        if a.super_pod == b.super_pod:
            out += [P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM, P.COMM_PROTOCOL_UBOE]
        return out + [P.COMM_PROTOCOL_ROCE]
    if product.family == "910" and same_server and a.local // TRAINING_GROUP == b.local // TRAINING_GROUP:
        return [P.COMM_PROTOCOL_HCCS, P.COMM_PROTOCOL_ROCE]
    return ([P.COMM_PROTOCOL_PCIE] if same_server else []) + [P.COMM_PROTOCOL_ROCE]


def endpoint(place, protocol: int) -> EndpointDesc:
    """The endpoint of a rank (place or device) for ``protocol`` (deterministic synthetic addresses:
    IPv4 ``192.168.<server>.<local + 1>`` for RoCE and UBoE, an EID naming the device for UB, the
    device id otherwise)."""
    place = _place(place)
    loc = EndpointLoc(locType=EndpointLocType.ENDPOINT_LOC_TYPE_DEVICE, devPhyId=place.local, superDevId=place.device,
                      serverIdx=place.server, superPodIdx=place.super_pod)
    if protocol in (P.COMM_PROTOCOL_ROCE, P.COMM_PROTOCOL_UBOE):
        addr = CommAddr(type=CommAddrType.COMM_ADDR_TYPE_IP_V4, addr=f"192.168.{place.server % 256}.{place.local + 1}")
    elif protocol in (P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM):
        addr = CommAddr(type=CommAddrType.COMM_ADDR_TYPE_EID, addr=f"{place.device:032x}")
    else:
        addr = CommAddr(type=CommAddrType.COMM_ADDR_TYPE_ID, id=place.device)
    return EndpointDesc(protocol=CommProtocol(protocol), commAddr=addr, loc=loc)


def links(a, b) -> list[CommLink]:
    """``CommLink`` objects for every protocol between two ranks (places or devices), one hop each."""
    a, b = _place(a), _place(b)
    out = []
    for p in protocols_between(a, b):
        link = CommLink()
        comm_link_init(link)
        link.srcEndpointDesc, link.dstEndpointDesc = endpoint(a, p), endpoint(b, p)
        link.linkAttr.linkProtocol = int(p)
        out.append(link)
    return out


class RankTable:
    """A cluster description: the place of every rank (HCCL's rank-table JSON).

    Accepted JSON (the fields pyhcomm reads): ``{"server_list": [{"server_id": "...", "device":
    [{"device_id": "0", "rank_id": "0"}, ...]}, ...]}``, optionally inside
    ``{"super_pod_list": [{"super_pod_id": "0", "server_list": [...]}]}`` for super pods.
    """

    def __init__(self, places: list[RankPlace]):
        self.places = places

    @property
    def nranks(self) -> int:
        return len(self.places)

    @classmethod
    def default(cls, nranks: int) -> "RankTable":
        """Rank ``r`` on device ``r`` (servers filled in order)."""
        return cls([default_place(r) for r in range(nranks)])

    @classmethod
    def from_json(cls, data) -> "RankTable":
        """Parse a rank table (a dict, JSON text, or a file path); raise ``ValueError`` if malformed."""
        if isinstance(data, str):
            if os.path.isfile(data):
                with open(data, encoding="utf-8") as f:
                    data = json.load(f)
            else:
                data = json.loads(data)
        pods = data.get("super_pod_list") or [{"super_pod_id": "0", "server_list": data.get("server_list")}]
        found: dict[int, RankPlace] = {}
        server_index = 0
        for pod_no, pod in enumerate(pods):
            servers = pod.get("server_list")
            if not isinstance(servers, list) or not servers:
                raise ValueError("rank table: server_list is missing or empty")
            for server in servers:
                devices = server.get("device")
                if not isinstance(devices, list) or not devices:
                    raise ValueError(f"rank table: server {server.get('server_id')!r} has no device list")
                for dev in devices:
                    rank, local = int(dev["rank_id"]), int(dev["device_id"])
                    if rank in found:
                        raise ValueError(f"rank table: rank {rank} appears twice")
                    found[rank] = RankPlace(server_index, local, int(pod.get("super_pod_id", pod_no)),
                                            server_index * devices_per_server() + local)
                server_index += 1
        if sorted(found) != list(range(len(found))):
            raise ValueError(f"rank table: rank ids {sorted(found)} are not 0..{len(found) - 1}")
        return cls([found[r] for r in range(len(found))])

    def to_json(self) -> dict:
        """The table as HCCL rank-table JSON (a dict)."""
        servers: dict = {}
        for rank, p in enumerate(self.places):
            servers.setdefault((p.super_pod, p.server), []).append({"device_id": str(p.local), "rank_id": str(rank)})
        pods: dict = {}
        for (pod, server), devs in sorted(servers.items()):
            pods.setdefault(pod, []).append({"server_id": f"192.168.{server}.0", "device": devs})
        return {"version": "1.2", "status": "completed",
                "super_pod_list": [{"super_pod_id": str(k), "server_list": v} for k, v in sorted(pods.items())]}


#: How each protocol's bandwidth is shared, per product family: ``"pair"``, a dedicated link per
#: ordered pair of devices (A2's HCCS full mesh inside a server, A3's SIO between the two dies of
#: a package); ``"port"``, one port per device and direction, shared by all its peers (a NIC for
#: RoCE, the port into the UB switches for A3's HCCS and Atlas 350's UB protocols, PCIe).
LINK_SHARING = {
    ("A2", P.COMM_PROTOCOL_HCCS): "pair",
    ("A2", P.COMM_PROTOCOL_HCCS_ONLY): "pair",
    ("A3", P.COMM_PROTOCOL_SIO): "pair",
}


def link_resources(family: str, protocol, src_device: int, dst_device: int) -> tuple:
    """The bandwidth resources a transfer from ``src_device`` to ``dst_device`` over ``protocol``
    occupies (for contention: transfers that share a resource share its bandwidth): the directed
    pair link, or the source's egress port and the destination's ingress port (see
    :data:`LINK_SHARING`). ``protocol`` is a :class:`CommProtocol` or its name."""
    if isinstance(protocol, str):
        protocol = P[protocol]
    protocol = P(protocol)
    if LINK_SHARING.get((family, protocol), "port") == "pair":
        return (("link", protocol.name, src_device, dst_device),)
    return (("out", protocol.name, src_device), ("in", protocol.name, dst_device))
