"""``examples/05_custom_ops_allgather/inc/common.h`` and ``extra_args.h`` (the top level: the AIV
variant): the constants and ``OpParam``, the bytes the host hands the AIV kernel
(``aclrtLaunchKernelWithHostArgs``), laid out as the C struct is (natural alignment: the padding
after the two ``bool`` fields is explicit)."""
from __future__ import annotations

import struct

CUSTOM_TIMEOUT = 1836
COMM_INDENTIFIER_MAX_LENGTH = 128
OP_NAME_LENGTH = 32
TAG_LENGTH = OP_NAME_LENGTH + COMM_INDENTIFIER_MAX_LENGTH
AIV_TAG_BUFF_LEN = 2 * 1024 * 1024          # the AIV engine context: addresses, flags, the tag counter
MAX_RANK_SIZE = 16                          # extra_args.h
MAX_RANK_SIZE_A3 = 768

#: OpParam: tag, commName; buffIn, input, output; rank, rankSize; xRankSize, yRankSize, zRankSize,
#: len; dataType, reduceOp, root, tagId; inputSliceStride, outputSliceStride, repeatNum,
#: inputRepeatStride, outputRepeatStride; isOpBase (+7 pad); headCountMem, tailCountMem,
#: addOneMem; counterMemSize, isEnableCounter (+3 pad); ExtraArgs (sendCounts, sendDispls,
#: recvCounts, recvDispls: MAX_RANK_SIZE uint64 each).
OP_PARAM = struct.Struct(f"<{TAG_LENGTH}s{COMM_INDENTIFIER_MAX_LENGTH}sQQQIIQQQQIIIIQQQQQ?7xQQQI?3x"
                         f"{4 * MAX_RANK_SIZE}Q")
FIELDS = ("tag", "commName", "buffIn", "input", "output", "rank", "rankSize", "xRankSize", "yRankSize", "zRankSize",
          "len", "dataType", "reduceOp", "root", "tagId", "inputSliceStride", "outputSliceStride", "repeatNum",
          "inputRepeatStride", "outputRepeatStride", "isOpBase", "headCountMem", "tailCountMem", "addOneMem",
          "counterMemSize", "isEnableCounter")


def new_op_param() -> dict:
    """``OpParam param;``: every field at its default (0, false, empty strings, zero ExtraArgs)."""
    p = {name: 0 for name in FIELDS}
    p.update(tag="", commName="", isOpBase=False, isEnableCounter=False, extraArgs=[0] * (4 * MAX_RANK_SIZE))
    return p


def pack(p: dict) -> bytes:
    values = [p[name] for name in FIELDS]
    values[0], values[1] = p["tag"].encode(), p["commName"].encode()
    return OP_PARAM.pack(*values, *p["extraArgs"])


def unpack(data: bytes) -> dict:
    values = OP_PARAM.unpack(data[:OP_PARAM.size])
    p = dict(zip(FIELDS, values))
    p["extraArgs"] = list(values[len(FIELDS):])
    return p
