"""``HcommCcuKernelLaunch(thread, kernel, taskArgs, argNum)``: a CCU kernel launch is a task on the
thread's stream (a thread of ``HcclThreadAcquireWithStream(comm, COMM_ENGINE_CCU, stream, ...)``); when
the stream reaches it, the kernel's mission runs (:mod:`.mission`) and the stream waits for its end.

Codes (its ``api_ref`` page): a thread or kernel of 0 ``CCU_E_PARA``; an unknown kernel, an unknown
thread (or one whose stream is gone), ``taskArgs`` NULL with ``argNum`` > 0: ``CCU_E_PTR``; ``argNum``
other than the number of distinct ``LoadArg`` ids of the kernel, a kernel not translated yet
(``HcommCcuKernelRegisterEnd``): ``CCU_E_INTERNAL``. pyhcomm's choices where the page is silent: a
thread of another engine, or of another device than the kernel's instance, ``CCU_E_PARA``; fewer
``taskArgs`` than the kernel's largest ``argId`` needs ``CCU_E_PARA``; a call inside a kernel
``CCU_E_NOT_SUPPORT`` (a host call). ``taskArgs`` is a list of ints, or (pyhccl's) a host pointer to
``argNum`` uint64 values.
"""
from __future__ import annotations

import struct

from ..defs.ccu import CcuResult as C
from ..enums import CommEngine
from ..hcomm.resources.ccu_pool import ccu_error, check_product
from ..sim import current_sim as _sim
from ..sim import kinds, memory
from ..sim.runtime import program_ctx
from ..sim.task import SiteTask
from .mission import Mission
from .register import get_kernel


class CcuLaunchTask(SiteTask):
    """A CCU kernel launch (CcuKernelLaunch) on the thread's stream: runs the kernel's mission."""

    __slots__ = ("ccu_kernel", "values", "hthread", "name")   # (``kernel``: the launch's own, unset)
    kind = kinds.CCU_KERNEL_LAUNCH

    def __init__(self, t, kernel, values: tuple):
        self.on_thread(t, "host")
        self.ccu_kernel, self.values, self.hthread, self.name = kernel, values, t, kernel.name
        self.set_site(4)    # set_site <- __init__ <- kernel_launch <- C tier <- user

    def run(self) -> None:
        Mission(self).start()


def _task_args(task_args, arg_num: int, api: str) -> tuple:
    if not arg_num:
        return ()
    if task_args is None or (isinstance(task_args, int) and not isinstance(task_args, bool) and task_args == 0):
        raise ccu_error(C.CCU_E_PTR, api, "taskArgs is NULL while argNum > 0")
    if isinstance(task_args, (list, tuple)):
        values = tuple(task_args)
        if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 64 for v in values):
            raise ccu_error(C.CCU_E_PARA, api, "taskArgs must hold uint64 values")
        return values
    if isinstance(task_args, bool) or not isinstance(task_args, int):
        raise ccu_error(C.CCU_E_PARA, api, f"taskArgs must be a list of ints or a host pointer, not "
                                           f"{type(task_args).__name__}")
    try:
        memory.resolve(task_args, 8 * arg_num, memory.HOST)
    except memory.BadRange as why:
        raise ccu_error(C.CCU_E_PTR, api, f"taskArgs: {why}") from None
    return struct.unpack(f"<{arg_num}Q", memory.read_host(task_args, 8 * arg_num))


def kernel_launch(thread, kernel, task_args, arg_num) -> None:
    """``HcommCcuKernelLaunch`` (see the module docstring)."""
    api = "HcommCcuKernelLaunch"
    check_product(api)
    ctx = program_ctx()
    if ctx.kernels:
        raise ccu_error(C.CCU_E_NOT_SUPPORT, api, "a host call: it cannot be made inside a kernel")
    if not thread or not kernel:
        raise ccu_error(C.CCU_E_PARA, api, "threadHandle and kernelHandle must not be 0")
    t = _sim().handles.threads.get(thread) if type(thread) is int else None
    if t is None or t.stream.destroyed:
        raise ccu_error(C.CCU_E_PTR, api, f"threadHandle {thread!r} is not a live thread (its stream is gone)")
    if t.engine != CommEngine.COMM_ENGINE_CCU:
        raise ccu_error(C.CCU_E_PARA, api, f"thread 0x{t.handle:x} is a {t.engine.name} thread: CCU kernels run on "
                                           "COMM_ENGINE_CCU threads (HcclThreadAcquireWithStream)")
    k = get_kernel(kernel, api)
    if not k.ready:
        raise ccu_error(C.CCU_E_INTERNAL, api, f"kernel {k.name!r} was not translated yet (HcommCcuKernelRegisterEnd)")
    if k.device != t.device:
        raise ccu_error(C.CCU_E_PARA, api, f"kernel {k.name!r} is of device {k.device}, thread 0x{t.handle:x} of "
                                           f"device {t.device}")
    if isinstance(arg_num, bool) or not isinstance(arg_num, int) or arg_num < 0:
        raise ccu_error(C.CCU_E_PARA, api, f"argNum {arg_num!r} is not a uint32")
    values = _task_args(task_args, arg_num, api)
    if arg_num != len(k.arg_ids):
        raise ccu_error(C.CCU_E_INTERNAL, api, f"argNum {arg_num}: kernel {k.name!r} loads {len(k.arg_ids)} distinct "
                                               "argIds (argNum counts uint64 values, not bytes)")
    if len(values) < k.task_args:
        raise ccu_error(C.CCU_E_PARA, api, f"taskArgs holds {len(values)} values; kernel {k.name!r} loads argId "
                                           f"{k.task_args - 1}")
    task = CcuLaunchTask(t, k, values[:k.task_args])
    task.program = ctx.program
    ctx.sim.scheduler.submit(task)
