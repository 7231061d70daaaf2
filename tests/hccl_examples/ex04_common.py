"""``examples/04_custom_ops_p2p/inc/common.h``: constants and the structures the host hands the
AI CPU kernel, as packed bytes (the same layout on both sides; pyhcomm's own, not C's padding)."""
from __future__ import annotations

import struct

NOTIFY_IDX_ACK = 0
NOTIFY_IDX_DATA_SIGNAL = 1
CUSTOM_TIMEOUT = 1836
COMM_INDENTIFIER_MAX_LENGTH = 128
TAG_LENGTH = 32 + COMM_INDENTIFIER_MAX_LENGTH
DEVICE_TYPE_A2, DEVICE_TYPE_A3, DEVICE_TYPE_A5 = 0, 1, 2
HCCL_CMD_SEND, HCCL_CMD_RECEIVE = 4, 5      # HcclCMDType
#: SIZE_TABLE of common.h: bytes per HcclDataType value 0..17 (13 is a hole: 2, as the C table has it).
SIZE_TABLE = {0: 1, 1: 2, 2: 4, 3: 2, 4: 4, 5: 8, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 2, 12: 16, 13: 2, 14: 1, 15: 1,
              16: 1, 17: 1}

#: AlgResourceCtx: aicpuThread, cpuThreadOnAicpu, localBuffer (addr, size), remoteBuffer (addr,
#: size), channelHandle.
ALG_RESOURCE_CTX = struct.Struct("<QQQQQQQ")
#: OpParam: tag, commName, inputPtr, outputPtr, count, devType, dataType, opType, cpuThread,
#: aicpuThreadOnCpu, resCtx.
OP_PARAM = struct.Struct(f"<{TAG_LENGTH}s{COMM_INDENTIFIER_MAX_LENGTH}sQQQIIIQQQ")


def cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode()
