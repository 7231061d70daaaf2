"""``hccl_comm.h``: communicator lifecycle, in the flat C tier."""
from __future__ import annotations

from ..enums import COMM_NAME_MAX_LENGTH
from ..defs.hccl_types import HcclRootInfo
from ..errors import HcclGetErrorString  # noqa: F401  (re-exported: it lives in hccl.h)
from ..hccl import comm as _comm
from ._wrap import c_api

__all__ = ["HcclGetRootInfo", "HcclCommInitRootInfo", "HcclCommInitClusterInfo", "HcclCommInitAll", "HcclCommDestroy",
           "HcclGetRankSize", "HcclGetRankId", "HcclGetCommName", "HcclGetErrorString", "HcclRootInfo"]


@c_api(None)
def HcclGetRootInfo():
    """``ret, rootInfo = HcclGetRootInfo()``: a new root, an :class:`HcclRootInfo` to hand to
    every rank's ``HcclCommInitRootInfo`` (its ``internal`` bytes name the root)."""
    return HcclRootInfo(internal=_comm.get_root_info())


@c_api(0)
def HcclCommInitRootInfo(nRanks, rootInfo, rank):
    """``ret, comm = HcclCommInitRootInfo(nRanks, root_info, rank)``. Collective: blocks until all
    ranks joined (``HCCL_CONNECT_TIMEOUT``)."""
    return _comm.init_root_info(nRanks, rootInfo, rank).handle


@c_api(0)
def HcclCommInitClusterInfo(clusterInfo, rank):  # noqa: N803
    """``ret, comm = HcclCommInitClusterInfo(rank_table_path, rank)``. Collective: blocks until all
    ranks of the rank table joined."""
    return _comm.init_cluster_info(clusterInfo, rank).handle


@c_api([])
def HcclCommInitAll(devices):
    """``ret, comms = HcclCommInitAll(devices)``: one communicator per device of the list
    (rank ``i`` on ``devices[i]``), all in this call."""
    return [c.handle for c in _comm.init_all(devices)]


@c_api()
def HcclCommDestroy(comm):
    """Destroy a communicator with its threads, engine contexts and HCCL buffer."""
    _comm.destroy(_comm.get_comm(comm, "HcclCommDestroy"))


@c_api(0)
def HcclGetRankSize(comm):
    return _comm.get_comm(comm, "HcclGetRankSize").nranks


@c_api(0)
def HcclGetRankId(comm):
    return _comm.get_comm(comm, "HcclGetRankId").rank


@c_api("")
def HcclGetCommName(comm):
    """``ret, name = HcclGetCommName(comm)`` (at most 127 characters)."""
    return _comm.get_comm(comm, "HcclGetCommName").name[:COMM_NAME_MAX_LENGTH - 1]
