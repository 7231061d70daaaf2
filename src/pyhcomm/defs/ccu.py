"""``ccu_types.h`` / ``ccu_res_defs.h`` / ``hccl_ccu_res.h``: the Collective Communication Unit's
types and limits (the model: :mod:`pyhcomm.hcomm.resources.ccu_pool`, :mod:`pyhcomm.ccu`).

Limits and their sources: ``CCU_MAX_IODIE_NUM`` (2: the ``dieId`` range of ``ccu_res.h``, the
example's ``CCU_DIE_NUM``); a CCU buffer slice is 4 KiB and a move through CCU buffers may be at
most 4096 bytes per slice; a task descriptor carries at most 13 64-bit arguments; a move from
local to remote memory must be shorter than 256 MB (``CCU_models_concepts.md``, "约束与限制"); a
sync register (CKE) has 16 bits (the ``uint16_t`` masks of ``ccu_primitives.hpp``); a CCU channel
end has 4 notifies (hcomm-api §3.4) and as many variable slots (pyhcomm's inference).
"""
from __future__ import annotations

from enum import IntEnum

from .cstruct import CStruct


CCU_MAX_IODIE_NUM = 2
CCU_MS_SIZE = 4096
CCU_TASK_ARGS_MAX = 13
CCU_CKE_BITS = 16
CCU_REMOTE_MAX = 256 << 20
CCU_CHANNEL_CKES = 4
CCU_CHANNEL_VARIABLES = 4


class CcuResult(IntEnum):
    CCU_SUCCESS = 0
    CCU_E_PARA = 1
    CCU_E_PTR = 2
    CCU_E_INTERNAL = 4
    CCU_E_NOT_SUPPORT = 5
    CCU_E_NOT_FOUND = 6
    CCU_E_UNAVAIL = 7
    CCU_E_RUNTIME = 15
    CCU_E_DRV_START = 4096
    CCU_E_DRV_INIT_FAILED = 4097
    CCU_E_DRV_BUSY = 4098
    CCU_E_DRV_END = 4224
    CCU_E_RESERVED = 9216


class CcuConditionType(IntEnum):
    CCU_CONDITION_EQ = 0
    CCU_CONDITION_NE = 1
    CCU_CONDITION_LT = 2
    CCU_CONDITION_LE = 3
    CCU_CONDITION_GT = 4
    CCU_CONDITION_GE = 5


class HcommCcuResType(IntEnum):
    HCOMM_CCU_RES_TYPE_INVALID = -1
    HCOMM_CCU_RES_TYPE_LOOP = 0
    HCOMM_CCU_RES_TYPE_CCU_BUF = 1
    HCOMM_CCU_RES_TYPE_VARIABLE = 2
    HCOMM_CCU_RES_TYPE_ADDRESS = 3
    HCOMM_CCU_RES_TYPE_EVENT = 4
    HCOMM_CCU_RES_TYPE_CCU_THREAD = 5
    HCOMM_CCU_RES_TYPE_INSTRUCTION = 6
    HCOMM_CCU_RES_TYPE_CASC_CNT = 7


class CcuCfgHeader(CStruct):
    _fields_ = (("magic", 0), ("version", 0), ("size", 0), ("reserved", 0))


class CcuLoopConfig(CStruct):
    _fields_ = (("iterNum", 0), ("addrOffset", 0))


class CcuLoopCfg(CStruct):
    _fields_ = (("header", CcuCfgHeader), ("iterNum", 0), ("addrOffset", 0))


class CcuLoopGroupConfig(CStruct):
    _fields_ = (("cloneNum", 0), ("addrOffset", 0), ("eventOffset", 0), ("ccuBufferOffset", 0),
                ("cloneLoopOffset", 0))


class CcuLoopGroupCfg(CStruct):
    _fields_ = (("header", CcuCfgHeader), ("cloneNum", 0), ("addrOffset", 0), ("eventOffset", 0),
                ("varOffset", 0), ("ccuBufferOffset", 0), ("cloneLoopOffset", 0))
