"""``hccl_launch.h``: custom AI CPU operators launched by HCCL (``HcclAicpuKernelLaunch``).

``HcclOpDesc`` ends in a 76-byte union whose P2P member is an ``HcclOpP2pDesc`` (``buffer`` at 0,
``cmdType`` int32 at 16, ``dataType`` at 20, ``count`` uint64 at 24, ``remoteRank`` at 32,
``unfoldStream`` at 40); ``HcclOpDesc.p2p`` (pyhcomm's) reads and writes it.
``HcclOpDescInit`` and ``HcclKernelLaunchCfgInit`` fill with 0xFF and set the ABI header.
"""
from __future__ import annotations

import struct

from ..enums import HcclDataType
from .cstruct import CStruct, raw_bytes
from .hccl_types import HcclCMDType
from .res_defs import CommAbiHeader

P2P_MAX_ARG_SIZE = 8192
HCCL_OP_DESC_OP_NAME_MAX_LEN = 256
HCCL_OPDESC_MAGIC_WORD = 0x0F0F0F0F
HCCL_OPDESC_VERSION = 1
HCCL_KERNEL_SO_NAME_MAX_LEN = 256
HCCL_KERNEL_FUNC_NAME_MAX_LEN = 256
HCCL_KERNEL_LAUNCH_CFG_MAGIC_WORD = 0x0F0F0F0F
HCCL_KERNEL_LAUNCH_CFG_VERSION = 1
#: ``opDescType`` of a point-to-point operator.
OP_DESC_TYPE_P2P = 1
_P2P = struct.Struct("<Q8xiiQI4xQ")


class HcclOpP2pDesc(CStruct):
    """``HcclOpP2pDesc``: buffer, command (SEND / RECEIVE), data type, count, peer, unfold stream."""

    _fields_ = (("buffer", 0), ("cmdType", HcclCMDType.HCCL_CMD_INVALID),
                ("dataType", HcclDataType.HCCL_DATA_TYPE_INT8), ("count", 0), ("remoteRank", 0),
                ("unfoldStream", 0))


class HcclOpDesc(CStruct):
    """``HcclOpDesc``: the ABI header, the operator's kind and name, a 76-byte union."""

    _raws_ = (("raws", 76),)
    _fields_ = (("header", CommAbiHeader), ("opDescType", 0), ("opName", ""))
    raws = raw_bytes("raws", 76)

    @property
    def p2p(self) -> HcclOpP2pDesc:
        b, cmd, dt, count, rank, stream = _P2P.unpack_from(self._raws, 0)
        return HcclOpP2pDesc(buffer=b, cmdType=cmd, dataType=dt, count=count, remoteRank=rank, unfoldStream=stream)

    @p2p.setter
    def p2p(self, d: HcclOpP2pDesc) -> None:
        _P2P.pack_into(self._raws, 0, d.buffer, int(d.cmdType), int(d.dataType), d.count, d.remoteRank,
                       d.unfoldStream)


class HcclP2pKernelParam(CStruct):
    """``HcclP2pKernelParam``: what a P2P AI CPU kernel receives (its thread, and the arguments)."""

    _raws_ = (("opParams", P2P_MAX_ARG_SIZE),)
    _fields_ = (("sendRecvThread", 0),)
    opParams = raw_bytes("opParams", P2P_MAX_ARG_SIZE)


class HcclKernelFuncInfo(CStruct):
    """``HcclKernelFuncInfo``: the kernel binary (a Python kernel module in pyhcomm), the function,
    and its arguments (a host pointer and size, or bytes)."""

    _fields_ = (("kernelSoName", ""), ("kernelFuncName", ""), ("args", 0), ("argSize", 0))


class HcclKernelLaunchCfg(CStruct):
    """``HcclKernelLaunchCfg``: the kernel's timeout in seconds (all ones: not set)."""

    _raws_ = (("reserved", 104),)
    _fields_ = (("header", CommAbiHeader), ("timeOut", 0))
    reserved = raw_bytes("reserved", 104)


def op_desc_init(desc: HcclOpDesc) -> None:
    """``HcclOpDescInit``."""
    desc.fill(0xFF)
    desc.header = CommAbiHeader(version=HCCL_OPDESC_VERSION, magicWord=HCCL_OPDESC_MAGIC_WORD, size=352, reserved=0)
    desc.opDescType = 0xFFFFFFFF
    desc.opName = ""


def kernel_launch_cfg_init(cfg: HcclKernelLaunchCfg) -> None:
    """``HcclKernelLaunchCfgInit``."""
    cfg.fill(0xFF)
    cfg.header = CommAbiHeader(version=HCCL_KERNEL_LAUNCH_CFG_VERSION, magicWord=HCCL_KERNEL_LAUNCH_CFG_MAGIC_WORD,
                               size=128, reserved=0)
    cfg.timeOut = (1 << 64) - 1
