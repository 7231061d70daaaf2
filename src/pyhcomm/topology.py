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
        # UB inside a super pod; UB over Ethernet (UBoE) and RoCE reach other super pods
        out = []
        if a.super_pod == b.super_pod:
            out += [P.COMM_PROTOCOL_UB_CTP, P.COMM_PROTOCOL_UBC_TP, P.COMM_PROTOCOL_UB_MEM]
        return out + [P.COMM_PROTOCOL_UBOE, P.COMM_PROTOCOL_ROCE]
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
    """A cluster description: the place of every rank (HCCL's rank table, ``HcclCommInitClusterInfo``).

    :meth:`from_json` reads HCCL's rank-table formats (hicann/hccl
    ``docs/*/user_guide/cluster_info_config/``), only the fields that place a rank:

    * version 1.0 (Atlas A2, and A3 in server mode): ``{"server_list": [{"server_id": "node_0",
      "device": [{"device_id": "0", "rank_id": "0"}, ...]}, ...]}``;
    * version 1.2 (Atlas A3 super pods): the same ``server_list``, and ``"super_pod_list":
      [{"super_pod_id": "0", "server_list": [{"server_id": "node_0"}, ...]}, ...]`` naming the
      servers of each super pod (a pod's entries may also carry their ``device`` lists, the form
      pyhcomm wrote before);
    * version 2.0 (Atlas 350): ``{"rank_list": [{"rank_id": 0, "device_id": 0, "local_id": 0,
      "level_list": [{"net_layer": 0, "net_instance_id": "az0-rack0-pod0", ...}, {"net_layer": 1,
      "net_instance_id": "az0", ...}]}, ...]}``: a rank's server is its layer-0 instance (the
      server's topology file), its super pod its layer-1 instance (the UB fabric joining servers;
      one when there is no layer 1).

    HCCL's rules are checked (``ValueError`` naming the rule): rank ids ``0..n-1`` once each, a
    server's ranks consecutive ("cross-server rank_id interleaving is not supported"), the servers
    of a super pod listed together, a device id below the product's devices per server and once
    per server. Servers are numbered in the order listed, super pods in the order of their
    first server.
    """

    def __init__(self, places: list[RankPlace]):
        self.places = places

    @property
    def nranks(self) -> int:
        return len(self.places)

    @property
    def servers(self) -> int:
        return len({p.server for p in self.places})

    @property
    def super_pods(self) -> int:
        return len({p.super_pod for p in self.places})

    @classmethod
    def default(cls, nranks: int) -> "RankTable":
        """Rank ``r`` on device ``r`` (servers filled in order)."""
        return cls([default_place(r) for r in range(nranks)])

    @classmethod
    def cluster(cls, servers: int, per_server: int | None = None, super_pods: int = 1) -> "RankTable":
        """``servers`` servers of ``per_server`` ranks (default: the product's devices per
        server), split evenly over ``super_pods`` super pods, ranks numbered server by server: an
        A2 cluster is ``cluster(512)`` (4096 ranks), 16 A3 super pods of 256 dies
        ``cluster(256, super_pods=16)``. ``ValueError`` for counts that do not fit."""
        full = devices_per_server()
        per = full if per_server is None else per_server
        for name, value in (("servers", servers), ("per_server", per), ("super_pods", super_pods)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"RankTable.cluster: {name} must be an int >= 1, not {value!r}")
        if per > full:
            raise ValueError(f"RankTable.cluster: per_server {per} is more than a server's {full} devices")
        if servers % super_pods:
            raise ValueError(f"RankTable.cluster: {servers} servers do not split evenly over {super_pods} super pods")
        pod_of = servers // super_pods
        return cls([RankPlace(s, k, s // pod_of, s * full + k) for s in range(servers) for k in range(per)])

    @classmethod
    def from_json(cls, data) -> "RankTable":
        """Parse a rank table (a dict, JSON text, or a file path); raise ``ValueError`` if malformed."""
        if isinstance(data, str):
            if os.path.isfile(data):
                with open(data, encoding="utf-8") as f:
                    data = json.load(f)
            else:
                data = json.loads(data)
        if not isinstance(data, dict):
            raise ValueError("rank table: not a JSON object")
        if "rank_list" in data:
            return cls(_places_v2(data))
        return cls(_places_v1(data))

    def to_json(self, family: str | None = None) -> dict:
        """The table in HCCL's format for ``family`` (default: the current product's): version 2.0
        for Atlas 350, 1.2 for Atlas A3 (a ``super_pod_list``), 1.0 otherwise."""
        family = family or _sim().runtime.product.family
        if family == "950":
            return {"version": "2.0", "status": "completed", "rank_count": self.nranks, "rank_list": [
                {"rank_id": r, "device_id": p.local, "local_id": p.local, "level_list": [
                    {"net_layer": 0, "net_instance_id": f"server_{p.server}", "net_type": "TOPO_FILE_DESC",
                     "net_attr": "", "rank_addr_list": []},
                    {"net_layer": 1, "net_instance_id": f"superpod_{p.super_pod}", "net_type": "CLOS",
                     "net_attr": "", "rank_addr_list": []}]}
                for r, p in enumerate(self.places)]}
        servers: dict = {}
        for rank, p in enumerate(self.places):
            servers.setdefault(p.server, (p.super_pod, []))[1].append(
                {"device_id": str(p.local), "device_ip": f"192.168.{p.server % 256}.{p.local + 1}", "rank_id": str(rank)})
        server_list = [{"server_id": f"node_{s}", "device": devs} for s, (_pod, devs) in sorted(servers.items())]
        out = {"status": "completed", "version": "1.0", "server_count": str(len(server_list)), "server_list": server_list}
        if family == "A3":
            pods: dict = {}
            for s, (pod, _devs) in sorted(servers.items()):
                pods.setdefault(pod, []).append({"server_id": f"node_{s}"})
            out["version"] = "1.2"
            out["super_pod_list"] = [{"super_pod_id": str(k), "server_list": v} for k, v in sorted(pods.items())]
        return out


def _int(value, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"rank table: {what} {value!r} is not an integer") from None


def _places_v1(data: dict) -> list:
    """Places from a version 1.0 / 1.2 table (see :class:`RankTable`)."""
    top = data.get("server_list")
    by_id = {}
    if isinstance(top, list):
        for server in top:
            sid = server.get("server_id") if isinstance(server, dict) else None
            if sid in by_id:
                raise ValueError(f"rank table: server_id {sid!r} appears twice")
            by_id[sid] = server
    pods = data.get("super_pod_list")
    if not pods:
        if not isinstance(top, list) or not top:
            raise ValueError("rank table: server_list is missing or empty")
        listing = [(0, top)]
    else:
        listing = []
        ids = [pod.get("super_pod_id", k) if isinstance(pod, dict) else k for k, pod in enumerate(pods)]
        if len(set(map(str, ids))) != len(ids):
            raise ValueError(f"rank table: super_pod_id values {ids} are not unique")
        for pod_no, pod in enumerate(pods):
            entries = pod.get("server_list") if isinstance(pod, dict) else None
            if not isinstance(entries, list) or not entries:
                raise ValueError(f"rank table: super pod {pod_no} has an empty server_list")
            servers = []
            for entry in entries:
                if isinstance(entry, dict) and "device" not in entry:
                    if entry.get("server_id") not in by_id:
                        raise ValueError(f"rank table: super pod {pod.get('super_pod_id', pod_no)!r} names server "
                                         f"{entry.get('server_id')!r}, which server_list does not have")
                    entry = by_id[entry["server_id"]]
                servers.append(entry)
            listing.append((pod_no, servers))       # (super_pod_id is any unique string: numbered in order)
        named = [s.get("server_id") for _pod, servers in listing for s in servers]
        missing = [sid for sid in by_id if sid not in named]
        if missing:
            raise ValueError(f"rank table: server(s) {missing} of server_list are in no super pod")
    per = devices_per_server()
    found: dict[int, RankPlace] = {}
    server_index = 0
    for pod, servers in listing:
        for server in servers:
            devices = server.get("device") if isinstance(server, dict) else None
            if not isinstance(devices, list) or not devices:
                raise ValueError(f"rank table: server {server.get('server_id') if isinstance(server, dict) else server!r}"
                                 " has no device list")
            locals_seen = set()
            for dev in devices:
                rank, local = _int(dev["rank_id"], "rank_id"), _int(dev["device_id"], "device_id")
                if rank in found:
                    raise ValueError(f"rank table: rank {rank} appears twice")
                if not 0 <= local < per:
                    raise ValueError(f"rank table: device_id {local} of server {server.get('server_id')!r} is "
                                     f"outside [0, {per - 1}] (devices per server)")
                if local in locals_seen:
                    raise ValueError(f"rank table: device_id {local} appears twice in server {server.get('server_id')!r}")
                locals_seen.add(local)
                found[rank] = RankPlace(server_index, local, pod, server_index * per + local)
            server_index += 1
    return _checked(found)


def _places_v2(data: dict) -> list:
    """Places from a version 2.0 table (Atlas 350; see :class:`RankTable`)."""
    ranks = data.get("rank_list")
    if not isinstance(ranks, list) or not ranks:
        raise ValueError("rank table: rank_list is missing or empty")
    per = devices_per_server()
    servers: dict = {}
    pods: dict = {}
    found: dict[int, RankPlace] = {}
    seen = set()
    for entry in ranks:
        if not isinstance(entry, dict):
            raise ValueError(f"rank table: rank_list entry {entry!r} is not an object")
        rank = _int(entry.get("rank_id"), "rank_id")
        local = _int(entry.get("local_id", entry.get("device_id")), "local_id")
        levels = {_int(lv.get("net_layer"), "net_layer"): str(lv.get("net_instance_id"))
                  for lv in entry.get("level_list") or [] if isinstance(lv, dict)}
        if 0 not in levels:
            raise ValueError(f"rank table: rank {rank} has no net_layer 0 in its level_list")
        if rank in found:
            raise ValueError(f"rank table: rank {rank} appears twice")
        if not 0 <= local < per:
            raise ValueError(f"rank table: local_id {local} of rank {rank} is outside [0, {per - 1}] (devices per server)")
        server = servers.setdefault(levels[0], len(servers))
        if (server, local) in seen:
            raise ValueError(f"rank table: local_id {local} appears twice in net instance {levels[0]!r}")
        seen.add((server, local))
        pod = pods.setdefault(levels.get(1, ""), len(pods))
        found[rank] = RankPlace(server, local, pod, server * per + local)
    return _checked(found)


def _checked(found: dict) -> list:
    """The places in rank order, after HCCL's rules on rank ids (see :class:`RankTable`)."""
    if sorted(found) != list(range(len(found))):
        raise ValueError(f"rank table: rank ids {sorted(found)} are not 0..{len(found) - 1}")
    places = [found[r] for r in range(len(found))]
    done_servers, done_pods = set(), set()
    for prev, cur in zip([None] + places, places):
        if prev is not None and cur.server != prev.server:
            if cur.server in done_servers:
                raise ValueError(f"rank table: the ranks of server {cur.server} are not consecutive (cross-server "
                                 "rank_id interleaving is not supported)")
            done_servers.add(prev.server)
        if prev is not None and cur.super_pod != prev.super_pod:
            if cur.super_pod in done_pods:
                raise ValueError(f"rank table: the servers of super pod {cur.super_pod} are not listed together")
            done_pods.add(prev.super_pod)
    return places


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
