"""``from pyhcomm import ccu``: the CCU kernel language (``AscendC::ccu``'s names), and the CCU kernels'
registration and launch.

A CCU kernel is a Python function of one argument (or none) that calls these names; it runs once,
on the host, inside ``HcommCcuKernelRegister`` (:mod:`.register`), which records what it does: the
kernel's program. ``HcommCcuKernelLaunch`` (:mod:`.launch`) then runs that program on a CCU mission
(:mod:`.mission`) as often as asked, with new task arguments each time (``LoadArg``)::

    from pyhcomm import ccu

    def kernel(arg):                          # runs once, at registration
        size, src, dst, token = ccu.Variable(), ccu.Variable(), ccu.Variable(), ccu.Variable()
        for i, v in enumerate((size, src, dst, token)):
            ccu.LoadArg(v, i)                 # taskArgs[i] of each launch
        ev = ccu.Event()
        with ccu.If(size != 0):               # decided when the kernel runs
            ccu.LocalCopy(ccu.LocalAddr(addr=dst, token=token), ccu.LocalAddr(addr=src, token=token), size, ev, 1)
            ccu.EventWait(ev, 1)

Resources and values: :mod:`.resources`; instructions: :mod:`.ops`; control flow: :mod:`.control`.
Semantics, limits and what pyhcomm infers: docs/ccu.md.
"""
from ..defs.ccu import (CcuCfgHeader, CcuConditionType, CcuLoopCfg, CcuLoopConfig, CcuLoopGroupCfg,  # noqa: F401
                        CcuLoopGroupConfig, CcuResult, HcommCcuResType)
from ..hcomm.resources.ccu_pool import CcuError
from .control import Else, Func, If, Loop, LoopGroup
from .ops import (EventRecord, EventWait, LoadArg, LocalCopy, LocalReduce, NotifyRecord, NotifyWait, Read,
                  ReadReduce, Write, WriteReduce, WriteVariableWithNotify)
from .resources import Address, Array, CcuBuffer, Event, GetResByChannel, LocalAddr, RemoteAddr, Variable

CCU_SUCCESS = CcuResult.CCU_SUCCESS
CCU_E_PARA = CcuResult.CCU_E_PARA
CCU_E_PTR = CcuResult.CCU_E_PTR
CCU_E_INTERNAL = CcuResult.CCU_E_INTERNAL
CCU_E_NOT_SUPPORT = CcuResult.CCU_E_NOT_SUPPORT
CCU_E_NOT_FOUND = CcuResult.CCU_E_NOT_FOUND
CCU_E_UNAVAIL = CcuResult.CCU_E_UNAVAIL
CCU_E_RUNTIME = CcuResult.CCU_E_RUNTIME

#: (names taken from the objects: "Write", "LocalCopy" ... are also task kinds' names, declared in sim/kinds.py only)
__all__ = [x.__name__ for x in (Variable, Address, Event, CcuBuffer, LocalAddr, RemoteAddr, Array, GetResByChannel, LoadArg,
                                LocalCopy, LocalReduce, Read, ReadReduce, Write, WriteReduce, EventRecord, EventWait,
                                NotifyRecord, NotifyWait, WriteVariableWithNotify, If, Else, Func, Loop, LoopGroup,
                                CcuError, CcuResult, CcuLoopConfig, CcuLoopCfg, CcuLoopGroupConfig, CcuLoopGroupCfg)]
__all__ += ["CCU_SUCCESS", "CCU_E_PARA", "CCU_E_PTR", "CCU_E_INTERNAL", "CCU_E_NOT_SUPPORT", "CCU_E_NOT_FOUND",
            "CCU_E_UNAVAIL", "CCU_E_RUNTIME"]
