"""The CCU in the flat C tier (``ccu_res.h``, ``ccu_launch.h``, ``hccl_ccu_res.h``): pyhccl's 27 calls.

The ``HcommCcu*`` calls return a ``CcuResult``; the ``HcclComm*CcuIns`` calls an ``HcclResult``
(a ``CcuResult`` passed through where the page says so). Outputs follow ret as pyhccl returns them.
Models: :mod:`pyhcomm.hcomm.resources.ccu_res`, :mod:`~pyhcomm.hcomm.resources.ccu_reserve`,
:mod:`pyhcomm.ccu` (registration, launch), :mod:`pyhcomm.hccl.ccu`. ``kernelFunc`` is a Python
callable (pyhccl's is a native function pointer).
"""
from __future__ import annotations

import functools

from ..ccu import launch as _launch
from ..ccu import register as _register
from ..defs.ccu import (CcuCfgHeader, CcuConditionType, CcuLoopCfg, CcuLoopConfig,  # noqa: F401
                        CcuLoopGroupCfg, CcuLoopGroupConfig, CcuResult, HcommCcuResType)
from ..defs.cstruct import void_struct_arg
from ..defs.res_defs import CommMem
from ..errors import HcclError
from ..hccl import ccu as _hccl
from ..hcomm.resources import ccu_res as _res
from ..hcomm.resources import ccu_reserve as _reserve
from ._wrap import _fresh, c_api, failed


def ccu_api(*fail_outputs):
    """As :func:`._wrap.c_api`, for a call that returns a ``CcuResult``."""
    def deco(impl):
        n = len(fail_outputs)

        @functools.wraps(impl)
        def wrapper(*args):
            try:
                out = impl(*args)
            except HcclError as exc:
                code = int(failed(exc))
                try:
                    code = CcuResult(code)
                except ValueError:
                    pass
                return (code, *map(_fresh, fail_outputs)) if n else code
            if not n:
                return CcuResult.CCU_SUCCESS
            return (CcuResult.CCU_SUCCESS, *out) if n > 1 else (CcuResult.CCU_SUCCESS, out)

        wrapper.raising = impl
        wrapper.fail_outputs = fail_outputs
        return wrapper
    return deco


# -- resource descriptors ------------------------------------------------------------------------------------
@ccu_api(0)
def HcommCcuInsResDescCreate(dieId):  # noqa: N802,N803
    """``ret, resDesc``: a descriptor of IO die ``dieId`` of the current device, every count 0."""
    return _res.desc_create(dieId)


@ccu_api()
def HcommCcuInsResDescDestroy(resDesc):  # noqa: N802,N803
    _res.desc_destroy(resDesc)


@ccu_api(0)
def HcommCcuInsResDescQueryDieId(resDesc):  # noqa: N802,N803
    return _res.desc_die(resDesc)


@ccu_api()
def HcommCcuInsResDescSetNum(resDesc, resType, resNum):  # noqa: N802,N803
    _res.desc_set_num(resDesc, resType, resNum)


@ccu_api(0)
def HcommCcuInsResDescQueryNum(resDesc, resType):  # noqa: N802,N803
    return _res.desc_num(resDesc, resType)


@ccu_api()
def HcommCcuQueryRemainResDesc(resDesc):  # noqa: N802,N803
    """The longest free run of each type on the descriptor's die, into it (``CCU_E_UNAVAIL``: the die is disabled)."""
    _res.query_remain(resDesc)


# -- instances ----------------------------------------------------------------------------------------------
@ccu_api(0)
def HcommCcuInsCreate(resDescs):  # noqa: N802,N803
    """``ret, insHandle``: an instance from a list of 1 or 2 descriptors of distinct dies."""
    return _res.ins_create(resDescs)


@ccu_api(0)
def HcommCcuInsCreateDefault(dieIds):  # noqa: N802,N803
    """``ret, insHandle``: every resource of every enabled die (``dieIds`` is not read)."""
    return _res.ins_create_default(dieIds)


@ccu_api()
def HcommCcuInsDestroy(ccuInsHandle):  # noqa: N802,N803
    _res.ins_destroy(ccuInsHandle)


@ccu_api()
def HcommCcuInsQueryResDesc(ccuInsHandle, resDesc):  # noqa: N802,N803
    _res.ins_query(ccuInsHandle, resDesc)


@c_api()
def HcclCommAssignCcuIns(comm, insHandle):  # noqa: N802,N803
    _hccl.assign(comm, insHandle)


@c_api([])
def HcclCommQueryAssignedCcuIns(comm):  # noqa: N802
    """``ret, [insHandle]``: the instance assigned to the communicator."""
    return _hccl.query_assigned(comm)


@c_api([])
def HcclCommQueryCcuIns(comm):  # noqa: N802
    """``ret, [insHandle]``: the communicator's own instance (made from its expansion mode)."""
    return _hccl.query_own(comm)


# -- reservations, cascade counters, tokens -----------------------------------------------------------------
@ccu_api(0)
def HcommCcuVariableAlloc(insHandle, dieId, num):  # noqa: N802,N803
    return _reserve.variable_alloc(insHandle, dieId, num)


