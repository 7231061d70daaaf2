"""``examples/05_custom_ops_allgather/aicpu/inc/common.h`` (and ``binary_stream.h``): ``OpParam`` as
packed bytes, and ``AlgResourceCtx`` with its serialisation (pyhcomm's own byte layout, the same
on the host and in the kernel); the constants it shares with 04's ``common.h`` come from there."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ex04_common import (COMM_INDENTIFIER_MAX_LENGTH, CUSTOM_TIMEOUT, DEVICE_TYPE_A5, NOTIFY_IDX_ACK,  # noqa: F401
                         NOTIFY_IDX_DATA_SIGNAL, SIZE_TABLE, TAG_LENGTH, cstr)

HCCL_CMD_ALLGATHER = 6

#: OpParam: tag, commName, inputPtr, outputPtr, count, devType, myRank, rankSize, dataType, opType,
#: cpuThread, aicpuThreadOnCpu, cpuThreadOnAicpu, aicpuRecordCpuIdx, resCtxDevice, ctxSize.
OP_PARAM = struct.Struct(f"<{TAG_LENGTH}s{COMM_INDENTIFIER_MAX_LENGTH}sQQQIIIIIQQQIQQ")
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
_CHANNEL = struct.Struct("<IIQQQ")      # remoteRank, notifyNum, handle, remoteCclMem (addr, size)


@dataclass
class ChannelInfo:
    remoteRank: int
    notifyNum: int
    handle: int
    remoteCclMem: tuple    # (addr, size)


@dataclass
class AlgResourceCtx:
    cclMem: tuple = (0, 0)
    notifyNumOnMainThread: int = 0
    slaveThreadNum: int = 0
    notifyNumPerThread: list = field(default_factory=list)
    threads: list = field(default_factory=list)
    channels: list = field(default_factory=list)

    def serialize(self) -> bytes:
        out = [struct.pack("<QQII", *self.cclMem, self.notifyNumOnMainThread, self.slaveThreadNum)]
        out.append(_U64.pack(len(self.notifyNumPerThread)) + b"".join(_U32.pack(x) for x in self.notifyNumPerThread))
        out.append(_U64.pack(len(self.threads)) + b"".join(_U64.pack(x) for x in self.threads))
        out.append(_U64.pack(len(self.channels)) + b"".join(
            _CHANNEL.pack(c.remoteRank, c.notifyNum, c.handle, *c.remoteCclMem) for c in self.channels))
        return b"".join(out)

    @classmethod
    def deserialize(cls, data: bytes) -> "AlgResourceCtx":
        addr, size, main_notifies, slaves = struct.unpack_from("<QQII", data, 0)
        at = struct.calcsize("<QQII")

        def items(fmt):
            nonlocal at
            (n,) = _U64.unpack_from(data, at)
            at += _U64.size
            out = [fmt.unpack_from(data, at + i * fmt.size) for i in range(n)]
            at += n * fmt.size
            return out

        per_thread = [x for (x,) in items(_U32)]
        threads = [x for (x,) in items(_U64)]
        channels = [ChannelInfo(r, k, h, (a, s)) for r, k, h, a, s in items(_CHANNEL)]
        return cls((addr, size), main_notifies, slaves, per_thread, threads, channels)
