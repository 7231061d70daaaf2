"""``examples/05_custom_ops_allgather/ccu/inc/common.h`` (and ``binary_stream.h``): the constants, the
kernel's argument structures, ``AlgResourceCtxSerializable`` with its serialisation (pyhcomm's own
byte layout) and ``ConvertCcuToHccl``."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from pyhcomm import (CCU_E_INTERNAL, CCU_E_NOT_FOUND, CCU_E_NOT_SUPPORT, CCU_E_PARA, CCU_E_PTR,  # ... from pyhccl
                     CCU_E_UNAVAIL, CCU_SUCCESS, HCCL_E_INTERNAL, HCCL_E_NOT_FOUND, HCCL_E_NOT_SUPPORT, HCCL_E_PARA,
                     HCCL_E_PTR, HCCL_E_UNAVAIL, HCCL_SUCCESS, HCOMM_CCU_RES_TYPE_ADDRESS, HCOMM_CCU_RES_TYPE_CCU_BUF,
                     HCOMM_CCU_RES_TYPE_CCU_THREAD, HCOMM_CCU_RES_TYPE_EVENT, HCOMM_CCU_RES_TYPE_LOOP,
                     HCOMM_CCU_RES_TYPE_VARIABLE)

INVALID_VALUE_RANKID = 0xFFFFFFFF
NOTIFY_IDX_ACK = 0
NOTIFY_IDX_DATA_SIGNAL = 1
CUSTOM_TIMEOUT = 1800
CCU_MAX_RANK_SIZE = 16
CCU_DIE_NUM = 2                 # CCU IO dies
DEVICE_TYPE_A2, DEVICE_TYPE_A3, DEVICE_TYPE_A5 = 0, 1, 2

#: a fifth of the total of each resource (the C comment)
CCU_DEFAULT_RES_FRACTION_ADDRESS = 400
CCU_DEFAULT_RES_FRACTION_LOOP = 16
CCU_DEFAULT_RES_FRACTION_CCU_BUF = 128
CCU_DEFAULT_RES_FRACTION_VARIABLE = 400
CCU_DEFAULT_RES_FRACTION_EVENT = 48
CCU_DEFAULT_RES_FRACTION_CCU_THREAD = 2
#: utils.cc's CCU_DEFAULT_RES_MAP
CCU_DEFAULT_RES_MAP = {HCOMM_CCU_RES_TYPE_ADDRESS: CCU_DEFAULT_RES_FRACTION_ADDRESS,
                       HCOMM_CCU_RES_TYPE_LOOP: CCU_DEFAULT_RES_FRACTION_LOOP,
                       HCOMM_CCU_RES_TYPE_CCU_BUF: CCU_DEFAULT_RES_FRACTION_CCU_BUF,
                       HCOMM_CCU_RES_TYPE_VARIABLE: CCU_DEFAULT_RES_FRACTION_VARIABLE,
                       HCOMM_CCU_RES_TYPE_EVENT: CCU_DEFAULT_RES_FRACTION_EVENT,
                       HCOMM_CCU_RES_TYPE_CCU_THREAD: CCU_DEFAULT_RES_FRACTION_CCU_THREAD}


@dataclass
class CcuKernelArgBase:
    channels: list = field(default_factory=list)     # ChannelHandle channels[CCU_MAX_RANK_SIZE]
    channelCount: int = 0


@dataclass
class CcuKernelArgAllGatherMesh1DMem2Mem(CcuKernelArgBase):
    rankSize: int = 0
    rankId: int = 0


@dataclass
class CcuKernelInfo:
    kernelFuncName: str = ""
    kernelFunc: object = None
    kernelArg: object = None


_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")


def _vector(fmt, values) -> bytes:
    return _U64.pack(len(values)) + b"".join(fmt.pack(v) for v in values)


@dataclass
class AlgResourceCtxSerializable:
    cclMem: tuple = (0, 0)
    notifyNumOnMainThread: int = 0
    threads: list = field(default_factory=list)
    ccuKernelNum: list = field(default_factory=list)
    ccuKernels: list = field(default_factory=list)

    def Serialize(self) -> bytes:  # noqa: N802
        return b"".join((struct.pack("<QQI", *self.cclMem, self.notifyNumOnMainThread), _vector(_U64, self.threads),
                         _vector(_U32, self.ccuKernelNum), _vector(_U64, self.ccuKernels)))

    def DeSerialize(self, data: bytes) -> None:  # noqa: N802
        addr, size, self.notifyNumOnMainThread = struct.unpack_from("<QQI", data, 0)
        self.cclMem = (addr, size)
        at = struct.calcsize("<QQI")

        def vector(fmt):
            nonlocal at
            (n,) = _U64.unpack_from(data, at)
            at += _U64.size
            out = [fmt.unpack_from(data, at + i * fmt.size)[0] for i in range(n)]
            at += n * fmt.size
            return out

        self.threads, self.ccuKernelNum, self.ccuKernels = vector(_U64), vector(_U32), vector(_U64)


def ConvertCcuToHccl(ccuResult):  # noqa: N802,N803
    return {CCU_SUCCESS: HCCL_SUCCESS, CCU_E_PARA: HCCL_E_PARA, CCU_E_PTR: HCCL_E_PTR, CCU_E_INTERNAL: HCCL_E_INTERNAL,
            CCU_E_NOT_SUPPORT: HCCL_E_NOT_SUPPORT, CCU_E_NOT_FOUND: HCCL_E_NOT_FOUND,
            CCU_E_UNAVAIL: HCCL_E_UNAVAIL}.get(ccuResult, HCCL_E_INTERNAL)
