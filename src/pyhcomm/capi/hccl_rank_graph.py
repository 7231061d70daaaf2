"""``hccl_rank_graph.h``: layers, topology instances, endpoints and links, in the flat C tier.

Lists come back as Python lists (``ret, ranks = HcclRankGraphGetRanksByLayer(comm, 0)``); the
model of layers and instances is :mod:`pyhcomm.hccl.rank_graph`.
"""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.rank_graph import (CommLink, CommTopo, EndpointAttr, HcclHeterogMode,  # noqa: F401
                               comm_link_init)
from ..hccl import comm as _comm
from ..hccl import rank_graph as _rg
from ._wrap import c_api

__all__ = ["HcclRankGraphGetLayers", "HcclRankGraphGetRanksByLayer", "HcclRankGraphGetRankSizeByLayer",
           "HcclRankGraphGetTopoTypeByLayer", "HcclRankGraphGetInstSizeListByLayer", "HcclRankGraphGetLinks",
           "HcclRankGraphGetTopoInstsByLayer", "HcclRankGraphGetTopoType", "HcclRankGraphGetRanksByTopoInst",
           "HcclGetHeterogMode", "HcclRankGraphGetEndpointNum", "HcclRankGraphGetEndpointDesc",
           "HcclRankGraphGetEndpointInfo", "CommLinkInit", "CommLink", "CommTopo", "EndpointAttr",
           "HcclHeterogMode"]


@c_api([])
def HcclRankGraphGetLayers(comm):
    """``ret, netLayers``: the network layers of the communicator (``[0, 1]``)."""
    return _rg.get_layers(comm)


@c_api([])
def HcclRankGraphGetRanksByLayer(comm, netLayer):  # noqa: N803
    """``ret, ranks``: the ranks of this rank's instance of ``netLayer``."""
    return _rg.ranks_by_layer(comm, netLayer)


@c_api(0)
def HcclRankGraphGetRankSizeByLayer(comm, netLayer):  # noqa: N803
    return _rg.rank_size_by_layer(comm, netLayer)


@c_api(0)
def HcclRankGraphGetTopoTypeByLayer(comm, netLayer):  # noqa: N803
    """``ret, topoType``: a ``CommTopo`` value."""
    return _rg.topo_type_by_layer(comm, netLayer)


@c_api([])
def HcclRankGraphGetInstSizeListByLayer(comm, netLayer):  # noqa: N803
    """``ret, instSizeList``: the size of every instance of ``netLayer``."""
    return _rg.inst_size_list(comm, netLayer)


@c_api([])
def HcclRankGraphGetLinks(comm, netLayer, srcRank, dstRank):  # noqa: N803
    """``ret, links``: ``CommLink`` objects between two ranks on ``netLayer``."""
    return _rg.links(comm, netLayer, srcRank, dstRank)


@c_api([])
def HcclRankGraphGetTopoInstsByLayer(comm, netLayer):  # noqa: N803
    """``ret, topoInsts``: the instance ids this rank belongs to on ``netLayer``."""
    return _rg.topo_insts_by_layer(comm, netLayer)


@c_api(0)
def HcclRankGraphGetTopoType(comm, netLayer, topoInstId):  # noqa: N803
    return _rg.topo_type_of(comm, netLayer, topoInstId)


@c_api([])
def HcclRankGraphGetRanksByTopoInst(comm, netLayer, topoInstId):  # noqa: N803
    return _rg.ranks_by_topo_inst(comm, netLayer, topoInstId)


@c_api(0)
def HcclGetHeterogMode(comm):
    """``ret, mode``: every rank of a pyhcomm communicator is the same product: homogeneous."""
    _comm.get_comm(comm, "HcclGetHeterogMode")
    return int(HcclHeterogMode.HCCL_HETEROG_MODE_HOMOGENEOUS)


@c_api(0)
def HcclRankGraphGetEndpointNum(comm, layer, topoInstId):  # noqa: N803
    return _rg.endpoint_num(comm, layer, topoInstId)


@c_api([])
def HcclRankGraphGetEndpointDesc(comm, layer, topoInstId, descNum):  # noqa: N803
    """``ret, endpointDescs``: ``descNum`` must be ``HcclRankGraphGetEndpointNum``'s answer."""
    return _rg.endpoint_desc(comm, layer, topoInstId, descNum)


@c_api(b"")
def HcclRankGraphGetEndpointInfo(comm, rankId, endpointDesc, endpointAttr, infoLen):  # noqa: N803
    """``ret, info``: ``infoLen`` (4) bytes of the attribute (little-endian ``uint32``)."""
    return _rg.endpoint_info(comm, rankId, endpointDesc, endpointAttr, infoLen)


@c_api()
def CommLinkInit(commLink):  # noqa: N803
    """Set a ``CommLink`` to the C initial state (0xFF, header, reserved protocol, one hop)."""
    comm_link_init(struct_arg(commLink, CommLink, "CommLinkInit", "commLink"))
