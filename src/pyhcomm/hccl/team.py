"""Teams (``hccl_team.h``): an ordered subset of a communicator's ranks, numbered by member id.

``HcclTeamCreate(comm, desc)`` checks the descriptor (initialised with
``HcclTeamCreateDescInit``; ``rankIds``: ``rankNum`` distinct ranks of the communicator, given as
a list or a host pointer to ``uint32``; ``selfRankId`` the caller's rank, one of them;
``netLayer`` a layer of the rank graph; ``notifyNum`` <= 64) and returns a handle; member ``i``
is ``rankIds[i]``. It does not block. ``HcclTeamGetLsaTeam`` gives the team of the caller's node
(layer 0 of the rank graph: the ranks that reach each other's memory directly), created once per
communicator rank. Member / rank conversions of a rank outside the team are ``HCCL_E_PARA``.
"""
from __future__ import annotations

from ..defs.team import HCCL_TEAM_CREATE_DESC_MAGIC_WORD, HcclTeamCreateDesc
from .. import args
from ..errors import para, ptr
from ..sim import current_sim as _sim
from . import comm as comm_mod
from ..args import int_array, live_object
from .rank_graph import LAYERS, instances

NOTIFY_MAX = 64


class Team:
    def __init__(self, comm, ranks: list[int], desc=None):
        self.comm, self.ranks, self.desc = comm, list(ranks), desc
        self.handle = _sim().handles.misc.add(self)


def create(comm_handle, desc) -> Team:
    api = "HcclTeamCreate"
    c = comm_mod.get_comm(comm_handle, api)
    if desc is None:
        raise ptr(api, "desc is NULL")
    if not isinstance(desc, HcclTeamCreateDesc):
        raise TypeError(f"{api}: desc must be an HcclTeamCreateDesc, not {type(desc).__name__}")
    if desc.header.magicWord != HCCL_TEAM_CREATE_DESC_MAGIC_WORD:
        raise para(api, "desc was not initialised with HcclTeamCreateDescInit")
    ranks = int_array(desc.rankIds, desc.rankNum, api, "desc.rankIds", width=4)
    if not ranks:
        raise para(api, "desc.rankNum is 0: a team needs ranks")
    if any(isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < c.nranks for r in ranks):
        raise para(api, f"desc.rankIds {ranks} holds a rank outside [0, {c.nranks})")
    if len(set(ranks)) != len(ranks):
        raise para(api, f"desc.rankIds {ranks} repeats a rank")
    if desc.selfRankId != c.rank or c.rank not in ranks:
        raise para(api, f"desc.selfRankId {desc.selfRankId} must be the caller's rank {c.rank}, one of rankIds")
    if desc.netLayer not in LAYERS:
        raise para(api, f"desc.netLayer {desc.netLayer} is not a layer of the rank graph ({list(LAYERS)})")
    if not 0 <= desc.notifyNum <= NOTIFY_MAX:
        raise para(api, f"desc.notifyNum {desc.notifyNum} is outside [0, {NOTIFY_MAX}]")
    if desc.isSharedQueue not in (0, 1):
        raise para(api, f"desc.isSharedQueue {desc.isSharedQueue} must be 0 or 1")
    return Team(c, ranks, desc)


def get_team(handle, api: str) -> Team:
    return live_object(handle, Team, api, "team", "a live team")


def destroy(handle) -> None:
    team = get_team(handle, "HcclTeamDestroy")
    if team.desc is None:
        raise para("HcclTeamDestroy", "the LSA team belongs to its communicator and is not destroyed")
    _sim().handles.misc.remove(handle)


def lsa_team(comm_handle) -> Team:
    c = comm_mod.get_comm(comm_handle, "HcclTeamGetLsaTeam")
    team = c.__dict__.get("lsa_team")
    if team is None:
        team = c.lsa_team = Team(c, next(r for r in instances(c, 0) if c.rank in r))
    return team


def _team_of(comm_handle, team_handle, api):
    c = comm_mod.get_comm(comm_handle, api)
    team = get_team(team_handle, api)
    if team.comm is not c:
        raise para(api, f"team {team_handle:#x} belongs to another communicator")
    return team


def member_to_rank(comm_handle, team_handle, member) -> int:
    api = "HcclTeamMemberToRank"
    team = _team_of(comm_handle, team_handle, api)
    member = args.integer(member, api, "memberId", -(1 << 64), args.UINT64_MAX)
    if not 0 <= member < len(team.ranks):
        raise para(api, f"memberId {member!r} is outside [0, {len(team.ranks)})")
    return team.ranks[member]


def rank_to_member(comm_handle, team_handle, rank) -> int:
    api = "HcclTeamRankToMember"
    team = _team_of(comm_handle, team_handle, api)
    if rank not in team.ranks:
        raise para(api, f"rankId {rank!r} is not a member of the team ({team.ranks})")
    return team.ranks.index(rank)
