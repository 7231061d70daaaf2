"""``hccl_types.h`` and the types of ``hccl_comm.h``: root info, communicator configs, command
types, communicator status and state phases, send/receive items.

``HcclCommConfig`` is zero in a new struct (pyhccl's default); ``HcclCommConfigInit`` sets the C
defaults ("not set" for buffer size, deterministic, exec timeout, traffic class, service level,
QoS) and marks the struct initialised, which the ``...Config`` calls require.
"""
from __future__ import annotations

from enum import IntEnum

from ..enums import HcclDataType
from .cstruct import CStruct, raw_bytes

HCCL_ROOT_INFO_BYTES = 4108
COMM_NAME_MAX_LENGTH = 128
BUFFER_NAME_MAX_LENGTH = 128
UDI_MAX_LENGTH = 128
HCCL_COMM_ALGO_MAX_LENGTH = 1600
HCCL_COMM_RETRY_ENABLE_MAX_LENGTH = 50
HCCL_COMM_RETRY_PARAMS_MAX_LENGTH = 128
HCCL_COMM_CONFIG_MAGIC_WORD = 0xF0F0F0F0
HCCL_COMM_CONFIG_VERSION = 10
HCCL_COMM_DEFAULT_BUFFSIZE = 200
HCCL_COMM_DEFAULT_DETERMINISTIC = 0
HCCL_COMM_DEFAULT_OP_EXPANSION_MODE = 0
HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE = 16
#: ``0xffffffff``: a ``uint32`` field of ``HcclCommConfig`` the user did not set.
CONFIG_NOT_SET = 0xFFFFFFFF
#: ``hcclExecTimeOut`` is an ``int32``: "not set" reads -1.
EXEC_TIMEOUT_NOT_SET = -1


class HcclRootInfo(CStruct):
    """``HcclRootInfo``: ``internal`` is ``char[4108]``; ``bytes(root_info)`` gives them."""

    _raws_ = (("internal", HCCL_ROOT_INFO_BYTES),)
    internal = raw_bytes("internal", HCCL_ROOT_INFO_BYTES)

    def __bytes__(self) -> bytes:
        return bytes(self._internal)


class HcclCMDType(IntEnum):
    HCCL_CMD_INVALID = 0
    HCCL_CMD_BROADCAST = 1
    HCCL_CMD_ALLREDUCE = 2
    HCCL_CMD_REDUCE = 3
    HCCL_CMD_SEND = 4
    HCCL_CMD_RECEIVE = 5
    HCCL_CMD_ALLGATHER = 6
    HCCL_CMD_REDUCE_SCATTER = 7
    HCCL_CMD_ALLTOALLV = 8
    HCCL_CMD_ALLTOALLVC = 9
    HCCL_CMD_ALLTOALL = 10
    HCCL_CMD_GATHER = 11
    HCCL_CMD_SCATTER = 12
    HCCL_CMD_BATCH_SEND_RECV = 13
    HCCL_CMD_BATCH_PUT = 14
    HCCL_CMD_BATCH_GET = 15
    HCCL_CMD_ALLGATHER_V = 16
    HCCL_CMD_REDUCE_SCATTER_V = 17
    HCCL_CMD_BATCH_WRITE = 18
    HCCL_CMD_HALF_ALLTOALLV = 20
    HCCL_CMD_ALL = 21
    HCCL_CMD_FINALIZE = 100
    HCCL_CMD_INTER_GROUP_SYNC = 101
    HCCL_CMD_INIT = 102
    HCCL_CMD_BARRIER = 103
    HCCL_CMD_MAX = 104


class HcclCommConfigCapability(IntEnum):
    HCCL_COMM_CONFIG_BUFFER_SIZE = 0
    HCCL_COMM_CONFIG_DETERMINISTIC = 1
    HCCL_COMM_CONFIG_COMM_NAME = 2
    HCCL_COMM_CONFIG_OP_EXPANSION_MODE = 3
    HCCL_COMM_CONFIG_SUPPORT_INIT_BY_ENV = 4
    HCCL_COMM_CONFIG_WORLD_RANKID = 5
    HCCL_COMM_CONFIG_JOBID = 6
    HCCL_COMM_CONFIG_ACLGRAPH_ZEROCOPY_ENABLE = 7
    HCCL_COMM_CONFIG_EXEC_TIMEOUT = 8
    HCCL_COMM_CONFIG_ALGO = 9
    HCCL_COMM_CONFIG_RETRY = 10
    HCCL_COMM_CONFIG_BUFFER_NAME = 11
    HCCL_COMM_CONFIG_RESERVED = 12


class HcclCommStatus(IntEnum):
    HCCL_COMM_STATUS_READY = 0
    HCCL_COMM_STATUS_SUSPENDING = 1
    HCCL_COMM_STATUS_INVALID = 254
    HCCL_COMM_STATUS_RESERVED = 255


