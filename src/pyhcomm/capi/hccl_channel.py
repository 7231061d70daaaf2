"""``hccl_channel.h`` (with the rank graph and memory registration), in the flat C tier."""
from __future__ import annotations

from .. import topology as _topo
from ..errors import para as _para
from ..hccl import channel as _ch
from ..hccl import comm as _comm
from ._wrap import c_api

__all__ = ["HcclChannelDesc", "HcclChannelDescInit", "HcclChannelAcquire", "HcclChannelGetHcclBuffer",
           "HcclCommMemReg", "HcclChannelGetRemoteMems", "HcclRankGraphGetLinks", "CommMem", "CommMemType",
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
    descs = [channelDescs] if isinstance(channelDescs, HcclChannelDesc) else channelDescs
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


@c_api([])
def HcclRankGraphGetLinks(comm, netLayer, srcRank, dstRank):  # noqa: N803
    """``ret, links``: the links between two ranks, with their protocols (``netLayer`` 0)."""
    api = "HcclRankGraphGetLinks"
    c = _comm.get_comm(comm, api)
    if netLayer != 0:
        raise _para(api, f"netLayer {netLayer}: only layer 0 is modelled")
    for name, r in (("srcRank", srcRank), ("dstRank", dstRank)):
        if not isinstance(r, int) or not 0 <= r < c.nranks or c.world.place(r) is None:
            raise _para(api, f"{name} {r} is not a rank of {c.name}")
    return _topo.links(c.world.place(srcRank), c.world.place(dstRank))
