"""HCCL's ``examples/05_custom_ops_allgather/aicpu`` (a custom AllGather on an AI CPU kernel,
Ascend 950 only), ported call for call: ``op_host/`` (allgather.cc, utils.cc, launch_kernel.cc)
here, the kernel in :mod:`ex05_allgather_aicpu_kernel`, the testcase in :func:`sample`.

Resources per communicator (tag ``hccl_custom_allgather``): ``rankSize - 1`` AICPU_TS threads
(thread 0 is the main one and also talks to the first peer), one UB_CTP channel per peer (3
notifies), the HCCL buffers; serialised into an AICPU_TS engine context, and the main thread's
handle cached in a CPU_TS (host memory) context so that a second call reuses everything. The
user stream's CPU_TS thread is acquired on every call (it is bound to the stream).

Differences of form as in :mod:`ex04_custom_ops_p2p` (Python kernel modules next to this file;
no ``<<<>>>`` launch path).
"""
from __future__ import annotations

import os
import struct

from acl_constants import ACL_MEM_MALLOC_HUGE_ONLY, NPY_UBYTE
from custom_ops import Error, chk, get_device_type, launch_kernel, returns_code, ub_ctp_desc
from ex05_common import DEVICE_TYPE_A5, HCCL_CMD_ALLGATHER, OP_PARAM, AlgResourceCtx, ChannelInfo
from example_main import check, fill_device, main, output, read_device, release, value

from pyhcomm import acl  # real machine: import acl
from pyhcomm import (COMM_ENGINE_AICPU_TS, COMM_ENGINE_CPU_TS,  # ... from pyhccl
                     HCCL_DATA_TYPE_FP32, HCCL_E_INTERNAL, HCCL_E_PTR, HCCL_SUCCESS, HcclChannelAcquire,
                     HcclChannelGetHcclBuffer, HcclCommInitRootInfo, HcclEngineCtxCopy,
                     HcclEngineCtxCreate, HcclEngineCtxGet, HcclGetCommName, HcclGetHcclBuffer, HcclGetRankId,
                     HcclGetRankSize, HcclThreadAcquire, HcclThreadAcquireWithStream, HcclThreadExportToCommEngine)

KERNEL_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ex05_allgather_aicpu_kernel.py")
TAG = "hccl_custom_allgather"
CHANNEL_NOTIFY_NUM = 3
MAIN_THREAD_CACHE = struct.Struct("<QI")   # AicpuMainThreadCache: thread, notifyNum


# -- utils.cc ------------------------------------------------------------------------------------------------
def alloc_alg_resource(comm, p) -> AlgResourceCtx:
    """``HcclAllocAlgResourceAICPU``: HCCL buffer, threads, one channel per peer."""
    res = AlgResourceCtx(cclMem=tuple(chk(HcclGetHcclBuffer(comm))))
    thread_num = p["rankSize"] - 1 if p["rankSize"] > 1 else 1
    res.slaveThreadNum = thread_num - 1
    res.notifyNumOnMainThread = res.slaveThreadNum
    res.notifyNumPerThread = [1] * res.slaveThreadNum
    # threads: one more notify than the main thread needs, for the host -> device sync
    res.threads = list(chk(HcclThreadAcquire(comm, COMM_ENGINE_AICPU_TS, thread_num, res.notifyNumOnMainThread + 1)))
    peers = [r for r in range(p["rankSize"]) if r != p["myRank"]]
    descs = [ub_ctp_desc(comm, p["myRank"], r, CHANNEL_NOTIFY_NUM) for r in peers]
    channels = chk(HcclChannelAcquire(comm, COMM_ENGINE_AICPU_TS, descs)) if descs else []
    for r, ch in zip(peers, channels):
        res.channels.append(ChannelInfo(r, CHANNEL_NOTIFY_NUM, ch, tuple(chk(HcclChannelGetHcclBuffer(comm, ch)))))
    return res


def memcpy_ctx_host_to_device(comm, res: AlgResourceCtx):
    """``HcclMemcpyCtxHostToDevice``: serialise, create the AICPU_TS context, copy in."""
    seq = res.serialize()
    ctx = chk(HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_AICPU_TS, len(seq)))
    chk(HcclEngineCtxCopy(comm, COMM_ENGINE_AICPU_TS, TAG, acl.util.bytes_to_ptr(seq), len(seq), 0))
    return ctx, len(seq)


