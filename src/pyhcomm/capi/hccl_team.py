"""``hccl_team.h`` and the symmetric windows of ``hccl_comm.h`` / ``hccl_sym_win.h``, in the
flat C tier (models: :mod:`pyhcomm.hccl.team`, :mod:`pyhcomm.hccl.sym_win`)."""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.team import HcclTeamCreateDesc, HcommTeamSyncMemRequirement, team_create_desc_init
from ..hccl import sym_win as _win
from ..hccl import team as _team
from ._wrap import c_api

__all__ = ["HcclTeamCreateDescInit", "HcclTeamCreate", "HcclTeamDestroy", "HcclTeamGetLsaTeam", "HcclTeamMemberToRank",
           "HcclTeamRankToMember", "HcclTeamCreateDesc", "HcommTeamSyncMemRequirement",
           "HcclCommSymWinRegister", "HcclCommSymWinDeregister", "HcclCommSymWinGet", "HcclSymWinGetPeerPointer",
           "HcclSymWinGetRemoteAddr"]


@c_api()
def HcclTeamCreateDescInit(desc):
    """Set a team descriptor to the C defaults (reserved protocol and engine, no ranks)."""
    team_create_desc_init(struct_arg(desc, HcclTeamCreateDesc, "HcclTeamCreateDescInit", "desc"))


@c_api(0)
def HcclTeamCreate(comm, desc):
    """``ret, team``: a team of ``desc.rankIds`` (member ``i`` is ``rankIds[i]``)."""
    return _team.create(comm, desc).handle


@c_api()
def HcclTeamDestroy(team):
    _team.destroy(team)


@c_api(0)
def HcclTeamGetLsaTeam(comm):
    """``ret, team``: the ranks of the caller's node (direct memory access between them)."""
    return _team.lsa_team(comm).handle


@c_api(0)
def HcclTeamMemberToRank(comm, team, memberId):  # noqa: N803
    return _team.member_to_rank(comm, team, memberId)


@c_api(0)
def HcclTeamRankToMember(comm, team, rankId):  # noqa: N803
    return _team.rank_to_member(comm, team, rankId)


@c_api(0)
def HcclCommSymWinRegister(comm, addr, size, flag):
    """``ret, winHandle``: register ``[addr, addr + size)`` as the rank's next symmetric window."""
    return _win.register(comm, addr, size, flag)


@c_api()
def HcclCommSymWinDeregister(winHandle):  # noqa: N803
    _win.deregister(winHandle)


@c_api(0, 0)
def HcclCommSymWinGet(comm, ptr, size):  # noqa: A002
    """``ret, winHandle, offset``: the window holding ``[ptr, ptr + size)``."""
    return _win.find(comm, ptr, size)


@c_api(0)
def HcclSymWinGetPeerPointer(winHandle, offset, peerRank):  # noqa: N803
    """``ret, ptr``: the address of ``offset`` in ``peerRank``'s window (a peer of the same node)."""
    return _win.peer_address(winHandle, offset, peerRank, "HcclSymWinGetPeerPointer", True)


@c_api(0)
def HcclSymWinGetRemoteAddr(winHandle, offset, peerRank):  # noqa: N803
    """``ret, addr``: the address of ``offset`` in ``peerRank``'s window."""
    return _win.peer_address(winHandle, offset, peerRank, "HcclSymWinGetRemoteAddr", False)
