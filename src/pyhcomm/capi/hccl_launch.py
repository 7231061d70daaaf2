"""``hccl_launch.h`` and ``hccl_mc2.h``: custom AI CPU operators launched by HCCL and the MC2
operator arguments, in the flat C tier (model: :mod:`pyhcomm.hccl.custom_op`)."""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.custom_op import (HcclKernelFuncInfo, HcclKernelLaunchCfg, HcclOpDesc, HcclOpP2pDesc,  # noqa: F401
                              HcclP2pKernelParam, kernel_launch_cfg_init, op_desc_init)
from ..hccl import custom_op as _custom_op
from ._wrap import c_api

__all__ = ["HcclOpDescInit", "HcclKernelLaunchCfgInit", "HcclAicpuKernelLaunch", "HcclKfcAllocOpArgs",
           "HcclKfcFreeOpArgs", "HcclKfcOpArgsSetSrcDataType", "HcclKfcOpArgsSetDstDataType",
           "HcclKfcOpArgsSetReduceType", "HcclKfcOpArgsSetCount", "HcclKfcOpArgsSetAlgConfig",
           "HcclKfcOpArgsSetCommEngine", "HcclCreateOpResCtx", "HcclKernelFuncInfo", "HcclKernelLaunchCfg",
           "HcclOpDesc", "HcclOpP2pDesc", "HcclP2pKernelParam"]


@c_api()
def HcclOpDescInit(opDesc):  # noqa: N803
    """Fill an ``HcclOpDesc`` with 0xFF and set its ABI header."""
    op_desc_init(struct_arg(opDesc, HcclOpDesc, "HcclOpDescInit", "opDesc"))


@c_api()
def HcclKernelLaunchCfgInit(kernelLaunchCfg):  # noqa: N803
    """Fill an ``HcclKernelLaunchCfg`` with 0xFF (timeout not set) and set its ABI header."""
    kernel_launch_cfg_init(struct_arg(kernelLaunchCfg, HcclKernelLaunchCfg, "HcclKernelLaunchCfgInit",
                                      "kernelLaunchCfg"))


@c_api()
def HcclAicpuKernelLaunch(comm, opInfo, funcInfo, aicpuThreadHandle, userStream, kernelLaunchCfg):  # noqa: N803
    """Enqueue ``funcInfo``'s kernel on ``userStream`` (Atlas 350; see :mod:`pyhcomm.hccl.custom_op`)."""
    _custom_op.aicpu_kernel_launch(comm, opInfo, funcInfo, aicpuThreadHandle, userStream, kernelLaunchCfg)


@c_api(0)
def HcclKfcAllocOpArgs():
    """``ret, opArgs``: a new MC2 argument block (defaults FP16, FP16, SUM, count 0)."""
    return _custom_op.alloc_op_args()


@c_api()
def HcclKfcFreeOpArgs(opArgs):  # noqa: N803
    _custom_op.free_op_args(opArgs)


@c_api()
def HcclKfcOpArgsSetSrcDataType(opArgs, srcDataType):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "srcDataType", srcDataType, "HcclKfcOpArgsSetSrcDataType")


@c_api()
def HcclKfcOpArgsSetDstDataType(opArgs, dstDataType):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "dstDataType", dstDataType, "HcclKfcOpArgsSetDstDataType")


@c_api()
def HcclKfcOpArgsSetReduceType(opArgs, reduceType):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "reduceType", reduceType, "HcclKfcOpArgsSetReduceType")


@c_api()
def HcclKfcOpArgsSetCount(opArgs, count):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "count", count, "HcclKfcOpArgsSetCount")


@c_api()
def HcclKfcOpArgsSetAlgConfig(opArgs, algConfig):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "algConfig", algConfig, "HcclKfcOpArgsSetAlgConfig")


@c_api()
def HcclKfcOpArgsSetCommEngine(opArgs, commEngine):  # noqa: N803
    _custom_op.set_op_arg(opArgs, "commEngine", commEngine, "HcclKfcOpArgsSetCommEngine")


@c_api(0)
def HcclCreateOpResCtx(comm, opType, opArgs):  # noqa: N803
    """``ret, opResCtx``: the communicator's resource block for (``opType``, ``opArgs``)."""
    return _custom_op.create_op_res_ctx(comm, opType, opArgs)
