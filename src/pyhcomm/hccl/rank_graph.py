"""The rank graph (``hccl_rank_graph.h``): network layers, topology instances, endpoints, links.

pyhcomm's model (the header's examples: 8 NPUs a server, servers joined by RoCE, is ``[0, 1]``,
1DMesh then CLOS). Every communicator has two layers:

* layer 0, the fabric inside a node: one instance per server (Atlas A2, the PCIe / HCCS products)
  or per super pod (Atlas A3 over HCCS and SIO, Atlas 350 over UB); topology ``COMM_TOPO_1DMESH``
  (A2, 350), ``COMM_TOPO_910_93`` (A3), ``COMM_TOPO_310P`` (inference series), ``COMM_TOPO_CUSTOM``
  (training series: two groups of four NPUs);
* layer 1, RoCE between every rank: one instance holding all ranks, ``COMM_TOPO_CLOS``.

Topology instances of a layer are numbered 0.. in the order of their lowest rank. An instance's
endpoints are, rank by rank, one per protocol of the layer the rank's device has (layer 0: the
node fabric's protocols, layer 1: RoCE). ``HcclRankGraphGetLinks`` on layer 0 lists every link
between the two ranks (all protocols, best first), on layer 1 the RoCE link.

Endpoint attributes are 4-byte values: ``ENDPOINT_ATTR_BW_COEFF`` a relative bandwidth (pyhcomm's
numbers: HCCS / UB 4, SIO 8, HCCS_ONLY 4, PCIe 1, RoCE 2, UBoE 2), ``ENDPOINT_ATTR_DIE_ID`` the die
of the NPU (A3: ``device % 2``, else 0), ``ENDPOINT_ATTR_LOCATION`` the ``EndpointLocType``.
"""
from __future__ import annotations

import struct

from .. import topology
from ..topology import LAYERS, layer_protocols
from ..defs.rank_graph import CommTopo, EndpointAttr
from ..defs.res_defs import CommProtocol, EndpointDesc
from .. import args
from ..errors import para, ptr
from ..sim import current_sim as _sim
from . import comm as comm_mod

P = CommProtocol
_NODE_TOPO = {"A2": CommTopo.COMM_TOPO_1DMESH, "A3": CommTopo.COMM_TOPO_910_93, "950": CommTopo.COMM_TOPO_1DMESH,
              "310P": CommTopo.COMM_TOPO_310P, "310B": CommTopo.COMM_TOPO_310P, "910": CommTopo.COMM_TOPO_CUSTOM}
BW_COEFF = {P.COMM_PROTOCOL_HCCS: 4, P.COMM_PROTOCOL_HCCS_ONLY: 4, P.COMM_PROTOCOL_SIO: 8, P.COMM_PROTOCOL_PCIE: 1,
            P.COMM_PROTOCOL_ROCE: 2, P.COMM_PROTOCOL_UB_CTP: 4, P.COMM_PROTOCOL_UBC_TP: 4, P.COMM_PROTOCOL_UB_MEM: 4,
            P.COMM_PROTOCOL_UBOE: 2}
ATTR_SIZE = 4


def _family() -> str:
    return _sim().runtime.product.family


def _node_of(place) -> int:
    """The layer-0 instance key of a rank's place: its super pod (A3, 350) or its server."""
    return place.super_pod if _family() in ("A3", "950") else place.server


def check_layer(api: str, layer) -> int:
    layer = args.integer(layer, api, "netLayer", -(1 << 64), args.UINT64_MAX)
    if layer not in LAYERS:
        raise para(api, f"netLayer {layer} is not a layer of this communicator (layers: {list(LAYERS)})")
    return layer


def _places(c):
    return [c.world.place(r) for r in range(c.nranks)]


def instances(c, layer: int) -> list[list[int]]:
    """The topology instances of ``layer``: lists of ranks, numbered by their lowest rank."""
    if layer == 1:
        return [list(range(c.nranks))]
    groups: dict = {}
    for r, place in enumerate(_places(c)):
        groups.setdefault(_node_of(place), []).append(r)
    return sorted(groups.values())


def my_instance(c, layer: int) -> int:
    return next(i for i, ranks in enumerate(instances(c, layer)) if c.rank in ranks)


def _instance(c, layer: int, inst_id, api: str) -> list[int]:
    inst_id = args.integer(inst_id, api, "topoInstId", -(1 << 64), args.UINT64_MAX)
    mine = my_instance(c, layer)
    if inst_id != mine:
        raise para(api, f"topoInstId {inst_id} is not an instance rank {c.rank} belongs to on layer {layer} "
                        f"(it is in instance {mine})")
    return instances(c, layer)[inst_id]


def topo_type(layer: int) -> CommTopo:
    return CommTopo.COMM_TOPO_CLOS if layer == 1 else _NODE_TOPO.get(_family(), CommTopo.COMM_TOPO_CUSTOM)


def _comm_layer(comm, layer, api):
    c = comm_mod.get_comm(comm, api)
    return c, check_layer(api, layer)


def get_layers(comm) -> list[int]:
    comm_mod.get_comm(comm, "HcclRankGraphGetLayers")
    return list(LAYERS)


def ranks_by_layer(comm, layer) -> list[int]:
    c, layer = _comm_layer(comm, layer, "HcclRankGraphGetRanksByLayer")
    return list(instances(c, layer)[my_instance(c, layer)])


def rank_size_by_layer(comm, layer) -> int:
    c, layer = _comm_layer(comm, layer, "HcclRankGraphGetRankSizeByLayer")
    return len(instances(c, layer)[my_instance(c, layer)])


