"""Calls whose hardware pyhcomm does not model: each returns ``HCCL_E_NOT_SUPPORT`` (5) and logs
why. README lists them ("Not modeled").

* the CCU family (``hccl_ccu_res.h``, ``ccu_res.h``): the Collective Communication Unit of
  Atlas 350, programmed with microcode; pyhcomm runs no CCU kernels.

``CcuLoopCfgInit`` / ``CcuLoopGroupCfgInit`` fill their struct's header as the C inlines do.
"""
from __future__ import annotations

import inspect

from ..defs.ccu import (CcuCfgHeader, CcuConditionType, CcuLoopCfg, CcuLoopConfig,  # noqa: F401
                        CcuLoopGroupCfg, CcuLoopGroupConfig, CcuResult, HcommCcuResType)
from ..defs.cstruct import void_struct_arg
from ..defs.res_defs import CommMem
from ..errors import not_support
from ._wrap import c_api

CCU = "the CCU (Collective Communication Unit) is not modelled by pyhcomm"

#: name -> (parameters, outputs after ret, why)
CALLS = {
    "HcclCommAssignCcuIns": (("comm", "insHandle"), (), CCU),
    "HcclCommQueryAssignedCcuIns": (("comm",), ([],), CCU),
    "HcclCommQueryCcuIns": (("comm",), ([],), CCU),
    "HcommCcuCascCntAlloc": (("ccuInsHandle", "dieId"), (0,), CCU),
    "HcommCcuCascCntGetMem": (("handle",), (CommMem,), CCU),
    "HcommCcuEventAlloc": (("insHandle", "dieId", "num"), (0,), CCU),
    "HcommCcuEventGetAddr": (("eventHandle", "index"), (0,), CCU),
    "HcommCcuGetMemToken": (("srcVa", "size"), (0,), CCU),
    "HcommCcuGetRmtMemToken": (("channelHandle", "srcVa"), (0,), CCU),
    "HcommCcuGetTaskArgsNum": (("kernelHandle",), (0,), CCU),
    "HcommCcuInsCreate": (("resDescs",), (0,), CCU),
    "HcommCcuInsCreateDefault": (("dieIds",), (0,), CCU),
    "HcommCcuInsDestroy": (("ccuInsHandle",), (), CCU),
    "HcommCcuInsQueryResDesc": (("ccuInsHandle", "resDesc"), (), CCU),
    "HcommCcuInsResDescCreate": (("dieId",), (0,), CCU),
    "HcommCcuInsResDescDestroy": (("resDesc",), (), CCU),
    "HcommCcuInsResDescQueryDieId": (("resDesc",), (0,), CCU),
    "HcommCcuInsResDescQueryNum": (("resDesc", "resType"), (0,), CCU),
    "HcommCcuInsResDescSetNum": (("resDesc", "resType", "resNum"), (), CCU),
    "HcommCcuKernelLaunch": (("threadHandle", "kernelHandle", "taskArgs", "argNum"), (), CCU),
    "HcommCcuKernelQueryResReq": (("kernelFunc", "kernelArgs", "resDesc"), (), CCU),
    "HcommCcuKernelRegister": (("insHandle", "dieId", "kernelFuncName", "kernelFunc", "kernelArgs", "argNum"),
                               (0,), CCU),
    "HcommCcuKernelRegisterEnd": (("insHandle",), (), CCU),
    "HcommCcuKernelRegisterStart": (("insHandle",), (), CCU),
    "HcommCcuQueryRemainResDesc": (("resDesc",), (), CCU),
    "HcommCcuVariableAlloc": (("insHandle", "dieId", "num"), (0,), CCU),
    "HcommCcuVariableGetAddr": (("varHandle", "index"), (0,), CCU),
}


def _make(name: str, params: tuple, outputs: tuple, why: str):
    def impl(*args):
        raise not_support(name, why)

    impl.__name__ = impl.__qualname__ = name
    fn = c_api(*outputs)(impl)
    sig = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params])

    def call(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)        # a wrong argument count is a TypeError, as a binding's
        return fn(*bound.args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Not modelled: returns HCCL_E_NOT_SUPPORT ({why})."
    call.__signature__ = sig
    call.raising = impl
    return call


for _name, (_params, _outputs, _why) in CALLS.items():
    globals()[_name] = _make(_name, _params, _outputs, _why)


def CcuLoopCfgInit(cfg):
    """Stamp ``cfg``'s header (magic ``0xCC0CF000``, version 1, its size); returns None (a NULL
    ``cfg`` is ignored)."""
    if void_struct_arg(cfg, CcuLoopCfg, "CcuLoopCfgInit", "cfg"):
        cfg.header = CcuCfgHeader(magic=0xCC0CF000, version=1, size=64, reserved=0)


def CcuLoopGroupCfgInit(cfg):
    """Stamp ``cfg``'s header (magic ``0xCC0CF000``, version 1, its size); returns None (a NULL
    ``cfg`` is ignored)."""
    if void_struct_arg(cfg, CcuLoopGroupCfg, "CcuLoopGroupCfgInit", "cfg"):
        cfg.header = CcuCfgHeader(magic=0xCC0CF000, version=1, size=72, reserved=0)


__all__ = list(CALLS) + ["CcuLoopCfgInit", "CcuLoopGroupCfgInit", "CcuCfgHeader", "CcuConditionType", "CcuLoopCfg",
                         "CcuLoopConfig", "CcuLoopGroupCfg", "CcuLoopGroupConfig", "CcuResult", "HcommCcuResType"]