class HcclCommStatePhase(IntEnum):
    HCCL_COMM_STATE_PHASE_INVALID = -1
    HCCL_COMM_STATE_PHASE_DESTROY_PRE = 0
    HCCL_COMM_STATE_PHASE_DESTROY_POST = 1
    HCCL_COMM_STATE_PHASE_RESUME_PRE = 2
    HCCL_COMM_STATE_PHASE_RESUME_POST = 3


class HcclConfig(IntEnum):
    HCCL_DETERMINISTIC = 0
    HCCL_CONFIG_RESERVED = 1


class HcclSendRecvType(IntEnum):
    HCCL_SEND = 0
    HCCL_RECV = 1
    HCCL_SEND_RECV_RESERVED = 2


class HcclOpExpansionMode(IntEnum):
    HCCL_OP_EXPANSION_MODE_INVALID = -1
    HCCL_OP_EXPANSION_MODE_AI_CPU = 0
    HCCL_OP_EXPANSION_MODE_AIV = 1
    HCCL_OP_EXPANSION_MODE_HOST = 2
    HCCL_OP_EXPANSION_MODE_HOST_TS = 3
    HCCL_OP_EXPANSION_MODE_CCU_MS = 4
    HCCL_OP_EXPANSION_MODE_CCU_SCHED = 5
    HCCL_OP_EXPANSION_AIV_ONLY = 6


class HcclConfigType(IntEnum):
    HCCL_CONFIG_TYPE_INVALID = -1
    HCCL_CONFIG_TYPE_OP_EXPANSION_MODE = 0
    HCCL_CONFIG_TYPE_HCCL_ALGO = 1
    HCCL_CONFIG_TYPE_UB_MULTI_CHANNEL_NUM = 2
    HCCL_CONFIG_TYPE_DETERMINISTIC = 3
    HCCL_CONFIG_TYPE_UDI = 4


class HcclSendRecvItem(CStruct):
    """``HcclSendRecvItem``: one send or receive of ``HcclBatchSendRecv``."""

    _fields_ = (("sendRecvType", HcclSendRecvType.HCCL_SEND), ("buf", 0), ("count", 0),
                ("dataType", HcclDataType.HCCL_DATA_TYPE_INT8), ("remoteRank", 0))


#: The string fields of ``HcclCommConfig`` and their C array sizes.
CONFIG_STRINGS = {"hcclCommName": COMM_NAME_MAX_LENGTH, "hcclUdi": UDI_MAX_LENGTH,
                  "hcclAlgo": HCCL_COMM_ALGO_MAX_LENGTH, "hcclRetryEnable": HCCL_COMM_RETRY_ENABLE_MAX_LENGTH,
                  "hcclRetryParams": HCCL_COMM_RETRY_PARAMS_MAX_LENGTH, "hcclBufferName": BUFFER_NAME_MAX_LENGTH}


class HcclCommConfig(CStruct):
    """``HcclCommConfig``: per-communicator settings of the ``...Config`` init calls (see the
    module docstring); ``initialised`` (pyhcomm's) tells whether ``HcclCommConfigInit`` ran."""

    _fields_ = (("hcclBufferSize", 0), ("hcclDeterministic", 0), ("hcclCommName", ""), ("hcclUdi", ""),
                ("hcclOpExpansionMode", 0), ("hcclRdmaTrafficClass", 0), ("hcclRdmaServiceLevel", 0),
                ("hcclWorldRankID", 0), ("hcclJobID", 0), ("aclGraphZeroCopyEnable", 0), ("hcclExecTimeOut", 0),
                ("hcclAlgo", ""), ("hcclRetryEnable", ""), ("hcclRetryParams", ""), ("hcclBufferName", ""),
                ("hcclQos", 0), ("hcclSymWinMaxMemSizePerRank", 0), ("hcclChannelSqDepth", 0))

    def __init__(self, *args, **fields):
        object.__setattr__(self, "initialised", False)
        super().__init__(*args, **fields)


def comm_config_init(config: HcclCommConfig) -> None:
    """``HcclCommConfigInit``: the C defaults, and the struct marked initialised."""
    for name, _ in HcclCommConfig._fields_:
        setattr(config, name, "" if name in CONFIG_STRINGS else 0)
    config.hcclBufferSize = CONFIG_NOT_SET
    config.hcclDeterministic = CONFIG_NOT_SET
    config.hcclOpExpansionMode = HCCL_COMM_DEFAULT_OP_EXPANSION_MODE
    config.hcclRdmaTrafficClass = CONFIG_NOT_SET
    config.hcclRdmaServiceLevel = CONFIG_NOT_SET
    config.hcclExecTimeOut = EXEC_TIMEOUT_NOT_SET
    config.hcclQos = CONFIG_NOT_SET
    config.hcclSymWinMaxMemSizePerRank = HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE
    config.initialised = True
