"""What the custom-operator examples' host code shares (04 and 05 ``op_host/``): the ``CHK_RET`` /
``ACLCHECK`` early returns as exceptions turned back into codes, and ``GetDeviceType`` of
``utils.cc``."""
from __future__ import annotations

import contextvars
import functools

from acl_constants import ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT
from ex04_common import CUSTOM_TIMEOUT, DEVICE_TYPE_A2, DEVICE_TYPE_A3, DEVICE_TYPE_A5

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (COMM_PROTOCOL_UB_CTP, HCCL_E_INTERNAL,  # ... from pyhccl
                     HCCL_E_NOT_FOUND, HCCL_E_NOT_SUPPORT, HCCL_SUCCESS, HcclChannelDesc, HcclChannelDescInit,
                     HcclRankGraphGetLinks, HcommThreadNotifyRecordOnThread, HcommThreadNotifyWaitOnThread)


class Error(Exception):
    """``CHK_RET``: a call returned ``code``."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def chk(pair_or_ret):
    """``CHK_RET`` for pyhccl returns: ``ret`` alone, or ``(ret, out...)`` (returns the outputs)."""
    ret, *out = pair_or_ret if isinstance(pair_or_ret, tuple) else (pair_or_ret,)
    if ret != HCCL_SUCCESS:
        raise Error(ret)
    return out[0] if len(out) == 1 else out


def acl_chk(pair_or_ret):
    """``ACLCHECK`` for pyACL returns: ``ret`` alone, or ``(value, ret)``."""
    if isinstance(pair_or_ret, tuple):
        out, ret = pair_or_ret
    else:
        out, ret = None, pair_or_ret
    if ret != 0:
        raise Error(ret)
    return out


def returns_code(op):
    """The C functions return an ``HcclResult``: ``CHK_RET`` failures become their code."""
    @functools.wraps(op)
    def wrapper(*args):
        try:
            return op(*args)
        except Error as exc:
            return exc.code
    return wrapper


def get_device_type():
    soc = acl.get_soc_name()
    if soc is None:
        raise Error(HCCL_E_INTERNAL)
    for name, dev in (("Ascend910B", DEVICE_TYPE_A2), ("Ascend910_93", DEVICE_TYPE_A3), ("Ascend950", DEVICE_TYPE_A5)):
        if name in soc:
            return dev
    raise Error(HCCL_E_NOT_SUPPORT)


def ub_ctp_desc(comm, src_rank: int, dst_rank: int, notify_num: int):
    """A channel descriptor for the UB_CTP link of the rank graph (net layer 0) between two ranks,
    with its endpoints (``AcquireChannel`` / ``FillChannelDesc`` on Ascend 950)."""
    links = chk(HcclRankGraphGetLinks(comm, 0, src_rank, dst_rank))
    desc = HcclChannelDesc()
    chk(HcclChannelDescInit(desc))
    link = next((lk for lk in links if lk.linkAttr.linkProtocol == COMM_PROTOCOL_UB_CTP), None)
    if link is None:
        raise Error(HCCL_E_NOT_FOUND)
    desc.remoteRank, desc.notifyNum, desc.channelProtocol = dst_rank, notify_num, link.linkAttr.linkProtocol
    desc.localEndpoint, desc.remoteEndpoint = link.srcEndpointDesc, link.dstEndpointDesc
    return desc


#: g_binKernelHandle is thread_local in the C samples: here one per host program (a context
#: variable: a host thread, or a rank of pyhcomm.launch, which may share an OS thread with others)
_binaries: contextvars.ContextVar = contextvars.ContextVar("g_binKernelHandle")


def launch_kernel(kernel_file: str, kernel_name: str, packed_param: bytes, cpu_thread, aicpu_thread_on_cpu,
                  record_idx: int, stream) -> None:
    """``LoadAICPUKernel`` + ``LaunchKernelWithAclrt``: the user stream records the AI CPU main
    thread's notify ``record_idx``, launches the kernel with the packed ``OpParam`` and waits for
    the kernel's record of its notify 0."""
    handles = _binaries.get(None)
    if handles is None:
        handles = {}
        _binaries.set(handles)
    if kernel_file not in handles:   # LoadBinaryFromFile: one option, cpuKernelMode 0
        options = [{"type": ACL_RT_BINARY_LOAD_OPT_CPU_KERNEL_MODE, "value": 0}]
        handles[kernel_file] = acl_chk(acl.rt.binary_load_from_file(kernel_file, options))
    chk(HcommThreadNotifyRecordOnThread(cpu_thread, aicpu_thread_on_cpu, record_idx))
    func = acl_chk(acl.rt.binary_get_function(handles[kernel_file], kernel_name))
    args = acl_chk(acl.rt.kernel_args_init(func))
    acl_chk(acl.rt.kernel_args_append(args, acl.util.bytes_to_ptr(packed_param), len(packed_param)))
    acl_chk(acl.rt.kernel_args_finalize(args))
    cfg = [{"id": ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, "value": 27 * 68}]   # the default 1836 s notify wait
    acl_chk(acl.rt.launch_kernel_with_config(func, 1, stream, cfg, args, 0))
    chk(HcommThreadNotifyWaitOnThread(cpu_thread, 0, CUSTOM_TIMEOUT))
