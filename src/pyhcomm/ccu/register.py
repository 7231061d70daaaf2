"""Kernel registration (``ccu_launch.h``, ``ccu_res.h``): ``HcommCcuKernelRegisterStart`` /
``HcommCcuKernelRegister`` / ``HcommCcuKernelRegisterEnd``, ``HcommCcuGetTaskArgsNum``,
``HcommCcuKernelQueryResReq`` (raising implementations; codes from their ``api_ref`` pages).

``HcommCcuKernelRegister(ins, dieId, name, func, kernelArgs, argNum)`` runs ``func`` once on the host
(``func(kernelArgs[0])``, or ``func()`` when ``argNum`` is 0) while a :class:`~.recorder.Recorder`
keeps every CCU operation it makes: the kernel's program. ``func`` is a Python callable (pyhccl's
``kernelFunc`` is a native function pointer: a nonzero int here is ``CCU_E_NOT_SUPPORT``); what it
reads of its argument is fixed at registration. Its resources come out of the instance on ``dieId``
(``CCU_E_UNAVAIL`` past them); a failure (a CcuError: its code; any other exception: ``CCU_E_INTERNAL``;
a nonzero ``CcuResult`` returned: that code) takes the kernel's resources back and leaves the other
kernels as they were. ``argNum`` is 0 or 1 (else ``CCU_E_PARA``); 0 or an unknown instance, no
function, no argument where ``argNum`` is 1: ``CCU_E_PTR``; outside a round (Start ... End), or from
inside a kernel function: ``CCU_E_INTERNAL``. ``HcommCcuKernelRegisterEnd`` translates the round's
kernels: each takes as many instructions as it recorded from its die (``CCU_E_UNAVAIL`` when they do
not fit); from then on they may be launched.

``HcommCcuKernelQueryResReq(kernelFunc, kernelArgs, resDesc)`` (pyhccl's signature: no ``argNum``;
``kernelArgs`` None or a list of at most one argument) dry-runs the function on the descriptor's die
and writes what it would take into the descriptor (missions: 1; cascade counters: 0).
"""
from __future__ import annotations

from ..defs.ccu import CcuResult as C
from ..hcomm.resources.ccu_pool import CcuError, R, ccu_error, ccu_state, check_die, check_product, recording_var
from ..hcomm.resources.ccu_res import get_desc, get_instance
from ..sim.task import attribute_to, end_attribution
from .program import Kernel
from .recorder import Recorder

DEFAULT_NAME = "CCU_KERNEL"
NAME_MAX = 128


def _func(func, api: str):
    if func is None or (isinstance(func, int) and not isinstance(func, bool) and func == 0):
        raise ccu_error(C.CCU_E_PTR, api, "kernelFunc is NULL")
    if isinstance(func, int):
        raise ccu_error(C.CCU_E_NOT_SUPPORT, api, "kernelFunc is a native function pointer: pyhcomm runs Python "
                                                  "kernel functions (pass the function itself)")
    if not callable(func):
        raise ccu_error(C.CCU_E_PTR, api, f"kernelFunc must be a callable, not {type(func).__name__}")
    return func


def _args(kernel_args, arg_num, api: str) -> tuple:
    if isinstance(arg_num, bool) or not isinstance(arg_num, int) or arg_num < 0:
        raise ccu_error(C.CCU_E_PARA, api, f"argNum {arg_num!r} is not a uint32")
    if arg_num > 1:
        raise ccu_error(C.CCU_E_PARA, api, f"argNum {arg_num}: a kernel function takes 0 or 1 argument")
    if not arg_num:
        return ()
    if not isinstance(kernel_args, (list, tuple)) or not kernel_args or kernel_args[0] is None:
        raise ccu_error(C.CCU_E_PTR, api, "kernelArgs (and kernelArgs[0]) must not be NULL when argNum is 1")
    return (kernel_args[0],)


def record(func, fargs, instance, die: int, device: int, api: str, name: str) -> Recorder:
    """Run ``func(*fargs)`` once under a recorder; returns it (see the module docstring for errors)."""
    if recording_var.get() is not None:
        raise ccu_error(C.CCU_E_INTERNAL, api, "a kernel function cannot register a kernel")
    rec = Recorder(instance, die, device, api)
    token, site = recording_var.set(rec), attribute_to(None)    # (each instruction: its own kernel line)
    try:
        ret = func(*fargs)
    except CcuError:
        raise
    except Exception as exc:    # the kernel function's own failure (the C++ API's uncaught exception)
        raise ccu_error(C.CCU_E_INTERNAL, api, f"kernel function {name!r} raised {exc!r}") from exc
    finally:
        end_attribution(site)
        recording_var.reset(token)
    if ret not in (None, 0):
        try:
            code = C(ret)
        except (ValueError, TypeError):
            code = C.CCU_E_INTERNAL
        raise ccu_error(code, api, f"kernel function {name!r} returned {ret!r}")
    return rec


