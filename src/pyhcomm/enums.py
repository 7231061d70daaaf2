"""C enumerations with their C values (``hcomm_res_defs.h``, ``hccl_types.h``, ``acl_rt.h``).

Every member is also exported as a module constant of :mod:`pyhcomm` (``pyhcomm.COMM_ENGINE_CPU_TS``).
"""
from __future__ import annotations

from enum import IntEnum, IntFlag

import ml_dtypes
import numpy as np


class CommEngine(IntEnum):
    COMM_ENGINE_RESERVED = -1
    COMM_ENGINE_CPU = 0
    COMM_ENGINE_CPU_TS = 1
    COMM_ENGINE_AICPU = 2
    COMM_ENGINE_AICPU_TS = 3
    COMM_ENGINE_AIV = 4
    COMM_ENGINE_CCU = 5



class HcommDataType(IntEnum):
    HCOMM_DATA_TYPE_INT8 = 0
    HCOMM_DATA_TYPE_INT16 = 1
    HCOMM_DATA_TYPE_INT32 = 2
    HCOMM_DATA_TYPE_FP16 = 3
    HCOMM_DATA_TYPE_FP32 = 4
    HCOMM_DATA_TYPE_INT64 = 5
    HCOMM_DATA_TYPE_UINT64 = 6
    HCOMM_DATA_TYPE_UINT8 = 7
    HCOMM_DATA_TYPE_UINT16 = 8
    HCOMM_DATA_TYPE_UINT32 = 9
    HCOMM_DATA_TYPE_FP64 = 10
    HCOMM_DATA_TYPE_BFP16 = 11
    HCOMM_DATA_TYPE_INT128 = 12
    HCOMM_DATA_TYPE_HIF8 = 14
    HCOMM_DATA_TYPE_FP8E4M3 = 15
    HCOMM_DATA_TYPE_FP8E5M2 = 16
    HCOMM_DATA_TYPE_FP8E8M0 = 17
    HCOMM_DATA_TYPE_RESERVED = 255


class HcclDataType(IntEnum):
    """``HcclDataType``: the same numbering as :class:`HcommDataType`."""

    HCCL_DATA_TYPE_INT8 = 0
    HCCL_DATA_TYPE_INT16 = 1
    HCCL_DATA_TYPE_INT32 = 2
    HCCL_DATA_TYPE_FP16 = 3
    HCCL_DATA_TYPE_FP32 = 4
    HCCL_DATA_TYPE_INT64 = 5
    HCCL_DATA_TYPE_UINT64 = 6
    HCCL_DATA_TYPE_UINT8 = 7
    HCCL_DATA_TYPE_UINT16 = 8
    HCCL_DATA_TYPE_UINT32 = 9
    HCCL_DATA_TYPE_FP64 = 10
    HCCL_DATA_TYPE_BFP16 = 11
    HCCL_DATA_TYPE_INT128 = 12
    HCCL_DATA_TYPE_HIF8 = 14
    HCCL_DATA_TYPE_FP8E4M3 = 15
    HCCL_DATA_TYPE_FP8E5M2 = 16
    HCCL_DATA_TYPE_FP8E8M0 = 17
    HCCL_DATA_TYPE_RESERVED = 255


#: Element size in bytes by data-type value (HCCL's size table).
DATA_TYPE_SIZE = {0: 1, 1: 2, 2: 4, 3: 2, 4: 4, 5: 8, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 2, 12: 16,
                  14: 1, 15: 1, 16: 1, 17: 1}

#: numpy dtype by data-type value (INT128 and HIF8 have none: they move as raw bytes).
NUMPY_DTYPE = {
    0: np.dtype(np.int8), 1: np.dtype(np.int16), 2: np.dtype(np.int32), 3: np.dtype(np.float16),
    4: np.dtype(np.float32), 5: np.dtype(np.int64), 6: np.dtype(np.uint64), 7: np.dtype(np.uint8),
    8: np.dtype(np.uint16), 9: np.dtype(np.uint32), 10: np.dtype(np.float64),
    11: np.dtype(ml_dtypes.bfloat16), 15: np.dtype(ml_dtypes.float8_e4m3fn),
    16: np.dtype(ml_dtypes.float8_e5m2), 17: np.dtype(ml_dtypes.float8_e8m0fnu),
}


