"""Custom operators: the kernel launch of ``hccl_launch.h`` (:func:`aicpu_kernel_launch`) and the
MC2 operator arguments (``hccl_mc2.h``: ``HcclKfc*``, ``HcclCreateOpResCtx``).

``HcclAicpuKernelLaunch`` (Atlas 350, as documented; ``HCCL_E_NOT_SUPPORT`` elsewhere) loads the
kernel binary ``funcInfo.kernelSoName`` (in pyhcomm a Python kernel module: a ``.py`` path or an
importable module name, as ``aclrtBinaryLoadFromFile``), finds ``funcInfo.kernelFuncName`` in it
and enqueues it on ``userStream`` as an AI CPU kernel called with one argument, an
``HcclP2pKernelParam`` whose ``sendRecvThread`` is ``aicpuThreadHandle`` (an AICPU_TS thread of
``comm``) and whose ``opParams`` holds ``funcInfo.argSize`` bytes of ``funcInfo.args`` (a host
pointer, or bytes). ``kernelLaunchCfg.timeOut`` (s; all ones: not set) is kept with the kernel
but not enforced (see README, after the calls not modelled): its waits time out on their own. The
kernel is enqueued at once (a launch inside an ``HcclGroupStart`` group is not deferred to
``HcclGroupEnd`` yet).

MC2 arguments: ``HcclKfcAllocOpArgs`` gives an argument block (defaults FP16, FP16, SUM, count
0, no algorithm config, engine AICPU); the setters check their value (a data type, a reduce op,
an engine of AICPU or AIV: ``HCCL_E_NOT_SUPPORT`` for others, an algorithm string < 128 bytes).
``HcclCreateOpResCtx`` returns the address of a communicator-owned device block (4 KiB) for the
(operator type, arguments) pair, the same one for the same pair; pyhcomm runs no MC2 kernels and
gives the block no contents.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import args as argcheck
from ..aclrt import kernel as _kernel
from ..aclrt.stream import get_stream
from ..args import live_object
from ..defs.custom_op import HcclKernelFuncInfo, HcclKernelLaunchCfg, HcclOpDesc, HcclP2pKernelParam, P2P_MAX_ARG_SIZE
from ..defs.hccl_types import HcclCMDType
from ..enums import DATA_TYPE_SIZE, CommEngine, HcclDataType, HcclReduceOp
from ..errors import AclRuntimeError, not_found, not_support, para, ptr
from ..hcomm.resources import engine_ctx, engines
from ..hcomm.resources.thread import get_thread
from ..sim import current_sim as _sim
from ..sim import memory
from . import comm as comm_mod

ALG_CONFIG_SIZE = 128
OP_RES_CTX_SIZE = 4096
#: ``HCCL_CMD_MAX``: operator types are below it.
CMD_MAX = int(HcclCMDType.HCCL_CMD_MAX)


@dataclass
class OpArgs:
    """An MC2 argument block (``HcclKfcAllocOpArgs``)."""

    srcDataType: int = int(HcclDataType.HCCL_DATA_TYPE_FP16)
    dstDataType: int = int(HcclDataType.HCCL_DATA_TYPE_FP16)
    reduceType: int = int(HcclReduceOp.HCCL_REDUCE_SUM)
    count: int = 0
    algConfig: str = ""
    commEngine: int = int(CommEngine.COMM_ENGINE_AICPU)
    handle: int = 0


def alloc_op_args() -> int:
    args = OpArgs()
    args.handle = _sim().handles.misc.add(args)
    return args.handle


def op_args(handle, api: str) -> OpArgs:
    return live_object(handle, OpArgs, api, "opArgs", "an argument block of HcclKfcAllocOpArgs", para)


def free_op_args(handle) -> None:
    op_args(handle, "HcclKfcFreeOpArgs")
    _sim().handles.misc.remove(handle)


def set_op_arg(handle, field: str, value, api: str) -> None:
    """One ``HcclKfcOpArgsSet*`` call: check ``value`` for ``field`` and store it."""
    args = op_args(handle, api)
    if field in ("srcDataType", "dstDataType", "reduceType", "commEngine"):
        value = argcheck.integer(value, api, field, -(1 << 64), argcheck.UINT64_MAX)
    if field in ("srcDataType", "dstDataType"):
        if value not in DATA_TYPE_SIZE:
            raise para(api, f"{field} {value!r} is not an HcclDataType")
    elif field == "reduceType":
        if value not in {int(op) for op in HcclReduceOp if op != HcclReduceOp.HCCL_REDUCE_RESERVED}:
            raise para(api, f"reduceType {value!r} is not an HcclReduceOp")
    elif field == "count":
        value = argcheck.integer(value, api, "count")     # a uint64
    elif field == "algConfig":
        if value is None:
            raise ptr(api, "algConfig is NULL")
        if not isinstance(value, str) or len(value.encode()) >= ALG_CONFIG_SIZE:
            raise para(api, f"algConfig must be a str of fewer than {ALG_CONFIG_SIZE} bytes")
    elif field == "commEngine":
        mc2 = [e for e in engines.engines() if e.mc2]
        if not any(e.value == value for e in mc2):
            raise not_support(api, f"commEngine {value!r}: MC2 operators run on "
                                   f"{' or '.join(e.name for e in mc2)}")
    setattr(args, field, value if isinstance(value, str) else int(value))


def create_op_res_ctx(comm_handle, op_type, handle) -> int:
    api = "HcclCreateOpResCtx"
    c = comm_mod.get_comm(comm_handle, api)
    args = op_args(handle, api)
    op_type = argcheck.integer(op_type, api, "opType", -(1 << 64), argcheck.UINT64_MAX)
    if not 0 <= op_type < CMD_MAX:
        raise para(api, f"opType {op_type!r} is not an operator type (below HCCL_CMD_MAX = {CMD_MAX})")
    tag = (f"mc2_{op_type}_{args.srcDataType}_{args.dstDataType}_{args.reduceType}_{args.count}_"
           f"{args.commEngine}_{args.algConfig}")[:255]
    existing = c.engine_ctx.get((tag, CommEngine.COMM_ENGINE_AICPU))
    if existing is not None:
        return existing.addr
    return engine_ctx.create(c.handle, tag, CommEngine.COMM_ENGINE_AICPU, OP_RES_CTX_SIZE).addr


# -- HcclAicpuKernelLaunch --------------------------------------------------------------------

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