# -- allgather.cc --------------------------------------------------------------------------------------------
def init_aicpu_resource(comm, p) -> None:
    ret, ctx, size = HcclEngineCtxGet(comm, TAG, COMM_ENGINE_AICPU_TS)
    if ret == HCCL_SUCCESS:   # reuse: the main thread's handle comes from the host-memory context
        p["resCtxDevice"], p["ctxSize"] = ctx, size
        program_ctx, _size = chk(HcclEngineCtxGet(comm, TAG, COMM_ENGINE_CPU_TS))
        thread, notify_num = MAIN_THREAD_CACHE.unpack(acl.util.ptr_to_bytes(program_ctx, MAIN_THREAD_CACHE.size))
        p["aicpuThreadOnCpu"] = chk(HcclThreadExportToCommEngine(comm, 1, [thread], COMM_ENGINE_CPU_TS))[0]
        p["aicpuRecordCpuIdx"] = notify_num
        return
    res = alloc_alg_resource(comm, p)
    p["aicpuThreadOnCpu"] = chk(HcclThreadExportToCommEngine(comm, 1, [res.threads[0]], COMM_ENGINE_CPU_TS))[0]
    p["aicpuRecordCpuIdx"] = res.notifyNumOnMainThread
    p["resCtxDevice"], p["ctxSize"] = memcpy_ctx_host_to_device(comm, res)
    program_ctx = chk(HcclEngineCtxCreate(comm, TAG, COMM_ENGINE_CPU_TS, MAIN_THREAD_CACHE.size))
    cache = MAIN_THREAD_CACHE.pack(res.threads[0], res.notifyNumOnMainThread)
    acl.util.ptr_to_numpy(program_ctx, (len(cache),), NPY_UBYTE)[:] = list(cache)   # the C code's struct store


@returns_code
def HcclAllGatherCustom(sendBuf, recvBuf, sendCount, dataType, comm, stream):  # noqa: N802,N803
    if not sendBuf or not recvBuf or not comm or not stream:
        raise Error(HCCL_E_PTR)
    p = {"tag": TAG, "devType": get_device_type(), "inputPtr": sendBuf, "outputPtr": recvBuf, "count": sendCount,
         "dataType": dataType, "opType": HCCL_CMD_ALLGATHER}
    if p["devType"] != DEVICE_TYPE_A5:
        raise Error(HCCL_E_INTERNAL)
    p["commName"] = chk(HcclGetCommName(comm))
    # STEP 1: topology
    p["myRank"], p["rankSize"] = chk(HcclGetRankId(comm)), chk(HcclGetRankSize(comm))
    # STEP 2: the host sync thread, bound to the stream: acquired on every call, exported to the AI CPU
    p["cpuThread"] = chk(HcclThreadAcquireWithStream(comm, COMM_ENGINE_CPU_TS, stream, 1))
    p["cpuThreadOnAicpu"] = chk(HcclThreadExportToCommEngine(comm, 1, [p["cpuThread"]], COMM_ENGINE_AICPU_TS))[0]
    # STEP 3: create or reuse the resources
    init_aicpu_resource(comm, p)
    # STEP 4: the kernel
    packed = OP_PARAM.pack(p["tag"].encode(), p["commName"].encode(), p["inputPtr"], p["outputPtr"], p["count"],
                           p["devType"], p["myRank"], p["rankSize"], p["dataType"], p["opType"], p["cpuThread"],
                           p["aicpuThreadOnCpu"], p["cpuThreadOnAicpu"], p["aicpuRecordCpuIdx"], p["resCtxDevice"],
                           p["ctxSize"])
    launch_kernel(KERNEL_FILE, "HcclLaunchCustomAllGatherAicpuKernel", packed, p["cpuThread"], p["aicpuThreadOnCpu"],
                  p["aicpuRecordCpuIdx"], stream)
    return HCCL_SUCCESS


# -- testcase/main.cc ----------------------------------------------------------------------------------------
def sample(ctx):
    device, count = ctx.device, ctx.dev_count
    check(acl.rt.set_device(device), "aclrtSetDevice")
    comm = output(HcclCommInitRootInfo(ctx.dev_count, ctx.root_info, device), "HcclCommInitRootInfo")
    stream = value(acl.rt.create_stream(), "aclrtCreateStream")
    send = value(acl.rt.malloc(count * 4, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    recv = value(acl.rt.malloc(count * 4 * count, ACL_MEM_MALLOC_HUGE_ONLY), "aclrtMalloc")
    fill_device(send, count, float(device))
    check(HcclAllGatherCustom(send, recv, count, HCCL_DATA_TYPE_FP32, comm, stream), "HcclAllGatherCustom")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    # the second call: same communicator, the engine contexts exist, the resources are reused
    check(HcclAllGatherCustom(send, recv, count, HCCL_DATA_TYPE_FP32, comm, stream), "HcclAllGatherCustom")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    out = read_device(recv, count * count)
    release(ctx, comm, stream, (send, recv))
    return out


def run(entry=main) -> list:
    """``testcase/main.cc`` (``entry``: see :func:`ex01_point_to_point.run`)."""
    return entry(sample)

