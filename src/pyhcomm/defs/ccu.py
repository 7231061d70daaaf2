"""``ccu_types.h`` / ``hccl_ccu_res.h``: the Collective Communication Unit's types.

pyhcomm does not model the CCU; these types exist so that scripts import, and the CCU calls
return ``HCCL_E_NOT_SUPPORT`` (see README, "Not modeled").
"""
from __future__ import annotations

from enum import IntEnum

from .cstruct import CStruct


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
