"""``hccl_res.h`` types not shared with HCOMM: the dedicated thread kinds."""
from __future__ import annotations

from enum import IntEnum


class HcclDedicatedThreadType(IntEnum):
    HCCL_DED_THREAD_TYPE_INVALID = -1
    HCCL_DED_THREAD_TYPE_AICPU_LAUNCH = 0
    HCCL_DED_THREAD_TYPE_AICPU_LAUNCH_GE = 1
    HCCL_DED_THREAD_TYPE_AICPU_ORDER_LAUNCH_OPBASE = 2
    HCCL_DED_THREAD_TYPE_AICPU_ORDER_LAUNCH_ACLGRAPH = 3
    HCCL_DED_THREAD_TYPE_AICPU_ORDER_LAUNCH_GE = 4
    HCCL_DED_THREAD_TYPE_AICPU_ORDER_LAUNCH_DEVICE = 5
