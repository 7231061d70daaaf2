"""``hccl_team.h`` / ``hcomm_team_defs.h``: the descriptor of ``HcclTeamCreate``."""
from __future__ import annotations

from ..enums import CommEngine
from .cstruct import CStruct
from .res_defs import CommAbiHeader, CommProtocol

HCCL_TEAM_CREATE_DESC_MAGIC_WORD = 0x0FCF0F14
HCCL_TEAM_CREATE_DESC_VERSION = 2
HCCL_CHANNEL_CONFIG_SHARED_QUEUE_TAG_MAX_LEN = 128


class HcommTeamSyncMemRequirement(CStruct):
    """How many signals, counters and barriers a team's synchronisation memory holds."""

    _fields_ = (("signalCount", 0), ("counterCount", 0), ("barrierCount", 0))


class HcclTeamCreateDesc(CStruct):
    """``HcclTeamCreateDesc``: the ranks of a team (``rankIds``: a list, or a host pointer to
    ``rankNum`` uint32), this rank's place, network layer, protocol, engine and channel needs."""

    _fields_ = (("header", CommAbiHeader), ("rankIds", 0), ("rankNum", 0), ("selfRankId", 0), ("netLayer", 0),
                ("protocol", CommProtocol.COMM_PROTOCOL_HCCS), ("requirement", HcommTeamSyncMemRequirement),
                ("engine", CommEngine.COMM_ENGINE_CPU), ("notifyNum", 0), ("channelCnt", 0), ("isSharedQueue", 0),
                ("sharedQueueTag", ""))


def team_create_desc_init(desc: HcclTeamCreateDesc) -> None:
    """``HcclTeamCreateDescInit``: the C defaults (reserved protocol and engine, everything else 0)."""
    desc.header = CommAbiHeader(version=HCCL_TEAM_CREATE_DESC_VERSION, magicWord=HCCL_TEAM_CREATE_DESC_MAGIC_WORD,
                                size=200, reserved=0)
    desc.rankIds, desc.rankNum, desc.selfRankId, desc.netLayer = 0, 0, 0, 0
    desc.protocol = CommProtocol.COMM_PROTOCOL_RESERVED
    desc.requirement = HcommTeamSyncMemRequirement()
    desc.engine = CommEngine.COMM_ENGINE_RESERVED
    desc.notifyNum, desc.channelCnt, desc.isSharedQueue, desc.sharedQueueTag = 0, 0, 0, ""