class HcommReduceOp(IntEnum):
    HCOMM_REDUCE_SUM = 0
    HCOMM_REDUCE_PROD = 1
    HCOMM_REDUCE_MAX = 2
    HCOMM_REDUCE_MIN = 3
    HCOMM_REDUCE_RESERVED = 255


class HcclReduceOp(IntEnum):
    HCCL_REDUCE_SUM = 0
    HCCL_REDUCE_PROD = 1
    HCCL_REDUCE_MAX = 2
    HCCL_REDUCE_MIN = 3
    HCCL_REDUCE_RESERVED = 255


class ThreadResType(IntEnum):
    THREAD_RES_TYPE_INVALID = -1
    THREAD_RES_TYPE_STREAM = 0


class HcclDevType(IntEnum):
    """HCCL's device types (``dev_type.h``); never compare with other modules' numbering."""

    DEV_TYPE_910 = 0
    DEV_TYPE_310P3 = 1
    DEV_TYPE_910B = 2
    DEV_TYPE_310P1 = 3
    DEV_TYPE_910_93 = 4
    DEV_TYPE_NOSOC = 5
    DEV_TYPE_950 = 6
    DEV_TYPE_MC62 = 7
    DEV_TYPE_960 = 8


class aclrtMemcpyKind(IntEnum):
    ACL_MEMCPY_HOST_TO_HOST = 0
    ACL_MEMCPY_HOST_TO_DEVICE = 1
    ACL_MEMCPY_DEVICE_TO_HOST = 2
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3
    ACL_MEMCPY_DEFAULT = 4
    ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE = 5
    ACL_MEMCPY_INNER_DEVICE_TO_DEVICE = 6
    ACL_MEMCPY_INTER_DEVICE_TO_DEVICE = 7


class aclrtMemMallocPolicy(IntFlag):
    """Allocation policy: a page-size choice (low byte) OR-ed with memory-type bits."""

    ACL_MEM_MALLOC_HUGE_FIRST = 0
    ACL_MEM_MALLOC_HUGE_ONLY = 1
    ACL_MEM_MALLOC_NORMAL_ONLY = 2
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5
    ACL_MEM_MALLOC_HUGE1G_ONLY = 6
    ACL_MEM_MALLOC_HUGE1G_ONLY_P2P = 7
    ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100
    ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000
    ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000


#: Bits of a policy that name the page-size choice, and every bit a policy may carry.
MALLOC_PAGE_MASK = 0xFF
MALLOC_KNOWN_BITS = 0xFF | 0x0100 | 0x1000 | 0x100000


class aclrtMallocAttrType(IntEnum):
    ACL_RT_MEM_ATTR_RSV = 0
    ACL_RT_MEM_ATTR_MODULE_ID = 1
    ACL_RT_MEM_ATTR_DEVICE_ID = 2
    ACL_RT_MEM_ATTR_VA_FLAG = 3


class aclrtLaunchKernelAttrId(IntEnum):
    ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE = 1
    ACL_RT_LAUNCH_KERNEL_ATTR_DYN_UBUF_SIZE = 2
    ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE = 3
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET = 4
    ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH = 5
    ACL_RT_LAUNCH_KERNEL_ATTR_DATA_DUMP = 6
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT = 7
    ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US = 8    # CANN 8.5 and later


class aclrtEngineType(IntEnum):
    """``ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE``'s values: the AI Core (cube) or the vector cores."""
    ACL_RT_ENGINE_TYPE_AIC = 0
    ACL_RT_ENGINE_TYPE_AIV = 1


class aclrtBinaryLoadOptionType(IntEnum):
    ACL_RT_BINARY_LOAD_OPT_LAZY_LOAD = 1
    ACL_RT_BINARY_LOAD_OPT_MAGIC = 2
    ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE = 3


#: Module id of HCCL in CANN's log-module enumeration (used as ``ACL_RT_MEM_ATTR_MODULE_ID``).
HCCL = 3

#: ``HCCL_ROOT_INFO_BYTES``: size of an ``HcclRootInfo``.
HCCL_ROOT_INFO_BYTES = 4108
COMM_NAME_MAX_LENGTH = 128
HCCL_RES_TAG_MAX_LEN = 255

ALL_ENUMS = (CommEngine, HcommDataType, HcclDataType, HcommReduceOp, HcclReduceOp, ThreadResType,
             HcclDevType, aclrtMemcpyKind, aclrtMemMallocPolicy, aclrtMallocAttrType,
             aclrtLaunchKernelAttrId, aclrtEngineType, aclrtBinaryLoadOptionType)