def topo_type_by_layer(comm, layer) -> int:
    _comm_layer(comm, layer, "HcclRankGraphGetTopoTypeByLayer")
    return int(topo_type(layer))


def inst_size_list(comm, layer) -> list[int]:
    c, layer = _comm_layer(comm, layer, "HcclRankGraphGetInstSizeListByLayer")
    return [len(ranks) for ranks in instances(c, layer)]


def topo_insts_by_layer(comm, layer) -> list[int]:
    c, layer = _comm_layer(comm, layer, "HcclRankGraphGetTopoInstsByLayer")
    return [my_instance(c, layer)]


def topo_type_of(comm, layer, inst_id) -> int:
    api = "HcclRankGraphGetTopoType"
    c, layer = _comm_layer(comm, layer, api)
    _instance(c, layer, inst_id, api)
    return int(topo_type(layer))


def ranks_by_topo_inst(comm, layer, inst_id) -> list[int]:
    api = "HcclRankGraphGetRanksByTopoInst"
    c, layer = _comm_layer(comm, layer, api)
    return list(_instance(c, layer, inst_id, api))


def endpoint_num(comm, layer, inst_id) -> int:
    api = "HcclRankGraphGetEndpointNum"
    c, layer = _comm_layer(comm, layer, api)
    return len(_layer_endpoints(c, layer, _instance(c, layer, inst_id, api)))


def _layer_endpoints(c, layer: int, ranks) -> list[EndpointDesc]:
    """One endpoint per protocol of ``layer`` that the rank's device uses towards the other ranks
    of the instance (or, alone in it, the layer's first protocol)."""
    out = []
    wanted = layer_protocols(layer)
    for r in ranks:
        place = c.world.place(r)
        have = set()
        for other in ranks:
            if other != r:
                have.update(topology.protocols_between(place, c.world.place(other)))
        protos = [p for p in wanted if p in have] or [wanted[0]]
        out += [topology.endpoint(place, p) for p in protos]
    return out


def endpoint_desc(comm, layer, inst_id, desc_num) -> list[EndpointDesc]:
    api = "HcclRankGraphGetEndpointDesc"
    c, layer = _comm_layer(comm, layer, api)
    eps = _layer_endpoints(c, layer, _instance(c, layer, inst_id, api))
    desc_num = args.integer(desc_num, api, "descNum", -(1 << 64), args.UINT64_MAX)
    if desc_num != len(eps):
        raise para(api, f"descNum {desc_num} must equal HcclRankGraphGetEndpointNum ({len(eps)})")
    return eps


def endpoint_info(comm, rank_id, desc, attr, info_len) -> bytes:
    """``HcclRankGraphGetEndpointInfo``: a 4-byte attribute of one of ``rank_id``'s endpoints."""
    api = "HcclRankGraphGetEndpointInfo"
    c = comm_mod.get_comm(comm, api)
    rank_id = args.integer(rank_id, api, "rankId", -(1 << 64), args.UINT64_MAX)
    if not 0 <= rank_id < c.nranks:
        raise para(api, f"rankId {rank_id!r} is not a rank of this communicator (0..{c.nranks - 1})")
    if desc is None:
        raise ptr(api, "endpointDesc is NULL")
    if not isinstance(desc, EndpointDesc):
        raise TypeError(f"{api}: endpointDesc must be an EndpointDesc, not {type(desc).__name__}")
    try:
        attr = EndpointAttr(attr)
    except ValueError:
        raise para(api, f"endpointAttr {attr!r} is not an EndpointAttr") from None
    if attr == EndpointAttr.ENDPOINT_ATTR_INVALID:
        raise para(api, "endpointAttr is ENDPOINT_ATTR_INVALID")
    if info_len != ATTR_SIZE:
        raise para(api, f"infoLen {info_len} must be the attribute's size ({ATTR_SIZE} bytes)")
    place = c.world.place(rank_id)
    try:
        protocol = CommProtocol(desc.protocol)
    except ValueError:
        protocol = P.COMM_PROTOCOL_RESERVED
    known = {p for layer in LAYERS for p in layer_protocols(layer)}
    if protocol not in known or desc.key() != topology.endpoint(place, protocol).key():
        raise para(api, f"endpointDesc is not an endpoint of rank {rank_id} (take it from HcclRankGraphGetEndpointDesc "
                        "or HcclRankGraphGetLinks)")
    if attr == EndpointAttr.ENDPOINT_ATTR_BW_COEFF:
        value = BW_COEFF.get(protocol, 1)
    elif attr == EndpointAttr.ENDPOINT_ATTR_DIE_ID:
        value = place.local % 2 if _family() == "A3" else 0
    else:
        value = int(desc.loc.locType)
    return struct.pack("<I", value)


def links(comm, layer, src_rank, dst_rank):
    """``HcclRankGraphGetLinks``: layer 0 every link between the two ranks (best first), layer 1
    the RoCE link; both ranks must be in this rank's instance of the layer."""
    api = "HcclRankGraphGetLinks"
    c, layer = _comm_layer(comm, layer, api)
    src_rank = args.integer(src_rank, api, "srcRank", -(1 << 64), args.UINT64_MAX)
    dst_rank = args.integer(dst_rank, api, "dstRank", -(1 << 64), args.UINT64_MAX)
    for name, r in (("srcRank", src_rank), ("dstRank", dst_rank)):
        if not 0 <= r < c.nranks or c.world.place(r) is None:
            raise para(api, f"{name} {r!r} is not a rank of {c.name}")
    found = topology.links(c.world.place(src_rank), c.world.place(dst_rank))
    if layer == 0:
        return found
    return [link for link in found if link.linkAttr.linkProtocol in layer_protocols(layer)]