@ccu_api(0)
def HcommCcuVariableGetAddr(varHandle, index):  # noqa: N802,N803
    return _reserve.variable_addr(varHandle, index)


@ccu_api(0)
def HcommCcuEventAlloc(insHandle, dieId, num):  # noqa: N802,N803
    return _reserve.event_alloc(insHandle, dieId, num)


@ccu_api(0)
def HcommCcuEventGetAddr(eventHandle, index):  # noqa: N802,N803
    return _reserve.event_addr(eventHandle, index)


@ccu_api(0)
def HcommCcuCascCntAlloc(ccuInsHandle, dieId):  # noqa: N802,N803
    return _reserve.casc_cnt_alloc(ccuInsHandle, dieId)


@ccu_api(CommMem)
def HcommCcuCascCntGetMem(handle):  # noqa: N802
    return _reserve.casc_cnt_mem(handle)


@ccu_api(0)
def HcommCcuGetMemToken(srcVa, size):  # noqa: N802,N803
    """``ret, token``: the CCU token of this device's memory ``[srcVa, srcVa + size)``."""
    return _reserve.mem_token_of(srcVa, size)


@ccu_api(0)
def HcommCcuGetRmtMemToken(channelHandle, srcVa):  # noqa: N802,N803
    return _reserve.remote_mem_token(channelHandle, srcVa)


# -- kernels -----------------------------------------------------------------------------------------------
@ccu_api()
def HcommCcuKernelRegisterStart(insHandle):  # noqa: N802,N803
    _register.register_start(insHandle)


@ccu_api(0)
def HcommCcuKernelRegister(insHandle, dieId, kernelFuncName, kernelFunc, kernelArgs, argNum):  # noqa: N802,N803
    """``ret, kernelHandle``: record ``kernelFunc(kernelArgs[0])`` (``argNum`` 1) or ``kernelFunc()``."""
    return _register.register(insHandle, dieId, kernelFuncName, kernelFunc, kernelArgs, argNum)


@ccu_api()
def HcommCcuKernelRegisterEnd(insHandle):  # noqa: N802,N803
    _register.register_end(insHandle)


@ccu_api(0)
def HcommCcuGetTaskArgsNum(kernelHandle):  # noqa: N802,N803
    return _register.task_args_num(kernelHandle)


@ccu_api()
def HcommCcuKernelQueryResReq(kernelFunc, kernelArgs, resDesc):  # noqa: N802,N803
    _register.query_res_req(kernelFunc, kernelArgs, resDesc)


@ccu_api()
def HcommCcuKernelLaunch(threadHandle, kernelHandle, taskArgs, argNum):  # noqa: N802,N803
    """Issue the kernel on the thread's stream with ``taskArgs`` (a list of ints, or a host pointer)."""
    _launch.kernel_launch(threadHandle, kernelHandle, taskArgs, argNum)


def CcuLoopCfgInit(cfg):  # noqa: N802
    """Stamp ``cfg``'s header (magic ``0xCC0CF000``, version 1, its size); returns None (a NULL
    ``cfg`` is ignored)."""
    if void_struct_arg(cfg, CcuLoopCfg, "CcuLoopCfgInit", "cfg"):
        cfg.header = CcuCfgHeader(magic=0xCC0CF000, version=1, size=64, reserved=0)


def CcuLoopGroupCfgInit(cfg):  # noqa: N802
    """Stamp ``cfg``'s header (magic ``0xCC0CF000``, version 1, its size); returns None (a NULL
    ``cfg`` is ignored)."""
    if void_struct_arg(cfg, CcuLoopGroupCfg, "CcuLoopGroupCfgInit", "cfg"):
        cfg.header = CcuCfgHeader(magic=0xCC0CF000, version=1, size=72, reserved=0)


__all__ = ["HcommCcuInsResDescCreate", "HcommCcuInsResDescDestroy", "HcommCcuInsResDescQueryDieId",
           "HcommCcuInsResDescSetNum", "HcommCcuInsResDescQueryNum", "HcommCcuQueryRemainResDesc", "HcommCcuInsCreate",
           "HcommCcuInsCreateDefault", "HcommCcuInsDestroy", "HcommCcuInsQueryResDesc", "HcclCommAssignCcuIns",
           "HcclCommQueryAssignedCcuIns", "HcclCommQueryCcuIns", "HcommCcuVariableAlloc", "HcommCcuVariableGetAddr",
           "HcommCcuEventAlloc", "HcommCcuEventGetAddr", "HcommCcuCascCntAlloc", "HcommCcuCascCntGetMem",
           "HcommCcuGetMemToken", "HcommCcuGetRmtMemToken", "HcommCcuKernelRegisterStart", "HcommCcuKernelRegister",
           "HcommCcuKernelRegisterEnd", "HcommCcuGetTaskArgsNum", "HcommCcuKernelQueryResReq", "HcommCcuKernelLaunch",
           "CcuLoopCfgInit", "CcuLoopGroupCfgInit", "CcuCfgHeader", "CcuConditionType", "CcuLoopCfg", "CcuLoopConfig",
           "CcuLoopGroupCfg", "CcuLoopGroupConfig", "CcuResult", "HcommCcuResType"]