def register_start(ins) -> None:
    api = "HcommCcuKernelRegisterStart"
    check_product(api)
    inst = get_instance(ins, api)
    if inst.round is not None:
        raise ccu_error(C.CCU_E_INTERNAL, api, f"CCU instance {ins}: the previous round was not ended "
                                               "(HcommCcuKernelRegisterEnd)")
    inst.round = []


def register(ins, die_id, name, func, kernel_args, arg_num) -> int:
    """``HcommCcuKernelRegister``: the new kernel's handle (see the module docstring)."""
    api = "HcommCcuKernelRegister"
    check_product(api)
    inst = get_instance(ins, api)
    func = _func(func, api)
    fargs = _args(kernel_args, arg_num, api)
    if inst.round is None:
        raise ccu_error(C.CCU_E_INTERNAL, api, f"CCU instance {ins}: no registration round is open "
                                               "(HcommCcuKernelRegisterStart)")
    die = check_die(die_id, api)
    if die not in inst.blocks:
        raise ccu_error(C.CCU_E_PARA, api, f"CCU instance {ins} holds no resources on IO die {die}")
    name = (name or DEFAULT_NAME)[:NAME_MAX] if isinstance(name, (str, type(None))) else DEFAULT_NAME
    mark = inst.mark()
    try:
        rec = record(func, fargs, inst, die, inst.device, api, name)
    except CcuError:
        inst.rollback(mark)
        raise
    k = Kernel(name, inst, die, inst.device, rec.program, frozenset(rec.arg_ids), rec.instructions,
               tuple(rec.channels.values()))
    k.handle = ccu_state().kernels.add(k)
    inst.round.append(k)
    inst.kernels.append(k)
    return k.handle


def register_end(ins) -> None:
    """``HcommCcuKernelRegisterEnd``: translate the round's kernels (instructions from their dies)."""
    api = "HcommCcuKernelRegisterEnd"
    check_product(api)
    inst = get_instance(ins, api)
    if inst.round is None:
        raise ccu_error(C.CCU_E_INTERNAL, api, f"CCU instance {ins}: no registration round is open "
                                               "(HcommCcuKernelRegisterStart)")
    state, taken = ccu_state(), []
    for k in inst.round:
        pool = state.die(inst.device, k.die).pools[R.HCOMM_CCU_RES_TYPE_INSTRUCTION]
        start = pool.take(k.count)
        if start is None:
            for kk, (s, n) in taken:
                state.die(inst.device, kk.die).pools[R.HCOMM_CCU_RES_TYPE_INSTRUCTION].give(s, n)
                kk.instructions = None
            raise ccu_error(C.CCU_E_UNAVAIL, api, f"kernel {k.name!r} needs {k.count} instructions: IO die {k.die} "
                                                  f"has {pool.largest()} contiguous left")
        k.instructions = (start, k.count)
        taken.append((k, k.instructions))
    inst.round = None


def get_kernel(handle, api: str, missing=C.CCU_E_PTR):
    k = ccu_state().kernels.get(handle) if type(handle) is int and handle else None
    if k is None or k.instance.destroyed:
        raise ccu_error(missing, api, f"kernelHandle {handle!r} is not a registered CCU kernel")
    return k


def task_args_num(handle) -> int:
    api = "HcommCcuGetTaskArgsNum"
    check_product(api)
    return get_kernel(handle, api, C.CCU_E_NOT_FOUND).task_args


def query_res_req(func, kernel_args, desc) -> None:
    """``HcommCcuKernelQueryResReq``: what ``func`` would take on the descriptor's die, into it."""
    api = "HcommCcuKernelQueryResReq"
    check_product(api)
    func = _func(func, api)
    if kernel_args is not None and not isinstance(kernel_args, (list, tuple)):
        raise ccu_error(C.CCU_E_PARA, api, f"kernelArgs must be a list, not {type(kernel_args).__name__}")
    fargs = _args(kernel_args, len(kernel_args or ()), api)
    if not desc:
        raise ccu_error(C.CCU_E_PARA, api, "resDesc is 0")
    d = get_desc(desc, api)
    rec = record(func, fargs, None, d.die, d.device, api, getattr(func, "__name__", DEFAULT_NAME))
    counts = dict(rec.counts)
    counts[R.HCOMM_CCU_RES_TYPE_LOOP] = rec.loops
    counts[R.HCOMM_CCU_RES_TYPE_CCU_THREAD] = 1
    counts[R.HCOMM_CCU_RES_TYPE_INSTRUCTION] = rec.instructions
    counts[R.HCOMM_CCU_RES_TYPE_CASC_CNT] = 0
    d.nums.update(counts)
