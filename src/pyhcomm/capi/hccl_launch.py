"""``hccl_launch.h`` and ``hccl_mc2.h``: custom AI CPU operators launched by HCCL and the MC2
operator arguments, in the flat C tier (model: :mod:`pyhcomm.hccl.launch`)."""
from __future__ import annotations

from ..defs.cstruct import struct_arg
from ..defs.launch import (HcclKernelFuncInfo, HcclKernelLaunchCfg, HcclOpDesc, HcclOpP2pDesc,  # noqa: F401
                           HcclP2pKernelParam, P2P_MAX_ARG_SIZE, kernel_launch_cfg_init, op_desc_init)
from ..aclrt import kernel as _kernel
from ..aclrt.stream import get_stream
from ..enums import CommEngine
from ..errors import AclRuntimeError, not_found, not_support, para, ptr
from ..hccl import comm as comm_mod
from ..hccl import launch as _launch
from ..hccl.thread import get_thread
from ..sim import current_sim as _sim
from ..sim import memory
from ._wrap import c_api

_NOT_SET_64 = (1 << 64) - 1


def _bytes_of(args, size: int, api: str) -> bytes:
    if not size:
        return b""
    if not args:
        raise ptr(api, f"funcInfo.args is NULL but funcInfo.argSize is {size}")
    if isinstance(args, (bytes, bytearray, memoryview)):
        data = bytes(args)
        if len(data) < size:
            raise para(api, f"funcInfo.args holds {len(data)} bytes, fewer than argSize {size}")
        return data[:size]
    try:
        return memory.read_host(args, size)
    except memory.BadRange as why:
        raise para(api, f"funcInfo.args: {why}") from None


def aicpu_kernel_launch(comm_handle, op_info, func_info, thread_handle, user_stream, cfg) -> None:
    """``HcclAicpuKernelLaunch`` (see :mod:`pyhcomm.hccl.launch`), raising."""
    api = "HcclAicpuKernelLaunch"
    c = comm_mod.get_comm(comm_handle, api)
    product = _sim().runtime.product
    if not product.is_950:
        raise not_support(api, f"HcclAicpuKernelLaunch is supported on Atlas 350, not on {product.name}")
    for name, value, cls in (("opInfo", op_info, HcclOpDesc), ("funcInfo", func_info, HcclKernelFuncInfo)):
        if value is None:
            raise ptr(api, f"{name} is NULL")
        if not isinstance(value, cls):
            raise TypeError(f"{api}: {name} must be an {cls.__name__}, not {type(value).__name__}")
    if not user_stream:
        raise ptr(api, "userStream is NULL")
    size = func_info.argSize
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= P2P_MAX_ARG_SIZE:
        raise para(api, f"funcInfo.argSize {size!r} is outside [0, {P2P_MAX_ARG_SIZE}]")
    data = _bytes_of(func_info.args, size, api)
    t = get_thread(thread_handle, api, "aicpuThreadHandle")
    if t.comm is not c or t.engine != CommEngine.COMM_ENGINE_AICPU_TS:
        raise para(api, f"aicpuThreadHandle 0x{t.handle:x} must be a COMM_ENGINE_AICPU_TS thread of this communicator")
    timeout = None
    if cfg is not None:
        if not isinstance(cfg, HcclKernelLaunchCfg):
            raise TypeError(f"{api}: kernelLaunchCfg must be an HcclKernelLaunchCfg, not {type(cfg).__name__}")
        if cfg.timeOut != _NOT_SET_64:
            timeout = cfg.timeOut
    try:
        binary = _sim().handles.kernels.get(_kernel.aclrtBinaryLoadFromFile(func_info.kernelSoName))
        fn = getattr(binary.module, func_info.kernelFuncName, None)
        stream = get_stream(user_stream, api)
    except AclRuntimeError as exc:
        raise para(api, f"funcInfo.kernelSoName {func_info.kernelSoName!r}: {exc.message}") from None
    if not callable(fn):
        raise not_found(api, f"{func_info.kernelSoName} has no kernel {func_info.kernelFuncName!r}")
    param = HcclP2pKernelParam(sendRecvThread=t.handle, opParams=data)
    _kernel.launch_function(fn, stream, (param,), 1, timeout, func_info.kernelFuncName)

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
    """Enqueue ``funcInfo``'s kernel on ``userStream`` (Atlas 350; see :mod:`pyhcomm.hccl.launch`)."""
    aicpu_kernel_launch(comm, opInfo, funcInfo, aicpuThreadHandle, userStream, kernelLaunchCfg)


@c_api(0)
def HcclKfcAllocOpArgs():
    """``ret, opArgs``: a new MC2 argument block (defaults FP16, FP16, SUM, count 0)."""
    return _launch.alloc_op_args()


@c_api()
def HcclKfcFreeOpArgs(opArgs):  # noqa: N803
    _launch.free_op_args(opArgs)


@c_api()
def HcclKfcOpArgsSetSrcDataType(opArgs, srcDataType):  # noqa: N803
    _launch.set_op_arg(opArgs, "srcDataType", srcDataType, "HcclKfcOpArgsSetSrcDataType")


@c_api()
def HcclKfcOpArgsSetDstDataType(opArgs, dstDataType):  # noqa: N803
    _launch.set_op_arg(opArgs, "dstDataType", dstDataType, "HcclKfcOpArgsSetDstDataType")


@c_api()
def HcclKfcOpArgsSetReduceType(opArgs, reduceType):  # noqa: N803
    _launch.set_op_arg(opArgs, "reduceType", reduceType, "HcclKfcOpArgsSetReduceType")


@c_api()
def HcclKfcOpArgsSetCount(opArgs, count):  # noqa: N803
    _launch.set_op_arg(opArgs, "count", count, "HcclKfcOpArgsSetCount")


@c_api()
def HcclKfcOpArgsSetAlgConfig(opArgs, algConfig):  # noqa: N803
    _launch.set_op_arg(opArgs, "algConfig", algConfig, "HcclKfcOpArgsSetAlgConfig")


@c_api()
def HcclKfcOpArgsSetCommEngine(opArgs, commEngine):  # noqa: N803
    _launch.set_op_arg(opArgs, "commEngine", commEngine, "HcclKfcOpArgsSetCommEngine")


@c_api(0)
def HcclCreateOpResCtx(comm, opType, opArgs):  # noqa: N803
    """``ret, opResCtx``: the communicator's resource block for (``opType``, ``opArgs``)."""
    return _launch.create_op_res_ctx(comm, opType, opArgs)
